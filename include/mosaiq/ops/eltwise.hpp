// Quantized element-wise kernels, bit-exact with reference/eltwise.hpp:
//
//   mosaiq::add<mosaiq::u8> residual(a_quant, b_quant, out_quant, mosaiq::activation::relu6);  // load time
//   residual(a, b, out);          // out may be a or b (in place)
//   mosaiq::concat<mosaiq::i8>(std::span<const mosaiq::reference::concat_input<mosaiq::i8>>(parts), out, out_quant);
//
// add: TFLite's integer ADD pipeline, out = clamp(F(S1[a] + S2[b]) + zp), where S_i[q] = the scaled input
// MultiplyByQuantizedMultiplierSmallerThanOne((q + offset_i) << 20, m_i, s_i) depends on one byte only and F is the
// output multiplier step. F is floor((s * M + beta) / 2^N) (N = 31 + output shift; single rounding adds beta =
// 2^(N-1); TFLite's two roundings fold into beta = 2^30 + 2^(N-1) for s >= 0 and that minus 2^31 below 0). So at
// load (add's constructor) each input gets one 256-entry int32 table:
//   S1[a] * M + beta = h1 * 2^N + l1,  S2[b] * M = h2 * 2^N + l2,  l in [0, 2^N)
//   F = h1 + h2 + [l1 + l2 >= 2^N] = h1 + h2 + [r1 > r2]
// with r1 = #{l1 >= 2^N - l2[b']} and r2 = #{2^N - l2[b'] < 2^N - l2[b]} over the 256 b' (ranks: the comparison
// of 62-bit fractions becomes one of bytes), stored as first[a] = (h1 + zp) * 256 + r1 and second[b] = h2 * 256 +
// 255 - r2, so out = clamp((first[a] + second[b]) >> 8) (levels clamped to +-16383 so the sum fits int16). The
// constructor then evaluates that formula for all 65,536 (a, b) pairs against the reference pipeline and keeps
// the tables only when every output matches (trying TFLite's second beta when ties below zero defeat the first);
// otherwise, and where no table kernel exists (armv7), add runs the pipeline as written: blocks of 16 elements
// widened to int32 (ops/detail/lanes.hpp), three multiplier steps (simd::<isa>::multiply_by_quantized_multiplier).
// The table kernels: AVX-512 VBMI looks up byte planes of the tables (rank, level low, level high) with vpermi2b,
// 64 elements per step, adds the levels as 16-bit words and packs with saturation; AVX-512 without VBMI and AVX2
// gather the int32 entries (16 / 8 elements per step); aarch64 looks up the byte planes with tbl/tbx. Dense views
// run as one flat array; strided views pixel by pixel; out may be a or b. Building the tables costs about 0.2 ms.
//
// concat: an input in the output's quantization is copied (memcpy per pixel, one memcpy when input and output are
// the same dense tensor, nothing when the input already is its destination slice); any other input is rescaled with
// the reference's float formula q * scale + bias, rounded half away from zero (trunc plus an exact fraction test),
// plus the output zero point, saturated. Without an ISA (scalar builds) both call the reference.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/lanes.hpp"
#include "mosaiq/reference/eltwise.hpp"

namespace mosaiq {

namespace detail::eltwise {

#if defined(MOSAIQ_LANES)
/// The add_params decoded into broadcast registers once per call.
template <rounding R>
struct add_regs {
  lanes::reg offset1, offset2, output_offset, clamp_min, clamp_max;
  lanes::scale_regs input1, input2, output;

  explicit add_regs(const reference::add_params& p) noexcept
      : offset1(lanes::isa::set1(p.input1_offset)),
        offset2(lanes::isa::set1(p.input2_offset)),
        output_offset(lanes::isa::set1(p.output_offset)),
        clamp_min(lanes::isa::set1(p.clamp.min)),
        clamp_max(lanes::isa::set1(p.clamp.max)),
        input1(lanes::scale_regs::of(prepare_scale<R>(p.input1_multiplier))),
        input2(lanes::scale_regs::of(prepare_scale<R>(p.input2_multiplier))),
        output(lanes::scale_regs::of(prepare_scale<R>(p.output_multiplier))) {}
};

/// 16 elements of reference::detail::add_element.
template <rounding R, quantized_element T>
[[gnu::always_inline]] inline void add_block(const T* a, const T* b, T* out, const add_regs<R>& k) noexcept {
  using isa = lanes::isa;
  lanes::reg va[isa::regs], vb[isa::regs];
  isa::widen(a, va);
  isa::widen(b, vb);
  for (int j = 0; j < isa::regs; ++j) {
    const lanes::reg shifted1 = isa::shift_left(isa::add(va[j], k.offset1), reference::add_params::left_shift);
    const lanes::reg shifted2 = isa::shift_left(isa::add(vb[j], k.offset2), reference::add_params::left_shift);
    const lanes::reg scaled1 =
        isa::template multiply<R>(shifted1, k.input1.multiplier, k.input1.left_shift, k.input1.right_shift);
    const lanes::reg scaled2 =
        isa::template multiply<R>(shifted2, k.input2.multiplier, k.input2.left_shift, k.input2.right_shift);
    const lanes::reg sum = isa::add(scaled1, scaled2);
    const lanes::reg raw =
        isa::add(isa::template multiply<R>(sum, k.output.multiplier, k.output.left_shift, k.output.right_shift),
                 k.output_offset);
    va[j] = isa::min(isa::max(raw, k.clamp_min), k.clamp_max);
  }
  isa::template narrow<T>(out, va);
}

template <rounding R, quantized_element T>
inline void add_span(const T* a, const T* b, T* out, std::size_t n, const add_regs<R>& k) noexcept {
  std::size_t i = 0;
  for (; i + lanes::block <= n; i += lanes::block) add_block<R, T>(a + i, b + i, out + i, k);
  if (i < n) {
    T ta[lanes::block] = {}, tb[lanes::block] = {}, to[lanes::block];
    std::memcpy(ta, a + i, (n - i) * sizeof(T));
    std::memcpy(tb, b + i, (n - i) * sizeof(T));
    add_block<R, T>(ta, tb, to, k);
    std::memcpy(out + i, to, (n - i) * sizeof(T));
  }
}

/// reference::detail::concat_rescale in broadcast registers.
struct rescale_regs {
  lanes::freg scale, bias;
  lanes::reg zero_point, lo, hi;
};

template <quantized_element T>
[[gnu::always_inline]] inline void rescale_block(const T* in, T* out, const rescale_regs& k) noexcept {
  using isa = lanes::isa;
  lanes::reg v[isa::regs];
  isa::widen(in, v);
  for (int j = 0; j < isa::regs; ++j) {
    // Two roundings, as the reference: the product, then the sum (no FMA; mosaiq builds with -ffp-contract=off).
    const lanes::freg product = isa::fmul(isa::to_float(v[j]), k.scale);
    const lanes::freg sum = isa::fadd(product, k.bias);
    const lanes::reg value = isa::add(lanes::round_half_away(sum), k.zero_point);
    v[j] = isa::min(isa::max(value, k.lo), k.hi);
  }
  isa::template narrow<T>(out, v);
}

template <quantized_element T>
inline void rescale_span(const T* in, T* out, std::size_t n, const rescale_regs& k) noexcept {
  std::size_t i = 0;
  for (; i + lanes::block <= n; i += lanes::block) rescale_block<T>(in + i, out + i, k);
  if (i < n) {
    T ti[lanes::block] = {}, to[lanes::block];
    std::memcpy(ti, in + i, (n - i) * sizeof(T));
    rescale_block<T>(ti, to, k);
    std::memcpy(out + i, to, (n - i) * sizeof(T));
  }
}
#endif

/// The per-input tables of add (see the file comment): out = clamp((first[a] + second[b]) >> 8, clamp). Entries are
/// indexed by the element's byte (its bit pattern, so i8 -1 is entry 255). `exact` is set only when the formula was
/// checked against the reference pipeline on all 65,536 (a, b) pairs; otherwise add runs the arithmetic pipeline.
struct add_tables {
  std::array<std::int32_t, 256> first{}, second{};
  /// The same entries as byte planes for the byte-shuffle kernels: rank1, level1 low, level1 high, rank2 (= 255 minus
  /// the low byte of second), level2 low, level2 high.
  std::array<std::array<std::uint8_t, 256>, 6> planes{};
  bool exact = false;
};

/// Largest |H| kept in a table entry: H1 + H2 + carry then fits int16 (the VBMI kernel adds 16-bit words).
inline constexpr std::int32_t max_table_level = 16383;

template <rounding R, quantized_element T>
add_tables make_add_tables(const reference::add_params& p) {
  add_tables tables;
  if (!p.valid) return tables;
  const reference::detail::add_scales scales = reference::detail::decode_add_scales<R>(p);
  const requant_scale out = scales.output;
  if (out.left_shift != 0) return tables;  // make_add_params guarantees shift <= 0; stay general anyway

  // The scaled inputs, exactly as reference::detail::add_element computes them.
  std::array<std::int32_t, 256> scaled1{}, scaled2{};
  for (int byte = 0; byte < 256; ++byte) {
    const auto q = static_cast<std::int32_t>(static_cast<T>(static_cast<std::uint8_t>(byte)));
    scaled1[static_cast<std::size_t>(byte)] = multiply_by_quantized_multiplier<R>(
        (p.input1_offset + q) * (1 << reference::add_params::left_shift), scales.input1);
    scaled2[static_cast<std::size_t>(byte)] = multiply_by_quantized_multiplier<R>(
        (p.input2_offset + q) * (1 << reference::add_params::left_shift), scales.input2);
  }
  // The output step as floor((s * M + beta) / 2^N): single rounding adds 2^(N-1); TFLite's two roundings fold into
  // one floor whose offset depends on the sign of s (beta_plus for s >= 0, beta_minus below), so try each.
  const std::int64_t multiplier = out.multiplier;
  int n = 0;
  std::int64_t betas[2] = {};
  int beta_count = 1;
  if constexpr (R == rounding::tflite_reference) {
    n = 31 + out.right_shift;
    betas[0] = std::int64_t{1} << 30;
    if (out.right_shift > 0) {
      betas[0] += std::int64_t{1} << (30 + out.right_shift);
      betas[1] = betas[0] - (std::int64_t{1} << 31);
      beta_count = 2;
    }
  } else {
    n = out.right_shift;
    betas[0] = std::int64_t{1} << (n - 1);
  }
  const std::int64_t unit = std::int64_t{1} << n;

  for (int candidate = 0; candidate < beta_count; ++candidate) {
    // s * M + beta = (scaled1 * M + beta) + scaled2 * M = (h1 + h2) 2^N + l1 + l2 with l1, l2 in [0, 2^N), so the
    // floor is h1 + h2 + [l1 + l2 >= 2^N] = h1 + h2 + [l1 >= g2] with g2 = 2^N - l2.
    std::array<std::int64_t, 256> l1{}, g2{}, sorted{};
    std::array<std::int32_t, 256> h1{}, h2{};
    for (std::size_t v = 0; v < 256; ++v) {
      const std::int64_t x1 = scaled1[v] * multiplier + betas[candidate];
      const std::int64_t x2 = scaled2[v] * multiplier;
      const std::int64_t f1 = x1 >> n, f2 = x2 >> n;  // floor
      h1[v] = static_cast<std::int32_t>(std::clamp<std::int64_t>(f1, -(1 << 24), 1 << 24));
      h2[v] = static_cast<std::int32_t>(std::clamp<std::int64_t>(f2, -(1 << 24), 1 << 24));
      l1[v] = x1 - f1 * unit;
      g2[v] = unit - (x2 - f2 * unit);
    }
    sorted = g2;
    std::sort(sorted.begin(), sorted.end());
    // Ranks turn the comparison into one of bytes: r1 = #{g2 <= l1}, r2 = #{g2 < g2[b]}; l1 >= g2[b] <=> r1 > r2.
    for (std::size_t v = 0; v < 256; ++v) {
      auto r1 = static_cast<std::int32_t>(std::upper_bound(sorted.begin(), sorted.end(), l1[v]) - sorted.begin());
      const auto r2 = static_cast<std::int32_t>(std::lower_bound(sorted.begin(), sorted.end(), g2[v]) - sorted.begin());
      std::int32_t level1 = h1[v];
      if (r1 == 256) {  // above every g2: the carry is always 1
        ++level1;
        r1 = 0;
      }
      level1 = std::clamp(level1 + p.output_offset, -max_table_level, max_table_level);
      const std::int32_t level2 = std::clamp(h2[v], -max_table_level, max_table_level);
      // (first + second) >> 8 = level1 + level2 + [r1 + 255 - r2 >= 256] = level1 + level2 + [r1 > r2].
      tables.first[v] = level1 * 256 + r1;
      tables.second[v] = level2 * 256 + 255 - r2;
    }
    // The proof: the formula against the reference's output step for every (a, b) pair.
    bool exact = true;
    for (std::size_t a = 0; a < 256 && exact; ++a)
      for (std::size_t b = 0; b < 256; ++b) {
        const std::int32_t expected =
            std::clamp(multiply_by_quantized_multiplier<R>(scaled1[a] + scaled2[b], out) + p.output_offset, p.clamp.min,
                       p.clamp.max);
        if (std::clamp((tables.first[a] + tables.second[b]) >> 8, p.clamp.min, p.clamp.max) != expected) {
          exact = false;
          break;
        }
      }
    if (exact) {
      for (std::size_t v = 0; v < 256; ++v) {
        const auto first = static_cast<std::uint32_t>(tables.first[v]);
        const auto second = static_cast<std::uint32_t>(tables.second[v]);
        tables.planes[0][v] = static_cast<std::uint8_t>(first);
        tables.planes[1][v] = static_cast<std::uint8_t>(first >> 8);
        tables.planes[2][v] = static_cast<std::uint8_t>(first >> 16);
        tables.planes[3][v] = static_cast<std::uint8_t>(255 - (second & 255));
        tables.planes[4][v] = static_cast<std::uint8_t>(second >> 8);
        tables.planes[5][v] = static_cast<std::uint8_t>(second >> 16);
      }
      tables.exact = true;
      return tables;
    }
  }
  return tables;
}

#if !defined(MOSAIQ_FORCE_SCALAR) && defined(__AVX512VBMI__) && defined(__AVX512BW__) && defined(MOSAIQ_LANES)
#define MOSAIQ_ADD_TABLES 1
/// The table add on 64 elements per step: each byte plane is a 256-entry byte table in 4 zmm, looked up with two
/// vpermi2b (index bits 0..6) and a blend on bit 7; the levels are added as 16-bit words, the carry is a byte compare
/// of the ranks, and a saturating pack plus the activation clamp give the output.
struct add_table_regs {
  __m512i planes[6][4];
  __m512i lo, hi;

  add_table_regs(const add_tables& t, clamp_range clamp) noexcept
      : lo(_mm512_set1_epi8(static_cast<char>(clamp.min))), hi(_mm512_set1_epi8(static_cast<char>(clamp.max))) {
    for (int p = 0; p < 6; ++p)
      for (int q = 0; q < 4; ++q)
        planes[p][q] = _mm512_loadu_si512(t.planes[static_cast<std::size_t>(p)].data() + 64 * q);
  }
};

[[gnu::always_inline]] inline __m512i lookup_bytes(const __m512i* table, __m512i index, __mmask64 high) noexcept {
  return _mm512_mask_blend_epi8(high, _mm512_permutex2var_epi8(table[0], index, table[1]),
                                _mm512_permutex2var_epi8(table[2], index, table[3]));
}

template <quantized_element T>
[[gnu::always_inline]] inline void add_table_block(const T* a, const T* b, T* out, __mmask64 m,
                                                   const add_table_regs& k) noexcept {
  const __m512i ia = _mm512_maskz_loadu_epi8(m, a), ib = _mm512_maskz_loadu_epi8(m, b);
  const __mmask64 ha = _mm512_movepi8_mask(ia), hb = _mm512_movepi8_mask(ib);
  const __m512i carry = _mm512_movm_epi8(
      _mm512_cmpgt_epu8_mask(lookup_bytes(k.planes[0], ia, ha), lookup_bytes(k.planes[3], ib, hb)));  // -1 / 0
  const __m512i low1 = lookup_bytes(k.planes[1], ia, ha), high1 = lookup_bytes(k.planes[2], ia, ha);
  const __m512i low2 = lookup_bytes(k.planes[4], ib, hb), high2 = lookup_bytes(k.planes[5], ib, hb);
  const __m512i first =
      _mm512_sub_epi16(_mm512_add_epi16(_mm512_unpacklo_epi8(low1, high1), _mm512_unpacklo_epi8(low2, high2)),
                       _mm512_unpacklo_epi8(carry, carry));
  const __m512i second =
      _mm512_sub_epi16(_mm512_add_epi16(_mm512_unpackhi_epi8(low1, high1), _mm512_unpackhi_epi8(low2, high2)),
                       _mm512_unpackhi_epi8(carry, carry));
  __m512i r;
  if constexpr (element_traits<T>::is_signed)
    r = _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(first, second), k.lo), k.hi);
  else
    r = _mm512_min_epu8(_mm512_max_epu8(_mm512_packus_epi16(first, second), k.lo), k.hi);
  _mm512_mask_storeu_epi8(out, m, r);
}

template <quantized_element T>
inline void add_table_span(const T* a, const T* b, T* out, std::size_t n, const add_table_regs& k) noexcept {
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) add_table_block<T>(a + i, b + i, out + i, ~__mmask64{0}, k);
  if (i < n) add_table_block<T>(a + i, b + i, out + i, (std::uint64_t{1} << (n - i)) - 1, k);
}
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(MOSAIQ_LANES) && defined(__AVX512BW__)
#define MOSAIQ_ADD_TABLES 1
/// The table add on 16 elements per step with two dword gathers.
struct add_table_regs {
  const std::int32_t* first;
  const std::int32_t* second;
  __m512i lo, hi;

  add_table_regs(const add_tables& t, clamp_range clamp) noexcept
      : first(t.first.data()),
        second(t.second.data()),
        lo(_mm512_set1_epi32(clamp.min)),
        hi(_mm512_set1_epi32(clamp.max)) {}
};

template <quantized_element T>
[[gnu::always_inline]] inline void add_table_block(const T* a, const T* b, T* out, __mmask16 m,
                                                   const add_table_regs& k) noexcept {
  const __m512i ia = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, a));
  const __m512i ib = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, b));
  const __m512i sum = _mm512_add_epi32(_mm512_i32gather_epi32(ia, k.first, 4), _mm512_i32gather_epi32(ib, k.second, 4));
  const __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(sum, 8), k.lo), k.hi);
  _mm512_mask_cvtepi32_storeu_epi8(out, m, r);
}

template <quantized_element T>
inline void add_table_span(const T* a, const T* b, T* out, std::size_t n, const add_table_regs& k) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) add_table_block<T>(a + i, b + i, out + i, __mmask16{0xffff}, k);
  if (i < n) add_table_block<T>(a + i, b + i, out + i, static_cast<__mmask16>((1u << (n - i)) - 1), k);
}
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(MOSAIQ_LANES) && defined(__AVX2__)
#define MOSAIQ_ADD_TABLES 1
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
#elif !defined(MOSAIQ_FORCE_SCALAR) && defined(MOSAIQ_LANES) && defined(__aarch64__)
#define MOSAIQ_ADD_TABLES 1
/// The table add on 16 elements per step: each byte plane is looked up with one tbl and three tbx over 64-byte
/// quarters, the levels are added as 16-bit words, the carry is a byte compare of the ranks, then a saturating
/// narrow and the activation clamp. armv7 (64-bit tbl only) keeps the arithmetic pipeline.
struct add_table_regs {
  const add_tables* tables;
  int8x16_t lo, hi;  // the clamp, as bytes of T (unsigned T compared on the same bits reinterpreted)

  add_table_regs(const add_tables& t, clamp_range clamp) noexcept
      : tables(&t),
        lo(vdupq_n_s8(static_cast<std::int8_t>(clamp.min))),
        hi(vdupq_n_s8(static_cast<std::int8_t>(clamp.max))) {}
};

