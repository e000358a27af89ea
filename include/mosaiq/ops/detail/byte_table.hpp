// Byte-to-byte table lookups over runs of bytes, the load-time table applied with vpermi2b (AVX-512 VBMI),
// XOR-telescoped pshufb (AVX2, AVX-512 without VBMI), vqtbl4q / vqtbx4q (NEON aarch64), vtbl4 / vtbx4 (NEON armv7), or
// a scalar loop (the twin). Used by logistic (ops/softmax.hpp), hard-swish (ops/hard_swish.hpp) and requantizing
// resize (ops/resize.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "mosaiq/core/tensor.hpp"
#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2
#include <immintrin.h>
#elif MOSAIQ_TARGET_NEON
#include <arm_neon.h>
#endif

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

#if MOSAIQ_TARGET_AVX2
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

#endif

/// A 256-entry byte table applied to runs of contiguous bytes: out[j] = values[in[j]] (logistic, requantization).
/// Set `values`, then call finish() once (load time) before run().
struct byte_table {
  alignas(64) std::array<std::uint8_t, 256> values{};
  alignas(32) std::array<std::uint8_t, 16 * 32> pshufb_deltas{};  // per half (entries <128, >=128): telescoped chunks

  void finish() noexcept {
    for (std::size_t k = 0; k < 16; ++k)
      for (std::size_t j = 0; j < 16; ++j) {
        const bool starts_half = k % 8 == 0;
        const auto delta = static_cast<std::uint8_t>(values[16 * k + j] ^ (starts_half ? 0 : values[16 * (k - 1) + j]));
        pshufb_deltas[32 * k + j] = pshufb_deltas[32 * k + 16 + j] = delta;
      }
  }

  void run(const std::uint8_t* in, std::uint8_t* out, std::size_t count) const noexcept {
    std::size_t j = 0;
#if MOSAIQ_TARGET_AVX512_VBMI
    const __m512i t0 = _mm512_load_si512(values.data()), t1 = _mm512_load_si512(values.data() + 64);
    const __m512i t2 = _mm512_load_si512(values.data() + 128), t3 = _mm512_load_si512(values.data() + 192);
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
#elif MOSAIQ_TARGET_AVX2
    // Bytes >= 128 are negative as signed bytes, so the low half's lookups give 0 for them, and index ^ 0x80 does
    // the same for the high half; the two results are disjoint and combine with XOR.
    const __m256i top_bit = _mm256_set1_epi8(static_cast<char>(0x80));
    for (; j + 32 <= count; j += 32) {
      const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j));
      const __m256i low = telescoped_lookup(pshufb_deltas.data(), 8, index);
      const __m256i high = telescoped_lookup(pshufb_deltas.data() + 8 * 32, 8, _mm256_xor_si256(index, top_bit));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_xor_si256(low, high));
    }
#elif MOSAIQ_TARGET_NEON64
    uint8x16x4_t quarter[4];
    for (int q = 0; q < 4; ++q) {
      const std::uint8_t* base = values.data() + 64 * q;
      quarter[q] = uint8x16x4_t{{vld1q_u8(base), vld1q_u8(base + 16), vld1q_u8(base + 32), vld1q_u8(base + 48)}};
    }
    const uint8x16_t sixty_four = vdupq_n_u8(64);
    for (; j + 16 <= count; j += 16) {
      uint8x16_t index = vld1q_u8(in + j);
      uint8x16_t result = vqtbl4q_u8(quarter[0], index);
      for (int q = 1; q < 4; ++q) {
        index = vsubq_u8(index, sixty_four);  // wraps: indices of earlier quarters become >= 64, out of range
        result = vqtbx4q_u8(result, quarter[q], index);
      }
      vst1q_u8(out + j, result);
    }
#elif MOSAIQ_TARGET_NEON
    // armv7: eight 32-entry tables, 8 bytes per step; vtbx4 keeps the lane for indices >= 32, and the wrapping
    // subtraction moves the indices of earlier tables there.
    uint8x8x4_t eighth[8];
    for (int q = 0; q < 8; ++q) {
      const std::uint8_t* base = values.data() + 32 * q;
      eighth[q] = uint8x8x4_t{{vld1_u8(base), vld1_u8(base + 8), vld1_u8(base + 16), vld1_u8(base + 24)}};
    }
    const uint8x8_t thirty_two = vdup_n_u8(32);
    for (; j + 8 <= count; j += 8) {
      uint8x8_t index = vld1_u8(in + j);
      uint8x8_t result = vtbl4_u8(eighth[0], index);
      for (int q = 1; q < 8; ++q) {
        index = vsub_u8(index, thirty_two);
        result = vtbx4_u8(result, eighth[q], index);
      }
      vst1_u8(out + j, result);
    }
#endif
    for (; j < count; ++j) out[j] = values[in[j]];
  }
};

/// A byte_table applied to every element of an 8-bit view: one flat run when both views are dense, else one run per
/// pixel. The caller has checked that the views are valid and of equal extents.
template <class T>
void run_byte_table(const byte_table& table, const tensor_view<const T>& in, const tensor_view<T>& out) noexcept {
  static_assert(sizeof(T) == 1, "run_byte_table: 8-bit elements only");
  const auto bytes = [](const T* p) { return reinterpret_cast<const std::uint8_t*>(p); };
  const auto out_bytes = [](T* p) { return reinterpret_cast<std::uint8_t*>(p); };
  if (in.is_dense() && out.is_dense()) {
    const std::size_t count = static_cast<std::size_t>(in.batch()) * in.dims().elements();
    if (count > 0) table.run(bytes(in.data()), out_bytes(out.data()), count);
    return;
  }
  const auto channels = static_cast<std::size_t>(in.channels());
  for (int n = 0; n < in.batch(); ++n)
    for (int y = 0; y < in.height(); ++y)
      for (int x = 0; x < in.width(); ++x) table.run(bytes(in.pixel(n, y, x)), out_bytes(out.pixel(n, y, x)), channels);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail
