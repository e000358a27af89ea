// Held lines: add and mul with one input held across a run of the other (a per-channel vector over a map, a column)
// as one fixed-point line per value of the held input, fitted at load and proven exact over every run value.
//
// With the held value v fixed, TFLite's ADD and MUL are floors of (nearly) affine functions of the run value x: MUL is
// floor((x - zp) g M / 2^N + beta) with its sign-dependent rounding offset, ADD is floor(S1[x] M / 2^N + const) whose
// scaled input S1 is affine up to a rounding far below an output step. So for each v, out(x) = clamp((x K + B + [x <
// split] D) >> line_shift) holds for all 256 x for suitable integers K, B, D, found by a small search around the real
// slope: each x bounds B to an interval (its exact output times 2^line_shift, one-sided where the output is clamped,
// always inside int32), the slope is accepted when the intervals of each piece (x below the split point and x at or
// above it) intersect. A value whose pieces admit no such line is marked inexact and its runs take the general kernels.
// The check is exhaustive, so a kernel computing the line equals the reference bit for bit; the search costs well under
// a millisecond per op at load. The run kernel is one 32-bit multiply-add, a shift and a clamp per element.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/avx2.hpp"
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/lanes.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// Fraction bits of a line. Slopes up to about 2 output steps per input step keep every x K + B of an unclamped
/// output within int32 (256 + 512 steps of 2^21 stay below 2^31).
inline constexpr int line_shift = 21;
/// Slopes tried on each side of the rounded real slope.
inline constexpr int line_search = 8;

/// out = clamp((x * slope + offset + (x < split ? below_split : 0)) >> line_shift) in wrapping int32 arithmetic (the
/// true value of the sum is always within int32, so wrapping intermediate steps give it exactly).
struct held_line {
  std::int32_t slope = 0, offset = 0, below_split = 0;
  bool exact = false;
};

/// The lines of one held side, indexed by the held element's byte (its bit pattern: i8 -1 is entry 255).
struct held_lines {
  std::array<held_line, 256> lines{};
  std::int32_t split = std::numeric_limits<std::int32_t>::min();  ///< min: one piece, below_split unused
  clamp_range clamp{};
  int exact_count = 0;

  bool has_split() const noexcept { return split != std::numeric_limits<std::int32_t>::min(); }
};

/// The scalar value of a line at x, as the lane kernel computes it.
constexpr std::int32_t line_output(const held_line& l, std::int32_t x, std::int32_t split, clamp_range clamp) noexcept {
  const std::uint32_t sum = static_cast<std::uint32_t>(x) * static_cast<std::uint32_t>(l.slope) +
                            static_cast<std::uint32_t>(l.offset) +
                            (x < split ? static_cast<std::uint32_t>(l.below_split) : 0u);
  return std::clamp(static_cast<std::int32_t>(sum) >> line_shift, clamp.min, clamp.max);
}

/// B's interval for one piece of the run values under slope K; empty when lo > hi.
struct offset_interval {
  std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  bool empty_piece = true;
};

/// Fits the line through outputs[i] (the exact output for run value first + i), or returns an inexact line.
inline held_line fit_line(const std::array<std::int32_t, 256>& outputs, std::int32_t first, double slope_estimate,
                          std::int32_t split, clamp_range clamp) noexcept {
  constexpr std::int64_t unit = std::int64_t{1} << line_shift;
  constexpr std::int64_t int_min = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t int_max = std::numeric_limits<std::int32_t>::max();
  if (!std::isfinite(slope_estimate) || std::abs(slope_estimate) > 1e6) return {};
  const auto rounded = static_cast<std::int64_t>(std::llround(slope_estimate * static_cast<double>(unit)));
  for (int step = 0; step <= 2 * line_search; ++step) {
    const std::int64_t k = rounded + (step % 2 == 0 ? step / 2 : -(step + 1) / 2);
    if (k < int_min || k > int_max) continue;
    offset_interval pieces[2];  // [0]: x < split, [1]: x >= split
    for (std::size_t i = 0; i < 256; ++i) {
      const std::int64_t x = first + static_cast<std::int64_t>(i), n = outputs[i];
      const std::int64_t lo = n <= clamp.min ? int_min : n * unit;
      const std::int64_t hi = n >= clamp.max ? int_max : (n + 1) * unit - 1;
      offset_interval& p = pieces[x < split ? 0 : 1];
      p.lo = std::max(p.lo, lo - x * k);
      p.hi = std::min(p.hi, hi - x * k);
      p.empty_piece = false;
    }
    if (pieces[0].lo > pieces[0].hi || pieces[1].lo > pieces[1].hi) continue;
    const auto middle = [](const offset_interval& p) { return p.lo + (p.hi - p.lo) / 2; };
    const std::int64_t above = pieces[1].empty_piece ? middle(pieces[0]) : middle(pieces[1]);
    const std::int64_t below = pieces[0].empty_piece ? above : middle(pieces[0]);
    // Stored modulo 2^32: the kernel's wrapping sums then land on the exact in-range value.
    return {static_cast<std::int32_t>(k), static_cast<std::int32_t>(static_cast<std::uint32_t>(above)),
            static_cast<std::int32_t>(static_cast<std::uint32_t>(below - above)), true};
  }
  return {};
}

