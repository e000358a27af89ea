// 16x8 pointwise microkernel, AVX2 path (AVX2 and AVX-VNNI builds): vpmaddwd on int16 pairs. A broadcast dword holds
// two consecutive input channels (x_k, x_k+1) of one pixel; the packed weights hold, per output channel, the same two
// taps as int16; one vpmaddwd gives x_k w_k + x_k+1 w_k+1 for 8 channels, added to that pixel's accumulators.
// Pair sums are at most 2 * 32768 * 128 = 2^24, and the front end runs this path only where every channel's
// accumulator provably fits int32.
#pragma once

#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/pointwise16x8/tile.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX2

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16 {

namespace detail {
/// Requantizes 16 accumulators (two ymm) with the block's single-rounding scales and stores them as int16.
[[gnu::always_inline]] inline void requantize_store_avx2(const tile_job& job, __m256i acc_low, __m256i acc_high,
                                                         std::int16_t* out) noexcept {
  const __m256i zero = _mm256_setzero_si256(), lo = _mm256_set1_epi32(job.clamp_min),
                hi = _mm256_set1_epi32(job.clamp_max);
  const auto requantize = [&](__m256i acc, int c) {
    const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.multiplier + c));
    const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.right_shift + c));
    return simd::avx2::requantize_epi32<rounding::single_round>(acc, m, zero, s, zero, lo, hi);
  };
  // The clamp keeps every lane in int16, so the saturating pack is exact; it interleaves 128-bit lanes, the
  // permute restores channel order.
  const __m256i packed =
      _mm256_permute4x64_epi64(_mm256_packs_epi32(requantize(acc_low, 0), requantize(acc_high, 8)), 0xD8);
  if (job.valid_channels == block) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed);
  } else {
    alignas(32) std::int16_t values[block];
    _mm256_store_si256(reinterpret_cast<__m256i*>(values), packed);
    store_partial(out, values, job.valid_channels);
  }
}
}  // namespace detail

struct avx2_path {
  static constexpr int taps = 2;
  // 4 pixels: 8 accumulators, 2 weight vectors and a broadcast stay within the 16 ymm registers.
  static constexpr int default_tile_pixels = 4;

  template <int MR>
  static void tile(const tile_job& job) noexcept {
    __m256i acc[MR][2];
    const __m256i bias_low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.bias));
    const __m256i bias_high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.bias + 8));
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) acc[p][0] = bias_low, acc[p][1] = bias_high;
    const int pairs = job.input_channels / 2;
    const std::int16_t* w = job.weights;
    for (int k = 0; k < pairs; ++k, w += 2 * block) {
      const __m256i w_low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
      const __m256i w_high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + block));
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const __m256i x = _mm256_set1_epi32(load_pair(job.input + p * job.input_stride + 2 * k));
        acc[p][0] = _mm256_add_epi32(acc[p][0], _mm256_madd_epi16(x, w_low));
        acc[p][1] = _mm256_add_epi32(acc[p][1], _mm256_madd_epi16(x, w_high));
      }
    }
    if (job.input_channels % 2 != 0) {
      // The last channel alone (its pair partner's weights are 0): never read past the pixel.
      const __m256i w_low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
      const __m256i w_high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + block));
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const auto last = static_cast<std::uint16_t>(job.input[p * job.input_stride + job.input_channels - 1]);
        const __m256i x = _mm256_set1_epi32(last);
        acc[p][0] = _mm256_add_epi32(acc[p][0], _mm256_madd_epi16(x, w_low));
        acc[p][1] = _mm256_add_epi32(acc[p][1], _mm256_madd_epi16(x, w_high));
      }
    }
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) detail::requantize_store_avx2(job, acc[p][0], acc[p][1], job.out + p * job.out_stride);
  }
};

template <>
struct path_for<simd::isa::avx2> : simd::use_path<avx2_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16

#endif  // MOSAIQ_TARGET_AVX2
