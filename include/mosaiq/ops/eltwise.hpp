// Quantized element-wise kernels (add, mul, concat), bit-exact with reference/eltwise.hpp:
//
//   mosaiq::add<mosaiq::u8> residual(a_quant, b_quant, out_quant, mosaiq::activation::relu6);  // load time
//   residual(a, b, out);          // out may be a or b (in place)
//   mosaiq::concat<mosaiq::i8>(std::span<const mosaiq::reference::concat_input<mosaiq::i8>>(parts), out, out_quant);
//   mosaiq::mul<mosaiq::i8> excite(map_quant, gate_quant, out_quant);   // load time
//   excite(map, gate, out);       // gate 1x1xC over map HxWxC (TFLite broadcasting), or any broadcast, or equal shapes
//
// Broadcasting (add and mul, run_broadcast): equal dense shapes run as one flat array; a single element against a full
// tensor is one held term; otherwise pixel by pixel, each input's channel run read element-wise, held as precomputed
// int32 terms (an input of width 1 against one that moves along x: a per-channel vector, a column; recomputed only when
// its pixel changes, 256 channels at a time), or held as one term (an input with one channel). A term is what one
// element contributes before the other input is read: its scaled value (add pipeline), its table entry (add tables,
// gathered on AVX2/AVX-512) or its offset value (mul).
//
// mul: TFLite's MUL, out = clamp(zp + MultiplyByQuantizedMultiplier((a - zp_a)(b - zp_b), M)); the products are exact
// in int32 lanes. AVX2 folds the multiplier's two roundings into one floor (mul_folded_regs); AVX-512 and NEON run
// the general lane multiply.
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
// widened to int32 (simd/lanes.hpp), three multiplier steps (simd::<isa>::multiply_by_quantized_multiplier).
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
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/lanes.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace detail::eltwise {

#if MOSAIQ_TARGET_SIMD
/// The add_params decoded into broadcast registers once per call.
template <rounding R>
struct add_regs {
  lanes::reg offset1, offset2, output_offset, clamp_min, clamp_max;
  lanes::scale_regs input1, input2, output;

  explicit add_regs(const reference::add_params& p) noexcept
      : offset1(lanes::reg(p.input1_offset)),
        offset2(lanes::reg(p.input2_offset)),
        output_offset(lanes::reg(p.output_offset)),
        clamp_min(lanes::reg(p.clamp.min)),
        clamp_max(lanes::reg(p.clamp.max)),
        input1(lanes::scale_regs::of(prepare_scale<R>(p.input1_multiplier))),
        input2(lanes::scale_regs::of(prepare_scale<R>(p.input2_multiplier))),
        output(lanes::scale_regs::of(prepare_scale<R>(p.output_multiplier))) {}
};

/// Which input of a binary op an operand is.
enum class input { a, b };

/// One input's side of the ADD pipeline: MultiplyByQuantizedMultiplierSmallerThanOne((v + offset) << 20, m).
template <rounding R>
[[gnu::always_inline]] inline lanes::reg add_scaled_input(lanes::reg v, lanes::reg offset,
                                                          const lanes::scale_regs& s) noexcept {
  const lanes::reg shifted = (v + offset) << reference::add_params::left_shift;
  return lanes::multiply<R>(shifted, s.multiplier, s.left_shift, s.right_shift);
}

/// The rest of the ADD pipeline on a sum of scaled inputs: the output multiplier, the zero point, the clamp.
template <rounding R>
[[gnu::always_inline]] inline lanes::reg add_output(lanes::reg sum, const add_regs<R>& k) noexcept {
  const lanes::reg raw =
      lanes::multiply<R>(sum, k.output.multiplier, k.output.left_shift, k.output.right_shift) + k.output_offset;
  return xsimd::min(xsimd::max(raw, k.clamp_min), k.clamp_max);
}

/// 16 elements of reference::detail::add_element.
template <rounding R, quantized_element T>
[[gnu::always_inline]] inline void add_block(const T* a, const T* b, T* out, const add_regs<R>& k) noexcept {
  lanes::reg va[lanes::regs], vb[lanes::regs];
  lanes::widen(a, va);
  lanes::widen(b, vb);
  for (int j = 0; j < lanes::regs; ++j)
    va[j] = add_output<R>(
        add_scaled_input<R>(va[j], k.offset1, k.input1) + add_scaled_input<R>(vb[j], k.offset2, k.input2), k);
  lanes::narrow<T>(out, va);
}

/// Runs block(v, w, terms, out) over n elements in blocks of lanes::block; the tail goes through zero-padded copies.
/// w (a run of the other input) and terms (one precomputed int32 per element) are read only when ReadsW / ReadsTerms.
template <bool ReadsW, bool ReadsTerms, quantized_element T, class Block>
[[gnu::always_inline]] inline void run_blocks(const T* v, const T* w, const std::int32_t* terms, T* out, std::size_t n,
                                              Block block) noexcept {
  std::size_t i = 0;
  for (; i + lanes::block <= n; i += lanes::block)
    block(v + i, ReadsW ? w + i : w, ReadsTerms ? terms + i : terms, out + i);
  if (i == n) return;
  const std::size_t rest = n - i;
  T tv[lanes::block] = {}, tw[lanes::block] = {}, to[lanes::block];
  std::int32_t tt[lanes::block] = {};
  std::memcpy(tv, v + i, rest * sizeof(T));
  if constexpr (ReadsW) std::memcpy(tw, w + i, rest * sizeof(T));
  if constexpr (ReadsTerms) std::memcpy(tt, terms + i, rest * sizeof(std::int32_t));
  block(tv, tw, tt, to);
  std::memcpy(out + i, to, rest * sizeof(T));
}

template <rounding R, quantized_element T>
inline void add_span(const T* a, const T* b, T* out, std::size_t n, const add_regs<R>& k) noexcept {
  run_blocks<true, false>(a, b, nullptr, out, n, [&k](const T* va, const T* vb, const std::int32_t*, T* vo) {
    add_block<R, T>(va, vb, vo, k);
  });
}

/// Runs finish(x, t, out) over blocks of a run v widened to int32 (x) beside the other input's terms (t): one per
/// element, or one term in every lane (Held).
template <bool Held, quantized_element T, class Finish>
[[gnu::always_inline]] inline void run_terms(const T* v, const std::int32_t* terms, std::int32_t term, T* out,
                                             std::size_t n, Finish finish) noexcept {
  const lanes::reg held(term);
  run_blocks<false, !Held>(v, static_cast<const T*>(nullptr), terms, out, n,
                           [&](const T* bv, const T*, const std::int32_t* bt, T* bo) {
                             lanes::reg x[lanes::regs], t[lanes::regs];
                             lanes::widen(bv, x);
                             if constexpr (Held)
                               for (int j = 0; j < lanes::regs; ++j) t[j] = held;
                             else
                               lanes::load(bt, t);
                             finish(x, t, bo);
                           });
}

/// The ADD pipeline with one input held: a run of input `side` plus the other input's scaled values, precomputed
/// (terms, one per element) or one for the whole run (Held).
template <bool Held, rounding R, quantized_element T>
inline void add_terms_span(input side, const T* v, const std::int32_t* terms, std::int32_t term, T* out, std::size_t n,
                           const add_regs<R>& k) noexcept {
  const lanes::reg offset = side == input::a ? k.offset1 : k.offset2;
  const lanes::scale_regs& scale = side == input::a ? k.input1 : k.input2;
  run_terms<Held>(v, terms, term, out, n, [&](lanes::reg* x, const lanes::reg* t, T* bo) {
    for (int j = 0; j < lanes::regs; ++j) x[j] = add_output<R>(add_scaled_input<R>(x[j], offset, scale) + t[j], k);
    lanes::narrow<T>(bo, x);
  });
}

/// The mul_params decoded into broadcast registers once per call.
template <rounding R>
struct mul_regs {
  lanes::reg offset1, offset2, output_offset, clamp_min, clamp_max;
  lanes::scale_regs output;

  explicit mul_regs(const reference::mul_params& p) noexcept
      : offset1(lanes::reg(p.input1_offset)),
        offset2(lanes::reg(p.input2_offset)),
        output_offset(lanes::reg(p.output_offset)),
        clamp_min(lanes::reg(p.clamp.min)),
        clamp_max(lanes::reg(p.clamp.max)),
        output(lanes::scale_regs::of(prepare_scale<R>(p.output_multiplier))) {}

  /// A product of offset inputs to its clamped output value, as reference::detail::mul_element (requantize: the
  /// zero-point add wraps as the scalar one does).
  [[gnu::always_inline]] lanes::reg operator()(lanes::reg product) const noexcept {
    const lanes::reg raw =
        lanes::multiply<R>(product, output.multiplier, output.left_shift, output.right_shift) + output_offset;
    return xsimd::min(xsimd::max(raw, clamp_min), clamp_max);
  }
};

#if MOSAIQ_TARGET_AVX2 && !MOSAIQ_TARGET_AVX512
#define MOSAIQ_MUL_FOLDED 1
/// MUL's requantization with its two roundings folded into one floor (AVX2, exact). With P = (product << left) * M:
/// SaturatingRoundingDoublingHighMul is Q = floor((P + 2^30) / 2^31) (M is never INT32_MIN, so it never saturates),
/// and RoundingDivideByPOT(Q, e) = floor((Q + 2^(e-1) - [Q < 0]) / 2^e) = floor(Q' / 2^e) with
/// Q' = floor((P + 2^30 + 2^(30+e)) / 2^31) - [Q < 0]. Q < 0 exactly when P < -2^30; the correction is applied for
/// every negative product instead (M is 0 or in [2^30, 2^31)), which differs only where P + 2^30 is in [0, 2^30):
/// there Q' is 2^(e-1) or 2^(e-1) - 1, both 0 after the shift by e >= 1. Single rounding with shift <= 0 is floor((P +
/// 2^(n-1)) / 2^n), n = 31 - shift >= 31: the same steps without the correction. Bits 31..62 of the 64-bit sums hold Q'
/// (|P| < 2^62), so one pair of 32x32->64 multiplies and three shifts replace the general lane multiply.
struct mul_folded_regs {
  __m256i multiplier, beta, threshold, output_offset, clamp_min, clamp_max;
  __m128i left_shift, right_shift;
  bool usable = false;

  template <rounding R>
  static mul_folded_regs of(const reference::mul_params& p) noexcept {
    const quantized_multiplier q = p.output_multiplier;
    mul_folded_regs k{};
    const int left = q.shift > 0 ? q.shift : 0, right = q.shift < 0 ? -q.shift : 0;
    std::int64_t beta = std::int64_t{1} << 30;
    std::int32_t threshold = INT32_MIN;  // no lane is below it: no correction
    if constexpr (R == rounding::tflite_reference) {
      if (right > 0) {
        beta += std::int64_t{1} << (30 + right);
        threshold = 0;
      }
    } else {
      if (q.shift > 0) return k;  // n < 31: the general lane multiply
      beta = std::int64_t{1} << (30 + right);
    }
    k.multiplier = _mm256_set1_epi32(q.multiplier);
    k.beta = _mm256_set1_epi64x(beta);
    k.threshold = _mm256_set1_epi32(threshold);
    k.output_offset = _mm256_set1_epi32(p.output_offset);
    k.clamp_min = _mm256_set1_epi32(p.clamp.min);
    k.clamp_max = _mm256_set1_epi32(p.clamp.max);
    k.left_shift = _mm_cvtsi32_si128(left);
    k.right_shift = _mm_cvtsi32_si128(right);
    k.usable = true;
    return k;
  }

  [[gnu::always_inline]] __m256i operator()(__m256i product) const noexcept {
    const __m256i shifted = _mm256_sll_epi32(product, left_shift);
    const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(shifted, multiplier), beta);
    const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(shifted, 32), multiplier), beta);
    __m256i q = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0b10101010);
    q = _mm256_add_epi32(q, _mm256_cmpgt_epi32(threshold, shifted));  // - [Q < 0]
    q = _mm256_add_epi32(_mm256_sra_epi32(q, right_shift), output_offset);
    return _mm256_min_epi32(_mm256_max_epi32(q, clamp_min), clamp_max);
  }
};
#endif