/// The lines of one held side: exact(x, v) is the op's output for run value x and held value v (both as T's values),
/// slope(v) the real output steps per run step, split the run value below which the second offset applies.
/// One piece is tried first for each value, two only where one fails; the side keeps its split point only when some
/// line needs it (a one-piece line has below_split 0), so the run kernel skips the compare otherwise.
template <quantized_element T, class Exact, class Slope>
held_lines make_held_lines(Exact exact, Slope slope, std::int32_t split, clamp_range clamp) {
  constexpr std::int32_t no_split = std::numeric_limits<std::int32_t>::min();
  held_lines result;
  result.clamp = clamp;
  constexpr std::int32_t first = element_traits<T>::min;
  std::array<std::int32_t, 256> outputs{};
  bool splits = false;
  for (int byte = 0; byte < 256; ++byte) {
    const auto v = static_cast<std::int32_t>(static_cast<T>(static_cast<std::uint8_t>(byte)));
    for (std::int32_t i = 0; i < 256; ++i) outputs[static_cast<std::size_t>(i)] = exact(first + i, v);
    held_line& line = result.lines[static_cast<std::size_t>(byte)];
    line = fit_line(outputs, first, slope(v), no_split, clamp);
    if (!line.exact && split != no_split) {
      line = fit_line(outputs, first, slope(v), split, clamp);
      splits = splits || line.exact;
    }
  }
  result.split = splits ? split : no_split;
  for (int byte = 0; byte < 256; ++byte) {  // the proof, on the kernel's own arithmetic
    const auto v = static_cast<std::int32_t>(static_cast<T>(static_cast<std::uint8_t>(byte)));
    held_line& line = result.lines[static_cast<std::size_t>(byte)];
    for (std::int32_t i = 0; i < 256 && line.exact; ++i)
      line.exact = line_output(line, first + i, result.split, clamp) == exact(first + i, v);
    result.exact_count += line.exact ? 1 : 0;
  }
  return result;
}

/// The lines for a held a (run b) and a held b (run a).
struct held_line_sides {
  held_lines held_a, held_b;
};

inline double real_multiplier(quantized_multiplier q) noexcept {
  return static_cast<double>(q.multiplier) * std::ldexp(1.0, q.shift - 31);
}

