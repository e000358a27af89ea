// Reference hard-swish: TFLite's HardSwishPrepare on hand-computed scales, elements traced through TFLite's int16
// pipeline by hand, and every input of a grid of scale pairs against float hard-swish (within 1 LSB).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mosaiq/reference/hard_swish.hpp"
#include "support.hpp"

namespace {

using mosaiq::i8;
using mosaiq::quant_params;
using mosaiq::shape;
using mosaiq::tensor_view;
using mosaiq::u8;
namespace ref = mosaiq::reference;

}  // namespace

TEST_CASE("make_hard_swish_params: TFLite's Prepare on exact scales") {
  // Input and output scale 3/128: hires = 3/16384; output multiplier 2^-7 = 0.5 * 2^-6 -> Q31 2^30, Q15 16384,
  // exponent -6; reluish multiplier (3/16384) / (3/32768) = 2 = 0.5 * 2^2 -> Q15 16384, exponent 2.
  const ref::hard_swish_params p = ref::make_hard_swish_params<i8>({3.0f / 128.0f, 0}, {3.0f / 128.0f, 0});
  REQUIRE(p.valid);
  CHECK(p.output_multiplier == 16384);
  CHECK(p.output_exponent == -6);
  CHECK(p.reluish_multiplier == 16384);
  CHECK(p.reluish_exponent == 2);
  // Input scale 0.1: reluish 0.1 / 128 * 32768 / 3 = 8.5333 = 0.53333 * 2^4 -> Q31 1145324612, Q15 17476.
  const ref::hard_swish_params q = ref::make_hard_swish_params<u8>({0.1f, 0}, {0.1f, 3});
  REQUIRE(q.valid);
  CHECK(q.reluish_multiplier == 17476);
  CHECK(q.reluish_exponent == 4);
  CHECK(q.output_zero_point == 3);
  // The Q31 -> Q15 downscale saturates at the top instead of wrapping to -32768.
  CHECK(ref::detail::hard_swish::downscale_to_q15(INT32_MAX) == 32767);
  CHECK(ref::detail::hard_swish::downscale_to_q15(INT32_MAX - 32768) == 32767);
  CHECK(ref::detail::hard_swish::downscale_to_q15(INT32_MAX - 32769) == 32767);  // (2^31 - 1) >> 16 rounds up
  CHECK(ref::detail::hard_swish::downscale_to_q15(1 << 30) == 16384);
}

TEST_CASE("make_hard_swish_params: unusable quantizations are refused") {
  mosaiq::test::recording_handler errors;
  CHECK_FALSE(ref::make_hard_swish_params<u8>({0.0f, 0}, {0.1f, 0}).valid);
  CHECK_FALSE(ref::make_hard_swish_params<u8>({0.1f, 0}, {NAN, 0}).valid);
  CHECK_FALSE(ref::make_hard_swish_params<u8>({0.1f, 256}, {0.1f, 0}).valid);
  CHECK_FALSE(ref::make_hard_swish_params<i8>({0.1f, 0}, {0.1f, -129}).valid);
  // TFLite requires output_multiplier_exponent <= 0: input scale / 128 below the output scale.
  CHECK_FALSE(ref::make_hard_swish_params<i8>({1.0f, 0}, {1.0f / 256.0f, 0}).valid);
  CHECK(errors.calls() == 5);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  // Params that were never made are refused by the op, which then writes nothing.
  std::vector<i8> in(4, 1), out(4, 7);
  ref::hard_swish<i8>(tensor_view<const i8>(in.data(), shape{1, 2, 2}), tensor_view<i8>(out.data(), shape{1, 2, 2}),
                      ref::hard_swish_params{});
  CHECK(errors.calls() == 6);
  CHECK(std::all_of(out.begin(), out.end(), [](i8 v) { return v == 7; }));
}

