// Two-class softmax on AVX2: the pair table looked up with XOR-telescoped pshufb, 16 pairs per ymm.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/detail/byte_table/avx2.hpp"
#include "mosaiq/ops/softmax/pair_table.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace softmax_pairs {

/// 16 pairs per 32-byte vector, window of at most 128 entries; returns the pixels done.
inline std::size_t pairs_avx2(const pair_table& table, const byte* in, byte* out, std::size_t pixels,
                              byte flip) noexcept {
  const __m256i flip_bytes = _mm256_set1_epi8(static_cast<char>(flip));
  const __m256i low_byte = _mm256_set1_epi16(0xff), bias = _mm256_set1_epi16(255);
  const __m256i first = _mm256_set1_epi16(static_cast<short>(table.first));
  const __m256i last = _mm256_set1_epi16(static_cast<short>(table.last));
  const int chunks = (table.window_size() + 15) / 16;
  const std::size_t bytes = 2 * pixels;
  std::size_t j = 0;
  for (; j + 32 <= bytes; j += 32) {
    const __m256i pairs = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j)), flip_bytes);
    const __m256i x0 = _mm256_and_si256(pairs, low_byte), x1 = _mm256_srli_epi16(pairs, 8);
    const __m256i i0 = _mm256_sub_epi16(_mm256_add_epi16(x0, bias), x1);
    const __m256i i1 = _mm256_sub_epi16(_mm256_add_epi16(x1, bias), x0);
    const __m256i w0 = _mm256_sub_epi16(_mm256_min_epu16(_mm256_max_epu16(i0, first), last), first);
    const __m256i w1 = _mm256_sub_epi16(_mm256_min_epu16(_mm256_max_epu16(i1, first), last), first);
    const __m256i index = _mm256_or_si256(w0, _mm256_slli_epi16(w1, 8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j),
                        detail::telescoped_lookup(table.pshufb_deltas.data(), chunks, index));
  }
  return j / 2;
}

/// The AVX2 pairs kernel: windows of at most 128 entries (else none: the scalar loop does every pair).
struct avx2_pairs {
  static std::size_t run(const pair_table& table, const byte* in, byte* out, std::size_t pixels, byte flip) noexcept {
    return table.window_size() <= 128 ? pairs_avx2(table, in, out, pixels, flip) : 0;
  }
};

template <>
struct pairs_for<simd::isa::avx2> : simd::use_path<avx2_pairs> {};

}  // namespace softmax_pairs
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX2
