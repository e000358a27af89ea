// add's table kernels on AVX-512: byte-plane lookups with vpermi2b (VBMI), else dword gathers; the broadcast
// (held-term) span with gathers; MUL's folded requantization (element-wise on 16-bit products, 64 per step);
// avx512_path says so.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX512

#include <immintrin.h>

#include <bit>
#include <cstddef>
#include <cstdint>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/add_linear.hpp"
#include "mosaiq/ops/eltwise/add_tables.hpp"
#include "mosaiq/ops/eltwise/mul_words.hpp"
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/ops/eltwise/x86_regs.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

#if MOSAIQ_TARGET_AVX512_VBMI
/// The table add on 64 elements per step: each byte plane is a 256-entry byte table in 4 zmm, looked up with two
/// vpermi2b (index bits 0..6) and a blend on bit 7; the levels are added as 16-bit words, the carry is a byte compare
/// of the ranks, and a saturating pack plus the activation clamp give the output.
struct add_table_regs {
  __m512i planes[6][4];
  __m512i lo, hi;

  add_table_regs(const add_tables& t, clamp_range clamp) noexcept
      : lo(_mm512_set1_epi8(static_cast<char>(clamp.min))), hi(_mm512_set1_epi8(static_cast<char>(clamp.max))) {
    for (int p = 0; p < 6; ++p)
      for (int q = 0; q < 4; ++q)
        planes[p][q] = _mm512_loadu_si512(t.planes[static_cast<std::size_t>(p)].data() + 64 * q);
  }
};

[[gnu::always_inline]] inline __m512i lookup_bytes(const __m512i* table, __m512i index, __mmask64 high) noexcept {
  return _mm512_mask_blend_epi8(high, _mm512_permutex2var_epi8(table[0], index, table[1]),
                                _mm512_permutex2var_epi8(table[2], index, table[3]));
}

template <quantized_element T>
[[gnu::always_inline]] inline void add_table_block(const T* a, const T* b, T* out, __mmask64 m,
                                                   const add_table_regs& k) noexcept {
  const __m512i ia = _mm512_maskz_loadu_epi8(m, a), ib = _mm512_maskz_loadu_epi8(m, b);
  const __mmask64 ha = _mm512_movepi8_mask(ia), hb = _mm512_movepi8_mask(ib);
  const __m512i carry = _mm512_movm_epi8(
      _mm512_cmpgt_epu8_mask(lookup_bytes(k.planes[0], ia, ha), lookup_bytes(k.planes[3], ib, hb)));  // -1 / 0
  const __m512i low1 = lookup_bytes(k.planes[1], ia, ha), high1 = lookup_bytes(k.planes[2], ia, ha);
  const __m512i low2 = lookup_bytes(k.planes[4], ib, hb), high2 = lookup_bytes(k.planes[5], ib, hb);
  const __m512i first =
      _mm512_sub_epi16(_mm512_add_epi16(_mm512_unpacklo_epi8(low1, high1), _mm512_unpacklo_epi8(low2, high2)),
                       _mm512_unpacklo_epi8(carry, carry));
  const __m512i second =
      _mm512_sub_epi16(_mm512_add_epi16(_mm512_unpackhi_epi8(low1, high1), _mm512_unpackhi_epi8(low2, high2)),
                       _mm512_unpackhi_epi8(carry, carry));
  __m512i r;
  if constexpr (element_traits<T>::is_signed)
    r = _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(first, second), k.lo), k.hi);
  else
    r = _mm512_min_epu8(_mm512_max_epu8(_mm512_packus_epi16(first, second), k.lo), k.hi);
  _mm512_mask_storeu_epi8(out, m, r);
}

template <quantized_element T>
inline void add_table_span(const T* a, const T* b, T* out, std::size_t n, const add_table_regs& k) noexcept {
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) add_table_block<T>(a + i, b + i, out + i, ~__mmask64{0}, k);
  if (i < n) add_table_block<T>(a + i, b + i, out + i, (std::uint64_t{1} << (n - i)) - 1, k);
}
#else
/// The table add on 16 elements per step with two dword gathers.
struct add_table_regs {
  const std::int32_t* first;
  const std::int32_t* second;
  __m512i lo, hi;

