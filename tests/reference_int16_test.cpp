// Reference 16x8 kernels (int16 activations, int8 filters, int64 biases; TFLite's 16x8 quantization): the int64
// requantization's Q15 multiplier and half-up rounding, each conv-like kernel on hand-computed cases (an accumulator
// beyond int32, padding skipped, the fused clamp), the int16 add in both rounding modes, QUANTIZE between int8 and
// int16, the int16 mul (per-channel broadcast), average pool, mean over height and width, logistic (table and input
// multiplier), hard swish and half-pixel bilinear resize, and misuse refused with the output untouched.
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

TEST_CASE("16-bit mul: the int32 product requantized, per-channel broadcast, both roundings, the clamp") {
  // Power-of-two scales make the real multiplier exactly 2^-15: a * b / 32768 at a's scale.
  const auto p = ref::make_mul_params_16(1.0f / 256.0f, 1.0f / 32768.0f, 1.0f / 256.0f);
  REQUIRE(p.valid);
  // a: 1 x 2 x 2 (H x W x C); b: 1 x 1 x 2, one gate per channel (0.5 and 0.25 at 1/32768), as the SE blocks do.
  const std::vector<i16> a{1001, -1001, 30000, -32768}, gate{16384, 8192};
  std::vector<i16> y(4, 99);
  const auto run = [&]<mosaiq::rounding R>(const ref::mul_params_16& params) {
    ref::mul_16<R>(tensor_view<const i16>(a.data(), {1, 2, 2}), tensor_view<const i16>(gate.data(), {1, 1, 2}),
                   tensor_view<i16>(y.data(), {1, 2, 2}), params);
    return as_ints(y);
  };
  // 1001 / 2 = 500.5 (away from zero: 501), -1001 / 4 = -250.25, 30000 / 2, -32768 / 4.
  CHECK(run.template operator()<reference_rounding>(p) == std::vector<int>{501, -250, 15000, -8192});
  const auto single = ref::make_mul_params_16<single_rounding>(1.0f / 256.0f, 1.0f / 32768.0f, 1.0f / 256.0f);
  CHECK(run.template operator()<single_rounding>(single) == std::vector<int>{501, -250, 15000, -8192});
  // The tie on a negative product: -500.5 is -501 in the reference build, -500 under single rounding.
  const std::vector<i16> half{16384};
  const std::vector<i16> negative{-1001};
  std::vector<i16> z{99};
  ref::mul_16<reference_rounding>(tensor_view<const i16>(negative.data(), {1, 1, 1}),
                                  tensor_view<const i16>(half.data(), {1, 1, 1}), tensor_view<i16>(z.data(), {1, 1, 1}),
                                  p);
  CHECK(z[0] == -501);
  ref::mul_16<single_rounding>(tensor_view<const i16>(negative.data(), {1, 1, 1}),
                               tensor_view<const i16>(half.data(), {1, 1, 1}), tensor_view<i16>(z.data(), {1, 1, 1}),
                               single);
  CHECK(z[0] == -500);
  // relu on the output; and params of the other rounding mode are refused.
  const auto relu = ref::make_mul_params_16(1.0f / 256.0f, 1.0f / 32768.0f, 1.0f / 256.0f, mosaiq::activation::relu);
  CHECK(run.template operator()<reference_rounding>(relu) == std::vector<int>{501, 0, 15000, 0});
  mosaiq::test::recording_handler errors;
  y.assign(4, 99);
  CHECK(run.template operator()<single_rounding>(p) == std::vector<int>{99, 99, 99, 99});
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
}

TEST_CASE("16-bit average pool: int32 sums, ties away from zero, padding not counted, the whole map") {
  const ref::pool_params whole{.kernel = {2, 2}, .stride = {2, 2}, .pad = padding::valid()};
  std::vector<i16> y{99};
  const auto pool = [&](const std::vector<i16>& x, const ref::pool_params& p) {
    ref::average_pool_16(tensor_view<const i16>(x.data(), {2, 2, 1}), tensor_view<i16>(y.data(), {1, 1, 1}), p);
    return int{y[0]};
  };
  CHECK(pool({100, 202, -300, 4}, whole) == 2);     // 6 / 4 = 1.5 -> 2
  CHECK(pool({-100, -202, 300, -4}, whole) == -2);  // -1.5 -> -2
  CHECK(pool({100, 201, -300, 4}, whole) == 1);     // 1.25 -> 1
  // Beyond int16 in the sum: 4 * 30000 / 4.
  CHECK(pool({30000, 30000, 30000, 30000}, whole) == 30000);
  // SAME 3x3 windows over a 2x2 image: every window holds the 4 pixels, the padded taps are not counted.
  const std::vector<i16> x{100, 202, -300, 4};
  std::vector<i16> same(4, 99);
  ref::average_pool_16(tensor_view<const i16>(x.data(), {2, 2, 1}), tensor_view<i16>(same.data(), {2, 2, 1}),
                       {.kernel = {3, 3}, .stride = {1, 1}, .pad = padding::same()});
  CHECK(as_ints(same) == std::vector<int>{2, 2, 2, 2});
  // relu6 at scale 1/1024: 6.0 is 6144.
  ref::average_pool_16(tensor_view<const i16>(x.data(), {2, 2, 1}), tensor_view<i16>(y.data(), {1, 1, 1}),
                       {.kernel = {2, 2}, .stride = {2, 2}, .pad = padding::valid(), .act = mosaiq::activation::relu6},
                       1.0f / 1024.0f);
  CHECK(y[0] == 2);
  const std::vector<i16> big{10000, 10000, 10000, 10000};
  ref::average_pool_16(tensor_view<const i16>(big.data(), {2, 2, 1}), tensor_view<i16>(y.data(), {1, 1, 1}),
                       {.kernel = {2, 2}, .stride = {2, 2}, .pad = padding::valid(), .act = mosaiq::activation::relu6},
                       1.0f / 1024.0f);
  CHECK(y[0] == 6144);
  // A window of 65536 taps could overflow the int32 sum: refused, nothing written.
  mosaiq::test::recording_handler errors;
  y[0] = 99;
  ref::average_pool_16(tensor_view<const i16>(x.data(), {1, 1, 1}), tensor_view<i16>(y.data(), {1, 1, 1}),
                       {.kernel = {256, 256}, .stride = {1, 1}, .pad = padding::same()});
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  CHECK(y[0] == 99);
}

TEST_CASE("16-bit mean: the int32 sum, 1 / count folded into the multiplier, ties by rounding mode, the clamp") {
  // Equal scales: s_in / s_out = 1 is (2^30, shift 1); 4 pixels fold to (2^30, shift -1): the sum times 1/4 as a
  // doubling high multiply by 1/2 (rounding once) and a rounding halving (twice) in the reference build.
  const auto p = ref::make_mean_params_16(1.0f / 256.0f, 1.0f / 256.0f, 4);
  REQUIRE(p.valid);
  CHECK(p.multiplier == quantized_multiplier{1 << 30, -1});
  const auto single = ref::make_mean_params_16<single_rounding>(1.0f / 256.0f, 1.0f / 256.0f, 4);
  // 2 x 2 pixels, 2 channels.
  const auto mean = [&]<mosaiq::rounding R>(const std::vector<i16>& x, const ref::mean_params_16& params) {
    std::vector<i16> y(2, 99);
    ref::mean_16<R>(tensor_view<const i16>(x.data(), {2, 2, 2}), tensor_view<i16>(y.data(), {1, 1, 2}), params);
    return as_ints(y);
  };
  // Channel 0 sums to 6 (1.5), channel 1 to -6 (-1.5): away from zero in the reference build, up under single rounding.
  const std::vector<i16> ties{1, -1, 2, -2, 3, -3, 0, 0};
  CHECK(mean.template operator()<reference_rounding>(ties, p) == std::vector<int>{2, -2});
  CHECK(mean.template operator()<single_rounding>(ties, single) == std::vector<int>{2, -1});
  // Sums 5 (1.25) and -5: the reference build rounds twice, 5 / 2 -> 3 (the doubling high multiply's tie goes up),
  // 3 / 2 -> 2; -5 / 2 -> -2, -2 / 2 -> -1. Single rounding once: 1.25 -> 1, -1.25 -> -1.
  const std::vector<i16> twice{1, -1, 1, -1, 1, -1, 2, -2};
  CHECK(mean.template operator()<reference_rounding>(twice, p) == std::vector<int>{2, -1});
  CHECK(mean.template operator()<single_rounding>(twice, single) == std::vector<int>{1, -1});
  // A sum beyond int16: 4 * 30000 and 4 * -32768.
  const std::vector<i16> large{30000, -32768, 30000, -32768, 30000, -32768, 30000, -32768};
  CHECK(mean.template operator()<reference_rounding>(large, p) == std::vector<int>{30000, -32768});
  // Different scales, s_in / s_out = 4 (1/256 in, 1/1024 out): 4 * mean, clamped to int16.
  const auto wider = ref::make_mean_params_16(1.0f / 256.0f, 1.0f / 1024.0f, 4);
  CHECK(mean.template operator()<reference_rounding>({100, 10000, 201, 10000, -50, 10000, 3, 10000}, wider) ==
        std::vector<int>{254, 32767});  // 254 / 4 * 4; 40000 clamped
  // s_in / s_out = 1/4 (1/1024 in, 1/256 out): the sum / 16; 24 / 16 = 1.5 -> 2, -8 / 16 = -0.5 -> -1 (away).
  const auto narrower = ref::make_mean_params_16(1.0f / 1024.0f, 1.0f / 256.0f, 4);
  CHECK(mean.template operator()<reference_rounding>({6, -2, 6, -2, 6, -2, 6, -2}, narrower) ==
        std::vector<int>{2, -1});
  // 3 pixels, not a power of two: k = 1, multiplier (2^30 << 1) / 3 = 715827882 truncated, shift 0; exact thirds
  // stay exact (3 * 32767 -> 32767), 4 / 3 -> 1, 5 / 3 -> 2, -5 / 3 -> -2.
  const auto thirds = ref::make_mean_params_16(1.0f, 1.0f, 3);
  CHECK(thirds.multiplier == quantized_multiplier{715827882, 0});
  const auto mean3 = [&](std::vector<i16> x) {
    std::vector<i16> y(1, 99);
    ref::mean_16<reference_rounding>(tensor_view<const i16>(x.data(), {1, 3, 1}), tensor_view<i16>(y.data(), {1, 1, 1}),
                                     thirds);
    return int{y[0]};
  };
  CHECK(mean3({32767, 32767, 32767}) == 32767);
  CHECK(mean3({1, 1, 2}) == 1);
  CHECK(mean3({1, 2, 2}) == 2);
  CHECK(mean3({-1, -2, -2}) == -2);
  // The largest map: 256 x 256 pixels of -32768 sum to exactly INT32_MIN; k = 16 gives (2^30, shift -15).
  const std::vector<i16> extreme(65536, -32768);
  std::vector<i16> y(1, 99);
  const auto full = ref::make_mean_params_16(1.0f, 1.0f, 65536);
  CHECK(full.multiplier == quantized_multiplier{1 << 30, -15});
  ref::mean_16<reference_rounding>(tensor_view<const i16>(extreme.data(), {256, 256, 1}),
                                   tensor_view<i16>(y.data(), {1, 1, 1}), full);
  CHECK(y[0] == -32768);
  // Refused, nothing written: 65537 pixels, params of another pixel count or rounding, an unusable scale.
  mosaiq::test::recording_handler errors;
  CHECK_FALSE(ref::make_mean_params_16(1.0f, 1.0f, 65537).valid);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  CHECK_FALSE(ref::make_mean_params_16(0.0f, 1.0f, 4).valid);
  errors.reset();
  CHECK(mean.template operator()<single_rounding>(ties, p) == std::vector<int>{99, 99});
  CHECK(mean.template operator()<reference_rounding>(ties, thirds) == std::vector<int>{99, 99});
  CHECK(errors.calls() == 2);
}

TEST_CASE("16-bit logistic: TFLite's input multiplier, the sigmoid table, interpolation, saturation") {
  // Scale 2^-12 is the power-of-two case: multiplier 3, no shift (x * 3 on the table's 3 * 4096 per unit).
  const auto pot = ref::make_logistic_params_16(1.0f / 4096.0f);
  REQUIRE(pot.valid);
  CHECK(pot.input_multiplier == 3);
  CHECK(pot.input_left_shift == 0);
  const auto at = [](const ref::logistic_params_16& p, i16 x) { return int{ref::logistic_16_element(x, p)}; };
  CHECK(at(pot, 0) == 16384);     // 0.5
  CHECK(at(pot, 4096) == 23956);  // table[24] = 47911: (47911 * 512 + 512) / 1024
  CHECK(at(pot, -4096) == 8812);  // (2^25 - 47911 * 512 + 511) / 1024, floored
  CHECK(at(pot, 4160) == 24055);  // 12480 / 512: index 24, fraction 192 of (48443 - 47911), 24055.75 floored
  // Scale 0.001: 12.288 doubled 11 times to 25165.8, truncated; 1.0 lands exactly on table[24] again.
  const auto general = ref::make_logistic_params_16(0.001f);
  REQUIRE(general.valid);
  CHECK(general.input_multiplier == 25165);
  CHECK(general.input_left_shift == 11);
  CHECK(at(general, 1000) == 23956);
  // Scale 2^-11 is a power of two but not the table's: the general path, multiplier 24576 after 12 doublings.
  // +-16 is beyond the table (index >= 255): 32767 and 1.
  const auto coarse = ref::make_logistic_params_16(1.0f / 2048.0f);
  CHECK(coarse.input_multiplier == 24576);
  CHECK(coarse.input_left_shift == 12);
  CHECK(at(coarse, 32767) == 32767);
  CHECK(at(coarse, -32768) == 1);
  // Over a tensor, and a scale whose multiplier would not fit 15 bits refused.
  const std::vector<i16> x{0, 4096, -4096};
  std::vector<i16> y(3, 99);
  ref::logistic_16(tensor_view<const i16>(x.data(), {1, 3, 1}), tensor_view<i16>(y.data(), {1, 3, 1}), pot);
  CHECK(as_ints(y) == std::vector<int>{16384, 23956, 8812});
  mosaiq::test::recording_handler errors;
  CHECK_FALSE(ref::make_logistic_params_16(3.0f).valid);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
}

TEST_CASE("16-bit hard swish: TFLite Micro's int16 steps, both output exponent signs, both roundings") {
  // Input and output at 1/1024: output ratio 1 (Q15 0.5, exponent 1), reluish ratio 32 / 3 (Q15 21845, exponent 4).
  const auto p = ref::make_hard_swish_params_16(1.0f / 1024.0f, 1.0f / 1024.0f);
  REQUIRE(p.valid);
  CHECK(p.output_multiplier == 16384);
  CHECK(p.output_exponent == 1);
  CHECK(p.reluish_multiplier == 21845);
  CHECK(p.reluish_exponent == 4);
  const auto at = [&](i16 x) { return int{ref::hard_swish_16_element<reference_rounding>(x, p)}; };
  const auto at_single = [&](i16 x) { return int{ref::hard_swish_16_element<single_rounding>(x, p)}; };
  // 1.0: reluish 10923 -> factor 21845, 1024 * 0.5 = 512, 512 * 21845 / 32768 = 341.3 -> 341, doubled: 682 (2/3).
  CHECK(at(1024) == 682);
  // -2.0: reluish -21845 -> factor 5461, -1024 * 5461 / 32768 = -170.7 -> -171, doubled: -342 (exact -341.3).
  CHECK(at(-2048) == -342);
  CHECK(at(-4096) == 0);    // below -3: the factor is 0
  CHECK(at(4096) == 4096);  // above 3: the factor saturates at 32767 / 32768
  CHECK(at_single(1024) == 682);
  CHECK(at_single(-2048) == -342);
  // Output at 1/512: ratio 0.5, exponent 0, no final shift: 341.
  const auto half = ref::make_hard_swish_params_16(1.0f / 1024.0f, 1.0f / 512.0f);
  CHECK(half.output_exponent == 0);
  CHECK(int{ref::hard_swish_16_element<reference_rounding>(1024, half)} == 341);
  // Over a tensor; an input scale whose reluish exponent would exceed 15 is refused.
  const std::vector<i16> x{1024, -2048, -4096, 4096};
  std::vector<i16> y(4, 99);
  ref::hard_swish_16<reference_rounding>(tensor_view<const i16>(x.data(), {1, 4, 1}),
                                         tensor_view<i16>(y.data(), {1, 4, 1}), p);
  CHECK(as_ints(y) == std::vector<int>{682, -342, 0, 4096});
  mosaiq::test::recording_handler errors;
  CHECK_FALSE(ref::make_hard_swish_params_16(32.0f, 1.0f).valid);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
}

TEST_CASE("16-bit bilinear resize: half-pixel 2x on Q10 positions, ties by rounding mode") {
  // 1 x 2 -> 1 x 4, half-pixel: weights (1, 0), (3/4, 1/4), (1/4, 3/4), (0, 1) of the two pixels.
  const std::vector<i16> x{1000, -1002};
  std::vector<i16> y(4, 99);
  ref::resize_bilinear_16<reference_rounding>(tensor_view<const i16>(x.data(), {1, 2, 1}),
                                              tensor_view<i16>(y.data(), {1, 4, 1}), mosaiq::resize_mode::half_pixel);
  CHECK(as_ints(y) == std::vector<int>{1000, 500, -502, -1002});  // 499.5 -> 500, -501.5 -> -502
  ref::resize_bilinear_16<single_rounding>(tensor_view<const i16>(x.data(), {1, 2, 1}),
                                           tensor_view<i16>(y.data(), {1, 4, 1}), mosaiq::resize_mode::half_pixel);
  CHECK(as_ints(y) == std::vector<int>{1000, 500, -501, -1002});  // -501.5 -> -501 under single rounding
  // 2 x 2 -> 4 x 4, output (1, 1): the 9/16, 3/16, 3/16, 1/16 blend of (30000, -30000, 20000, 4000) = 15250.
  const std::vector<i16> square{30000, -30000, 20000, 4000};
  std::vector<i16> big(16, 99);
  ref::resize_bilinear_16<reference_rounding>(tensor_view<const i16>(square.data(), {2, 2, 1}),
                                              tensor_view<i16>(big.data(), {4, 4, 1}), mosaiq::resize_mode::half_pixel);
  CHECK(big[5] == 15250);
}
