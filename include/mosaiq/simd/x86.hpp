// x86 lane functions xsimd 8.1 lacks: 32x32->64-bit rounding multiplies for requantization and
// 8-bit narrowing. AVX2 and AVX-512BW; each has a scalar twin in scalar.hpp.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/simd/scalar.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd {

namespace avx2 {

/// SaturatingRoundingDoublingHighMul on 8 lanes: floor((a*b + 2^30) / 2^31), INT32_MIN^2 saturates.
inline __m256i saturating_rounding_doubling_high_mul(__m256i a, __m256i b) noexcept {
  const __m256i nudge = _mm256_set1_epi64x(std::int64_t{1} << 30);
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(a, b), nudge);
  const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32)), nudge);
  // Bits 31..62 of each 64-bit sum are the result: even lanes shift down, odd lanes shift up by one.
  const __m256i result = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0b10101010);
  const __m256i int_min = _mm256_set1_epi32(INT32_MIN);
  const __m256i overflow = _mm256_and_si256(_mm256_cmpeq_epi32(a, int_min), _mm256_cmpeq_epi32(b, int_min));
  return _mm256_blendv_epi8(result, _mm256_set1_epi32(INT32_MAX), overflow);
}

/// RoundingDivideByPOT with a per-lane exponent in [0, 31]: ties away from zero.
inline __m256i rounding_divide_by_pot(__m256i x, __m256i exponent) noexcept {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, exponent), one);
  const __m256i remainder = _mm256_and_si256(x, mask);
  // threshold = (mask >> 1) + (x < 0): srai gives -1 for negative x, so subtract it.
  const __m256i threshold = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_srai_epi32(x, 31));
  return _mm256_sub_epi32(_mm256_srav_epi32(x, exponent), _mm256_cmpgt_epi32(remainder, threshold));
}

/// Arithmetic right shift of 64-bit lanes (AVX2 has only the logical one): shift the
/// ones-complement of negative values logically, then complement back.
inline __m256i shift_right_arithmetic_epi64(__m256i v, __m256i count) noexcept {
  const __m256i sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), v);
  return _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(v, sign), count), sign);
}

template <rounding Mode>
inline __m256i multiply_by_quantized_multiplier(__m256i x, __m256i multiplier, __m256i left_shift,
                                                __m256i right_shift) noexcept {
  if constexpr (Mode == rounding::tflite_reference) {
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(_mm256_sllv_epi32(x, left_shift), multiplier),
                                  right_shift);
  } else {
    // (x*M + 2^(total-1)) >> total, total in [1, 62], done on even and odd lanes in 64 bits.
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i total_even = _mm256_and_si256(right_shift, _mm256_set1_epi64x(0xffffffff));
    const __m256i total_odd = _mm256_srli_epi64(right_shift, 32);
    const __m256i round_even = _mm256_sllv_epi64(one, _mm256_sub_epi64(total_even, one));
    const __m256i round_odd = _mm256_sllv_epi64(one, _mm256_sub_epi64(total_odd, one));
    const __m256i even =
        shift_right_arithmetic_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, multiplier), round_even), total_even);
    const __m256i odd = shift_right_arithmetic_epi64(
        _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(multiplier, 32)), round_odd),
        total_odd);
    // Keep the low 32 bits of each 64-bit result (the wrap the scalar twin defines).
    return _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0b10101010);
  }
}

/// Full requantization of 8 accumulators to int32 output values (zero point added, clamped).
template <rounding Mode>
inline __m256i requantize_epi32(__m256i acc, __m256i multiplier, __m256i left_shift, __m256i right_shift,
                                __m256i output_zero_point, __m256i clamp_min, __m256i clamp_max) noexcept {
  const __m256i v = _mm256_add_epi32(multiply_by_quantized_multiplier<Mode>(acc, multiplier, left_shift, right_shift),
                                     output_zero_point);
  return _mm256_min_epi32(_mm256_max_epi32(v, clamp_min), clamp_max);
}

/// Narrows 8 clamped int32 lanes (already in the element's range) to the low 8 bytes of a vector.
inline __m128i low_bytes(__m256i v) noexcept {
  const __m256i bytes =
      _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                                              -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
  return _mm_unpacklo_epi32(_mm256_castsi256_si128(bytes), _mm256_extracti128_si256(bytes, 1));
}

