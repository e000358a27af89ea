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
#include "mosaiq/ops/eltwise/add_linear.hpp"
#include "mosaiq/ops/eltwise/add_tables.hpp"
#include "mosaiq/ops/eltwise/mul_words.hpp"
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/ops/eltwise/x86_regs.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// The 256-bit instructions of MUL's folded kernels (ops/eltwise/mul_words.hpp).
struct ymm_ops {
  using vec = __m256i;
  static constexpr std::size_t bytes = 32;
  static vec mul_even(vec a, vec b) noexcept { return _mm256_mul_epi32(a, b); }
  /// The even dwords of even, the odd ones of odd.
  static vec odd_dwords(vec even, vec odd) noexcept { return _mm256_blend_epi32(even, odd, 0b10101010); }
  /// The odd (high) dwords of even and of odd, in place of the even and the odd dwords.
  static vec high_dwords(vec even, vec odd) noexcept {
    return _mm256_blend_epi32(_mm256_shuffle_epi32(even, _MM_SHUFFLE(3, 3, 1, 1)), odd, 0b10101010);
  }
  static vec mulhi16(vec a, vec b) noexcept { return _mm256_mulhi_epi16(a, b); }
  static vec adds16(vec a, vec b) noexcept { return _mm256_adds_epi16(a, b); }
  static vec packs32(vec a, vec b) noexcept { return _mm256_packs_epi32(a, b); }
  /// Bytes 0-7 (h = 0) or 8-15 (h = 1) of each 128-bit lane as words.
  static vec widen_bytes(vec v, int h) noexcept {
    return h ? _mm256_unpackhi_epi8(v, _mm256_setzero_si256()) : _mm256_unpacklo_epi8(v, _mm256_setzero_si256());
  }
  /// Words 0-3 (h = 0) or 4-7 (h = 1) of each 128-bit lane of low and high as dwords (low | high << 16).
  static vec interleave_words(vec low, vec high, int h) noexcept {
    return h ? _mm256_unpackhi_epi16(low, high) : _mm256_unpacklo_epi16(low, high);
  }
  template <bool Signed>
  static vec pack16(vec a, vec b) noexcept {
    return Signed ? _mm256_packs_epi16(a, b) : _mm256_packus_epi16(a, b);
  }
};

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

/// 8 elements of T widened to int32 lanes by value.
template <quantized_element T>
[[gnu::always_inline]] inline __m256i widen8_avx2(const T* p) noexcept {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return element_traits<T>::is_signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
}

/// 32 int32 lanes (z[0] holding elements 0..7) narrowed to T with two saturating packs and one lane permute, clamped
/// as bytes (Clamp) and stored.
template <bool Clamp, quantized_element T>
[[gnu::always_inline]] inline void store_narrowed32_avx2(T* out, const __m256i (&z)[4], __m256i lo,
                                                         __m256i hi) noexcept {
  const __m256i words01 = _mm256_packs_epi32(z[0], z[1]), words23 = _mm256_packs_epi32(z[2], z[3]);
  __m256i bytes =
      element_traits<T>::is_signed ? _mm256_packs_epi16(words01, words23) : _mm256_packus_epi16(words01, words23);
  if constexpr (Clamp) {
    if constexpr (element_traits<T>::is_signed)
      bytes = _mm256_min_epi8(_mm256_max_epi8(bytes, lo), hi);
    else
      bytes = _mm256_min_epu8(_mm256_max_epu8(bytes, lo), hi);
  }
  // The packs interleave 4-element groups across the two 128-bit lanes: put them back in order.
  bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
}

/// 32 elements of one pixel against lines held in registers: (x * slope + (x < split ? below : offset)) >> shift,
/// narrowed and clamped as bytes.
template <bool Split, bool Clamp, quantized_element T>
[[gnu::always_inline]] inline void line_pixel32_avx2(const T* run, T* out, const line_block_regs_avx2& lines,
                                                     const line_regs_avx2& k) noexcept {
  __m256i z[4];
  for (int j = 0; j < 4; ++j) {
    const __m256i x = widen8_avx2(run + 8 * j);
    __m256i o = lines.offset[j];
    if constexpr (Split) o = _mm256_blendv_epi8(o, lines.below[j], _mm256_cmpgt_epi32(k.split, x));
    z[j] = _mm256_sra_epi32(_mm256_add_epi32(_mm256_mullo_epi32(x, lines.slope[j]), o), k.shift);
  }
  store_narrowed32_avx2<Clamp>(out, z, k.lo, k.hi);
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

/// The held lines' AVX2 columns (line_columns_for).
struct avx2_line_columns {
  using regs = line_regs_avx2;
  template <bool Split, quantized_element T>
  static std::size_t run(const T* run, std::ptrdiff_t run_step, T* out, std::ptrdiff_t out_step, int pixels,
                         const std::int32_t* slope, const std::int32_t* offset, const std::int32_t* below,
                         std::size_t n, const regs& k) noexcept {
    return line_columns_avx2<Split, T>(run, run_step, out, out_step, pixels, slope, offset, below, n, k);
  }
};

template <>
struct line_columns_for<simd::isa::avx2> : simd::use_path<avx2_line_columns> {};

/// add's linear form (add_linear.hpp) in ymm registers.
using add_linear_regs = linear_add_regs<ymm_ops>;

/// 32 elements on the linear form: t = a A + b B + C with two vpmulld per 8, the smallest fraction (t & (2^k - 1))
/// of the 32 kept; when it is below the band some lane may be wrong and the whole block runs on `exact(a, b, out, n)`
/// (the tables or the arithmetic pipeline; nothing is written before, so out may be a or b).
template <bool Clamp, quantized_element T, class Exact>
[[gnu::always_inline]] inline void add_linear_block(const T* a, const T* b, T* out, const add_linear_regs& k,
                                                    const Exact& exact) noexcept {
  __m256i z[4];
  __m256i low = k.fraction;
  for (int j = 0; j < 4; ++j) {
    const __m256i t = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(widen8_avx2(a + 8 * j), k.a_coef), k.offset),
                                       _mm256_mullo_epi32(widen8_avx2(b + 8 * j), k.b_coef));
    low = _mm256_min_epi32(low, _mm256_and_si256(t, k.fraction));
    z[j] = _mm256_sra_epi32(t, k.shift);
  }
  if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(k.band, low)) != 0) return exact(a, b, out, std::size_t{32});
  store_narrowed32_avx2<Clamp>(out, z, k.lo, k.hi);
}

/// add on the linear form, 32 elements per step, flagged blocks on `exact`; a tail below 32 runs through
/// zero-padded copies.
template <bool Clamp, quantized_element T, class Exact>
inline void add_linear_span(const T* a, const T* b, T* out, std::size_t n, const add_linear_regs& k,
                            const Exact& exact) noexcept {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) add_linear_block<Clamp, T>(a + i, b + i, out + i, k, exact);
  if (i == n) return;
  T ta[32] = {}, tb[32] = {}, to[32];
  std::memcpy(ta, a + i, (n - i) * sizeof(T));
  std::memcpy(tb, b + i, (n - i) * sizeof(T));
  add_linear_block<Clamp, T>(ta, tb, to, k, exact);
  std::memcpy(out + i, to, (n - i) * sizeof(T));
}

/// The AVX2 path (without AVX-512): add's tables (ops/eltwise/x86.hpp) and linear form, MUL's folded output step.
struct avx2_path : lanes_path {
  static constexpr bool add_tables = true;
  static constexpr bool linear_add = true;
  using mul_folded = mul_folded_regs<ymm_ops>;
};

template <>
struct path_for<simd::isa::avx2> : simd::use_path<avx2_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise

#endif
