// 16x8 depthwise microkernels, AVX-512 paths: one zmm per block of 16 channels, vpermt2w interleaving two taps'
// channels into (x_t[c], x_t+1[c]) int32 lanes in channel order, then vpmaddwd + vpaddd, or with AVX-512 VNNI
// vpdpwssd (the pair products and their sum into the accumulator in one instruction). Masked loads and stores
// keep a block's tail inside the pixel.
#pragma once

#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/depthwise16x8/pixel.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX512

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16 {

template <bool Vnni>
struct avx512_path {
  static constexpr int group_taps = 2;
  static constexpr slot_order order = natural_order;

 private:
  [[gnu::always_inline]] static __m512i multiply_add(__m512i acc, __m512i x, __m512i w) noexcept {
#if MOSAIQ_TARGET_AVX512_VNNI
    if constexpr (Vnni) return _mm512_dpwssd_epi32(acc, x, w);
#endif
    return _mm512_add_epi32(acc, _mm512_madd_epi16(x, w));
  }

  /// 16 channels of a tap from c0 in the low half of a zmm (`mask`: the block's channels), zeros for a padding tap.
  template <bool Edge>
  [[gnu::always_inline]] static __m512i load_tap(const std::int16_t* pixel, int c0, __mmask32 mask) noexcept {
    if constexpr (Edge)
      if (pixel == nullptr) return _mm512_setzero_si512();
    return _mm512_maskz_loadu_epi16(mask, pixel + c0);
  }

 public:
  /// The block of 16 channels from b * 16 of one pixel (Whole), else its first `count` channels.
  template <int Taps, bool Edge, bool Whole>
  [[gnu::always_inline]] static void channel_block(const pixel_job& job, int b, int count) noexcept {
    const int c0 = b * block;
    const std::int16_t* w = job.weights + b * job.block_weights;
    const auto mask = static_cast<__mmask32>(Whole ? 0xFFFFu : (1u << count) - 1);
    // Word i of the result: channel i / 2 of the first tap (even i) or of the second (odd i).
    const __m512i interleave = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38,
                                                6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
    __m512i acc = _mm512_loadu_si512(job.bias + c0);
#pragma GCC unroll 32
    for (int t = 0; t < Taps; t += 2, w += 2 * block) {
      const __m512i a = load_tap<Edge>(job.taps[t], c0, mask);
      const __m512i next = t + 1 < Taps ? load_tap<Edge>(job.taps[t + 1], c0, mask) : _mm512_setzero_si512();
      acc = multiply_add(acc, _mm512_permutex2var_epi16(a, interleave, next), _mm512_loadu_si512(w));
    }
    const __m512i zero = _mm512_setzero_si512(), lo = _mm512_set1_epi32(job.clamp_min),
                  hi = _mm512_set1_epi32(job.clamp_max);
    const __m512i m = _mm512_loadu_si512(job.multiplier + c0), s = _mm512_loadu_si512(job.right_shift + c0);
    // Clamped into int16 already: the truncating narrow is exact.
    const __m256i values =
        _mm512_cvtepi32_epi16(simd::avx512::requantize_epi32<rounding::single_round>(acc, m, zero, s, zero, lo, hi));
    _mm256_mask_storeu_epi16(job.out + c0, static_cast<__mmask16>(mask), values);
  }
};

template <>
struct path_for<simd::isa::avx512> : simd::use_path<avx512_path<false>> {};
template <>
struct path_for<simd::isa::avx512_vnni> : simd::use_path<avx512_path<true>> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16

#endif  // MOSAIQ_TARGET_AVX512
