// Pointwise microkernel, NEON path (aarch64 and armv7; sdot where the dot-product extension is built).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/ops/detail/common/neon.hpp"
#include "mosaiq/ops/pointwise/tile.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace kernels::pw {

// ---------------------------------------------------------------------------------------------
// NEON (aarch64 and armv7): signed x_d and int8 w'. With the dot-product extension one sdot per
// pixel, 4 channels and k group; without it vmull_s8 (each product fits int16) and vpadal into
// per-channel pair sums, reduced once per tile. Exact either way, including -128 * -128.
struct neon_path {
  using weight_type = std::int8_t;
  using input_type = std::int8_t;
  static constexpr bool signed_input = true;
  static constexpr bool quad_tiles = true;  // tile<..., Quads>
#if MOSAIQ_TARGET_NEON_DOTPROD
  static constexpr pointwise_tile default_tile{4, 16};
#elif MOSAIQ_TARGET_NEON64
  static constexpr pointwise_tile default_tile{2, 16};
#else
  static constexpr pointwise_tile default_tile{1, 16};
#endif

  template <bool Sum>
  static std::int32_t pack_row(const std::uint8_t* src, int channels, input_type* dst, int padded,
                               std::uint8_t flip) noexcept {
    const uint8x16_t flip_bits = vdupq_n_u8(flip);
    int32x4_t sums = vdupq_n_s32(0);
    int c = 0;
    for (; c + 16 <= channels; c += 16) {
      const int8x16_t v = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(src + c), flip_bits));
      vst1q_s8(dst + c, v);
      if constexpr (Sum) sums = vpadalq_s16(sums, vpaddlq_s8(v));
    }
    std::int32_t sum = pack_row_scalar<input_type, signed_input, Sum>(src, channels, dst, padded, flip, c);
    if constexpr (Sum) {
      std::int32_t lanes[4];
      vst1q_s32(lanes, sums);
      sum += lanes[0] + lanes[1] + lanes[2] + lanes[3];
    }
    return sum;
  }

  // [sum(a), sum(b)] pairs: channel sums from two pair-sum vectors [c0 k01, c0 k23, c1 k01, c1 k23].
  static int32x4_t pair_sums(int32x4_t a, int32x4_t b) noexcept {
#if MOSAIQ_TARGET_NEON64
    return vpaddq_s32(a, b);
#else
    return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
  }

#if MOSAIQ_TARGET_NEON_DOTPROD
  static constexpr int acc_lanes = 4;  // acc[p][b][q]: channels 4q..4q+3
#else
  static constexpr int acc_lanes = 8;  // acc[p][b][2q + h]: channels 4q + 2h, 4q + 2h + 1 as (k01, k23) pair sums
#endif

  /// Quads: 4-channel quads of each block to compute (fewer than 4 only for layers of one block:
  /// a 2-channel class head computes one quad, a quarter of the dot products and requantization).
  template <int MR, int NB, rounding R, class T, int Quads = 4>
  static void tile(const tile_job& job) noexcept {
    static_assert(Quads >= 1 && Quads <= 4);
    int32x4_t acc[MR][NB][acc_lanes];
    accumulate<MR, NB, Quads>(job, acc);
    const int32x4_t zp = vdupq_n_s32(job.output_zero_point), lo = vdupq_n_s32(job.clamp_min),
                    hi = vdupq_n_s32(job.clamp_max);
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) store_pixel<NB, R, T, Quads>(job, p, acc[p], zp, lo, hi);
  }

  // The tile's dot products over every k group: MR pixels x NB blocks, Quads quads of each.
  template <int MR, int NB, int Quads>
  [[gnu::always_inline]] static void accumulate(const tile_job& job, int32x4_t (&acc)[MR][NB][acc_lanes]) noexcept {
    const auto* a = static_cast<const input_type*>(job.input);
    const auto* w = static_cast<const weight_type*>(job.weights);
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p)
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 8
        for (int q = 0; q < acc_lanes; ++q) acc[p][b][q] = vdupq_n_s32(0);
    for (int g = 0; g < job.k_groups; ++g) {
      int8x16_t wv[NB][4];
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
        for (int q = 0; q < Quads; ++q) wv[b][q] = vld1q_s8(w + (g * NB + b) * block_elements + q * 16);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p)
        multiply_group<NB, Quads>(acc[p], wv, load_u32(a + p * job.input_stride + g * group));
    }
  }

  // One pixel's k group (its 4 input bytes x4) against the group's weights of NB blocks.
  template <int NB, int Quads>
  [[gnu::always_inline]] static void multiply_group(int32x4_t (&acc)[NB][acc_lanes], const int8x16_t (&wv)[NB][4],
                                                    std::uint32_t x4) noexcept {
#if MOSAIQ_TARGET_NEON_DOTPROD
    const int8x16_t x = vreinterpretq_s8_u32(vdupq_n_u32(x4));
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
      for (int q = 0; q < Quads; ++q) acc[b][q] = vdotq_s32(acc[b][q], wv[b][q], x);
#else
    const int8x8_t x = vreinterpret_s8_u32(vdup_n_u32(x4));
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
      for (int q = 0; q < Quads; ++q) {
        acc[b][2 * q] = vpadalq_s16(acc[b][2 * q], vmull_s8(vget_low_s8(wv[b][q]), x));
        acc[b][2 * q + 1] = vpadalq_s16(acc[b][2 * q + 1], vmull_s8(vget_high_s8(wv[b][q]), x));
      }
#endif
  }

  // Pixel p's NB blocks requantized (bias, split-weight pixel offset) and stored, the channel tail cut at valid.
  template <int NB, rounding R, class T, int Quads>
  [[gnu::always_inline]] static void store_pixel(const tile_job& job, int p, const int32x4_t (&acc)[NB][acc_lanes],
                                                 int32x4_t zp, int32x4_t lo, int32x4_t hi) noexcept {
    const int32x4_t pixel_offset = vdupq_n_s32(job.pixel_offset[p]);
    T* out = static_cast<T*>(job.out) + p * job.out_stride;
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      int16x4_t narrow[4] = {vdup_n_s16(0), vdup_n_s16(0), vdup_n_s16(0), vdup_n_s16(0)};
#pragma GCC unroll 4
      for (int q = 0; q < Quads; ++q) {
        const int c = b * block + q * 4;
#if MOSAIQ_TARGET_NEON_DOTPROD
        const int32x4_t dots = acc[b][q];
#else
        const int32x4_t dots = pair_sums(acc[b][2 * q], acc[b][2 * q + 1]);
#endif
        const int32x4_t sums = vaddq_s32(vaddq_s32(dots, pixel_offset), vld1q_s32(job.bias + c));
        narrow[q] =
            vmovn_s32(simd::neon::requantize_s32<R>(sums, vld1q_s32(job.multiplier + c), vld1q_s32(job.left_shift + c),
                                                    vld1q_s32(job.right_shift + c), zp, lo, hi));
      }
      std::uint8_t bytes[block];
      detail::kernel::narrow_to_bytes<T>(narrow, bytes);
      const int valid = job.valid_channels - b * block;
      std::memcpy(out + b * block, bytes, static_cast<std::size_t>(valid >= block ? block : valid));
    }
  }
};

template <>
struct path_for<simd::isa::neon> : simd::use_path<neon_path> {};

}  // namespace kernels::pw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_NEON
