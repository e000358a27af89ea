// mosaiq::average_pool16x8 and mean16x8 (the compiled-for ISA's path) against reference::average_pool_16 and
// mean_16, bit for bit: windows from 1x1 to the whole map, strides, SAME / VALID / explicit padding (edge windows of
// fewer taps), fused activations, channel counts around the 16-channel block (tails, fewer than a block), odd sizes,
// batches, pixel strides and unaligned views (canaries around and between pixels), int16 extremes, sums at the
// rounding boundaries up to 65535 taps and the whole int32 range of MEAN, both roundings, and misuse (the >65535-tap
// refusal among it).
#include "mosaiq/ops/pool16x8.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "mosaiq/core.hpp"
#include "mosaiq/reference/int16.hpp"
#include "support.hpp"
#include "support16x8.hpp"

namespace {

using namespace mosaiq;
using test::canary;
using test::stored_tensor;
using i16 = std::int16_t;

/// Fills every element of v: random int16 values, a quarter of them at the extremes, or one constant.
void fill_random(std::mt19937& rng, const tensor_view<i16>& v) {
  std::uniform_int_distribution<int> value(-32768, 32767), kind(0, 7);
  for (int n = 0; n < v.batch(); ++n)
    for (int y = 0; y < v.height(); ++y)
      for (int x = 0; x < v.width(); ++x)
        for (int c = 0; c < v.channels(); ++c) {
          const int k = kind(rng);
          v(n, y, x, c) = static_cast<i16>(k == 0 ? -32768 : k == 1 ? 32767 : value(rng));
        }
}

/// An input of shape s in a canary-filled buffer: pixel stride channels + pad, one element past an aligned start.
stored_tensor<i16> random_input(std::mt19937& rng, shape s, int batch, int pad) {
  stored_tensor<i16> t(s, batch, s.channels + pad, canary);
  fill_random(rng, t.view);
  return t;
}

/// The op's and the reference's outputs in separate canary-filled tensors of one layout: equal, gaps included.
template <class Op, class Reference>
void check_pool(const tensor_view<const i16>& in, shape out_shape, int pad, Op op, Reference reference_op) {
  stored_tensor<i16> expected(out_shape, in.batch(), out_shape.channels + pad, canary),
      got(out_shape, in.batch(), out_shape.channels + pad, canary);
  reference_op(in, expected.view);
  op(in, got.view);
  CHECK(got.buffer == expected.buffer);
}

shape pooled_shape(shape in, const reference::pool_params& p) {
  const window_geometry g = resolve_window(in.height, in.width, p.kernel, p.stride, hw{1, 1}, p.pad);
  return {g.y.output, g.x.output, in.channels};
}

void check_average(const tensor_view<const i16>& in, const reference::pool_params& params, float scale, int pad) {
  check_pool(
      in, pooled_shape(in.dims(), params), pad, [&](auto i, auto o) { average_pool16x8(i, o, params, scale); },
      [&](auto i, auto o) { reference::average_pool_16(i, o, params, scale); });
}

/// A 1 x taps x 1 row whose elements sum to exactly `sum` (|sum| <= 32767 * taps): floor(sum / taps) everywhere and
/// one more in the first sum mod taps elements.
std::vector<i16> row_with_sum(std::int64_t sum, int taps) {
  const std::int64_t base = sum >= 0 ? sum / taps : -((-sum + taps - 1) / taps);
  const std::int64_t extra = sum - base * taps;
  std::vector<i16> row(static_cast<std::size_t>(taps), static_cast<i16>(base));
  for (std::int64_t i = 0; i < extra; ++i) row[static_cast<std::size_t>(i)] = static_cast<i16>(base + 1);
  return row;
}

template <rounding R>
void check_mean(const tensor_view<const i16>& in, float in_scale, float out_scale, int pad) {
  const reference::mean_params_16 params =
      reference::make_mean_params_16<R>(in_scale, out_scale, in.height() * in.width());
  REQUIRE(params.valid);
  check_pool(
      in, shape{1, 1, in.channels()}, pad, [&](auto i, auto o) { mean16x8<R>(i, o, params); },
      [&](auto i, auto o) { reference::mean_16<R>(i, o, params); });
}

const shape shapes[] = {{1, 1, 1}, {3, 5, 7}, {4, 4, 16}, {5, 3, 24}, {7, 9, 15}, {2, 11, 17}, {6, 6, 33}, {3, 4, 70}};

}  // namespace