TEST_CASE("hard_swish_element: TFLite's int16 pipeline traced by hand") {
  const ref::hard_swish_params p = ref::make_hard_swish_params<i8>({3.0f / 128.0f, 0}, {3.0f / 128.0f, 0});
  // q = 64 (x = 1.5): hires 8192; preshift scale (8192 * 16384 + 2^14) / 2^15 = 4096.5 -> 4096; reluish
  // 8192 << 1 = 16384, * 16384 rounded -> 8192.5 -> 8192, << 1 = 16384; (16384 + 32768) >> 1 = 24576;
  // 24576 * 4096 / 2^15 = 3072; 3072 / 2^6 = 48 (float: 1.5 * 4.5 / 6 = 1.125 = 48 steps).
  CHECK(ref::hard_swish_element<i8>(64, p) == 48);
  // q = -64 (x = -1.5): preshift -4096, reluish -16384 -> (16384) >> 1 = 8192; 8192 * -4096 / 2^15 = -1024;
  // -1024 / 64 = -16 (float: -1.5 * 1.5 / 6 = -0.375 = -16 steps).
  CHECK(ref::hard_swish_element<i8>(-64, p) == -16);
  // q = 127: preshift 8128; reluish 32512 -> 16256 -> 32512; fraction 32640; 32640 * 8128 / 2^15 = 8096.25 -> 8096;
  // 8096 / 64 = 126.5 rounds away from zero: 127 (float 126.50).
  CHECK(ref::hard_swish_element<i8>(127, p) == 127);
  // q = -128 (x = -3): reluish -32768 -> fraction 0 -> 0.
  CHECK(ref::hard_swish_element<i8>(-128, p) == 0);
  CHECK(ref::hard_swish_element<i8>(0, p) == 0);
  // q = -1 (x = -0.0234): preshift (-128 * 16384 + 1 - 2^14) / 2^15 = -64.49 -> -64; reluish -256 -> -128 -> -256;
  // fraction (-256 + 32768) >> 1 = 16256; 16256 * -64 / 2^15 = -31.75 truncates to -31 (rounding would give -32);
  // -31 / 64: remainder 33 > threshold 32, so -1 + 1 = 0 (from -32 it would be -1). Float: -0.496 steps.
  CHECK(ref::hard_swish_element<i8>(-1, p) == 0);

  // u8, input scale 0.1 zero point 0, output 0.1 zero point 3: q = 100 (x = 10): preshift 6400; reluish 12800 << 3
  // saturates to 32767, * 17476 -> 17475, << 1 saturates to 32767; fraction (32767 + 32768) >> 1 = 32767;
  // 32767 * 6400 / 2^15 = 6399.8 -> 6399 (truncated); 6399 / 64 = 99.98 -> 100; + 3 = 103.
  const ref::hard_swish_params q = ref::make_hard_swish_params<u8>({0.1f, 0}, {0.1f, 3});
  CHECK(ref::hard_swish_element<u8>(100, q) == 103);
  // Outputs clamp to T: 250 (x = 25) is 253 steps.
  CHECK(ref::hard_swish_element<u8>(250, q) == 253);
  CHECK(ref::hard_swish_element<u8>(255, q) == 255);
}

TEST_CASE_TEMPLATE("hard_swish: every input of a grid of scale pairs is within 1 LSB of float hard-swish", T, u8, i8) {
  constexpr float input_scales[] = {0.004f, 0.02f, 0.0234375f, 0.05f, 0.1f, 0.25f};
  constexpr float output_ratios[] = {0.25f, 0.5f, 1.0f, 1.7f, 4.0f};
  constexpr int zero_points[] = {mosaiq::element_traits<T>::min, 0, mosaiq::element_traits<T>::max / 2};
  int worst = 0;
  for (float in_scale : input_scales)
    for (float ratio : output_ratios)
      for (int in_zp : zero_points)
        for (int out_zp : zero_points) {
          const quant_params in_q{in_scale, in_zp}, out_q{in_scale * ratio, out_zp};
          const ref::hard_swish_params p = ref::make_hard_swish_params<T>(in_q, out_q);
          REQUIRE(p.valid);
          for (int v = mosaiq::element_traits<T>::min; v <= mosaiq::element_traits<T>::max; ++v) {
            const double x = static_cast<double>(in_q.scale) * (v - in_zp);
            const double ideal = x * std::clamp(x + 3.0, 0.0, 6.0) / 6.0 / out_q.scale + out_zp;
            const double clamped =
                std::clamp(ideal, double{mosaiq::element_traits<T>::min}, double{mosaiq::element_traits<T>::max});
            const int got = ref::hard_swish_element<T>(static_cast<T>(v), p);
            worst = std::max(worst, static_cast<int>(std::ceil(std::abs(got - clamped) - 1e-9)));
          }
        }
  CHECK(worst <= 1);
}

TEST_CASE("hard_swish: strided views, in place, float twin") {
  const ref::hard_swish_params p = ref::make_hard_swish_params<i8>({3.0f / 128.0f, 0}, {3.0f / 128.0f, 0});
  // Two pixels of 2 channels inside pixels of 3 (the third channel is untouched).
  std::vector<i8> data{64, -64, 9, 127, -128, 9};
  const tensor_view<i8> view(data.data(), shape{1, 2, 2}, 1, 3);
  ref::hard_swish<i8>(tensor_view<const i8>(view), view, p);
  CHECK(data == std::vector<i8>{48, -16, 9, 127, 0, 9});

  std::vector<float> x{-4.0f, -3.0f, -1.5f, 0.0f, 1.5f, 3.0f, 5.0f, 0.5f}, y(8);
  ref::hard_swish(tensor_view<const float>(x.data(), shape{2, 2, 2}), tensor_view<float>(y.data(), shape{2, 2, 2}));
  CHECK(y == std::vector<float>{0.0f, 0.0f, -0.375f, 0.0f, 1.125f, 3.0f, 5.0f, 0.5f * 3.5f / 6.0f});
}
