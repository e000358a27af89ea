// mosaiq::pointwise16x8 (the compiled-for ISA's path, and the scalar microkernel over the same packed weights)
// against reference::pointwise_conv_16x8, bit for bit: the epilogue identity it rests on (TFLite's Q15 form equals
// the single-rounding form with M31 = M15 << 16), grids of output channels (compile time) and input channels
// (every K from 1 to 70), odd widths and heights, batches, pixel strides and unaligned views, random multipliers
// over their whole domain, clamps, bias extremes at the int32 bound and beyond it (the int64 path), and misuse.
#include "mosaiq/ops/pointwise16x8.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "mosaiq/core.hpp"
#include "mosaiq/reference/int16.hpp"
#include "support.hpp"
#include "support16x8.hpp"

namespace {

using namespace mosaiq;
using reference::conv_requant_16x8;
using test::canary;
using test::random_biases;
using test::random_ints;
using test::random_multiplier;
using test::random_requant;
using test::run_case;
using test::stored_tensor;
using i16 = std::int16_t;

/// Runs `layer` on one case three ways (the build's path, the scalar twin, the reference) and checks them equal, and
/// that nothing outside the output view changed.
template <class Layer>
void check_layer(const Layer& layer, const std::vector<std::int8_t>& filter, const std::vector<std::int64_t>& bias,
                 const conv_requant_16x8& q, const run_case& rc, std::mt19937& rng) {
  constexpr int out_c = Layer::output_channels();
  const int k = layer.input_channels();
  stored_tensor<i16> in(rc.in_shape, rc.batch, k + rc.in_stride_extra, canary);
  const auto values = random_ints<i16>(rng, in.buffer.size());
  std::copy(values.begin(), values.end(), in.buffer.begin());  // in place: the view points into the buffer
  const shape out_shape = Layer::output_shape(rc.in_shape);
  stored_tensor<i16> expected(out_shape, rc.batch, out_c + rc.out_stride_extra, canary);
  stored_tensor<i16> simd(out_shape, rc.batch, out_c + rc.out_stride_extra, canary);
  stored_tensor<i16> twin(out_shape, rc.batch, out_c + rc.out_stride_extra, canary);
  reference::pointwise_conv_16x8(tensor_view<const i16>(in.view), filter.data(), bias.data(), expected.view, q);
  layer(tensor_view<const i16>(in.view), simd.view);
  layer.run_scalar_twin(tensor_view<const i16>(in.view), twin.view);
  INFO("K ", k, " Cout ", out_c, " shape ", rc.in_shape.height, "x", rc.in_shape.width, " batch ", rc.batch,
       " strides +", rc.in_stride_extra, " +", rc.out_stride_extra, " int32 path ", layer.uses_int32_path());
  CHECK(simd.buffer == expected.buffer);  // canaries included: nothing outside the view written
  CHECK(twin.buffer == expected.buffer);
  test::check_row_splits(expected, canary, [&](row_band band, const tensor_view<i16>& out) {
    layer.run_rows(tensor_view<const i16>(in.view), out, band);
  });
}

/// Every input -32768 on a 3x3 image: with weights -128 every product is +2^22, the largest a channel can reach.
template <class Layer>
void check_lowest_inputs(const Layer& layer, const std::vector<std::int8_t>& filter,
                         const std::vector<std::int64_t>& bias, const conv_requant_16x8& q) {
  constexpr int out_c = Layer::output_channels();
  const int k = layer.input_channels();
  stored_tensor<i16> in({3, 3, k}, 1, k, -32768);
  stored_tensor<i16> expected({3, 3, out_c}, 1, out_c, canary), got({3, 3, out_c}, 1, out_c, canary),
      twin({3, 3, out_c}, 1, out_c, canary);
  reference::pointwise_conv_16x8(tensor_view<const i16>(in.view), filter.data(), bias.data(), expected.view, q);
  layer(tensor_view<const i16>(in.view), got.view);
  layer.run_scalar_twin(tensor_view<const i16>(in.view), twin.view);
  INFO("K ", k, " int32 path ", layer.uses_int32_path());
  CHECK(got.buffer == expected.buffer);
  CHECK(twin.buffer == expected.buffer);
}

template <int OutChannels, int TilePixels = 0>
struct config_case {
  static constexpr pointwise16x8_config value{.out_channels = OutChannels, .tile_pixels = TilePixels};
};

// Output channels: one lane to five blocks, tails of 4, 8 and 16 (NEON quads, AVX2 halves, blocks); two explicit
// pixel tiles besides the path default (7: the cascade 7, 3, 1; 16: the largest).
using configs =
    std::tuple<config_case<1>, config_case<3>, config_case<8>, config_case<9>, config_case<16>, config_case<17>,
               config_case<24, 7>, config_case<33>, config_case<40, 16>, config_case<64>, config_case<70>>;

TEST_CASE("pointwise16x8: TFLite's 64-bit requantization is the single-rounding epilogue with M31 = M15 << 16") {
  std::mt19937 rng(1916);
  std::uniform_int_distribution<std::int32_t> any(std::numeric_limits<std::int32_t>::min(),
                                                  std::numeric_limits<std::int32_t>::max());
  const std::int32_t extremes[] = {
      std::numeric_limits<std::int32_t>::min(), -(1 << 30), -65537, -32768, -1, 0, 1, 16383, 16384, 32767, 1 << 30,
      std::numeric_limits<std::int32_t>::max()};
  const auto same = [](std::int32_t acc, quantized_multiplier q) {
    return reference::multiply_by_quantized_multiplier_64(acc, q) ==
           multiply_by_quantized_multiplier<rounding::single_round>(acc, reference::single_round_scale_16x8(q));
  };
  int mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    const quantized_multiplier q = random_multiplier(rng);
    mismatches += !same(any(rng), q);
    mismatches += !same(extremes[i % std::size(extremes)], q);
  }
  // Ties: with M15 = 2^14 (the Q31 0.5), x = m 2^-shift for odd m puts x M15 at an odd multiple of half the divisor
  // 2^(15 - shift): both forms round those up.
  for (int shift = -16; shift <= 0; ++shift)
    for (int m = -15; m <= 15; m += 2) mismatches += !same(m * (1 << -shift), {1 << 30, shift});
  CHECK(mismatches == 0);
  // Hand-computed: 3 * 0.5 (M15 = 0x4000) rounds 1.5 up to 2; -3 * 0.5 rounds -1.5 up to -1.
  const quantized_multiplier half{1 << 30, 0};
  CHECK(reference::single_round_scale_16x8(half) == requant_scale{1 << 30, 0, 31});
  CHECK(multiply_by_quantized_multiplier<rounding::single_round>(3, reference::single_round_scale_16x8(half)) == 2);
  CHECK(multiply_by_quantized_multiplier<rounding::single_round>(-3, reference::single_round_scale_16x8(half)) == -1);
  // The Q15 rounding saturates: M31 = 0x7FFFFFFF becomes 0x7FFF << 16, not 2^31.
  CHECK(reference::single_round_scale_16x8({0x7FFFFFFF, 3}).multiplier == 0x7FFF0000);
}

