// 16x8 element-wise kernels, scalar path: add and mul through the reference's element functions (reference/int16.hpp),
// hard swish, logistic and bilinear resize on the decoded scales, packed table and int32 split, step for step as the
// SIMD path computes them. Built
// on every target: the scalar build's path and the twin the SIMD path is tested against.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/eltwise16x8/scales.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16::scalar {

/// reference::add_16_element through the folded steps (add_input_step, multiply_folded) where they apply.
template <rounding R>
constexpr std::int16_t add_element(std::int16_t a, std::int16_t b, const add_scales_16x8& s) noexcept {
  if (!s.folded) return reference::add_16_element<R>(a, b, s.general);
  const std::int32_t sum = add_input_step(a, s.input1) + add_input_step(b, s.input2);
  return static_cast<std::int16_t>(
      std::clamp(multiply_folded(sum, s.output), s.general.clamp.min, s.general.clamp.max));
}

template <rounding R>
void add_span(const std::int16_t* a, const std::int16_t* b, std::int16_t* out, std::size_t n,
              const add_scales_16x8& s) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = add_element<R>(a[i], b[i], s);
}

/// reference::mul_16_element with the output multiplier folded where it folds.
template <rounding R>
constexpr std::int16_t mul_element(std::int16_t a, std::int16_t b, const mul_scales_16& s) noexcept {
  if (!s.output_folds) return reference::mul_16_element<R>(a, b, s.output, s.clamp);
  return static_cast<std::int16_t>(
      std::clamp(multiply_folded(std::int32_t{a} * b, s.folded), s.clamp.min, s.clamp.max));
}

template <rounding R>
void mul_span(const std::int16_t* a, const std::int16_t* b, std::int16_t* out, std::size_t n,
              const mul_scales_16& s) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = mul_element<R>(a[i], b[i], s);
}

/// hard_swish_folded_16's four int32 steps, as the SIMD path computes them.
constexpr std::int16_t hard_swish_folded_element(std::int16_t x, const hard_swish_folded_16& f) noexcept {
  const std::int32_t wide = x;
  const std::int32_t reluish_wide =
      (wide * f.reluish_multiplier + f.reluish_offset + (wide < 0 ? f.reluish_negative_step : 0)) >> f.reluish_shift;
  const std::int32_t reluish = (std::clamp<std::int32_t>(reluish_wide, -32768, 32767) + (1 << 15)) >> 1;
  const std::int32_t on_output = (wide * f.output_multiplier + (1 << 14)) >> 15;
  const std::int32_t product = (on_output * reluish + (1 << 14)) >> 15;
  const std::int32_t output =
      ((product << f.exponent_left) + f.exponent_offset + (product < 0 ? f.exponent_negative_step : 0)) >>
      f.exponent_right;
  return static_cast<std::int16_t>(std::clamp<std::int32_t>(output, -32768, 32767));
}

/// reference::hard_swish_16_element on the decoded scales, step for step as the SIMD path computes it.
template <rounding R>
constexpr std::int16_t hard_swish_element(std::int16_t x, const hard_swish_scales_16& s) noexcept {
  if (s.folds) return hard_swish_folded_element(x, s.folded);
  const std::int32_t reluish_wide = multiply_by_quantized_multiplier<R>(x, s.reluish);
  const std::int32_t reluish = (std::clamp<std::int32_t>(reluish_wide, -32768, 32767) + (1 << 15)) >> 1;
  const std::int32_t on_output = multiply_by_quantized_multiplier<R>(x, s.to_output);
  std::int32_t output = multiply_by_quantized_multiplier<R>(
      on_output, requant_scale{reluish * (1 << 16), s.product.left_shift, s.product.right_shift});
  output = s.exponent_multiplies ? multiply_by_quantized_multiplier<R>(output, s.exponent)
                                 : rounding_divide_by_pot(output, s.exponent_shift);
  return static_cast<std::int16_t>(std::clamp<std::int32_t>(output, -32768, 32767));
}

template <rounding R>
void hard_swish_span(const std::int16_t* in, std::int16_t* out, std::size_t n, const hard_swish_scales_16& s) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = hard_swish_element<R>(in[i], s);
}

/// reference::logistic_16_element on the packed table, step for step as the SIMD path computes it.
constexpr std::int16_t logistic_element(std::int16_t x, const logistic_table_16& t) noexcept {
  const std::int32_t input = (std::int32_t{x} * t.input_multiplier + t.rounding_term) >> t.input_left_shift;
  const std::int32_t magnitude = input < 0 ? -input : input;
  const std::uint32_t entry = t.entries[static_cast<std::size_t>(std::min(magnitude >> 9, 255))];
  const auto q25 = static_cast<std::int32_t>(((entry & 0xFFFFu) << 9) + (magnitude & 0x1FF) * (entry >> 16));
  return static_cast<std::int16_t>((input >= 0 ? q25 + (1 << 9) : (1 << 25) - q25 + (1 << 9) - 1) >> 10);
}

inline void logistic_span(const std::int16_t* in, std::int16_t* out, std::size_t n,
                          const logistic_table_16& t) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = logistic_element(in[i], t);
}

/// reference::detail::resize_bilinear_q10's int64 Q20 sum and rounding in int32 steps, as the SIMD path computes
/// them: each column's vertical sum t (|t| < 2^26) split as (t >> 10) * 1024 + (t & 1023), so the Q20 sum is
/// high * 1024 + low with both parts in int32; then floor((high * 1024 + low + r) / 2^20) =
/// (high + ((low + r) >> 10)) >> 10, r = 2^19 (ties up), or 2^19 - [sum <= 0] for ties away from zero (C division
/// truncates the negative sums), the sum's sign read from high + ((low - 1) >> 10) >= 0.
template <rounding R>
constexpr std::int16_t bilinear_element(std::int32_t top_left, std::int32_t bottom_left, std::int32_t top_right,
                                        std::int32_t bottom_right, const bilinear_weights& w) noexcept {
  const std::int32_t left = top_left * w.top + bottom_left * w.bottom,
                     right = top_right * w.top + bottom_right * w.bottom;
  const std::int32_t high = (left >> 10) * w.left + (right >> 10) * w.right;
  const std::int32_t low = (left & 1023) * w.left + (right & 1023) * w.right;
  std::int32_t offset = 1 << 19;
  if constexpr (R == rounding::tflite_reference)
    if (high + ((low - 1) >> 10) < 0) offset -= 1;  // sum <= 0
  return static_cast<std::int16_t>((high + ((low + offset) >> 10)) >> 10);
}

template <rounding R>
void bilinear_span(const bilinear_taps& taps, const bilinear_weights& w, std::int16_t* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = bilinear_element<R>(taps.top_left[i], taps.bottom_left[i], taps.top_right[i], taps.bottom_right[i], w);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16::scalar

#if MOSAIQ_TARGET_SCALAR
namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16 {
/// The spans a scalar build runs (SIMD builds: ops/eltwise16x8/simd.hpp's vector spans).
namespace native = scalar;
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16
#endif  // MOSAIQ_TARGET_SCALAR
