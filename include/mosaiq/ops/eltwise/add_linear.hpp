// add's linear form with flagged lanes: built and proven at load, target-independent; x86 runs it (add_linear_span of
// avx2.hpp, avx512.hpp) in front of the exact per-input tables (add_tables.hpp), which take every flagged block.
//
// TFLite's ADD is, up to its inner roundings (the scaled inputs' and the output step's, together a few units of the
// 2^20-scaled sum: about 2^-18 of an output step for residual scales), the linear function
// alpha (a + offset1) + beta (b + offset2) + zp rounded once, with alpha = 2^20 m1 m_out and beta = 2^20 m2 m_out
// (the real multipliers). So t = a A + b B + C in int32 with k fraction bits (A = round(alpha 2^k), B likewise, k the
// largest up to 24 for which every t fits int32) gives the output as t >> k except where t lies within the
// coefficients' error (mostly A's and B's rounding: at most 2^-k times the input range) of a rounding boundary. The
// lanes that might be wrong are flagged: with e_lo and e_hi the largest overshoot and undershoot of the wrong
// candidates, C = round(gamma 2^k) + e_hi and band = e_lo + e_hi, a lane is flagged when (t & (2^k - 1)) < band; an
// unflagged lane's t did not cross a boundary when e_hi was added, so t >> k is the floor of t - e_hi, which is exact
// there. The construction is proven like the tables: over all 65,536 (a, b) pairs, on the kernel's own int32
// arithmetic, every unflagged pair's clamped candidate equals the reference's output (add_element's steps, the
// scaled inputs computed once per byte as the tables do). The form is kept only when the proof holds and at most
// 1/32 of the pairs are flagged (else add runs the tables alone).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// out(a, b) = clamp((a A + b B + C) >> shift) for every (a, b) whose sum is not flagged ((sum & (2^shift - 1)) <
/// band), a and b as T's values; the sum never leaves int32 for T's values.
struct add_linear {
  std::int32_t a_coef = 0, b_coef = 0, offset = 0;
  int shift = 0;
  std::int32_t band = 0;
  int flagged_pairs = 0;  ///< of the 65,536 (a, b) pairs
  int wrong_pairs = 0;    ///< pairs whose candidate differs from the reference (all of them flagged)
  bool usable = false;

  constexpr std::int32_t sum(std::int32_t a, std::int32_t b) const noexcept {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(a_coef) +
                                     static_cast<std::uint32_t>(b) * static_cast<std::uint32_t>(b_coef) +
                                     static_cast<std::uint32_t>(offset));
  }
  constexpr bool flagged(std::int32_t a, std::int32_t b) const noexcept {
    return (sum(a, b) & ((std::int32_t{1} << shift) - 1)) < band;
  }
  constexpr std::int32_t candidate(std::int32_t a, std::int32_t b, clamp_range clamp) const noexcept {
    return std::clamp(sum(a, b) >> shift, clamp.min, clamp.max);
  }
};

/// Each input's scaled values, exactly as reference::detail::add_element computes them, indexed by the element's
/// byte (its bit pattern: i8 -1 is entry 255).
struct add_scaled_inputs {
  std::array<std::int32_t, 256> first{}, second{};
};

template <rounding R, quantized_element T>
add_scaled_inputs scale_add_inputs(const reference::add_params& p, const reference::detail::add_scales& scales) {
  add_scaled_inputs s;
  for (int byte = 0; byte < 256; ++byte) {
    const auto q = static_cast<std::int32_t>(static_cast<T>(static_cast<std::uint8_t>(byte)));
    s.first[static_cast<std::size_t>(byte)] = multiply_by_quantized_multiplier<R>(
        (p.input1_offset + q) * (1 << reference::add_params::left_shift), scales.input1);
    s.second[static_cast<std::size_t>(byte)] = multiply_by_quantized_multiplier<R>(
        (p.input2_offset + q) * (1 << reference::add_params::left_shift), scales.input2);
  }
  return s;
}

/// Largest fraction of flagged pairs (of 65,536) for which the linear form is kept.
inline constexpr int max_flagged_pairs = 65536 / 32;

/// The form's fixed-point coefficients at k fractional bits: a * a_coef + b * b_coef + c.
struct linear_coefficients {
  std::int64_t a_coef = 0, b_coef = 0, c = 0;
  int k = 0;  // 0: no k from 24 down to 12 keeps every sum inside int32
};

/// The largest k (at most 24) for which every sum, plus a margin of one step for e_hi, fits int32.
template <quantized_element T>
linear_coefficients choose_linear_coefficients(double alpha, double beta, double gamma) {
  constexpr std::int64_t lo = element_traits<T>::min, hi = element_traits<T>::max;
  constexpr std::int64_t int_max = std::numeric_limits<std::int32_t>::max();
  for (int k = 24; k >= 12; --k) {
    const double unit = std::ldexp(1.0, k);
    if (!(std::abs(alpha * unit) < 0x1p31 && std::abs(beta * unit) < 0x1p31 && std::abs(gamma * unit) < 0x1p40))
      continue;
    const linear_coefficients form{std::llround(alpha * unit), std::llround(beta * unit), std::llround(gamma * unit),
                                   k};
    std::int64_t extreme = 0;
    for (const std::int64_t a : {lo, hi})
      for (const std::int64_t b : {lo, hi})
        extreme = std::max(extreme, std::abs(a * form.a_coef + b * form.b_coef + form.c));
    if (extreme + (std::int64_t{1} << k) <= int_max) return form;
  }
  return {};
}

