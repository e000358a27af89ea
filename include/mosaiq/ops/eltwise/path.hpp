// Element-wise ops, the paths: what a target's own kernels add to the lane kernels of ops/eltwise/simd.hpp. Every
// target's path is lanes_path or extends it (ops/eltwise/avx2.hpp, avx512.hpp, neon.hpp); ops/eltwise.hpp picks the
// target's one and asks it.
#pragma once

#include "mosaiq/core/quant.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

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

/// Whether Path has a folded MUL output step.
template <class Path>
inline constexpr bool folds_mul = !std::same_as<typename Path::mul_folded, no_mul_folded>;

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise
