// Two-class softmax on AVX-512 VBMI: the pair table looked up with vpermi2b, 32 pairs per zmm.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX512_VBMI

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/softmax/pair_table.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace softmax_pairs {

/// 32 pairs per 64-byte vector: u16 lanes hold (x0, x1); byte 0 of the index vector selects out0, byte 1 out1.
template <bool OneLookup>
inline void pairs_vbmi(const pair_table& table, const byte* in, byte* out, std::size_t pixels, byte flip) noexcept {
  const __m512i flip_bytes = _mm512_set1_epi8(static_cast<char>(flip));
  const __m512i low_byte = _mm512_set1_epi16(0xff), bias = _mm512_set1_epi16(255);
  const __m512i first = _mm512_set1_epi16(static_cast<short>(table.first));
  const __m512i last = _mm512_set1_epi16(static_cast<short>(table.last));
  __m512i t[8];
  for (int k = 0; k < 8; ++k) t[k] = _mm512_load_si512(table.window.data() + 64 * k);
  const auto lookup = [&](__m512i pairs) noexcept {
    pairs = _mm512_xor_si512(pairs, flip_bytes);
    const __m512i x0 = _mm512_and_si512(pairs, low_byte), x1 = _mm512_srli_epi16(pairs, 8);
    const auto window_index = [&](__m512i self, __m512i other) noexcept {
      const __m512i index = _mm512_sub_epi16(_mm512_add_epi16(self, bias), other);
      return _mm512_sub_epi16(_mm512_min_epu16(_mm512_max_epu16(index, first), last), first);
    };
    const __m512i i0 = window_index(x0, x1), i1 = window_index(x1, x0);
    const __m512i bytes = _mm512_or_si512(_mm512_and_si512(i0, low_byte), _mm512_slli_epi16(i1, 8));
    __m512i result = _mm512_permutex2var_epi8(t[0], bytes, t[1]);
    if constexpr (!OneLookup) {
      const __m512i quarter = _mm512_or_si512(_mm512_srli_epi16(i0, 7), _mm512_slli_epi16(_mm512_srli_epi16(i1, 7), 8));
      for (int q = 1; q < 4; ++q) {
        const __mmask64 in_quarter = _mm512_cmpeq_epi8_mask(quarter, _mm512_set1_epi8(static_cast<char>(q)));
        result = _mm512_mask_blend_epi8(in_quarter, result, _mm512_permutex2var_epi8(t[2 * q], bytes, t[2 * q + 1]));
      }
    }
    return result;
  };
  const std::size_t bytes = 2 * pixels;
  std::size_t j = 0;
  for (; j + 64 <= bytes; j += 64) _mm512_storeu_si512(out + j, lookup(_mm512_loadu_si512(in + j)));
  if (j < bytes) {  // masked: touches nothing past the views
    const __mmask64 mask = ~std::uint64_t{0} >> (64 - (bytes - j));
    _mm512_mask_storeu_epi8(out + j, mask, lookup(_mm512_maskz_loadu_epi8(mask, in + j)));
  }
}

/// Four lookups, not inlined: in a caller's frame (bench_softmax's row) GCC kept the eight table vectors on the stack
/// and read them back in every step of the loop; on its own it holds them in registers. (The one-lookup case stays
/// inline: it measured faster so.)
[[gnu::noinline]] inline void pairs_vbmi_four_lookups(const pair_table& table, const byte* in, byte* out,
                                                      std::size_t pixels, byte flip) noexcept {
  pairs_vbmi<false>(table, in, out, pixels, flip);
}

/// The AVX-512 VBMI pairs kernel: every pixel, with one table lookup where the window fits 128 entries.
struct vbmi_pairs {
  static std::size_t run(const pair_table& table, const byte* in, byte* out, std::size_t pixels, byte flip) noexcept {
    if (table.window_size() <= 128)
      pairs_vbmi<true>(table, in, out, pixels, flip);
    else
      pairs_vbmi_four_lookups(table, in, out, pixels, flip);
    return pixels;
  }
};

template <>
struct pairs_for<simd::isa::avx512> : simd::use_path<vbmi_pairs> {};

}  // namespace softmax_pairs
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX512_VBMI
