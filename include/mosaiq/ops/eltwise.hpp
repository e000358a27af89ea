// Quantized element-wise kernels (add, mul, concat), bit-exact with reference/eltwise.hpp:
//
//   mosaiq::add<mosaiq::u8> residual(a_quant, b_quant, out_quant, mosaiq::activation::relu6);  // load time
//   residual(a, b, out);          // out may be a or b (in place)
//   mosaiq::concat<mosaiq::i8>(std::span<const mosaiq::reference::concat_input<mosaiq::i8>>(parts), out, out_quant);
//   mosaiq::mul<mosaiq::i8> excite(map_quant, gate_quant, out_quant);   // load time
//   excite(map, gate, out);       // gate 1x1xC over map HxWxC (TFLite broadcasting), or any broadcast, or equal shapes
//
// Broadcasting (add and mul, run_broadcast): equal dense shapes run as one flat array; a single element against a full
// tensor is one held term; otherwise pixel by pixel, each input's channel run read element-wise, held (an input of
// width 1 against one that moves along x: a per-channel vector, a column; prepared only when its pixel changes, 256
// channels at a time), or held as one term (an input with one channel). A held channel runs on its held line
// (ops/eltwise/held_lines.hpp: for each value of the held input, one fixed-point line over the 256 values of the run
// input, fitted and proven exact at load; one multiply-add, shift and clamp per element), or, for a value without an
// exact line, on precomputed int32 terms: what one element contributes before the other input is read, its scaled
// value (add pipeline), its table entry (add tables, gathered on AVX2/AVX-512) or its offset value (mul).
//
// The vector kernels every SIMD target runs live beside this front end in ops/eltwise/simd.hpp (lanes, broadcasting);
// per-ISA kernels in ops/eltwise/avx2.hpp (table gathers, 32-element held lines), avx512.hpp (VBMI byte-plane tables,
// gathers), x86.hpp, mul_words.hpp, x86_regs.hpp (on both: add's tables, MUL's folded kernels, add's linear registers),
// neon.hpp (tbl tables); add_tables.hpp builds add's tables; each target's path (ops/eltwise/path.hpp) says which.
//
// mul: TFLite's MUL, out = clamp(zp + MultiplyByQuantizedMultiplier((a - zp_a)(b - zp_b), M)); the products are exact
// in int32 lanes. AVX2 and AVX-512 fold the multiplier's two roundings into one floor (mul_fold, ops/eltwise/path.hpp;
// mul_folded_regs, mul_words.hpp) and run element-wise runs on 16-bit products, 32 / 64 elements per step, where the
// product is not shifted (multipliers below 1); NEON runs the general lane multiply.
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
// gather the int32 entries (16 / 8 elements per step); aarch64 looks up the byte planes with tbl/tbx. On x86
// (AVX2, AVX-512) element-wise runs go first through add's linear form (ops/eltwise/add_linear.hpp): t = a A + b B + C
// in int32 lanes, out = clamp(t >> k), proven at load on all pairs outside a band of t's fraction next to a rounding
// boundary; a block with a lane in that band runs on the tables. Dense views run as one flat array; strided views
// pixel by pixel; out may be a or b. Building the tables costs about 0.2 ms; the linear form adds three passes over
// the 65,536 pairs.
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
#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/add_linear.hpp"
#include "mosaiq/ops/eltwise/add_tables.hpp"
#include "mosaiq/ops/eltwise/avx2.hpp"
#include "mosaiq/ops/eltwise/avx512.hpp"
#include "mosaiq/ops/eltwise/held_lines.hpp"
#include "mosaiq/ops/eltwise/neon.hpp"
#include "mosaiq/ops/eltwise/path.hpp"
#include "mosaiq/ops/eltwise/simd.hpp"
#include "mosaiq/ops/eltwise/x86.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace detail::eltwise {

// The path this target runs: what its kernels add to the lane kernels of ops/eltwise/simd.hpp (every target builds
// lanes_path).
using native_path = simd::native_path_of<path_for>;

/// Whether this target runs the vector kernels of ops/eltwise/simd.hpp (else the reference ops).
inline constexpr bool vector_kernels = MOSAIQ_TARGET_SIMD;

