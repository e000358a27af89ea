// NEON lane functions for requantization. vqrdmulh is exactly gemmlowp's
// SaturatingRoundingDoublingHighMul; RoundingDivideByPOT needs gemmlowp's sign fix-up before the
// rounding shift because vrshl rounds ties up, not away from zero. Scalar twins in scalar.hpp.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

#include <arm_neon.h>

#include <cstdint>

#include "mosaiq/simd/scalar.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd::neon {

inline int32x4_t rounding_divide_by_pot(int32x4_t x, int32x4_t exponent) noexcept {
  const int32x4_t shift = vnegq_s32(exponent);
  const int32x4_t fixup = vshrq_n_s32(vandq_s32(x, shift), 31);
  return vrshlq_s32(vqaddq_s32(x, fixup), shift);
}

#if MOSAIQ_TARGET_NEON64
inline int64x2_t rounding_shift_right_s64(int64x2_t v, int64x2_t count) noexcept {
  return vrshlq_s64(v, vnegq_s64(count));
}
#else
inline int64x2_t rounding_shift_right_s64(int64x2_t v, int64x2_t count) noexcept {
  return vrshlq_s64(v, vsubq_s64(vdupq_n_s64(0), count));
}
#endif

template <rounding Mode>
inline int32x4_t multiply_by_quantized_multiplier(int32x4_t x, int32x4_t multiplier, int32x4_t left_shift,
                                                  int32x4_t right_shift) noexcept {
  if constexpr (Mode == rounding::tflite_reference) {
    return rounding_divide_by_pot(vqrdmulhq_s32(vshlq_s32(x, left_shift), multiplier), right_shift);
  } else {
    // vrshl on 64-bit lanes adds 2^(total-1) and shifts arithmetically: one rounding, ties up.
    const int64x2_t low = rounding_shift_right_s64(vmull_s32(vget_low_s32(x), vget_low_s32(multiplier)),
                                                   vmovl_s32(vget_low_s32(right_shift)));
    const int64x2_t high = rounding_shift_right_s64(vmull_s32(vget_high_s32(x), vget_high_s32(multiplier)),
                                                    vmovl_s32(vget_high_s32(right_shift)));
    return vcombine_s32(vmovn_s64(low), vmovn_s64(high));
  }
}

template <rounding Mode>
inline int32x4_t requantize_s32(int32x4_t acc, int32x4_t multiplier, int32x4_t left_shift, int32x4_t right_shift,
                                int32x4_t output_zero_point, int32x4_t clamp_min, int32x4_t clamp_max) noexcept {
  const int32x4_t v =
      vaddq_s32(multiply_by_quantized_multiplier<Mode>(acc, multiplier, left_shift, right_shift), output_zero_point);
  return vminq_s32(vmaxq_s32(v, clamp_min), clamp_max);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd::neon

#endif  // MOSAIQ_TARGET_NEON