/// Narrows 8 clamped int32 lanes (already in the element's range) to 8 bytes.
inline void store_low_bytes(void* out, __m256i v) noexcept {
  _mm_storel_epi64(static_cast<__m128i*>(out), low_bytes(v));
}

/// Per-lane constants of multiply_by_nonnegative_multiplier (AVX2) for 8 lanes, reference rounding, derived once at
/// load time by set_lane. The math is the AVX-512 requant_lanes fold: SaturatingRoundingDoublingHighMul then
/// RoundingDivideByPOT by e is one floor((x*M + offset) / 2^(31+e)), offset = 2^30 (+ 2^(30+e) - [x < 0] 2^31 when
/// e >= 1), for every multiplier M >= 0. AVX2 has no arithmetic 64-bit shift, so the offsets also carry 2^63: the
/// sums are then nonnegative as unsigned qwords, a logical shift floors them, and the 2^(63-31-e) it adds to the
/// result is subtracted from the low dword (`correction`).
struct requant_lanes8 {
  alignas(32) std::int64_t multiplier_even[4];  // read as the low dword by vpmuldq
  alignas(32) std::int64_t multiplier_odd[4];
  alignas(32) std::int64_t offset_even[4];  // for x < 0 (x after the left shift), plus 2^63
  alignas(32) std::int64_t offset_odd[4];
  alignas(32) std::int64_t sign_step_even[4];  // 2^31 or 0, added where x >= 0 (bit 31 of the qword clear)
  alignas(32) std::int64_t sign_step_odd[4];
  alignas(32) std::int64_t shift_even[4];  // 31 + e
  alignas(32) std::int64_t shift_odd[4];
  alignas(32) std::int32_t left_shift[8];
  alignas(32) std::int32_t correction[8];  // low dword of 2^(63 - 31 - e)

  /// The lanes it computes exactly: reference rounding, multipliers >= 0 (all quantize_multiplier makes).
  static constexpr bool supports(requant_scale s) noexcept { return s.multiplier >= 0; }

  void set_lane(int lane, requant_scale s) noexcept {
    const std::int64_t shift = 31 + std::int64_t{s.right_shift};
    std::int64_t offset = std::int64_t{1} << 30, negative_offset = offset;
    if (s.right_shift > 0) {
      offset += std::int64_t{1} << (30 + s.right_shift);
      negative_offset = offset - (std::int64_t{1} << 31);
    }
    const std::uint64_t biased = static_cast<std::uint64_t>(negative_offset) + (std::uint64_t{1} << 63);
    const int q = lane / 2;
    const bool even = lane % 2 == 0;
    (even ? multiplier_even : multiplier_odd)[q] = s.multiplier;
    (even ? offset_even : offset_odd)[q] = static_cast<std::int64_t>(biased);
    (even ? sign_step_even : sign_step_odd)[q] = offset - negative_offset;
    (even ? shift_even : shift_odd)[q] = shift;
    left_shift[lane] = s.left_shift;
    correction[lane] = static_cast<std::int32_t>(static_cast<std::uint32_t>(std::uint64_t{1} << (63 - shift)));
  }
};

/// multiply_by_quantized_multiplier<tflite_reference> for lanes whose constants c was built for
/// (requant_lanes8::supports): one 64-bit product, offset and shift per lane instead of the two roundings.
[[gnu::always_inline]] inline __m256i multiply_by_nonnegative_multiplier(__m256i x, const requant_lanes8& c) noexcept {
  const auto at = [](const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); };
  x = _mm256_sllv_epi32(x, at(c.left_shift));
  const __m256i x_odd = _mm256_srli_epi64(x, 32);
  __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, at(c.multiplier_even)), at(c.offset_even));
  __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(x_odd, at(c.multiplier_odd)), at(c.offset_odd));
  // Bit 31 of each qword is its lane's sign: ~x & sign_step is the step for x >= 0, else 0.
  even = _mm256_add_epi64(even, _mm256_andnot_si256(x, at(c.sign_step_even)));
  odd = _mm256_add_epi64(odd, _mm256_andnot_si256(x_odd, at(c.sign_step_odd)));
  even = _mm256_srlv_epi64(even, at(c.shift_even));
  odd = _mm256_srlv_epi64(odd, at(c.shift_odd));
  const __m256i result = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0b10101010);
  return _mm256_sub_epi32(result, at(c.correction));
}

}  // namespace avx2

