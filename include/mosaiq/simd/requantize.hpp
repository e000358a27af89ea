// Span-level requantization for the ISA this translation unit is compiled for. Kernels use the
// register-level functions in x86.hpp / neon.hpp inside their loops; these span functions serve
// kernels' tails and prove the register functions equal to the scalar twins.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/scalar.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd {

/// out[i] = MultiplyByQuantizedMultiplier(x[i], scales[i]) with the native ISA.
template <rounding Mode>
inline void multiply_by_quantized_multiplier(const std::int32_t* x, requant_scales_view s, std::int32_t* out,
                                             std::size_t n) noexcept {
  std::size_t i = 0;
  if constexpr (native_isa == isa::avx512 || native_isa == isa::avx512_vnni) {
#if MOSAIQ_TARGET_AVX512
    for (; i + 16 <= n; i += 16) {
      const auto load = [i](const std::int32_t* p) { return _mm512_loadu_si512(p + i); };
      _mm512_storeu_si512(out + i, avx512::multiply_by_quantized_multiplier<Mode>(
                                       load(x), load(s.multiplier), load(s.left_shift), load(s.right_shift)));
    }
#endif
  } else if constexpr (native_isa == isa::avx2 || native_isa == isa::avx2_vnni) {
#if MOSAIQ_TARGET_AVX2
    for (; i + 8 <= n; i += 8) {
      const auto load = [i](const std::int32_t* p) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      };
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                          avx2::multiply_by_quantized_multiplier<Mode>(load(x), load(s.multiplier), load(s.left_shift),
                                                                       load(s.right_shift)));
    }
#endif
  } else if constexpr (native_isa == isa::neon) {
#if MOSAIQ_TARGET_NEON
    for (; i + 4 <= n; i += 4) {
      vst1q_s32(out + i, neon::multiply_by_quantized_multiplier<Mode>(vld1q_s32(x + i), vld1q_s32(s.multiplier + i),
                                                                      vld1q_s32(s.left_shift + i),
                                                                      vld1q_s32(s.right_shift + i)));
    }
#endif
  }
  scalar::multiply_by_quantized_multiplier<Mode>(x + i, {s.multiplier + i, s.left_shift + i, s.right_shift + i},
                                                 out + i, n - i);
}

/// out[i] = clamp(MultiplyByQuantizedMultiplier(acc[i], scales[i]) + zero_point) as 8-bit elements.
template <rounding Mode, quantized_element T>
inline void requantize(const std::int32_t* acc, requant_scales_view s, std::int32_t output_zero_point,
                       std::int32_t clamp_min, std::int32_t clamp_max, T* out, std::size_t n) noexcept {
  std::size_t i = 0;
  if constexpr (native_isa == isa::avx512 || native_isa == isa::avx512_vnni) {
#if MOSAIQ_TARGET_AVX512
    const __m512i zp = _mm512_set1_epi32(output_zero_point), lo = _mm512_set1_epi32(clamp_min),
                  hi = _mm512_set1_epi32(clamp_max);
    for (; i + 16 <= n; i += 16) {
      const auto load = [i](const std::int32_t* p) { return _mm512_loadu_si512(p + i); };
      const __m512i v = avx512::requantize_epi32<Mode>(load(acc), load(s.multiplier), load(s.left_shift),
                                                       load(s.right_shift), zp, lo, hi);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(v));
    }
#endif
  } else if constexpr (native_isa == isa::avx2 || native_isa == isa::avx2_vnni) {
#if MOSAIQ_TARGET_AVX2
    const __m256i zp = _mm256_set1_epi32(output_zero_point), lo = _mm256_set1_epi32(clamp_min),
                  hi = _mm256_set1_epi32(clamp_max);
    for (; i + 8 <= n; i += 8) {
      const auto load = [i](const std::int32_t* p) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      };
      avx2::store_low_bytes(out + i, avx2::requantize_epi32<Mode>(load(acc), load(s.multiplier), load(s.left_shift),
                                                                  load(s.right_shift), zp, lo, hi));
    }
#endif
  } else if constexpr (native_isa == isa::neon) {
#if MOSAIQ_TARGET_NEON
    const int32x4_t zp = vdupq_n_s32(output_zero_point), lo = vdupq_n_s32(clamp_min), hi = vdupq_n_s32(clamp_max);
    for (; i + 8 <= n; i += 8) {
      const auto lanes = [&](std::size_t j) {
        return neon::requantize_s32<Mode>(vld1q_s32(acc + j), vld1q_s32(s.multiplier + j), vld1q_s32(s.left_shift + j),
                                          vld1q_s32(s.right_shift + j), zp, lo, hi);
      };
      // Values are already clamped to the element range, so plain narrowing is exact.
      const int16x8_t narrow = vcombine_s16(vmovn_s32(lanes(i)), vmovn_s32(lanes(i + 4)));
      if constexpr (element_traits<T>::is_signed)
        vst1_s8(reinterpret_cast<std::int8_t*>(out + i), vmovn_s16(narrow));
      else
        vst1_u8(reinterpret_cast<std::uint8_t*>(out + i), vmovn_u16(vreinterpretq_u16_s16(narrow)));
    }
#endif
  }
  scalar::requantize<Mode, T>(acc + i, {s.multiplier + i, s.left_shift + i, s.right_shift + i}, output_zero_point,
                              clamp_min, clamp_max, out + i, n - i);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd
