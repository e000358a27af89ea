// What the 16x8 element-wise kernels of every path read: each op's multipliers decoded once at load for rounding R
// (add's are reference::add_scales_16), logistic's table packed for the lanes, bilinear resize's weights and taps.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16 {

/// multiply_by_quantized_multiplier<R>(x, s) as one rounding for a multiplier >= 0 without left shift (below 1):
/// floor((x M + offset) / 2^(31 + e)), offset_nonnegative where x M >= 0, else offset_negative. Under single_round
/// that is the definition (offset 2^(30 + e) either way). Under tflite_reference, SaturatingRoundingDoublingHighMul
/// is t = floor((x M + 2^30) / 2^31) (no saturation: M >= 0) and RoundingDivideByPOT(t, e >= 1) is
/// floor((t + 2^(e-1) - [t < 0]) / 2^e); nested floors merge into floor((x M + 2^30 + 2^(30+e) - [t < 0] 2^31) /
/// 2^(31+e)), and [t < 0] may be read as [x M < 0]: they differ only where t = 0 and x M < 0, and both offsets give
/// 0 there. Domain: |x| <= 2^30 and e <= 30, where floor(sum / 2^31) fits int32 (what the lanes compute before the
/// shift by e); fold_scale refuses e = 31 (`folds`).
struct folded_scale {
  std::int32_t multiplier = 0, exponent = 0;
  std::int64_t offset_nonnegative = 0, offset_negative = 0;
};

/// Whether s folds: a multiplier >= 0 with no left shift and e <= 30.
template <rounding R>
constexpr bool folds(requant_scale s) noexcept {
  if constexpr (R == rounding::tflite_reference)
    return s.multiplier >= 0 && s.left_shift == 0 && s.right_shift <= 30;
  else
    return s.multiplier >= 0 && s.right_shift >= 31 && s.right_shift <= 61;
}

template <rounding R>
constexpr folded_scale fold_scale(requant_scale s) noexcept {
  const std::int32_t e = R == rounding::tflite_reference ? s.right_shift : s.right_shift - 31;
  const std::int64_t up = std::int64_t{1} << (30 + e);
  if constexpr (R == rounding::tflite_reference) {
    if (e == 0) return {s.multiplier, 0, std::int64_t{1} << 30, std::int64_t{1} << 30};
    return {s.multiplier, e, (std::int64_t{1} << 30) + up, (std::int64_t{1} << 30) + up - (std::int64_t{1} << 31)};
  } else {
    return {s.multiplier, e, up, up};
  }
}

/// The scalar form of lanes::multiply_folded.
constexpr std::int32_t multiply_folded(std::int32_t x, const folded_scale& f) noexcept {
  const std::int64_t product = std::int64_t{x} * f.multiplier;
  return static_cast<std::int32_t>((product + (product < 0 ? f.offset_negative : f.offset_nonnegative)) >>
                                   (31 + f.exponent));
}

/// mul_16's output multiplier: folded where it folds (|a b| <= 2^30 is the fold's domain), else as requant_scale.
struct mul_scales_16 {
  requant_scale output{};
  clamp_range clamp{};
  folded_scale folded{};
  bool output_folds = false;
};

template <rounding R>
constexpr mul_scales_16 mul_scales_16_of(const reference::mul_params_16& p) noexcept {
  const requant_scale output = prepare_scale<R>(p.output_multiplier);
  const bool output_folds = folds<R>(output);
  return {output, p.clamp, output_folds ? fold_scale<R>(output) : folded_scale{}, output_folds};
}

/// One input step of add_16, multiply_by_quantized_multiplier<R>(a << 15, s) for int16 a and a multiplier M >= 0
/// below 1, in int32 without a 64-bit product: M = high 2^16 + low (high < 2^15, low < 2^16) makes
/// SaturatingRoundingDoublingHighMul(a 2^15, M) = floor((a M + 2^15) / 2^16) = a high + floor((a low + 2^15) / 2^16)
/// (|a high| < 2^30, |a low| + 2^15 < 2^31), then RoundingDivideByPOT by e as offset 2^(e-1) and a step of -1 where
/// that t < 0. single_round's floor((a M + 2^(15+e)) / 2^(16+e)) splits the same way (the 2^15 inside the floor only
/// when e = 0). So s = (t + offset + (t < 0 ? negative_step : 0)) >> e, t = a high + ((a low + low_offset) >> 16),
/// |t| < 2^30. An exponent of 31 makes every step 0 (|t| < 2^30): all fields 0.
struct add_input_16 {
  std::int32_t high = 0, low = 0, low_offset = 0, offset = 0, negative_step = 0, exponent = 0;
};

