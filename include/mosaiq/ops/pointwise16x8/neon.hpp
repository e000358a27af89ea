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

  template <int MR>
  static void tile(const tile_job& job) noexcept {
    int32x4_t acc[MR][4];
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p)
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[p][q] = vld1q_s32(job.bias + 4 * q);
    const std::int16_t* w = job.weights;
    for (int k = 0; k < job.input_channels; ++k, w += block) {
      const int16x8_t w_low = vld1q_s16(w), w_high = vld1q_s16(w + 8);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const std::int16_t x = job.input[p * job.input_stride + k];
        acc[p][0] = vmlal_n_s16(acc[p][0], vget_low_s16(w_low), x);
        acc[p][1] = vmlal_n_s16(acc[p][1], vget_high_s16(w_low), x);
        acc[p][2] = vmlal_n_s16(acc[p][2], vget_low_s16(w_high), x);
        acc[p][3] = vmlal_n_s16(acc[p][3], vget_high_s16(w_high), x);
      }
    }
    const int32x4_t zero = vdupq_n_s32(0), lo = vdupq_n_s32(job.clamp_min), hi = vdupq_n_s32(job.clamp_max);
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) {
      int16x8_t halves[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const auto requantize = [&](int q) {
          return simd::neon::requantize_s32<rounding::single_round>(acc[p][q], vld1q_s32(job.multiplier + 4 * q), zero,
                                                                    vld1q_s32(job.right_shift + 4 * q), zero, lo, hi);
        };
        // Clamped into int16 already: the narrow is exact.
        halves[h] = vcombine_s16(vmovn_s32(requantize(2 * h)), vmovn_s32(requantize(2 * h + 1)));
      }
      std::int16_t* out = job.out + p * job.out_stride;
      if (job.valid_channels == block) {
        vst1q_s16(out, halves[0]);
        vst1q_s16(out + 8, halves[1]);
      } else {
        std::int16_t values[block];
        vst1q_s16(values, halves[0]);
        vst1q_s16(values + 8, halves[1]);
        store_partial(out, values, job.valid_channels);
      }
    }
  }
};

template <>
struct path_for<simd::isa::neon> : simd::use_path<neon_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16

#endif  // MOSAIQ_TARGET_NEON