  add_table_regs(const add_tables& t, clamp_range clamp) noexcept
      : first(t.first.data()),
        second(t.second.data()),
        lo(_mm512_set1_epi32(clamp.min)),
        hi(_mm512_set1_epi32(clamp.max)) {}
};

template <quantized_element T>
[[gnu::always_inline]] inline void add_table_block(const T* a, const T* b, T* out, __mmask16 m,
                                                   const add_table_regs& k) noexcept {
  const __m512i ia = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, a));
  const __m512i ib = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, b));
  const __m512i sum = _mm512_add_epi32(_mm512_i32gather_epi32(ia, k.first, 4), _mm512_i32gather_epi32(ib, k.second, 4));
  const __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(sum, 8), k.lo), k.hi);
  _mm512_mask_cvtepi32_storeu_epi8(out, m, r);
}

template <quantized_element T>
inline void add_table_span(const T* a, const T* b, T* out, std::size_t n, const add_table_regs& k) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) add_table_block<T>(a + i, b + i, out + i, __mmask16{0xffff}, k);
  if (i < n) add_table_block<T>(a + i, b + i, out + i, static_cast<__mmask16>((1u << (n - i)) - 1), k);
}
#endif

/// The 512-bit instructions of MUL's folded kernels (ops/eltwise/mul_words.hpp; see ymm_ops in avx2.hpp).
struct zmm_ops {
  using vec = __m512i;
  static constexpr std::size_t bytes = 64;
  static vec mul_even(vec a, vec b) noexcept { return _mm512_mul_epi32(a, b); }
  /// The even dwords of even, the odd ones of odd.
  static vec odd_dwords(vec even, vec odd) noexcept { return _mm512_mask_blend_epi32(0xaaaa, even, odd); }
  /// The odd (high) dwords of even and of odd, in place of the even and the odd dwords.
  static vec high_dwords(vec even, vec odd) noexcept {
    return _mm512_mask_shuffle_epi32(odd, 0x5555, even, _MM_PERM_DDBB);
  }
  static vec mulhi16(vec a, vec b) noexcept { return _mm512_mulhi_epi16(a, b); }
  static vec adds16(vec a, vec b) noexcept { return _mm512_adds_epi16(a, b); }
  static vec packs32(vec a, vec b) noexcept { return _mm512_packs_epi32(a, b); }
  static vec widen_bytes(vec v, int h) noexcept {
    return h ? _mm512_unpackhi_epi8(v, _mm512_setzero_si512()) : _mm512_unpacklo_epi8(v, _mm512_setzero_si512());
  }
  static vec interleave_words(vec low, vec high, int h) noexcept {
    return h ? _mm512_unpackhi_epi16(low, high) : _mm512_unpacklo_epi16(low, high);
  }
  template <bool Signed>
  static vec pack16(vec a, vec b) noexcept {
    return Signed ? _mm512_packs_epi16(a, b) : _mm512_packus_epi16(a, b);
  }
};

/// add's linear form (add_linear.hpp) in zmm registers.
using add_linear_regs = linear_add_regs<zmm_ops>;

