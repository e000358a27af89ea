// 16x8 depthwise microkernel, AVX2 path (AVX2 and AVX-VNNI builds): vpmaddwd on pairs of taps. Two taps' inputs of
// 16 channels interleaved by vpunpck{l,h}wd hold (x_t[c], x_t+1[c]) per int32 lane; the packed weights hold the same
// two taps of that lane's channel as int16, so one vpmaddwd adds two taps for 8 channels. The interleave leaves
// channels 0-3, 8-11 in one accumulator and 4-7, 12-15 in the other (the slot order the front end packs with), which
// vpackssdw puts back into channel order. Pair sums are at most 2 * 32768 * 128 = 2^24, and the front end runs this
// path only where every channel's accumulator provably fits int32.
#pragma once

#include <cstdint>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/depthwise16x8/pixel.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX2

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16 {

struct avx2_path {
  static constexpr int group_taps = 2;
  static constexpr slot_order order = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};

 private:
  /// 16 channels of a tap from c0 (Whole), else `count` of them and zeros: never a read past the pixel.
  template <bool Edge, bool Whole>
  [[gnu::always_inline]] static __m256i load_tap(const std::int16_t* pixel, int c0, int count) noexcept {
    if constexpr (Edge)
      if (pixel == nullptr) return _mm256_setzero_si256();
    if constexpr (Whole) {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pixel + c0));
    } else {
      if (count == 8) return _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pixel + c0)));
      alignas(32) std::int16_t values[block] = {};
      std::memcpy(values, pixel + c0, static_cast<std::size_t>(count) * sizeof(std::int16_t));
      return _mm256_load_si256(reinterpret_cast<const __m256i*>(values));
    }
  }

 public:
  /// The block of 16 channels from b * 16 of one pixel (Whole), else its first `count` channels.
  template <int Taps, bool Edge, bool Whole>
  [[gnu::always_inline]] static void channel_block(const pixel_job& job, int b, int count) noexcept {
    const int c0 = b * block;
    const std::int16_t* w = job.weights + b * job.block_weights;
    __m256i acc_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.bias + c0));
    __m256i acc_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.bias + c0 + 8));
#pragma GCC unroll 32
    for (int t = 0; t < Taps; t += 2, w += 2 * block) {
      const __m256i a = load_tap<Edge, Whole>(job.taps[t], c0, count);
      const __m256i next = t + 1 < Taps ? load_tap<Edge, Whole>(job.taps[t + 1], c0, count) : _mm256_setzero_si256();
      acc_lo = _mm256_add_epi32(acc_lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, next),
                                                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
      acc_hi =
          _mm256_add_epi32(acc_hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, next),
                                                     _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16))));
    }
    const __m256i zero = _mm256_setzero_si256(), lo = _mm256_set1_epi32(job.clamp_min),
                  hi = _mm256_set1_epi32(job.clamp_max);
    const auto requantize = [&](__m256i v, int slot) {
      const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.multiplier + c0 + slot));
      const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.right_shift + c0 + slot));
      return simd::avx2::requantize_epi32<rounding::single_round>(v, m, zero, s, zero, lo, hi);
    };
    // Clamped into int16 already: the saturating pack is exact, and per 128-bit lane it puts slots 0-3 beside 8-11
    // (channels 0-7) and 4-7 beside 12-15 (channels 8-15).
    const __m256i packed = _mm256_packs_epi32(requantize(acc_lo, 0), requantize(acc_hi, 8));
    std::int16_t* out = job.out + c0;
    if constexpr (Whole) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed);
    } else if (count == 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
    } else {
      alignas(32) std::int16_t values[block];
      _mm256_store_si256(reinterpret_cast<__m256i*>(values), packed);
      std::memcpy(out, values, static_cast<std::size_t>(count) * sizeof(std::int16_t));
    }
  }
};

template <>
struct path_for<simd::isa::avx2> : simd::use_path<avx2_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16

#endif  // MOSAIQ_TARGET_AVX2
