// Byte-table lookups (NEON: vqtbl4q / vqtbx4q on aarch64, vtbl4 / vtbx4 on armv7) for ops/detail/byte_table.hpp:
// `values` are the 256 entries, `deltas` the XOR-telescoped pshufb chunks; each kernel returns the bytes it did (the
// front end's scalar loop does the rest).
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/detail/byte_table/registry.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

#if MOSAIQ_TARGET_NEON64
/// 16 bytes per step over four 64-entry quarters.
struct neon_byte_lookup {
  static std::size_t run(const std::uint8_t* values, const std::uint8_t*, const std::uint8_t* in, std::uint8_t* out,
                         std::size_t count) noexcept {
    std::size_t j = 0;
    uint8x16x4_t quarter[4];
    for (int q = 0; q < 4; ++q) {
      const std::uint8_t* base = values + 64 * q;
      quarter[q] = uint8x16x4_t{{vld1q_u8(base), vld1q_u8(base + 16), vld1q_u8(base + 32), vld1q_u8(base + 48)}};
    }
    const uint8x16_t sixty_four = vdupq_n_u8(64);
    for (; j + 16 <= count; j += 16) {
      uint8x16_t index = vld1q_u8(in + j);
      uint8x16_t result = vqtbl4q_u8(quarter[0], index);
      for (int q = 1; q < 4; ++q) {
        index = vsubq_u8(index, sixty_four);  // wraps: indices of earlier quarters become >= 64, out of range
        result = vqtbx4q_u8(result, quarter[q], index);
      }
      vst1q_u8(out + j, result);
    }
    return j;
  }
};
#else
/// armv7: 8 bytes per step over eight 32-entry tables.
struct neon_byte_lookup {
  static std::size_t run(const std::uint8_t* values, const std::uint8_t*, const std::uint8_t* in, std::uint8_t* out,
                         std::size_t count) noexcept {
    std::size_t j = 0;
    // armv7: eight 32-entry tables, 8 bytes per step; vtbx4 keeps the lane for indices >= 32, and the wrapping
    // subtraction moves the indices of earlier tables there.
    uint8x8x4_t eighth[8];
    for (int q = 0; q < 8; ++q) {
      const std::uint8_t* base = values + 32 * q;
      eighth[q] = uint8x8x4_t{{vld1_u8(base), vld1_u8(base + 8), vld1_u8(base + 16), vld1_u8(base + 24)}};
    }
    const uint8x8_t thirty_two = vdup_n_u8(32);
    for (; j + 8 <= count; j += 8) {
      uint8x8_t index = vld1_u8(in + j);
      uint8x8_t result = vtbl4_u8(eighth[0], index);
      for (int q = 1; q < 8; ++q) {
        index = vsub_u8(index, thirty_two);
        result = vtbx4_u8(result, eighth[q], index);
      }
      vst1_u8(out + j, result);
    }
    return j;
  }
};
#endif

template <>
struct byte_lookup_for<simd::isa::neon> : simd::use_path<neon_byte_lookup> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail

#endif  // MOSAIQ_TARGET_NEON
