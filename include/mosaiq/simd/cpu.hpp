// What the CPU running the program can execute, and which mosaiq target that allows. Used by the
// test binaries (skip a build the CPU cannot run) and by runtime dispatch (mosaiq/dispatch.hpp: pick
// the best of the targets a network was built for). Target-neutral: CPUID and auxv reads only.
//
// A target here means the flag set cmake/MosaiqIsa.cmake builds it with (MOSAIQ_ISA_FLAGS_<name>):
// avx2 is -mavx2 -mfma; avx512_vnni is AVX-512 F/BW/VL/DQ plus VNNI and VBMI (Ice Lake, Zen 4 and
// later; Cascade Lake has VNNI without VBMI and gets the avx512 or avx2 target).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "mosaiq/simd/target.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__linux__) && (defined(__aarch64__) || defined(__arm__))
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

// The one name a target has in every target's objects: the ABI of runtime dispatch. Plain data, so
// it stays outside the per-target namespace (docs/decisions.md).
namespace mosaiq::dispatch {

/// The targets mosaiq builds, best first within each architecture (the order dispatch tries them).
enum class target : std::uint8_t { avx512_vnni, avx512, avx2_vnni, avx2, neon_dotprod, neon64, neon, scalar };

inline constexpr std::size_t target_count = 8;

}  // namespace mosaiq::dispatch

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Target names as MOSAIQ_TARGET_NAMESPACE spells them without "target_", in dispatch::target order.
inline constexpr std::array<std::string_view, dispatch::target_count> target_names = {
    "avx512_vnni", "avx512", "avx2_vnni", "avx2", "neon_dotprod", "neon64", "neon", "scalar"};

constexpr std::string_view to_string(dispatch::target t) noexcept { return target_names[std::size_t(t)]; }

/// The target of this translation unit (the one its MOSAIQ_TARGET_NAMESPACE names).
inline constexpr dispatch::target compiled_target = [] {
  std::size_t i = 0;
  while (target_names[i] != target_name) ++i;
  return dispatch::target(i);
}();

/// The instruction-set extensions a target's flag set uses, as one bit each.
enum class cpu_feature : std::uint32_t {
  avx2 = 1u << 0,
  fma = 1u << 1,
  avx512f = 1u << 2,
  avx512bw = 1u << 3,
  avx512vl = 1u << 4,
  avx512dq = 1u << 5,
  avx512vnni = 1u << 6,
  avx512vbmi = 1u << 7,
  avxvnni = 1u << 8,
  neon = 1u << 9,
  neon_dotprod = 1u << 10,
};

/// A set of cpu_feature bits.
struct cpu_features {
  std::uint32_t bits = 0;
  constexpr cpu_features with(cpu_feature f) const noexcept { return {bits | std::uint32_t(f)}; }
  constexpr bool has(cpu_feature f) const noexcept { return (bits & std::uint32_t(f)) != 0; }
  constexpr bool covers(cpu_features needed) const noexcept { return (bits & needed.bits) == needed.bits; }
};

/// What a target's flag set (cmake/MosaiqIsa.cmake) lets the compiler use.
constexpr cpu_features required_features(dispatch::target t) noexcept {
  using f = cpu_feature;
  constexpr cpu_features avx2 = cpu_features{}.with(f::avx2).with(f::fma);
  constexpr cpu_features avx512 = avx2.with(f::avx512f).with(f::avx512bw).with(f::avx512vl).with(f::avx512dq);
  switch (t) {
    case dispatch::target::avx512_vnni:
      return avx512.with(f::avx512vnni).with(f::avx512vbmi);
    case dispatch::target::avx512:
      return avx512;
    case dispatch::target::avx2_vnni:
      return avx2.with(f::avxvnni);
    case dispatch::target::avx2:
      return avx2;
    case dispatch::target::neon_dotprod:
      return cpu_features{}.with(f::neon).with(f::neon_dotprod);
    case dispatch::target::neon64:
    case dispatch::target::neon:
      return cpu_features{}.with(f::neon);
    case dispatch::target::scalar:
      return {};
  }
  return {};
}

namespace detail {

#if defined(__x86_64__) || defined(__i386__)
inline cpu_features detect_x86() noexcept {
  using f = cpu_feature;
  // libgcc's checks include the OS's XCR0 state for AVX and AVX-512 registers.
  __builtin_cpu_init();
  cpu_features found;
  if (__builtin_cpu_supports("avx2")) found = found.with(f::avx2);
  if (__builtin_cpu_supports("fma")) found = found.with(f::fma);
  if (__builtin_cpu_supports("avx512f")) found = found.with(f::avx512f);
  if (__builtin_cpu_supports("avx512bw")) found = found.with(f::avx512bw);
  if (__builtin_cpu_supports("avx512vl")) found = found.with(f::avx512vl);
  if (__builtin_cpu_supports("avx512dq")) found = found.with(f::avx512dq);
  if (__builtin_cpu_supports("avx512vnni")) found = found.with(f::avx512vnni);
  if (__builtin_cpu_supports("avx512vbmi")) found = found.with(f::avx512vbmi);
  // CPUID.(EAX=7, ECX=1):EAX bit 4; clang 14's __builtin_cpu_supports does not know "avxvnni".
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (found.has(f::avx2) && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0)
    found = found.with(f::avxvnni);
  return found;
}
#endif

inline cpu_features detect() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return detect_x86();
#elif defined(__aarch64__)
  cpu_features found = cpu_features{}.with(cpu_feature::neon);  // Advanced SIMD is part of AArch64
#if defined(__linux__)
  if ((getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0) found = found.with(cpu_feature::neon_dotprod);  // sdot/udot
#endif
  return found;
#elif defined(__arm__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_NEON) != 0 ? cpu_features{}.with(cpu_feature::neon) : cpu_features{};
#elif MOSAIQ_COMPILER_NEON
  return cpu_features{}.with(cpu_feature::neon);
#else
  return {};
#endif
}

}  // namespace detail

/// The extensions of the CPU running the program (read once per process).
inline cpu_features cpu_detected_features() noexcept {
  static const cpu_features found = detail::detect();
  return found;
}

/// Whether this CPU runs code built for `t`. Targets of the other architecture never run.
inline bool cpu_supports(dispatch::target t) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  const bool same_architecture = t <= dispatch::target::avx2 || t == dispatch::target::scalar;
#elif defined(__aarch64__)
  const bool same_architecture = t >= dispatch::target::neon_dotprod;
#elif defined(__arm__)
  const bool same_architecture = t == dispatch::target::neon || t == dispatch::target::scalar;
#else
  const bool same_architecture = t == dispatch::target::scalar;
#endif
  return same_architecture && cpu_detected_features().covers(required_features(t));
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
