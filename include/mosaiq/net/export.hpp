// The per-target side of runtime dispatch (mosaiq/dispatch.hpp): a translation unit built for one
// target exports a network as a dispatch::network_entry named after the target,
//
//   MOSAIQ_EXPORT_NETWORK(face_net, my_network);   // defines face_net_target_avx2 in an AVX2 build
//
// whose functions are this target's instantiations (they live in its inline namespace, so the
// same source built for another target defines other symbols). CMake's mosaiq_add_multitarget
// defines MOSAIQ_MULTITARGET_TARGET=<target> for each copy; the unit then checks that the flags it
// was given really build that target.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>
#include <optional>
#include <span>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/dispatch.hpp"
#include "mosaiq/net/network.hpp"
#include "mosaiq/net/plan.hpp"
#include "mosaiq/net/profile.hpp"
#include "mosaiq/simd/amx.hpp"
#include "mosaiq/simd/target.hpp"

#if defined(MOSAIQ_MULTITARGET_TARGET)
static_assert(mosaiq::target_name == MOSAIQ_DETAIL_STRINGIZE(MOSAIQ_MULTITARGET_TARGET),
              "mosaiq: this copy of a multi-target source does not build the target it is named for (flags?)");
#endif

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

/// The network_entry functions of network `Net` in this target.
template <class Net>
struct exported_network {
  using T = typename Net::element_type;

  /// Weights and prepared network, placed in the caller's storage (prepared refers to weights).
  struct state {
    typename Net::weights weights{};
    std::optional<typename Net::prepared> prepared;
  };

  static dispatch::outcome fail(errc code, const char* message) noexcept { return {int(code), message}; }

  static dispatch::outcome prepare(const std::byte* blob, std::size_t blob_size, void* storage) {
    if (blob == nullptr) return fail(errc::null_pointer, "dispatched_network::prepare: blob is null");
    if (blob_size != Net::blob_bytes)
      return fail(errc::blob_mismatch, "dispatched_network::prepare: blob size differs from the network's");
    auto* s = new (storage) state{};
    if (!Net::load(std::span<const std::byte>(blob, blob_size), s->weights)) {
      s->~state();
      return fail(errc::blob_mismatch, "dispatched_network::prepare: the blob is for another network");
    }
    s->prepared.emplace(Net::prepare(s->weights));
    return fail(errc::ok, "");
  }

  static void destroy(void* storage) { static_cast<state*>(storage)->~state(); }

  static dispatch::outcome check(const dispatch::tensor_ref& v, shape dims, const char* what) noexcept {
    if (v.data == nullptr) return fail(errc::null_pointer, what);
    if (v.height != dims.height || v.width != dims.width || v.channels != dims.channels || v.pixel_stride < v.channels)
      return fail(errc::shape_mismatch, what);
    return fail(errc::ok, "");
  }

  static dispatch::outcome check_arena(const std::byte* arena, std::size_t arena_size) noexcept {
    if (Net::arena_bytes == 0) return fail(errc::ok, "");
    if (arena == nullptr) return fail(errc::null_pointer, "dispatched_network::run: arena is null");
    if (arena_size < Net::arena_bytes)
      return fail(errc::invalid_argument, "dispatched_network::run: arena is smaller than arena_bytes()");
    if (reinterpret_cast<std::uintptr_t>(arena) % arena_alignment != 0)
      return fail(errc::bad_alignment, "dispatched_network::run: arena must be 64-byte aligned");
    return fail(errc::ok, "");
  }

  /// The caller's thread pool (dispatch::executor_ref) as this target's parallel_executor.
  struct executor_adaptor {
    dispatch::executor_ref ref;
    int thread_count() const noexcept { return ref.thread_count; }
    void parallel_for(std::size_t tasks, task_function fn) const {
      ref.parallel_for(
          ref.context, tasks, [](const void* f, std::size_t t) { (*static_cast<const task_function*>(f))(t); }, &fn);
    }
  };

