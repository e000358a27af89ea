// The lane family's x86 functions xsimd 8.1 lacks, the xsimd way: overloads of one name taking the arch tag
// (xsimd::avx2, xsimd::avx512bw) last. simd/lanes.hpp calls them with the native arch; nothing else does.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2

#include <immintrin.h>

#include <cstdint>
#include <xsimd/xsimd.hpp>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace lanes::kernel {

// --- AVX2: a block of 16 elements is 2 ymm ---

/// 16 bytes widened to 16 int32 (sign- or zero-extended as T).
template <class T>
[[gnu::always_inline]] inline void widen(const T* p, xsimd::batch<std::int32_t, xsimd::avx2>* r, xsimd::avx2) noexcept {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (element_traits<T>::is_signed) {
    r[0] = _mm256_cvtepi8_epi32(bytes);
    r[1] = _mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8));
  } else {
    r[0] = _mm256_cvtepu8_epi32(bytes);
    r[1] = _mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8));
  }
}

/// The low byte of each of 16 int32 (already in T's range).
template <class T>
[[gnu::always_inline]] inline void narrow(T* p, const xsimd::batch<std::int32_t, xsimd::avx2>* r,
                                          xsimd::avx2) noexcept {
  simd::avx2::store_low_bytes(p, r[0]);
  simd::avx2::store_low_bytes(p + 8, r[1]);
}

/// 16 int16 widened to 16 int32.
[[gnu::always_inline]] inline void widen_16(const std::int16_t* p, xsimd::batch<std::int32_t, xsimd::avx2>* r,
                                            xsimd::avx2) noexcept {
  r[0] = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  r[1] = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
}

/// 16 int32 (already in int16's range) stored as int16: packs works per 128-bit half, the permute restores the order.
[[gnu::always_inline]] inline void narrow_16(std::int16_t* p, const xsimd::batch<std::int32_t, xsimd::avx2>* r,
                                             xsimd::avx2) noexcept {
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi32(r[0], r[1]), 0xD8);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), packed);
}

/// -1 in the lanes where the mask is set, else 0: the compare result itself.
[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx2> ones_where(
    xsimd::batch_bool<std::int32_t, xsimd::avx2> m, xsimd::avx2) noexcept {
  return __m256i(m);
}
[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx2> ones_where(
    xsimd::batch_bool<float, xsimd::avx2> m, xsimd::avx2) noexcept {
  return _mm256_castps_si256(__m256(m));
}

template <rounding R>
[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx2> multiply(
    xsimd::batch<std::int32_t, xsimd::avx2> x, xsimd::batch<std::int32_t, xsimd::avx2> multiplier,
    xsimd::batch<std::int32_t, xsimd::avx2> left_shift, xsimd::batch<std::int32_t, xsimd::avx2> right_shift,
    xsimd::avx2) noexcept {
  return simd::avx2::multiply_by_quantized_multiplier<R>(x, multiplier, left_shift, right_shift);
}

[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx2> rounding_divide_by_pot(
    xsimd::batch<std::int32_t, xsimd::avx2> x, xsimd::batch<std::int32_t, xsimd::avx2> exponent, xsimd::avx2) noexcept {
  return simd::avx2::rounding_divide_by_pot(x, exponent);
}

/// floor((x * multiplier + offset) / 2^(31 + exponent)), offset the nonnegative or negative one by the product's sign,
/// as lanes::multiply_folded states: two vpmuldq, the offset picked by the product's sign bit (vblendvpd), bits 31..62
/// of each sum (which fit int32 in its domain), then one arithmetic shift by the exponent.
template <rounding R>
[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx2> multiply_folded(
    xsimd::batch<std::int32_t, xsimd::avx2> x, std::int32_t multiplier, std::int32_t exponent,
    std::int64_t offset_nonnegative, std::int64_t offset_negative, xsimd::avx2) noexcept {
  const __m256i m = _mm256_set1_epi32(multiplier);
  __m256i even = _mm256_mul_epi32(x, m);
  __m256i odd = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), m);
  const __m256i nonnegative = _mm256_set1_epi64x(offset_nonnegative);
  if constexpr (R == rounding::tflite_reference) {
    const __m256d up = _mm256_castsi256_pd(nonnegative),
                  down = _mm256_castsi256_pd(_mm256_set1_epi64x(offset_negative));
    even = _mm256_add_epi64(even, _mm256_castpd_si256(_mm256_blendv_pd(up, down, _mm256_castsi256_pd(even))));
    odd = _mm256_add_epi64(odd, _mm256_castpd_si256(_mm256_blendv_pd(up, down, _mm256_castsi256_pd(odd))));
  } else {
    even = _mm256_add_epi64(even, nonnegative);
    odd = _mm256_add_epi64(odd, nonnegative);
  }
  const __m256i floor31 = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0b10101010);
  return _mm256_sra_epi32(floor31, _mm_cvtsi32_si128(exponent));
}

/// table[index] per lane (vpgatherdd).
[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx2> gather(
    const std::uint32_t* table, xsimd::batch<std::int32_t, xsimd::avx2> index, xsimd::avx2) noexcept {
  return _mm256_i32gather_epi32(reinterpret_cast<const int*>(table), index, 4);
}

/// 1 / float(d), correctly rounded.
[[gnu::always_inline]] inline xsimd::batch<float, xsimd::avx2> reciprocal(xsimd::batch<std::int32_t, xsimd::avx2> d,
                                                                          xsimd::avx2) noexcept {
  return xsimd::batch<float, xsimd::avx2>(1.0f) / xsimd::batch_cast<float>(d);
}

}  // namespace lanes::kernel
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#if MOSAIQ_TARGET_AVX512

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace lanes::kernel {

// --- AVX-512 (F, BW, VL, DQ): a block of 16 elements is 1 zmm ---

template <class T>
[[gnu::always_inline]] inline void widen(const T* p, xsimd::batch<std::int32_t, xsimd::avx512bw>* r,
                                         xsimd::avx512bw) noexcept {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (element_traits<T>::is_signed)
    r[0] = _mm512_cvtepi8_epi32(bytes);
  else
    r[0] = _mm512_cvtepu8_epi32(bytes);
}

template <class T>
[[gnu::always_inline]] inline void narrow(T* p, const xsimd::batch<std::int32_t, xsimd::avx512bw>* r,
                                          xsimd::avx512bw) noexcept {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(r[0]));
}

[[gnu::always_inline]] inline void widen_16(const std::int16_t* p, xsimd::batch<std::int32_t, xsimd::avx512bw>* r,
                                            xsimd::avx512bw) noexcept {
  r[0] = _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

[[gnu::always_inline]] inline void narrow_16(std::int16_t* p, const xsimd::batch<std::int32_t, xsimd::avx512bw>* r,
                                             xsimd::avx512bw) noexcept {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r[0]));
}

/// AVX-512 compares give mask registers: vpmovm2d spreads them to lanes.
[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx512bw> ones_where(
    xsimd::batch_bool<std::int32_t, xsimd::avx512bw> m, xsimd::avx512bw) noexcept {
  return _mm512_movm_epi32(m.data);
}
[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx512bw> ones_where(
    xsimd::batch_bool<float, xsimd::avx512bw> m, xsimd::avx512bw) noexcept {
  return _mm512_movm_epi32(m.data);
}

template <rounding R>
[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx512bw> multiply(
    xsimd::batch<std::int32_t, xsimd::avx512bw> x, xsimd::batch<std::int32_t, xsimd::avx512bw> multiplier,
    xsimd::batch<std::int32_t, xsimd::avx512bw> left_shift, xsimd::batch<std::int32_t, xsimd::avx512bw> right_shift,
    xsimd::avx512bw) noexcept {
  return simd::avx512::multiply_by_quantized_multiplier<R>(x, multiplier, left_shift, right_shift);
}

[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx512bw> rounding_divide_by_pot(
    xsimd::batch<std::int32_t, xsimd::avx512bw> x, xsimd::batch<std::int32_t, xsimd::avx512bw> exponent,
    xsimd::avx512bw) noexcept {
  return simd::avx512::rounding_divide_by_pot(x, exponent);
}

/// lanes::multiply_folded on 16 lanes: the AVX2 form, the offset picked by the product's sign mask (vpmovq2m).
template <rounding R>
[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx512bw> multiply_folded(
    xsimd::batch<std::int32_t, xsimd::avx512bw> x, std::int32_t multiplier, std::int32_t exponent,
    std::int64_t offset_nonnegative, std::int64_t offset_negative, xsimd::avx512bw) noexcept {
  const __m512i m = _mm512_set1_epi32(multiplier);
  __m512i even = _mm512_mul_epi32(x, m);
  __m512i odd = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), m);
  const __m512i nonnegative = _mm512_set1_epi64(offset_nonnegative);
  if constexpr (R == rounding::tflite_reference) {
    const __m512i negative = _mm512_set1_epi64(offset_negative);
    even = _mm512_add_epi64(even, _mm512_mask_blend_epi64(_mm512_movepi64_mask(even), nonnegative, negative));
    odd = _mm512_add_epi64(odd, _mm512_mask_blend_epi64(_mm512_movepi64_mask(odd), nonnegative, negative));
  } else {
    even = _mm512_add_epi64(even, nonnegative);
    odd = _mm512_add_epi64(odd, nonnegative);
  }
  const __m512i floor31 = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
  return _mm512_sra_epi32(floor31, _mm_cvtsi32_si128(exponent));
}

[[gnu::always_inline]] inline xsimd::batch<std::int32_t, xsimd::avx512bw> gather(
    const std::uint32_t* table, xsimd::batch<std::int32_t, xsimd::avx512bw> index, xsimd::avx512bw) noexcept {
  return _mm512_i32gather_epi32(index, table, 4);
}

[[gnu::always_inline]] inline xsimd::batch<float, xsimd::avx512bw> reciprocal(
    xsimd::batch<std::int32_t, xsimd::avx512bw> d, xsimd::avx512bw) noexcept {
  return xsimd::batch<float, xsimd::avx512bw>(1.0f) / xsimd::batch_cast<float>(d);
}

}  // namespace lanes::kernel
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX512
#endif  // MOSAIQ_TARGET_AVX2
