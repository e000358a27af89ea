// add's table kernels on AVX-512: byte-plane lookups with vpermi2b (VBMI), else dword gathers; the broadcast
// (held-term) span with gathers; MUL's folded requantization (element-wise on 16-bit products, 64 per step);
// avx512_path says so.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX512

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/add_tables.hpp"
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/reference/eltwise.hpp"

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

/// MUL's requantization with its two roundings folded into one floor (mul_fold, path.hpp: the proof) on 16 lanes.
struct mul_folded_regs {
  __m512i multiplier, beta, threshold, output_offset, clamp_min, clamp_max;
  __m128i left_shift, right_shift;
  mul_fold fold;
  bool usable = false;

  template <rounding R>
  static mul_folded_regs of(const reference::mul_params& p) noexcept {
    mul_folded_regs k{};
    k.fold = mul_fold::of<R>(p);
    if (!k.fold.usable) return k;
    k.multiplier = _mm512_set1_epi32(k.fold.multiplier);
    k.beta = _mm512_set1_epi64(k.fold.beta);
    k.threshold = _mm512_set1_epi32(k.fold.threshold);
    k.output_offset = _mm512_set1_epi32(p.output_offset);
    k.clamp_min = _mm512_set1_epi32(p.clamp.min);
    k.clamp_max = _mm512_set1_epi32(p.clamp.max);
    k.left_shift = _mm_cvtsi32_si128(k.fold.left);
    k.right_shift = _mm_cvtsi32_si128(k.fold.right);
    k.usable = true;
    return k;
  }

  /// MultiplyByQuantizedMultiplier of 16 products (Shift: shifted left first; false where fold.narrow()).
  template <bool Shift>
  [[gnu::always_inline]] __m512i scaled(__m512i product) const noexcept {
    const __m512i shifted = Shift ? _mm512_sll_epi32(product, left_shift) : product;
    const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(shifted, multiplier), beta);
    const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(shifted, 32), multiplier), beta);
    __m512i q = _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
    q = _mm512_mask_sub_epi32(q, _mm512_cmpgt_epi32_mask(threshold, shifted), q, _mm512_set1_epi32(1));  // - [Q < 0]
    return _mm512_sra_epi32(q, right_shift);
  }

  [[gnu::always_inline]] __m512i operator()(__m512i product) const noexcept {
    const __m512i q = _mm512_add_epi32(scaled<true>(product), output_offset);
    return _mm512_min_epi32(_mm512_max_epi32(q, clamp_min), clamp_max);
  }

  /// Element-wise MUL where fold.narrow() (mul_words_span).
  template <quantized_element T>
  void span(const T* a, const T* b, T* out, std::size_t n, const reference::mul_params& p) const noexcept;
};

/// Element-wise MUL on 64 elements per step where fold.narrow(), as the AVX2 mul_words_span: 16-bit offset inputs,
/// vpmullw / vpmulhw halves interleaved into dword products, the folded multiply, saturating packs (undoing the
/// interleaving within each 128-bit lane), the zero point as saturated words, the clamp on bytes; the tail masked.
template <quantized_element T>
inline void mul_words_span(const T* a, const T* b, T* out, std::size_t n, const reference::mul_params& p,
                           const mul_folded_regs& k) noexcept {
  constexpr bool is_signed = element_traits<T>::is_signed;
  const int bias = is_signed ? -128 : 0;
  const __m512i offset1 = _mm512_set1_epi16(static_cast<short>(p.input1_offset + bias));
  const __m512i offset2 = _mm512_set1_epi16(static_cast<short>(p.input2_offset + bias));
  const __m512i zero_point = _mm512_set1_epi16(static_cast<short>(p.output_offset));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(is_signed ? 0x80 : 0));
  const __m512i lo = _mm512_set1_epi8(static_cast<char>(p.clamp.min)),
                hi = _mm512_set1_epi8(static_cast<char>(p.clamp.max));
  const auto block = [&](const T* va, const T* vb, T* vo, __mmask64 m) {
    const __m512i ba = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, va), flip);
    const __m512i bb = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, vb), flip);
    const __m512i zero = _mm512_setzero_si512();
    __m512i words[2];
    for (int h = 0; h < 2; ++h) {
      const __m512i x = _mm512_add_epi16(h ? _mm512_unpackhi_epi8(ba, zero) : _mm512_unpacklo_epi8(ba, zero), offset1);
      const __m512i y = _mm512_add_epi16(h ? _mm512_unpackhi_epi8(bb, zero) : _mm512_unpacklo_epi8(bb, zero), offset2);
      const __m512i low = _mm512_mullo_epi16(x, y), high = _mm512_mulhi_epi16(x, y);
      const __m512i q0 = k.scaled<false>(_mm512_unpacklo_epi16(low, high));
      const __m512i q1 = k.scaled<false>(_mm512_unpackhi_epi16(low, high));
      words[h] = _mm512_adds_epi16(_mm512_packs_epi32(q0, q1), zero_point);
    }
    __m512i bytes;
    if constexpr (is_signed)
      bytes = _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(words[0], words[1]), lo), hi);
    else
      bytes = _mm512_min_epu8(_mm512_max_epu8(_mm512_packus_epi16(words[0], words[1]), lo), hi);
    _mm512_mask_storeu_epi8(vo, m, bytes);
  };
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) block(a + i, b + i, out + i, ~__mmask64{0});
  if (i < n) block(a + i, b + i, out + i, (std::uint64_t{1} << (n - i)) - 1);
}

template <quantized_element T>
void mul_folded_regs::span(const T* a, const T* b, T* out, std::size_t n,
                           const reference::mul_params& p) const noexcept {
  mul_words_span<T>(a, b, out, n, p, *this);
}

/// The AVX-512 path: add's tables (ops/eltwise/x86.hpp), MUL's folded output step.
struct avx512_path : lanes_path {
  static constexpr bool add_tables = true;
  using mul_folded = mul_folded_regs;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise

#endif
