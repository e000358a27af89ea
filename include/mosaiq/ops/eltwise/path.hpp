// Element-wise ops, the paths: what a target's own kernels add to the lane kernels of ops/eltwise/simd.hpp. Every
// target's path is lanes_path or extends it (ops/eltwise/avx2.hpp, avx512.hpp, neon.hpp); ops/eltwise.hpp picks the
// target's one and asks it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// MUL's requantization with its two roundings folded into one floor (exact), the constants the x86 paths' folded
/// steps broadcast (ops/eltwise/avx2.hpp, avx512.hpp). With P = (product << left) * M:
/// SaturatingRoundingDoublingHighMul is Q = floor((P + 2^30) / 2^31) (M is never INT32_MIN, so it never saturates), and
/// RoundingDivideByPOT(Q, e) = floor((Q + 2^(e-1) - [Q < 0]) / 2^e) = floor(Q' / 2^e) with Q' = floor((P + 2^30 +
/// 2^(30+e)) / 2^31) - [Q < 0]. Q < 0 exactly when P < -2^30; the correction is applied for every negative product
/// instead (M is 0 or in [2^30, 2^31)), which differs only where P + 2^30 is in [0, 2^30): there Q' is 2^(e-1) or
/// 2^(e-1) - 1, both 0 after the shift by e >= 1. Single rounding with shift <= 0 is floor((P + 2^(n-1)) / 2^n), n = 31
/// - shift >= 31: the same steps without the correction. Bits 31..62 of the 64-bit sums hold Q' (|P| < 2^62), so one
/// pair of 32x32->64 multiplies and three shifts replace the general lane multiply.
struct mul_fold {
  std::int32_t multiplier = 0;
  std::int64_t beta = 0;               ///< 2^30 (+ 2^(30+e) with two roundings), or 2^(30+e) (single rounding)
  std::int32_t threshold = INT32_MIN;  ///< products below it get the correction; INT32_MIN: none does
  int left = 0, right = 0;             ///< the product's left shift, e
  bool usable = false;                 ///< false: single rounding with shift > 0 (n < 31), the general multiply

  template <rounding R>
  static mul_fold of(const reference::mul_params& p) noexcept {
    const quantized_multiplier q = p.output_multiplier;
    mul_fold k{};
    k.left = q.shift > 0 ? q.shift : 0;
    k.right = q.shift < 0 ? -q.shift : 0;
    k.beta = std::int64_t{1} << 30;
    if constexpr (R == rounding::tflite_reference) {
      if (k.right > 0) {
        k.beta += std::int64_t{1} << (30 + k.right);
        k.threshold = 0;
      }
    } else {
      if (q.shift > 0) return k;
      k.beta = std::int64_t{1} << (30 + k.right);
    }
    k.multiplier = q.multiplier;
    k.usable = true;
    return k;
  }

  /// Whether products are not shifted: then every result is at most 65,025 in magnitude (|product| <= 255^2, M <
  /// 2^31), so the element-wise kernels may saturate it to 16 bits before adding the zero point.
  bool narrow() const noexcept { return usable && left == 0; }
};

/// The MUL output step of paths without a folded one: nothing to hold, never used.
struct no_mul_folded {
  template <rounding R>
  static no_mul_folded of(const reference::mul_params&) noexcept {
    return {};
  }
};

/// The path of targets without element-wise kernels of their own (armv7 NEON; scalar builds run the reference ops).
struct lanes_path {
  /// Whether add builds per-input tables at load and runs them where they are exact (add_tables_broadcast).
  static constexpr bool add_tables = false;
  /// Whether add also builds its linear form (add_linear.hpp) at load and runs it in front of the tables.
  static constexpr bool linear_add = false;
  /// MUL's output step with its two roundings folded into one (used where its `usable`), or no_mul_folded.
  using mul_folded = no_mul_folded;
};

/// The path element-wise runs on an ISA level, registered by the file that defines it (simd::native_path_of).
template <simd::isa>
struct path_for {};

template <>
struct path_for<simd::isa::scalar> : simd::use_path<lanes_path> {};

/// What a target adds in front of the held lines' lane blocks (held_lines.hpp, line_row): columns of channels whose
/// lines stay in registers across a row (AVX2 without AVX-512: 32 channels), registered per level.
template <simd::isa>
struct line_columns_for {};

/// Targets without such columns: the lane blocks do every channel.
struct no_line_columns {
  struct regs {
    template <quantized_element T>
    static regs of(std::int32_t, clamp_range, int) noexcept {
      return {};
    }
  };
  template <bool Split, quantized_element T>
  static std::size_t run(const T*, std::ptrdiff_t, T*, std::ptrdiff_t, int, const std::int32_t*, const std::int32_t*,
                         const std::int32_t*, std::size_t, const regs&) noexcept {
    return 0;
  }
};

template <>
struct line_columns_for<simd::isa::scalar> : simd::use_path<no_line_columns> {};

/// Whether Path has a folded MUL output step.
template <class Path>
inline constexpr bool folds_mul = !std::same_as<typename Path::mul_folded, no_mul_folded>;

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise
