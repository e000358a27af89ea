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
using test::stored_tensor;
using i16 = std::int16_t;
constexpr i16 canary = 0x5A5A;

template <class T>
std::vector<T> uniform_values(std::mt19937& rng, std::size_t count) {
  std::uniform_int_distribution<int> value(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::vector<T> values(count);
  for (T& v : values) v = static_cast<T>(value(rng));
  return values;
}

/// Per-channel multipliers (mostly ones that keep these outputs inside int16, every fifth anywhere in the 16x8
/// domain: 0, the Q15 rounding's saturating top, shifts -31..7) or one for all, and a clamp.
conv_requant_16x8 random_requant(std::mt19937& rng, int channels, int variant) {
  conv_requant_16x8 q;
  q.clamp = variant % 3 == 0   ? clamp_range{-32768, 32767}
            : variant % 3 == 1 ? clamp_range{0, 32767}
                               : clamp_range{-1000, 6000};
  std::uniform_int_distribution<std::int32_t> mantissa(1 << 30, std::numeric_limits<std::int32_t>::max());
  const int count = variant % 4 == 3 ? 1 : channels;
  for (int c = 0; c < count; ++c) {
    const int kind = std::uniform_int_distribution<int>(0, 14)(rng);
    q.multipliers.push_back(kind == 0   ? quantized_multiplier{0, 0}
                            : kind == 1 ? quantized_multiplier{0x7FFF8000, 7}
                            : kind < 4
                                ? quantized_multiplier{mantissa(rng), std::uniform_int_distribution(-31, 7)(rng)}
                                : quantized_multiplier{mantissa(rng), std::uniform_int_distribution(-12, -4)(rng)});
  }
  return q;
}

/// Biases the int32 path accepts for these weights, |bias| <= 2^31 - 1 - 32768 sum_t |w_t|, its extremes included.
std::vector<std::int64_t> random_biases(std::mt19937& rng, const std::vector<std::int8_t>& filter, int channels) {
  const int taps = static_cast<int>(filter.size()) / channels;
  std::vector<std::int64_t> bias(static_cast<std::size_t>(channels));
  for (int c = 0; c < channels; ++c) {
    std::int64_t sum = 0;
    for (int t = 0; t < taps; ++t) sum += std::abs(int{filter[static_cast<std::size_t>(t) * channels + c]});
    const std::int64_t room = (std::int64_t{1} << 31) - 1 - 32768 * sum;
    const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
    bias[static_cast<std::size_t>(c)] = kind == 0 ? room
                                        : kind == 1
                                            ? -room
                                            : std::uniform_int_distribution<std::int64_t>(-(1 << 22), 1 << 22)(rng);
  }
  return bias;
}

struct run_case {
  shape in_shape;
  int batch;
  int in_stride_extra, out_stride_extra;  // pixel stride beyond the channels
};

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
  const auto values = uniform_values<i16>(rng, in.buffer.size());
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
    const auto filter = uniform_values<std::int8_t>(rng, static_cast<std::size_t>(taps) * c);
    const auto bias = random_biases(rng, filter, c);
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
  const auto filter = uniform_values<std::int8_t>(rng, 9 * channels);
  const conv_requant_16x8 q =
      reference::make_conv_requant_16x8(0.001f, std::vector<float>{0.02f}, 0.05f, activation::relu6);
  const depthwise16x8<cfg> layer(filter.data(), nullptr, channels, q);
  REQUIRE(layer.ready());
  stored_tensor<i16> in({9, 10, channels}, 1, channels, 0);
  const auto values = uniform_values<i16>(rng, in.buffer.size());
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
  test::recording_handler errors;
  const std::vector<std::int8_t> filter(9 * 4, 1);
  const conv_requant_16x8 q{.clamp = {-32768, 32767}, .multipliers = {{1 << 30, -3}}};
  using layer_type = depthwise16x8<depthwise16x8_config{}>;
  const layer_type no_filter(nullptr, nullptr, 4, q);
  CHECK(errors.last() == errc::null_pointer);
  CHECK_FALSE(no_filter.ready());
  errors.reset();
  const layer_type no_channels(filter.data(), nullptr, 0, q);
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  const layer_type wrong_count(
      filter.data(), nullptr, 4,
      conv_requant_16x8{.clamp = {-32768, 32767}, .multipliers = {{1 << 30, -3}, {1 << 30, -3}}});
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  const layer_type shift_too_large(filter.data(), nullptr, 4,
                                   conv_requant_16x8{.clamp = {-32768, 32767}, .multipliers = {{1 << 30, 8}}});
  CHECK(errors.last() == errc::invalid_argument);
  CHECK_FALSE(shift_too_large.ready());
  errors.reset();

  const layer_type layer(filter.data(), nullptr, 4, q);
  REQUIRE(errors.calls() == 0);
  std::vector<i16> in(3 * 3 * 4, 1), out(3 * 3 * 4, canary);
  const std::vector<i16> untouched = out;
  layer(tensor_view<const i16>(in.data(), {3, 3, 3}), tensor_view<i16>(out.data(), {3, 3, 3}));  // channels
  CHECK(errors.last() == errc::shape_mismatch);
  errors.reset();
  layer(tensor_view<const i16>(in.data(), {3, 3, 4}), tensor_view<i16>(out.data(), {3, 2, 4}));  // extents
  CHECK(errors.last() == errc::shape_mismatch);
  errors.reset();
  layer(tensor_view<const i16>(nullptr, {3, 3, 4}), tensor_view<i16>(out.data(), {3, 3, 4}));
  CHECK(errors.last() == errc::null_pointer);
  errors.reset();
  no_filter(tensor_view<const i16>(in.data(), {3, 3, 4}), tensor_view<i16>(out.data(), {3, 3, 4}));
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  for (const row_band band : {row_band{-1, 2}, row_band{2, 1}, row_band{0, 4}}) {  // outside the 3 output rows
    layer.run_rows(tensor_view<const i16>(in.data(), {3, 3, 4}), tensor_view<i16>(out.data(), {3, 3, 4}), band);
    CHECK(errors.last() == errc::invalid_argument);
    errors.reset();
  }
  CHECK(out == untouched);
}

}  // namespace
