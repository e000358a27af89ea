// Runtime dispatch: one program holds the same network built for several targets (one translation
// unit per target, each exporting a differently named entry) and runs the best one the CPU supports.
//
//   // face_net.cpp, compiled once per target (CMake: mosaiq_add_multitarget, cmake/MosaiqIsa.cmake)
//   #include "mosaiq/net/export.hpp"
//   MOSAIQ_EXPORT_NETWORK(face_net, my_network);        // defines face_net_target_<target>
//
//   // main.cpp, compiled for the baseline of the architecture
//   #include "mosaiq/dispatch.hpp"
//   MOSAIQ_DECLARE_NETWORK_ENTRIES(face_net)
//   mosaiq::dispatched_network net(MOSAIQ_NETWORK_ENTRIES(face_net));   // picks, e.g. "avx2"
//   net.prepare(blob, state_storage);                    // load time: weights, packing
//   net.run(input, output, arena);                       // no heap; views of the network's element (u8, i8, i16)
//   net.run(input, output, arena, pool);                 // on a thread pool (any parallel_executor)
//   net.extra_output<u8>("box0", arena);                 // a layers::output, where run() left it
//   net.profile(input, output, arena, 10, stdout, pool); // the per-layer table of mosaiq::profile
//
// The hot loops stay compile-time specialised inside each target's objects; the indirect calls are
// one per prepare() and run(), and on a thread pool one per layer back into the caller's pool. Everything crossing the
// boundary is a type of namespace mosaiq::dispatch: plain data and function pointers, identical in every target, with
// no code of its own. The picking code below lives in the caller's per-target namespace like the rest of mosaiq
// (docs/decisions.md, "Per-target namespaces and runtime dispatch").
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string_view>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/cpu.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::dispatch {

/// A network's activation element: the 8-bit ones, or i16 for TFLite's 16x8 mode (int16 activations, int8 filters).
enum class element : std::uint8_t { u8, i8, i16 };

/// A batch-1 NHWC tensor: `pixel_stride` elements between pixels, rows packed (as tensor_view).
struct tensor_ref {
  const void* data;
  int height;
  int width;
  int channels;
  std::ptrdiff_t pixel_stride;
};

/// A status: `code` is a mosaiq::errc value.
struct outcome {
  int code;
  const char* message;
};

struct quantization {
  float scale;
  std::int32_t zero_point;
};

/// A thread pool seen across the boundary: parallel_for(context, tasks, task, task_context) calls
/// task(task_context, t) once for every t in [0, tasks) and returns when all have returned.
struct executor_ref {
  void* context;
  int thread_count;
  void (*parallel_for)(void* context, std::size_t tasks, void (*task)(const void* task_context, std::size_t t),
                       const void* task_context);
};

/// An extra output of the network (layers::output): where run() leaves it in the arena. Offsets
/// differ between targets (each plans its own workspace), so they come from the entry.
struct extra_output {
  const char* name;
  std::size_t name_size;
  std::size_t tensor;  ///< tensor id, for network_entry::tensor_quant
  int dims[3];
  std::size_t arena_offset;
};

/// One network built for one target. The state (loaded weights and what prepare() derives from
/// them) lives in caller storage of state_bytes bytes aligned to state_alignment.
struct network_entry {
  target isa;
  element type;
  int input_dims[3];
  int output_dims[3];
  std::size_t arena_bytes;
  std::size_t peak_live_bytes;
  std::size_t blob_bytes;
  std::size_t state_bytes;
  std::size_t state_alignment;
  std::uint64_t macs;
  std::uint64_t weight_bytes;
  std::size_t tensor_count;  ///< tensor 0 is the input, tensor_count - 1 the main output
  const extra_output* extra_outputs;
  std::size_t extra_output_count;
  outcome (*prepare)(const std::byte* blob, std::size_t blob_size, void* state);
  void (*destroy)(void* state);
  outcome (*run)(const void* state, tensor_ref input, tensor_ref output, std::byte* arena, std::size_t arena_size,
                 executor_ref exec);
  /// mosaiq::profile of the network: `runs` timed runs after a warm-up, the table printed to `out`.
  outcome (*profile)(const void* state, tensor_ref input, tensor_ref output, std::byte* arena, std::size_t arena_size,
                     executor_ref exec, int runs, std::FILE* out);
  quantization (*tensor_quant)(const void* state, std::size_t tensor);
  bool (*amx_enabled)();  // the target's own AMX detection (simd/amx.hpp): true where its layers use AMX
};

/// Entries of one network name for every target, best first; null where that target was not linked.
using entry_list = std::array<const network_entry*, target_count>;

}  // namespace mosaiq::dispatch