/// Element-wise MUL: output(offset a * offset b) on blocks of 16.
template <quantized_element T, class Output>
inline void mul_span(const T* a, const T* b, T* out, std::size_t n, lanes::reg offset1, lanes::reg offset2,
                     const Output& output) noexcept {
  run_blocks<true, false>(a, b, nullptr, out, n, [&](const T* va, const T* vb, const std::int32_t*, T* vo) {
    lanes::reg x[lanes::regs], y[lanes::regs];
    lanes::widen(va, x);
    lanes::widen(vb, y);
    for (int j = 0; j < lanes::regs; ++j) x[j] = output((x[j] + offset1) * (y[j] + offset2));
    lanes::narrow<T>(vo, x);
  });
}

/// MUL with one input held: a run (offset by `offset`) times the other input's offset values (terms, or one term:
/// Held).
template <bool Held, quantized_element T, class Output>
inline void mul_terms_span(const T* v, const std::int32_t* terms, std::int32_t term, T* out, std::size_t n,
                           lanes::reg offset, const Output& output) noexcept {
  run_terms<Held>(v, terms, term, out, n, [&](lanes::reg* x, const lanes::reg* t, T* bo) {
    for (int j = 0; j < lanes::regs; ++j) x[j] = output((x[j] + offset) * t[j]);
    lanes::narrow<T>(bo, x);
  });
}