/// Whether a and b are the same elements laid out the same way.
template <class A, class B>
bool same_view(const A& a, const B& b) noexcept {
  return static_cast<const void*>(a.data()) == static_cast<const void*>(b.data()) && a.dims() == b.dims() &&
         a.batch() == b.batch() && a.pixel_stride() == b.pixel_stride();
}

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
    if constexpr (detail::eltwise::native_path::add_tables) {
      auto tables = detail::make_shared<detail::eltwise::add_tables>(detail::eltwise::make_add_tables<R, T>(params_));
      if (tables->exact) tables_ = std::move(tables);
    }
    if constexpr (detail::eltwise::native_path::linear_add) {
      auto form = detail::make_shared<detail::eltwise::add_linear>(detail::eltwise::make_add_linear<R, T>(params_));
      if (form->usable) linear_ = std::move(form);
    }
    if constexpr (detail::eltwise::vector_kernels)
      if (params_.valid)
        lines_ = detail::make_shared<detail::eltwise::held_line_sides>(detail::eltwise::make_add_lines<R, T>(params_));
  }

  bool valid() const noexcept { return params_.valid; }
  /// Whether operator() runs the per-input tables (checked exact at construction) rather than the arithmetic pipeline.
  bool uses_tables() const noexcept { return tables_ != nullptr; }
  /// The linear form element-wise runs take in front of the tables or the pipeline (add_linear.hpp), or null.
  const detail::eltwise::add_linear* linear_form() const noexcept { return linear_.get(); }
  /// The lines held inputs run on (held_lines.hpp; null in scalar builds).
  const detail::eltwise::held_line_sides* held_lines() const noexcept { return lines_.get(); }
  const reference::add_params& params() const noexcept { return params_; }

  void operator()(tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> out) const {
    if (!reference::detail::check_binary_views(a, b, out, reference::detail::add_view_names)) return;
    if (!require(params_.valid, errc::invalid_argument, "add: params were not built by a successful make_add_params"))
      return;
    if constexpr (detail::eltwise::vector_kernels) {
      if constexpr (detail::eltwise::native_path::linear_add)
        if (linear_)
          return detail::eltwise::add_linear_broadcast<R>(a, b, out, params_, *linear_, tables_.get(), lines_.get());
      if constexpr (detail::eltwise::native_path::add_tables)
        if (tables_) return detail::eltwise::add_tables_broadcast<R>(a, b, out, params_, *tables_, lines_.get());
      detail::eltwise::add_broadcast<R>(a, b, out, params_, lines_.get());
    } else {
      reference::add<R, T>(a, b, out, params_);
    }
  }

 private:
  reference::add_params params_{};
  std::shared_ptr<const detail::eltwise::add_tables> tables_;      ///< null: run the arithmetic pipeline
  std::shared_ptr<const detail::eltwise::add_linear> linear_;      ///< null: no linear form in front of either
  std::shared_ptr<const detail::eltwise::held_line_sides> lines_;  ///< null: held inputs run as terms
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
      : mul(reference::make_mul_params<T, R>(a, b, out, act)) {}
  explicit mul(const reference::mul_params& params) : params_(params) {
    if constexpr (detail::eltwise::vector_kernels)
      if (valid())
        lines_ = detail::make_shared<detail::eltwise::held_line_sides>(detail::eltwise::make_mul_lines<R, T>(params_));
  }

  bool valid() const noexcept { return params_.valid && params_.round == R; }
  const reference::mul_params& params() const noexcept { return params_; }
  /// The lines held inputs run on (held_lines.hpp; null in scalar builds).
  const detail::eltwise::held_line_sides* held_lines() const noexcept { return lines_.get(); }

  void operator()(tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> out) const {
    if (!reference::detail::check_binary_views(a, b, out, reference::detail::mul_view_names)) return;
    if (!require(valid(), errc::invalid_argument,
                 "mul: params were not built by a successful make_mul_params for this rounding mode"))
      return;
    if constexpr (detail::eltwise::vector_kernels)
      detail::eltwise::mul_broadcast<detail::eltwise::native_path, R>(a, b, out, params_, lines_.get());
    else
      reference::mul<R, T>(a, b, out, params_);
  }

 private:
  reference::mul_params params_{};
  std::shared_ptr<const detail::eltwise::held_line_sides> lines_;  ///< null: held inputs run as terms
};

