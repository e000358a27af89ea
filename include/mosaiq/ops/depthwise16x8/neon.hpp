// 16x8 depthwise microkernel, NEON path (aarch64 and armv7): smlal / vmlal_s16, one tap of 16 channels times its 16
// int16 weights into four int32x4 accumulators. The front end runs this path only where every channel's
// accumulator provably fits int32.
#pragma once

#include <cstdint>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/depthwise16x8/pixel.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16 {

struct neon_path {
  static constexpr int group_taps = 1;
  static constexpr slot_order order = natural_order;

 private:
  /// 16 channels of a tap from c0 (Whole), else `count` of them and zeros: never a read past the pixel.
  template <bool Edge, bool Whole>
  [[gnu::always_inline]] static int16x8x2_t load_tap(const std::int16_t* pixel, int c0, int count) noexcept {
    if constexpr (Edge)
      if (pixel == nullptr) return {{vdupq_n_s16(0), vdupq_n_s16(0)}};
    if constexpr (Whole) {
      return {{vld1q_s16(pixel + c0), vld1q_s16(pixel + c0 + 8)}};
    } else {
      std::int16_t values[block] = {};
      std::memcpy(values, pixel + c0, static_cast<std::size_t>(count) * sizeof(std::int16_t));
      return {{vld1q_s16(values), vld1q_s16(values + 8)}};
    }
  }

 public:
  /// The block of 16 channels from b * 16 of one pixel (Whole), else its first `count` channels.
  template <int Taps, bool Edge, bool Whole>
  [[gnu::always_inline]] static void channel_block(const pixel_job& job, int b, int count) noexcept {
    const int c0 = b * block;
    const std::int16_t* w = job.weights + b * job.block_weights;
    int32x4_t acc[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[q] = vld1q_s32(job.bias + c0 + 4 * q);
#pragma GCC unroll 64
    for (int t = 0; t < Taps; ++t, w += block) {
      const int16x8x2_t x = load_tap<Edge, Whole>(job.taps[t], c0, count);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int16x8_t wh = vld1q_s16(w + 8 * h);
        acc[2 * h] = vmlal_s16(acc[2 * h], vget_low_s16(x.val[h]), vget_low_s16(wh));
        acc[2 * h + 1] = vmlal_s16(acc[2 * h + 1], vget_high_s16(x.val[h]), vget_high_s16(wh));
      }
    }
    const int32x4_t zero = vdupq_n_s32(0), lo = vdupq_n_s32(job.clamp_min), hi = vdupq_n_s32(job.clamp_max);
    std::int16_t values[block];
    std::int16_t* out = job.out + c0;
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const int32x4_t v = simd::neon::requantize_s32<rounding::single_round>(
          acc[q], vld1q_s32(job.multiplier + c0 + 4 * q), zero, vld1q_s32(job.right_shift + c0 + 4 * q), zero, lo, hi);
      // Clamped into int16 already: the narrow is exact.
      vst1_s16((Whole ? out : values) + 4 * q, vmovn_s32(v));
    }
    if constexpr (!Whole) std::memcpy(out, values, static_cast<std::size_t>(count) * sizeof(std::int16_t));
  }
};

template <>
struct path_for<simd::isa::neon> : simd::use_path<neon_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16

#endif  // MOSAIQ_TARGET_NEON