TEST_CASE("average_pool16x8 == reference::average_pool_16: windows, strides, padding, activations, views") {
  std::mt19937 rng(1619);
  const padding pads[] = {padding::valid(), padding::same(), padding::explicit_pads(1, 0, 2, 1)};
  const hw windows[][2] = {{{1, 1}, {1, 1}}, {{2, 2}, {2, 2}}, {{3, 3}, {1, 1}}, {{3, 2}, {2, 1}}, {{5, 5}, {3, 3}}};
  const activation acts[] = {activation::none, activation::relu, activation::relu6};
  int variant = 0;
  for (const shape s : shapes)
    for (const int batch : {1, 2})
      for (const int pad : {0, 3}) {
        const stored_tensor<i16> input = random_input(rng, s, batch, pad);
        const tensor_view<const i16> in = input.view;
        const float scale = std::uniform_real_distribution<float>(1e-4f, 1e-2f)(rng);
        for (const auto& [kernel, stride] : windows)
          for (const padding p : pads) {
            if (p.mode == padding_mode::valid && (kernel.h > s.height || kernel.w > s.width)) continue;
            if (p.mode == padding_mode::explicit_pads && (kernel.h < 2 || kernel.w < 3)) continue;  // empty windows
            check_average(in, {.kernel = kernel, .stride = stride, .pad = p, .act = acts[variant++ % 3]}, scale, pad);
          }
        // The whole map as one window (the selfie model's squeeze pools), and larger than the map under SAME.
        check_average(in, {.kernel = {s.height, s.width}, .stride = {s.height, s.width}}, scale, pad);
        check_average(in, {.kernel = {s.height + 2, s.width + 1}, .pad = padding::same()}, scale, pad);
      }
}

TEST_CASE("average_pool16x8: large whole-map windows, int16 extremes, sums at the rounding boundary") {
  std::mt19937 rng(77);
  for (const shape s : {shape{64, 64, 16}, shape{32, 32, 24}, shape{16, 16, 96}, shape{9, 16, 5}}) {
    const stored_tensor<i16> input = random_input(rng, s, 1, 0);
    check_average(input.view, {.kernel = {s.height, s.width}, .stride = {s.height, s.width}}, 1.0f, 0);
  }
  // 65535 taps (the most the int32 sum allows) at both extremes, channel counts below, at and past a block.
  for (const int channels : {1, 16, 17})
    for (const int value : {-32768, 32767, -32767, 1}) {
      stored_tensor<i16> input({255, 257, channels}, 1, channels, static_cast<i16>(value));
      check_average(input.view, {.kernel = {255, 257}, .stride = {255, 257}}, 1.0f, 0);
    }
  // Sums q * taps +- taps / 2 (and one either side) for large |q| and tap counts: the float quotient's correction.
  for (const int taps : {2, 3, 4096, 4097, 30001, 65534, 65535})
    for (const std::int64_t q : {32767, 32766, 1000, 1, 0, -1, -1000, -32767}) {
      const std::int64_t half = taps / 2;
      for (const std::int64_t sum : {q * taps + half - 1, q * taps + half, q * taps + half + 1, q * taps - half - 1,
                                     q * taps - half, q * taps - half + 1}) {
        if (sum > 32767LL * taps || sum < -32768LL * taps) continue;
        const std::vector<i16> row = row_with_sum(sum, taps);
        const tensor_view<const i16> in(row.data(), {1, taps, 1});
        CAPTURE(taps);
        CAPTURE(sum);
        check_average(in, {.kernel = {1, taps}, .stride = {1, taps}}, 1.0f, 0);
      }
    }
}

TEST_CASE_TEMPLATE("mean16x8 == reference::mean_16: shapes, batches, views, scales, the int32 extremes", Round,
                   std::integral_constant<rounding, rounding::tflite_reference>,
                   std::integral_constant<rounding, rounding::single_round>) {
  constexpr rounding R = Round::value;
  std::mt19937 rng(2024);
  for (const shape s : shapes)
    for (const int batch : {1, 3})
      for (const int pad : {0, 5}) {
        const stored_tensor<i16> input = random_input(rng, s, batch, pad);
        const float in_scale = std::uniform_real_distribution<float>(1e-4f, 1e-2f)(rng);
        // Output scales from 1/64 to 64 times the input's: clamps at both ends among them.
        for (const float ratio : {0.015625f, 0.3f, 1.0f, 2.7f, 64.0f})
          check_mean<R>(input.view, in_scale, in_scale / ratio, pad);
      }
  for (const shape s : {shape{36, 64, 16}, shape{9, 16, 96}, shape{18, 32, 24}}) {
    const stored_tensor<i16> input = random_input(rng, s, 1, 0);
    check_mean<R>(input.view, 0.01f, 0.003f, 0);
  }
  // 65536 pixels: all -32768 sums to exactly INT32_MIN.
  for (const int value : {-32768, 32767, -1})
    for (const int channels : {3, 16, 20}) {
      stored_tensor<i16> input({256, 256, channels}, 1, channels, static_cast<i16>(value));
      check_mean<R>(input.view, 0.01f, 0.01f, 0);
      check_mean<R>(input.view, 0.01f, 0.5f, 0);
    }
}

TEST_CASE("average_pool16x8, mean16x8: misuse is reported and leaves the output untouched") {
  test::recording_handler errors;
  std::vector<i16> in_buffer(256 * 256, 7), out(64, canary);
  const std::vector<i16> untouched = out;
  const tensor_view<const i16> in(in_buffer.data(), {4, 4, 4});
  const tensor_view<i16> o(out.data(), {2, 2, 4});
  const reference::pool_params two{.kernel = {2, 2}, .stride = {2, 2}};

  average_pool16x8(tensor_view<const i16>(in_buffer.data(), {256, 256, 1}), tensor_view<i16>(out.data(), {1, 1, 1}),
                   {.kernel = {256, 256}, .stride = {256, 256}});
  CHECK(errors.last() == errc::invalid_argument);  // 65536 taps: past the int32 sum
  errors.reset();
  average_pool16x8(tensor_view<const i16>(nullptr, {4, 4, 4}), o, two);
  CHECK(errors.last() == errc::null_pointer);
  errors.reset();
  average_pool16x8(in, tensor_view<i16>(out.data(), {2, 2, 3}), two);
  CHECK(errors.last() == errc::shape_mismatch);
  errors.reset();
  average_pool16x8(in, o, {.kernel = {2, 2}, .stride = {2, 2}, .act = activation::relu}, 0.0f);
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  average_pool16x8(in, o, {.kernel = {0, 2}, .stride = {2, 2}});
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();

  const reference::mean_params_16 params = reference::make_mean_params_16<rounding::tflite_reference>(0.1f, 0.1f, 16);
  REQUIRE(params.valid);
  const tensor_view<i16> mean_out(out.data(), {1, 1, 4});
  mean16x8<rounding::single_round>(in, mean_out, params);  // params of the other rounding
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  mean16x8<rounding::tflite_reference>(tensor_view<const i16>(in_buffer.data(), {4, 2, 4}), mean_out, params);
  CHECK(errors.last() == errc::invalid_argument);  // another pixel count
  errors.reset();
  mean16x8<rounding::tflite_reference>(in, tensor_view<i16>(out.data(), {1, 1, 3}), params);
  CHECK(errors.last() == errc::shape_mismatch);
  errors.reset();
  mean16x8<rounding::tflite_reference>(in, mean_out, reference::mean_params_16{});
  CHECK(errors.last() == errc::invalid_argument);
  CHECK(out == untouched);
}