// Entries are global variables `<name>_target_<target>` (e.g. face_net_target_avx2).
#define MOSAIQ_DETAIL_CONCAT_TOKENS(a, b) a##_##b
#define MOSAIQ_DETAIL_ENTRY_NAME(name, target_namespace) MOSAIQ_DETAIL_CONCAT_TOKENS(name, target_namespace)

// Weak declarations: a target whose object was not linked reads as a null entry. The objects must be
// linked as objects (a CMake OBJECT library, as mosaiq_add_multitarget makes), since a weak reference
// does not pull a member out of a static archive.
#define MOSAIQ_DETAIL_DECLARE_ENTRY(name, target_namespace) \
  extern const ::mosaiq::dispatch::network_entry MOSAIQ_DETAIL_ENTRY_NAME(name, target_namespace) __attribute__((weak));

/// Declares the entries of network `name` for every target (at namespace scope, in the caller).
#define MOSAIQ_DECLARE_NETWORK_ENTRIES(name)             \
  MOSAIQ_DETAIL_DECLARE_ENTRY(name, target_avx512_vnni)  \
  MOSAIQ_DETAIL_DECLARE_ENTRY(name, target_avx512)       \
  MOSAIQ_DETAIL_DECLARE_ENTRY(name, target_avx2_vnni)    \
  MOSAIQ_DETAIL_DECLARE_ENTRY(name, target_avx2)         \
  MOSAIQ_DETAIL_DECLARE_ENTRY(name, target_neon_dotprod) \
  MOSAIQ_DETAIL_DECLARE_ENTRY(name, target_neon64)       \
  MOSAIQ_DETAIL_DECLARE_ENTRY(name, target_neon)         \
  MOSAIQ_DETAIL_DECLARE_ENTRY(name, target_scalar)

/// The dispatch::entry_list of network `name` (declared with MOSAIQ_DECLARE_NETWORK_ENTRIES).
#define MOSAIQ_NETWORK_ENTRIES(name)                                                                        \
  (::mosaiq::dispatch::entry_list{                                                                          \
      &MOSAIQ_DETAIL_ENTRY_NAME(name, target_avx512_vnni), &MOSAIQ_DETAIL_ENTRY_NAME(name, target_avx512),  \
      &MOSAIQ_DETAIL_ENTRY_NAME(name, target_avx2_vnni), &MOSAIQ_DETAIL_ENTRY_NAME(name, target_avx2),      \
      &MOSAIQ_DETAIL_ENTRY_NAME(name, target_neon_dotprod), &MOSAIQ_DETAIL_ENTRY_NAME(name, target_neon64), \
      &MOSAIQ_DETAIL_ENTRY_NAME(name, target_neon), &MOSAIQ_DETAIL_ENTRY_NAME(name, target_scalar)})

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// The dispatch::element of a network element type (what an exported entry records, and what run() checks).
template <network_element T>
inline constexpr dispatch::element dispatch_element = std::same_as<T, u8>   ? dispatch::element::u8
                                                      : std::same_as<T, i8> ? dispatch::element::i8
                                                                            : dispatch::element::i16;

/// "u8", "i8" or "i16".
constexpr std::string_view to_string(dispatch::element e) noexcept {
  return e == dispatch::element::u8 ? "u8" : e == dispatch::element::i8 ? "i8" : "i16";
}

/// The best linked entry this CPU runs (the list is best first), or null when there is none.
inline const dispatch::network_entry* select_entry(const dispatch::entry_list& entries) noexcept {
  for (const dispatch::network_entry* entry : entries)
    if (entry != nullptr && cpu_supports(entry->isa)) return entry;
  return nullptr;
}

/// A network chosen among its per-target builds. prepare() and run() report misuse the boundary
/// can see (sizes, shapes, alignment, element type, a CPU without the target) as a status.
class dispatched_network {
 public:
  /// Picks the best entry the CPU supports (target() says which; "none" when nothing fits).
  explicit dispatched_network(const dispatch::entry_list& entries) noexcept : entry_(select_entry(entries)) {}
  /// Uses `entry` as given (tests compare targets this way); prepare() refuses one the CPU cannot run.
  explicit dispatched_network(const dispatch::network_entry& entry) noexcept : entry_(&entry) {}

  dispatched_network(const dispatched_network&) = delete;
  dispatched_network& operator=(const dispatched_network&) = delete;
  ~dispatched_network() { release(); }

  bool selected() const noexcept { return entry_ != nullptr; }
  std::string_view target() const noexcept { return entry_ ? to_string(entry_->isa) : "none"; }
  /// The element type run() takes ("u8", "i8" or "i16"; "none" when no entry was picked).
  std::string_view element() const noexcept { return entry_ ? to_string(entry_->type) : "none"; }
  /// Whether the chosen target's layers run on AMX (decided by that target's own detection).
  bool uses_amx() const noexcept { return entry_ && entry_->amx_enabled(); }

  std::size_t arena_bytes() const noexcept { return entry_ ? entry_->arena_bytes : 0; }
  std::size_t peak_live_bytes() const noexcept { return entry_ ? entry_->peak_live_bytes : 0; }
  std::size_t state_bytes() const noexcept { return entry_ ? entry_->state_bytes : 0; }
  std::size_t state_alignment() const noexcept { return entry_ ? entry_->state_alignment : 1; }
  std::size_t blob_bytes() const noexcept { return entry_ ? entry_->blob_bytes : 0; }
  std::uint64_t macs() const noexcept { return entry_ ? entry_->macs : 0; }
  std::uint64_t weight_bytes() const noexcept { return entry_ ? entry_->weight_bytes : 0; }
  shape input_shape() const noexcept { return entry_ ? to_shape(entry_->input_dims) : shape{}; }
  shape output_shape() const noexcept { return entry_ ? to_shape(entry_->output_dims) : shape{}; }

  /// Load time: reads the weights blob (network::save) into `state_storage` (state_bytes() bytes,
  /// state_alignment() aligned; it must outlive this object, whose destructor destroys the state
  /// there) and prepares the network there.
  status prepare(std::span<const std::byte> blob, std::span<std::byte> state_storage) noexcept {
    release();
    if (!entry_) return {errc::invalid_argument, "dispatched_network: no linked target runs on this CPU"};
    if (!cpu_supports(entry_->isa))
      return {errc::invalid_argument, "dispatched_network: this CPU cannot run the target"};
    if (state_storage.size() < entry_->state_bytes)
      return {errc::invalid_argument, "dispatched_network: state storage is smaller than state_bytes()"};
    if (reinterpret_cast<std::uintptr_t>(state_storage.data()) % entry_->state_alignment != 0)
      return {errc::bad_alignment, "dispatched_network: state storage is not aligned to state_alignment()"};
    const status s = from(entry_->prepare(blob.data(), blob.size(), state_storage.data()));
    if (s) state_ = state_storage.data();
    return s;
  }

  /// Computes the network: `input` and `output` have its shapes and batch 1, `arena` at least
  /// arena_bytes() bytes, 64-byte aligned. No heap allocation.
  template <network_element T>
  status run(tensor_view<const T> input, tensor_view<T> output, std::span<std::byte> arena) const noexcept {
    serial_executor serial;
    return run(input, output, arena, serial);
  }

  /// The same with the layers on `exec`'s threads (bit-identical to the serial run).
  template <network_element T, parallel_executor E>
  status run(tensor_view<const T> input, tensor_view<T> output, std::span<std::byte> arena, E& exec) const noexcept {
    if (const status s = check_run<T>(input, output); !s) return s;
    return from(entry_->run(state_, to_ref(input), to_ref(output), arena.data(), arena.size(), to_executor_ref(exec)));
  }

  /// mosaiq::profile in the chosen target: one warm-up and `runs` timed runs on `exec`'s threads,
  /// the per-layer table printed to `out` (nullptr: nothing printed).
  template <network_element T, parallel_executor E>
  status profile(tensor_view<const T> input, tensor_view<T> output, std::span<std::byte> arena, int runs,
                 std::FILE* out, E& exec) const noexcept {
    if (const status s = check_run<T>(input, output); !s) return s;
    return from(entry_->profile(state_, to_ref(input), to_ref(output), arena.data(), arena.size(),
                                to_executor_ref(exec), runs, out));
  }

  /// The extra output `name` (a layers::output of the network) as the last run() left it in
  /// `arena`. Misuse (no such output, another element type, an arena too small) goes to the error
  /// handler (mosaiq::require) and gives an empty view.
  template <network_element T>
  tensor_view<const T> extra_output(std::string_view name, std::span<const std::byte> arena) const noexcept {
    const dispatch::extra_output* found = find_output(name);
    if (!require(found != nullptr, errc::invalid_argument,
                 "dispatched_network::extra_output: no output of this name") ||
        !require(entry_->type == dispatch_element<T>, errc::invalid_argument,
                 "dispatched_network::extra_output: the network's element type differs"))
      return {};
    const shape dims = to_shape(found->dims);
    if (!require(arena.size() >= found->arena_offset + dims.elements(), errc::invalid_argument,
                 "dispatched_network::extra_output: arena is smaller than arena_bytes()"))
      return {};
    return tensor_view<const T>(reinterpret_cast<const T*>(arena.data() + found->arena_offset), dims);
  }

  /// Quantization of the extra output `name` (after prepare(); {} when there is no such output).
  quant_params extra_output_quant(std::string_view name) const noexcept {
    const dispatch::extra_output* found = find_output(name);
    return state_ && found ? to_quant(entry_->tensor_quant(state_, found->tensor)) : quant_params{};
  }

  quant_params input_quant() const noexcept {
    return state_ ? to_quant(entry_->tensor_quant(state_, 0)) : quant_params{};
  }
  quant_params output_quant() const noexcept {
    return state_ ? to_quant(entry_->tensor_quant(state_, entry_->tensor_count - 1)) : quant_params{};
  }

 private:
  void release() noexcept {
    if (state_) entry_->destroy(state_);
    state_ = nullptr;
  }
  template <class T>
  status check_run(const tensor_view<const T>& input, const tensor_view<T>& output) const noexcept {
    if (!state_) return {errc::invalid_argument, "dispatched_network::run: prepare() has not succeeded"};
    if (entry_->type != dispatch_element<T>)
      return {errc::invalid_argument, "dispatched_network::run: the network's element type differs"};
    if (input.batch() != 1 || output.batch() != 1)
      return {errc::shape_mismatch, "dispatched_network::run: batch must be 1"};
    return {};
  }
  const dispatch::extra_output* find_output(std::string_view name) const noexcept {
    if (!entry_) return nullptr;
    for (std::size_t i = 0; i < entry_->extra_output_count; ++i) {
      const dispatch::extra_output& o = entry_->extra_outputs[i];
      if (std::string_view(o.name, o.name_size) == name) return &o;
    }
    return nullptr;
  }
  /// `exec` as the boundary's executor_ref: each parallel_for crosses back into this unit's code.
  template <parallel_executor E>
  static dispatch::executor_ref to_executor_ref(E& exec) noexcept {
    return {&exec, static_cast<int>(exec.thread_count()),
            [](void* context, std::size_t tasks, void (*task)(const void*, std::size_t), const void* task_context) {
              auto call = [&](std::size_t t) { task(task_context, t); };
              static_cast<E*>(context)->parallel_for(tasks, task_function(call));
            }};
  }
  template <class T>
  static dispatch::tensor_ref to_ref(const tensor_view<T>& v) noexcept {
    return {v.data(), v.height(), v.width(), v.channels(), v.pixel_stride()};
  }
  static constexpr shape to_shape(const int (&dims)[3]) noexcept { return {dims[0], dims[1], dims[2]}; }
  static constexpr quant_params to_quant(dispatch::quantization q) noexcept { return {q.scale, q.zero_point}; }
  static constexpr status from(dispatch::outcome o) noexcept { return {errc(o.code), o.message}; }

  const dispatch::network_entry* entry_ = nullptr;
  void* state_ = nullptr;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
