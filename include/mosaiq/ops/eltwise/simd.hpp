// Element-wise ops, the vector path of every SIMD target: add's pipeline, mul and concat's rescale on the lanes of
// simd/lanes.hpp (int32 blocks of 16 elements), and the broadcasting driver (run_broadcast) every binary op runs
// on. A target's own kernels extend it through its path (ops/eltwise/path.hpp): add's tables (ops/eltwise/x86.hpp,
// neon.hpp), MUL's folded output step and element-wise kernel (mul_words.hpp). Scalar builds run the reference ops
// (ops/eltwise.hpp).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/add_tables.hpp"
#include "mosaiq/ops/eltwise/held_lines.hpp"
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/lanes.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

// The vector path's entry points, declared for every target so that the branches of ops/eltwise.hpp that scalar
// builds discard name declared functions; defined below where MOSAIQ_TARGET_SIMD, add_tables_broadcast by the
// targets whose path has add tables (ops/eltwise/x86.hpp, neon.hpp), add_linear_broadcast by those with a linear
// form (x86.hpp).
template <rounding R, quantized_element T>
[[gnu::always_inline]] inline void add_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b,
                                                 const tensor_view<T>& out, const reference::add_params& params,
                                                 const held_line_sides* lines);
template <rounding R, quantized_element T>
[[gnu::always_inline]] inline void add_tables_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b,
                                                        const tensor_view<T>& out, const reference::add_params& params,
                                                        const add_tables& tables, const held_line_sides* lines);
template <rounding R, quantized_element T>
[[gnu::always_inline]] inline void add_linear_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b,
                                                        const tensor_view<T>& out, const reference::add_params& params,
                                                        const add_linear& form, const add_tables* tables,
                                                        const held_line_sides* lines);
template <class Path, rounding R, quantized_element T>
[[gnu::always_inline]] inline void mul_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b,
                                                 const tensor_view<T>& out, const reference::mul_params& params,
                                                 const held_line_sides* lines);
template <quantized_element T>
[[gnu::always_inline]] inline void rescale_slice(const tensor_view<const T>& in, const tensor_view<T>& slice,
                                                 const reference::detail::concat_rescale& rescale, bool flat,
                                                 std::size_t flat_count);

#if MOSAIQ_TARGET_SIMD
/// What ADD and MUL share, broadcast once per call: the inputs' offsets, the output's zero point and clamp.
struct binary_regs {
  lanes::reg offset1, offset2, output_offset, clamp_min, clamp_max;

  template <class Params>
  explicit binary_regs(const Params& p) noexcept
      : offset1(lanes::reg(p.input1_offset)),
        offset2(lanes::reg(p.input2_offset)),
        output_offset(lanes::reg(p.output_offset)),
        clamp_min(lanes::reg(p.clamp.min)),
        clamp_max(lanes::reg(p.clamp.max)) {}

  /// The output's multiplier, zero point and clamp on a raw result (ADD's sum of scaled inputs, MUL's product).
  template <rounding R>
  [[gnu::always_inline]] lanes::reg requantized(lanes::reg v, const lanes::scale_regs& output) const noexcept {
    const lanes::reg raw =
        lanes::multiply<R>(v, output.multiplier, output.left_shift, output.right_shift) + output_offset;
    return xsimd::min(xsimd::max(raw, clamp_min), clamp_max);
  }
};

/// The add_params decoded into broadcast registers once per call.
template <rounding R>
struct add_regs : binary_regs {
  lanes::scale_regs input1, input2, output;

  explicit add_regs(const reference::add_params& p) noexcept
      : binary_regs(p),
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
  return k.template requantized<R>(sum, k.output);
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
struct mul_regs : binary_regs {
  lanes::scale_regs output;

  explicit mul_regs(const reference::mul_params& p) noexcept
      : binary_regs(p), output(lanes::scale_regs::of(prepare_scale<R>(p.output_multiplier))) {}

  /// A product of offset inputs to its clamped output value, as reference::detail::mul_element (requantize: the
  /// zero-point add wraps as the scalar one does).
  [[gnu::always_inline]] lanes::reg operator()(lanes::reg product) const noexcept {
    return requantized<R>(product, output);
  }
};

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

/// A binary op's kernels as run_broadcast uses them: element-wise runs of both inputs (pair), the int32 term an
/// element of one input contributes when it is held across a run of the other (term), and a run of one input against
/// one term per element (with_terms) or one term for the whole run (with_term).
template <class K, class T>
concept binary_kernels = requires(const K& k, input side, const T* v, const std::int32_t* terms, T* out) {
  k.pair(v, v, out, std::size_t{});
  { k.term(side, T{}) } -> std::same_as<std::int32_t>;
  k.with_terms(side, v, terms, out, std::size_t{});
  k.with_term(side, v, std::int32_t{}, out, std::size_t{});
  { k.lines(side) } -> std::same_as<const held_lines*>;
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

/// Row (n, y) of a chunk of channels against their held lines: pixel by pixel (line_row), or as one flat run
/// (line_flat) where period is not 0 (flat_period).
template <quantized_element T, int Capacity>
void run_line_row(const tensor_view<const T>& run, const tensor_view<T>& out, int n, int y, int first, int count,
                  int period, const line_planes<Capacity>& planes, const held_lines& lines) {
  const line_regs regs = line_regs::of<T>(lines);
  const T* run_row = broadcast_pixel(run, n, y, 0) + first;
  T* out_row = out.pixel(n, y, 0) + first;
  const auto size = static_cast<std::size_t>(count);
  const auto row = [&]<bool Split>() {
    if (period != 0)
      return line_flat<Split, T>(run_row, out_row, size * static_cast<std::size_t>(out.width()),
                                 static_cast<std::size_t>(period), planes, regs);
    line_row<Split, T>(run_row, run.pixel_stride(), out_row, out.pixel_stride(), out.width(), planes, size, regs);
  };
  if (lines.has_split())
    row.template operator()<true>();
  else
    row.template operator()<false>();
}

/// The period of line_flat's planes for rows of run and out (lcm(C, lanes::block)), or 0 where the rows run pixel by
/// pixel: C a whole number of blocks (line_row has no partial block then), pixels not dense, or a period longer than
/// the planes' capacity.
template <quantized_element T>
int flat_period(const tensor_view<const T>& run, const tensor_view<T>& out, int capacity) noexcept {
  const int channels = out.channels();
  if (channels % lanes::block == 0 || !run.is_dense() || !out.is_dense()) return 0;
  const int period = std::lcm(channels, lanes::block);
  return period <= capacity ? period : 0;
}

/// Both inputs have out's channel count but `held` is constant along x (width 1) where `run` is not (a per-channel
/// vector, a column): the held pixel's channels are turned into their lines (held_lines.hpp) or, where one has no
/// exact line, into terms, once per chunk of channels, and reused until the held pixel changes. Rows of dense pixels
/// whose channel count is not a whole number of blocks run on the lines as one flat run per row (flat_period).
template <quantized_element T, class K>
void run_held_channels(input run_side, const tensor_view<const T>& run, const tensor_view<const T>& held,
                       const tensor_view<T>& out, const K& k) {
  constexpr int chunk = 256;
  std::int32_t terms[chunk];
  line_planes<chunk> planes;
  const input held_side = run_side == input::a ? input::b : input::a;
  const held_lines* lines = k.lines(held_side);
  const int period = flat_period(run, out, chunk);
  for (int first = 0; first < out.channels(); first += chunk) {
    const int count = std::min(chunk, out.channels() - first);
    const T* cached = nullptr;
    bool on_lines = false;
    for (int n = 0; n < out.batch(); ++n)
      for (int y = 0; y < out.height(); ++y) {
        const T* held_pixel = broadcast_pixel(held, n, y, 0) + first;
        if (held_pixel != cached) {
          on_lines = lines != nullptr && planes.fill(*lines, held_pixel, count);
          if (on_lines && period != 0) planes.repeat(count, period);
          if (!on_lines)
            for (int c = 0; c < count; ++c) terms[c] = k.term(held_side, held_pixel[c]);
          cached = held_pixel;
        }
        if (on_lines) {
          run_line_row(run, out, n, y, first, count, period, planes, *lines);
          continue;
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

/// The held lines of an op (null where it has none), as binary_kernels hands them to run_broadcast.
struct line_source {
  const held_line_sides* sides = nullptr;

  /// The lines for `held` held across runs of the other input, or null.
  const held_lines* lines(input held) const noexcept {
    if (sides == nullptr) return nullptr;
    return held == input::a ? &sides->held_a : &sides->held_b;
  }
};

/// add's arithmetic pipeline as binary_kernels; a term is an input's scaled value (add_element's scaled_input).
template <rounding R, quantized_element T>
struct add_pipeline_kernels : line_source {
  const reference::add_params& params;
  reference::detail::add_scales scales;
  add_regs<R> regs;

  add_pipeline_kernels(const reference::add_params& p, const held_line_sides* held)
      : line_source{held}, params(p), scales(reference::detail::decode_add_scales<R>(p)), regs(p) {}

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

/// mul's pipeline as binary_kernels; a term is an input's offset value. The output step is the path's folded one
/// where it has one and it applies (Path::mul_folded: AVX2, AVX-512), else the general lane multiply; element-wise
/// runs use the path's own span on 16-bit products where the product is not shifted (mul_fold::narrow).
template <class Path, rounding R, quantized_element T>
struct mul_kernels : line_source {
  const reference::mul_params& params;
  mul_regs<R> regs;
  [[no_unique_address]] typename Path::mul_folded folded;

  mul_kernels(const reference::mul_params& p, const held_line_sides* held)
      : line_source{held}, params(p), regs(p), folded(Path::mul_folded::template of<R>(p)) {}

  /// Calls f with the output step to use.
  template <class F>
  void with_output(F f) const {
    if constexpr (folds_mul<Path>)
      if (folded.usable) return f(folded);
    f(regs);
  }
  lanes::reg offset(input side) const { return side == input::a ? regs.offset1 : regs.offset2; }

  void pair(const T* a, const T* b, T* out, std::size_t n) const {
    if constexpr (folds_mul<Path>)
      if (folded.fold.narrow()) return folded.template span<T>(a, b, out, n, params);
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

template <rounding R, quantized_element T>
inline void add_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b, const tensor_view<T>& out,
                          const reference::add_params& params, const held_line_sides* lines) {
  run_broadcast(a, b, out, add_pipeline_kernels<R, T>(params, lines));
}

template <class Path, rounding R, quantized_element T>
inline void mul_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b, const tensor_view<T>& out,
                          const reference::mul_params& params, const held_line_sides* lines) {
  run_broadcast(a, b, out, mul_kernels<Path, R, T>(params, lines));
}

/// concat's rescale of one input into its slice of the output (finite scale and bias): one flat run when both are
/// dense, else pixel by pixel.
template <quantized_element T>
inline void rescale_slice(const tensor_view<const T>& in, const tensor_view<T>& slice,
                          const reference::detail::concat_rescale& rescale, bool flat, std::size_t flat_count) {
  const rescale_regs k{lanes::freg(rescale.scale), lanes::freg(rescale.bias), lanes::reg(rescale.output_zero_point),
                       lanes::reg(element_traits<T>::min), lanes::reg(element_traits<T>::max)};
  if (flat) return rescale_span<T>(in.data(), slice.data(), flat_count, k);
  const auto channels = static_cast<std::size_t>(slice.channels());
  for (int n = 0; n < slice.batch(); ++n)
    for (int y = 0; y < slice.height(); ++y)
      for (int x = 0; x < slice.width(); ++x) rescale_span<T>(in.pixel(n, y, x), slice.pixel(n, y, x), channels, k);
}
#endif

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise
