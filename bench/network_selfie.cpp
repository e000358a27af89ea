// selfie_{256,144x256}_{u8,i8,i16}: MediaPipe's selfie segmentation models (npm @mediapipe/selfie_segmentation,
// 256x256x3 and the landscape 144x256x3 -> person probability), imported and calibrated at build time by
// mosaiq_add_model as tests/selfie_accuracy_test's are (bench/CMakeLists.txt), on face-api's sample1.jpg resized to
// the model input and / 255. mosaiq runs the generated static network; XNNPACK the same layers, weights and
// quantization op by op (xnnpack::from_network). One thread (the calling thread's CPU time), as issue 19's figure
// asks, and with `--threads N` the same rows on N threads (`_t<N>`, wall-clock): mosaiq's network planned for
// mosaiq_examples::max_threads threads (Net::with_max_threads) on a thread_pool, its output checked byte for byte
// against the one-thread output first; XNNPACK on a pthreadpool. The i16 (16x8: int16 activations, int8 filters)
// networks have mosaiq rows only: XNNPACK has no 16x8 operators.
//
// Before timing, XNNPACK's person probability is compared with mosaiq's: XNNPACK requantizes in float (and runs
// hard-swish in f32), so single steps differ and compound through 139 layers; the check is that the two compute
// the same mask (at least 90% of the pixels on the same side of 0.5, the output not constant), and the label
// reports the mask agreement, mean and max |difference| in output steps (1/256).
#include "network_selfie.hpp"

#include <stb/stb_image.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mosaiq/tools/calibrate_model.hpp"
#include "network_rows.hpp"
#include "selfie_144x256_i16.hpp"
#include "selfie_144x256_i8.hpp"
#include "selfie_144x256_u8.hpp"
#include "selfie_256_i16.hpp"
#include "selfie_256_i8.hpp"
#include "selfie_256_u8.hpp"

namespace mosaiq::bench {
namespace {

/// One generated model: its network type, bench case name and quantized weights blob.
template <class Net, const char* Name, const char* Blob>
struct selfie_model {
  using net = Net;
  static constexpr const char* name = Name;
  static constexpr const char* blob = Blob;
};

constexpr char selfie_256_i8_name[] = "selfie_256_i8", selfie_256_i8_blob[] = MOSAIQ_MODEL_SELFIE_256_I8_WEIGHTS;
constexpr char selfie_256_u8_name[] = "selfie_256_u8", selfie_256_u8_blob[] = MOSAIQ_MODEL_SELFIE_256_U8_WEIGHTS;
constexpr char selfie_144x256_i8_name[] = "selfie_144x256_i8",
               selfie_144x256_i8_blob[] = MOSAIQ_MODEL_SELFIE_144X256_I8_WEIGHTS;
constexpr char selfie_144x256_u8_name[] = "selfie_144x256_u8",
               selfie_144x256_u8_blob[] = MOSAIQ_MODEL_SELFIE_144X256_U8_WEIGHTS;
constexpr char selfie_256_i16_name[] = "selfie_256_i16", selfie_256_i16_blob[] = MOSAIQ_MODEL_SELFIE_256_I16_WEIGHTS;
constexpr char selfie_144x256_i16_name[] = "selfie_144x256_i16",
               selfie_144x256_i16_blob[] = MOSAIQ_MODEL_SELFIE_144X256_I16_WEIGHTS;

tools::rgb_image load_photo(const char* path) {
  int width = 0, height = 0, channels = 0;
  unsigned char* data = stbi_load(path, &width, &height, &channels, 3);
  if (data == nullptr) throw std::runtime_error(std::string("cannot read ") + path + ": " + stbi_failure_reason());
  tools::rgb_image image{width, height, std::vector<u8>(data, data + std::size_t(width) * std::size_t(height) * 3)};
  stbi_image_free(data);
  return image;
}

/// A model's weights, prepared network, the photo as its input, and mosaiq's output of it.
template <class Model>
struct selfie_problem {
  using net = typename Model::net;
  using T = typename net::element_type;
  std::unique_ptr<typename net::weights> weights = std::make_unique<typename net::weights>();
  std::optional<typename net::prepared> prepared;
  aligned_buffer<T> input{net::input_shape.elements()}, output{net::output_shape.elements()};
  aligned_buffer<std::byte> arena{net::arena_bytes};
  std::array<double, mosaiq_examples::max_threads + 1> mosaiq_ms{};  ///< per frame by threads, once that row ran

