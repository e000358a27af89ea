// Reference hard-swish, x * relu6(x + 3) / 6: TFLite's quantized HARD_SWISH for u8 and i8, step by step in 16-bit
// fixed point as tensorflow/lite/kernels/internal/reference/hard_swish.h computes it, and the float twin. Plain scalar
// loops: the oracle of ops/hard_swish.hpp, whose table is built from hard_swish_element below.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

/// What TFLite's HardSwishPrepare derives from the input and output quantizations (HardSwishParams); built once at
/// load by make_hard_swish_params.
struct hard_swish_params {
  std::int16_t input_zero_point = 0;
  std::int16_t output_zero_point = 0;
  std::int16_t reluish_multiplier = 0;  ///< Q15: hires input scale / (3 / 32768), mantissa
  int reluish_exponent = 0;             ///< its power of two, in [-31, 31]
  std::int16_t output_multiplier = 0;   ///< Q15: hires input scale / output scale, mantissa
  int output_exponent = 0;              ///< its power of two, in [-31, 0]
  /// Only make_hard_swish_params sets this, and only when every check passed.
  bool valid = false;

  friend constexpr bool operator==(const hard_swish_params&, const hard_swish_params&) = default;
};

namespace detail::hard_swish {

/// TFLite's DownScaleInt32ToInt16Multiplier: a Q31 mantissa rounded to Q15, saturating at the top.
constexpr std::int16_t downscale_to_q15(std::int32_t q31) noexcept {
  constexpr std::int32_t rounding_offset = 1 << 15;
  if (q31 >= std::numeric_limits<std::int32_t>::max() - rounding_offset)
    return std::numeric_limits<std::int16_t>::max();
  return static_cast<std::int16_t>((q31 + rounding_offset) >> 16);
}

constexpr std::int16_t saturate_int16(std::int64_t v) noexcept {
  return static_cast<std::int16_t>(
      std::clamp<std::int64_t>(v, std::numeric_limits<std::int16_t>::min(), std::numeric_limits<std::int16_t>::max()));
}

/// value * 2^amount, saturated to int16 (TFLite's SaturatingLeftShift).
constexpr std::int16_t saturating_left_shift(std::int16_t value, int amount) noexcept {
  return saturate_int16(std::int64_t{value} * (std::int64_t{1} << amount));
}

/// gemmlowp's SaturatingRoundingDoublingHighMul on int16: (a b + 2^14) / 2^15 with ties away from zero.
constexpr std::int16_t rounding_doubling_high_mul(std::int16_t a, std::int16_t b) noexcept {
  if (a == b && a == std::numeric_limits<std::int16_t>::min()) return std::numeric_limits<std::int16_t>::max();
  const std::int32_t ab = std::int32_t{a} * b;
  const std::int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<std::int16_t>((ab + nudge) / (1 << 15));
}

/// TFLite's SaturatingDoublingHighMul (hard_swish.h): a b / 2^15 truncated toward zero.
constexpr std::int16_t truncating_doubling_high_mul(std::int16_t a, std::int16_t b) noexcept {
  if (a == b && a == std::numeric_limits<std::int16_t>::min()) return std::numeric_limits<std::int16_t>::max();
  return static_cast<std::int16_t>((std::int32_t{a} * b) / (1 << 15));
}

/// gemmlowp's RoundingDivideByPOT on int16 lanes, literally: the mask is an int16 (all ones for exponents of 16 and
/// more, where the result degenerates to +-1 as it does in TFLite).
constexpr std::int16_t rounding_divide_by_pot(std::int16_t x, int exponent) noexcept {
  const auto mask = static_cast<std::int16_t>((std::int64_t{1} << exponent) - 1);
  const auto remainder = static_cast<std::int16_t>(x & mask);
  const std::int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return static_cast<std::int16_t>((x >> exponent) + (remainder > threshold ? 1 : 0));
}

}  // namespace detail::hard_swish

/// TFLite's HardSwishPrepare for uint8/int8: hires input scale = input scale / 128 (float), output multiplier = hires /
/// output scale, reluish multiplier = hires / (3 / 32768), each through QuantizeMultiplier and then downscaled to Q15.
/// Reports invalid_argument and returns invalid params when a scale is not finite and positive, a zero point does not
/// fit T, the output multiplier is not below 1 (TFLite's TF_LITE_ENSURE(output_multiplier_exponent <= 0)), or the
/// reluish exponent exceeds 31 (an input scale above ~2.5e7, where TFLite's shift overflows).
template <quantized_element T>
hard_swish_params make_hard_swish_params(quant_params input, quant_params output) {
  const auto usable = [](float s) { return std::isfinite(s) && s > 0.0f; };
  const auto fits = [](std::int32_t zp) { return zp >= element_traits<T>::min && zp <= element_traits<T>::max; };
  if (!require(usable(input.scale) && usable(output.scale), errc::invalid_argument,
               "hard_swish: scales must be finite and positive") ||
      !require(fits(input.zero_point) && fits(output.zero_point), errc::invalid_argument,
               "hard_swish: a zero point does not fit the element type"))
    return {};
  const float hires_input_scale = (1.0f / 128.0f) * input.scale;
  const float reluish_scale = 3.0f / 32768.0f;
  const quantized_multiplier out = quantize_multiplier(static_cast<double>(hires_input_scale / output.scale));
  const quantized_multiplier reluish = quantize_multiplier(static_cast<double>(hires_input_scale / reluish_scale));
  if (!require(is_valid_multiplier(out) && out.shift <= 0, errc::invalid_argument,
               "hard_swish: input scale / 128 must be below the output scale") ||
      !require(reluish.shift >= -31 && reluish.shift <= 31, errc::invalid_argument,
               "hard_swish: input scale too large (the reluish shift exceeds 31)"))
    return {};
  hard_swish_params p;
  p.input_zero_point = static_cast<std::int16_t>(input.zero_point);
  p.output_zero_point = static_cast<std::int16_t>(output.zero_point);
  p.output_multiplier = detail::hard_swish::downscale_to_q15(out.multiplier);
  p.output_exponent = out.shift;
  p.reluish_multiplier = detail::hard_swish::downscale_to_q15(reluish.multiplier);
  p.reluish_exponent = reluish.shift;
  p.valid = true;
  return p;
}

namespace detail::hard_swish {

/// The input on [-3, 3] -> [-1, 1] in Q15, saturated: the reluish multiplier with TFLite's careful left shifts (all
/// but one bit before the multiply, the last bit after, so only the last one can saturate).
constexpr std::int16_t reluish_value(std::int16_t hires_input, const hard_swish_params& p) noexcept {
  std::int16_t v = hires_input;
  if (p.reluish_exponent > 0) v = saturating_left_shift(v, p.reluish_exponent - 1);
  v = rounding_doubling_high_mul(v, p.reluish_multiplier);
  if (p.reluish_exponent > 0) v = saturating_left_shift(v, 1);
  if (p.reluish_exponent < 0) v = rounding_divide_by_pot(v, -p.reluish_exponent);
  return v;
}

}  // namespace detail::hard_swish

/// One element of TFLite's quantized HardSwish (hard_swish.h), every intermediate as the int16 it is there.
template <quantized_element T>
constexpr T hard_swish_element(T q, const hard_swish_params& p) noexcept {
  using namespace detail::hard_swish;
  const auto input = static_cast<std::int16_t>(std::int32_t{q} - p.input_zero_point);
  const auto hires_input = static_cast<std::int16_t>(input * (1 << 7));  // |input| <= 255: fits
  const std::int16_t preshift_output_scale = rounding_doubling_high_mul(hires_input, p.output_multiplier);
  // [-1, 1] -> [0, 1] in Q15 (the int16 is promoted: + 2^15 does not overflow).
  const auto relu6_fraction = static_cast<std::int16_t>((reluish_value(hires_input, p) + (1 << 15)) >> 1);
  const std::int16_t preshift_output = truncating_doubling_high_mul(relu6_fraction, preshift_output_scale);
  // TFLite adds the zero point to an int16 (wrapping), then clamps to T's range.
  const auto output =
      static_cast<std::int16_t>(rounding_divide_by_pot(preshift_output, -p.output_exponent) + p.output_zero_point);
  return static_cast<T>(std::clamp<std::int32_t>(output, element_traits<T>::min, element_traits<T>::max));
}

namespace detail::hard_swish {

inline constexpr const char* view_names[3] = {"hard_swish: input", "hard_swish: output",
                                              "hard_swish: input and output extents differ"};

/// out[i] = f(in[i]) over every element, after checking that the views are valid and of equal extents (each problem
/// reported with its entry of `names`: input, output, extents).
template <class T, class F>
void map_elements(const tensor_view<const T>& in, const tensor_view<T>& out, F f,
                  const char* const (&names)[3] = view_names) {
  if (!check_view(in, names[0]) || !check_view(out, names[1]) ||
      !require(in.batch() == out.batch() && in.dims() == out.dims(), errc::shape_mismatch, names[2]))
    return;
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x)
        std::transform(in.pixel(n, y, x), in.pixel(n, y, x) + in.channels(), out.pixel(n, y, x), f);
}

}  // namespace detail::hard_swish

/// out = hard_swish(in) element by element, TFLite's quantized semantics. Any strides; out may be in. On misuse (views
/// that are invalid or differ in extents, params not built by make_hard_swish_params) nothing is written.
template <quantized_element T>
void hard_swish(std::type_identity_t<tensor_view<const T>> in, std::type_identity_t<tensor_view<T>> out,
                const hard_swish_params& params) {
  if (!require(params.valid, errc::invalid_argument, "hard_swish: params were not built by make_hard_swish_params"))
    return;
  detail::hard_swish::map_elements<T>(in, out, [&params](T q) { return hard_swish_element<T>(q, params); });
}

/// Float hard-swish, x * min(max(x + 3, 0), 6) / 6 (TFLite's float kernel).
constexpr float hard_swish_value(float x) noexcept { return x * std::min(6.0f, std::max(0.0f, x + 3.0f)) / 6.0f; }

inline void hard_swish(tensor_view<const float> in, tensor_view<float> out) {
  detail::hard_swish::map_elements<float>(in, out, hard_swish_value);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
