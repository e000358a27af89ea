// Quantized softmax over channels and logistic, table driven, bit-exact with reference/softmax.hpp:
//
//   mosaiq::softmax<mosaiq::softmax_config{.channels = 2}, mosaiq::u8> sm(input_quant, beta);  // load time: tables
//   sm(input, output);     // output quantization: reference::probability_output_params<T> (1/256, min(T))
//   mosaiq::logistic<mosaiq::i8> sigmoid(input_quant);
//   sigmoid(input, output);
//
// Two classes (segmentation heads). The reference output of a pixel depends on d = x0 - x1 only (both entries are
// taken relative to the row maximum), and out1(d) = out0(-d) exactly because the two share one sum. So a 511-entry
// table P[255 + d] = reference out0 of a pair with difference d, built by running reference::softmax itself on the
// 511 pairs, gives out0 = P[255 + d], out1 = P[255 - d] bit for bit (never 256 - out0: that differs in rare cases).
// P is constant below some index `first` and above `last`, so indices are clamped to that window first:
//   AVX-512 VBMI  one vpermi2b (128 entries) when the window fits, else four plus three byte blends;
//   AVX2          16-entry pshufb lookups XOR-telescoped over the window when it has at most 128 entries (input
//                 scale * beta above about 0.09); wider windows run the scalar loop (2 loads and a subtract per
//                 pixel), as does AVX-512 without VBMI above 128 entries;
//   NEON aarch64  vqtbx4q (64 entries) chained over the window; armv7 runs the scalar loop.
// Pixels are processed as byte pairs of dense views (the lookups produce interleaved out0/out1 directly); strided
// views go pixel by pixel through the scalar twin.
//
// Other channel counts (every ISA with 32-bit lanes, ops/detail/lanes.hpp; scalar builds call reference::softmax):
//   1..32 channels   16 pixels per block, one int32 lane per pixel (vectorized across pixels, not across the tiny
//                    channel axis): channels transposed through a byte buffer, lane max, exp entries gathered
//                    (vpgatherdd on AVX-512/AVX2, scalar loads on NEON) and summed (< 2^30), then
//   33+ channels     one pixel at a time, vectorized along the channels (gathered entries, int32 partial sums
//                    flushed to 64 bits), pixels with sum >= 2^30 (over 128 channels near the maximum) go scalar;
// both normalize exactly: q = trunc(float(256 e + sum/2) * (1/float(sum))) is within one of the reference's
// 64-bit quotient, and the int32 remainder 256 e + sum/2 - q sum (exact mod 2^32, |r| < 2^31) corrects it.
//
// Logistic: the 256-entry reference table indexed by the input byte, looked up with vpermi2b (AVX-512 VBMI),
// XOR-telescoped pshufb (AVX2, AVX-512 without VBMI), vqtbx4q (NEON aarch64), or a scalar loop.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/lanes.hpp"
#include "mosaiq/reference/softmax.hpp"
#include "mosaiq/simd/arch.hpp"

#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX2__)
#include <immintrin.h>
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace mosaiq {

/// Compile-time description of a softmax layer: the channel count it is specialized for.
struct softmax_config {
  int channels = 2;
  friend constexpr bool operator==(const softmax_config&, const softmax_config&) = default;
};

namespace detail::probability {

using byte = std::uint8_t;

/// The two-class table and its clamp window, in the layouts the lookups need.
struct pair_table {
  std::array<byte, 511> by_index{};  // reference out0 of a pair with x0 - x1 = index - 255, as output bytes
  int first = 0;                     // clamping an index to [first, last] changes no entry it reads
  int last = 510;
  alignas(64) std::array<byte, 512> window{};            // by_index[min(first + k, last)]
  alignas(32) std::array<byte, 8 * 32> pshufb_deltas{};  // AVX2: 16-byte chunk k of window XOR chunk k-1, twice

  int window_size() const noexcept { return last - first + 1; }

  void finish() noexcept {
    first = 0;
    while (first < 510 && by_index[static_cast<std::size_t>(first) + 1] == by_index[0]) ++first;
    last = 510;
    while (last > first && by_index[static_cast<std::size_t>(last) - 1] == by_index[510]) --last;
    for (int k = 0; k < 512; ++k)
      window[static_cast<std::size_t>(k)] = by_index[static_cast<std::size_t>(std::min(first + k, last))];
    for (std::size_t k = 0; k < 8; ++k)
      for (std::size_t j = 0; j < 16; ++j) {
        const byte delta = static_cast<byte>(window[16 * k + j] ^ (k > 0 ? window[16 * (k - 1) + j] : 0));
        pshufb_deltas[32 * k + j] = pshufb_deltas[32 * k + 16 + j] = delta;
      }
  }
};

/// The scalar twin over `pixels` pairs at `in` (element type T, so d needs no flip).
template <quantized_element T>
inline void pairs_scalar(const pair_table& table, const T* in, T* out, std::size_t pixels) noexcept {
  for (std::size_t i = 0; i < pixels; ++i) {
    const int d = static_cast<int>(in[2 * i]) - static_cast<int>(in[2 * i + 1]);
    out[2 * i] = static_cast<T>(table.by_index[static_cast<std::size_t>(255 + d)]);
    out[2 * i + 1] = static_cast<T>(table.by_index[static_cast<std::size_t>(255 - d)]);
  }
}

#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX512VBMI__) && defined(__AVX512BW__)
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
#endif

#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX2__)
/// XOR-telescoped pshufb lookup of byte indices 0..16*chunks-1 (at most 127): step k contributes delta chunk k at
/// index & 15 while index - 16k is not negative, and the deltas telescope to chunk index / 16.
inline __m256i telescoped_lookup(const byte* deltas, int chunks, __m256i index) noexcept {
  __m256i result = _mm256_setzero_si256();
  const __m256i sixteen = _mm256_set1_epi8(16);
  for (int k = 0; k < chunks; ++k) {
    const __m256i delta = _mm256_load_si256(reinterpret_cast<const __m256i*>(deltas + 32 * k));
    result = _mm256_xor_si256(result, _mm256_shuffle_epi8(delta, index));
    index = _mm256_subs_epi8(index, sixteen);  // saturating: once negative, stays negative (pshufb gives 0)
  }
  return result;
}

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
                        telescoped_lookup(table.pshufb_deltas.data(), chunks, index));
  }
  return j / 2;
}
#endif

#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__ARM_NEON) && defined(__aarch64__)
/// 16 pairs per iteration (vld2q deinterleaves x0 / x1); returns the pixels done.
inline std::size_t pairs_neon(const pair_table& table, const byte* in, byte* out, std::size_t pixels,
                              byte flip) noexcept {
  const uint8x16_t flip_bytes = vdupq_n_u8(flip);
  const uint16x8_t bias = vdupq_n_u16(255), first = vdupq_n_u16(static_cast<std::uint16_t>(table.first));
  const uint16x8_t last = vdupq_n_u16(static_cast<std::uint16_t>(table.last));
  const int chunks = (table.window_size() + 63) / 64;
  const auto window_index = [&](uint8x8_t self, uint8x8_t other) noexcept {
    const uint16x8_t index = vaddq_u16(vsubl_u8(self, other), bias);  // wraps mod 2^16 to 255 + d
    return vsubq_u16(vminq_u16(vmaxq_u16(index, first), last), first);
  };
  const auto lookup = [&](uint16x8_t lo, uint16x8_t hi) noexcept {
    uint8x16_t result = vdupq_n_u8(0);
    for (int k = 0; k < chunks; ++k) {
      const byte* base = table.window.data() + 64 * k;
      const uint8x16x4_t entries{{vld1q_u8(base), vld1q_u8(base + 16), vld1q_u8(base + 32), vld1q_u8(base + 48)}};
      const uint16x8_t offset = vdupq_n_u16(static_cast<std::uint16_t>(64 * k));
      // Indices below 64k wrap to large u16 values and saturate to 255: out of range, the entry is kept.
      const uint8x16_t local = vcombine_u8(vqmovn_u16(vsubq_u16(lo, offset)), vqmovn_u16(vsubq_u16(hi, offset)));
      result = vqtbx4q_u8(result, entries, local);
    }
    return result;
  };
  std::size_t i = 0;
  for (; i + 16 <= pixels; i += 16) {
    uint8x16x2_t pairs = vld2q_u8(in + 2 * i);
    const uint8x16_t x0 = veorq_u8(pairs.val[0], flip_bytes), x1 = veorq_u8(pairs.val[1], flip_bytes);
    const uint16x8_t i0_lo = window_index(vget_low_u8(x0), vget_low_u8(x1));
    const uint16x8_t i0_hi = window_index(vget_high_u8(x0), vget_high_u8(x1));
    const uint16x8_t i1_lo = window_index(vget_low_u8(x1), vget_low_u8(x0));
    const uint16x8_t i1_hi = window_index(vget_high_u8(x1), vget_high_u8(x0));
    pairs.val[0] = lookup(i0_lo, i0_hi);
    pairs.val[1] = lookup(i1_lo, i1_hi);
    vst2q_u8(out + 2 * i, pairs);
  }
  return i;
}
#endif

/// Two-class softmax over `pixels` dense pairs.
template <quantized_element T>
inline void pairs_dense(const pair_table& table, const T* in, T* out, std::size_t pixels) noexcept {
  [[maybe_unused]] constexpr byte flip = std::same_as<T, i8> ? 0x80 : 0x00;
  [[maybe_unused]] const auto* in_bytes = reinterpret_cast<const byte*>(in);
  [[maybe_unused]] auto* out_bytes = reinterpret_cast<byte*>(out);
  std::size_t done = 0;
#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX512VBMI__) && defined(__AVX512BW__)
  if (table.window_size() <= 128)
    pairs_vbmi<true>(table, in_bytes, out_bytes, pixels, flip);
  else
    pairs_vbmi<false>(table, in_bytes, out_bytes, pixels, flip);
  done = pixels;
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX2__)
  if (table.window_size() <= 128) done = pairs_avx2(table, in_bytes, out_bytes, pixels, flip);
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(__ARM_NEON) && defined(__aarch64__)
  done = pairs_neon(table, in_bytes, out_bytes, pixels, flip);
#endif
  pairs_scalar<T>(table, in + 2 * done, out + 2 * done, pixels - done);
}

/// Softmax of every pixel of a strided run (pixel k at in + k * in_stride), any channel count: the reference formula
/// pixel by pixel. Used for the tails and for pixels whose sum exceeds the vector normalization's range.
template <quantized_element T>
inline void rows_scalar(const std::array<std::uint32_t, 256>& exp_table, const T* in, std::ptrdiff_t in_stride, T* out,
                        std::ptrdiff_t out_stride, std::size_t pixels, int channels) noexcept {
  for (std::size_t k = 0; k < pixels; ++k) {
    const T* source = in + static_cast<std::ptrdiff_t>(k) * in_stride;
    T* result = out + static_cast<std::ptrdiff_t>(k) * out_stride;
    std::int32_t max = source[0];
    for (int c = 1; c < channels; ++c) max = std::max<std::int32_t>(max, source[c]);
    std::uint64_t sum = 0;
    for (int c = 0; c < channels; ++c) sum += exp_table[static_cast<std::size_t>(source[c] - max + 255)];
    for (int c = 0; c < channels; ++c) {
      const std::uint64_t entry = exp_table[static_cast<std::size_t>(source[c] - max + 255)];
      const std::uint64_t probability_q8 = std::min<std::uint64_t>(255, ((entry << 8) + sum / 2) / sum);
      result[c] = static_cast<T>(static_cast<std::int32_t>(probability_q8) + element_traits<T>::min);
    }
  }
}

#if defined(MOSAIQ_LANES)
inline constexpr bool has_lanes = true;
namespace vec {
using lanes::freg;
using lanes::isa;
using lanes::reg;
constexpr int regs = isa::regs;

[[gnu::always_inline]] inline void store(std::uint32_t* p, reg a) noexcept {
#if defined(__AVX512F__)
  _mm512_storeu_si512(p, a);
#elif defined(__AVX2__)
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), a);
#else
  vst1q_s32(reinterpret_cast<std::int32_t*>(p), a);
#endif
}

/// Table entries at 16 indices in [0, 255]: gathers on x86, scalar loads on NEON.
[[gnu::always_inline]] inline void gather(const std::uint32_t* table, const reg* index, reg* entries) noexcept {
#if defined(__AVX512F__)
  entries[0] = _mm512_i32gather_epi32(index[0], table, 4);
#elif defined(__AVX2__)
  for (int r = 0; r < regs; ++r) entries[r] = _mm256_i32gather_epi32(reinterpret_cast<const int*>(table), index[r], 4);
#else
  alignas(16) std::int32_t at[16], values[16];
  for (int r = 0; r < regs; ++r) vst1q_s32(at + 4 * r, index[r]);
  for (int i = 0; i < 16; ++i) values[i] = static_cast<std::int32_t>(table[at[i]]);
  for (int r = 0; r < regs; ++r) entries[r] = vld1q_s32(values + 4 * r);
#endif
}

/// a >> 1 (logical) for a >= 0.
[[gnu::always_inline]] inline reg half(reg a) noexcept {
#if defined(__AVX512F__)
  return _mm512_srli_epi32(a, 1);
#elif defined(__AVX2__)
  return _mm256_srli_epi32(a, 1);
#else
  return vshrq_n_s32(a, 1);
#endif
}

/// 1 / float(d) for d > 0 (any correctly rounded division: the remainder step below makes the quotient exact).
[[gnu::always_inline]] inline freg reciprocal(reg d) noexcept {
#if defined(__AVX512F__)
  return _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_cvtepi32_ps(d));
#elif defined(__AVX2__)
  return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_cvtepi32_ps(d));
#elif defined(__aarch64__)
  return vdivq_f32(vdupq_n_f32(1.0f), vcvtq_f32_s32(d));
#else
  alignas(16) float v[4];
  vst1q_f32(v, vcvtq_f32_s32(d));
  for (float& x : v) x = 1.0f / x;
  return vld1q_f32(v);
#endif
}

/// The reference's min(255, (e * 256 + h) / d) with h = d / 2, exactly, for 0 <= e <= d < 2^30: the float quotient
/// is within 2^-21 relative of the exact one (so off by at most one after truncation), and the remainder
/// n - q * d, exact mod 2^32 and inside (-2^30, 2^31), corrects it.
[[gnu::always_inline]] inline reg normalize(reg e, reg d, reg d_minus_one, reg h, freg inverse) noexcept {
  const reg n = isa::add(isa::shift_left(e, 8), h);
  const freg nf = isa::fadd(isa::fmul(isa::to_float(e), isa::fset1(256.0f)), isa::to_float(h));
  reg q = isa::truncate(isa::fmul(nf, inverse));
  const reg r = isa::sub(n, isa::mullo(q, d));
  q = isa::sub(q, isa::greater(r, d_minus_one));  // r >= d: one more
  q = isa::add(q, isa::greater(isa::zero(), r));  // r < 0: one less
  return isa::min(q, isa::set1(255));
}

/// Largest channel count of the transposed path: sums stay below 2^30 (at most channels * 2^23).
inline constexpr int max_transposed_channels = 32;

/// Small depths: 16 pixels per block, one lane per pixel; channels are transposed through a byte buffer (as u8:
/// i8 ^ 0x80 keeps every difference), the entries of a block stay in registers for the normalization.
template <quantized_element T>
inline void transposed(const std::array<std::uint32_t, 256>& exp_table, const T* in, std::ptrdiff_t in_stride, T* out,
                       std::ptrdiff_t out_stride, std::size_t pixels, int channels) noexcept {
  constexpr std::uint8_t flip = std::same_as<T, i8> ? 0x80 : 0x00;
  alignas(64) std::uint8_t bytes[max_transposed_channels * 16];
  reg entries[max_transposed_channels][regs];
  const auto* table = exp_table.data();
  for (std::size_t k = 0; k < pixels; k += 16) {
    const int lanes_used = static_cast<int>(std::min<std::size_t>(16, pixels - k));
    const T* source = in + static_cast<std::ptrdiff_t>(k) * in_stride;
    if (lanes_used < 16) std::memset(bytes, 0, sizeof bytes);
    for (int i = 0; i < lanes_used; ++i)
      for (int c = 0; c < channels; ++c)
        bytes[16 * c + i] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(source[i * in_stride + c]) ^ flip);
    reg max[regs], x[regs];
    isa::widen<u8>(bytes, max);
    for (int c = 1; c < channels; ++c) {
      isa::widen<u8>(bytes + 16 * c, x);
      for (int r = 0; r < regs; ++r) max[r] = isa::max(max[r], x[r]);
    }
    reg sum[regs];
    for (int r = 0; r < regs; ++r) {
      max[r] = isa::sub(isa::set1(255), max[r]);  // index = x + (255 - max)
      sum[r] = isa::zero();
    }
    for (int c = 0; c < channels; ++c) {
      isa::widen<u8>(bytes + 16 * c, x);
      for (int r = 0; r < regs; ++r) x[r] = isa::add(x[r], max[r]);
      gather(table, x, entries[c]);
      for (int r = 0; r < regs; ++r) sum[r] = isa::add(sum[r], entries[c][r]);
    }
    reg d_minus_one[regs], h[regs];
    freg inverse[regs];
    for (int r = 0; r < regs; ++r) {
      d_minus_one[r] = isa::sub(sum[r], isa::set1(1));
      h[r] = half(sum[r]);
      inverse[r] = reciprocal(sum[r]);
    }
    for (int c = 0; c < channels; ++c) {
      reg q[regs];
      for (int r = 0; r < regs; ++r) q[r] = normalize(entries[c][r], sum[r], d_minus_one[r], h[r], inverse[r]);
      isa::narrow<u8>(bytes + 16 * c, q);
    }
    T* result = out + static_cast<std::ptrdiff_t>(k) * out_stride;
    for (int i = 0; i < lanes_used; ++i)
      for (int c = 0; c < channels; ++c)
        result[i * out_stride + c] = static_cast<T>(static_cast<std::uint8_t>(bytes[16 * c + i] ^ flip));
  }
}

/// Large depths, one pixel at a time, vectorized along the channels: byte max, gathered entries summed in int32 lanes
/// (flushed to 64 bits every 128 blocks), then the exact normalization with the sum broadcast. Pixels whose sum
/// reaches 2^30 (only when more than 128 channels sit near the maximum) take the scalar formula.
template <quantized_element T>
inline void along_channels(const std::array<std::uint32_t, 256>& exp_table, const T* in, std::ptrdiff_t in_stride,
                           T* out, std::ptrdiff_t out_stride, std::size_t pixels, int channels) noexcept {
  const auto* table = exp_table.data();
  const int body = channels / 16 * 16;
  for (std::size_t k = 0; k < pixels; ++k) {
    const T* source = in + static_cast<std::ptrdiff_t>(k) * in_stride;
    T* result = out + static_cast<std::ptrdiff_t>(k) * out_stride;
    T max_value = source[0];
    for (int c = 1; c < channels; ++c) max_value = std::max(max_value, source[c]);
    const std::int32_t max = max_value;
    const reg bias = isa::set1(255 - max);
    std::uint64_t sum = 0;
    int c = 0;
    while (c < body) {
      reg acc[regs], x[regs], e[regs];
      for (int r = 0; r < regs; ++r) acc[r] = isa::zero();
      const int stop = std::min(body, c + 128 * 16);
      for (; c < stop; c += 16) {
        isa::widen<T>(source + c, x);
        for (int r = 0; r < regs; ++r) x[r] = isa::add(x[r], bias);
        gather(table, x, e);
        for (int r = 0; r < regs; ++r) acc[r] = isa::add(acc[r], e[r]);
      }
      alignas(64) std::uint32_t parts[16];
      for (int r = 0; r < regs; ++r) store(parts + 16 / regs * r, acc[r]);
      for (const std::uint32_t p : parts) sum += p;
    }
    for (; c < channels; ++c) sum += table[static_cast<std::size_t>(source[c] - max + 255)];
    if (sum >= (std::uint64_t{1} << 30)) {
      rows_scalar<T>(exp_table, source, in_stride, result, out_stride, 1, channels);
      continue;
    }
    const auto d = static_cast<std::int32_t>(sum);
    const reg d_reg = isa::set1(d), d_minus_one = isa::set1(d - 1), h = isa::set1(d / 2);
    const freg inverse = isa::fset1(1.0f / static_cast<float>(d));
    const reg zero_point = isa::set1(element_traits<T>::min);
    for (c = 0; c < body; c += 16) {
      reg x[regs], e[regs];
      isa::widen<T>(source + c, x);
      for (int r = 0; r < regs; ++r) x[r] = isa::add(x[r], bias);
      gather(table, x, e);
      for (int r = 0; r < regs; ++r) x[r] = isa::add(normalize(e[r], d_reg, d_minus_one, h, inverse), zero_point);
      isa::narrow<T>(result + c, x);
    }
    for (; c < channels; ++c) {
      const std::uint64_t entry = table[static_cast<std::size_t>(source[c] - max + 255)];
      const std::uint64_t probability_q8 = std::min<std::uint64_t>(255, ((entry << 8) + sum / 2) / sum);
      result[c] = static_cast<T>(static_cast<std::int32_t>(probability_q8) + element_traits<T>::min);
    }
  }
}
}  // namespace vec
#else
inline constexpr bool has_lanes = false;
#endif