TEST_CASE_TEMPLATE_DEFINE("pointwise16x8: SIMD path == scalar twin == reference", C, pointwise16x8_grid) {
  constexpr pointwise16x8_config cfg = C::value;
  constexpr int out_c = cfg.out_channels;
  std::mt19937 rng(16 * 8 + out_c + 1000 * cfg.tile_pixels);
  MESSAGE("path tile ", pointwise16x8<cfg>::tile(), " pixels, target ", std::string(target_name));
  for (int k = 1; k <= 70; ++k) {
    const auto filter = random_ints<std::int8_t>(rng, static_cast<std::size_t>(out_c) * k);
    const auto bias = random_biases(rng, filter, k, out_c);
    const conv_requant_16x8 q = random_requant(rng, out_c, k);
    const pointwise16x8<cfg> layer(filter.data(), bias.data(), k, q);
    REQUIRE(layer.ready());
    REQUIRE(layer.uses_int32_path());
    // Every K on a small odd image; a wider spread of shapes, batches and strides on every seventh K.
    check_layer(layer, filter, bias, q, {{3, 5, k}, 1, 0, 0}, rng);
    if (k % 7 == 0 || k <= 3 || k == 70) {
      check_layer(layer, filter, bias, q, {{1, 1, k}, 1, 0, 0}, rng);
      check_layer(layer, filter, bias, q, {{7, 9, k}, 2, 3, 5}, rng);
      check_layer(layer, filter, bias, q, {{13, 11, k}, 1, 1, 0}, rng);
      check_layer(layer, filter, bias, q, {{0, 4, k}, 1, 0, 0}, rng);  // no pixels: nothing written
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(pointwise16x8_grid, configs);

TEST_CASE("pointwise16x8: accumulators at the int32 bound, and the int64 path beyond it") {
  std::mt19937 rng(2);
  constexpr int out_c = 20;
  // Weights -128 and inputs -32768: every product is +2^22, so on the even channels K products plus the largest bias
  // the int32 path accepts reach exactly 2^31 - 1 (the odd channels' negative bias: its far end).
  for (const int k : {1, 2, 65, 300, 511}) {
    std::vector<std::int8_t> filter(static_cast<std::size_t>(out_c) * k, -128);
    std::vector<std::int64_t> bias(out_c);
    for (int c = 0; c < out_c; ++c)
      bias[static_cast<std::size_t>(c)] =
          (c % 2 ? -1 : 1) * ((std::int64_t{1} << 31) - 1 - (std::int64_t{1} << 22) * k);
    conv_requant_16x8 q{.clamp = {-32768, 32767}, .multipliers = {}};
    for (int c = 0; c < out_c; ++c) q.multipliers.push_back(random_multiplier(rng));
    const pointwise16x8<pointwise16x8_config{.out_channels = out_c}> layer(filter.data(), bias.data(), k, q);
    REQUIRE(layer.uses_int32_path());
    check_lowest_inputs(layer, filter, bias, q);
  }
  // One step beyond: the bias one larger (or a K whose weights alone pass 2^31) takes the int64 reference.
  for (const int k : {3, 513, 600}) {
    auto filter = random_ints<std::int8_t>(rng, static_cast<std::size_t>(out_c) * k);
    std::fill_n(filter.begin(), k, std::int8_t{-128});
    std::vector<std::int64_t> bias(out_c, 5);
    bias[0] = (std::int64_t{1} << 31) - (std::int64_t{1} << 22) * k;  // the bound plus one for channel 0
    if (k == 600) bias[1] = std::int64_t{1} << 40;
    const conv_requant_16x8 q = random_requant(rng, out_c, k);
    const pointwise16x8<pointwise16x8_config{.out_channels = out_c}> layer(filter.data(), bias.data(), k, q);
    CHECK_FALSE(layer.uses_int32_path());
    check_layer(layer, filter, bias, q, {{4, 5, k}, 1, 2, 3}, rng);
    check_lowest_inputs(layer, filter, bias, q);  // channel 0 reaches 2^31 here: int32 sums would wrap
  }
}

/// A layer of OutC channels over k inputs: random filters, one filter scale (0.02), input scale 0.001, output 0.05.
template <int OutC>
struct one_scale_layer {
  std::vector<std::int8_t> filter;
  conv_requant_16x8 q;
  pointwise16x8<pointwise16x8_config{.out_channels = OutC}> layer;
  one_scale_layer(std::mt19937& rng, int k, activation act)
      : filter(random_ints<std::int8_t>(rng, static_cast<std::size_t>(OutC) * k)),
        q(reference::make_conv_requant_16x8(0.001f, std::vector<float>{0.02f}, 0.05f, act)),
        layer(filter.data(), nullptr, k, q) {
    REQUIRE(layer.ready());
  }
};

TEST_CASE("pointwise16x8: null biases, one multiplier for all channels, and the scales' constructor path") {
  std::mt19937 rng(3);
  constexpr int out_c = 21, k = 19;
  const one_scale_layer<out_c> one(rng, k, activation::relu6);
  const auto& [filter, q, layer] = one;
  stored_tensor<i16> in({5, 6, k}, 1, k, 0);
  const auto values = random_ints<i16>(rng, in.buffer.size());
  std::copy(values.begin(), values.end(), in.buffer.begin());  // in place: the view points into the buffer
  stored_tensor<i16> expected({5, 6, out_c}, 1, out_c, canary), got({5, 6, out_c}, 1, out_c, canary);
  reference::pointwise_conv_16x8(tensor_view<const i16>(in.view), filter.data(), nullptr, expected.view, q);
  layer(tensor_view<const i16>(in.view), got.view);
  CHECK(got.buffer == expected.buffer);
  // relu6 at 0.05: outputs in [0, 120], some at both ends.
  const auto [lo, hi] = std::minmax_element(got.buffer.begin() + 1, got.buffer.end() - 19);
  CHECK(*lo == 0);
  CHECK(*hi == 120);
}

TEST_CASE("pointwise16x8: row slices of a batched view (images not following each other)") {
  std::mt19937 rng(47);
  constexpr int out_c = 18, k = 11;
  const one_scale_layer<out_c> one(rng, k, activation::none);
  const auto& [filter, q, layer] = one;
  constexpr shape in_shape{7, 5, k}, out_shape{7, 5, out_c};
  std::vector<i16> input = random_ints<i16>(rng, 2 * in_shape.elements());
  std::vector<i16> expected(2 * out_shape.elements()), got(expected.size(), 0);
  const tensor_view<const i16> in(input.data(), in_shape, 2);
  reference::pointwise_conv_16x8(in, filter.data(), nullptr, tensor_view<i16>(expected.data(), out_shape, 2), q);
  const tensor_view<i16> out(got.data(), out_shape, 2);
  // Rows [0, 3) and [3, 7) of both images, as one task of a parallel run sees them.
  for (const auto& [first, rows] : {std::pair{0, 3}, std::pair{3, 4}})
    layer(in.row_slice(first, rows), out.row_slice(first, rows));
  CHECK(got == expected);
}

TEST_CASE("pointwise16x8: misuse is reported and leaves the output untouched") {
  test::check_layer_misuse<pointwise16x8<pointwise16x8_config{.out_channels = 8}>>(std::vector<std::int8_t>(8 * 4, 1),
                                                                                   8, {2, 2, 4}, {2, 1, 8});
}

}  // namespace
