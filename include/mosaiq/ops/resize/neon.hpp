// Resize's NEON vector operations (byte vectors for the 2x kernels, float vectors for the any-ratio kernel), used by
// ops/resize.hpp; the same functions as ops/resize/x86.hpp.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/resize/widths.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace detail::upsample {

struct neon_ops {
  using reg = uint8x16_t;
  using wide_reg = uint16x8_t;
  static constexpr int bytes = 16;
  static reg load(const byte* p) noexcept { return vld1q_u8(p); }
  static void store(byte* p, reg v) noexcept { vst1q_u8(p, v); }
  static reg flip(reg v, byte f) noexcept { return veorq_u8(v, vdupq_n_u8(f)); }
  static reg average(reg a, reg b) noexcept { return vrhaddq_u8(a, b); }
  static wide_reg widen_lo(reg v) noexcept { return vmovl_u8(vget_low_u8(v)); }
  static wide_reg widen_hi(reg v) noexcept { return vmovl_u8(vget_high_u8(v)); }
  static wide_reg add(wide_reg a, wide_reg b) noexcept { return vaddq_u16(a, b); }
  /// N * near + F * far in 16 bits (N + F <= 257: no overflow).
  template <int N, int F>
  static void weighted_pair(reg near, reg far, wide_reg& lo, wide_reg& hi) noexcept {
    const uint8x8_t n = vdup_n_u8(N);
    if constexpr (F == 1) {
      lo = vmlal_u8(vmovl_u8(vget_low_u8(far)), vget_low_u8(near), n);
      hi = vmlal_u8(vmovl_u8(vget_high_u8(far)), vget_high_u8(near), n);
    } else {
      const uint8x8_t f = vdup_n_u8(F);
      lo = vmlal_u8(vmull_u8(vget_low_u8(far), f), vget_low_u8(near), n);
      hi = vmlal_u8(vmull_u8(vget_high_u8(far), f), vget_high_u8(near), n);
    }
  }
  template <int Shift>
  static reg narrow_rounded(wide_reg lo, wide_reg hi) noexcept {
    return vcombine_u8(vrshrn_n_u16(lo, Shift), vrshrn_n_u16(hi, Shift));
  }
  template <int G>
  static void store_interleaved(byte* p, reg e, reg o) noexcept {
    if constexpr (G == 1) {
      vst2q_u8(p, uint8x16x2_t{{e, o}});
    } else if constexpr (G == 2) {
      vst2q_u16(reinterpret_cast<std::uint16_t*>(p), uint16x8x2_t{{vreinterpretq_u16_u8(e), vreinterpretq_u16_u8(o)}});
    } else if constexpr (G == 4) {
      vst2q_u32(reinterpret_cast<std::uint32_t*>(p), uint32x4x2_t{{vreinterpretq_u32_u8(e), vreinterpretq_u32_u8(o)}});
    } else if constexpr (G == 8) {
      store(p, vcombine_u8(vget_low_u8(e), vget_low_u8(o)));
      store(p + 16, vcombine_u8(vget_high_u8(e), vget_high_u8(o)));
    } else {
      store(p, e);
      store(p + 16, o);
    }
  }
};

using native_widths = byte_widths<neon_ops>;

}  // namespace detail::upsample

namespace detail::any_ratio {

struct neon_float {
  using vf = float32x4_t;
  static constexpr int lanes = 4;
  static vf load(const float* p) noexcept { return vld1q_f32(p); }
  static vf load(const float* p, int n) noexcept {
    float lanes_in[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::memcpy(lanes_in, p, static_cast<std::size_t>(n) * sizeof(float));
    return vld1q_f32(lanes_in);
  }
  static vf gather(const float* base, const std::int32_t* index) noexcept {
    vf v = vld1q_dup_f32(base + index[0]);
    v = vld1q_lane_f32(base + index[1], v, 1);
    v = vld1q_lane_f32(base + index[2], v, 2);
    return vld1q_lane_f32(base + index[3], v, 3);
  }
  static vf permute(vf window, const std::int32_t* index) noexcept {
    float lanes_in[4];
    vst1q_f32(lanes_in, window);
    return gather(lanes_in, index);
  }
  static vf broadcast(float w) noexcept { return vdupq_n_f32(w); }
  static vf product(vf a, vf b) noexcept {
    vf p = vmulq_f32(a, b);
    asm("" : "+w"(p));  // no FMA contraction: see ops/resize/x86.hpp
    return p;
  }
  static vf add(vf a, vf b) noexcept { return vaddq_f32(a, b); }
  /// floor(sum + 0.5f), saturated to T, in the low 4 bytes.
  template <class T>
  static std::uint32_t narrowed(vf sum) noexcept {
    const vf half_up = vaddq_f32(sum, vdupq_n_f32(0.5f));
#if MOSAIQ_TARGET_NEON64
    const int32x4_t v = vcvtmq_s32_f32(half_up);
#else
    // ARMv7 converts toward zero only: one less where that rounded up (negative non-integers).
    const int32x4_t truncated = vcvtq_s32_f32(half_up);
    const int32x4_t v = vaddq_s32(truncated, vreinterpretq_s32_u32(vcgtq_f32(vcvtq_f32_s32(truncated), half_up)));
#endif
    const int16x4_t half = vqmovn_s32(v);
    const int16x8_t words = vcombine_s16(half, half);
    uint8x8_t bytes;
    if constexpr (std::same_as<T, u8>)
      bytes = vqmovun_s16(words);
    else
      bytes = vreinterpret_u8_s8(vqmovn_s16(words));
    return vget_lane_u32(vreinterpret_u32_u8(bytes), 0);
  }
  template <class T>
  static void store(T* p, vf sum, int n = lanes) noexcept {
    const std::uint32_t bytes = narrowed<T>(sum);
    std::memcpy(p, &bytes, static_cast<std::size_t>(n));
  }
  template <class T>
  static void store4(T* p, vf s0, vf s1, vf s2, vf s3) noexcept {
    store<T>(p, s0), store<T>(p + 4, s1), store<T>(p + 8, s2), store<T>(p + 12, s3);
  }
  template <class T>
  static void convert(const T* src, int count, float w, float* dst) noexcept {
    int i = 0;
    for (; i + 8 <= count; i += 8) {
      float32x4_t lo, hi;
      if constexpr (std::same_as<T, u8>) {
        const uint16x8_t words = vmovl_u8(vld1_u8(src + i));
        lo = vcvtq_f32_u32(vmovl_u16(vget_low_u16(words)));
        hi = vcvtq_f32_u32(vmovl_u16(vget_high_u16(words)));
      } else {
        const int16x8_t words = vmovl_s8(vld1_s8(src + i));
        lo = vcvtq_f32_s32(vmovl_s16(vget_low_s16(words)));
        hi = vcvtq_f32_s32(vmovl_s16(vget_high_s16(words)));
      }
      vst1q_f32(dst + i, vmulq_n_f32(lo, w));
      vst1q_f32(dst + i + 4, vmulq_n_f32(hi, w));
    }
    for (; i < count; ++i) dst[i] = static_cast<float>(src[i]) * w;
  }
};

using float_ops = neon_float;

}  // namespace detail::any_ratio
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_NEON