#if MOSAIQ_TARGET_AVX512
namespace avx512 {

inline __m512i saturating_rounding_doubling_high_mul(__m512i a, __m512i b) noexcept {
  const __m512i nudge = _mm512_set1_epi64(std::int64_t{1} << 30);
  const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(a, b), nudge);
  const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32)), nudge);
  const __m512i result = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
  const __m512i int_min = _mm512_set1_epi32(INT32_MIN);
  const __mmask16 overflow = _mm512_cmpeq_epi32_mask(a, int_min) & _mm512_cmpeq_epi32_mask(b, int_min);
  return _mm512_mask_mov_epi32(result, overflow, _mm512_set1_epi32(INT32_MAX));
}

inline __m512i rounding_divide_by_pot(__m512i x, __m512i exponent) noexcept {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, exponent), one);
  const __m512i remainder = _mm512_and_si512(x, mask);
  const __m512i threshold = _mm512_sub_epi32(_mm512_srli_epi32(mask, 1), _mm512_srai_epi32(x, 31));
  const __mmask16 round_up = _mm512_cmpgt_epi32_mask(remainder, threshold);
  return _mm512_mask_add_epi32(_mm512_srav_epi32(x, exponent), round_up, _mm512_srav_epi32(x, exponent), one);
}

template <rounding Mode>
inline __m512i multiply_by_quantized_multiplier(__m512i x, __m512i multiplier, __m512i left_shift,
                                                __m512i right_shift) noexcept {
  if constexpr (Mode == rounding::tflite_reference) {
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(_mm512_sllv_epi32(x, left_shift), multiplier),
                                  right_shift);
  } else {
    const __m512i one = _mm512_set1_epi64(1);
    const __m512i total_even = _mm512_and_si512(right_shift, _mm512_set1_epi64(0xffffffff));
    const __m512i total_odd = _mm512_srli_epi64(right_shift, 32);
    const __m512i round_even = _mm512_sllv_epi64(one, _mm512_sub_epi64(total_even, one));
    const __m512i round_odd = _mm512_sllv_epi64(one, _mm512_sub_epi64(total_odd, one));
    const __m512i even = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, multiplier), round_even), total_even);
    const __m512i odd = _mm512_srav_epi64(
        _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(multiplier, 32)), round_odd),
        total_odd);
    return _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  }
}

template <rounding Mode>
inline __m512i requantize_epi32(__m512i acc, __m512i multiplier, __m512i left_shift, __m512i right_shift,
                                __m512i output_zero_point, __m512i clamp_min, __m512i clamp_max) noexcept {
  const __m512i v = _mm512_add_epi32(multiply_by_quantized_multiplier<Mode>(acc, multiplier, left_shift, right_shift),
                                     output_zero_point);
  return _mm512_min_epi32(_mm512_max_epi32(v, clamp_min), clamp_max);
}

/// Per-lane constants of multiply_by_nonnegative_multiplier for 16 lanes (one channel block),
/// derived once at load time by set_lane. Even/odd arrays hold the lanes 2q / 2q+1 in qword q.
struct requant_lanes {
  alignas(64) std::int64_t multiplier_even[8];  // read as the low dword by vpmuldq
  alignas(64) std::int64_t multiplier_odd[8];
  alignas(64) std::int64_t offset_even[8];  // added to x*M when x >= 0 (x after the left shift)
  alignas(64) std::int64_t offset_odd[8];
  alignas(64) std::int64_t negative_offset_even[8];  // ... when x < 0
  alignas(64) std::int64_t negative_offset_odd[8];
  // offset - negative_offset: 2^31 or 0 (bit 31 only), so (~x & sign_step) adds it for x >= 0.
  alignas(64) std::int64_t sign_step_even[8];
  alignas(64) std::int64_t sign_step_odd[8];
  alignas(64) std::int64_t shift_even[8];  // arithmetic right shift of the 64-bit sum
  alignas(64) std::int64_t shift_odd[8];
  alignas(64) std::int32_t left_shift[16];

  /// Whether multiply_by_nonnegative_multiplier<Mode> equals the scalar twin for s: always with
  /// single rounding; with reference rounding for multipliers >= 0 (all quantize_multiplier makes).
  template <rounding Mode>
  static constexpr bool supports(requant_scale s) noexcept {
    return Mode == rounding::single_round || s.multiplier >= 0;
  }

  /// Whether multiply_by_nonnegative_multiplier<..., false> (offset_* for every lane) gives the
  /// result for every x after the caller's clamp: where a lane's two offsets are equal, or where
  /// the clamp starts at or above the output zero point (`clamp_hides_negative`) and the multiplier
  /// is 0 or normalized (>= 2^30, as quantize_multiplier makes): then for x < 0 both offsets give
  /// results <= 0, which that clamp maps to clamp.min either way.
  bool sign_free(bool clamp_hides_negative) const noexcept {
    for (int q = 0; q < 8; ++q)
      for (const bool even : {true, false}) {
        const std::int64_t m = (even ? multiplier_even : multiplier_odd)[q];
        const bool equal = (even ? sign_step_even : sign_step_odd)[q] == 0;
        const bool normalized = m == 0 || m >= (std::int64_t{1} << 30);
        if (!equal && !(normalized && clamp_hides_negative)) return false;
      }
    return true;
  }

  /// Whether fold_zero_point is exact for every lane: (x*M + offset + zp 2^s) >> s is
  /// ((x*M + offset) >> s) + zp while the sum fits int64, i.e. |x*M| < 2^62 and |zp| 2^s <= 2^60.
  bool folds_zero_point() const noexcept {
    for (int q = 0; q < 8; ++q)
      if (shift_even[q] < 0 || shift_even[q] > 52 || shift_odd[q] < 0 || shift_odd[q] > 52) return false;
    return true;
  }

  /// Adds the output zero point to both offsets of every lane (requires folds_zero_point()), so the
  /// result comes out with the zero point in it; sign_step is unchanged.
  void fold_zero_point(std::int32_t zero_point) noexcept {
    for (int q = 0; q < 8; ++q) {
      const std::int64_t even = std::int64_t{zero_point} * (std::int64_t{1} << shift_even[q]);
      const std::int64_t odd = std::int64_t{zero_point} * (std::int64_t{1} << shift_odd[q]);
      offset_even[q] += even, negative_offset_even[q] += even;
      offset_odd[q] += odd, negative_offset_odd[q] += odd;
    }
  }

  template <rounding Mode>
  void set_lane(int lane, requant_scale s) noexcept {
    std::int64_t shift = s.right_shift, offset = 0, negative_offset = 0;
    if constexpr (Mode == rounding::tflite_reference) {
      // SRDHM is floor((x*M + 2^30) / 2^31) (no saturation: M != INT32_MIN). Dividing that by 2^e
      // with ties away from zero folds into one floor((x*M + 2^30 + 2^(30+e) - [x < 0] 2^31) / 2^(31+e)):
      // the 2^31 term is "subtract 1 before rounding" for negative SRDHM values, and with M >= 0 the
      // sign of x only differs from that sign where SRDHM is 0, which both offsets round to 0.
      shift = 31 + s.right_shift;
      offset = negative_offset = std::int64_t{1} << 30;
      if (s.right_shift > 0) {
        offset += std::int64_t{1} << (30 + s.right_shift);
        negative_offset = offset - (std::int64_t{1} << 31);
      }
    } else {
      offset = negative_offset = std::int64_t{1} << (s.right_shift - 1);
    }
    const int q = lane / 2;
    const bool even = lane % 2 == 0;
    (even ? multiplier_even : multiplier_odd)[q] = s.multiplier;
    (even ? offset_even : offset_odd)[q] = offset;
    (even ? negative_offset_even : negative_offset_odd)[q] = negative_offset;
    (even ? sign_step_even : sign_step_odd)[q] = offset - negative_offset;
    (even ? shift_even : shift_odd)[q] = shift;
    left_shift[lane] = s.left_shift;
  }
};

/// requant_lanes as vectors for multiply_by_nonnegative_multiplier. read() leaves GCC free to fold
/// each constant into the instruction that uses it as a memory operand, read again for every vector
/// (right for tiles with too many live accumulators: the pointwise 6x64 tile spilled with pinned
/// constants). pin() loads them once and keeps them in registers for kernels that requantize
/// several vectors of one block: on CPUs that load one zmm per cycle (AMD Zen 4) the reloads, not
/// the arithmetic, bounded the depthwise tile.
template <bool LeftShift = true, bool SignBlend = true>
struct requant_lane_vectors {
  __m512i multiplier_even, multiplier_odd, offset_even, offset_odd, shift_even, shift_odd;
  __m512i sign_step_even, sign_step_odd;  // read with SignBlend only
  __m512i left_shift;                     // read with LeftShift only

  [[gnu::always_inline]] static requant_lane_vectors read(const requant_lanes& c) noexcept {
    const auto at = [](const void* p) { return _mm512_load_si512(p); };
    requant_lane_vectors v;
    v.multiplier_even = at(c.multiplier_even), v.multiplier_odd = at(c.multiplier_odd);
    // SignBlend: offsets start from the negative ones and (~x & sign_step) adds the step for x >= 0.
    v.offset_even = at(SignBlend ? c.negative_offset_even : c.offset_even);
    v.offset_odd = at(SignBlend ? c.negative_offset_odd : c.offset_odd);
    v.shift_even = at(c.shift_even), v.shift_odd = at(c.shift_odd);
    if constexpr (SignBlend) v.sign_step_even = at(c.sign_step_even), v.sign_step_odd = at(c.sign_step_odd);
    if constexpr (LeftShift) v.left_shift = at(c.left_shift);
    return v;
  }

  [[gnu::always_inline]] static requant_lane_vectors pin(const requant_lanes& c) noexcept {
    requant_lane_vectors v = read(c);
    asm(""
        : "+v"(v.multiplier_even), "+v"(v.multiplier_odd), "+v"(v.offset_even), "+v"(v.offset_odd), "+v"(v.shift_even),
          "+v"(v.shift_odd));
    if constexpr (SignBlend) asm("" : "+v"(v.sign_step_even), "+v"(v.sign_step_odd));
    if constexpr (LeftShift) asm("" : "+v"(v.left_shift));
    return v;
  }
};

/// multiply_by_quantized_multiplier for lanes whose constants c was built for (requant_lanes::supports):
/// one 64-bit product, offset and shift per lane; about half the work of the general form.
/// LeftShift = false skips the left shift (every lane's left shift must then be 0). SignBlend =
/// false adds offset_* to every lane: right where both offsets are equal, or where the caller's
/// clamp maps every result of a negative x to the same value either way (see requant_lanes).
template <bool LeftShift, bool SignBlend>
[[gnu::always_inline]] inline __m512i multiply_by_nonnegative_multiplier(
    __m512i x, const requant_lane_vectors<LeftShift, SignBlend>& c) noexcept {
  if constexpr (LeftShift) x = _mm512_sllv_epi32(x, c.left_shift);
  const __m512i x_odd = _mm512_srli_epi64(x, 32);
  __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, c.multiplier_even), c.offset_even);
  __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(x_odd, c.multiplier_odd), c.offset_odd);
  if constexpr (SignBlend) {
    // Bit 31 of each qword is its lane's sign: ~x & sign_step is the step for x >= 0, else 0. Plain
    // vector ops: sign masks (vptestmq, vpmovq2m) and mask blends measured ~10% slower per vector here.
    even = _mm512_add_epi64(even, _mm512_andnot_si512(x, c.sign_step_even));
    odd = _mm512_add_epi64(odd, _mm512_andnot_si512(x_odd, c.sign_step_odd));
  }
  even = _mm512_srav_epi64(even, c.shift_even);
  odd = _mm512_srav_epi64(odd, c.shift_odd);
  // Low dword of each qword is the (wrapped) int32 result; move the odd ones up into place.
  return _mm512_mask_shuffle_epi32(even, 0xAAAA, odd, _MM_PERM_CCAA);
}

/// The same with the constants read from c (as memory operands where GCC folds them).
template <bool LeftShift = true, bool SignBlend = true>
[[gnu::always_inline]] inline __m512i multiply_by_nonnegative_multiplier(__m512i x, const requant_lanes& c) noexcept {
  return multiply_by_nonnegative_multiplier(x, requant_lane_vectors<LeftShift, SignBlend>::read(c));
}

}  // namespace avx512
#endif

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd

#endif  // MOSAIQ_TARGET_AVX2
