// bench_conv: dense 3x3 stride-2 convolutions over 3 input channels (the RGB stems of the selfie
// segmentation models, 256x256 and 144x256 -> 16, and of the face detector, 512x512 -> 32),
// `conv2d/<impl>/<case>`, one thread, u8 and i8 workloads on mosaiq::conv2d, XNNPACK and oneDNN,
// each checked against mosaiq::reference (mosaiq bit for bit). MobileNet's 224x224 stem is a
// bench_pointwise row.
// `conv2d/mosaiq/<case>_i16x8` rows: mosaiq::conv2d16x8 (TFLite's 16x8 mode, the i16 selfie network's stem: im2col
// bands and the 16x8 pointwise GEMM) on the selfie stems, beside the i8 row of the same shape, checked bit for bit
// against reference::conv2d_16x8. XNNPACK has no 16x8 convolution operator, so no baseline beside them.
#include "mosaiq/ops/conv.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "baselines.hpp"
#include "common.hpp"

namespace mosaiq::bench {

/// The `_i16x8` rows (bench/conv16x8_rows.cpp: a translation unit of their own, so that the 8-bit rows' code is
/// compiled as without them).
void register_conv16x8_rows(std::uint32_t& seed);

namespace {

/// The stems as compile-time values: the mosaiq kernel is a template on its output channels.
struct stem_case {
  int height, width, output_channels;
};
constexpr std::array stem_cases{stem_case{256, 256, 16}, stem_case{144, 256, 16}, stem_case{512, 512, 32}};

/// The vector path of the build (AMX, where a CPU has it, is bench_pointwise's mosaiq_amx rows).
template <int OutChannels, quantized_element T>
conv_runner<T> make_mosaiq(const conv_problem<T>& p) {
  return layer_runner<conv2d<conv2d_config{.out_channels = OutChannels, .kernel = {3, 3}, .stride = {2, 2}}, T>, T>(
      p, "mosaiq::conv2d");
}

template <stem_case Case, quantized_element T>
void register_case(std::uint32_t seed) {
  const conv_shape shape = conv_shape::dense(Case.height, Case.width, 3, Case.output_channels, {3, 3}, {2, 2});
  auto problem = std::make_shared<conv_problem<T>>(shape, seed);
  register_conv_row<T>("conv2d", "mosaiq", problem, make_mosaiq<Case.output_channels, T>, 0);
  register_baseline_rows<T>("conv2d", problem);
}

template <std::size_t... I>
void register_all(std::index_sequence<I...>) {
  std::uint32_t seed = 300;
  ((register_case<stem_cases[I], u8>(seed++), register_case<stem_cases[I], i8>(seed++)), ...);
  register_conv16x8_rows(seed);
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const std::string context = "mosaiq::conv2d (3x3 stride 2 over 3 channels), the " +
                              std::string(mosaiq::simd::to_string(mosaiq::simd::native_isa)) + " vector path";
  mosaiq::bench::setup_baselines(context.c_str());
  mosaiq::bench::register_all(std::make_index_sequence<mosaiq::bench::stem_cases.size()>{});
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
