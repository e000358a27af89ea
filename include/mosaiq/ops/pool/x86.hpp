// Max pool's byte vectors on x86 (ops/pool/simd.hpp's max_window): AVX2's 32 bytes, AVX-512's 64 (masked partial
// vectors, and a 32-channel `half` step), AVX2's partial vectors through a zero-padded copy (ops/pool/padded.hpp);
// `in_register` for ops/pool/dense_sums.hpp.
#pragma once

#include <cstdint>

#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/pool/padded.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX2

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::pooling {

/// An empty asm statement that keeps a vector in a register: the compiler can no longer take it as a memory operand
/// of each instruction that uses it (ops/pool/dense_sums.hpp: one load, not two).
template <class Vector>
[[gnu::always_inline]] inline void in_register(Vector& x) noexcept {
  asm("" : "+v"(x.data));
}

struct bytes256 {
  using vec = __m256i;
  static constexpr int width = 32;
  static vec load(const void* p) noexcept { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(void* p, vec v) noexcept { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  template <class T>
  static vec max(vec a, vec b) noexcept {
    return element_traits<T>::is_signed ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
  }
  template <class T>
  static vec min(vec a, vec b) noexcept {
    return element_traits<T>::is_signed ? _mm256_min_epi8(a, b) : _mm256_min_epu8(a, b);
  }
  static vec set1(std::int32_t v) noexcept { return _mm256_set1_epi8(static_cast<char>(v)); }
};

#if MOSAIQ_TARGET_AVX512
struct bytes512 {
  using vec = __m512i;
  using half = bytes256;  // 32 channels: a full ymm rather than a masked zmm
  static constexpr int width = 64;
  static vec load(const void* p) noexcept { return _mm512_loadu_si512(p); }
  static void store(void* p, vec v) noexcept { _mm512_storeu_si512(p, v); }
  static vec load(const void* p, int n) noexcept { return _mm512_maskz_loadu_epi8(~std::uint64_t{0} >> (64 - n), p); }
  static void store(void* p, vec v, int n) noexcept { _mm512_mask_storeu_epi8(p, ~std::uint64_t{0} >> (64 - n), v); }
  template <class T>
  static vec max(vec a, vec b) noexcept {
    return element_traits<T>::is_signed ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
  }
  template <class T>
  static vec min(vec a, vec b) noexcept {
    return element_traits<T>::is_signed ? _mm512_min_epi8(a, b) : _mm512_min_epu8(a, b);
  }
  static vec set1(std::int32_t v) noexcept { return _mm512_set1_epi8(static_cast<char>(v)); }
};
using bytes_wide = bytes512;
#else   // AVX2 alone
using bytes_wide = padded_partial<bytes256>;
#endif  // MOSAIQ_TARGET_AVX512

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::pooling

#endif  // MOSAIQ_TARGET_AVX2