/// reference::detail::concat_rescale in broadcast registers.
struct rescale_regs {
  lanes::freg scale, bias;
  lanes::reg zero_point, lo, hi;
};

template <quantized_element T>
[[gnu::always_inline]] inline void rescale_block(const T* in, T* out, const rescale_regs& k) noexcept {
  lanes::reg v[lanes::regs];
  lanes::widen(in, v);
  for (int j = 0; j < lanes::regs; ++j) {
    // Two roundings, as the reference: the product, then the sum (no FMA; mosaiq builds with -ffp-contract=off).
    const lanes::freg product = lanes::to_float(v[j]) * k.scale;
    const lanes::freg sum = product + k.bias;
    const lanes::reg value = lanes::round_half_away(sum) + k.zero_point;
    v[j] = xsimd::min(xsimd::max(value, k.lo), k.hi);
  }
  lanes::narrow<T>(out, v);
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

#if MOSAIQ_TARGET_AVX512_VBMI
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
#elif MOSAIQ_TARGET_AVX512
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
#elif MOSAIQ_TARGET_AVX2
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
#elif MOSAIQ_TARGET_NEON64
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

#if defined(MOSAIQ_ADD_TABLES) && MOSAIQ_TARGET_AVX512
#define MOSAIQ_ADD_TABLE_TERMS 1
/// Broadcast add on the tables: out = clamp((table[v] + term) >> 8) for a run of one input (table: its own table)
/// against the other input's entries, one per element (terms) or one for the run (Held); 16 elements per gather.
template <bool Held, quantized_element T>
inline void add_table_terms_span(const T* v, const std::int32_t* table, const std::int32_t* terms, std::int32_t term,
                                 T* out, std::size_t n, clamp_range clamp) noexcept {
  const __m512i lo = _mm512_set1_epi32(clamp.min), hi = _mm512_set1_epi32(clamp.max), held = _mm512_set1_epi32(term);
  for (std::size_t i = 0; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1);
    const __m512i index = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, v + i));
    const __m512i t = Held ? held : _mm512_maskz_loadu_epi32(m, terms + i);
    const __m512i sum = _mm512_add_epi32(_mm512_i32gather_epi32(index, table, 4), t);
    _mm512_mask_cvtepi32_storeu_epi8(out + i, m, _mm512_min_epi32(_mm512_max_epi32(_mm512_srai_epi32(sum, 8), lo), hi));
  }
}
#elif defined(MOSAIQ_ADD_TABLES) && MOSAIQ_TARGET_AVX2
#define MOSAIQ_ADD_TABLE_TERMS 1
/// Broadcast add on the tables (see the AVX-512 twin), 8 elements per gather, a scalar tail.
template <bool Held, quantized_element T>
inline void add_table_terms_span(const T* v, const std::int32_t* table, const std::int32_t* terms, std::int32_t term,
                                 T* out, std::size_t n, clamp_range clamp) noexcept {
  const __m256i lo = _mm256_set1_epi32(clamp.min), hi = _mm256_set1_epi32(clamp.max), held = _mm256_set1_epi32(term);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i index = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(v + i)));
    const __m256i t = Held ? held : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(terms + i));
    const __m256i sum = _mm256_add_epi32(_mm256_i32gather_epi32(table, index, 4), t);
    simd::avx2::store_low_bytes(out + i, _mm256_min_epi32(_mm256_max_epi32(_mm256_srai_epi32(sum, 8), lo), hi));
  }
  for (; i < n; ++i)
    out[i] = static_cast<T>(
        std::clamp((table[static_cast<std::uint8_t>(v[i])] + (Held ? term : terms[i])) >> 8, clamp.min, clamp.max));
}
#endif

