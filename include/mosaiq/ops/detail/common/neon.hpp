// The NEON narrowing store the depthwise and pointwise NEON microkernels share.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/neon.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel {

/// NEON paths: 16 requantized channels (already clamped to T's range, so plain narrowing is exact)
/// into 16 bytes.
template <class T>
[[gnu::always_inline]] inline void narrow_to_bytes(const int16x4_t narrow[4], std::uint8_t bytes[16]) noexcept {
  const int16x8_t low = vcombine_s16(narrow[0], narrow[1]), high = vcombine_s16(narrow[2], narrow[3]);
  if constexpr (element_traits<T>::is_signed) {
    vst1q_u8(bytes, vreinterpretq_u8_s8(vcombine_s8(vmovn_s16(low), vmovn_s16(high))));
  } else {
    vst1q_u8(bytes, vcombine_u8(vmovn_u16(vreinterpretq_u16_s16(low)), vmovn_u16(vreinterpretq_u16_s16(high))));
  }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel

#endif  // MOSAIQ_TARGET_NEON