template <rounding R>
constexpr add_input_16 add_input_16_of(requant_scale s) noexcept {
  const std::int32_t e = R == rounding::tflite_reference ? s.right_shift : s.right_shift - 31;
  if (e >= 31) return {};
  const bool reference_rounding = R == rounding::tflite_reference;
  return {.high = s.multiplier >> 16,
          .low = s.multiplier & 0xFFFF,
          .low_offset = reference_rounding || e == 0 ? 1 << 15 : 0,
          .offset = e >= 1 ? 1 << (e - 1) : 0,
          .negative_step = reference_rounding && e >= 1 ? -1 : 0,
          .exponent = e};
}

constexpr std::int32_t add_input_step(std::int32_t a, const add_input_16& f) noexcept {
  const std::int32_t t = a * f.high + ((a * f.low + f.low_offset) >> 16);
  return (t + f.offset + (t < 0 ? f.negative_step : 0)) >> f.exponent;
}

/// add_16's scales for the kernels: `folded` where both inputs and the output fold (multipliers below 1 without left
/// shift, as make_add_params_16 makes them, and |s1| + |s2| <= 2^30 for the output's domain), else `general`, the
/// reference's three requant_scales.
struct add_scales_16x8 {
  reference::add_scales_16 general{};
  add_input_16 input1{}, input2{};
  folded_scale output{};
  bool folded = false;
  /// Which input's step is a << 14 exactly (1 or 2; 0: neither): multiplier 2^30 with exponent 0, the one of the
  /// larger input scale whenever Prepare made the params (its real multiplier is exactly 1/2).
  int shifted_input = 0;
};

/// Whether a folded input step is a << 14 for every int16 a: t = a 2^14 + ((a 0 + 2^15) >> 16) = a 2^14, exponent 0.
constexpr bool is_shift_by_14(const add_input_16& f) noexcept {
  return f.high == 1 << 14 && f.low == 0 && f.low_offset == 1 << 15 && f.exponent == 0;
}

template <rounding R>
constexpr add_scales_16x8 add_scales_16x8_of(const reference::add_params_16& p) noexcept {
  add_scales_16x8 s{.general = reference::add_scales_16_of<R>(p)};
  const auto input_folds = [](requant_scale in) {
    return in.multiplier >= 0 && (R == rounding::tflite_reference ? in.left_shift == 0 : in.right_shift >= 31);
  };
  if (!input_folds(s.general.input1) || !input_folds(s.general.input2) || !folds<R>(s.general.output)) return s;
  s.input1 = add_input_16_of<R>(s.general.input1);
  s.input2 = add_input_16_of<R>(s.general.input2);
  // Each step is monotone in its input (M >= 0): its extremes are at -32768 and 32767.
  const auto largest = [](const add_input_16& f) {
    const std::int64_t low = add_input_step(-32768, f), high = add_input_step(32767, f);
    return std::max(low < 0 ? -low : low, high < 0 ? -high : high);
  };
  if (largest(s.input1) + largest(s.input2) > (std::int64_t{1} << 30)) return s;
  s.output = fold_scale<R>(s.general.output);
  s.folded = true;
  s.shifted_input = is_shift_by_14(s.input1) ? 1 : is_shift_by_14(s.input2) ? 2 : 0;
  return s;
}

/// reference::hard_swish_16_element's four steps in int32 without 64-bit products (`folded`; every multiplier is a Q15
/// mantissa << 16, so each SaturatingRoundingDoublingHighMul of an int16-sized x is floor((x q15 + 2^14) / 2^15)), for
/// a reluish mantissa q > 0 (all make_hard_swish_params_16 makes; y = x q then has x's sign, |y| < 2^30):
///  1. reluish: exponent L > 0 (x << L first): floor((y 2^L + 2^14) / 2^15) = (y + 2^(14-L)) >> (15-L), or y at
///     L = 15. Exponent -r <= 0: RoundingDivideByPOT(floor((y + 2^14) / 2^15), r) merges as in folded_scale into
///     (y + 2^14 + 2^(14+r) - [x < 0] 2^15) >> (15 + r) (single_round: (y + 2^(14+r)) >> (15 + r)); |t| <= 32767, so
///     every r >= 16 gives 0 and r is capped at 16, where the sum still fits int32. Then clamped to int16 and
///     (v + 2^15) >> 1.
///  2. on the output scale: (x m + 2^14) >> 15 (|result| <= 32768).
///  3. the product with the reluish factor f in [0, 32767]: (o f + 2^14) >> 15, |result| <= 32767.
///  4. the output exponent: e > 0 multiplies by 2^31 - 1 after << e, which for |v 2^e| < 2^30 is exactly v << e
///     (both roundings); e <= 0 is RoundingDivideByPOT by -e: (v + 2^(-e-1) - [v < 0]) >> -e. Then clamped to int16.
struct hard_swish_folded_16 {
  std::int32_t reluish_multiplier = 0, reluish_offset = 0, reluish_negative_step = 0, reluish_shift = 0;
  std::int32_t output_multiplier = 0;
  std::int32_t exponent_left = 0, exponent_offset = 0, exponent_negative_step = 0, exponent_right = 0;
};

/// reference::hard_swish_16_element's four multiplier steps as requant scales: the input to the [-3, 3] Q15 factor,
/// the input to the output scale, the product with the [0, 1] factor (its per-element multiplier is reluish << 16;
/// only the shifts are fixed), and the output exponent: a multiply by 2^31 - 1 with left shift for an exponent above
/// 0, else a rounding right shift by -exponent (`exponent_shift`); and the folded form where `folds`.
struct hard_swish_scales_16 {
  requant_scale reluish{}, to_output{}, product{}, exponent{};
  bool exponent_multiplies = false;
  std::int32_t exponent_shift = 0;
  hard_swish_folded_16 folded{};
  bool folds = false;
};

template <rounding R>
constexpr hard_swish_folded_16 hard_swish_folded_16_of(const reference::hard_swish_params_16& p) noexcept {
  hard_swish_folded_16 f{.reluish_multiplier = p.reluish_multiplier, .output_multiplier = p.output_multiplier};
  if (p.reluish_exponent > 0) {
    const std::int32_t left = p.reluish_exponent;
    f.reluish_offset = left < 15 ? 1 << (14 - left) : 0;
    f.reluish_shift = left < 15 ? 15 - left : 0;
  } else {
    const std::int32_t right = std::min(-p.reluish_exponent, 16);
    const bool reference_rounding = R == rounding::tflite_reference;
    f.reluish_offset = (reference_rounding || right == 0 ? 1 << 14 : 0) + (right >= 1 ? 1 << (14 + right) : 0);
    f.reluish_negative_step = reference_rounding && right >= 1 ? -(1 << 15) : 0;
    f.reluish_shift = 15 + right;
  }
  if (p.output_exponent > 0) {
    f.exponent_left = p.output_exponent;
  } else {
    f.exponent_right = -p.output_exponent;
    f.exponent_offset = f.exponent_right >= 1 ? 1 << (f.exponent_right - 1) : 0;
    f.exponent_negative_step = f.exponent_right >= 1 ? -1 : 0;
  }
  return f;
}

template <rounding R>
constexpr hard_swish_scales_16 hard_swish_scales_16_of(const reference::hard_swish_params_16& p) noexcept {
  const auto q31 = [](std::int16_t q15) { return static_cast<std::int32_t>(q15) * (1 << 16); };
  const bool folds = p.reluish_multiplier > 0 && p.reluish_exponent <= 15 && p.output_exponent <= 15 &&
                     p.reluish_exponent >= -31 && p.output_exponent >= -31;
  return {.reluish = prepare_scale<R>({q31(p.reluish_multiplier), p.reluish_exponent}),
          .to_output = prepare_scale<R>({q31(p.output_multiplier), 0}),
          .product = prepare_scale<R>({0, 0}),
          .exponent = prepare_scale<R>({std::numeric_limits<std::int32_t>::max(), p.output_exponent}),
          .exponent_multiplies = p.output_exponent > 0,
          .exponent_shift = p.output_exponent > 0 ? 0 : -p.output_exponent,
          .folded = folds ? hard_swish_folded_16_of<R>(p) : hard_swish_folded_16{},
          .folds = folds};
}

/// reference::logistic_16_element's input step and sigmoid table as the lanes read them: entry i packs table[i] (low
/// 16 bits) and the step to table[i + 1] (high 16 bits, >= 0: the table rises); entry 255 is the saturated value 65534
/// with step 0 (65534 << 9 == 0x7FFF << 10), so an index clamped to 255 needs no branch.
struct logistic_table_16 {
  std::array<std::uint32_t, 256> entries{};
  std::int32_t input_multiplier = 0, input_left_shift = 0, rounding_term = 0;
};

inline logistic_table_16 logistic_table_16_of(const reference::logistic_params_16& p) noexcept {
  logistic_table_16 t{.entries = {},
                      .input_multiplier = p.input_multiplier,
                      .input_left_shift = p.input_left_shift,
                      .rounding_term = p.input_left_shift > 0 ? 1 << (p.input_left_shift - 1) : 0};
  const auto& q16 = reference::detail::sigmoid_table_q16;
  for (std::size_t i = 0; i < 255; ++i) t.entries[i] = q16[i] | (std::uint32_t{q16[i + 1]} - q16[i]) << 16;
  t.entries[255] = 65534;
  return t;
}

/// One output pixel's Q10 weights of reference::detail::resize_bilinear_q10: rows (top, bottom) and columns (left,
/// right); each pair sums to 1024, a weight may be negative or above 1024 at a half-pixel edge.
struct bilinear_weights {
  std::int32_t top = 0, bottom = 0, left = 0, right = 0;
};

/// The four taps of one output pixel, each a run of the pixel's channels.
struct bilinear_taps {
  const std::int16_t *top_left = nullptr, *bottom_left = nullptr, *top_right = nullptr, *bottom_right = nullptr;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16