namespace detail::eltwise {

/// A function object rather than a function template: see ops/pool.hpp (argument-dependent lookup).
template <quantized_element T>
struct concat_fn {
  void operator()(std::span<const reference::concat_input<T>> inputs, tensor_view<T> out,
                  quant_params out_quant) const {
    if (!check(inputs, out, out_quant)) return;
    int first_channel = 0;
    for (const reference::concat_input<T>& input : inputs) {
      const tensor_view<T> slice = out.channel_slice(first_channel, input.view.channels());
      first_channel += input.view.channels();
      if (slice.dims().elements() == 0) continue;
      if (input.quant == out_quant)
        copy(input.view, slice);
      else
        rescale_into(input.view, slice, reference::detail::concat_rescale(input.quant, out_quant));
    }
  }

 private:
  // The views, their extents and the quantizations (the rescales concat needs must be finite).
  static bool check(std::span<const reference::concat_input<T>> inputs, const tensor_view<T>& out,
                    quant_params out_quant) {
    if (!check_view(out, "concat: output")) return false;
    int channel_total = 0;
    bool needs_rescale = false;
    for (const reference::concat_input<T>& input : inputs) {
      if (!check_view(input.view, "concat: input")) return false;
      if (!require(input.view.height() == out.height() && input.view.width() == out.width() &&
                       input.view.batch() == out.batch(),
                   errc::shape_mismatch, "concat: every input must have the output's height, width and batch"))
        return false;
      channel_total += input.view.channels();
      needs_rescale = needs_rescale || !(input.quant == out_quant);
      if (!require(
              input.quant == out_quant || (reference::detail::is_usable_scale(input.quant.scale) &&
                                           reference::detail::is_representable_zero_point<T>(input.quant.zero_point)),
              errc::invalid_argument, "concat: an input's scale or zero point is unusable"))
        return false;
    }
    return require(channel_total == out.channels(), errc::shape_mismatch,
                   "concat: the inputs' channel counts must add up to the output's") &&
           require(!needs_rescale || (reference::detail::is_usable_scale(out_quant.scale) &&
                                      reference::detail::is_representable_zero_point<T>(out_quant.zero_point) &&
                                      reference::detail::rescales_are_finite<T>(inputs, out_quant)),
                   errc::invalid_argument,
                   "concat: the output's scale or zero point is unusable, or a rescale overflows");
  }

  // An input of the output's quantization: bytes copied (nothing where it already is the slice).
  static void copy(const tensor_view<const T>& input, const tensor_view<T>& slice) {
    if (same_view(input, slice)) return;  // already in place
    if (input.is_dense() && slice.is_dense()) {
      std::memcpy(slice.data(), input.data(), flat_elements(slice) * sizeof(T));
      return;
    }
    const auto channels = static_cast<std::size_t>(slice.channels());
    for (int n = 0; n < slice.batch(); ++n)
      for (int y = 0; y < slice.height(); ++y)
        for (int x = 0; x < slice.width(); ++x)
          std::memcpy(slice.pixel(n, y, x), input.pixel(n, y, x), channels * sizeof(T));
  }

  // An input of another quantization: every element rescaled to the output's.
  static void rescale_into(const tensor_view<const T>& input, const tensor_view<T>& slice,
                           const reference::detail::concat_rescale& rescale) {
    if constexpr (vector_kernels)
      if (std::isfinite(rescale.scale) && std::isfinite(rescale.bias)) {
        rescale_slice<T>(input, slice, rescale, input.is_dense() && slice.is_dense(), flat_elements(slice));
        return;
      }
    // Scalar builds (concat refused rescales that overflow above): the reference's element loop.
    const auto channels = static_cast<std::size_t>(slice.channels());
    for (int n = 0; n < slice.batch(); ++n)
      for (int y = 0; y < slice.height(); ++y)
        for (int x = 0; x < slice.width(); ++x) {
          const T* source = input.pixel(n, y, x);
          T* destination = slice.pixel(n, y, x);
          for (std::size_t c = 0; c < channels; ++c) destination[c] = rescale(source[c]);
        }
  }

  static std::size_t flat_elements(const tensor_view<T>& slice) noexcept {
    return slice.dims().elements() * static_cast<std::size_t>(slice.batch());
  }
};

}  // namespace detail::eltwise

/// Channel concat, equal bit for bit to reference::concat<T> (same contract: inputs in order fill consecutive
/// channel ranges of out; out may be a channel slice of a wider tensor; an input may be exactly its destination
/// slice, other overlaps are not allowed). On misuse nothing is written.
template <quantized_element T>
inline constexpr detail::eltwise::concat_fn<T> concat{};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
