// The AVX2 (without AVX-512) kernels of ops/eltwise.hpp: MUL's folded requantization (element-wise on 16-bit
// products, 32 per step), add's table lookups with dword gathers (element-wise and held terms), and the held lines
// (held_lines.hpp) 32 elements per step; avx2_path says so.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2 && !MOSAIQ_TARGET_AVX512

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/add_tables.hpp"
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// MUL's requantization with its two roundings folded into one floor (mul_fold, path.hpp: the proof) on 8 lanes.
struct mul_folded_regs {
  __m256i multiplier, beta, threshold, output_offset, clamp_min, clamp_max;
  __m128i left_shift, right_shift;
  mul_fold fold;
  bool usable = false;

  template <rounding R>
  static mul_folded_regs of(const reference::mul_params& p) noexcept {
    mul_folded_regs k{};
    k.fold = mul_fold::of<R>(p);
    if (!k.fold.usable) return k;
    k.multiplier = _mm256_set1_epi32(k.fold.multiplier);
    k.beta = _mm256_set1_epi64x(k.fold.beta);
    k.threshold = _mm256_set1_epi32(k.fold.threshold);
    k.output_offset = _mm256_set1_epi32(p.output_offset);
    k.clamp_min = _mm256_set1_epi32(p.clamp.min);
    k.clamp_max = _mm256_set1_epi32(p.clamp.max);
    k.left_shift = _mm_cvtsi32_si128(k.fold.left);
    k.right_shift = _mm_cvtsi32_si128(k.fold.right);
    k.usable = true;
    return k;
  }

  /// MultiplyByQuantizedMultiplier of 8 products (Shift: shifted left first; false where fold.narrow()).
  template <bool Shift>
  [[gnu::always_inline]] __m256i scaled(__m256i product) const noexcept {
    const __m256i shifted = Shift ? _mm256_sll_epi32(product, left_shift) : product;
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(shifted, multiplier), beta);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(shifted, 32), multiplier), beta);
    __m256i q = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0b10101010);
    q = _mm256_add_epi32(q, _mm256_cmpgt_epi32(threshold, shifted));  // - [Q < 0]
    return _mm256_sra_epi32(q, right_shift);
  }

  [[gnu::always_inline]] __m256i operator()(__m256i product) const noexcept {
    const __m256i q = _mm256_add_epi32(scaled<true>(product), output_offset);
    return _mm256_min_epi32(_mm256_max_epi32(q, clamp_min), clamp_max);
  }

  /// Element-wise MUL where fold.narrow() (mul_words_span).
  template <quantized_element T>
  void span(const T* a, const T* b, T* out, std::size_t n, const reference::mul_params& p) const noexcept;
};

/// Element-wise MUL on 32 elements per step where fold.narrow(): the offset inputs as 16-bit words (i8 biased to u8
/// by flipping the sign bit, the offsets shifted to match), their products as the low and high halves of vpmullw /
/// vpmulhw interleaved into dwords, the folded multiply, then saturating packs (which undo the interleaving within each
/// 128-bit lane), the output zero point added as saturated words and the activation clamp on bytes. A tail below 32
/// runs through zero-padded copies.
template <quantized_element T>
inline void mul_words_span(const T* a, const T* b, T* out, std::size_t n, const reference::mul_params& p,
                           const mul_folded_regs& k) noexcept {
  constexpr bool is_signed = element_traits<T>::is_signed;
  const int bias = is_signed ? -128 : 0;
  const __m256i offset1 = _mm256_set1_epi16(static_cast<short>(p.input1_offset + bias));
  const __m256i offset2 = _mm256_set1_epi16(static_cast<short>(p.input2_offset + bias));
  const __m256i zero_point = _mm256_set1_epi16(static_cast<short>(p.output_offset));
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(is_signed ? 0x80 : 0));
  const __m256i lo = _mm256_set1_epi8(static_cast<char>(p.clamp.min)),
                hi = _mm256_set1_epi8(static_cast<char>(p.clamp.max));
  const auto block = [&](const T* va, const T* vb, T* vo) {
    const __m256i ba = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(va)), flip);
    const __m256i bb = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vb)), flip);
    const __m256i zero = _mm256_setzero_si256();
    __m256i words[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i x = _mm256_add_epi16(h ? _mm256_unpackhi_epi8(ba, zero) : _mm256_unpacklo_epi8(ba, zero), offset1);
      const __m256i y = _mm256_add_epi16(h ? _mm256_unpackhi_epi8(bb, zero) : _mm256_unpacklo_epi8(bb, zero), offset2);
      const __m256i low = _mm256_mullo_epi16(x, y), high = _mm256_mulhi_epi16(x, y);
      const __m256i q0 = k.scaled<false>(_mm256_unpacklo_epi16(low, high));
      const __m256i q1 = k.scaled<false>(_mm256_unpackhi_epi16(low, high));
      words[h] = _mm256_adds_epi16(_mm256_packs_epi32(q0, q1), zero_point);
    }
    __m256i bytes;
    if constexpr (is_signed)
      bytes = _mm256_min_epi8(_mm256_max_epi8(_mm256_packs_epi16(words[0], words[1]), lo), hi);
    else
      bytes = _mm256_min_epu8(_mm256_max_epu8(_mm256_packus_epi16(words[0], words[1]), lo), hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(vo), bytes);
  };
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) block(a + i, b + i, out + i);
  if (i == n) return;
  T ta[32] = {}, tb[32] = {}, to[32];
  std::memcpy(ta, a + i, (n - i) * sizeof(T));
  std::memcpy(tb, b + i, (n - i) * sizeof(T));
  block(ta, tb, to);
  std::memcpy(out + i, to, (n - i) * sizeof(T));
}