/// Whether a and b are the same elements laid out the same way.
template <class A, class B>
bool same_view(const A& a, const B& b) noexcept {
  return static_cast<const void*>(a.data()) == static_cast<const void*>(b.data()) && a.dims() == b.dims() &&
         a.batch() == b.batch() && a.pixel_stride() == b.pixel_stride();
}

#if MOSAIQ_TARGET_SIMD
/// A binary op's kernels as run_broadcast uses them: element-wise runs of both inputs (pair), the int32 term an
/// element of one input contributes when it is held across a run of the other (term), and a run of one input against
/// one term per element (with_terms) or one term for the whole run (with_term).
template <class K, class T>
concept binary_kernels = requires(const K& k, input side, const T* v, const std::int32_t* terms, T* out) {
  k.pair(v, v, out, std::size_t{});
  { k.term(side, T{}) } -> std::same_as<std::int32_t>;
  k.with_terms(side, v, terms, out, std::size_t{});
  k.with_term(side, v, std::int32_t{}, out, std::size_t{});
};

/// The pixel of v that output pixel (n, y, x) reads under broadcasting.
template <class T>
const T* broadcast_pixel(const tensor_view<const T>& v, int n, int y, int x) noexcept {
  return v.pixel(v.batch() == 1 ? 0 : n, v.height() == 1 ? 0 : y, v.width() == 1 ? 0 : x);
}

template <class V>
bool is_single_element(const V& v) noexcept {
  return v.dims().elements() == 1 && v.batch() == 1;
}

/// A run of input `side` (view v, out's shape) against one held term: one flat run when both are dense.
template <quantized_element T, class K>
void run_held_scalar(input side, const tensor_view<const T>& v, std::int32_t term, const tensor_view<T>& out,
                     const K& k) {
  if (v.is_dense() && out.is_dense()) {
    k.with_term(side, v.data(), term, out.data(), out.dims().elements() * static_cast<std::size_t>(out.batch()));
    return;
  }
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x)
        k.with_term(side, v.pixel(n, y, x), term, out.pixel(n, y, x), static_cast<std::size_t>(out.channels()));
}

/// Both inputs have out's channel count but `held` is constant along x (width 1) where `run` is not (a per-channel
/// vector, a column): the held pixel's terms are computed once per chunk of channels and reused until it changes.
template <quantized_element T, class K>
void run_held_channels(input run_side, const tensor_view<const T>& run, const tensor_view<const T>& held,
                       const tensor_view<T>& out, const K& k) {
  constexpr int chunk = 256;
  std::int32_t terms[chunk];
  const input held_side = run_side == input::a ? input::b : input::a;
  for (int first = 0; first < out.channels(); first += chunk) {
    const int count = std::min(chunk, out.channels() - first);
    const T* cached = nullptr;
    for (int n = 0; n < out.batch(); ++n)
      for (int y = 0; y < out.height(); ++y) {
        const T* held_pixel = broadcast_pixel(held, n, y, 0) + first;
        if (held_pixel != cached) {
          for (int c = 0; c < count; ++c) terms[c] = k.term(held_side, held_pixel[c]);
          cached = held_pixel;
        }
        for (int x = 0; x < out.width(); ++x)
          k.with_terms(run_side, broadcast_pixel(run, n, y, x) + first, terms, out.pixel(n, y, x) + first,
                       static_cast<std::size_t>(count));
      }
  }
}

