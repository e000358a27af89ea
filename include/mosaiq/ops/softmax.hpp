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
// Log-softmax (TFLite LOG_SOFTMAX, bit-exact with reference::log_softmax; output quantization 16/256 at max(T)):
//   mosaiq::log_softmax<mosaiq::softmax_config{.channels = 21}, mosaiq::u8> lsm(input_quant);  lsm(input, output);
// Two classes use the same 511-entry difference table as softmax (built from reference::log_softmax). Other channel
// counts gather two 256-entry int32 tables indexed by x - max + 255 (the exp term in Q12.19, 0 below diff_min; the
// difference in Q5.26), sum per pixel, take one scalar fixed-point log per pixel, and compute the outputs in lanes
// (subtract, rounding shift by 22, clamp, the row's cutoff as a mask): 1..32 channels 16 pixels per block as above,
// 33..4095 along the channels.
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
#include "mosaiq/ops/detail/byte_table.hpp"
#include "mosaiq/ops/detail/lanes.hpp"
#include "mosaiq/reference/softmax.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX2__)
#include <immintrin.h>
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

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

/// The two-class table of a channel-wise op whose outputs depend on x0 - x1 only: P[255 + d] is the reference's out0
/// for the pair (x0, x1) with x0 - x1 = d, taken from one reference run over all 511 pairs.
template <quantized_element T, class Reference>
pair_table make_pair_table(Reference reference) {
  constexpr int lowest = element_traits<T>::min;
  std::array<T, 2 * 511> pairs{}, outputs{};
  for (int i = 0; i < 511; ++i) {
    const int d = i - 255;
    pairs[2 * static_cast<std::size_t>(i)] = static_cast<T>(lowest + std::max(d, 0));
    pairs[2 * static_cast<std::size_t>(i) + 1] = static_cast<T>(lowest + std::max(-d, 0));
  }
  reference(tensor_view<const T>(pairs.data(), shape{1, 511, 2}), tensor_view<T>(outputs.data(), shape{1, 511, 2}));
  pair_table table;
  for (std::size_t i = 0; i < 511; ++i) table.by_index[i] = static_cast<std::uint8_t>(outputs[2 * i]);
  table.finish();
  return table;
}

