// Depthwise microkernel, AVX2 path (also the AVX-512 build without VNNI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/depthwise/row_job.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/ops/detail/common/avx2.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX2

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace kernels::dw {

// ---------------------------------------------------------------------------------------------
// x86: the tap-group build is a 4-way byte interleave of 16-channel vectors.
[[gnu::always_inline]] inline void interleave_x86(const std::uint8_t* const src[group_taps], std::uint8_t* dst,
                                                  int channels, int padded_channels, std::uint8_t flip) noexcept {
  const __m128i flip_bits = _mm_set1_epi8(static_cast<char>(flip));
  const auto emit = [&](__m128i a, __m128i b, __m128i c, __m128i d, std::uint8_t* out) {
    a = _mm_xor_si128(a, flip_bits), b = _mm_xor_si128(b, flip_bits);
    c = _mm_xor_si128(c, flip_bits), d = _mm_xor_si128(d, flip_bits);
    const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
    const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_unpacklo_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm_unpackhi_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32), _mm_unpacklo_epi16(ab_hi, cd_hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 48), _mm_unpackhi_epi16(ab_hi, cd_hi));
  };
  const auto load = [](const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  int c = 0;
  for (; c + block <= channels; c += block)
    emit(load(src[0] + c), load(src[1] + c), load(src[2] + c), load(src[3] + c), dst + c * group_taps);
  if (c < channels) {
    // Tail: masked loads never touch bytes past the last channel; masked-off lanes read 0.
#if MOSAIQ_TARGET_AVX512
    const __mmask16 mask = static_cast<__mmask16>((1u << (channels - c)) - 1u);
    const auto partial = [&](const std::uint8_t* p) {
      return _mm_mask_blend_epi8(mask, flip_bits, _mm_maskz_loadu_epi8(mask, p));
    };
#else
    const auto partial = [&](const std::uint8_t* p) {
      alignas(16) std::uint8_t staged[block];
      std::memset(staged, flip, block);
      std::memcpy(staged, p, static_cast<std::size_t>(channels - c));
      return _mm_load_si128(reinterpret_cast<const __m128i*>(staged));
    };
#endif
    emit(partial(src[0] + c), partial(src[1] + c), partial(src[2] + c), partial(src[3] + c), dst + c * group_taps);
    c += block;
  }
  if (c < padded_channels)
    std::memset(dst + c * group_taps, 0, static_cast<std::size_t>(padded_channels - c) * group_taps);
}

/// The AVX2 layer's requantization lanes (a member of depthwise: detail::dw::layer_lanes): under reference rounding,
/// when every multiplier allows it, the folded constants of simd::avx2::requant_lanes8 per 8 padded channels (one
/// 64-bit product per lane instead of the two roundings, as pointwise's AVX2 tile); empty otherwise.
struct avx2_layer_lanes {
  detail::vector<simd::avx2::requant_lanes8> lanes8_;
  /// This job's lanes (row_job::requant_lanes), or null: the general form.
  const void* at(int c0) const noexcept { return lanes8_.empty() ? nullptr : lanes8_.data() + c0 / 8; }
  void choose_lanes8(const std::int32_t* multiplier, const std::int32_t* left_shift, const std::int32_t* right_shift,
                     int padded_channels) {
    lanes8_.clear();
    for (int c = 0; c < padded_channels; ++c)
      if (!simd::avx2::requant_lanes8::supports({multiplier[c], left_shift[c], right_shift[c]})) return;
    lanes8_.assign(static_cast<std::size_t>(padded_channels / 8), {});
    for (int c = 0; c < padded_channels; ++c)
      lanes8_[static_cast<std::size_t>(c / 8)].set_lane(c % 8, {multiplier[c], left_shift[c], right_shift[c]});
  }
};

