// 16x8 pointwise microkernel, AVX-512 paths: the AVX2 path's pairs on zmm, one vector per 16 channels, and with
// AVX-512 VNNI vpdpwssd (the pair products and their sum into the accumulator in one instruction).
#pragma once

#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/pointwise16x8/tile.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX512

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16 {

template <bool Vnni>
struct avx512_path {
  static constexpr int taps = 2;
  // 8 accumulators of 32 zmm registers, the weights and broadcasts beside them.
  static constexpr int default_tile_pixels = 8;

  [[gnu::always_inline]] static __m512i multiply_add(__m512i acc, __m512i x, __m512i w) noexcept {
#if MOSAIQ_TARGET_AVX512_VNNI
    if constexpr (Vnni) return _mm512_dpwssd_epi32(acc, x, w);
#endif
    return _mm512_add_epi32(acc, _mm512_madd_epi16(x, w));
  }

  /// Channels: the block's channels in the layer (one zmm holds the whole block; the store is masked).
  template <int MR, int Channels = block>
  static void tile(const tile_job& job) noexcept {
    __m512i acc[MR];
    const __m512i bias = _mm512_loadu_si512(job.bias);
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) acc[p] = bias;
    const int pairs = job.input_channels / 2;
    const std::int16_t* w = job.weights;
    for (int k = 0; k < pairs; ++k, w += 2 * block) {
      const __m512i wk = _mm512_loadu_si512(w);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p)
        acc[p] = multiply_add(acc[p], _mm512_set1_epi32(load_pair(job.input + p * job.input_stride + 2 * k)), wk);
    }
    if (job.input_channels % 2 != 0) {
      // The last channel alone (its pair partner's weights are 0): never read past the pixel.
      const __m512i wk = _mm512_loadu_si512(w);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const auto last = static_cast<std::uint16_t>(job.input[p * job.input_stride + job.input_channels - 1]);
        acc[p] = multiply_add(acc[p], _mm512_set1_epi32(last), wk);
      }
    }
    const __m512i zero = _mm512_setzero_si512(), lo = _mm512_set1_epi32(job.clamp_min),
                  hi = _mm512_set1_epi32(job.clamp_max);
    const __m512i m = _mm512_loadu_si512(job.multiplier), s = _mm512_loadu_si512(job.right_shift);
    const auto mask = static_cast<__mmask16>((1u << job.valid_channels) - 1);
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) {
      // Clamped into int16 already: the truncating narrow is exact.
      const __m256i values = _mm512_cvtepi32_epi16(
          simd::avx512::requantize_epi32<rounding::single_round>(acc[p], m, zero, s, zero, lo, hi));
      _mm256_mask_storeu_epi16(job.out + p * job.out_stride, mask, values);
    }
  }
};

template <>
struct path_for<simd::isa::avx512> : simd::use_path<avx512_path<false>> {};
template <>
struct path_for<simd::isa::avx512_vnni> : simd::use_path<avx512_path<true>> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16

#endif  // MOSAIQ_TARGET_AVX512
