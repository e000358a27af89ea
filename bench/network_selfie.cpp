// selfie_{256,144x256}_{u8,i8}: MediaPipe's selfie segmentation models (npm @mediapipe/selfie_segmentation,
// 256x256x3 and the landscape 144x256x3 -> person probability), imported and calibrated at build time by
// mosaiq_add_model as tests/selfie_accuracy_test's are (bench/CMakeLists.txt), on face-api's sample1.jpg resized to
// the model input and / 255. mosaiq runs the generated static network; XNNPACK the same layers, weights and
// quantization op by op (xnnpack::from_network). One thread (the calling thread's CPU time), as issue 19's figure
// asks.
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

#include "mosaiq/tools/calibrate_model.hpp"
#include "network_rows.hpp"
#include "selfie_144x256_i8.hpp"
#include "selfie_144x256_u8.hpp"
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
  double mosaiq_ms = 0;  ///< per frame, once the mosaiq row ran

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

/// The model's mosaiq and XNNPACK rows; returns their shared problem.
template <class Model>
std::shared_ptr<lazy_problem<selfie_problem<Model>>> register_selfie_rows() {
  using problem = selfie_problem<Model>;
  using net = typename problem::net;
  using T = typename net::element_type;
  auto shared = std::make_shared<lazy_problem<problem>>();
  with_clock(1, register_row("network", "mosaiq", Model::name, [shared](benchmark::State& state) {
               problem* p = shared->get();
               if (p == nullptr) return state.SkipWithError(shared->error.c_str());
               time_frames(
                   state, 1, [p] { p->run(); }, net::macs, memory_counters<net>, &p->mosaiq_ms);
               state.SetLabel(std::string(simd::to_string(simd::native_isa)) + "; static network, " +
                              std::to_string(net::layer_count) + " layers, sample1.jpg, 1 thread");
             }));
#if MOSAIQ_BENCH_XNNPACK
  auto twin = std::make_shared<twin_state<net>>();
  with_clock(1, register_row("network", "xnnpack", Model::name, [shared, twin](benchmark::State& state) {
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
               time_frames(
                   state, 1, [&ops] { ops.run(); }, net::macs,
                   [p, &ops](benchmark::State& s, double ms) {
                     s.counters["activation_bytes"] = double(ops.activation_bytes());
                     if (p->mosaiq_ms > 0) s.counters["xnnpack/mosaiq"] = ms / p->mosaiq_ms;
                   },
                   nullptr);
               state.SetLabel(twin->label);
             }));
#endif
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

}  // namespace

void register_selfie() {
  const auto i8 = register_selfie_rows<selfie_256_i8_model>();
  register_banded_row<selfie_banded<selfie_256_i8::network>>(
      selfie_256_i8_model::name, [i8] { return i8->get(); },
      [](const selfie_problem<selfie_256_i8_model>& p) { return p.mosaiq_ms; });
  register_selfie_rows<selfie_256_u8_model>();
  register_selfie_rows<selfie_144x256_i8_model>();
  register_selfie_rows<selfie_144x256_u8_model>();
}

void print_selfie_memory_rows() {
  print_memory_row<selfie_banded<selfie_256_u8::network>>("selfie 256 (u8, i8)");
  print_memory_row<selfie_banded<selfie_144x256_u8::network>>("selfie 144x256 (u8, i8)");
}

}  // namespace mosaiq::bench