/// out = op(a, b) with TFLite broadcasting (shapes already checked), on the kernels k. Equal shapes run element-wise
/// (one flat run when dense); a single element against a full tensor is one held term; otherwise pixel by pixel, the
/// channel run of each input either read element-wise, held as terms (an input constant along x), or held as one
/// term (an input with one channel).
template <quantized_element T, class K>
requires binary_kernels<K, T>
void run_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b, const tensor_view<T>& out,
                   const K& k) {
  if (out.dims().elements() == 0) return;
  const bool a_full = reference::detail::same_extents(a, out), b_full = reference::detail::same_extents(b, out);
  const auto channels = static_cast<std::size_t>(out.channels());
  if (a_full && b_full && a.is_dense() && b.is_dense() && out.is_dense()) {
    k.pair(a.data(), b.data(), out.data(), out.dims().elements() * static_cast<std::size_t>(out.batch()));
    return;
  }
  if (a_full && is_single_element(b)) return run_held_scalar(input::a, a, k.term(input::b, *b.data()), out, k);
  if (b_full && is_single_element(a)) return run_held_scalar(input::b, b, k.term(input::a, *a.data()), out, k);
  const bool a_runs = a.channels() == out.channels(), b_runs = b.channels() == out.channels();
  if (a_runs && b_runs && a.width() != b.width())
    return a.width() == 1 ? run_held_channels(input::b, b, a, out, k) : run_held_channels(input::a, a, b, out, k);
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x) {
        const T* pa = broadcast_pixel(a, n, y, x);
        const T* pb = broadcast_pixel(b, n, y, x);
        T* po = out.pixel(n, y, x);
        if (a_runs && b_runs)
          k.pair(pa, pb, po, channels);
        else if (a_runs)
          k.with_term(input::a, pa, k.term(input::b, *pb), po, channels);
        else
          k.with_term(input::b, pb, k.term(input::a, *pa), po, channels);
      }
}

/// add's arithmetic pipeline as binary_kernels; a term is an input's scaled value (add_element's scaled_input).
template <rounding R, quantized_element T>
struct add_pipeline_kernels {
  const reference::add_params& params;
  reference::detail::add_scales scales;
  add_regs<R> regs;

  explicit add_pipeline_kernels(const reference::add_params& p)
      : params(p), scales(reference::detail::decode_add_scales<R>(p)), regs(p) {}