[[gnu::always_inline]] inline uint8x16_t lookup_bytes(const std::array<std::uint8_t, 256>& plane,
                                                      const uint8x16_t (&index)[4]) noexcept {
  uint8x16_t r = vqtbl4q_u8(vld1q_u8_x4(plane.data()), index[0]);
  r = vqtbx4q_u8(r, vld1q_u8_x4(plane.data() + 64), index[1]);
  r = vqtbx4q_u8(r, vld1q_u8_x4(plane.data() + 128), index[2]);
  return vqtbx4q_u8(r, vld1q_u8_x4(plane.data() + 192), index[3]);
}

template <quantized_element T>
[[gnu::always_inline]] inline void add_table_block(const T* a, const T* b, T* out, const add_table_regs& k) noexcept {
  const auto& planes = k.tables->planes;
  const uint8x16_t ia = vld1q_u8(reinterpret_cast<const std::uint8_t*>(a));
  const uint8x16_t ib = vld1q_u8(reinterpret_cast<const std::uint8_t*>(b));
  const uint8x16_t ja[4] = {ia, vsubq_u8(ia, vdupq_n_u8(64)), vsubq_u8(ia, vdupq_n_u8(128)),
                            vsubq_u8(ia, vdupq_n_u8(192))};
  const uint8x16_t jb[4] = {ib, vsubq_u8(ib, vdupq_n_u8(64)), vsubq_u8(ib, vdupq_n_u8(128)),
                            vsubq_u8(ib, vdupq_n_u8(192))};
  const uint8x16_t carry = vcgtq_u8(lookup_bytes(planes[0], ja), lookup_bytes(planes[3], jb));  // 0xff / 0
  const uint8x16_t low1 = lookup_bytes(planes[1], ja), high1 = lookup_bytes(planes[2], ja);
  const uint8x16_t low2 = lookup_bytes(planes[4], jb), high2 = lookup_bytes(planes[5], jb);
  const int16x8_t first =
      vsubq_s16(vaddq_s16(vreinterpretq_s16_u8(vzip1q_u8(low1, high1)), vreinterpretq_s16_u8(vzip1q_u8(low2, high2))),
                vreinterpretq_s16_u8(vzip1q_u8(carry, carry)));
  const int16x8_t second =
      vsubq_s16(vaddq_s16(vreinterpretq_s16_u8(vzip2q_u8(low1, high1)), vreinterpretq_s16_u8(vzip2q_u8(low2, high2))),
                vreinterpretq_s16_u8(vzip2q_u8(carry, carry)));
  if constexpr (element_traits<T>::is_signed) {
    const int8x16_t r = vcombine_s8(vqmovn_s16(first), vqmovn_s16(second));
    vst1q_s8(reinterpret_cast<std::int8_t*>(out), vminq_s8(vmaxq_s8(r, k.lo), k.hi));
  } else {
    const uint8x16_t r = vcombine_u8(vqmovun_s16(first), vqmovun_s16(second));
    vst1q_u8(reinterpret_cast<std::uint8_t*>(out),
             vminq_u8(vmaxq_u8(r, vreinterpretq_u8_s8(k.lo)), vreinterpretq_u8_s8(k.hi)));
  }
}

template <quantized_element T>
inline void add_table_span(const T* a, const T* b, T* out, std::size_t n, const add_table_regs& k) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) add_table_block<T>(a + i, b + i, out + i, k);
  if (i < n) {
    T ta[16] = {}, tb[16] = {}, to[16];
    std::memcpy(ta, a + i, (n - i) * sizeof(T));
    std::memcpy(tb, b + i, (n - i) * sizeof(T));
    add_table_block<T>(ta, tb, to, k);
    std::memcpy(out + i, to, (n - i) * sizeof(T));
  }
}
#endif

