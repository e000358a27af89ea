// The one place that decides which instruction-set targets a translation unit builds. Everything
// else (op front ends, per-ISA kernel files, tests) asks these macros instead of the compiler's raw
// ISA macros (__AVX2__, __AVX512VNNI__, __ARM_NEON...).
//
// Each MOSAIQ_TARGET_* is 0 or 1 and they nest: a target implies the ones it extends
// (AVX512_VNNI -> AVX512 -> AVX2; NEON_DOTPROD -> NEON). MOSAIQ_FORCE_SCALAR turns every SIMD
// target off, so the scalar twins can be built and tested on any machine.
//
// MOSAIQ_TARGET_NAMESPACE names the inline namespace that holds everything whose code depends on
// the target (kernels, packed weights, networks), the role of Highway's HWY_NAMESPACE: objects
// built for different targets then define differently mangled symbols and link into one program.
#pragma once

#include <string_view>

// --- x86 ---
#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX2__)
#define MOSAIQ_TARGET_AVX2 1
#else
#define MOSAIQ_TARGET_AVX2 0
#endif

#if MOSAIQ_TARGET_AVX2 && defined(__AVXVNNI__)
#define MOSAIQ_TARGET_AVX2_VNNI 1
#else
#define MOSAIQ_TARGET_AVX2_VNNI 0
#endif

#if MOSAIQ_TARGET_AVX2 && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512DQ__)
#define MOSAIQ_TARGET_AVX512 1
#else
#define MOSAIQ_TARGET_AVX512 0
#endif

#if MOSAIQ_TARGET_AVX512 && defined(__AVX512VNNI__)
#define MOSAIQ_TARGET_AVX512_VNNI 1
#else
#define MOSAIQ_TARGET_AVX512_VNNI 0
#endif

// VBMI (byte permutes) is an optional extra of the AVX-512 targets, not a target of its own.
#if MOSAIQ_TARGET_AVX512 && defined(__AVX512VBMI__)
#define MOSAIQ_TARGET_AVX512_VBMI 1
#else
#define MOSAIQ_TARGET_AVX512_VBMI 0
#endif

// --- Arm ---
#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__ARM_NEON)
#define MOSAIQ_TARGET_NEON 1
#else
#define MOSAIQ_TARGET_NEON 0
#endif

#if MOSAIQ_TARGET_NEON && defined(__aarch64__)
#define MOSAIQ_TARGET_NEON64 1
#else
#define MOSAIQ_TARGET_NEON64 0
#endif

#if MOSAIQ_TARGET_NEON64 && defined(__ARM_FEATURE_DOTPROD)
#define MOSAIQ_TARGET_NEON_DOTPROD 1
#else
#define MOSAIQ_TARGET_NEON_DOTPROD 0
#endif

// Whether the compiler emits NEON for this unit whatever MOSAIQ_FORCE_SCALAR says: what the CPU must
// have to run the unit at all (simd/cpu.hpp assumes it where the OS reports no feature bits).
#if defined(__ARM_NEON)
#define MOSAIQ_COMPILER_NEON 1
#else
#define MOSAIQ_COMPILER_NEON 0
#endif

#define MOSAIQ_TARGET_X86 MOSAIQ_TARGET_AVX2
#define MOSAIQ_TARGET_SIMD (MOSAIQ_TARGET_AVX2 || MOSAIQ_TARGET_NEON)
#define MOSAIQ_TARGET_SCALAR (!MOSAIQ_TARGET_SIMD)

// --- the per-target namespace: the best target this translation unit builds ---
#if MOSAIQ_TARGET_AVX512_VNNI
#define MOSAIQ_TARGET_NAMESPACE target_avx512_vnni
#elif MOSAIQ_TARGET_AVX512
#define MOSAIQ_TARGET_NAMESPACE target_avx512
#elif MOSAIQ_TARGET_AVX2_VNNI
#define MOSAIQ_TARGET_NAMESPACE target_avx2_vnni
#elif MOSAIQ_TARGET_AVX2
#define MOSAIQ_TARGET_NAMESPACE target_avx2
#elif MOSAIQ_TARGET_NEON_DOTPROD
#define MOSAIQ_TARGET_NAMESPACE target_neon_dotprod
#elif MOSAIQ_TARGET_NEON64
#define MOSAIQ_TARGET_NAMESPACE target_neon64
#elif MOSAIQ_TARGET_NEON
#define MOSAIQ_TARGET_NAMESPACE target_neon
#else
#define MOSAIQ_TARGET_NAMESPACE target_scalar
#endif

#define MOSAIQ_DETAIL_STRINGIZE_TOKEN(x) #x
#define MOSAIQ_DETAIL_STRINGIZE(x) MOSAIQ_DETAIL_STRINGIZE_TOKEN(x)

// Every mosaiq header opens its namespace as `namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {`:
// user code still spells `mosaiq::network<...>`, and the symbols carry the target in their names.
// Only the types of mosaiq/dispatch.hpp stay outside (they carry no code: docs/decisions.md).
namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// The target this translation unit builds: MOSAIQ_TARGET_NAMESPACE without its "target_" prefix.
inline constexpr std::string_view target_name =
    std::string_view(MOSAIQ_DETAIL_STRINGIZE(MOSAIQ_TARGET_NAMESPACE)).substr(sizeof("target_") - 1);

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