template <quantized_element T>
void mul_folded_regs::span(const T* a, const T* b, T* out, std::size_t n,
                           const reference::mul_params& p) const noexcept {
  mul_words_span<T>(a, b, out, n, p, *this);
}

/// The table add on 8 elements per step with two dword gathers; a tail below 8 runs the same formula in scalar code.
struct add_table_regs {
  const std::int32_t* first;
  const std::int32_t* second;
  clamp_range clamp;
  __m256i lo, hi;

  add_table_regs(const add_tables& t, clamp_range c) noexcept
      : first(t.first.data()),
        second(t.second.data()),
        clamp(c),
        lo(_mm256_set1_epi32(c.min)),
        hi(_mm256_set1_epi32(c.max)) {}
};

template <quantized_element T>
inline void add_table_span(const T* a, const T* b, T* out, std::size_t n, const add_table_regs& k) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i ia = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + i)));
    const __m256i ib = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i)));
    const __m256i sum =
        _mm256_add_epi32(_mm256_i32gather_epi32(k.first, ia, 4), _mm256_i32gather_epi32(k.second, ib, 4));
    simd::avx2::store_low_bytes(out + i, _mm256_min_epi32(_mm256_max_epi32(_mm256_srai_epi32(sum, 8), k.lo), k.hi));
  }
  for (; i < n; ++i)
    out[i] = static_cast<T>(
        std::clamp((k.first[static_cast<std::uint8_t>(a[i])] + k.second[static_cast<std::uint8_t>(b[i])]) >> 8,
                   k.clamp.min, k.clamp.max));
}

/// Broadcast add on the tables (see the AVX-512 twin), 8 elements per gather, a scalar tail.
template <bool Held, quantized_element T>
inline void add_table_terms_span(const T* v, const std::int32_t* table, const std::int32_t* terms, std::int32_t term,
                                 T* out, std::size_t n, clamp_range clamp) noexcept {
  const __m256i lo = _mm256_set1_epi32(clamp.min), hi = _mm256_set1_epi32(clamp.max), held = _mm256_set1_epi32(term);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i index = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(v + i)));
    const __m256i t = Held ? held : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(terms + i));
    const __m256i sum = _mm256_add_epi32(_mm256_i32gather_epi32(table, index, 4), t);
    simd::avx2::store_low_bytes(out + i, _mm256_min_epi32(_mm256_max_epi32(_mm256_srai_epi32(sum, 8), lo), hi));
  }
  for (; i < n; ++i)
    out[i] = static_cast<T>(
        std::clamp((table[static_cast<std::uint8_t>(v[i])] + (Held ? term : terms[i])) >> 8, clamp.min, clamp.max));
}

/// A side's split point, clamp and line shift in ymm registers.
struct line_regs_avx2 {
  __m256i split, lo, hi;
  __m128i shift;
  bool clamps;  ///< false when the clamp is T's whole range: the saturating packs are the clamp