/// Whether a and b are the same elements laid out the same way.
template <class A, class B>
bool same_view(const A& a, const B& b) noexcept {
  return static_cast<const void*>(a.data()) == static_cast<const void*>(b.data()) && a.dims() == b.dims() &&
         a.batch() == b.batch() && a.pixel_stride() == b.pixel_stride();
}

}  // namespace detail::eltwise

/// Quantized residual add with TFLite's ADD requantization, equal bit for bit to reference::add<R, T>. Built once
/// (load time) from the three quantizations and the fused activation; operator() then only computes. Same shape
/// rules as the reference (no broadcasting): a, b and out have the same extents and batch, any pixel strides, and
/// out may be exactly a or b (every block is read before it is written).
template <quantized_element T, rounding R = rounding::tflite_reference>
class add {
 public:
  static constexpr rounding round = R;

  add() = default;
  /// Reports errc::invalid_argument (through make_add_params) and builds an object that refuses to run when the
  /// quantizations are unusable.
  add(quant_params a, quant_params b, quant_params out, activation act = activation::none)
      : add(reference::make_add_params<T>(a, b, out, act)) {}
  explicit add(const reference::add_params& params) : params_(params) {
#if defined(MOSAIQ_ADD_TABLES)
    auto tables = std::make_shared<detail::eltwise::add_tables>(detail::eltwise::make_add_tables<R, T>(params_));
    if (tables->exact) tables_ = std::move(tables);
#endif
  }

  bool valid() const noexcept { return params_.valid; }
  /// Whether operator() runs the per-input tables (checked exact at construction) rather than the arithmetic pipeline.
  bool uses_tables() const noexcept { return tables_ != nullptr; }
  const reference::add_params& params() const noexcept { return params_; }

  void operator()(tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> out) const {
    if (!check_view(a, "add: input a") || !check_view(b, "add: input b") || !check_view(out, "add: output")) return;
    if (!require(reference::detail::same_extents(a, out) && reference::detail::same_extents(b, out),
                 errc::shape_mismatch, "add: a, b and out must have the same shape and batch (no broadcasting)"))
      return;
    if (!require(params_.valid, errc::invalid_argument, "add: params were not built by a successful make_add_params"))
      return;
#if defined(MOSAIQ_LANES)
    // Dense views run as one flat array, strided ones pixel by pixel.
    const auto run = [&](auto span) {
      if (a.is_dense() && b.is_dense() && out.is_dense()) {
        span(a.data(), b.data(), out.data(), out.dims().elements() * static_cast<std::size_t>(out.batch()));
        return;
      }
      const auto channels = static_cast<std::size_t>(out.channels());
      for (int n = 0; n < out.batch(); ++n)
        for (int y = 0; y < out.height(); ++y)
          for (int x = 0; x < out.width(); ++x) span(a.pixel(n, y, x), b.pixel(n, y, x), out.pixel(n, y, x), channels);
    };
#if defined(MOSAIQ_ADD_TABLES)
    if (tables_) {
      const detail::eltwise::add_table_regs k(*tables_, params_.clamp);
      run([&k](const T* pa, const T* pb, T* po, std::size_t count) {
        detail::eltwise::add_table_span<T>(pa, pb, po, count, k);
      });
      return;
    }
#endif
    const detail::eltwise::add_regs<R> k(params_);
    run([&k](const T* pa, const T* pb, T* po, std::size_t count) {
      detail::eltwise::add_span<R, T>(pa, pb, po, count, k);
    });
#else
    reference::add<R, T>(a, b, out, params_);
#endif
  }

 private:
  reference::add_params params_{};
  std::shared_ptr<const detail::eltwise::add_tables> tables_;  ///< null: run the arithmetic pipeline
};

