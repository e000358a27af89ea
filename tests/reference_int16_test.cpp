// Reference 16x8 kernels (int16 activations, int8 filters, int64 biases; TFLite's 16x8 quantization): the int64
// requantization's Q15 multiplier and half-up rounding, each conv-like kernel on hand-computed cases (an accumulator
// beyond int32, padding skipped, the fused clamp), the int16 add in both rounding modes, QUANTIZE between int8 and
// int16, and misuse refused with the output untouched.
#include <doctest/doctest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "mosaiq/reference/int16.hpp"
#include "support.hpp"

namespace {

using mosaiq::hw;
using mosaiq::i8;
using mosaiq::padding;
using mosaiq::quant_params;
using mosaiq::quantized_multiplier;
using mosaiq::shape;
using mosaiq::tensor_view;
namespace ref = mosaiq::reference;
using ref::i16;
constexpr auto reference_rounding = mosaiq::rounding::tflite_reference;
constexpr auto single_rounding = mosaiq::rounding::single_round;

ref::conv_requant_16x8 requant(float input_scale, float filter_scale, float output_scale,
                               mosaiq::activation act = mosaiq::activation::none) {
  return ref::make_conv_requant_16x8(input_scale, std::span<const float>(&filter_scale, 1), output_scale, act);
}

std::vector<int> as_ints(const std::vector<i16>& v) { return {v.begin(), v.end()}; }

}  // namespace

TEST_CASE("16x8 requantization: the Q31 multiplier rounded to Q15, one shift rounding half up") {
  const quantized_multiplier half{1 << 30, 0};                      // 0.5
  CHECK(ref::multiply_by_quantized_multiplier_64(3, half) == 2);    // 1.5 -> 2
  CHECK(ref::multiply_by_quantized_multiplier_64(-3, half) == -1);  // -1.5 -> -1 (the 32-bit reference gives -2)
  CHECK(ref::multiply_by_quantized_multiplier_64(-5, half) == -2);  // -2.5 -> -2
  // A multiplier at 0x7FFF0000 or above saturates at Q15 0x7FFF instead of rounding up to 2^15.
  CHECK(ref::multiply_by_quantized_multiplier_64(std::int64_t{1} << 15, {0x7FFFFFFF, 0}) == 32767);
  // Q15 loses the multiplier's low bits: 0x40007FFF rounds down to 0x4000, 0x40008000 up to 0x4001.
  CHECK(ref::multiply_by_quantized_multiplier_64(std::int64_t{1} << 20, {0x40007FFF, 0}) == 1 << 19);
  CHECK(ref::multiply_by_quantized_multiplier_64(std::int64_t{1} << 20, {0x40008000, 0}) == (1 << 19) + 32);
  // Accumulators beyond int32: 3e9 * 2^-20 = 2861.02.
  CHECK(ref::multiply_by_quantized_multiplier_64(3'000'000'000, {1 << 30, -19}) == 2861);
}

TEST_CASE("16x8 pointwise: int64 accumulator and bias, requantization, fused clamp") {
  const std::vector<i16> x{1000, -2000};
  const std::vector<i8> w{3, 4};
  const std::vector<std::int64_t> bias{500};
  std::vector<i16> y{99};
  // acc = 3000 - 8000 + 500 = -4500; scale 0.5 * 0.25 / 1 = 0.125: -562.5 rounds up to -562.
  ref::pointwise_conv_16x8(tensor_view<const i16>(x.data(), {1, 1, 2}), w.data(), bias.data(),
                           tensor_view<i16>(y.data(), {1, 1, 1}), requant(0.5f, 0.25f, 1.0f));
  CHECK(y[0] == -562);
  ref::pointwise_conv_16x8(tensor_view<const i16>(x.data(), {1, 1, 2}), w.data(), bias.data(),
                           tensor_view<i16>(y.data(), {1, 1, 1}), requant(0.5f, 0.25f, 1.0f, mosaiq::activation::relu));
  CHECK(y[0] == 0);
  // A bias beyond int32 (TFLite's 16x8 biases are int64): (32767 * 127 + 3e9) * 2^-20 = 2865.0.
  const std::vector<i16> big{32767};
  const std::vector<i8> w127{127};
  const std::vector<std::int64_t> big_bias{3'000'000'000};
  ref::pointwise_conv_16x8(tensor_view<const i16>(big.data(), {1, 1, 1}), w127.data(), big_bias.data(),
                           tensor_view<i16>(y.data(), {1, 1, 1}), requant(1.0f, 1.0f / 1048576.0f, 1.0f));
  CHECK(y[0] == 2865);
  // Saturation at the int16 limits: 32767 * 127 / 1.
  ref::pointwise_conv_16x8(tensor_view<const i16>(big.data(), {1, 1, 1}), w127.data(), nullptr,
                           tensor_view<i16>(y.data(), {1, 1, 1}), requant(1.0f, 1.0f, 1.0f));
  CHECK(y[0] == 32767);
}

TEST_CASE("16x8 depthwise and conv2d: SAME padding skips the taps outside the image (zero point 0)") {
  const std::vector<i16> x{100, 200, 300, 400};  // 2x2x1
  const std::vector<i8> ones(9, 1);
  std::vector<i16> y(4, 99);
  // Every 3x3 SAME window over a 2x2 image covers all four pixels: 1000, scale 1 / 4 -> 250.
  ref::depthwise_conv_16x8(
      tensor_view<const i16>(x.data(), {2, 2, 1}), ones.data(), nullptr, tensor_view<i16>(y.data(), {2, 2, 1}),
      {.kernel = {3, 3}, .stride = {1, 1}, .dilation = {1, 1}, .pad = padding::same()}, requant(1.0f, 1.0f, 4.0f));
  CHECK(as_ints(y) == std::vector<int>{250, 250, 250, 250});
  // conv2d, 2 output channels with their own scales: channel 1 weights 2 and twice the scale -> 4 times channel 0.
  std::vector<i8> w(18, 1);
  for (int k = 9; k < 18; ++k) w[std::size_t(k)] = 2;
  const std::vector<float> filter_scales{1.0f, 2.0f};
  const auto q = ref::make_conv_requant_16x8(1.0f, filter_scales, 8.0f, mosaiq::activation::none);
  std::vector<i16> z(8, 99);
  ref::conv2d_16x8(tensor_view<const i16>(x.data(), {2, 2, 1}), w.data(), nullptr,
                   tensor_view<i16>(z.data(), {2, 2, 2}),
                   {.kernel = {3, 3}, .stride = {1, 1}, .dilation = {1, 1}, .pad = padding::same()}, q);
  CHECK(as_ints(z) == std::vector<int>{125, 500, 125, 500, 125, 500, 125, 500});
}

TEST_CASE("16x8 transposed convolution: the scatter in int64, bias, half-up rounding") {
  const std::vector<i16> x{1000};
  const std::vector<i8> w{1, 2, 3, 4};  // [1][2][2][1]
  const std::vector<std::int64_t> bias{10};
  std::vector<i16> y(4, 99);
  // acc 1010, 2010, 3010, 4010; scale 1 / 4: 252.5, 502.5, 752.5, 1002.5 round up.
  ref::transpose_conv_16x8(tensor_view<const i16>(x.data(), {1, 1, 1}), w.data(), bias.data(),
                           tensor_view<i16>(y.data(), {2, 2, 1}),
                           {.kernel = {2, 2}, .stride = {2, 2}, .padding = padding::same()}, requant(1.0f, 1.0f, 4.0f));
  CHECK(as_ints(y) == std::vector<int>{253, 503, 753, 1003});
}

TEST_CASE("16-bit add: inputs shifted left by 15, the rounding mode's ties") {
  const auto p = ref::make_add_params_16(1.0f, 1.0f, 2.0f);
  REQUIRE(p.valid);
  const std::vector<i16> a{1001, -1001, 30000}, b{2, -2, 30000};
  std::vector<i16> y(3, 99);
  const auto run = [&]<mosaiq::rounding R>() {
    ref::add_16<R>(tensor_view<const i16>(a.data(), {1, 3, 1}), tensor_view<const i16>(b.data(), {1, 3, 1}),
                   tensor_view<i16>(y.data(), {1, 3, 1}), p);
    return as_ints(y);
  };
  // 1003 / 2 = 501.5: away from zero in the reference build, up under single rounding; 60000 / 2 = 30000.
  CHECK(run.template operator()<reference_rounding>() == std::vector<int>{502, -502, 30000});
  CHECK(run.template operator()<single_rounding>() == std::vector<int>{502, -501, 30000});
  // A clamp: relu on the output.
  const auto relu = ref::make_add_params_16(1.0f, 1.0f, 2.0f, mosaiq::activation::relu);
  ref::add_16<reference_rounding>(tensor_view<const i16>(a.data(), {1, 3, 1}),
                                  tensor_view<const i16>(b.data(), {1, 3, 1}), tensor_view<i16>(y.data(), {1, 3, 1}),
                                  relu);
  CHECK(as_ints(y) == std::vector<int>{502, 0, 30000});
}

TEST_CASE("QUANTIZE between int8 and int16") {
  // int8 (scale 0.5, zero point -10) to int16 at a 256 times finer scale: exact, (x + 10) * 256.
  const std::vector<i8> x8{20, -128, 127};
  std::vector<i16> y16(3, 99);
  ref::requantize<reference_rounding, i8, i16>(tensor_view<const i8>(x8.data(), {1, 3, 1}), {0.5f, -10},
                                               tensor_view<i16>(y16.data(), {1, 3, 1}), {0.5f / 256.0f, 0});
  CHECK(as_ints(y16) == std::vector<int>{7680, -30208, 32767});
  // int16 (scale 1/256) to int8 (scale 1, zero point 5): 384 / 256 = 1.5 -> 2 (ties away), + 5; saturation at 127.
  const std::vector<i16> x16{384, -384, 32767};
  std::vector<i8> y8(3, 99);
  ref::requantize<reference_rounding, i16, i8>(tensor_view<const i16>(x16.data(), {1, 3, 1}), {1.0f / 256.0f, 0},
                                               tensor_view<i8>(y8.data(), {1, 3, 1}), {1.0f, 5});
  CHECK(std::vector<int>(y8.begin(), y8.end()) == std::vector<int>{7, 3, 127});
  ref::requantize<single_rounding, i16, i8>(tensor_view<const i16>(x16.data(), {1, 3, 1}), {1.0f / 256.0f, 0},
                                            tensor_view<i8>(y8.data(), {1, 3, 1}), {1.0f, 5});
  CHECK(std::vector<int>(y8.begin(), y8.end()) == std::vector<int>{7, 4, 127});  // -1.5 -> -1 under single rounding
}

TEST_CASE("16x8 misuse is refused and writes nothing") {
  mosaiq::test::recording_handler errors;
  // A multiplier of 2^8 or more is beyond the int64 requantization's shift range.
  CHECK(requant(1.0f, 1.0f, 1.0f / 512.0f).multipliers.empty());
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  errors.reset();
  const std::vector<i16> x{1, 2};
  const std::vector<i8> w{1, 1};
  std::vector<i16> y{99};
  ref::pointwise_conv_16x8(tensor_view<const i16>(x.data(), {1, 1, 2}), w.data(), nullptr,
                           tensor_view<i16>(y.data(), {1, 1, 1}), ref::conv_requant_16x8{});
  CHECK(errors.calls() == 1);
  CHECK(y[0] == 99);
  errors.reset();
  CHECK_FALSE(ref::make_add_params_16(1.0f, 0.0f, 1.0f).valid);
  CHECK(errors.calls() == 1);
}