/// What requantize_pair_sums reads of a row job, with the layer's folded lanes (row_job::requant_lanes) as lanes8.
struct requant_view {
  const std::int32_t* bias;
  const std::int32_t* multiplier;
  const std::int32_t* left_shift;
  const std::int32_t* right_shift;
  const void* lanes8;
};

// AVX2 (also the AVX-512 build without VNNI): x_f widened to int16, vpmaddwd with int16 w'
// (|x_f * w'| <= 255 * 255, pair sums fit int32). Accumulators hold per-channel pair sums
// [c: taps 01, taps 23] that are reduced once per pixel.
struct avx2_path {
  using weight_type = std::int16_t;
  static constexpr int job_channels = block;
  // With 16 ymm registers one pixel per tile: the compiler sums a tile's products as a tree, and the 24 products of
  // two 3x3 pixels spill with the epilogue's constants (docs/decisions.md, "the tile's pixels per step").
  // AVX-512 builds without VNNI (32 registers, not measured) keep two.
  static constexpr int default_tile_w = MOSAIQ_TARGET_AVX512 ? 2 : 1;
  static constexpr bool uses_vnni = false;
#if MOSAIQ_TARGET_AVX512
  static constexpr bool folds_requant = false;  // AVX-512 builds without VNNI (not measured): the general form
#else
  static constexpr bool folds_requant = true;  // reference rounding: the layer's requant_lanes8 where it has them
  using layer_lanes = avx2_layer_lanes;
#endif
  [[gnu::always_inline]] static void interleave(const std::uint8_t* const src[group_taps], std::uint8_t* dst,
                                                int channels, int padded_channels, std::uint8_t flip) noexcept {
    interleave_x86(src, dst, channels, padded_channels, flip);
  }

  template <int KH, int G, int TW, rounding R, class T>
  static void tile(const row_job& job, int ox) noexcept {
    const auto* w = static_cast<const weight_type*>(job.weights);
    __m256i acc[TW][4];
    for (int p = 0; p < TW; ++p)
      for (int q = 0; q < 4; ++q) acc[p][q] = _mm256_setzero_si256();
    for (int kr = 0; kr < KH; ++kr)
      for (int g = 0; g < G; ++g) {
        const weight_type* wg = w + (kr * G + g) * block * group_taps;
        for (int q = 0; q < 4; ++q) {
          const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + q * 16));
          for (int p = 0; p < TW; ++p) {
            const std::uint8_t* x = job.rows[kr] + (ox + p) * job.column_stride + g * job.group_stride + q * 16;
            const __m256i x16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
            acc[p][q] = _mm256_add_epi32(acc[p][q], _mm256_madd_epi16(x16, wq));
          }
        }
      }
    if constexpr (folds_requant)
      store_tile<TW, R, T>(
          acc, requant_view{job.bias, job.multiplier, job.left_shift, job.right_shift, job.requant_lanes}, job, ox);
    else
      store_tile<TW, R, T>(acc, job, job, ox);
  }

 private:
  /// Requantizes the tile's TW pixels with what `requant` holds (the job, or its view with the folded lanes) and
  /// stores them.
  template <int TW, rounding R, class T, class Requant>
  [[gnu::always_inline]] static void store_tile(const __m256i (&acc)[TW][4], const Requant& requant, const row_job& job,
                                                int ox) noexcept {
    const __m256i zp = _mm256_set1_epi32(job.output_zero_point), lo = _mm256_set1_epi32(job.clamp_min),
                  hi = _mm256_set1_epi32(job.clamp_max);
    for (int p = 0; p < TW; ++p) {
      const __m128i bytes =
          detail::kernel::requantize_pair_sums<R>(acc[p], _mm256_setzero_si256(), requant, 0, zp, lo, hi);
      detail::kernel::store_channels(static_cast<T*>(job.out) + (ox + p) * job.out_pixel_stride, bytes,
                                     job.valid_channels);
    }
  }
};

template <>
struct path_for<simd::isa::avx2> : simd::use_path<avx2_path> {};

}  // namespace kernels::dw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX2