/// Two-class views: dense ones through the vector lookups, strided ones pixel by pixel.
template <quantized_element T>
void run_pairs(const pair_table& table, tensor_view<const T> in, tensor_view<T> out) {
  if (in.is_dense() && out.is_dense()) {
    pairs_dense<T>(table, in.data(), out.data(), static_cast<std::size_t>(in.batch()) * in.dims().pixels());
    return;
  }
  for (int n = 0; n < in.batch(); ++n)
    for (int y = 0; y < in.height(); ++y)
      for (int x = 0; x < in.width(); ++x) pairs_scalar<T>(table, in.pixel(n, y, x), out.pixel(n, y, x), 1);
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

/// Load-time tables of a log-softmax, indexed by d + 255 for d = x - max in [-255, 0].
struct log_softmax_tables {
  alignas(64) std::array<std::uint32_t, 256> exp_terms{};     // reference exp_term(d): Q12.19, 0 below diff_min
  alignas(64) std::array<std::uint32_t, 256> scaled_diffs{};  // reference scaled_diff(d): Q5.26

  explicit log_softmax_tables(const reference::log_softmax_params& params) noexcept {
    for (int d = -255; d <= 0; ++d) {
      exp_terms[static_cast<std::size_t>(d + 255)] = static_cast<std::uint32_t>(params.exp_term(d));
      scaled_diffs[static_cast<std::size_t>(d + 255)] = static_cast<std::uint32_t>(params.scaled_diff(d));
    }
  }
};

/// A pixel's log(sum) and its cutoff as a table index (d <= cutoff <=> d + 255 <= cutoff_index).
struct log_softmax_row {
  std::int32_t log_sum, cutoff_index;
  log_softmax_row(const reference::log_softmax_params& params, std::int32_t sum) noexcept
      : log_sum(reference::log_softmax_params::log_sum(sum)), cutoff_index(params.cutoff(log_sum) + 255) {}
};

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
/// 16 pixels of at most max_transposed_channels channels transposed into bytes, channel c of pixel i at
/// bytes[16 c + i], as u8 (i8 ^ 0x80 keeps every difference); pixels past the last one are zeros.
template <quantized_element T>
struct pixel_block {
  static constexpr std::uint8_t flip = std::same_as<T, i8> ? 0x80 : 0x00;
  alignas(64) std::uint8_t bytes[max_transposed_channels * 16];

  void load(const T* source, std::ptrdiff_t stride, int lanes_used, int channels) noexcept {
    if (lanes_used < 16) std::memset(bytes, 0, sizeof bytes);
    for (int i = 0; i < lanes_used; ++i)
      for (int c = 0; c < channels; ++c)
        bytes[16 * c + i] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(source[i * stride + c]) ^ flip);
  }
  void store(T* result, std::ptrdiff_t stride, int lanes_used, int channels) const noexcept {
    for (int i = 0; i < lanes_used; ++i)
      for (int c = 0; c < channels; ++c)
        result[i * stride + c] = static_cast<T>(static_cast<std::uint8_t>(bytes[16 * c + i] ^ flip));
  }
  /// Channel c widened to int32 lanes.
  void channel(int c, reg* x) const noexcept { isa::widen<u8>(bytes + 16 * c, x); }
  /// 255 - (the lane's maximum): adding it to a value gives its table index x - max + 255.
  void index_bias(int channels, reg* bias) const noexcept {
    reg x[regs];
    channel(0, bias);
    for (int c = 1; c < channels; ++c) {
      channel(c, x);
      for (int r = 0; r < regs; ++r) bias[r] = isa::max(bias[r], x[r]);
    }
    for (int r = 0; r < regs; ++r) bias[r] = isa::sub(isa::set1(255), bias[r]);
  }
};

