// Resize's x86 vector operations (SSE/AVX2/AVX-512 byte vectors for the 2x kernels, AVX2/AVX-512 float vectors for
// the any-ratio kernel), used by ops/resize.hpp. Each is a set of static functions named as the kernels need them.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX2

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/resize/widths.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace detail::upsample {

// Byte-vector operations per ISA: `reg` holds bytes, `wide_reg` 16-bit lanes. widen_lo/widen_hi and narrow are
// inverse lane orders (in-lane on AVX2/AVX-512), which is all the arithmetic below needs.
struct sse_ops {
  using reg = __m128i;
  using wide_reg = __m128i;
  static constexpr int bytes = 16;
  static reg load(const byte* p) noexcept { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static void store(byte* p, reg v) noexcept { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
  static reg flip(reg v, byte f) noexcept { return _mm_xor_si128(v, _mm_set1_epi8(static_cast<char>(f))); }
  static reg average(reg a, reg b) noexcept { return _mm_avg_epu8(a, b); }
  static wide_reg widen_lo(reg v) noexcept { return _mm_unpacklo_epi8(v, _mm_setzero_si128()); }
  static wide_reg widen_hi(reg v) noexcept { return _mm_unpackhi_epi8(v, _mm_setzero_si128()); }
  static wide_reg add(wide_reg a, wide_reg b) noexcept { return _mm_add_epi16(a, b); }
  /// N * near + F * far in 16 bits: pmaddubsw on (near, far) byte pairs with weights (N, F) (N + F <= 128: no
  /// saturation).
  template <int N, int F>
  static void weighted_pair(reg near, reg far, wide_reg& lo, wide_reg& hi) noexcept {
    const __m128i weights = _mm_set1_epi16(static_cast<short>(N | F << 8));
    lo = _mm_maddubs_epi16(_mm_unpacklo_epi8(near, far), weights);
    hi = _mm_maddubs_epi16(_mm_unpackhi_epi8(near, far), weights);
  }
  template <int Shift>
  static reg narrow_rounded(wide_reg lo, wide_reg hi) noexcept {
    // (x + 2^(Shift-1)) >> Shift in one pmulhrsw: (x * 2^(15-Shift) + 2^14) >> 15, exact for x < 2^16.
    const __m128i scale = _mm_set1_epi16(1 << (15 - Shift));
    return _mm_packus_epi16(_mm_mulhrs_epi16(lo, scale), _mm_mulhrs_epi16(hi, scale));
  }
  /// Pairs of groups of G bytes from e and o: lo = e0 o0 e1 o1 ... of the low halves, hi of the high halves
  /// (per 128-bit lane on AVX2/AVX-512).
  template <int G>
  static void unpack(reg e, reg o, reg& lo, reg& hi) noexcept {
    if constexpr (G == 1) lo = _mm_unpacklo_epi8(e, o), hi = _mm_unpackhi_epi8(e, o);
    if constexpr (G == 2) lo = _mm_unpacklo_epi16(e, o), hi = _mm_unpackhi_epi16(e, o);
    if constexpr (G == 4) lo = _mm_unpacklo_epi32(e, o), hi = _mm_unpackhi_epi32(e, o);
    if constexpr (G == 8) lo = _mm_unpacklo_epi64(e, o), hi = _mm_unpackhi_epi64(e, o);
    if constexpr (G == 16) lo = e, hi = o;
  }
  /// Stores groups of G bytes alternately from e and o: e0 o0 e1 o1 ... (2 * bytes in all).
  template <int G>
  static void store_interleaved(byte* p, reg e, reg o) noexcept {
    reg lo, hi;
    unpack<G>(e, o, lo, hi);
    store(p, lo);
    store(p + 16, hi);
  }
};

struct avx2_ops {
  using reg = __m256i;
  using wide_reg = __m256i;
  static constexpr int bytes = 32;
  static reg load(const byte* p) noexcept { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store(byte* p, reg v) noexcept { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static reg flip(reg v, byte f) noexcept { return _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(f))); }
  static reg average(reg a, reg b) noexcept { return _mm256_avg_epu8(a, b); }
  static wide_reg widen_lo(reg v) noexcept { return _mm256_unpacklo_epi8(v, _mm256_setzero_si256()); }
  static wide_reg widen_hi(reg v) noexcept { return _mm256_unpackhi_epi8(v, _mm256_setzero_si256()); }
  static wide_reg add(wide_reg a, wide_reg b) noexcept { return _mm256_add_epi16(a, b); }
  template <int N, int F>
  static void weighted_pair(reg near, reg far, wide_reg& lo, wide_reg& hi) noexcept {
    const __m256i weights = _mm256_set1_epi16(static_cast<short>(N | F << 8));
    lo = _mm256_maddubs_epi16(_mm256_unpacklo_epi8(near, far), weights);
    hi = _mm256_maddubs_epi16(_mm256_unpackhi_epi8(near, far), weights);
  }
  template <int Shift>
  static reg narrow_rounded(wide_reg lo, wide_reg hi) noexcept {
    const __m256i scale = _mm256_set1_epi16(1 << (15 - Shift));  // rounding shift in one pmulhrsw, as in sse_ops
    return _mm256_packus_epi16(_mm256_mulhrs_epi16(lo, scale), _mm256_mulhrs_epi16(hi, scale));
  }
  template <int G>
  static void unpack(reg e, reg o, reg& lo, reg& hi) noexcept {
    if constexpr (G == 1) lo = _mm256_unpacklo_epi8(e, o), hi = _mm256_unpackhi_epi8(e, o);
    if constexpr (G == 2) lo = _mm256_unpacklo_epi16(e, o), hi = _mm256_unpackhi_epi16(e, o);
    if constexpr (G == 4) lo = _mm256_unpacklo_epi32(e, o), hi = _mm256_unpackhi_epi32(e, o);
    if constexpr (G == 8) lo = _mm256_unpacklo_epi64(e, o), hi = _mm256_unpackhi_epi64(e, o);
    if constexpr (G == 16) lo = e, hi = o;
  }
  /// 16-byte pixels, one per 128-bit lane (also in widened form): the pixels one and two before `cur`'s first, taken
  /// from `prev` (the vector before).
  static wide_reg pixels_from_1(wide_reg prev, wide_reg cur) noexcept {
    return _mm256_permute2x128_si256(prev, cur, 0x21);
  }
  static wide_reg pixels_from_2(wide_reg prev, wide_reg) noexcept { return prev; }
  // unpack works within 128-bit lanes: lane k of lo/hi holds the first/second half of input lane k's pairs.
  template <int G>
  static void store_interleaved(byte* p, reg e, reg o) noexcept {
    reg lo, hi;
    unpack<G>(e, o, lo, hi);
    store(p, _mm256_permute2x128_si256(lo, hi, 0x20));
    store(p + 32, _mm256_permute2x128_si256(lo, hi, 0x31));
  }
};

#if MOSAIQ_TARGET_AVX512
struct avx512_ops {
  using reg = __m512i;
  using wide_reg = __m512i;
  static constexpr int bytes = 64;
  static reg load(const byte* p) noexcept { return _mm512_loadu_si512(p); }
  static void store(byte* p, reg v) noexcept { _mm512_storeu_si512(p, v); }
  static reg flip(reg v, byte f) noexcept { return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(f))); }
  static reg average(reg a, reg b) noexcept { return _mm512_avg_epu8(a, b); }
  static wide_reg widen_lo(reg v) noexcept { return _mm512_unpacklo_epi8(v, _mm512_setzero_si512()); }
  static wide_reg widen_hi(reg v) noexcept { return _mm512_unpackhi_epi8(v, _mm512_setzero_si512()); }
  static wide_reg add(wide_reg a, wide_reg b) noexcept { return _mm512_add_epi16(a, b); }
  template <int N, int F>
  static void weighted_pair(reg near, reg far, wide_reg& lo, wide_reg& hi) noexcept {
    const __m512i weights = _mm512_set1_epi16(static_cast<short>(N | F << 8));
    lo = _mm512_maddubs_epi16(_mm512_unpacklo_epi8(near, far), weights);
    hi = _mm512_maddubs_epi16(_mm512_unpackhi_epi8(near, far), weights);
  }
  template <int Shift>
  static reg narrow_rounded(wide_reg lo, wide_reg hi) noexcept {
    const __m512i scale = _mm512_set1_epi16(1 << (15 - Shift));  // rounding shift in one pmulhrsw, as in sse_ops
    return _mm512_packus_epi16(_mm512_mulhrs_epi16(lo, scale), _mm512_mulhrs_epi16(hi, scale));
  }
  template <int G>
  static void unpack(reg e, reg o, reg& lo, reg& hi) noexcept {
    if constexpr (G == 1) lo = _mm512_unpacklo_epi8(e, o), hi = _mm512_unpackhi_epi8(e, o);
    if constexpr (G == 2) lo = _mm512_unpacklo_epi16(e, o), hi = _mm512_unpackhi_epi16(e, o);
    if constexpr (G == 4) lo = _mm512_unpacklo_epi32(e, o), hi = _mm512_unpackhi_epi32(e, o);
    if constexpr (G == 8) lo = _mm512_unpacklo_epi64(e, o), hi = _mm512_unpackhi_epi64(e, o);
    if constexpr (G == 16) lo = e, hi = o;
  }
  static wide_reg pixels_from_1(wide_reg prev, wide_reg cur) noexcept { return _mm512_alignr_epi64(cur, prev, 6); }
  static wide_reg pixels_from_2(wide_reg prev, wide_reg cur) noexcept { return _mm512_alignr_epi64(cur, prev, 4); }
  // Lane k of lo/hi (128 bits each) holds the first/second half of lane k's groups; put them back in memory order.
  template <int G>
  static void store_interleaved(byte* p, reg e, reg o) noexcept {
    reg lo, hi;
    unpack<G>(e, o, lo, hi);
    store(p, _mm512_permutex2var_epi64(lo, _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), hi));
    store(p + 64, _mm512_permutex2var_epi64(lo, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), hi));
  }
};
#endif

#if MOSAIQ_TARGET_AVX512
using native_widths = byte_widths<avx512_ops, avx2_ops, sse_ops>;
#else
using native_widths = byte_widths<avx2_ops, sse_ops>;
#endif

}  // namespace detail::upsample

namespace detail::any_ratio {

// Float-vector operations per ISA. `product` multiplies and then passes the result through an empty asm statement:
// the sums below must add the products exactly as rounded to float32, and GCC contracts a multiply feeding an add
// into an FMA whenever FMA is enabled (-ffp-contract=fast is its default in GNU mode, also for intrinsics, which are
// plain vector arithmetic to it). The barrier makes that contraction impossible whatever flags the user builds with.
#if MOSAIQ_TARGET_AVX512
struct avx512_float {
  using vf = __m512;
  static constexpr int lanes = 16;
  static __mmask16 mask(int n) noexcept { return static_cast<__mmask16>((1u << n) - 1u); }
  static vf load(const float* p) noexcept { return _mm512_loadu_ps(p); }
  static vf load(const float* p, int n) noexcept { return _mm512_maskz_loadu_ps(mask(n), p); }
  static vf gather(const float* base, const std::int32_t* index) noexcept {
    return _mm512_i32gather_ps(_mm512_loadu_si512(index), base, 4);
  }
  /// window[index[i]] for each lane (indices below lanes).
  static vf permute(vf window, const std::int32_t* index) noexcept {
    return _mm512_permutexvar_ps(_mm512_loadu_si512(index), window);
  }
  static vf broadcast(float w) noexcept { return _mm512_set1_ps(w); }
  static vf product(vf a, vf b) noexcept {
    vf p = _mm512_mul_ps(a, b);
    asm("" : "+v"(p));  // no FMA contraction: see above
    return p;
  }
  static vf add(vf a, vf b) noexcept { return _mm512_add_ps(a, b); }
  /// floor(sum + 0.5f) as int32: the conversion rounds toward -inf.
  static __m512i rounded(vf sum) noexcept {
    return _mm512_cvt_roundps_epi32(_mm512_add_ps(sum, _mm512_set1_ps(0.5f)),
                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  }
  template <class T>
  static void store(T* p, vf sum, int n = lanes) noexcept {
    const __m512i v = rounded(sum);
    if constexpr (std::same_as<T, u8>)
      _mm512_mask_cvtusepi32_storeu_epi8(p, mask(n), _mm512_max_epi32(v, _mm512_setzero_si512()));
    else
      _mm512_mask_cvtsepi32_storeu_epi8(p, mask(n), v);
  }
  /// Four vectors of sums to 4 * lanes results: two packs (saturating, like the clamp) and one lane permute.
  template <class T>
  static void store4(T* p, vf s0, vf s1, vf s2, vf s3) noexcept {
    const __m512i low = _mm512_packs_epi32(rounded(s0), rounded(s1)),
                  high = _mm512_packs_epi32(rounded(s2), rounded(s3));
    const __m512i bytes = std::same_as<T, u8> ? _mm512_packus_epi16(low, high) : _mm512_packs_epi16(low, high);
    // 128-bit lane k holds dwords s0[k], s1[k], s2[k], s3[k] (4 results each).
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_si512(p, _mm512_permutexvar_epi32(order, bytes));
  }
  template <class T>
  static vf widen(__m128i bytes) noexcept {
    if constexpr (std::same_as<T, u8>)
      return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
    else
      return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
  }
  /// dst[i] = float(src[i]) * w for i < count.
  template <class T>
  static void convert(const T* src, int count, float w, float* dst) noexcept {
    const vf weight = broadcast(w);
    int i = 0;
    for (; i + lanes <= count; i += lanes)
      _mm512_storeu_ps(dst + i,
                       _mm512_mul_ps(widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))), weight));
    if (i < count) {
      const __mmask16 m = mask(count - i);
      const __m128i bytes = _mm512_castsi512_si128(_mm512_maskz_loadu_epi8(m, src + i));
      _mm512_mask_storeu_ps(dst + i, m, _mm512_mul_ps(widen<T>(bytes), weight));
    }
  }
};
#endif
struct avx2_float {
  using vf = __m256;
  static constexpr int lanes = 8;
  static __m256i mask(int n) noexcept {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static vf load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  static vf load(const float* p, int n) noexcept { return _mm256_maskload_ps(p, mask(n)); }
  static vf gather(const float* base, const std::int32_t* index) noexcept {
    return _mm256_i32gather_ps(base, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index)), 4);
  }
  static vf permute(vf window, const std::int32_t* index) noexcept {
    return _mm256_permutevar8x32_ps(window, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index)));
  }
  static vf broadcast(float w) noexcept { return _mm256_set1_ps(w); }
  static vf product(vf a, vf b) noexcept {
    vf p = _mm256_mul_ps(a, b);
    asm("" : "+v"(p));  // no FMA contraction: see above
    return p;
  }
  static vf add(vf a, vf b) noexcept { return _mm256_add_ps(a, b); }
  /// floor(sum + 0.5f), saturated to T, in the low 8 bytes.
  template <class T>
  static __m128i narrowed(vf sum) noexcept {
    const __m256i v = rounded(sum);
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    if constexpr (std::same_as<T, u8>)
      return _mm_packus_epi16(words, words);
    else
      return _mm_packs_epi16(words, words);
  }
  template <class T>
  static void store(T* p, vf sum) noexcept {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), narrowed<T>(sum));
  }
  static __m256i rounded(vf sum) noexcept {
    return _mm256_cvtps_epi32(_mm256_floor_ps(_mm256_add_ps(sum, _mm256_set1_ps(0.5f))));
  }
  /// Four vectors of sums to 32 results: two packs (saturating, like the clamp) and one lane permute.
  template <class T>
  static void store4(T* p, vf s0, vf s1, vf s2, vf s3) noexcept {
    const __m256i low = _mm256_packs_epi32(rounded(s0), rounded(s1));
    const __m256i high = _mm256_packs_epi32(rounded(s2), rounded(s3));
    const __m256i bytes = std::same_as<T, u8> ? _mm256_packus_epi16(low, high) : _mm256_packs_epi16(low, high);
    // 128-bit lane k holds dwords s0[k], s1[k], s2[k], s3[k] (4 results each).
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_permutevar8x32_epi32(bytes, order));
  }
  template <class T>
  static void store(T* p, vf sum, int n) noexcept {
    alignas(16) T bytes[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(bytes), narrowed<T>(sum));
    std::memcpy(p, bytes, static_cast<std::size_t>(n) * sizeof(T));
  }
  template <class T>
  static void convert(const T* src, int count, float w, float* dst) noexcept {
    const vf weight = broadcast(w);
    const auto one = [&](int i) noexcept {
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i));
      const __m256i words = std::same_as<T, u8> ? _mm256_cvtepu8_epi32(bytes) : _mm256_cvtepi8_epi32(bytes);
      _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_cvtepi32_ps(words), weight));
    };
    // Four vectors a step: a one-vector loop is a few instructions whose speed depends on where the linker places it
    // (split over two 64-byte fetch windows it ran measurably slower in one build; docs/decisions.md).
    int i = 0;
    for (; i + 4 * lanes <= count; i += 4 * lanes) one(i), one(i + lanes), one(i + 2 * lanes), one(i + 3 * lanes);
    for (; i + lanes <= count; i += lanes) one(i);
    for (; i < count; ++i) dst[i] = static_cast<float>(src[i]) * w;
  }
};

#if MOSAIQ_TARGET_AVX512
using float_ops = avx512_float;
#else
using float_ops = avx2_float;
#endif

}  // namespace detail::any_ratio
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX2