  selfie_problem() {
    const auto blob = tools::detail::read_bytes(Model::blob);
    if (!blob || !net::load(*blob, *weights)) throw std::runtime_error(std::string("cannot load ") + Model::blob);
    prepared.emplace(net::prepare(*weights));
    const std::vector<T> q =
        tools::quantize_input<net>(*weights, tools::input_from_rgb<net>(load_photo(MOSAIQ_BENCH_SELFIE_PHOTO)));
    if (q.size() != input.size()) throw std::runtime_error("selfie input: wrong size");
    std::copy(q.begin(), q.end(), input.data());
    run();
  }
  void run() {
    serial_executor serial;
    net::run(*prepared, tensor_view<const T>(input.data(), net::input_shape),
             tensor_view<T>(output.data(), net::output_shape), arena.span(), serial);
  }
  static std::string case_name() { return Model::name; }
};

#if MOSAIQ_BENCH_XNNPACK
/// XNNPACK's person probability against mosaiq's (both quantized 1/256 from the type's minimum): the label, and an
/// error when they are not the same mask.
template <quantized_element T>
std::string compare_probabilities(std::span<const T> got, std::span<const T> want, std::size_t operators,
                                  std::string& error) {
  const output_match m = compare_outputs<T>(got, want);
  constexpr int half = element_traits<T>::min + 128;  // probability 0.5
  std::size_t agree = 0;
  double abs_diff = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    agree += (got[i] >= half) == (want[i] >= half);
    abs_diff += std::abs(int(got[i]) - int(want[i]));
  }
  const auto [lo, hi] = std::minmax_element(got.begin(), got.end());
  const double agreement = double(agree) / double(want.size());
  char text[224];
  std::snprintf(text, sizeof text,
                "%s, %zu operators; vs mosaiq: mask %.2f%% equal, probability mean|diff| %.2f LSB, max %d",
                std::same_as<T, u8> ? "qu8 (hard-swish f32)" : "qc8/qs8 (hard-swish f32)", operators, 100.0 * agreement,
                abs_diff / double(want.size()), m.max_abs_diff);
  if (int(*hi) - int(*lo) < 16 || agreement < 0.9)
    error = std::string("XNNPACK output implausible (constant, or far from mosaiq's): ") + text;
  return text;
}
#endif

template <class Model>
using selfie_shared = lazy_problem<selfie_problem<Model>>;

/// The generated network planned for runs on up to mosaiq_examples::max_threads threads, as the portrait and face
/// networks of the N-thread rows are.
template <class Net>
using selfie_threaded = typename Net::template with_max_threads<mosaiq_examples::max_threads>;

std::string selfie_label(int layers, int threads) {
  return std::string(simd::to_string(simd::native_isa)) + "; static network, " + std::to_string(layers) +
         " layers, sample1.jpg, " + std::to_string(threads) + " thread(s)";
}

/// `network/mosaiq/<model>[_t<N>]`: the generated network on the calling thread, or its threaded plan on the pool.
template <class Model>
void register_selfie_mosaiq_row(std::shared_ptr<selfie_shared<Model>> shared, std::shared_ptr<thread_pools> pools) {
  using problem = selfie_problem<Model>;
  using net = typename problem::net;
  const int threads = pools->threads;
  if (threads == 1) {
    with_clock(1, register_row("network", "mosaiq", Model::name, [shared](benchmark::State& state) {
                 problem* p = shared->get();
                 if (p == nullptr) return state.SkipWithError(shared->error.c_str());
                 time_frames(
                     state, 1, [p] { p->run(); }, net::macs, memory_counters<net>, &p->mosaiq_ms[1]);
                 state.SetLabel(selfie_label(net::layer_count, 1));
               }));
    return;
  }
  using threaded = selfie_threaded<net>;
  using twin = plan_twin<threaded, problem>;
  auto plan = std::make_shared<lazy_problem<twin>>();
  const std::string case_name = Model::name + threads_suffix(threads);
  with_clock(threads, register_row("network", "mosaiq", case_name, [=](benchmark::State& state) {
               problem* p = shared->get();
               if (p == nullptr) return state.SkipWithError(shared->error.c_str());
               twin* t = plan->get(*p, pools->mosaiq_pool());
               if (t == nullptr) return state.SkipWithError(plan->error.c_str());
               print_thread_profile<threaded>(
                   case_name, *t->prepared,
                   tensor_view<const typename threaded::element_type>(p->input.data(), threaded::input_shape),
                   tensor_view<typename threaded::element_type>(t->output.data(), threaded::output_shape),
                   t->arena.span(), pools->mosaiq_pool());
               time_frames(
                   state, threads, [t, p, &pools] { t->run(*p, pools->mosaiq_pool()); }, threaded::macs,
                   memory_counters<threaded>, &p->mosaiq_ms[std::size_t(threads)]);
               state.SetLabel(selfie_label(threaded::layer_count, threads));
             }));
}

#if MOSAIQ_BENCH_XNNPACK
/// `network/xnnpack/<model>[_t<N>]`: the same layers, weights and quantization op by op, on a pthreadpool of N
/// threads (the calling thread for one).
template <class Model>
void register_selfie_xnnpack_row(std::shared_ptr<selfie_shared<Model>> shared, std::shared_ptr<thread_pools> pools,
                                 std::shared_ptr<twin_state<typename Model::net>> twin) {
  using problem = selfie_problem<Model>;
  using net = typename problem::net;
  using T = typename net::element_type;
  const int threads = pools->threads;
  const std::string case_name = Model::name + threads_suffix(threads);
  with_clock(threads,
             register_row("network", "xnnpack", case_name, [shared, twin, pools, threads](benchmark::State& state) {
               problem* p = shared->get();
               if (p == nullptr) return state.SkipWithError(shared->error.c_str());
               if (!twin->twin && twin->error.empty()) {
                 try {
                   twin->twin.emplace(xnnpack::from_network<net>(*p->weights));
                   auto& ops = *twin->twin->ops;
                   std::copy_n(p->input.data(), p->input.size(), ops.values(twin->twin->input()).data());
                   ops.run();
                   twin->label = compare_probabilities<T>(ops.values(twin->twin->output()), p->output.span(),
                                                          ops.operator_count(), twin->error);
                   if (twin->error.empty()) print_layer_comparison(*p, *twin->twin);
                 } catch (const std::exception& e) {
                   twin->error = e.what();
                 }
               }
               if (!twin->error.empty()) return state.SkipWithError(twin->error.c_str());
               const xnnpack::op_network<T>& ops = *twin->twin->ops;
               const pthreadpool_t pool = pools->xnnpack_pool();
               time_frames(
                   state, threads, [&ops, pool] { ops.run(pool); }, net::macs,
                   [p, &ops, threads](benchmark::State& s, double ms) {
                     s.counters["activation_bytes"] = double(ops.activation_bytes());
                     const double mine = p->mosaiq_ms[std::size_t(threads)];
                     if (mine > 0) s.counters["xnnpack/mosaiq"] = ms / mine;
                   },
                   nullptr);
               state.SetLabel(twin->label);
             }));
}
#endif

/// XNNPACK has no 16x8 operators: the i16 networks have no twin.
template <class Model>
constexpr bool has_xnnpack_twin = !std::same_as<typename Model::net::element_type, i16>;

/// The model's mosaiq and XNNPACK rows for each thread count; returns their shared problem.
template <class Model>
std::shared_ptr<selfie_shared<Model>> register_selfie_rows(const std::vector<int>& thread_counts) {
  auto shared = std::make_shared<selfie_shared<Model>>();
#if MOSAIQ_BENCH_XNNPACK
  using twin_type = std::conditional_t<has_xnnpack_twin<Model>, twin_state<typename Model::net>, std::shared_ptr<void>>;
  [[maybe_unused]] auto twin = std::make_shared<twin_type>();
#endif
  for (const int threads : thread_counts) {
    auto pools = std::make_shared<thread_pools>(threads);
    register_selfie_mosaiq_row<Model>(shared, pools);
#if MOSAIQ_BENCH_XNNPACK
    if constexpr (has_xnnpack_twin<Model>) register_selfie_xnnpack_row<Model>(shared, pools, twin);
#endif
  }
  return shared;
}

/// The selfie models' memory plan (issue 21): the decoder's last 2x upsampling and its 1x1 layer (layers 123..124,
/// 128x128x16) in bands of 8 rows, and 8 KiB GEMM blocks, which take the 73,728-byte workspace of that 1x1 layer off
/// the peak. Nothing lower: three whole 128x128x16 maps are live around the whole-map average pool that follows
/// (786,432 bytes), and a chain ends before such a pool.
inline constexpr banding selfie_banded_plan = banding::chain(123, 124, 8).with_gemm_block_bytes(8192);
template <class Net>
using selfie_banded = typename Net::template with_banding<selfie_banded_plan>;
static_assert(selfie_256_i8::network::layer<123>::kind == "resize_bilinear" &&
              selfie_144x256_i8::network::layer<124>::kind == "pointwise");

using selfie_256_i8_model = selfie_model<selfie_256_i8::network, selfie_256_i8_name, selfie_256_i8_blob>;
using selfie_256_u8_model = selfie_model<selfie_256_u8::network, selfie_256_u8_name, selfie_256_u8_blob>;
using selfie_144x256_i8_model =
    selfie_model<selfie_144x256_i8::network, selfie_144x256_i8_name, selfie_144x256_i8_blob>;
using selfie_144x256_u8_model =
    selfie_model<selfie_144x256_u8::network, selfie_144x256_u8_name, selfie_144x256_u8_blob>;
using selfie_256_i16_model = selfie_model<selfie_256_i16::network, selfie_256_i16_name, selfie_256_i16_blob>;
using selfie_144x256_i16_model =
    selfie_model<selfie_144x256_i16::network, selfie_144x256_i16_name, selfie_144x256_i16_blob>;

}  // namespace

void register_selfie(const std::vector<int>& thread_counts) {
  const auto i8 = register_selfie_rows<selfie_256_i8_model>(thread_counts);
  register_banded_row<selfie_banded<selfie_256_i8::network>>(
      selfie_256_i8_model::name, [i8] { return i8->get(); },
      [](const selfie_problem<selfie_256_i8_model>& p) { return p.mosaiq_ms[1]; });
  register_selfie_rows<selfie_256_u8_model>(thread_counts);
  register_selfie_rows<selfie_144x256_i8_model>(thread_counts);
  register_selfie_rows<selfie_144x256_u8_model>(thread_counts);
  register_selfie_rows<selfie_256_i16_model>(thread_counts);
  register_selfie_rows<selfie_144x256_i16_model>(thread_counts);
}

void print_selfie_memory_rows() {
  print_memory_row<selfie_banded<selfie_256_u8::network>>("selfie 256 (u8, i8)");
  print_memory_row<selfie_banded<selfie_144x256_u8::network>>("selfie 144x256 (u8, i8)");
}

}  // namespace mosaiq::bench
