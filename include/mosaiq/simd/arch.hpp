// The instruction set mosaiq kernels are compiled for, chosen at compile time from the target
// (-mavx2, -mavx512bw, aarch64 NEON...). Define MOSAIQ_FORCE_SCALAR to build the scalar paths
// on any target (the test suite does, to run the scalar twins on their own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "mosaiq/simd/cpu.hpp"
#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_SIMD
#include <xsimd/xsimd.hpp>
#endif

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd {

/// avx2_vnni: AVX2 plus AVX-VNNI (VEX-encoded 256-bit vpdpbusd: Alder Lake, Sapphire Rapids, Zen 5).
enum class isa { scalar, avx2, avx2_vnni, avx512, avx512_vnni, neon };

/// Tag for the portable scalar paths (also the reference the SIMD paths are tested against).
struct scalar_arch {
  static constexpr std::string_view name() noexcept { return "scalar"; }
};

/// Every ISA level, best first. An op registers each of its paths by specializing its `PathFor<level>` with a member
/// `type`, in the file that defines the path and under that file's target test, so a level has a path exactly where
/// its code is compiled; `native_path_of<PathFor>` is the path of the first level that has one. Every op registers a
/// path for isa::scalar, so adding an ISA is one level here (and its case in `level_compiled`) and one
/// registration per op.
inline constexpr isa levels_best_first[] = {isa::avx512_vnni, isa::avx512, isa::avx2_vnni,
                                            isa::avx2,        isa::neon,   isa::scalar};

/// Whether this translation unit compiles a level's code (simd/target.hpp decides; scalar always).
constexpr bool level_compiled(isa level) noexcept {
  switch (level) {
    case isa::avx512_vnni:
      return MOSAIQ_TARGET_AVX512_VNNI;
    case isa::avx512:
      return MOSAIQ_TARGET_AVX512;
    case isa::avx2_vnni:
      return MOSAIQ_TARGET_AVX2_VNNI;
    case isa::avx2:
      return MOSAIQ_TARGET_AVX2;
    case isa::neon:
      return MOSAIQ_TARGET_NEON;
    case isa::scalar:
      return true;
  }
  return false;
}

consteval isa best_compiled_level() {
  for (isa level : levels_best_first)
    if (level_compiled(level)) return level;
  return isa::scalar;
}

/// The best level this translation unit compiles.
inline constexpr isa native_isa = best_compiled_level();

/// The base of a registration: `template <> struct op_path_for<isa::avx2> : use_path<avx2_path> {};`.
template <class Path>
struct use_path {
  using type = Path;
};

template <template <isa> class PathFor, isa Level>
concept registered_path = requires {
  typename PathFor<Level>::type;
};

template <template <isa> class PathFor, std::size_t Index = 0>
consteval isa first_registered_level() {
  static_assert(Index < std::size(levels_best_first), "an op registers no path for isa::scalar");
  if constexpr (registered_path<PathFor, levels_best_first[Index]>)
    return levels_best_first[Index];
  else
    return first_registered_level<PathFor, Index + 1>();
}

/// The best path an op registers on this target.
template <template <isa> class PathFor>
using native_path_of = typename PathFor<first_registered_level<PathFor>()>::type;

#if MOSAIQ_TARGET_AVX512
using native_arch = xsimd::avx512bw;
#elif MOSAIQ_TARGET_AVX2
using native_arch = xsimd::avx2;
#elif MOSAIQ_TARGET_NEON64
using native_arch = xsimd::neon64;
#elif MOSAIQ_TARGET_NEON
using native_arch = xsimd::neon;
#else
using native_arch = scalar_arch;
#endif

constexpr std::string_view to_string(isa i) noexcept {
  switch (i) {
    case isa::scalar:
      return "scalar";
    case isa::avx2:
      return "avx2";
    case isa::avx2_vnni:
      return "avx2_vnni";
    case isa::avx512:
      return "avx512";
    case isa::avx512_vnni:
      return "avx512_vnni";
    case isa::neon:
      return "neon";
  }
  return "unknown";
}

/// True when the CPU running this binary can execute the ISA it was compiled for. Lets a test
/// binary built for AVX-512 skip itself cleanly on a machine without it.
inline bool cpu_supports_native_isa() noexcept {
  // VBMI is an optional extra of the AVX-512 targets: needed exactly when this unit was built with it.
  cpu_features needed{required_features(compiled_target).bits & ~std::uint32_t(cpu_feature::avx512vbmi)};
  if (MOSAIQ_TARGET_AVX512_VBMI) needed = needed.with(cpu_feature::avx512vbmi);
  return cpu_detected_features().covers(needed);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd
