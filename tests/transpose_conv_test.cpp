// ops/transpose_conv.hpp against reference/transpose_conv.hpp, bit for bit: kernels 1-4 (square and not), strides
// 1-3, SAME and VALID, both paths (kernel == stride: pointwise GEMM; otherwise the phase convolution; both then
// depth-to-space), kernels shorter than the stride on one axis,
// u8 per-tensor and i8 per-channel, fused ReLU6, output channel counts below, at and above a 16-channel block, input
// channel tails, odd sizes, batch 2, unaligned and strided views with canaries, and misuse.
#include "mosaiq/ops/transpose_conv.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "mosaiq/reference/transpose_conv.hpp"
#include "placed_tensor.hpp"
#include "support.hpp"

namespace {

using mosaiq::i8;
using mosaiq::padding;
using mosaiq::quant_params;
using mosaiq::shape;
using mosaiq::tensor_view;
using mosaiq::transpose_conv_config;
using mosaiq::u8;
using mosaiq::test::placed_tensor;
namespace ref = mosaiq::reference;

using mosaiq::test::layout;
constexpr layout layouts[] = {{1, 0, 0}, {2, 0, 1}, {1, 3, 1}, {2, 1, 2}};

/// Random weights and requantization for Cfg over `cin` input channels, the kernel, and the reference beside it.
template <transpose_conv_config Cfg, class T>
void check_config(int cin, std::mt19937& rng) {
  constexpr bool is_u8 = std::same_as<T, u8>;
  const int taps = Cfg.kernel.h * Cfg.kernel.w;
  const std::vector<T> filter =
      mosaiq::test::random_values<T>(rng, static_cast<std::size_t>(Cfg.out_channels) * taps * cin);
  std::vector<std::int32_t> bias(static_cast<std::size_t>(Cfg.out_channels));
  for (auto& b : bias) b = static_cast<std::int32_t>(rng() % 40001) - 20000;
  std::vector<float> scales(is_u8 ? 1 : static_cast<std::size_t>(Cfg.out_channels));
  for (auto& s : scales) s = 0.001f + 0.004f * static_cast<float>(rng() % 100) / 100.0f;
  const quant_params in_q{0.02f, is_u8 ? 140 : -9},
      out_q{0.05f * static_cast<float>(cin * taps) / 8.0f, is_u8 ? 120 : 4};
  const ref::conv_requant q = ref::make_conv_requant<Cfg.round, T>(in_q, scales, is_u8 ? 118 : 0, out_q, Cfg.act);
  const mosaiq::transpose_conv<Cfg, T> kernel(filter.data(), bias.data(), cin, q);
  REQUIRE(kernel.valid());
  const ref::transpose_conv_params p{.kernel = Cfg.kernel, .stride = Cfg.stride, .padding = Cfg.padding};
  for (const layout l : layouts)
    for (const shape size : {shape{1, 1, 0}, shape{1, 6, 0}, shape{3, 5, 0}, shape{5, 7, 0}, shape{4, 2, 0}}) {
      const shape in_dims{size.height, size.width, cin};
      const shape out_dims = kernel.output_shape(in_dims);
      placed_tensor<T> in(in_dims, l.batch, l.extra, l.misalign), out(out_dims, l.batch, l.extra, l.misalign + 1);
      placed_tensor<T> expected(out_dims, l.batch, 0, 0);
      in.fill_random(rng);
      ref::transpose_conv<Cfg.round, T>(tensor_view<const T>(in.view()), filter.data(), bias.data(), expected.view(), p,
                                        q);
      std::vector<std::byte> workspace(kernel.workspace_bytes(in_dims));
      kernel(in.view(), out.view(), workspace);
      CAPTURE(Cfg.kernel.h);
      CAPTURE(Cfg.kernel.w);
      CAPTURE(Cfg.stride.h);
      CAPTURE(Cfg.out_channels);
      CAPTURE(cin);
      CAPTURE(l.batch);
      CAPTURE(l.extra);
      CAPTURE(size.height);
      CAPTURE(size.width);
      CHECK(out.values() == expected.values());
      CHECK(out.first_damaged_canary() == -1);
      CHECK(in.first_damaged_canary() == -1);
    }
}

template <transpose_conv_config Cfg>
void check_both_types() {
  std::mt19937 rng(31 + Cfg.out_channels);
  for (const int cin : {1, 3, 8, 17, 33, 40}) {
    check_config<Cfg, u8>(cin, rng);
    check_config<Cfg, i8>(cin, rng);
  }
}

}  // namespace

TEST_CASE("transpose_conv: kernel == stride (pointwise GEMM and depth-to-space) equals the reference") {
  static_assert(mosaiq::transpose_conv<transpose_conv_config{.out_channels = 1}, u8>::is_pointwise);
  check_both_types<transpose_conv_config{.out_channels = 1}>();  // the selfie model's last layer: 2x2 s2 to 1 channel
  check_both_types<transpose_conv_config{.out_channels = 3, .kernel = {2, 3}, .stride = {2, 3}}>();
#if !MOSAIQ_TEST_PATH_GRIDS
  check_both_types<transpose_conv_config{.out_channels = 19, .padding = padding::valid()}>();
  check_both_types<transpose_conv_config{.out_channels = 16, .act = mosaiq::activation::relu6}>();
  check_both_types<transpose_conv_config{.out_channels = 5, .kernel = {1, 1}, .stride = {1, 1}}>();
#endif
}

TEST_CASE("transpose_conv: overlapping kernels (the phase convolution) equal the reference") {
  static_assert(!mosaiq::transpose_conv<transpose_conv_config{.out_channels = 3, .kernel = {3, 3}}, u8>::is_pointwise);
  check_both_types<transpose_conv_config{.out_channels = 3, .kernel = {3, 3}}>();
  check_both_types<transpose_conv_config{.out_channels = 33, .kernel = {1, 1}, .stride = {2, 2}}>();  // k < s: gaps
#if !MOSAIQ_TEST_PATH_GRIDS
  check_both_types<transpose_conv_config{.out_channels = 16, .kernel = {3, 3}, .padding = padding::valid()}>();
  check_both_types<transpose_conv_config{.out_channels = 5, .kernel = {4, 4}, .act = mosaiq::activation::relu6}>();
  check_both_types<transpose_conv_config{.out_channels = 1, .kernel = {4, 4}, .padding = padding::valid()}>();
  check_both_types<transpose_conv_config{.out_channels = 7, .kernel = {3, 3}, .stride = {1, 1}}>();
  check_both_types<transpose_conv_config{
      .out_channels = 4, .kernel = {2, 2}, .stride = {1, 1}, .padding = padding::valid()}>();
  check_both_types<transpose_conv_config{.out_channels = 2, .kernel = {4, 3}, .stride = {2, 1}}>();
#endif
}

TEST_CASE("transpose_conv: the phase convolution's edges (stride 3, kernel < stride on one axis, pads >= stride)") {
#if !MOSAIQ_TEST_PATH_GRIDS
  // 3x2 s2: one tap per phase along x (kernel == stride there), two or one along y.
  check_both_types<transpose_conv_config{.out_channels = 17, .kernel = {3, 2}, .stride = {2, 2}}>();
#endif
  // 2x3 at stride (3, 2), VALID: along y the kernel is shorter than the stride, so one phase row has no taps (bias).
  check_both_types<transpose_conv_config{
      .out_channels = 8, .kernel = {2, 3}, .stride = {3, 2}, .padding = padding::valid()}>();
  // 4x3 at stride (3, 2), SAME: phases of two and one taps along y.
  check_both_types<transpose_conv_config{
      .out_channels = 33, .kernel = {4, 3}, .stride = {3, 2}, .act = mosaiq::activation::relu6}>();
#if !MOSAIQ_TEST_PATH_GRIDS
  // 4x4 s3: phases of two and one taps, VALID's extra row; SAME below.
  check_both_types<transpose_conv_config{
      .out_channels = 3, .kernel = {4, 4}, .stride = {3, 3}, .padding = padding::valid()}>();
  // 4x4 s1 SAME: the leading pad (1) is a whole stride, so the first block is block 1.
  check_both_types<transpose_conv_config{.out_channels = 8, .kernel = {4, 4}, .stride = {1, 1}}>();
#endif
}

TEST_CASE("transpose_conv: misuse is reported and writes nothing") {
  mosaiq::test::recording_handler errors;
  constexpr transpose_conv_config cfg{.out_channels = 2};
  const std::vector<i8> filter(2 * 4 * 3, 1);
  const float scale = 0.01f;
  const ref::conv_requant q = ref::make_conv_requant<mosaiq::rounding::tflite_reference, i8>(
      {0.1f, 0}, std::span<const float>(&scale, 1), 0, {0.1f, 0}, mosaiq::activation::none);
  const mosaiq::transpose_conv<cfg, i8> broken(nullptr, nullptr, 3, q);
  CHECK_FALSE(broken.valid());
  const mosaiq::transpose_conv<cfg, i8> kernel(filter.data(), nullptr, 3, q);
  REQUIRE(kernel.valid());
  std::vector<i8> in(2 * 2 * 3, 1), out(4 * 4 * 2, 7);
  std::vector<std::byte> workspace(kernel.workspace_bytes({2, 2, 3}));
  errors.reset();
  broken(tensor_view<const i8>(in.data(), shape{2, 2, 3}), tensor_view<i8>(out.data(), shape{4, 4, 2}), workspace);
  kernel(tensor_view<const i8>(in.data(), shape{2, 2, 3}), tensor_view<i8>(out.data(), shape{4, 3, 2}), workspace);
  kernel(tensor_view<const i8>(in.data(), shape{2, 3, 2}), tensor_view<i8>(out.data(), shape{4, 6, 2}), workspace);
  kernel(tensor_view<const i8>(in.data(), shape{2, 2, 3}), tensor_view<i8>(out.data(), shape{4, 4, 2}),
         std::span<std::byte>(workspace).first(workspace.size() - 1));
  CHECK(errors.calls() == 4);
  CHECK(std::count(out.begin(), out.end(), i8{7}) == 32);
}
