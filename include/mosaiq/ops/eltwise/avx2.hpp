// The AVX2 (without AVX-512) kernels of ops/eltwise.hpp: MUL's folded requantization, add's table lookups with dword
// gathers (element-wise and held terms), and the held lines (held_lines.hpp) 32 elements per step; avx2_path says so.
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
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// MUL's requantization with its two roundings folded into one floor (AVX2, exact). With P = (product << left) * M:
/// SaturatingRoundingDoublingHighMul is Q = floor((P + 2^30) / 2^31) (M is never INT32_MIN, so it never saturates),
/// and RoundingDivideByPOT(Q, e) = floor((Q + 2^(e-1) - [Q < 0]) / 2^e) = floor(Q' / 2^e) with
/// Q' = floor((P + 2^30 + 2^(30+e)) / 2^31) - [Q < 0]. Q < 0 exactly when P < -2^30; the correction is applied for
/// every negative product instead (M is 0 or in [2^30, 2^31)), which differs only where P + 2^30 is in [0, 2^30):
/// there Q' is 2^(e-1) or 2^(e-1) - 1, both 0 after the shift by e >= 1. Single rounding with shift <= 0 is floor((P +
/// 2^(n-1)) / 2^n), n = 31 - shift >= 31: the same steps without the correction. Bits 31..62 of the 64-bit sums hold Q'
/// (|P| < 2^62), so one pair of 32x32->64 multiplies and three shifts replace the general lane multiply.
struct mul_folded_regs {
  __m256i multiplier, beta, threshold, output_offset, clamp_min, clamp_max;
  __m128i left_shift, right_shift;
  bool usable = false;

  template <rounding R>
  static mul_folded_regs of(const reference::mul_params& p) noexcept {
    const quantized_multiplier q = p.output_multiplier;
    mul_folded_regs k{};
    const int left = q.shift > 0 ? q.shift : 0, right = q.shift < 0 ? -q.shift : 0;
    std::int64_t beta = std::int64_t{1} << 30;
    std::int32_t threshold = INT32_MIN;  // no lane is below it: no correction
    if constexpr (R == rounding::tflite_reference) {
      if (right > 0) {
        beta += std::int64_t{1} << (30 + right);
        threshold = 0;
      }
    } else {
      if (q.shift > 0) return k;  // n < 31: the general lane multiply
      beta = std::int64_t{1} << (30 + right);
    }
    k.multiplier = _mm256_set1_epi32(q.multiplier);
    k.beta = _mm256_set1_epi64x(beta);
    k.threshold = _mm256_set1_epi32(threshold);
    k.output_offset = _mm256_set1_epi32(p.output_offset);
    k.clamp_min = _mm256_set1_epi32(p.clamp.min);
    k.clamp_max = _mm256_set1_epi32(p.clamp.max);
    k.left_shift = _mm_cvtsi32_si128(left);
    k.right_shift = _mm_cvtsi32_si128(right);
    k.usable = true;
    return k;
  }

  [[gnu::always_inline]] __m256i operator()(__m256i product) const noexcept {
    const __m256i shifted = _mm256_sll_epi32(product, left_shift);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(shifted, multiplier), beta);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(shifted, 32), multiplier), beta);
    __m256i q = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0b10101010);
    q = _mm256_add_epi32(q, _mm256_cmpgt_epi32(threshold, shifted));  // - [Q < 0]
    q = _mm256_add_epi32(_mm256_sra_epi32(q, right_shift), output_offset);
    return _mm256_min_epi32(_mm256_max_epi32(q, clamp_min), clamp_max);
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

/// add's linear form (add_linear.hpp) in ymm registers.
struct add_linear_regs {
  __m256i a_coef, b_coef, offset, fraction, band, lo, hi;
  __m128i shift;
  bool clamps;  ///< false when the clamp is T's whole range: the saturating packs are the clamp

  template <quantized_element T>
  static add_linear_regs of(const add_linear& l, clamp_range clamp) noexcept {
    return {_mm256_set1_epi32(l.a_coef),
            _mm256_set1_epi32(l.b_coef),
            _mm256_set1_epi32(l.offset),
            _mm256_set1_epi32((std::int32_t{1} << l.shift) - 1),
            _mm256_set1_epi32(l.band),
            _mm256_set1_epi8(static_cast<char>(clamp.min)),
            _mm256_set1_epi8(static_cast<char>(clamp.max)),
            _mm_cvtsi32_si128(l.shift),
            clamp.min != element_traits<T>::min || clamp.max != element_traits<T>::max};
  }
};

/// 32 elements on the linear form: t = a A + b B + C with two vpmulld per 8, the smallest fraction (t & (2^k - 1))
/// of the 32 kept; when it is below the band some lane may be wrong and the whole block runs on the tables
/// (nothing is written before, so out may be a or b).
template <bool Clamp, quantized_element T>
[[gnu::always_inline]] inline void add_linear_block(const T* a, const T* b, T* out, const add_linear_regs& k,
                                                    const add_table_regs& tables) noexcept {
  __m256i z[4];
  __m256i low = k.fraction;
  for (int j = 0; j < 4; ++j) {
    const __m256i t = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(widen8_avx2(a + 8 * j), k.a_coef), k.offset),
                                       _mm256_mullo_epi32(widen8_avx2(b + 8 * j), k.b_coef));
    low = _mm256_min_epi32(low, _mm256_and_si256(t, k.fraction));
    z[j] = _mm256_sra_epi32(t, k.shift);
  }
  if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(k.band, low)) != 0) return add_table_span<T>(a, b, out, 32, tables);
  store_narrowed32_avx2<Clamp>(out, z, k.lo, k.hi);
}

/// add on the linear form, 32 elements per step, flagged blocks on the tables; a tail below 32 runs through
/// zero-padded copies.
template <bool Clamp, quantized_element T>
inline void add_linear_span(const T* a, const T* b, T* out, std::size_t n, const add_linear_regs& k,
                            const add_table_regs& tables) noexcept {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) add_linear_block<Clamp, T>(a + i, b + i, out + i, k, tables);
  if (i == n) return;
  T ta[32] = {}, tb[32] = {}, to[32];
  std::memcpy(ta, a + i, (n - i) * sizeof(T));
  std::memcpy(tb, b + i, (n - i) * sizeof(T));
  add_linear_block<Clamp, T>(ta, tb, to, k, tables);
  std::memcpy(out + i, to, (n - i) * sizeof(T));
}

/// The AVX2 path (without AVX-512): add's tables (ops/eltwise/x86.hpp) and linear form, MUL's folded output step.
struct avx2_path : lanes_path {
  static constexpr bool add_tables = true;
  static constexpr bool linear_add = true;
  using mul_folded = mul_folded_regs;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise

#endif
