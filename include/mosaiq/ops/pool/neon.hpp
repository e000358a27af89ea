// Max pool's byte vectors on NEON (ops/pool/simd.hpp's max_window), aarch64 and armv7; `in_register` for
// ops/pool/dense_sums.hpp.
#pragma once

#include <cstdint>

#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/pool/padded.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::pooling {

/// An empty asm statement that keeps a vector in a register (ops/pool/x86.hpp's twin).
template <class Vector>
[[gnu::always_inline]] inline void in_register(Vector& x) noexcept {
  asm("" : "+w"(x.data));
}

/// NEON (aarch64 and armv7): bytes held unsigned, reinterpreted as signed for i8.
struct bytes128 {
  using vec = uint8x16_t;
  static constexpr int width = 16;
  static vec load(const void* p) noexcept { return vld1q_u8(static_cast<const std::uint8_t*>(p)); }
  static void store(void* p, vec v) noexcept { vst1q_u8(static_cast<std::uint8_t*>(p), v); }
  template <class T>
  static vec max(vec a, vec b) noexcept {
    if constexpr (element_traits<T>::is_signed)
      return vreinterpretq_u8_s8(vmaxq_s8(vreinterpretq_s8_u8(a), vreinterpretq_s8_u8(b)));
    else
      return vmaxq_u8(a, b);
  }
  template <class T>
  static vec min(vec a, vec b) noexcept {
    if constexpr (element_traits<T>::is_signed)
      return vreinterpretq_u8_s8(vminq_s8(vreinterpretq_s8_u8(a), vreinterpretq_s8_u8(b)));
    else
      return vminq_u8(a, b);
  }
  static vec set1(std::int32_t v) noexcept { return vdupq_n_u8(static_cast<std::uint8_t>(v)); }
};
/// Partial vectors through a zero-padded copy.
using bytes_wide = padded_partial<bytes128>;

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::pooling

#endif  // MOSAIQ_TARGET_NEON