  /// The caller's arguments as this target's views: checked, then handed to `body(input, output,
  /// arena, executor)`.
  template <class Body>
  static dispatch::outcome with_checked(dispatch::tensor_ref in, dispatch::tensor_ref out, std::byte* arena,
                                        std::size_t arena_size, dispatch::executor_ref exec, Body&& body) {
    for (const dispatch::outcome o :
         {check(in, Net::input_shape, "dispatched_network::run: input must have the network's input shape"),
          check(out, Net::output_shape, "dispatched_network::run: output must have the network's output shape"),
          check_arena(arena, arena_size), check_executor(exec)})
      if (o.code != int(errc::ok)) return o;
    const tensor_view<const T> input(static_cast<const T*>(in.data), Net::input_shape, 1, in.pixel_stride);
    // The output is the caller's writable view: dispatch::tensor_ref carries one pointer type for both.
    const tensor_view<T> output(static_cast<T*>(const_cast<void*>(out.data)), Net::output_shape, 1, out.pixel_stride);
    executor_adaptor executor{exec};
    body(input, output, std::span<std::byte>(arena, arena_size), executor);
    return fail(errc::ok, "");
  }

  static dispatch::outcome check_executor(const dispatch::executor_ref& exec) noexcept {
    if (exec.parallel_for == nullptr || exec.thread_count < 1)
      return fail(errc::invalid_argument, "dispatched_network::run: executor without parallel_for or threads");
    return fail(errc::ok, "");
  }

  static const typename Net::prepared& prepared_of(const void* storage) noexcept {
    return *static_cast<const state*>(storage)->prepared;
  }

  static dispatch::outcome run(const void* storage, dispatch::tensor_ref in, dispatch::tensor_ref out, std::byte* arena,
                               std::size_t arena_size, dispatch::executor_ref exec) {
    return with_checked(in, out, arena, arena_size, exec, [&](auto input, auto output, auto a, auto& executor) {
      Net::run(prepared_of(storage), input, output, a, executor);
    });
  }

  static dispatch::outcome profile(const void* storage, dispatch::tensor_ref in, dispatch::tensor_ref out,
                                   std::byte* arena, std::size_t arena_size, dispatch::executor_ref exec, int runs,
                                   std::FILE* file) {
    return with_checked(in, out, arena, arena_size, exec, [&](auto input, auto output, auto a, auto& executor) {
      mosaiq::profile<Net>(prepared_of(storage), input, output, a, runs, file, executor);
    });
  }

  static dispatch::quantization tensor_quant(const void* storage, std::size_t tensor) noexcept {
    const quant_params q = prepared_of(storage).tensor_quant(tensor < Net::tensor_count ? tensor : 0);
    return {q.scale, q.zero_point};
  }

  /// Every layers::output of the network, with its place in this target's arena.
  static constexpr auto extra_outputs = [] {
    std::array<dispatch::extra_output, Net::extra_output_count> outputs{};
    std::size_t n = 0;
    for (std::size_t i = 0; i < Net::topology.name_count; ++i) {
      const named_tensor& named = Net::topology.names[i];
      if (!named.output) continue;
      const shape dims = Net::topology.tensors[std::size_t(named.tensor)].dims;
      outputs[n++] = {named.name.data(),
                      named.name.size(),
                      std::size_t(named.tensor),
                      {dims.height, dims.width, dims.channels},
                      Net::tensor_offset(std::size_t(named.tensor))};
    }
    return outputs;
  }();

  static bool amx_enabled() noexcept { return simd::amx::enabled(); }

  static constexpr dispatch::network_entry entry() noexcept {
    return {compiled_target,
            dispatch_element<T>,
            {Net::input_shape.height, Net::input_shape.width, Net::input_shape.channels},
            {Net::output_shape.height, Net::output_shape.width, Net::output_shape.channels},
            Net::arena_bytes,
            Net::peak_live_bytes,
            Net::blob_bytes,
            sizeof(state),
            alignof(state),
            Net::macs,
            Net::weight_bytes,
            Net::tensor_count,
            extra_outputs.data(),
            extra_outputs.size(),
            &prepare,
            &destroy,
            &run,
            &profile,
            &tensor_quant,
            &amx_enabled};
  }
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail

/// Defines the dispatch::network_entry `<name>_target_<this target>` of network type `...`.
#define MOSAIQ_EXPORT_NETWORK(name, ...)                                                                      \
  extern const ::mosaiq::dispatch::network_entry MOSAIQ_DETAIL_ENTRY_NAME(name, MOSAIQ_TARGET_NAMESPACE);     \
  constinit const ::mosaiq::dispatch::network_entry MOSAIQ_DETAIL_ENTRY_NAME(name, MOSAIQ_TARGET_NAMESPACE) = \
      ::mosaiq::detail::exported_network<__VA_ARGS__>::entry()
