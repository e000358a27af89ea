// Pointwise microkernel, AVX-VNNI path (VEX vpdpbusd on ymm, without AVX-512).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/pointwise/avx2.hpp"
#include "mosaiq/ops/pointwise/tile.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX2_VNNI

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace kernels::pw {

// AVX-VNNI (VEX vpdpbusd on ymm; AVX2 machines with VNNI but without AVX-512: Alder Lake, Zen 5
// client parts): the AVX-512 VNNI scheme on 8-lane registers. A 16-channel block is two ymm per
// pixel; 16 registers hold 6 pixels x 2 accumulators, the block's two weight vectors and the
// broadcast input. u8 x_d times s8 w' as on AVX-512, split weights included.
struct avx_vnni_path {
  using layer_lanes = avx2_layer_lanes;
  using weight_type = std::int8_t;
  using input_type = std::uint8_t;
  static constexpr bool signed_input = false;
  static constexpr bool quad_tiles = true;  // tile<..., Quads>
  static constexpr pointwise_tile default_tile{6, 16};

  template <bool Sum>
  static std::int32_t pack_row(const std::uint8_t* src, int channels, input_type* dst, int padded,
                               std::uint8_t flip) noexcept {
    const __m256i flip_bits = _mm256_set1_epi8(static_cast<char>(flip));
    __m256i sums = _mm256_setzero_si256();
    int c = 0;
    for (; c + 32 <= channels; c += 32) {
      const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + c)), flip_bits);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c), v);
      if constexpr (Sum) sums = _mm256_add_epi64(sums, _mm256_sad_epu8(v, _mm256_setzero_si256()));
    }
    std::int32_t sum = pack_row_scalar<input_type, signed_input, Sum>(src, channels, dst, padded, flip, c);
    if constexpr (Sum) {
      alignas(32) std::int64_t lanes[4];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sums);
      sum += static_cast<std::int32_t>(lanes[0] + lanes[1] + lanes[2] + lanes[3]);
    }
    return sum;
  }

  /// Quads: 4-channel quads of each block to compute (fewer than 4 only for one-block layers: at
  /// most 8 channels skip the second half's dot products; its epilogue is skipped anyway).
  template <int MR, int NB, rounding R, class T, int Quads = 4>
  static void tile(const tile_job& job) noexcept {
    static_assert(Quads >= 1 && Quads <= 4);
    constexpr int halves = (Quads + 1) / 2;
    const auto* a = static_cast<const input_type*>(job.input);
    const auto* w = static_cast<const weight_type*>(job.weights);
    const auto load = [](const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); };
    __m256i acc[MR][NB][2];  // channels 0-7 and 8-15 of block b
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i bias = load(job.bias + b * block + h * 8);
#pragma GCC unroll 16
        for (int p = 0; p < MR; ++p) acc[p][b][h] = _mm256_add_epi32(bias, _mm256_set1_epi32(job.pixel_offset[p]));
      }
    for (int g = 0; g < job.k_groups; ++g) {
      __m256i wv[NB][2];
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
        for (int h = 0; h < halves; ++h) wv[b][h] = load(w + (g * NB + b) * block_elements + h * 32);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const __m256i x = _mm256_set1_epi32(static_cast<int>(load_u32(a + p * job.input_stride + g * group)));
#pragma GCC unroll 8
        for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
          for (int h = 0; h < halves; ++h) acc[p][b][h] = _mm256_dpbusd_avx_epi32(acc[p][b][h], x, wv[b][h]);
      }
    }
    const __m256i zp = _mm256_set1_epi32(job.output_zero_point), lo = _mm256_set1_epi32(job.clamp_min),
                  hi = _mm256_set1_epi32(job.clamp_max);
    T* out = static_cast<T*>(job.out);
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      const int valid = job.valid_channels - b * block;
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int c = b * block + h * 8;
        const __m256i multiplier = load(job.multiplier + c), left = load(job.left_shift + c),
                      right = load(job.right_shift + c);
        const int count = valid - h * 8;  // channels of this half to store
        if (count <= 0) continue;
#pragma GCC unroll 16
        for (int p = 0; p < MR; ++p) {
          const __m256i v = simd::avx2::requantize_epi32<R>(acc[p][b][h], multiplier, left, right, zp, lo, hi);
          T* target = out + p * job.out_stride + c;
          if (count >= 8) {
            simd::avx2::store_low_bytes(target, v);
          } else {
            alignas(8) std::uint8_t bytes[8];
            simd::avx2::store_low_bytes(bytes, v);
            std::memcpy(target, bytes, static_cast<std::size_t>(count));
          }
        }
      }
    }
  }
};

template <>
struct path_for<simd::isa::avx2_vnni> : simd::use_path<avx_vnni_path> {};

}  // namespace kernels::pw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX2_VNNI
