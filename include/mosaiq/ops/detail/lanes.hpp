// Blocks of 16 8-bit elements widened to int32 lanes, per ISA: the integer and float arithmetic the element-wise
// and pooling kernels (ops/eltwise.hpp, ops/pool.hpp) share. A block is 1 zmm (AVX-512), 2 ymm (AVX2) or 4 q
// registers (NEON, aarch64 and armv7). MOSAIQ_LANES is defined when an ISA is available; without it (scalar builds)
// the kernels call the reference ops.
//
// Every operation is exact two's complement / IEEE single arithmetic, so a kernel written on these functions computes
// what its scalar formula computes on every ISA. The requantization steps are the lane functions of simd/x86.hpp and
// simd/neon.hpp, proven equal to core/quant.hpp by tests/quant_test.cpp.
#pragma once

#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/x86.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::lanes {

#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define MOSAIQ_LANES 1
struct isa {
  using reg = __m512i;
  using freg = __m512;
  static constexpr int regs = 1;  // registers per block of 16 elements

  template <class T>
  static void widen(const T* p, reg* r) noexcept {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (element_traits<T>::is_signed)
      r[0] = _mm512_cvtepi8_epi32(bytes);
    else
      r[0] = _mm512_cvtepu8_epi32(bytes);
  }
  /// Values must already be in T's range.
  template <class T>
  static void narrow(T* p, const reg* r) noexcept {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(r[0]));
  }
  /// 16 int32 values.
  static void load(const std::int32_t* p, reg* r) noexcept { r[0] = _mm512_loadu_si512(p); }
  static reg set1(std::int32_t v) noexcept { return _mm512_set1_epi32(v); }
  static reg zero() noexcept { return _mm512_setzero_si512(); }
  static reg add(reg a, reg b) noexcept { return _mm512_add_epi32(a, b); }
  static reg sub(reg a, reg b) noexcept { return _mm512_sub_epi32(a, b); }
  static reg min(reg a, reg b) noexcept { return _mm512_min_epi32(a, b); }
  static reg max(reg a, reg b) noexcept { return _mm512_max_epi32(a, b); }
  static reg abs(reg a) noexcept { return _mm512_abs_epi32(a); }
  static reg mullo(reg a, reg b) noexcept { return _mm512_mullo_epi32(a, b); }
  static reg bxor(reg a, reg b) noexcept { return _mm512_xor_si512(a, b); }
  static reg shift_left(reg a, int n) noexcept { return _mm512_sll_epi32(a, _mm_cvtsi32_si128(n)); }
  static reg sign(reg a) noexcept { return _mm512_srai_epi32(a, 31); }  // -1 for negative lanes, else 0
  static reg greater(reg a, reg b) noexcept { return _mm512_movm_epi32(_mm512_cmpgt_epi32_mask(a, b)); }  // -1 / 0
  template <rounding R>
  static reg multiply(reg x, reg multiplier, reg left_shift, reg right_shift) noexcept {
    return simd::avx512::multiply_by_quantized_multiplier<R>(x, multiplier, left_shift, right_shift);
  }

  static freg fset1(float v) noexcept { return _mm512_set1_ps(v); }
  static freg to_float(reg a) noexcept { return _mm512_cvtepi32_ps(a); }
  static reg truncate(freg a) noexcept { return _mm512_cvttps_epi32(a); }
  static freg fadd(freg a, freg b) noexcept { return _mm512_add_ps(a, b); }
  static freg fsub(freg a, freg b) noexcept { return _mm512_sub_ps(a, b); }
  static freg fmul(freg a, freg b) noexcept { return _mm512_mul_ps(a, b); }
  static freg fmin(freg a, freg b) noexcept { return _mm512_min_ps(a, b); }
  static freg fmax(freg a, freg b) noexcept { return _mm512_max_ps(a, b); }
  static reg fgreater_equal(freg a, freg b) noexcept { return _mm512_movm_epi32(_mm512_cmp_ps_mask(a, b, _CMP_GE_OQ)); }
};
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX2__)
#define MOSAIQ_LANES 1
struct isa {
  using reg = __m256i;
  using freg = __m256;
  static constexpr int regs = 2;

  template <class T>
  static void widen(const T* p, reg* r) noexcept {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (element_traits<T>::is_signed) {
      r[0] = _mm256_cvtepi8_epi32(bytes);
      r[1] = _mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8));
    } else {
      r[0] = _mm256_cvtepu8_epi32(bytes);
      r[1] = _mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8));
    }
  }
  template <class T>
  static void narrow(T* p, const reg* r) noexcept {
    simd::avx2::store_low_bytes(p, r[0]);
    simd::avx2::store_low_bytes(p + 8, r[1]);
  }
  static void load(const std::int32_t* p, reg* r) noexcept {
    r[0] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    r[1] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 8));
  }
  static reg set1(std::int32_t v) noexcept { return _mm256_set1_epi32(v); }
  static reg zero() noexcept { return _mm256_setzero_si256(); }
  static reg add(reg a, reg b) noexcept { return _mm256_add_epi32(a, b); }
  static reg sub(reg a, reg b) noexcept { return _mm256_sub_epi32(a, b); }
  static reg min(reg a, reg b) noexcept { return _mm256_min_epi32(a, b); }
  static reg max(reg a, reg b) noexcept { return _mm256_max_epi32(a, b); }
  static reg abs(reg a) noexcept { return _mm256_abs_epi32(a); }
  static reg mullo(reg a, reg b) noexcept { return _mm256_mullo_epi32(a, b); }
  static reg bxor(reg a, reg b) noexcept { return _mm256_xor_si256(a, b); }
  static reg shift_left(reg a, int n) noexcept { return _mm256_sll_epi32(a, _mm_cvtsi32_si128(n)); }
  static reg sign(reg a) noexcept { return _mm256_srai_epi32(a, 31); }
  static reg greater(reg a, reg b) noexcept { return _mm256_cmpgt_epi32(a, b); }
  template <rounding R>
  static reg multiply(reg x, reg multiplier, reg left_shift, reg right_shift) noexcept {
    return simd::avx2::multiply_by_quantized_multiplier<R>(x, multiplier, left_shift, right_shift);
  }

  static freg fset1(float v) noexcept { return _mm256_set1_ps(v); }
  static freg to_float(reg a) noexcept { return _mm256_cvtepi32_ps(a); }
  static reg truncate(freg a) noexcept { return _mm256_cvttps_epi32(a); }
  static freg fadd(freg a, freg b) noexcept { return _mm256_add_ps(a, b); }
  static freg fsub(freg a, freg b) noexcept { return _mm256_sub_ps(a, b); }
  static freg fmul(freg a, freg b) noexcept { return _mm256_mul_ps(a, b); }
  static freg fmin(freg a, freg b) noexcept { return _mm256_min_ps(a, b); }
  static freg fmax(freg a, freg b) noexcept { return _mm256_max_ps(a, b); }
  static reg fgreater_equal(freg a, freg b) noexcept { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_GE_OQ)); }
};
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(__ARM_NEON)
#define MOSAIQ_LANES 1
struct isa {
  using reg = int32x4_t;
  using freg = float32x4_t;
  static constexpr int regs = 4;

  template <class T>
  static void widen(const T* p, reg* r) noexcept {
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
  template <class T>
  static void narrow(T* p, const reg* r) noexcept {
    const int16x8_t lo = vcombine_s16(vmovn_s32(r[0]), vmovn_s32(r[1]));
    const int16x8_t hi = vcombine_s16(vmovn_s32(r[2]), vmovn_s32(r[3]));
    if constexpr (element_traits<T>::is_signed)
      vst1q_s8(reinterpret_cast<std::int8_t*>(p), vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
    else
      vst1q_u8(reinterpret_cast<std::uint8_t*>(p),
               vcombine_u8(vmovn_u16(vreinterpretq_u16_s16(lo)), vmovn_u16(vreinterpretq_u16_s16(hi))));
  }
  static void load(const std::int32_t* p, reg* r) noexcept {
    for (int j = 0; j < regs; ++j) r[j] = vld1q_s32(p + 4 * j);
  }
  static reg set1(std::int32_t v) noexcept { return vdupq_n_s32(v); }
  static reg zero() noexcept { return vdupq_n_s32(0); }
  static reg add(reg a, reg b) noexcept { return vaddq_s32(a, b); }
  static reg sub(reg a, reg b) noexcept { return vsubq_s32(a, b); }
  static reg min(reg a, reg b) noexcept { return vminq_s32(a, b); }
  static reg max(reg a, reg b) noexcept { return vmaxq_s32(a, b); }
  static reg abs(reg a) noexcept { return vabsq_s32(a); }
  static reg mullo(reg a, reg b) noexcept { return vmulq_s32(a, b); }
  static reg bxor(reg a, reg b) noexcept { return veorq_s32(a, b); }
  static reg shift_left(reg a, int n) noexcept { return vshlq_s32(a, vdupq_n_s32(n)); }
  static reg sign(reg a) noexcept { return vshrq_n_s32(a, 31); }
  static reg greater(reg a, reg b) noexcept { return vreinterpretq_s32_u32(vcgtq_s32(a, b)); }
  template <rounding R>
  static reg multiply(reg x, reg multiplier, reg left_shift, reg right_shift) noexcept {
    return simd::neon::multiply_by_quantized_multiplier<R>(x, multiplier, left_shift, right_shift);
  }

  static freg fset1(float v) noexcept { return vdupq_n_f32(v); }
  static freg to_float(reg a) noexcept { return vcvtq_f32_s32(a); }
  static reg truncate(freg a) noexcept { return vcvtq_s32_f32(a); }
  static freg fadd(freg a, freg b) noexcept { return vaddq_f32(a, b); }
  static freg fsub(freg a, freg b) noexcept { return vsubq_f32(a, b); }
  static freg fmul(freg a, freg b) noexcept { return vmulq_f32(a, b); }
  static freg fmin(freg a, freg b) noexcept { return vminq_f32(a, b); }
  static freg fmax(freg a, freg b) noexcept { return vmaxq_f32(a, b); }
  static reg fgreater_equal(freg a, freg b) noexcept { return vreinterpretq_s32_u32(vcgeq_f32(a, b)); }
};
#endif

#if defined(MOSAIQ_LANES)
using reg = isa::reg;
using freg = isa::freg;
inline constexpr int block = 16;  // elements per block

/// One multiplier broadcast to every lane, for isa::multiply.
struct scale_regs {
  reg multiplier, left_shift, right_shift;
  static scale_regs of(requant_scale s) noexcept {
    return {isa::set1(s.multiplier), isa::set1(s.left_shift), isa::set1(s.right_shift)};
  }
};

/// round(v) half away from zero (std::round), clamped to [-2^24, 2^24], as int32. Clamping first changes nothing:
/// floats beyond 2^23 are integers. v - trunc(v) is exact, so the tie test is exact.
[[gnu::always_inline]] inline reg round_half_away(freg v) noexcept {
  const freg limit = isa::fset1(16777216.0f);
  v = isa::fmin(isa::fmax(v, isa::fsub(isa::fset1(0.0f), limit)), limit);
  reg t = isa::truncate(v);
  const freg fraction = isa::fsub(v, isa::to_float(t));
  t = isa::sub(t, isa::fgreater_equal(fraction, isa::fset1(0.5f)));   // +1 at fraction >= 1/2
  t = isa::add(t, isa::fgreater_equal(isa::fset1(-0.5f), fraction));  // -1 at fraction <= -1/2
  return t;
}

/// Divisor d >= 1 of rounded_divide, in the forms the vector division uses.
struct divisor_regs {
  reg d, d_minus_one, half;
  freg reciprocal;
  static divisor_regs of(std::int32_t d) noexcept {
    return {isa::set1(d), isa::set1(d - 1), isa::set1(d / 2), isa::fset1(1.0f / static_cast<float>(d))};
  }
};

/// reference::detail::rounded_divide(sum, d) = sign(sum) * floor((|sum| + d/2) / d), for |sum| + d/2 < 2^24: the
/// float quotient (|sum| + d/2) * fl(1/d) is within one of the exact one, and the remainder corrects it.
[[gnu::always_inline]] inline reg rounded_divide(reg sum, const divisor_regs& d) noexcept {
  const reg numerator = isa::add(isa::abs(sum), d.half);
  reg q = isa::truncate(isa::fmul(isa::to_float(numerator), d.reciprocal));
  const reg remainder = isa::sub(numerator, isa::mullo(q, d.d));
  q = isa::sub(q, isa::greater(remainder, d.d_minus_one));  // remainder >= d: one more
  q = isa::add(q, isa::greater(isa::zero(), remainder));    // remainder < 0: one less
  const reg negative = isa::sign(sum);
  return isa::sub(isa::bxor(q, negative), negative);
}
#endif

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::lanes
