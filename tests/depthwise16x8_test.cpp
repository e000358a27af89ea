// mosaiq::depthwise16x8 (the compiled-for ISA's path, and the scalar microkernel over the same packed weights)
// against reference::depthwise_conv_16x8, bit for bit: windows 3x3 and 5x5 at strides 1 and 2 (SAME, as the selfie
// models have them), VALID, explicit pads and dilation; every channel count from 1 to 70 (block and half-block
// tails); odd sizes, images smaller than the window, batches, pixel strides and unaligned views; random multipliers
// over their whole domain and clamps; biases at the int32 bound and beyond it (the int64 path); misuse.
#include "mosaiq/ops/depthwise16x8.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
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
using test::random_requant;
using test::run_case;
using test::stored_tensor;
using i16 = std::int16_t;

template <depthwise16x8_config Cfg>
constexpr reference::depthwise_params params_of() {
  return {.kernel = Cfg.kernel, .stride = Cfg.stride, .dilation = Cfg.dilation, .pad = Cfg.pad};
}

/// Runs `layer` on one case three ways (the build's path, the scalar twin, the reference) and checks them equal, and
/// that nothing outside the output view changed. `fill` sets every input (else random).
template <class Layer>
void check_layer(const Layer& layer, const std::vector<std::int8_t>& filter, const std::vector<std::int64_t>& bias,
                 const conv_requant_16x8& q, const run_case& rc, std::mt19937& rng, std::optional<i16> fill = {}) {
  const int c = layer.channels();
  stored_tensor<i16> in(rc.in_shape, rc.batch, c + rc.in_stride_extra, canary);
  const auto values = random_ints<i16>(rng, in.buffer.size());
  if (fill)
    std::fill(in.buffer.begin(), in.buffer.end(), *fill);
  else
    std::copy(values.begin(), values.end(), in.buffer.begin());  // in place: the view points into the buffer
  const shape out_shape = Layer::output_shape(rc.in_shape);
  stored_tensor<i16> expected(out_shape, rc.batch, c + rc.out_stride_extra, canary);
  stored_tensor<i16> simd(out_shape, rc.batch, c + rc.out_stride_extra, canary);
  stored_tensor<i16> twin(out_shape, rc.batch, c + rc.out_stride_extra, canary);
  reference::depthwise_conv_16x8(tensor_view<const i16>(in.view), filter.data(), bias.data(), expected.view,
                                 params_of<Layer::config>(), q);
  layer(tensor_view<const i16>(in.view), simd.view);
  layer.run_scalar_twin(tensor_view<const i16>(in.view), twin.view);
  INFO("C ", c, " shape ", rc.in_shape.height, "x", rc.in_shape.width, " batch ", rc.batch, " strides +",
       rc.in_stride_extra, " +", rc.out_stride_extra, " int32 path ", layer.uses_int32_path());
  CHECK(simd.buffer == expected.buffer);  // canaries included: nothing outside the view written
  CHECK(twin.buffer == expected.buffer);
  test::check_row_splits(expected, canary, [&](row_band band, const tensor_view<i16>& out) {
    layer.run_rows(tensor_view<const i16>(in.view), out, band);
  });
}

template <depthwise16x8_config Cfg>
struct config_case {
  static constexpr depthwise16x8_config value = Cfg;
};

// The selfie models' four windows (SAME), VALID, explicit uneven pads, dilation 2 with stride 2, a 1x1 and a 2x4
// (odd and even tap counts, pairs with no partner).
using configs = std::tuple<
    config_case<depthwise16x8_config{.kernel = {3, 3}, .stride = {1, 1}}>,
    config_case<depthwise16x8_config{.kernel = {3, 3}, .stride = {2, 2}}>,
    config_case<depthwise16x8_config{.kernel = {5, 5}, .stride = {1, 1}}>,
    config_case<depthwise16x8_config{.kernel = {5, 5}, .stride = {2, 2}}>,
    config_case<depthwise16x8_config{.kernel = {3, 3}, .pad = padding::valid()}>,
    config_case<depthwise16x8_config{.kernel = {3, 5}, .stride = {2, 1}, .pad = padding::explicit_pads(0, 2, 3, 1)}>,
    config_case<depthwise16x8_config{.kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}}>,
    config_case<depthwise16x8_config{.kernel = {1, 1}}>,
    config_case<depthwise16x8_config{.kernel = {2, 4}, .stride = {1, 2}}>>;

TEST_CASE_TEMPLATE_DEFINE("depthwise16x8: SIMD path == scalar twin == reference", C, depthwise16x8_grid) {
  constexpr depthwise16x8_config cfg = C::value;
  constexpr int taps = cfg.kernel.h * cfg.kernel.w;
  std::mt19937 rng(16 * 8 + 100 * taps + 10 * cfg.stride.h + cfg.dilation.w);
  MESSAGE("kernel ", cfg.kernel.h, "x", cfg.kernel.w, " stride ", cfg.stride.h, "x", cfg.stride.w, ", target ",
          std::string(target_name));
  for (int c = 1; c <= 70; ++c) {
    const auto filter = random_ints<std::int8_t>(rng, static_cast<std::size_t>(taps) * c);
    const auto bias = random_biases(rng, filter, taps, c, test::filter_layout::tap_major);
    const conv_requant_16x8 q = random_requant(rng, c, c);
    const depthwise16x8<cfg> layer(filter.data(), bias.data(), c, q);
    REQUIRE(layer.ready());
    REQUIRE(layer.uses_int32_path());
    // Every C on an odd image with interior pixels; a wider spread of shapes, batches and strides on every seventh.
    check_layer(layer, filter, bias, q, {{7, 9, c}, 1, 0, 0}, rng);
    if (c % 7 == 0 || c <= 3 || c == 70) {
      check_layer(layer, filter, bias, q, {{1, 1, c}, 1, 0, 0}, rng);
      check_layer(layer, filter, bias, q, {{2, 3, c}, 1, 1, 0}, rng);  // smaller than the 5x5 window
      check_layer(layer, filter, bias, q, {{6, 11, c}, 2, 3, 5}, rng);
      check_layer(layer, filter, bias, q, {{13, 8, c}, 1, 0, 1}, rng);
      check_layer(layer, filter, bias, q, {{0, 4, c}, 1, 0, 0}, rng);  // no pixels: nothing written
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(depthwise16x8_grid, configs);

TEST_CASE("depthwise16x8: accumulators at the int32 bound, and the int64 path beyond it") {
  std::mt19937 rng(2);
  constexpr depthwise16x8_config cfg{.kernel = {5, 5}, .stride = {1, 1}};
  constexpr int taps = 25, channels = 37;
  // Weights -128 and inputs -32768: every product is +2^22; the bias fills the rest to exactly 2^31 - 1 on the even
  // channels (the odd channels' negative bias: the far end). Interior pixels reach it with all 25 taps.
  std::vector<std::int8_t> filter(static_cast<std::size_t>(taps) * channels, -128);
  std::vector<std::int64_t> bias(channels);
  for (int c = 0; c < channels; ++c)
    bias[static_cast<std::size_t>(c)] =
        (c % 2 ? -1 : 1) * ((std::int64_t{1} << 31) - 1 - (std::int64_t{1} << 22) * taps);
  conv_requant_16x8 q = random_requant(rng, channels, 0);
  const depthwise16x8<cfg> at_bound(filter.data(), bias.data(), channels, q);
  REQUIRE(at_bound.uses_int32_path());
  check_layer(at_bound, filter, bias, q, {{6, 7, channels}, 1, 0, 0}, rng, i16{-32768});
  check_layer(at_bound, filter, bias, q, {{6, 7, channels}, 1, 2, 1}, rng);
  // One past it on one channel: the whole layer takes the int64 reference (int32 sums would wrap there).
  bias[30] = (std::int64_t{1} << 31) - (std::int64_t{1} << 22) * taps;
  const depthwise16x8<cfg> past_bound(filter.data(), bias.data(), channels, q);
  CHECK_FALSE(past_bound.uses_int32_path());
  check_layer(past_bound, filter, bias, q, {{6, 7, channels}, 1, 0, 0}, rng, i16{-32768});
  check_layer(past_bound, filter, bias, q, {{6, 7, channels}, 2, 3, 1}, rng);
  // A bias beyond int32 itself.
  bias[30] = 5, bias[3] = std::int64_t{1} << 40;
  const depthwise16x8<cfg> large_bias(filter.data(), bias.data(), channels, q);
  CHECK_FALSE(large_bias.uses_int32_path());
  check_layer(large_bias, filter, bias, q, {{5, 5, channels}, 1, 0, 0}, rng);
}

TEST_CASE("depthwise16x8: null biases, one multiplier, relu6 from the scales") {
  std::mt19937 rng(3);
  constexpr int channels = 24;
  constexpr depthwise16x8_config cfg{.kernel = {3, 3}, .stride = {2, 2}};
  const auto filter = random_ints<std::int8_t>(rng, 9 * channels);
  const conv_requant_16x8 q =
      reference::make_conv_requant_16x8(0.001f, std::vector<float>{0.02f}, 0.05f, activation::relu6);
  const depthwise16x8<cfg> layer(filter.data(), nullptr, channels, q);
  REQUIRE(layer.ready());
  stored_tensor<i16> in({9, 10, channels}, 1, channels, 0);
  const auto values = random_ints<i16>(rng, in.buffer.size());
  std::copy(values.begin(), values.end(), in.buffer.begin());
  constexpr shape out_shape{5, 5, channels};
  static_assert(depthwise16x8<cfg>::output_shape({9, 10, channels}) == out_shape);
  stored_tensor<i16> expected(out_shape, 1, channels, canary), got(out_shape, 1, channels, canary);
  reference::depthwise_conv_16x8(tensor_view<const i16>(in.view), filter.data(), nullptr, expected.view,
                                 params_of<cfg>(), q);
  layer(tensor_view<const i16>(in.view), got.view);
  CHECK(got.buffer == expected.buffer);
  // relu6 at 0.05: outputs in [0, 120], some at both ends.
  const auto [lo, hi] = std::minmax_element(got.buffer.begin() + 1, got.buffer.end() - 19);
  CHECK(*lo == 0);
  CHECK(*hi == 120);
}

TEST_CASE("depthwise16x8: misuse is reported and leaves the output untouched") {
  test::check_layer_misuse<depthwise16x8<depthwise16x8_config{}>>(std::vector<std::int8_t>(9 * 4, 1), 4, {3, 3, 4},
                                                                  {3, 2, 4});
}

}  // namespace
