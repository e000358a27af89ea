// add's table kernel on aarch64: byte planes looked up with tbl/tbx (armv7, with 64-bit tables only, keeps the
// arithmetic pipeline), and the aarch64 path: element-wise runs on the tables, held inputs on the pipeline.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_NEON64

#include <arm_neon.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/add_tables.hpp"
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/ops/eltwise/simd.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// The table add on 16 elements per step: each byte plane is looked up with one tbl and three tbx over 64-byte
/// quarters, the levels are added as 16-bit words, the carry is a byte compare of the ranks, then a saturating
/// narrow and the activation clamp. armv7 (64-bit tbl only) keeps the arithmetic pipeline.
struct add_table_regs {
  const add_tables* tables;
  int8x16_t lo, hi;  // the clamp, as bytes of T (unsigned T compared on the same bits reinterpreted)

  add_table_regs(const add_tables& t, clamp_range clamp) noexcept
      : tables(&t),
        lo(vdupq_n_s8(static_cast<std::int8_t>(clamp.min))),
        hi(vdupq_n_s8(static_cast<std::int8_t>(clamp.max))) {}
};

[[gnu::always_inline]] inline uint8x16_t lookup_bytes(const std::array<std::uint8_t, 256>& plane,
                                                      const uint8x16_t (&index)[4]) noexcept {
  uint8x16_t r = vqtbl4q_u8(vld1q_u8_x4(plane.data()), index[0]);
  r = vqtbx4q_u8(r, vld1q_u8_x4(plane.data() + 64), index[1]);
  r = vqtbx4q_u8(r, vld1q_u8_x4(plane.data() + 128), index[2]);
  return vqtbx4q_u8(r, vld1q_u8_x4(plane.data() + 192), index[3]);
}

template <quantized_element T>
[[gnu::always_inline]] inline void add_table_block(const T* a, const T* b, T* out, const add_table_regs& k) noexcept {
  const auto& planes = k.tables->planes;
  const uint8x16_t ia = vld1q_u8(reinterpret_cast<const std::uint8_t*>(a));
  const uint8x16_t ib = vld1q_u8(reinterpret_cast<const std::uint8_t*>(b));
  const uint8x16_t ja[4] = {ia, vsubq_u8(ia, vdupq_n_u8(64)), vsubq_u8(ia, vdupq_n_u8(128)),
                            vsubq_u8(ia, vdupq_n_u8(192))};
  const uint8x16_t jb[4] = {ib, vsubq_u8(ib, vdupq_n_u8(64)), vsubq_u8(ib, vdupq_n_u8(128)),
                            vsubq_u8(ib, vdupq_n_u8(192))};
  const uint8x16_t carry = vcgtq_u8(lookup_bytes(planes[0], ja), lookup_bytes(planes[3], jb));  // 0xff / 0
  const uint8x16_t low1 = lookup_bytes(planes[1], ja), high1 = lookup_bytes(planes[2], ja);
  const uint8x16_t low2 = lookup_bytes(planes[4], jb), high2 = lookup_bytes(planes[5], jb);
  const int16x8_t first =
      vsubq_s16(vaddq_s16(vreinterpretq_s16_u8(vzip1q_u8(low1, high1)), vreinterpretq_s16_u8(vzip1q_u8(low2, high2))),
                vreinterpretq_s16_u8(vzip1q_u8(carry, carry)));
  const int16x8_t second =
      vsubq_s16(vaddq_s16(vreinterpretq_s16_u8(vzip2q_u8(low1, high1)), vreinterpretq_s16_u8(vzip2q_u8(low2, high2))),
                vreinterpretq_s16_u8(vzip2q_u8(carry, carry)));
  if constexpr (element_traits<T>::is_signed) {
    const int8x16_t r = vcombine_s8(vqmovn_s16(first), vqmovn_s16(second));
    vst1q_s8(reinterpret_cast<std::int8_t*>(out), vminq_s8(vmaxq_s8(r, k.lo), k.hi));
  } else {
    const uint8x16_t r = vcombine_u8(vqmovun_s16(first), vqmovun_s16(second));
    vst1q_u8(reinterpret_cast<std::uint8_t*>(out),
             vminq_u8(vmaxq_u8(r, vreinterpretq_u8_s8(k.lo)), vreinterpretq_u8_s8(k.hi)));
  }
}

template <quantized_element T>
inline void add_table_span(const T* a, const T* b, T* out, std::size_t n, const add_table_regs& k) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) add_table_block<T>(a + i, b + i, out + i, k);
  if (i < n) {
    T ta[16] = {}, tb[16] = {}, to[16];
    std::memcpy(ta, a + i, (n - i) * sizeof(T));
    std::memcpy(tb, b + i, (n - i) * sizeof(T));
    add_table_block<T>(ta, tb, to, k);
    std::memcpy(out + i, to, (n - i) * sizeof(T));
  }
}

/// Tables without a gather (aarch64 tbl): element-wise runs on the tables, held inputs on the pipeline.
template <rounding R, quantized_element T>
struct add_mixed_kernels : add_pipeline_kernels<R, T> {
  add_table_regs table_regs;

  add_mixed_kernels(const reference::add_params& p, const add_tables& t, const held_line_sides* held)
      : add_pipeline_kernels<R, T>(p, held), table_regs(t, p.clamp) {}
  void pair(const T* a, const T* b, T* out, std::size_t n) const { add_table_span<T>(a, b, out, n, table_regs); }
};

template <rounding R, quantized_element T>
inline void add_tables_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b,
                                 const tensor_view<T>& out, const reference::add_params& params,
                                 const add_tables& tables, const held_line_sides* lines) {
  run_broadcast(a, b, out, add_mixed_kernels<R, T>(params, tables, lines));
}

/// The aarch64 path: add's tables.
struct neon_path : lanes_path {
  static constexpr bool add_tables = true;
};

template <>
struct path_for<simd::isa::neon> : simd::use_path<neon_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise

#endif
