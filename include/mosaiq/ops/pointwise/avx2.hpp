// Pointwise microkernel, AVX2 path (also the AVX-512 build without VNNI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/ops/detail/common/avx2.hpp"
#include "mosaiq/ops/pointwise/tile.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX2

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace kernels::pw {

// AVX2 (also the AVX-512 build without VNNI): inputs are packed as int16, weights as int16 [16][4],
// so one vpmaddwd multiplies a broadcast (x0 x1 x2 x3) with 4 channels x 4 k and leaves per-channel
// pair sums; they are reduced once per tile. |x_d * w'| <= 255 * 255: pair sums fit int32, exact.
/// The per-layer lanes of the AVX2 builds' paths (a base of pointwise: detail::pw::layer_lanes).
struct avx2_layer_lanes {
  detail::vector<simd::avx2::requant_lanes8> lanes8_;  // AVX2 tile, reference rounding: per 8 channels (or none)
};

struct avx2_path {
  using layer_lanes = avx2_layer_lanes;
  using weight_type = std::int16_t;
  using input_type = std::int16_t;
  static constexpr bool signed_input = false;
  static constexpr bool quad_tiles = true;  // tile<..., Quads>
  // With 16 ymm registers, 2 pixels x 16 channels keep their 8 accumulators, 4 weight vectors and 2 inputs in
  // registers; 3 x 16 spilled accumulators to the stack on every k step. AVX-512 builds have 32 and keep 3 x 16.
  static constexpr pointwise_tile default_tile = MOSAIQ_TARGET_AVX512 ? pointwise_tile{3, 16} : pointwise_tile{2, 16};

  template <bool Sum>
  static std::int32_t pack_row(const std::uint8_t* src, int channels, input_type* dst, int padded,
                               std::uint8_t flip) noexcept {
    const __m128i flip_bits = _mm_set1_epi8(static_cast<char>(flip));
    __m256i sums = _mm256_setzero_si256();
    int c = 0;
    for (; c + 16 <= channels; c += 16) {
      const __m256i v =
          _mm256_cvtepu8_epi16(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c)), flip_bits));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c), v);
      if constexpr (Sum) sums = _mm256_add_epi32(sums, _mm256_madd_epi16(v, _mm256_set1_epi16(1)));
    }
    std::int32_t sum = pack_row_scalar<input_type, signed_input, Sum>(src, channels, dst, padded, flip, c);
    if constexpr (Sum) {
      alignas(32) std::int32_t lanes[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sums);
      for (const std::int32_t lane : lanes) sum += lane;
    }
    return sum;
  }

  /// Quads: 4-channel quads of each block to compute (fewer than 4 only for one-block layers: at
  /// most 8 channels also requantize only the first half).
  template <int MR, int NB, rounding R, class T, int Quads = 4>
  static void tile(const tile_job& job) noexcept {
    static_assert(Quads >= 1 && Quads <= 4);
    const auto* a = static_cast<const input_type*>(job.input);
    const auto* w = static_cast<const weight_type*>(job.weights);
    // acc[p][b][q]: channels 4q..4q+3 of block b, two lanes (k01, k23) per channel.
    __m256i acc[MR][NB][4];
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p)
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) acc[p][b][q] = _mm256_setzero_si256();
    for (int g = 0; g < job.k_groups; ++g) {
      const weight_type* wg = w + g * NB * block_elements;
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        std::int64_t x4;
        std::memcpy(&x4, a + p * job.input_stride + g * group, sizeof x4);
        const __m256i x = _mm256_set1_epi64x(x4);
#pragma GCC unroll 8
        for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
          for (int q = 0; q < Quads; ++q) {
            const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + (b * 4 + q) * 16));
            acc[p][b][q] = _mm256_add_epi32(acc[p][b][q], _mm256_madd_epi16(x, wq));
          }
      }
    }
    const __m256i zp = _mm256_set1_epi32(job.output_zero_point), lo = _mm256_set1_epi32(job.clamp_min),
                  hi = _mm256_set1_epi32(job.clamp_max);
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) {
      const __m256i pixel_offset = _mm256_set1_epi32(job.pixel_offset[p]);
      T* out = static_cast<T*>(job.out) + p * job.out_stride;
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) {
        const __m128i bytes = detail::kernel::requantize_pair_sums<R, tile_job, (Quads + 1) / 2>(
            acc[p][b], pixel_offset, job, b * block, zp, lo, hi);
        detail::kernel::store_channels(out + b * block, bytes, job.valid_channels - b * block);
      }
    }
  }
};

template <>
struct path_for<simd::isa::avx2> : simd::use_path<avx2_path> {};

}  // namespace kernels::pw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX2