/// 64 elements (mask m) on the linear form: t = a A + b B + C with two vpmulld per 16, a lane flagged when t's
/// fraction is below the band; a block with a flagged lane runs on `exact(a, b, out, n)` (the tables or the arithmetic
/// pipeline; nothing written before, so out may be a or b). Two saturating packs and one dword permute narrow the
/// 64 sums.
template <bool Clamp, quantized_element T, class Exact>
[[gnu::always_inline]] inline void add_linear_block(const T* a, const T* b, T* out, __mmask64 m,
                                                    const add_linear_regs& k, const Exact& exact) noexcept {
  __m512i z[4];
  __mmask16 flagged = 0;
  for (int j = 0; j < 4; ++j) {
    const auto mj = static_cast<__mmask16>(m >> (16 * j));
    const __m128i ba = _mm_maskz_loadu_epi8(mj, a + 16 * j), bb = _mm_maskz_loadu_epi8(mj, b + 16 * j);
    const __m512i x = element_traits<T>::is_signed ? _mm512_cvtepi8_epi32(ba) : _mm512_cvtepu8_epi32(ba);
    const __m512i y = element_traits<T>::is_signed ? _mm512_cvtepi8_epi32(bb) : _mm512_cvtepu8_epi32(bb);
    const __m512i t =
        _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(x, k.a_coef), k.offset), _mm512_mullo_epi32(y, k.b_coef));
    flagged |= _mm512_mask_cmplt_epi32_mask(mj, _mm512_and_si512(t, k.fraction), k.band);
    z[j] = _mm512_sra_epi32(t, k.shift);
  }
  if (flagged != 0) return exact(a, b, out, static_cast<std::size_t>(std::popcount(m)));  // m: the low n bits
  const __m512i words01 = _mm512_packs_epi32(z[0], z[1]), words23 = _mm512_packs_epi32(z[2], z[3]);
  __m512i bytes =
      element_traits<T>::is_signed ? _mm512_packs_epi16(words01, words23) : _mm512_packus_epi16(words01, words23);
  if constexpr (Clamp) {
    if constexpr (element_traits<T>::is_signed)
      bytes = _mm512_min_epi8(_mm512_max_epi8(bytes, k.lo), k.hi);
    else
      bytes = _mm512_min_epu8(_mm512_max_epu8(bytes, k.lo), k.hi);
  }
  // The packs leave 4-element groups lane by lane (group j of lane l at dword 4 l + j): put them back in order.
  bytes = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), bytes);
  _mm512_mask_storeu_epi8(out, m, bytes);
}

/// add on the linear form, 64 elements per step, flagged blocks on `exact`.
template <bool Clamp, quantized_element T, class Exact>
inline void add_linear_span(const T* a, const T* b, T* out, std::size_t n, const add_linear_regs& k,
                            const Exact& exact) noexcept {
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) add_linear_block<Clamp, T>(a + i, b + i, out + i, ~__mmask64{0}, k, exact);
  if (i < n) add_linear_block<Clamp, T>(a + i, b + i, out + i, (std::uint64_t{1} << (n - i)) - 1, k, exact);
}

/// Broadcast add on the tables: out = clamp((table[v] + term) >> 8) for a run of one input (table: its own table)
/// against the other input's entries, one per element (terms) or one for the run (Held); 16 elements per gather.
template <bool Held, quantized_element T>
inline void add_table_terms_span(const T* v, const std::int32_t* table, const std::int32_t* terms, std::int32_t term,
                                 T* out, std::size_t n, clamp_range clamp) noexcept {
  const __m512i lo = _mm512_set1_epi32(clamp.min), hi = _mm512_set1_epi32(clamp.max), held = _mm512_set1_epi32(term);
  for (std::size_t i = 0; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1);
    const __m512i index = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, v + i));
    const __m512i t = Held ? held : _mm512_maskz_loadu_epi32(m, terms + i);
    const __m512i sum = _mm512_add_epi32(_mm512_i32gather_epi32(index, table, 4), t);
    _mm512_mask_cvtepi32_storeu_epi8(out + i, m, _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(sum, 8), lo), hi));
  }
}

/// The AVX-512 path: add's tables and linear form (ops/eltwise/x86.hpp), MUL's folded output step.
struct avx512_path : lanes_path {
  static constexpr bool add_tables = true;
  static constexpr bool linear_add = true;
  using mul_folded = mul_folded_regs<zmm_ops>;
};

template <>
struct path_for<simd::isa::avx512> : simd::use_path<avx512_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise

#endif
