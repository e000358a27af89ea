// bench_depthwise: quantized depthwise convolution, `depthwise/<impl>/<case>`, SAME padding, one
// thread. Each case runs u8 (per-tensor, filter zero point) and i8 (per-channel) workloads on
// mosaiq, XNNPACK and oneDNN; every implementation's output is first checked against
// mosaiq::reference. `--threads N` adds `depthwise/mosaiq/<case>_t<N>`: the same kernel in row
// bands on a mosaiq::thread_pool of N threads (wall-clock time).
// `depthwise/mosaiq/<case>_i16x8` rows: mosaiq::depthwise16x8 (TFLite's 16x8 mode: int16 activations, int8
// per-channel filters, int64 biases) on six of the MediaPipe selfie model's depthwise shapes, each beside the i8 rows
// (mosaiq, XNNPACK, oneDNN) of the same shape, checked bit for bit against reference::depthwise_conv_16x8. XNNPACK has
// no 16x8 convolution operator, so the i8 rows are the neighbours these rows have.
#include "mosaiq/ops/depthwise.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "../examples/common/threads.hpp"
#include "baselines.hpp"
#include "common.hpp"
#include "mosaiq/ops/depthwise16x8.hpp"
#include "problem_16x8.hpp"

namespace mosaiq::bench {
namespace {

/// A depthwise case as a compile-time value: the mosaiq kernel is a template on its config.
struct depthwise_case {
  int height, width, channels;
  hw kernel, stride, dilation;
  int multiplier = 1;
  constexpr conv_shape shape() const {
    return conv_shape::depthwise(height, width, channels, kernel, stride, dilation, multiplier);
  }
};

constexpr std::array depthwise_cases{
    depthwise_case{112, 112, 32, {3, 3}, {1, 1}, {1, 1}},   // MobileNet v1 first depthwise layer
    depthwise_case{112, 112, 64, {3, 3}, {2, 2}, {1, 1}},   // MobileNet v1 stride-2 layers
    depthwise_case{56, 56, 128, {3, 3}, {1, 1}, {1, 1}},    //
    depthwise_case{28, 28, 256, {3, 3}, {1, 1}, {1, 1}},    //
    depthwise_case{14, 14, 512, {3, 3}, {1, 1}, {1, 1}},    //
    depthwise_case{64, 64, 64, {3, 3}, {1, 1}, {2, 2}},     // dilated (DeepLab/ASPP-style segmentation)
    depthwise_case{64, 64, 64, {3, 3}, {2, 2}, {2, 2}},     // dilation with stride
    depthwise_case{28, 28, 96, {5, 5}, {1, 1}, {1, 1}},     // 5x5 (MobileNet v3, EfficientNet)
    depthwise_case{56, 56, 32, {3, 3}, {1, 1}, {1, 1}, 2},  // depth multiplier 2
};

template <depthwise_case Case>
constexpr depthwise_config config_of{.kernel = Case.kernel,
                                     .stride = Case.stride,
                                     .dilation = Case.dilation,
                                     .pad = padding::same(),
                                     .depth_multiplier = Case.multiplier};

template <depthwise_case Case, quantized_element T>
conv_runner<T> make_mosaiq(const conv_problem<T>& p) {
  const conv_shape& s = p.shape;
  using op_type = depthwise<config_of<Case>, T>;
  struct state {
    op_type op;
    aligned_buffer<std::byte> workspace;
    aligned_buffer<T> output;
  };
  auto st = std::make_shared<state>(op_type(p.filter.data(), p.bias.data(), s.input_channels, p.requant),
                                    aligned_buffer<std::byte>(), aligned_buffer<T>(s.output_shape().elements()));
  st->workspace = aligned_buffer<std::byte>(st->op.workspace_bytes(s.input_shape()));
  const tensor_view<const T> in = p.input_view();
  const tensor_view<T> out(st->output.data(), s.output_shape());
  return {.run = [st, in, out] { st->op(in, out, st->workspace.span()); },
          .output = st->output.span(),
          .label = "mosaiq::depthwise"};
}

template <depthwise_case Case, quantized_element T>
void register_case(std::uint32_t seed, int threads) {
  auto problem = std::make_shared<conv_problem<T>>(Case.shape(), seed);
  // mosaiq implements the reference's rounding, so it must match bit for bit.
  register_conv_row<T>("depthwise", "mosaiq", problem, make_mosaiq<Case, T>, 0);
  if (threads > 1) {
    const auto make = [threads](const conv_problem<T>& p) {
      using op_type = depthwise<config_of<Case>, T>;
      auto op = std::make_shared<const op_type>(p.filter.data(), p.bias.data(), p.shape.input_channels, p.requant);
      return parallel_runner<op_type, T>(op, p, threads, "mosaiq::depthwise");
    };
    register_conv_row<T>("depthwise", "mosaiq", problem, make, 0, threads);
  }
  register_baseline_rows<T>("depthwise", problem);
}

template <std::size_t... I>
void register_cases(int threads, std::index_sequence<I...>) {
  // Seeds follow registration order, so every run (and every filter) sees the same data per case.
  std::uint32_t seed = 1;
  ((register_case<depthwise_cases[I], u8>(seed++, threads), register_case<depthwise_cases[I], i8>(seed++, threads)),
   ...);
}

// The selfie model's depthwise shapes the 16x8 rows run (issue 19): its 3x3 and 5x5 windows at strides 1 and 2.
constexpr std::array selfie_16x8_cases{
    depthwise_case{128, 128, 16, {3, 3}, {1, 1}, {1, 1}}, depthwise_case{128, 128, 16, {3, 3}, {2, 2}, {1, 1}},
    depthwise_case{64, 64, 72, {3, 3}, {2, 2}, {1, 1}},   depthwise_case{32, 32, 88, {3, 3}, {1, 1}, {1, 1}},
    depthwise_case{32, 32, 96, {5, 5}, {2, 2}, {1, 1}},   depthwise_case{16, 16, 128, {5, 5}, {1, 1}, {1, 1}},
};

/// The i8 rows of a selfie shape, then its `_i16x8` row. Registered after the other cases, which keep their seeds.
template <std::size_t... I>
void register_16x8_cases(std::uint32_t seed, int threads, std::index_sequence<I...>) {
  (
      [&] {
        constexpr depthwise_case c = selfie_16x8_cases[I];
        using op_type =
            depthwise16x8<depthwise16x8_config{.kernel = c.kernel, .stride = c.stride, .dilation = c.dilation}>;
        register_case<c, i8>(seed++, threads);
        register_16x8_row<op_type>("depthwise", c.shape(), seed++, "mosaiq::depthwise16x8");
      }(),
      ...);
}

void register_all(int threads) {
  register_cases(threads, std::make_index_sequence<depthwise_cases.size()>{});
  register_16x8_cases(2 * depthwise_cases.size() + 1, threads, std::make_index_sequence<selfie_16x8_cases.size()>{});
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  const int threads = mosaiq_examples::take_threads_flag(argc, argv);
  if (threads == 0) return 2;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  mosaiq::bench::setup_baselines("mosaiq::depthwise");
  mosaiq::bench::register_all(threads);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
