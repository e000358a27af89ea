// The instruction set mosaiq kernels are compiled for, chosen at compile time from the target
// (-mavx2, -mavx512bw, aarch64 NEON...). Define MOSAIQ_FORCE_SCALAR to build the scalar paths
// on any target (the test suite does, to run the scalar twins on their own).
#pragma once

#include <string_view>

#if !defined(MOSAIQ_FORCE_SCALAR)
#include <xsimd/xsimd.hpp>
#endif
#if defined(__AVXVNNI__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace mosaiq::simd {

/// avx2_vnni: AVX2 plus AVX-VNNI (VEX-encoded 256-bit vpdpbusd: Alder Lake, Sapphire Rapids, Zen 5).
enum class isa { scalar, avx2, avx2_vnni, avx512, avx512_vnni, neon };

/// Tag for the portable scalar paths (also the reference the SIMD paths are tested against).
struct scalar_arch {
  static constexpr std::string_view name() noexcept { return "scalar"; }
};

#if defined(MOSAIQ_FORCE_SCALAR)
inline constexpr isa native_isa = isa::scalar;
using native_arch = scalar_arch;
#elif defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#if defined(__AVX512VNNI__)
inline constexpr isa native_isa = isa::avx512_vnni;
#else
inline constexpr isa native_isa = isa::avx512;
#endif
using native_arch = xsimd::avx512bw;
#elif defined(__AVX2__)
#if defined(__AVXVNNI__)
inline constexpr isa native_isa = isa::avx2_vnni;
#else
inline constexpr isa native_isa = isa::avx2;
#endif
using native_arch = xsimd::avx2;
#elif defined(__ARM_NEON) && defined(__aarch64__)
inline constexpr isa native_isa = isa::neon;
using native_arch = xsimd::neon64;
#elif defined(__ARM_NEON)
inline constexpr isa native_isa = isa::neon;
using native_arch = xsimd::neon;
#else
inline constexpr isa native_isa = isa::scalar;
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
#if defined(__x86_64__) || defined(__i386__)
  // Every x86 extension this translation unit was compiled to use must be present.
  __builtin_cpu_init();
  bool ok = true;
#if defined(__AVX2__)
  ok = ok && __builtin_cpu_supports("avx2");
#endif
#if defined(__FMA__)
  ok = ok && __builtin_cpu_supports("fma");
#endif
#if defined(__AVX512F__)
  ok = ok && __builtin_cpu_supports("avx512f");
#endif
#if defined(__AVX512BW__)
  ok = ok && __builtin_cpu_supports("avx512bw");
#endif
#if defined(__AVX512VL__)
  ok = ok && __builtin_cpu_supports("avx512vl");
#endif
#if defined(__AVX512DQ__)
  ok = ok && __builtin_cpu_supports("avx512dq");
#endif
#if defined(__AVX512VNNI__)
  ok = ok && __builtin_cpu_supports("avx512vnni");
#endif
#if defined(__AVX512VBMI__)
  ok = ok && __builtin_cpu_supports("avx512vbmi");
#endif
#if defined(__AVXVNNI__)
  // CPUID.(EAX=7, ECX=1):EAX bit 4; clang 14's __builtin_cpu_supports does not know "avxvnni".
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  ok = ok && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
#endif
  return ok;
#elif defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD) && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;  // sdot/udot
#else
  return true;
#endif
}

}  // namespace mosaiq::simd
