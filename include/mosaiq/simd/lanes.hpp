// The lane family of the element-wise, pooling and softmax kernels: blocks of 16 8-bit (or 16-bit) elements widened to
// int32 lanes, held as xsimd::batch of the native arch (1 zmm on AVX-512, 2 ymm on AVX2, 4 q registers on NEON).
//
// xsimd gives the lane type and what it covers well: broadcast, load/store, + - * (low 32 bits), xor/and, shifts,
// min/max, compares, int<->float conversion. What xsimd 8.1 lacks is added the xsimd way, as overloads taking the
// arch tag in simd/lanes/<arch>.hpp (widening loads, narrowing stores, compare masks as -1/0 lanes, the TFLite
// rounding multiply, gathers, a correctly rounded reciprocal); the functions below call them with the native arch.
// A new ISA is one more simd/lanes/<arch>.hpp with those overloads.
//
// Every operation is exact two's complement / IEEE single arithmetic, so a kernel written on these functions computes
// what its scalar formula computes on every ISA. The requantization steps are the lane functions of simd/x86.hpp and
// simd/neon.hpp, proven equal to core/quant.hpp by tests/quant_test.cpp. Scalar builds (MOSAIQ_TARGET_SCALAR) have
// no lanes: the kernels call the reference ops.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_SIMD

#include <cstdint>
#include <xsimd/xsimd.hpp>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/lanes/neon.hpp"
#include "mosaiq/simd/lanes/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace lanes {

using arch = simd::native_arch;
using reg = xsimd::batch<std::int32_t, arch>;
using freg = xsimd::batch<float, arch>;
inline constexpr int block = 16;                                  // elements per block
inline constexpr int regs = block / static_cast<int>(reg::size);  // registers per block

/// 16 elements of T widened to int32.
template <quantized_element T>
[[gnu::always_inline]] inline void widen(const T* p, reg* r) noexcept {
  kernel::widen<T>(p, r, arch{});
}
/// 16 int32 stored as T; values must already be in T's range.
template <quantized_element T>
[[gnu::always_inline]] inline void narrow(T* p, const reg* r) noexcept {
  kernel::narrow<T>(p, r, arch{});
}
/// 16 int16 widened to int32.
[[gnu::always_inline]] inline void widen_16(const std::int16_t* p, reg* r) noexcept { kernel::widen_16(p, r, arch{}); }
/// 16 int32 stored as int16; values must already be in int16's range.
[[gnu::always_inline]] inline void narrow_16(std::int16_t* p, const reg* r) noexcept {
  kernel::narrow_16(p, r, arch{});
}
/// 16 int32.
[[gnu::always_inline]] inline void load(const std::int32_t* p, reg* r) noexcept {
  for (int j = 0; j < regs; ++j) r[j] = reg::load_unaligned(p + j * static_cast<int>(reg::size));
}

/// 16 int32 stored.
[[gnu::always_inline]] inline void store(std::int32_t* p, const reg* r) noexcept {
  for (int j = 0; j < regs; ++j) r[j].store_unaligned(p + j * static_cast<int>(reg::size));
}

/// A compare's result as lanes: -1 where it holds, 0 elsewhere (so v - ones_where(c) adds one where c holds).
template <class T>
[[gnu::always_inline]] inline reg ones_where(xsimd::batch_bool<T, arch> m) noexcept {
  return kernel::ones_where(m, arch{});
}
/// v where mask holds, 0 elsewhere.
template <class T>
[[gnu::always_inline]] inline reg keep_where(xsimd::batch_bool<T, arch> m, reg v) noexcept {
  return ones_where(m) & v;
}

[[gnu::always_inline]] inline freg to_float(reg a) noexcept { return xsimd::batch_cast<float>(a); }
/// Conversion toward zero.
[[gnu::always_inline]] inline reg truncate(freg a) noexcept { return xsimd::batch_cast<std::int32_t>(a); }

/// MultiplyByQuantizedMultiplier per lane (core/quant.hpp), rounding R.
template <rounding R>
[[gnu::always_inline]] inline reg multiply(reg x, reg multiplier, reg left_shift, reg right_shift) noexcept {
  return kernel::multiply<R>(x, multiplier, left_shift, right_shift, arch{});
}
/// multiply<R> by a multiplier >= 0 with no left shift as one rounding: floor((x * multiplier + offset) /
/// 2^(31 + exponent)), offset_nonnegative where x * multiplier >= 0, else offset_negative. Its domain (where it equals
/// multiply<R>, kernels::eltwise16::folded_scale): |x| <= 2^30, exponent <= 30.
template <rounding R>
[[gnu::always_inline]] inline reg multiply_folded(reg x, std::int32_t multiplier, std::int32_t exponent,
                                                  std::int64_t offset_nonnegative,
                                                  std::int64_t offset_negative) noexcept {
  return kernel::multiply_folded<R>(x, multiplier, exponent, offset_nonnegative, offset_negative, arch{});
}
/// RoundingDivideByPOT per lane (ties away from zero), exponent in [0, 31].
[[gnu::always_inline]] inline reg rounding_divide_by_pot(reg x, reg exponent) noexcept {
  return kernel::rounding_divide_by_pot(x, exponent, arch{});
}
/// table[index] per lane, indices in range.
[[gnu::always_inline]] inline reg gather(const std::uint32_t* table, reg index) noexcept {
  return kernel::gather(table, index, arch{});
}
/// 1 / float(d) for d > 0, correctly rounded.
[[gnu::always_inline]] inline freg reciprocal(reg d) noexcept { return kernel::reciprocal(d, arch{}); }

/// One multiplier broadcast to every lane, for multiply.
struct scale_regs {
  reg multiplier, left_shift, right_shift;
  static scale_regs of(requant_scale s) noexcept { return {reg(s.multiplier), reg(s.left_shift), reg(s.right_shift)}; }
};

/// round(v) half away from zero (std::round), clamped to [-2^24, 2^24], as int32. Clamping first changes nothing:
/// floats beyond 2^23 are integers. v - trunc(v) is exact, so the tie test is exact.
[[gnu::always_inline]] inline reg round_half_away(freg v) noexcept {
  const freg limit(16777216.0f);
  v = xsimd::min(xsimd::max(v, freg(0.0f) - limit), limit);
  reg t = truncate(v);
  const freg fraction = v - to_float(t);
  t -= ones_where(fraction >= freg(0.5f));   // +1 at fraction >= 1/2
  t += ones_where(freg(-0.5f) >= fraction);  // -1 at fraction <= -1/2
  return t;
}

/// Divisor d >= 1 of rounded_divide, in the forms the vector division uses.
struct divisor_regs {
  reg d, d_minus_one, half;
  freg reciprocal;
  static divisor_regs of(std::int32_t d) noexcept {
    return {reg(d), reg(d - 1), reg(d / 2), freg(1.0f / static_cast<float>(d))};
  }
};

/// numerator / d rounded down, exactly, for 0 <= numerator < 2^24 (or, with a float numerator nf computed
/// otherwise, whenever nf * fl(1/d) is within one of the exact quotient): the float quotient's truncation is off by
/// at most one, and the remainder, exact mod 2^32, corrects it.
[[gnu::always_inline]] inline reg floor_divide(reg numerator, freg numerator_float, reg d, reg d_minus_one,
                                               freg reciprocal) noexcept {
  reg q = truncate(numerator_float * reciprocal);
  const reg remainder = numerator - q * d;
  q -= ones_where(remainder > d_minus_one);  // remainder >= d: one more
  q += ones_where(reg(0) > remainder);       // remainder < 0: one less
  return q;
}

/// reference::detail::rounded_divide(sum, d) = sign(sum) * floor((|sum| + d/2) / d), for |sum| + d/2 < 2^24: the
/// float quotient (|sum| + d/2) * fl(1/d) is within one of the exact one, and the remainder corrects it.
[[gnu::always_inline]] inline reg rounded_divide(reg sum, const divisor_regs& d) noexcept {
  const reg numerator = xsimd::abs(sum) + d.half;
  const reg q = floor_divide(numerator, to_float(numerator), d.d, d.d_minus_one, d.reciprocal);
  const reg negative = sum >> 31;
  return (q ^ negative) - negative;
}

}  // namespace lanes
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_SIMD