/// The reference's outputs (add_element's steps on the scaled inputs), pair (a, b) at (a - lo) * 256 + b - lo.
template <rounding R, quantized_element T>
std::vector<std::int16_t> add_reference_outputs(const reference::add_params& p,
                                                const reference::detail::add_scales& scales) {
  constexpr std::int32_t lo = element_traits<T>::min, hi = element_traits<T>::max;
  const add_scaled_inputs scaled = scale_add_inputs<R, T>(p, scales);
  std::vector<std::int16_t> outputs(65536);
  for (std::int32_t a = lo; a <= hi; ++a)
    for (std::int32_t b = lo; b <= hi; ++b)
      outputs[static_cast<std::size_t>((a - lo) * 256 + b - lo)] = static_cast<std::int16_t>(std::clamp(
          multiply_by_quantized_multiplier<R>(
              scaled.first[static_cast<std::uint8_t>(a)] + scaled.second[static_cast<std::uint8_t>(b)], scales.output) +
              p.output_offset,
          p.clamp.min, p.clamp.max));
  return outputs;
}

/// e_lo, e_hi: how far past a boundary the candidates of wrong pairs lie (a wrong pair a whole step off: no form).
struct boundary_errors {
  std::int64_t below = 0, above = 0;  // e_lo, e_hi
};

template <quantized_element T>
boundary_errors measure_boundary_errors(const linear_coefficients& form, const std::vector<std::int16_t>& outputs,
                                        clamp_range clamp) {
  constexpr std::int64_t lo = element_traits<T>::min, hi = element_traits<T>::max;
  const std::int64_t unit = std::int64_t{1} << form.k;
  boundary_errors e;
  for (std::int64_t a = lo; a <= hi; ++a)
    for (std::int64_t b = lo; b <= hi; ++b) {
      const std::int64_t exact = outputs[static_cast<std::size_t>((a - lo) * 256 + b - lo)];
      const std::int64_t t = a * form.a_coef + b * form.b_coef + form.c;
      const std::int64_t got = std::clamp<std::int64_t>(t >> form.k, clamp.min, clamp.max);
      if (got > exact)
        e.below = std::max(e.below, t - (exact + 1) * unit + 1);
      else if (got < exact)
        e.above = std::max(e.above, exact * unit - t);
    }
  return e;
}

/// The proof, on the kernel's arithmetic: every unflagged pair is exact. Counts the flagged and wrong pairs; false
/// if an unflagged pair is wrong.
template <quantized_element T>
bool prove_linear_form(add_linear& form, const std::vector<std::int16_t>& outputs, clamp_range clamp) {
  constexpr std::int32_t lo = element_traits<T>::min, hi = element_traits<T>::max;
  for (std::int32_t a = lo; a <= hi; ++a)
    for (std::int32_t b = lo; b <= hi; ++b) {
      const std::int32_t exact = outputs[static_cast<std::size_t>((a - lo) * 256 + b - lo)];
      const bool flagged = form.flagged(a, b);
      const bool right = form.candidate(a, b, clamp) == exact;
      if (!flagged && !right) return false;
      form.flagged_pairs += flagged ? 1 : 0;
      form.wrong_pairs += right ? 0 : 1;
    }
  return true;
}

template <rounding R, quantized_element T>
add_linear make_add_linear(const reference::add_params& p) {
  if (!p.valid) return {};
  const reference::detail::add_scales scales = reference::detail::decode_add_scales<R>(p);
  const auto real = [](quantized_multiplier q) { return std::ldexp(static_cast<double>(q.multiplier), q.shift - 31); };
  const double output_step = std::ldexp(real(p.output_multiplier), reference::add_params::left_shift);
  const double alpha = real(p.input1_multiplier) * output_step, beta = real(p.input2_multiplier) * output_step;
  const double gamma = alpha * p.input1_offset + beta * p.input2_offset + p.output_offset + 0.5;
  const linear_coefficients form = choose_linear_coefficients<T>(alpha, beta, gamma);
  if (form.k == 0) return {};

  const std::vector<std::int16_t> outputs = add_reference_outputs<R, T>(p, scales);
  const boundary_errors e = measure_boundary_errors<T>(form, outputs, p.clamp);
  if (e.below + e.above >= (std::int64_t{1} << form.k) / 2) return {};
  add_linear result;
  result.a_coef = static_cast<std::int32_t>(form.a_coef);
  result.b_coef = static_cast<std::int32_t>(form.b_coef);
  result.offset = static_cast<std::int32_t>(form.c + e.above);
  result.shift = form.k;
  result.band = static_cast<std::int32_t>(e.below + e.above);
  if (!prove_linear_form<T>(result, outputs, p.clamp)) return {};
  result.usable = result.flagged_pairs <= max_flagged_pairs;
  return result;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise
