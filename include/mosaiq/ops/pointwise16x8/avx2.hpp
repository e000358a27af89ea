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
/// Requantizes a pixel's accumulators of one block (Halves of 8 channels: 2, or 1 where the layer's last block has
/// at most 8) with the block's single-rounding scales and stores them as int16.
template <int Halves>
[[gnu::always_inline]] inline void requantize_store_avx2(const tile_job& job, const __m256i (&acc)[2],
                                                         std::int16_t* out) noexcept {
  const __m256i zero = _mm256_setzero_si256(), lo = _mm256_set1_epi32(job.clamp_min),
                hi = _mm256_set1_epi32(job.clamp_max);
  const auto requantize = [&](__m256i v, int c) {
    const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.multiplier + c));
    const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.right_shift + c));
    return simd::avx2::requantize_epi32<rounding::single_round>(v, m, zero, s, zero, lo, hi);
  };
  const __m256i low = requantize(acc[0], 0), high = Halves == 2 ? requantize(acc[1], 8) : low;
  // The clamp keeps every lane in int16, so the saturating pack is exact; it interleaves 128-bit lanes, the
  // permute restores channel order (with one half, channels 0-7 in the low 128 bits).
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi32(low, high), 0xD8);
  if (job.valid_channels == 8 * Halves) {
    if constexpr (Halves == 2)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed);
    else
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
  } else {
    alignas(32) std::int16_t values[block];
    _mm256_store_si256(reinterpret_cast<__m256i*>(values), packed);
    store_partial(out, values, job.valid_channels);
  }
}
}  // namespace detail

struct avx2_path {
  static constexpr int taps = 2;
  // 5 pixels: 10 accumulators, 2 weight vectors and a broadcast stay within the 16 ymm registers; of 3-6 pixels
  // it was the fastest or as fast on the selfie shapes (docs/decisions.md, "The 16x8 pointwise kernel").
  static constexpr int default_tile_pixels = 5;

  /// Channels: how many of the block's 16 the layer has (compile time); at most 8 computes one half.
  template <int MR, int Channels = block>
  static void tile(const tile_job& job) noexcept {
    constexpr int halves = Channels > 8 ? 2 : 1;
    __m256i acc[MR][2];
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p)
#pragma GCC unroll 2
      for (int h = 0; h < halves; ++h)
        acc[p][h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.bias + 8 * h));
    // Explicit loops, no lambda over acc: GCC 12 keeps a lambda-captured accumulator array in memory.
    const int pairs = job.input_channels / 2;
    const std::int16_t* w = job.weights;
    for (int k = 0; k < pairs; ++k, w += 2 * block) {
      __m256i wk[2];
#pragma GCC unroll 2
      for (int h = 0; h < halves; ++h) wk[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16 * h));
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const __m256i x = _mm256_set1_epi32(load_pair(job.input + p * job.input_stride + 2 * k));
#pragma GCC unroll 2
        for (int h = 0; h < halves; ++h) acc[p][h] = _mm256_add_epi32(acc[p][h], _mm256_madd_epi16(x, wk[h]));
      }
    }
    if (job.input_channels % 2 != 0) {
      // The last channel alone (its pair partner's weights are 0): never read past the pixel.
      __m256i wk[2];
#pragma GCC unroll 2
      for (int h = 0; h < halves; ++h) wk[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16 * h));
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const __m256i x =
            _mm256_set1_epi32(static_cast<std::uint16_t>(job.input[p * job.input_stride + job.input_channels - 1]));
#pragma GCC unroll 2
        for (int h = 0; h < halves; ++h) acc[p][h] = _mm256_add_epi32(acc[p][h], _mm256_madd_epi16(x, wk[h]));
      }
    }
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) detail::requantize_store_avx2<halves>(job, acc[p], job.out + p * job.out_stride);
  }
};

template <>
struct path_for<simd::isa::avx2> : simd::use_path<avx2_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16

#endif  // MOSAIQ_TARGET_AVX2
