// The lane family's NEON functions xsimd 8.1 lacks (aarch64 and armv7), the xsimd way: overloads taking the arch
// tag (xsimd::neon; xsimd::neon64 derives from it, so aarch64 resolves to them too unless a neon64 overload is
// closer). simd/lanes.hpp calls them with the native arch; nothing else does.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

#include <arm_neon.h>

#include <cstdint>
#include <xsimd/xsimd.hpp>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/neon.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace lanes::kernel {

template <class A>
using int32s = xsimd::batch<std::int32_t, A>;

/// 16 bytes widened to 16 int32 (sign- or zero-extended as T): 4 q registers.
template <class T, class A>
[[gnu::always_inline]] inline void widen(const T* p, int32s<A>* r, xsimd::neon) noexcept {
  if constexpr (element_traits<T>::is_signed) {
    const int8x16_t bytes = vld1q_s8(reinterpret_cast<const std::int8_t*>(p));
    const int16x8_t lo = vmovl_s8(vget_low_s8(bytes)), hi = vmovl_s8(vget_high_s8(bytes));
    r[0] = vmovl_s16(vget_low_s16(lo));
    r[1] = vmovl_s16(vget_high_s16(lo));
    r[2] = vmovl_s16(vget_low_s16(hi));
    r[3] = vmovl_s16(vget_high_s16(hi));
  } else {
    const uint8x16_t bytes = vld1q_u8(reinterpret_cast<const std::uint8_t*>(p));
    const uint16x8_t lo = vmovl_u8(vget_low_u8(bytes)), hi = vmovl_u8(vget_high_u8(bytes));
    r[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
    r[1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(lo)));
    r[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
    r[3] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(hi)));
  }
}

/// The low byte of each of 16 int32 (already in T's range).
template <class T, class A>
[[gnu::always_inline]] inline void narrow(T* p, const int32s<A>* r, xsimd::neon) noexcept {
  const int16x8_t lo = vcombine_s16(vmovn_s32(r[0]), vmovn_s32(r[1]));
  const int16x8_t hi = vcombine_s16(vmovn_s32(r[2]), vmovn_s32(r[3]));
  if constexpr (element_traits<T>::is_signed)
    vst1q_s8(reinterpret_cast<std::int8_t*>(p), vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
  else
    vst1q_u8(reinterpret_cast<std::uint8_t*>(p),
             vcombine_u8(vmovn_u16(vreinterpretq_u16_s16(lo)), vmovn_u16(vreinterpretq_u16_s16(hi))));
}

/// 16 int16 widened to 16 int32: 4 q registers.
template <class A>
[[gnu::always_inline]] inline void widen_16(const std::int16_t* p, int32s<A>* r, xsimd::neon) noexcept {
  const int16x8_t lo = vld1q_s16(p), hi = vld1q_s16(p + 8);
  r[0] = vmovl_s16(vget_low_s16(lo));
  r[1] = vmovl_s16(vget_high_s16(lo));
  r[2] = vmovl_s16(vget_low_s16(hi));
  r[3] = vmovl_s16(vget_high_s16(hi));
}

/// 16 int32 (already in int16's range) stored as int16.
template <class A>
[[gnu::always_inline]] inline void narrow_16(std::int16_t* p, const int32s<A>* r, xsimd::neon) noexcept {
  vst1q_s16(p, vcombine_s16(vmovn_s32(r[0]), vmovn_s32(r[1])));
  vst1q_s16(p + 8, vcombine_s16(vmovn_s32(r[2]), vmovn_s32(r[3])));
}

/// -1 in the lanes where the mask is set, else 0: the compare result reinterpreted.
template <class A>
[[gnu::always_inline]] inline int32s<A> ones_where(xsimd::batch_bool<std::int32_t, A> m, xsimd::neon) noexcept {
  return vreinterpretq_s32_u32(m.data);
}
template <class A>
[[gnu::always_inline]] inline int32s<A> ones_where(xsimd::batch_bool<float, A> m, xsimd::neon) noexcept {
  return vreinterpretq_s32_u32(m.data);
}

template <rounding R, class A>
[[gnu::always_inline]] inline int32s<A> multiply(int32s<A> x, int32s<A> multiplier, int32s<A> left_shift,
                                                 int32s<A> right_shift, xsimd::neon) noexcept {
  return simd::neon::multiply_by_quantized_multiplier<R>(x, multiplier, left_shift, right_shift);
}

template <class A>
[[gnu::always_inline]] inline int32s<A> rounding_divide_by_pot(int32s<A> x, int32s<A> exponent, xsimd::neon) noexcept {
  return simd::neon::rounding_divide_by_pot(x, exponent);
}

/// lanes::multiply_folded: NEON's rounding multiply (vqrdmulh and a rounding shift, or one 64-bit rounding shift) is
/// already short, so the multiplier is applied unfolded: the same value over the fold's domain.
template <rounding R, class A>
[[gnu::always_inline]] inline int32s<A> multiply_folded(int32s<A> x, std::int32_t multiplier, std::int32_t exponent,
                                                        std::int64_t, std::int64_t, xsimd::neon) noexcept {
  const std::int32_t right_shift = R == rounding::tflite_reference ? exponent : 31 + exponent;
  return simd::neon::multiply_by_quantized_multiplier<R>(x, vdupq_n_s32(multiplier), vdupq_n_s32(0),
                                                         vdupq_n_s32(right_shift));
}

/// table[index] per lane: NEON has no gather, so four scalar loads.
template <class A>
[[gnu::always_inline]] inline int32s<A> gather(const std::uint32_t* table, int32s<A> index, xsimd::neon) noexcept {
  alignas(16) std::int32_t at[4], values[4];
  index.store_aligned(at);
  for (int i = 0; i < 4; ++i) values[i] = static_cast<std::int32_t>(table[at[i]]);
  return int32s<A>::load_aligned(values);
}

/// 1 / float(d), correctly rounded: armv7 NEON has no vector division (xsimd's estimate plus Newton steps is not
/// correctly rounded), so four scalar divisions; aarch64 has vdivq.
template <class A>
[[gnu::always_inline]] inline xsimd::batch<float, A> reciprocal(int32s<A> d, xsimd::neon) noexcept {
#if MOSAIQ_TARGET_NEON64
  return vdivq_f32(vdupq_n_f32(1.0f), vcvtq_f32_s32(d));
#else
  alignas(16) float v[4];
  vst1q_f32(v, vcvtq_f32_s32(d));
  for (float& x : v) x = 1.0f / x;
  return vld1q_f32(v);
#endif
}

}  // namespace lanes::kernel
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_NEON