  void pair(const T* a, const T* b, T* out, std::size_t n) const { add_span<R, T>(a, b, out, n, regs); }
  std::int32_t term(input side, T v) const {
    const bool first = side == input::a;
    const std::int32_t offset = first ? params.input1_offset : params.input2_offset;
    return multiply_by_quantized_multiplier<R>(
        (offset + static_cast<std::int32_t>(v)) * (1 << reference::add_params::left_shift),
        first ? scales.input1 : scales.input2);
  }
  void with_terms(input side, const T* v, const std::int32_t* terms, T* out, std::size_t n) const {
    add_terms_span<false, R, T>(side, v, terms, 0, out, n, regs);
  }
  void with_term(input side, const T* v, std::int32_t term, T* out, std::size_t n) const {
    add_terms_span<true, R, T>(side, v, nullptr, term, out, n, regs);
  }
};

#if defined(MOSAIQ_ADD_TABLE_TERMS)
/// add's per-input tables as binary_kernels; a term is an input's table entry.
template <quantized_element T>
struct add_table_kernels {
  const add_tables& tables;
  add_table_regs regs;
  clamp_range clamp;

  add_table_kernels(const add_tables& t, clamp_range c) : tables(t), regs(t, c), clamp(c) {}

  const std::int32_t* table(input side) const { return side == input::a ? tables.first.data() : tables.second.data(); }
  void pair(const T* a, const T* b, T* out, std::size_t n) const { add_table_span<T>(a, b, out, n, regs); }
  std::int32_t term(input side, T v) const { return table(side)[static_cast<std::uint8_t>(v)]; }
  void with_terms(input side, const T* v, const std::int32_t* terms, T* out, std::size_t n) const {
    add_table_terms_span<false, T>(v, table(side), terms, 0, out, n, clamp);
  }
  void with_term(input side, const T* v, std::int32_t term, T* out, std::size_t n) const {
    add_table_terms_span<true, T>(v, table(side), nullptr, term, out, n, clamp);
  }
};
#endif

#if defined(MOSAIQ_ADD_TABLES) && !defined(MOSAIQ_ADD_TABLE_TERMS)
/// Tables without a gather (aarch64 tbl): element-wise runs on the tables, held inputs on the pipeline.
template <rounding R, quantized_element T>
struct add_mixed_kernels : add_pipeline_kernels<R, T> {
  add_table_regs table_regs;

  add_mixed_kernels(const reference::add_params& p, const add_tables& t)
      : add_pipeline_kernels<R, T>(p), table_regs(t, p.clamp) {}
  void pair(const T* a, const T* b, T* out, std::size_t n) const { add_table_span<T>(a, b, out, n, table_regs); }
};
#endif

/// mul's pipeline as binary_kernels; a term is an input's offset value. The output step is the folded one where it
/// applies (AVX2), else the general lane multiply.
template <rounding R, quantized_element T>
struct mul_kernels {
  const reference::mul_params& params;
  mul_regs<R> regs;
#if defined(MOSAIQ_MUL_FOLDED)
  mul_folded_regs folded;
#endif

  explicit mul_kernels(const reference::mul_params& p)
      : params(p),
        regs(p)
#if defined(MOSAIQ_MUL_FOLDED)
        ,
        folded(mul_folded_regs::of<R>(p))
#endif
  {
  }

  /// Calls f with the output step to use.
  template <class F>
  void with_output(F f) const {
#if defined(MOSAIQ_MUL_FOLDED)
    if (folded.usable) return f(folded);
#endif
    f(regs);
  }
  lanes::reg offset(input side) const { return side == input::a ? regs.offset1 : regs.offset2; }

  void pair(const T* a, const T* b, T* out, std::size_t n) const {
    with_output([&](const auto& output) { mul_span<T>(a, b, out, n, regs.offset1, regs.offset2, output); });
  }
  std::int32_t term(input side, T v) const {
    return (side == input::a ? params.input1_offset : params.input2_offset) + static_cast<std::int32_t>(v);
  }
  void with_terms(input side, const T* v, const std::int32_t* terms, T* out, std::size_t n) const {
    with_output([&](const auto& output) { mul_terms_span<false, T>(v, terms, 0, out, n, offset(side), output); });
  }
  void with_term(input side, const T* v, std::int32_t term, T* out, std::size_t n) const {
    with_output([&](const auto& output) { mul_terms_span<true, T>(v, nullptr, term, out, n, offset(side), output); });
  }
};
#endif

}  // namespace detail::eltwise

/// Quantized add with TFLite's ADD requantization and broadcasting, equal bit for bit to reference::add<R, T>. Built
/// once (load time) from the three quantizations and the fused activation; operator() then only computes. Same shape
/// rules as the reference: on each NHWC axis a and b have out's extent or 1 (scalar, per-channel vector, general
/// broadcasting), any pixel strides, and out may be exactly a or b (every block is read before it is written).
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
    if (!reference::detail::check_binary_views(a, b, out, reference::detail::add_view_names)) return;
    if (!require(params_.valid, errc::invalid_argument, "add: params were not built by a successful make_add_params"))
      return;
#if MOSAIQ_TARGET_SIMD
#if defined(MOSAIQ_ADD_TABLE_TERMS)
    if (tables_)
      return detail::eltwise::run_broadcast(a, b, out, detail::eltwise::add_table_kernels<T>(*tables_, params_.clamp));
#elif defined(MOSAIQ_ADD_TABLES)
    if (tables_)
      return detail::eltwise::run_broadcast(a, b, out, detail::eltwise::add_mixed_kernels<R, T>(params_, *tables_));
#endif
    detail::eltwise::run_broadcast(a, b, out, detail::eltwise::add_pipeline_kernels<R, T>(params_));
#else
    reference::add<R, T>(a, b, out, params_);
#endif
  }

 private:
  reference::add_params params_{};
  std::shared_ptr<const detail::eltwise::add_tables> tables_;  ///< null: run the arithmetic pipeline
};

/// Quantized multiply with TFLite's MUL requantization (uint8/int8: output zero point + MultiplyByQuantizedMultiplier(
/// (a - zp_a) * (b - zp_b), s_a s_b / s_out), fused activation clamp) and broadcasting, equal bit for bit to
/// reference::mul<R, T>. Same shape and aliasing rules as add: element-wise, a per-channel vector (1x1xC over HxWxC,
/// the squeeze-and-excitation scale), a scalar, or any TFLite broadcast. The products are exact in int32 lanes and
/// requantized with the shared lane multiply; a held input (vector or scalar) is offset once per call.
template <quantized_element T, rounding R = rounding::tflite_reference>
class mul {
 public:
  static constexpr rounding round = R;

  mul() = default;
  /// Reports errc::invalid_argument (through make_mul_params) and builds an object that refuses to run when the
  /// quantizations are unusable.
  mul(quant_params a, quant_params b, quant_params out, activation act = activation::none)
      : params_(reference::make_mul_params<T, R>(a, b, out, act)) {}
  explicit mul(const reference::mul_params& params) : params_(params) {}

  bool valid() const noexcept { return params_.valid && params_.round == R; }
  const reference::mul_params& params() const noexcept { return params_; }

  void operator()(tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> out) const {
    if (!reference::detail::check_binary_views(a, b, out, reference::detail::mul_view_names)) return;
    if (!require(valid(), errc::invalid_argument,
                 "mul: params were not built by a successful make_mul_params for this rounding mode"))
      return;
#if MOSAIQ_TARGET_SIMD
    detail::eltwise::run_broadcast(a, b, out, detail::eltwise::mul_kernels<R, T>(params_));
#else
    reference::mul<R, T>(a, b, out, params_);
#endif
  }

 private:
  reference::mul_params params_{};
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
#if MOSAIQ_TARGET_SIMD
      if (std::isfinite(rescale.scale) && std::isfinite(rescale.bias)) {
        const rescale_regs k{lanes::freg(rescale.scale), lanes::freg(rescale.bias),
                             lanes::reg(rescale.output_zero_point), lanes::reg(element_traits<T>::min),
                             lanes::reg(element_traits<T>::max)};
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

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
