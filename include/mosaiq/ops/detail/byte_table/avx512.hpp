// Byte-table lookups (AVX-512 VBMI vpermi2b) for ops/detail/byte_table.hpp: `values` are the 256 entries, `deltas` the
// XOR-telescoped pshufb chunks; each kernel returns the bytes it did (the front end's scalar loop does the rest).
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX512_VBMI

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/detail/byte_table/registry.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

/// 64 bytes per step, the last step masked: every byte.
struct vbmi_byte_lookup {
  static std::size_t run(const std::uint8_t* values, const std::uint8_t*, const std::uint8_t* in, std::uint8_t* out,
                         std::size_t count) noexcept {
    std::size_t j = 0;
    const __m512i t0 = _mm512_load_si512(values), t1 = _mm512_load_si512(values + 64);
    const __m512i t2 = _mm512_load_si512(values + 128), t3 = _mm512_load_si512(values + 192);
    const auto lookup = [&](__m512i index) noexcept {
      const __m512i low = _mm512_permutex2var_epi8(t0, index, t1), high = _mm512_permutex2var_epi8(t2, index, t3);
      return _mm512_mask_blend_epi8(_mm512_movepi8_mask(index), low, high);  // bit 7 picks the half
    };
    for (; j + 64 <= count; j += 64) _mm512_storeu_si512(out + j, lookup(_mm512_loadu_si512(in + j)));
    if (j < count) {
      const __mmask64 mask = ~std::uint64_t{0} >> (64 - (count - j));
      _mm512_mask_storeu_epi8(out + j, mask, lookup(_mm512_maskz_loadu_epi8(mask, in + j)));
      j = count;
    }
    return j;
  }
};

template <>
struct byte_lookup_for<simd::isa::avx512> : simd::use_path<vbmi_byte_lookup> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail

#endif  // MOSAIQ_TARGET_AVX512_VBMI
