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