/// add's lines: the output as reference::detail::add_element computes it, from each input's scaled values; a held
/// input only moves the offset, so every line of a side has the run input's real slope.
template <rounding R, quantized_element T>
held_line_sides make_add_lines(const reference::add_params& p) {
  const reference::detail::add_scales scales = reference::detail::decode_add_scales<R>(p);
  std::array<std::int32_t, 256> scaled1{}, scaled2{};
  for (std::int32_t i = 0; i < 256; ++i) {
    const std::int32_t q = element_traits<T>::min + i;
    scaled1[static_cast<std::size_t>(i)] = multiply_by_quantized_multiplier<R>(
        (p.input1_offset + q) * (1 << reference::add_params::left_shift), scales.input1);
    scaled2[static_cast<std::size_t>(i)] = multiply_by_quantized_multiplier<R>(
        (p.input2_offset + q) * (1 << reference::add_params::left_shift), scales.input2);
  }
  const auto output = [&](std::int32_t a, std::int32_t b) {
    const std::int32_t sum = scaled1[static_cast<std::size_t>(a - element_traits<T>::min)] +
                             scaled2[static_cast<std::size_t>(b - element_traits<T>::min)];
    return std::clamp(multiply_by_quantized_multiplier<R>(sum, scales.output) + p.output_offset, p.clamp.min,
                      p.clamp.max);
  };
  const double output_step = std::ldexp(real_multiplier(p.output_multiplier), reference::add_params::left_shift);
  const double slope_a = real_multiplier(p.input1_multiplier) * output_step;
  const double slope_b = real_multiplier(p.input2_multiplier) * output_step;
  constexpr std::int32_t no_split = std::numeric_limits<std::int32_t>::min();
  return {make_held_lines<T>([&](std::int32_t x, std::int32_t v) { return output(v, x); },
                             [&](std::int32_t) { return slope_b; }, no_split, p.clamp),
          make_held_lines<T>([&](std::int32_t x, std::int32_t v) { return output(x, v); },
                             [&](std::int32_t) { return slope_a; }, no_split, p.clamp)};
}

/// mul's lines: reference::detail::mul_element; slope (v - zp_held) M, split at the run input's zero point, where the
/// product changes sign and TFLite's rounding its offset.
template <rounding R, quantized_element T>
held_line_sides make_mul_lines(const reference::mul_params& p) {
  const requant_scale scale = prepare_scale<R>(p.output_multiplier);
  const double multiplier = real_multiplier(p.output_multiplier);
  const auto output = [&](std::int32_t a, std::int32_t b) {
    return static_cast<std::int32_t>(
        reference::detail::mul_element<R, T>(static_cast<T>(a), static_cast<T>(b), p, scale));
  };
  return {
      make_held_lines<T>([&](std::int32_t x, std::int32_t v) { return output(v, x); },
                         [&](std::int32_t v) { return (v + p.input1_offset) * multiplier; }, -p.input2_offset, p.clamp),
      make_held_lines<T>([&](std::int32_t x, std::int32_t v) { return output(x, v); },
                         [&](std::int32_t v) { return (v + p.input2_offset) * multiplier; }, -p.input1_offset,
                         p.clamp)};
}

#if MOSAIQ_TARGET_SIMD
/// One chunk of held channels as the run kernel reads them: slopes, offsets, and offsets below the split point
/// (offset + below_split) as planes of `capacity` entries, padded by a block so a tail block reads initialized entries.
template <int Capacity>
struct line_planes {
  static constexpr int stride = Capacity + lanes::block;
  std::int32_t values[3 * stride] = {};

  const std::int32_t* slope() const noexcept { return values; }
  const std::int32_t* offset() const noexcept { return values + stride; }
  const std::int32_t* below() const noexcept { return values + 2 * stride; }

  /// Fills entries [0, count) from the held channel run; false when one of its values has no exact line.
  template <quantized_element T>
  bool fill(const held_lines& lines, const T* held, int count) noexcept {
    for (int c = 0; c < count; ++c) {
      const held_line& l = lines.lines[static_cast<std::uint8_t>(held[c])];
      if (!l.exact) return false;
      values[c] = l.slope;
      values[stride + c] = l.offset;
      values[2 * stride + c] =
          static_cast<std::int32_t>(static_cast<std::uint32_t>(l.offset) + static_cast<std::uint32_t>(l.below_split));
    }
    return true;
  }

  /// Repeats entries [0, count) over [count, period) (period: a multiple of count, at most Capacity), the planes of a
  /// flat run of pixels of count channels read block by block at the block's offset modulo period (line_flat).
  void repeat(int count, int period) noexcept {
    for (int plane = 0; plane < 3; ++plane)
      for (int c = count; c < period; ++c) values[plane * stride + c] = values[plane * stride + c - count];
  }
};

/// The columns this target runs in front of the lane blocks (path.hpp, line_columns_for).
using line_columns = simd::native_path_of<line_columns_for>;

/// The split point and clamp of a side in broadcast registers, and the columns' registers (empty where a target has
/// no columns).
struct line_regs {
  lanes::reg split, lo, hi;
  [[no_unique_address]] line_columns::regs wide;
  template <quantized_element T>
  static line_regs of(const held_lines& l) noexcept {
    return {lanes::reg(l.split), lanes::reg(l.clamp.min), lanes::reg(l.clamp.max),
            line_columns::regs::template of<T>(l.split, l.clamp, line_shift)};
  }
};

/// 16 elements of a run against 16 channels' lines.
template <bool Split, quantized_element T>
[[gnu::always_inline]] inline void line_block(const T* run, const std::int32_t* slope, const std::int32_t* offset,
                                              const std::int32_t* below, T* out, const line_regs& k) noexcept {
  lanes::reg x[lanes::regs], s[lanes::regs], o[lanes::regs];
  lanes::widen(run, x);
  lanes::load(slope, s);
  lanes::load(offset, o);
  if constexpr (Split) {
    lanes::reg d[lanes::regs];
    lanes::load(below, d);
    for (int j = 0; j < lanes::regs; ++j) o[j] = xsimd::select(x[j] < k.split, d[j], o[j]);
  }
  for (int j = 0; j < lanes::regs; ++j) x[j] = xsimd::min(xsimd::max((x[j] * s[j] + o[j]) >> line_shift, k.lo), k.hi);
  lanes::narrow<T>(out, x);
}

/// The last `rest` (< lanes::block) elements of a run through zero-padded copies.
template <bool Split, quantized_element T>
[[gnu::always_inline]] inline void line_tail(const T* run, T* out, std::size_t rest, const std::int32_t* slope,
                                             const std::int32_t* offset, const std::int32_t* below,
                                             const line_regs& k) noexcept {
  T tv[lanes::block] = {}, to[lanes::block];
  std::memcpy(tv, run, rest * sizeof(T));
  line_block<Split, T>(tv, slope, offset, below, to, k);
  std::memcpy(out, to, rest * sizeof(T));
}

/// A row of pixels: pixel p's n channels at run + p * run_step against the lines of the channels, written to out + p *
/// out_step (n at most the planes' capacity). The target's columns (line_columns: AVX2 blocks of 32 channels) go over
/// the whole row first, the lane blocks the rest of each pixel (whole 16-element blocks, then a zero-padded copy of the
/// tail).
template <bool Split, quantized_element T, int Capacity>
inline void line_row(const T* run, std::ptrdiff_t run_step, T* out, std::ptrdiff_t out_step, int pixels,
                     const line_planes<Capacity>& planes, std::size_t n, const line_regs& k) noexcept {
  const std::int32_t *slope = planes.slope(), *offset = planes.offset(), *below = planes.below();
  const std::size_t done =
      line_columns::run<Split, T>(run, run_step, out, out_step, pixels, slope, offset, below, n, k.wide);
  if (done == n) return;
  for (int p = 0; p < pixels; ++p, run += run_step, out += out_step) {
    std::size_t i = done;
    for (; i + lanes::block <= n; i += lanes::block)
      line_block<Split, T>(run + i, slope + i, offset + i, below + i, out + i, k);
    if (i < n) line_tail<Split, T>(run + i, out + i, n - i, slope + i, offset + i, below + i, k);
  }
}

/// A flat run of n elements, dense pixels whose channel count divides `period` (a multiple of lanes::block), against
/// planes repeated over the period (line_planes::repeat): block i reads the planes at offset i modulo period, so the
/// pixels' channel count needs no whole blocks and only the run's last block goes through a zero-padded copy. Each
/// block is read before it is written: out may be run.
template <bool Split, quantized_element T, int Capacity>
inline void line_flat(const T* run, T* out, std::size_t n, std::size_t period, const line_planes<Capacity>& planes,
                      const line_regs& k) noexcept {
  const std::int32_t *slope = planes.slope(), *offset = planes.offset(), *below = planes.below();
  std::size_t i = 0, phase = 0;
  for (; i + lanes::block <= n; i += lanes::block) {
    line_block<Split, T>(run + i, slope + phase, offset + phase, below + phase, out + i, k);
    phase += lanes::block;
    if (phase == period) phase = 0;
  }
  if (i < n) line_tail<Split, T>(run + i, out + i, n - i, slope + phase, offset + phase, below + phase, k);
}
#endif

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise
