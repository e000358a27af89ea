// The AVX2 requantize-and-store steps the depthwise and pointwise AVX2 microkernels share.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2

#include <cstdint>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel {

/// multiply_by_quantized_multiplier of channels c..c+7 of a job: with the job's per-lane folded constants where it
/// has them (pointwise, reference rounding: one 64-bit product per lane), else the general lane multiply.
template <rounding R, class Job>
[[gnu::always_inline]] inline __m256i scale_pair_sums(__m256i total, const Job& job, int c) noexcept {
  if constexpr (R == rounding::tflite_reference && requires { job.lanes8; }) {
    if (job.lanes8 != nullptr)
      return simd::avx2::multiply_by_nonnegative_multiplier(
          total, static_cast<const simd::avx2::requant_lanes8*>(job.lanes8)[c / 8]);
  }
  const auto load = [](const std::int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  return simd::avx2::multiply_by_quantized_multiplier<R>(total, load(job.multiplier + c), load(job.left_shift + c),
                                                         load(job.right_shift + c));
}

/// AVX2 paths: 16 channels held as (taps 01, taps 23) pair sums, channels 4q..4q+3 in acc[q], plus
/// `offset` and the job's bias from channel c0, requantized to 16 bytes in one vector (Halves = 1: the first 8
/// only, the other 8 bytes zero). One vector, not two 8-byte stores: a 16-byte load of two fresh 8-byte stores
/// misses store forwarding.
template <rounding R, class Job, int Halves = 2>
[[gnu::always_inline]] inline __m128i requantize_pair_sums(const __m256i acc[4], __m256i offset, const Job& job, int c0,
                                                           __m256i zp, __m256i lo, __m256i hi) noexcept {
  const auto load = [](const std::int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  __m128i halves[2] = {_mm_setzero_si128(), _mm_setzero_si128()};
#pragma GCC unroll 2
  for (int half = 0; half < Halves; ++half) {
    // hadd leaves channels as [0 1 4 5 | 2 3 6 7]; the 64-bit permute restores the order.
    const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[2 * half], acc[2 * half + 1]), 0b11011000);
    const int c = c0 + half * 8;
    const __m256i total = _mm256_add_epi32(_mm256_add_epi32(sums, offset), load(job.bias + c));
    const __m256i v = _mm256_add_epi32(scale_pair_sums<R>(total, job, c), zp);
    halves[half] = simd::avx2::low_bytes(_mm256_min_epi32(_mm256_max_epi32(v, lo), hi));
  }
  return _mm_unpacklo_epi64(halves[0], halves[1]);
}

/// Stores the first `count` of 16 requantized channels: one 16-byte store when all are wanted.
[[gnu::always_inline]] inline void store_channels(void* out, __m128i bytes, int count) noexcept {
  if (count >= 16) {
    _mm_storeu_si128(static_cast<__m128i*>(out), bytes);
    return;
  }
  alignas(16) std::uint8_t staged[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(staged), bytes);
  std::memcpy(out, staged, static_cast<std::size_t>(count));
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel

#endif  // MOSAIQ_TARGET_AVX2
