// Quantization parameters, TFLite's QuantizeMultiplier, and requantization in the two rounding
// modes mosaiq supports. Everything here is the scalar definition; simd/ has vector twins that
// the tests prove bit-identical.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// real = (q - zero_point) * scale
struct quant_params {
  float scale = 1.0f;
  std::int32_t zero_point = 0;
  friend constexpr bool operator==(const quant_params&, const quant_params&) = default;
};

/// How an int32 accumulator is scaled back to 8 bits. A compile-time choice.
enum class rounding {
  /// TFLite reference kernels (gemmlowp): SaturatingRoundingDoublingHighMul (ties up), then
  /// RoundingDivideByPOT (ties away from zero). Bit-exact with TFLite's BUILTIN_REF kernels.
  tflite_reference,
  /// TFLITE_SINGLE_ROUNDING / ruy: one 64-bit multiply and one rounding shift (ties up).
  single_round,
};

/// A real multiplier as Q31 fixed point times a power of two: real ≈ multiplier * 2^(shift-31).
struct quantized_multiplier {
  std::int32_t multiplier = 0;
  int shift = 0;
  friend constexpr bool operator==(const quantized_multiplier&, const quantized_multiplier&) = default;
};

/// Whether a real multiplier derived from float scales can be requantized with: finite and non-negative. Scales
/// that pass their own checks still overflow to infinity in a float quotient (1 / 1e-45) or product (1e30 * 1e30).
inline bool is_usable_real_multiplier(double real_multiplier) noexcept {
  return std::isfinite(real_multiplier) && real_multiplier >= 0.0;
}

/// What quantize_multiplier returns for a real multiplier that is not usable: is_valid_multiplier() rejects it in
/// both rounding modes, so every entry point that checks the pair refuses it with its invalid_argument error.
inline constexpr quantized_multiplier unusable_multiplier{0, std::numeric_limits<int>::max()};

/// TFLite's QuantizeMultiplier: frexp, std::round (ties away), the 2^31 carry, scales below
/// 2^-32 flush to zero. In single_round mode shifts above 30 saturate as TFLite's build does.
/// NaN, infinite and negative inputs give unusable_multiplier (TFLite's cast of q * 2^31 to int64
/// is undefined for them).
template <rounding Mode = rounding::tflite_reference>
inline quantized_multiplier quantize_multiplier(double real_multiplier) noexcept {
  if (!is_usable_real_multiplier(real_multiplier)) return unusable_multiplier;
  if (real_multiplier == 0.0) return {0, 0};
  int shift = 0;
  const double q = std::frexp(real_multiplier, &shift);
  auto q_fixed = static_cast<std::int64_t>(std::round(q * static_cast<double>(std::int64_t{1} << 31)));
  if (q_fixed == (std::int64_t{1} << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) {
    shift = 0;
    q_fixed = 0;
  }
  if constexpr (Mode == rounding::single_round) {
    if (shift > 30) {
      shift = 30;
      q_fixed = (std::int64_t{1} << 31) - 1;
    }
  }
  return {static_cast<std::int32_t>(q_fixed), shift};
}

/// Effective conv multiplier as TFLite derives it. Per-channel (int8): double products.
inline double conv_real_multiplier_per_channel(float input_scale, float filter_scale, float output_scale) noexcept {
  return static_cast<double>(input_scale) * static_cast<double>(filter_scale) / static_cast<double>(output_scale);
}
/// Per-tensor uint8 (GetQuantizedConvolutionMultipler): the input*filter product is a float first.
inline double conv_real_multiplier_per_tensor(float input_scale, float filter_scale, float output_scale) noexcept {
  return static_cast<double>(input_scale * filter_scale) / static_cast<double>(output_scale);
}

/// gemmlowp SaturatingRoundingDoublingHighMul: floor((a*b + 2^30) / 2^31), saturating only for
/// a == b == INT32_MIN.
constexpr std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) noexcept {
  if (a == b && a == std::numeric_limits<std::int32_t>::min()) return std::numeric_limits<std::int32_t>::max();
  const std::int64_t ab = static_cast<std::int64_t>(a) * b;
  const std::int64_t nudge = ab >= 0 ? (std::int64_t{1} << 30) : (1 - (std::int64_t{1} << 30));
  return static_cast<std::int32_t>((ab + nudge) / (std::int64_t{1} << 31));
}

/// gemmlowp RoundingDivideByPOT: x / 2^exponent rounded half away from zero, exponent in [0, 31].
constexpr std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) noexcept {
  const std::int32_t mask = static_cast<std::int32_t>((std::int64_t{1} << exponent) - 1);
  const std::int32_t remainder = x & mask;
  const std::int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/// A multiplier decoded once (at load time) into the shifts the hot loop uses.
/// tflite_reference: left_shift = max(shift, 0), right_shift = max(-shift, 0), both in [0, 31].
/// single_round: left_shift = 0, right_shift = 31 - shift, in [1, 62].
struct requant_scale {
  std::int32_t multiplier = 0;
  std::int32_t left_shift = 0;
  std::int32_t right_shift = 0;
  friend constexpr bool operator==(const requant_scale&, const requant_scale&) = default;
};

template <rounding Mode>
constexpr requant_scale prepare_scale(quantized_multiplier q) noexcept {
  if constexpr (Mode == rounding::tflite_reference)
    return {q.multiplier, q.shift > 0 ? q.shift : 0, q.shift < 0 ? -q.shift : 0};
  else
    return {q.multiplier, 0, 31 - q.shift};
}

/// Whether a (multiplier, shift) pair is inside the domain both modes define.
constexpr bool is_valid_multiplier(quantized_multiplier q) noexcept { return q.shift >= -31 && q.shift <= 30; }

/// TFLite MultiplyByQuantizedMultiplier. Overflow follows what TFLite's release builds do on
/// every target: the left shift and the final narrowing wrap modulo 2^32 (the SIMD twins do the
/// same), so results never depend on the ISA.
template <rounding Mode>
constexpr std::int32_t multiply_by_quantized_multiplier(std::int32_t x, requant_scale s) noexcept {
  if constexpr (Mode == rounding::tflite_reference) {
    const auto shifted = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << s.left_shift);
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, s.multiplier), s.right_shift);
  } else {
    const std::int64_t round = std::int64_t{1} << (s.right_shift - 1);
    const std::int64_t product = static_cast<std::int64_t>(x) * s.multiplier + round;
    return static_cast<std::int32_t>(product >> s.right_shift);
  }
}

template <rounding Mode>
constexpr std::int32_t multiply_by_quantized_multiplier(std::int32_t x, quantized_multiplier q) noexcept {
  return multiply_by_quantized_multiplier<Mode>(x, prepare_scale<Mode>(q));
}

/// Accumulator to output element: scale, add the output zero point, clamp to the fused range.
template <rounding Mode, quantized_element T>
constexpr T requantize(std::int32_t acc, requant_scale s, std::int32_t output_zero_point, std::int32_t clamp_min,
                       std::int32_t clamp_max) noexcept {
  // The zero-point add wraps like the SIMD adds do (only reachable with out-of-range scales).
  std::int32_t v =
      static_cast<std::int32_t>(static_cast<std::uint32_t>(multiply_by_quantized_multiplier<Mode>(acc, s)) +
                                static_cast<std::uint32_t>(output_zero_point));
  v = v < clamp_min ? clamp_min : v;
  v = v > clamp_max ? clamp_max : v;
  return static_cast<T>(v);
}

/// Quantize a real value with round-half-away (TFLite's Quantize helper); i16 is the 16x8 mode's (zero point 0).
template <network_element T>
inline T quantize_value(float real, quant_params p) noexcept {
  const float q = static_cast<float>(p.zero_point) + std::round(real / p.scale);
  const float lo = static_cast<float>(element_traits<T>::min), hi = static_cast<float>(element_traits<T>::max);
  return static_cast<T>(static_cast<std::int32_t>(q < lo ? lo : q > hi ? hi : q));
}

template <network_element T>
constexpr float dequantize_value(T q, quant_params p) noexcept {
  return p.scale * static_cast<float>(static_cast<std::int32_t>(q) - p.zero_point);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