namespace detail::eltwise {

/// A function object rather than a function template: see ops/pool.hpp (argument-dependent lookup).
template <quantized_element T>
struct concat_fn {
  void operator()(std::span<const reference::concat_input<T>> inputs, tensor_view<T> out,
                  quant_params out_quant) const {
    if (!check_view(out, "concat: output")) return;
    int channel_total = 0;
    bool needs_rescale = false;
    for (const reference::concat_input<T>& input : inputs) {
      if (!check_view(input.view, "concat: input")) return;
      if (!require(input.view.height() == out.height() && input.view.width() == out.width() &&
                       input.view.batch() == out.batch(),
                   errc::shape_mismatch, "concat: every input must have the output's height, width and batch"))
        return;
      channel_total += input.view.channels();
      needs_rescale = needs_rescale || !(input.quant == out_quant);
      if (!require(
              input.quant == out_quant || (reference::detail::is_usable_scale(input.quant.scale) &&
                                           reference::detail::is_representable_zero_point<T>(input.quant.zero_point)),
              errc::invalid_argument, "concat: an input's scale or zero point is unusable"))
        return;
    }
    if (!require(channel_total == out.channels(), errc::shape_mismatch,
                 "concat: the inputs' channel counts must add up to the output's"))
      return;
    if (!require(!needs_rescale || (reference::detail::is_usable_scale(out_quant.scale) &&
                                    reference::detail::is_representable_zero_point<T>(out_quant.zero_point) &&
                                    reference::detail::rescales_are_finite<T>(inputs, out_quant)),
                 errc::invalid_argument,
                 "concat: the output's scale or zero point is unusable, or a rescale overflows"))
      return;

    int first_channel = 0;
    for (const reference::concat_input<T>& input : inputs) {
      const tensor_view<T> slice = out.channel_slice(first_channel, input.view.channels());
      first_channel += input.view.channels();
      if (slice.dims().elements() == 0) continue;
      const auto channels = static_cast<std::size_t>(slice.channels());
      const bool flat = input.view.is_dense() && slice.is_dense();
      const std::size_t flat_count = slice.dims().elements() * static_cast<std::size_t>(slice.batch());
      if (input.quant == out_quant) {
        if (same_view(input.view, slice)) continue;  // already in place
        if (flat) {
          std::memcpy(slice.data(), input.view.data(), flat_count * sizeof(T));
          continue;
        }
        for (int n = 0; n < slice.batch(); ++n)
          for (int y = 0; y < slice.height(); ++y)
            for (int x = 0; x < slice.width(); ++x)
              std::memcpy(slice.pixel(n, y, x), input.view.pixel(n, y, x), channels * sizeof(T));
        continue;
      }
      const reference::detail::concat_rescale rescale(input.quant, out_quant);
#if defined(MOSAIQ_LANES)
      if (std::isfinite(rescale.scale) && std::isfinite(rescale.bias)) {
        using isa = lanes::isa;
        const rescale_regs k{isa::fset1(rescale.scale), isa::fset1(rescale.bias), isa::set1(rescale.output_zero_point),
                             isa::set1(element_traits<T>::min), isa::set1(element_traits<T>::max)};
        if (flat) {
          rescale_span<T>(input.view.data(), slice.data(), flat_count, k);
          continue;
        }
        for (int n = 0; n < slice.batch(); ++n)
          for (int y = 0; y < slice.height(); ++y)
            for (int x = 0; x < slice.width(); ++x)
              rescale_span<T>(input.view.pixel(n, y, x), slice.pixel(n, y, x), channels, k);
        continue;
      }
#endif
      // Scalar builds (concat refused rescales that overflow above): the reference's element loop.
      for (int n = 0; n < slice.batch(); ++n)
        for (int y = 0; y < slice.height(); ++y)
          for (int x = 0; x < slice.width(); ++x) {
            const T* source = input.view.pixel(n, y, x);
            T* destination = slice.pixel(n, y, x);
            for (std::size_t c = 0; c < channels; ++c) destination[c] = rescale(source[c]);
          }
    }
  }
};

}  // namespace detail::eltwise

/// Channel concat, equal bit for bit to reference::concat<T> (same contract: inputs in order fill consecutive
/// channel ranges of out; out may be a channel slice of a wider tensor; an input may be exactly its destination
/// slice, other overlaps are not allowed). On misuse nothing is written.
template <quantized_element T>
inline constexpr detail::eltwise::concat_fn<T> concat{};

}  // namespace mosaiq
