// Byte-table lookups (AVX2 pshufb, also the AVX-512 targets without VBMI) for ops/detail/byte_table.hpp: `values` are
// the 256 entries, `deltas` the XOR-telescoped pshufb chunks; each kernel returns the bytes it did (the front end's
// scalar loop does the rest).
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/detail/byte_table/registry.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

/// XOR-telescoped pshufb lookup of byte indices 0..16*chunks-1 (at most 127): step k contributes delta chunk k at
/// index & 15 while index - 16k is not negative, and the deltas telescope to chunk index / 16.
inline __m256i telescoped_lookup(const std::uint8_t* deltas, int chunks, __m256i index) noexcept {
  __m256i result = _mm256_setzero_si256();
  const __m256i sixteen = _mm256_set1_epi8(16);
  for (int k = 0; k < chunks; ++k) {
    const __m256i delta = _mm256_load_si256(reinterpret_cast<const __m256i*>(deltas + 32 * k));
    result = _mm256_xor_si256(result, _mm256_shuffle_epi8(delta, index));
    index = _mm256_subs_epi8(index, sixteen);  // saturating: once negative, stays negative (pshufb gives 0)
  }
  return result;
}

/// 32 bytes per step: two telescoped pshufb lookups, one per half of the table.
struct avx2_byte_lookup {
  static std::size_t run(const std::uint8_t*, const std::uint8_t* deltas, const std::uint8_t* in, std::uint8_t* out,
                         std::size_t count) noexcept {
    std::size_t j = 0;
    // Bytes >= 128 are negative as signed bytes, so the low half's lookups give 0 for them, and index ^ 0x80 does
    // the same for the high half; the two results are disjoint and combine with XOR.
    const __m256i top_bit = _mm256_set1_epi8(static_cast<char>(0x80));
    for (; j + 32 <= count; j += 32) {
      const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j));
      const __m256i low = telescoped_lookup(deltas, 8, index);
      const __m256i high = telescoped_lookup(deltas + 8 * 32, 8, _mm256_xor_si256(index, top_bit));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_xor_si256(low, high));
    }
    return j;
  }
};

template <>
struct byte_lookup_for<simd::isa::avx2> : simd::use_path<avx2_byte_lookup> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail

#endif  // MOSAIQ_TARGET_AVX2