  template <quantized_element T>
  static line_regs_avx2 of(std::int32_t split_point, clamp_range clamp, int line_shift) noexcept {
    return {_mm256_set1_epi32(split_point), _mm256_set1_epi8(static_cast<char>(clamp.min)),
            _mm256_set1_epi8(static_cast<char>(clamp.max)), _mm_cvtsi32_si128(line_shift),
            clamp.min != element_traits<T>::min || clamp.max != element_traits<T>::max};
  }
};

/// The lines of 32 channels in registers: slopes, offsets and (Split) offsets below the split point, 8 channels each.
struct line_block_regs_avx2 {
  __m256i slope[4], offset[4], below[4];
};

/// 32 elements of one pixel against lines held in registers: (x * slope + (x < split ? below : offset)) >> shift,
/// narrowed with two saturating packs and one lane permute, clamped as bytes.
template <bool Split, bool Clamp, quantized_element T>
[[gnu::always_inline]] inline void line_pixel32_avx2(const T* run, T* out, const line_block_regs_avx2& lines,
                                                     const line_regs_avx2& k) noexcept {
  __m256i z[4];
  for (int j = 0; j < 4; ++j) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(run + 8 * j));
    const __m256i x = element_traits<T>::is_signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
    __m256i o = lines.offset[j];
    if constexpr (Split) o = _mm256_blendv_epi8(o, lines.below[j], _mm256_cmpgt_epi32(k.split, x));
    z[j] = _mm256_sra_epi32(_mm256_add_epi32(_mm256_mullo_epi32(x, lines.slope[j]), o), k.shift);
  }
  const __m256i words01 = _mm256_packs_epi32(z[0], z[1]), words23 = _mm256_packs_epi32(z[2], z[3]);
  __m256i bytes =
      element_traits<T>::is_signed ? _mm256_packs_epi16(words01, words23) : _mm256_packus_epi16(words01, words23);
  if constexpr (Clamp) {
    if constexpr (element_traits<T>::is_signed)
      bytes = _mm256_min_epi8(_mm256_max_epi8(bytes, k.lo), k.hi);
    else
      bytes = _mm256_min_epu8(_mm256_max_epu8(bytes, k.lo), k.hi);
  }
  // The packs interleave 4-element groups across the two 128-bit lanes: put them back in order.
  bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
}

/// A row of pixels (pixel p at run + p * run_step, out + p * out_step), channels in blocks of 32: each block's lines
/// are loaded into registers once and applied to every pixel of the row. Returns the channels done (a multiple of 32).
template <bool Split, bool Clamp, quantized_element T>
inline std::size_t line_columns_avx2(const T* run, std::ptrdiff_t run_step, T* out, std::ptrdiff_t out_step, int pixels,
                                     const std::int32_t* slope, const std::int32_t* offset, const std::int32_t* below,
                                     std::size_t n, const line_regs_avx2& k) noexcept {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    line_block_regs_avx2 lines;
    for (int j = 0; j < 4; ++j) {
      lines.slope[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(slope + i + 8 * j));
      lines.offset[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offset + i + 8 * j));
      if constexpr (Split) lines.below[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(below + i + 8 * j));
    }
    const T* r = run + i;
    T* o = out + i;
    for (int p = 0; p < pixels; ++p, r += run_step, o += out_step) line_pixel32_avx2<Split, Clamp, T>(r, o, lines, k);
  }
  return i;
}

template <bool Split, quantized_element T>
inline std::size_t line_columns_avx2(const T* run, std::ptrdiff_t run_step, T* out, std::ptrdiff_t out_step, int pixels,
                                     const std::int32_t* slope, const std::int32_t* offset, const std::int32_t* below,
                                     std::size_t n, const line_regs_avx2& k) noexcept {
  if (k.clamps)
    return line_columns_avx2<Split, true, T>(run, run_step, out, out_step, pixels, slope, offset, below, n, k);
  return line_columns_avx2<Split, false, T>(run, run_step, out, out_step, pixels, slope, offset, below, n, k);
}

/// The AVX2 path (without AVX-512): add's tables (ops/eltwise/x86.hpp), MUL's folded output step.
struct avx2_path : lanes_path {
  static constexpr bool add_tables = true;
  using mul_folded = mul_folded_regs;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise

#endif
