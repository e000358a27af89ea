// 16x8 pointwise microkernel, NEON path (aarch64 and armv7): smlal / vmlal_n_s16, one input channel of one pixel
// times 16 int16 weights into four int32x4 accumulators per pixel. The front end runs this path only where every
// channel's accumulator provably fits int32.
#pragma once

#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/pointwise16x8/tile.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16 {

struct neon_path {
  static constexpr int taps = 1;
  // aarch64: 16 accumulators and 2 weight registers of 32; armv7 has 16 q registers.
  static constexpr int default_tile_pixels = MOSAIQ_TARGET_NEON64 ? 4 : 2;

  /// Channels: how many of the block's 16 the layer has (compile time); only their quads of 4 are computed.
  template <int MR, int Channels = block>
  static void tile(const tile_job& job) noexcept {
    constexpr int quads = (Channels + 3) / 4;
    int32x4_t acc[MR][4];
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p)
#pragma GCC unroll 4
      for (int q = 0; q < quads; ++q) acc[p][q] = vld1q_s32(job.bias + 4 * q);
    const std::int16_t* w = job.weights;
    for (int k = 0; k < job.input_channels; ++k, w += block) {
      int16x4_t wk[4];
#pragma GCC unroll 4
      for (int q = 0; q < quads; ++q) wk[q] = vld1_s16(w + 4 * q);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const std::int16_t x = job.input[p * job.input_stride + k];
#pragma GCC unroll 4
        for (int q = 0; q < quads; ++q) acc[p][q] = vmlal_n_s16(acc[p][q], wk[q], x);
      }
    }
    const int32x4_t zero = vdupq_n_s32(0), lo = vdupq_n_s32(job.clamp_min), hi = vdupq_n_s32(job.clamp_max);
    const bool whole = job.valid_channels == 4 * quads;
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) {
      std::int16_t* out = job.out + p * job.out_stride;
      std::int16_t values[block];
#pragma GCC unroll 4
      for (int q = 0; q < quads; ++q) {
        const int32x4_t v = simd::neon::requantize_s32<rounding::single_round>(
            acc[p][q], vld1q_s32(job.multiplier + 4 * q), zero, vld1q_s32(job.right_shift + 4 * q), zero, lo, hi);
        // Clamped into int16 already: the narrow is exact.
        vst1_s16((whole ? out : values) + 4 * q, vmovn_s32(v));
      }
      if (!whole) store_partial(out, values, job.valid_channels);
    }
  }
};

template <>
struct path_for<simd::isa::neon> : simd::use_path<neon_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16

#endif  // MOSAIQ_TARGET_NEON