/// Logistic over `count` contiguous bytes; `values` is the 256-entry table indexed by the input byte.
struct logistic_bytes {
  alignas(64) std::array<byte, 256> values{};
  alignas(32) std::array<byte, 16 * 32> pshufb_deltas{};  // per half (entries <128, >=128): telescoped chunks

  void finish() noexcept {
    for (std::size_t k = 0; k < 16; ++k)
      for (std::size_t j = 0; j < 16; ++j) {
        const bool starts_half = k % 8 == 0;
        const byte delta = static_cast<byte>(values[16 * k + j] ^ (starts_half ? 0 : values[16 * (k - 1) + j]));
        pshufb_deltas[32 * k + j] = pshufb_deltas[32 * k + 16 + j] = delta;
      }
  }

  void run(const byte* in, byte* out, std::size_t count) const noexcept {
    std::size_t j = 0;
#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX512VBMI__) && defined(__AVX512BW__)
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
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX2__)
    // Bytes >= 128 are negative as signed bytes, so the low half's lookups give 0 for them, and index ^ 0x80 does
    // the same for the high half; the two results are disjoint and combine with XOR.
    const __m256i top_bit = _mm256_set1_epi8(static_cast<char>(0x80));
    for (; j + 32 <= count; j += 32) {
      const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j));
      const __m256i low = telescoped_lookup(pshufb_deltas.data(), 8, index);
      const __m256i high = telescoped_lookup(pshufb_deltas.data() + 8 * 32, 8, _mm256_xor_si256(index, top_bit));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_xor_si256(low, high));
    }
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(__ARM_NEON) && defined(__aarch64__)
    uint8x16x4_t quarter[4];
    for (int q = 0; q < 4; ++q) {
      const byte* base = values.data() + 64 * q;
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
#endif
    for (; j < count; ++j) out[j] = values[in[j]];
  }
};

template <class T>
bool check_same_views(const tensor_view<const T>& in, const tensor_view<T>& out, const char* what) {
  if (!check_view(in, what) || !check_view(out, what)) return false;
  return require(in.batch() == out.batch() && in.dims() == out.dims(), errc::shape_mismatch, what);
}

}  // namespace detail::probability

/// Softmax over the channels of every pixel, specialized for Cfg.channels; see the file comment.
template <softmax_config Cfg, quantized_element T>
class softmax {
  static_assert(Cfg.channels >= 1, "softmax: channels must be at least 1");

 public:
  static constexpr softmax_config config = Cfg;
  /// True when the run uses the two-class difference table or the vector paths (every ISA with 32-bit lanes);
  /// otherwise (scalar builds, other channel counts than 2) it calls reference::softmax.
  static constexpr bool specialized = Cfg.channels == 2 || detail::probability::has_lanes;
  static constexpr quant_params output_params = reference::probability_output_params<T>;

  /// Load time: builds the tables from the input quantization and beta (reported as errc::invalid_argument, and the
  /// object refuses to run, unless the scale and beta are finite and positive).
  explicit softmax(quant_params input, float beta = 1.0f) : table_(input, beta) {
    if constexpr (Cfg.channels == 2) {
      if (table_.valid()) build_pair_table();
    }
  }

  bool valid() const noexcept { return table_.valid(); }
  const reference::softmax_table& exp_table() const noexcept { return table_; }

  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out) const {
    run(tensor_view<const T>(in), tensor_view<T>(out));
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out) const {
    run(tensor_view<const T>(in), tensor_view<T>(out));
  }

  /// Views may be strided; misuse is reported through mosaiq::require and leaves `out` untouched.
  void run(tensor_view<const T> in, tensor_view<T> out) const {
    if (!require(valid(), errc::invalid_argument, "softmax: built from invalid quantization or beta")) return;
    if (!detail::probability::check_same_views(in, out, "softmax: input and output views must be valid and match"))
      return;
    if (!require(in.channels() == Cfg.channels, errc::shape_mismatch, "softmax: channels differ from config.channels"))
      return;
    if constexpr (Cfg.channels == 2) {
      if (in.is_dense() && out.is_dense()) {
        const std::size_t pixels = static_cast<std::size_t>(in.batch()) * in.dims().pixels();
        detail::probability::pairs_dense<T>(pairs_, in.data(), out.data(), pixels);
        return;
      }
      for (int n = 0; n < in.batch(); ++n)
        for (int y = 0; y < in.height(); ++y)
          for (int x = 0; x < in.width(); ++x)
            detail::probability::pairs_scalar<T>(pairs_, in.pixel(n, y, x), out.pixel(n, y, x), 1);
    } else {
#if defined(MOSAIQ_LANES)
      // Every pixel is at data + k * pixel_stride (rows and images follow the pixel stride).
      const std::size_t pixels = static_cast<std::size_t>(in.batch()) * in.dims().pixels();
      if (pixels == 0) return;
      if constexpr (Cfg.channels <= detail::probability::vec::max_transposed_channels)
        detail::probability::vec::transposed<T>(table_.entries(), in.data(), in.pixel_stride(), out.data(),
                                                out.pixel_stride(), pixels, Cfg.channels);
      else
        detail::probability::vec::along_channels<T>(table_.entries(), in.data(), in.pixel_stride(), out.data(),
                                                    out.pixel_stride(), pixels, Cfg.channels);
#else
      // Scalar builds: the reference (exp table + exact per-element integer division).
      reference::softmax<T>(table_, in, out);
#endif
    }
  }

 private:
  /// P[255 + d] from the reference itself: pixel i of a 511-pixel row is a pair with x0 - x1 = i - 255.
  void build_pair_table() {
    constexpr int lowest = element_traits<T>::min;
    std::array<T, 2 * 511> pairs{}, probabilities{};
    for (int i = 0; i < 511; ++i) {
      const int d = i - 255;
      pairs[2 * static_cast<std::size_t>(i)] = static_cast<T>(lowest + std::max(d, 0));
      pairs[2 * static_cast<std::size_t>(i) + 1] = static_cast<T>(lowest + std::max(-d, 0));
    }
    reference::softmax<T>(table_, tensor_view<const T>(pairs.data(), shape{1, 511, 2}),
                          tensor_view<T>(probabilities.data(), shape{1, 511, 2}));
    for (std::size_t i = 0; i < 511; ++i) pairs_.by_index[i] = static_cast<std::uint8_t>(probabilities[2 * i]);
    pairs_.finish();
  }

  reference::softmax_table table_;
  detail::probability::pair_table pairs_{};
};

/// Logistic (sigmoid) of every element: the reference table, vectorized lookups; see the file comment.
template <quantized_element T>
class logistic {
 public:
  static constexpr quant_params output_params = reference::probability_output_params<T>;

  /// Load time: builds the table (errc::invalid_argument, and the object refuses to run, unless the input scale is
  /// finite and positive).
  explicit logistic(quant_params input) : table_(input) {
    for (std::size_t q = 0; q < 256; ++q) lookup_.values[q] = static_cast<std::uint8_t>(table_.values()[q]);
    lookup_.finish();
  }

  bool valid() const noexcept { return table_.valid(); }
  const reference::logistic_table<T>& table() const noexcept { return table_; }

  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out) const {
    run(tensor_view<const T>(in), tensor_view<T>(out));
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out) const {
    run(tensor_view<const T>(in), tensor_view<T>(out));
  }

  void run(tensor_view<const T> in, tensor_view<T> out) const {
    if (!require(valid(), errc::invalid_argument, "logistic: built from invalid quantization")) return;
    if (!detail::probability::check_same_views(in, out, "logistic: input and output views must be valid and match"))
      return;
    const auto bytes = [](const T* p) { return reinterpret_cast<const std::uint8_t*>(p); };
    const auto out_bytes = [](T* p) { return reinterpret_cast<std::uint8_t*>(p); };
    if (in.is_dense() && out.is_dense()) {
      const std::size_t count = static_cast<std::size_t>(in.batch()) * in.dims().elements();
      if (count > 0) lookup_.run(bytes(in.data()), out_bytes(out.data()), count);
      return;
    }
    const auto channels = static_cast<std::size_t>(in.channels());
    for (int n = 0; n < in.batch(); ++n)
      for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x)
          lookup_.run(bytes(in.pixel(n, y, x)), out_bytes(out.pixel(n, y, x)), channels);
  }

 private:
  reference::logistic_table<T> table_;
  detail::probability::logistic_bytes lookup_{};
};

}  // namespace mosaiq
