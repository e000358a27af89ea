// Depthwise microkernel, NEON path (aarch64 and armv7).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/depthwise/row_job.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/ops/detail/common/neon.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace kernels::dw {

// NEON (aarch64 and armv7): vst4q interleaves the tap-group row in one store; the hot loop widens
// x_f to int16 and multiply-accumulates with int16 w' into per-tap int32 lanes, reduced per pixel.
struct neon_path {
  using weight_type = std::int16_t;
  static constexpr int job_channels = block;
  static constexpr int default_tile_w = 1;  // sixteen q accumulators per pixel
  static constexpr bool uses_vnni = false;

  static void interleave(const std::uint8_t* const src[group_taps], std::uint8_t* dst, int channels,
                         int padded_channels, std::uint8_t flip) noexcept {
    const uint8x16_t flip_bits = vdupq_n_u8(flip);
    int c = 0;
    for (; c + block <= channels; c += block) {
      uint8x16x4_t v;
      v.val[0] = veorq_u8(vld1q_u8(src[0] + c), flip_bits);
      v.val[1] = veorq_u8(vld1q_u8(src[1] + c), flip_bits);
      v.val[2] = veorq_u8(vld1q_u8(src[2] + c), flip_bits);
      v.val[3] = veorq_u8(vld1q_u8(src[3] + c), flip_bits);
      vst4q_u8(dst + c * group_taps, v);
    }
    if (c < channels) {
      uint8x16x4_t v;
      for (int t = 0; t < group_taps; ++t) {
        std::uint8_t staged[block];
        std::memset(staged, flip, block);
        std::memcpy(staged, src[t] + c, static_cast<std::size_t>(channels - c));
        v.val[t] = veorq_u8(vld1q_u8(staged), flip_bits);
      }
      vst4q_u8(dst + c * group_taps, v);
      c += block;
    }
    std::memset(dst + c * group_taps, 0, static_cast<std::size_t>(padded_channels - c) * group_taps);
  }

  // [sum(a), sum(b), sum(c), sum(d)]
  static int32x4_t horizontal_sums(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) noexcept {
#if MOSAIQ_TARGET_NEON64
    return vpaddq_s32(vpaddq_s32(a, b), vpaddq_s32(c, d));
#else
    const int32x2_t ab =
        vpadd_s32(vadd_s32(vget_low_s32(a), vget_high_s32(a)), vadd_s32(vget_low_s32(b), vget_high_s32(b)));
    const int32x2_t cd =
        vpadd_s32(vadd_s32(vget_low_s32(c), vget_high_s32(c)), vadd_s32(vget_low_s32(d), vget_high_s32(d)));
    return vcombine_s32(ab, cd);
#endif
  }

  template <int KH, int G, int TW, rounding R, class T>
  static void tile(const row_job& job, int ox) noexcept {
    const auto* w = static_cast<const weight_type*>(job.weights);
    int32x4_t acc[TW][block];  // [pixel][channel] lanes = taps
    for (int p = 0; p < TW; ++p)
      for (int c = 0; c < block; ++c) acc[p][c] = vdupq_n_s32(0);
    for (int kr = 0; kr < KH; ++kr)
      for (int g = 0; g < G; ++g) {
        const weight_type* wg = w + (kr * G + g) * block * group_taps;
        for (int p = 0; p < TW; ++p) {
          const std::uint8_t* x = job.rows[kr] + (ox + p) * job.column_stride + g * job.group_stride;
          for (int q = 0; q < block / 4; ++q) {  // 4 channels x 4 taps per 16 bytes
            const uint8x16_t bytes = vld1q_u8(x + q * 16);
            const int16x8_t x01 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(bytes)));
            const int16x8_t x23 = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(bytes)));
            const int16x8_t w01 = vld1q_s16(wg + q * 16), w23 = vld1q_s16(wg + q * 16 + 8);
            int32x4_t* a = acc[p] + q * 4;
            a[0] = vmlal_s16(a[0], vget_low_s16(x01), vget_low_s16(w01));
            a[1] = vmlal_s16(a[1], vget_high_s16(x01), vget_high_s16(w01));
            a[2] = vmlal_s16(a[2], vget_low_s16(x23), vget_low_s16(w23));
            a[3] = vmlal_s16(a[3], vget_high_s16(x23), vget_high_s16(w23));
          }
        }
      }
    const int32x4_t zp = vdupq_n_s32(job.output_zero_point), lo = vdupq_n_s32(job.clamp_min),
                    hi = vdupq_n_s32(job.clamp_max);
    for (int p = 0; p < TW; ++p) {
      int16x4_t narrow[block / 4];
      for (int q = 0; q < block / 4; ++q) {
        const int32x4_t* a = acc[p] + q * 4;
        const int32x4_t sums = vaddq_s32(horizontal_sums(a[0], a[1], a[2], a[3]), vld1q_s32(job.bias + q * 4));
        narrow[q] = vmovn_s32(simd::neon::requantize_s32<R>(sums, vld1q_s32(job.multiplier + q * 4),
                                                            vld1q_s32(job.left_shift + q * 4),
                                                            vld1q_s32(job.right_shift + q * 4), zp, lo, hi));
      }
      std::uint8_t bytes[block];
      detail::kernel::narrow_to_bytes<T>(narrow, bytes);
      T* out = static_cast<T*>(job.out) + (ox + p) * job.out_pixel_stride;
      std::memcpy(out, bytes, static_cast<std::size_t>(job.valid_channels));
    }
  }
};

template <>
struct path_for<simd::isa::neon> : simd::use_path<neon_path> {};

}  // namespace kernels::dw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_NEON
