// Two-class softmax on aarch64 NEON: the pair table looked up with tbx over 64-byte quarters, 16 pairs per step.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON64

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/softmax/pair_table.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace softmax_pairs {

/// 16 pairs per iteration (vld2q deinterleaves x0 / x1); returns the pixels done.
inline std::size_t pairs_neon(const pair_table& table, const byte* in, byte* out, std::size_t pixels,
                              byte flip) noexcept {
  const uint8x16_t flip_bytes = vdupq_n_u8(flip);
  const uint16x8_t bias = vdupq_n_u16(255), first = vdupq_n_u16(static_cast<std::uint16_t>(table.first));
  const uint16x8_t last = vdupq_n_u16(static_cast<std::uint16_t>(table.last));
  const int chunks = (table.window_size() + 63) / 64;
  const auto window_index = [&](uint8x8_t self, uint8x8_t other) noexcept {
    const uint16x8_t index = vaddq_u16(vsubl_u8(self, other), bias);  // wraps mod 2^16 to 255 + d
    return vsubq_u16(vminq_u16(vmaxq_u16(index, first), last), first);
  };
  const auto lookup = [&](uint16x8_t lo, uint16x8_t hi) noexcept {
    uint8x16_t result = vdupq_n_u8(0);
    for (int k = 0; k < chunks; ++k) {
      const byte* base = table.window.data() + 64 * k;
      const uint8x16x4_t entries{{vld1q_u8(base), vld1q_u8(base + 16), vld1q_u8(base + 32), vld1q_u8(base + 48)}};
      const uint16x8_t offset = vdupq_n_u16(static_cast<std::uint16_t>(64 * k));
      // Indices below 64k wrap to large u16 values and saturate to 255: out of range, the entry is kept.
      const uint8x16_t local = vcombine_u8(vqmovn_u16(vsubq_u16(lo, offset)), vqmovn_u16(vsubq_u16(hi, offset)));
      result = vqtbx4q_u8(result, entries, local);
    }
    return result;
  };
  std::size_t i = 0;
  for (; i + 16 <= pixels; i += 16) {
    uint8x16x2_t pairs = vld2q_u8(in + 2 * i);
    const uint8x16_t x0 = veorq_u8(pairs.val[0], flip_bytes), x1 = veorq_u8(pairs.val[1], flip_bytes);
    const uint16x8_t i0_lo = window_index(vget_low_u8(x0), vget_low_u8(x1));
    const uint16x8_t i0_hi = window_index(vget_high_u8(x0), vget_high_u8(x1));
    const uint16x8_t i1_lo = window_index(vget_low_u8(x1), vget_low_u8(x0));
    const uint16x8_t i1_hi = window_index(vget_high_u8(x1), vget_high_u8(x0));
    pairs.val[0] = lookup(i0_lo, i0_hi);
    pairs.val[1] = lookup(i1_lo, i1_hi);
    vst2q_u8(out + 2 * i, pairs);
  }
  return i;
}

/// The aarch64 NEON pairs kernel.
struct neon_pairs {
  static std::size_t run(const pair_table& table, const byte* in, byte* out, std::size_t pixels, byte flip) noexcept {
    return pairs_neon(table, in, out, pixels, flip);
  }
};

template <>
struct pairs_for<simd::isa::neon> : simd::use_path<neon_pairs> {};

}  // namespace softmax_pairs
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_NEON64
