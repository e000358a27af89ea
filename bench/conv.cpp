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
#include "mosaiq/ops/conv16x8.hpp"
#include "problem_16x8.hpp"

namespace mosaiq::bench {
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

/// `conv2d/mosaiq/<case>_i16x8`: the layer and its workspace, checked against the reference on the row's first run.
template <stem_case Case>
void register_16x8_case(std::uint32_t seed) {
  using op_type =
      conv2d16x8<conv2d16x8_config{.out_channels = Case.output_channels, .kernel = {3, 3}, .stride = {2, 2}}>;
  struct layer {
    op_type op;
    aligned_buffer<std::byte> workspace;
    bool uses_int32_path() const noexcept { return op.uses_int32_path(); }
  };
  const conv_shape shape = conv_shape::dense(Case.height, Case.width, 3, Case.output_channels, {3, 3}, {2, 2});
  register_checked_16x8_row(
      "conv2d", case_name_16x8(shape), shape.macs(), "mosaiq::conv2d16x8 (im2col + pointwise16x8)",
      [shape, seed] { return std::make_unique<problem_16x8>(shape, seed); },
      [](const problem_16x8& p) {
        return std::make_unique<layer>(op_type(p.filter.data(), p.bias.data(), 3, p.requant),
                                       aligned_buffer<std::byte>(op_type::workspace_bytes(p.shape.input_shape())));
      },
      [](layer& l, problem_16x8& p) { l.op(p.input_view(), p.output_view(p.output), l.workspace.span()); });
}

template <std::size_t... I>
void register_all(std::index_sequence<I...>) {
  std::uint32_t seed = 300;
  ((register_case<stem_cases[I], u8>(seed++), register_case<stem_cases[I], i8>(seed++)), ...);
  // The selfie stems (16 output channels) in 16x8.
  (
      [&] {
        if constexpr (stem_cases[I].output_channels == 16) register_16x8_case<stem_cases[I]>(seed++);
      }(),
      ...);
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
