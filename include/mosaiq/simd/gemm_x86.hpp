// x86 building blocks of the GEMM-shaped kernels (pointwise): the VNNI dot-product accumulate in a
// form GCC 12 keeps in place.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX512_VNNI

#include <immintrin.h>

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd::avx512 {

/// acc += per-lane sum of 4 (u8 of `unsigned_bytes`) x (s8 of `signed_bytes`): vpdpbusd zmm.
/// Inline asm, not _mm512_dpbusd_epi32: GCC 12 treats the intrinsic's accumulator as a separate
/// destination and copies it (and, in large register tiles, spills it) around every call; the
/// "+v" operand keeps it in one register.
[[gnu::always_inline]] inline void dot_accumulate(__m512i& acc, __m512i unsigned_bytes, __m512i signed_bytes) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(unsigned_bytes), "v"(signed_bytes));
#else
  acc = _mm512_dpbusd_epi32(acc, unsigned_bytes, signed_bytes);
#endif
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd::avx512

#endif