template <quantized_element T>
inline void transposed(const std::array<std::uint32_t, 256>& exp_table, const T* in, std::ptrdiff_t in_stride, T* out,
                       std::ptrdiff_t out_stride, std::size_t pixels, int channels) noexcept {
  pixel_block<T> block;
  reg entries[max_transposed_channels][regs];
  const auto* table = exp_table.data();
  for (std::size_t k = 0; k < pixels; k += 16) {
    const int lanes_used = static_cast<int>(std::min<std::size_t>(16, pixels - k));
    block.load(in + static_cast<std::ptrdiff_t>(k) * in_stride, in_stride, lanes_used, channels);
    reg bias[regs], x[regs], sum[regs];
    block.index_bias(channels, bias);
    for (int r = 0; r < regs; ++r) sum[r] = isa::zero();
    for (int c = 0; c < channels; ++c) {
      block.channel(c, x);
      for (int r = 0; r < regs; ++r) x[r] = isa::add(x[r], bias[r]);
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
      isa::narrow<u8>(block.bytes + 16 * c, q);
    }
    block.store(out + static_cast<std::ptrdiff_t>(k) * out_stride, out_stride, lanes_used, channels);
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

[[gnu::always_inline]] inline reg load(const std::int32_t* p) noexcept {
#if defined(__AVX512F__)
  return _mm512_loadu_si512(p);
#elif defined(__AVX2__)
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
#else
  return vld1q_s32(p);
#endif
}

/// RoundingDivideByPOT per lane (ties away from zero), the lane twin of core/quant.hpp's.
[[gnu::always_inline]] inline reg rounding_divide_by_pot(reg x, reg exponent) noexcept {
#if defined(__AVX512F__)
  return simd::avx512::rounding_divide_by_pot(x, exponent);
#elif defined(__AVX2__)
  return simd::avx2::rounding_divide_by_pot(x, exponent);
#else
  return simd::neon::rounding_divide_by_pot(x, exponent);
#endif
}

/// v where mask is all ones, 0 where it is zero.
[[gnu::always_inline]] inline reg keep_where(reg mask, reg v) noexcept {
#if defined(__AVX512F__)
  return _mm512_and_si512(mask, v);
#elif defined(__AVX2__)
  return _mm256_and_si256(mask, v);
#else
  return vandq_s32(mask, v);
#endif
}

/// reference::log_softmax_params::output per lane, with top / bottom the output range: bottom at or below the cutoff,
/// else clamp(RoundingDivideByPOT(scaled - log_sum, 22) + top).
[[gnu::always_inline]] inline reg log_softmax_output(reg scaled, reg log_sum, reg index, reg cutoff_index, reg top,
                                                     reg bottom) noexcept {
  constexpr int step_shift = 31 - reference::log_softmax_params::diff_bits - reference::log_softmax_params::output_bits;
  const reg steps = rounding_divide_by_pot(isa::sub(scaled, log_sum), isa::set1(step_shift));
  const reg clamped = isa::max(isa::min(isa::add(steps, top), top), bottom);
  return isa::add(bottom, keep_where(isa::greater(index, cutoff_index), isa::sub(clamped, bottom)));
}

/// Log-softmax, small depths: 16 pixels per block as in transposed(); the exponential terms are gathered and summed
/// per lane, the 16 logs (one per pixel) are scalar, the outputs are lanes again (as u8: zero point 255, range 0..255,
/// which the i8 flip turns into 127, -128..127).
template <quantized_element T>
inline void log_softmax_transposed(const log_softmax_tables& tables, const reference::log_softmax_params& params,
                                   const T* in, std::ptrdiff_t in_stride, T* out, std::ptrdiff_t out_stride,
                                   std::size_t pixels, int channels) noexcept {
  pixel_block<T> block;
  const reg top = isa::set1(255), bottom = isa::zero();
  for (std::size_t k = 0; k < pixels; k += 16) {
    const int lanes_used = static_cast<int>(std::min<std::size_t>(16, pixels - k));
    block.load(in + static_cast<std::ptrdiff_t>(k) * in_stride, in_stride, lanes_used, channels);
    reg bias[regs], x[regs], e[regs], sum[regs];
    block.index_bias(channels, bias);
    for (int r = 0; r < regs; ++r) sum[r] = isa::zero();
    for (int c = 0; c < channels; ++c) {
      block.channel(c, x);
      for (int r = 0; r < regs; ++r) x[r] = isa::add(x[r], bias[r]);
      gather(tables.exp_terms.data(), x, e);
      for (int r = 0; r < regs; ++r) sum[r] = isa::add(sum[r], e[r]);
    }
    alignas(64) std::uint32_t sums[16];
    alignas(64) std::int32_t log_sums[16], cutoffs[16];
    for (int r = 0; r < regs; ++r) store(sums + 16 / regs * r, sum[r]);
    for (int i = 0; i < 16; ++i) {
      const log_softmax_row row(params, static_cast<std::int32_t>(sums[i]));
      log_sums[i] = row.log_sum;
      cutoffs[i] = row.cutoff_index;
    }
    reg log_sum[regs], cutoff_index[regs];
    for (int r = 0; r < regs; ++r) {
      log_sum[r] = load(log_sums + 16 / regs * r);
      cutoff_index[r] = load(cutoffs + 16 / regs * r);
    }
    for (int c = 0; c < channels; ++c) {
      block.channel(c, x);
      for (int r = 0; r < regs; ++r) x[r] = isa::add(x[r], bias[r]);
      gather(tables.scaled_diffs.data(), x, e);
      for (int r = 0; r < regs; ++r) e[r] = log_softmax_output(e[r], log_sum[r], x[r], cutoff_index[r], top, bottom);
      isa::narrow<u8>(block.bytes + 16 * c, e);
    }
    block.store(out + static_cast<std::ptrdiff_t>(k) * out_stride, out_stride, lanes_used, channels);
  }
}

/// Log-softmax, large depths: one pixel at a time, vectorized along the channels (sums of at most 4095 terms of
/// 2^19 fit int32 lanes); the channel tail takes the reference's per-element steps.
template <quantized_element T>
inline void log_softmax_along_channels(const log_softmax_tables& tables, const reference::log_softmax_params& params,
                                       const T* in, std::ptrdiff_t in_stride, T* out, std::ptrdiff_t out_stride,
                                       std::size_t pixels, int channels) noexcept {
  const int body = channels / 16 * 16;
  const reg top = isa::set1(element_traits<T>::max), bottom = isa::set1(element_traits<T>::min);
  for (std::size_t k = 0; k < pixels; ++k) {
    const T* source = in + static_cast<std::ptrdiff_t>(k) * in_stride;
    T* result = out + static_cast<std::ptrdiff_t>(k) * out_stride;
    const std::int32_t max = *std::max_element(source, source + channels);
    const reg bias = isa::set1(255 - max);
    reg acc[regs], x[regs], e[regs];
    for (int r = 0; r < regs; ++r) acc[r] = isa::zero();
    int c = 0;
    for (; c < body; c += 16) {
      isa::widen<T>(source + c, x);
      for (int r = 0; r < regs; ++r) x[r] = isa::add(x[r], bias);
      gather(tables.exp_terms.data(), x, e);
      for (int r = 0; r < regs; ++r) acc[r] = isa::add(acc[r], e[r]);
    }
    alignas(64) std::uint32_t parts[16];
    for (int r = 0; r < regs; ++r) store(parts + 16 / regs * r, acc[r]);
    std::int32_t sum = 0;
    for (const std::uint32_t p : parts) sum += static_cast<std::int32_t>(p);
    for (; c < channels; ++c) sum += params.exp_term(source[c] - max);
    const log_softmax_row row(params, sum);
    const reg log_sum = isa::set1(row.log_sum), cutoff_index = isa::set1(row.cutoff_index);
    for (c = 0; c < body; c += 16) {
      isa::widen<T>(source + c, x);
      for (int r = 0; r < regs; ++r) x[r] = isa::add(x[r], bias);
      gather(tables.scaled_diffs.data(), x, e);
      for (int r = 0; r < regs; ++r) e[r] = log_softmax_output(e[r], log_sum, x[r], cutoff_index, top, bottom);
      isa::narrow<T>(result + c, e);
    }
    for (; c < channels; ++c) {
      const std::int32_t d = source[c] - max;
      result[c] =
          reference::log_softmax_params::output<T>(d, params.scaled_diff(d), row.log_sum, row.cutoff_index - 255);
    }
  }
}
}  // namespace vec
#else
inline constexpr bool has_lanes = false;
#endif

/// The view-taking entry points of the channel-wise ops: any extents, const or mutable input, forwarded to
/// Op::run on dynamic views.
template <class Op, quantized_element T>
struct view_entry_points {
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out) const {
    static_cast<const Op&>(*this).run(tensor_view<const T>(in), tensor_view<T>(out));
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out) const {
    static_cast<const Op&>(*this).run(tensor_view<const T>(in), tensor_view<T>(out));
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
class softmax : public detail::probability::view_entry_points<softmax<Cfg, T>, T> {
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
      if (table_.valid())
        pairs_ = detail::probability::make_pair_table<T>(
            [&](tensor_view<const T> in, tensor_view<T> out) { reference::softmax<T>(table_, in, out); });
    }
  }

  bool valid() const noexcept { return table_.valid(); }
  const reference::softmax_table& exp_table() const noexcept { return table_; }

  /// Views may be strided; misuse is reported through mosaiq::require and leaves `out` untouched.
  void run(tensor_view<const T> in, tensor_view<T> out) const {
    if (!require(valid(), errc::invalid_argument, "softmax: built from invalid quantization or beta")) return;
    if (!detail::probability::check_same_views(in, out, "softmax: input and output views must be valid and match"))
      return;
    if (!require(in.channels() == Cfg.channels, errc::shape_mismatch, "softmax: channels differ from config.channels"))
      return;
    if constexpr (Cfg.channels == 2) {
      detail::probability::run_pairs<T>(pairs_, in, out);
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
  reference::softmax_table table_;
  detail::probability::pair_table pairs_{};
};

/// Log-softmax over the channels of every pixel (TFLite's quantized LOG_SOFTMAX, beta 1), specialized for
/// Cfg.channels, bit-exact with reference::log_softmax; see the file comment.
template <softmax_config Cfg, quantized_element T>
class log_softmax : public detail::probability::view_entry_points<log_softmax<Cfg, T>, T> {
  static_assert(Cfg.channels >= 1 && Cfg.channels <= reference::log_softmax_params::max_channels,
                "log_softmax: channels must be in [1, 4095] (the fixed-point sum of exponentials overflows above)");

 public:
  static constexpr softmax_config config = Cfg;
  /// True when the run uses the two-class difference table or the vector paths (every ISA with 32-bit lanes);
  /// otherwise (scalar builds, other channel counts than 2) it calls reference::log_softmax.
  static constexpr bool specialized = Cfg.channels == 2 || detail::probability::has_lanes;
  static constexpr quant_params output_params = reference::log_softmax_output_params<T>;

  /// Load time: TFLite's Prepare and the tables (errc::invalid_argument, and the object refuses to run, unless the
  /// input scale is finite and above 2^-26).
  explicit log_softmax(quant_params input) : params_(input), tables_(params_) {
    if constexpr (Cfg.channels == 2) {
      if (params_.valid())
        pairs_ = detail::probability::make_pair_table<T>(
            [&](tensor_view<const T> in, tensor_view<T> out) { reference::log_softmax<T>(params_, in, out); });
    }
  }

  bool valid() const noexcept { return params_.valid(); }
  const reference::log_softmax_params& params() const noexcept { return params_; }

  /// Views may be strided; misuse is reported through mosaiq::require and leaves `out` untouched.
  void run(tensor_view<const T> in, tensor_view<T> out) const {
    if (!require(valid(), errc::invalid_argument, "log_softmax: built from invalid quantization")) return;
    if (!detail::probability::check_same_views(in, out, "log_softmax: input and output views must be valid and match"))
      return;
    if (!require(in.channels() == Cfg.channels, errc::shape_mismatch,
                 "log_softmax: channels differ from config.channels"))
      return;
    if constexpr (Cfg.channels == 2) {
      detail::probability::run_pairs<T>(pairs_, in, out);
    } else {
#if defined(MOSAIQ_LANES)
      const std::size_t pixels = static_cast<std::size_t>(in.batch()) * in.dims().pixels();
      if (pixels == 0) return;
      if constexpr (Cfg.channels <= detail::probability::vec::max_transposed_channels)
        detail::probability::vec::log_softmax_transposed<T>(tables_, params_, in.data(), in.pixel_stride(), out.data(),
                                                            out.pixel_stride(), pixels, Cfg.channels);
      else
        detail::probability::vec::log_softmax_along_channels<T>(tables_, params_, in.data(), in.pixel_stride(),
                                                                out.data(), out.pixel_stride(), pixels, Cfg.channels);
#else
      reference::log_softmax<T>(params_, in, out);
#endif
    }
  }

 private:
  reference::log_softmax_params params_;
  detail::probability::log_softmax_tables tables_;
  detail::probability::pair_table pairs_{};
};

/// Logistic (sigmoid) of every element: the reference table, vectorized lookups; see the file comment.
template <quantized_element T>
class logistic : public detail::probability::view_entry_points<logistic<T>, T> {
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
  detail::byte_table lookup_{};
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
