// Reference kernels for TFLite's "16x8" quantization: int16 activations with zero point 0, int8 symmetric
// per-channel filters, int64 biases (the converter's EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
// mode). The oracle for a network whose precision-critical tensors are 16-bit (docs/decisions.md, "Selfie accuracy:
// 16-bit activations scoped"); TFLite's reference semantics:
//   conv2d / depthwise / pointwise  acc = sum of x * w in int64 (no offsets: both zero points are 0), + bias (int64),
//                                   MultiplyByQuantizedMultiplier(int64 acc, M, shift), clamp, int16 (no zero point);
//   transpose conv                  the same scatter of x * w into int64 accumulators, then the same epilogue;
//   add                             AddFunc as for 8 bits with the inputs shifted left by 15 instead of 20;
//   requantize (QUANTIZE)           int8 <-> int16: zp_out + MultiplyByQuantizedMultiplier(x - zp_in, s_in / s_out);
//   mul                             MulElementwise / BroadcastMul4DSlow: MultiplyByQuantizedMultiplier(a * b, M);
//   average pool                    the int32 sum of the in-image taps / their count, rounded half away from zero;
//   mean over height and width      the int32 sum, MultiplyByQuantizedMultiplier by s_in / s_out / count (folded);
//   logistic                        a 256-entry sigmoid table, linear interpolation, output scale 1/32768;
//   hard swish                      TFLite Micro's int16 kernel, three 32-bit MultiplyByQuantizedMultiplier steps;
//   resize bilinear                 ResizeBilinearInteger<int16_t>: Q10 positions, Q20 weights in int64.
// The int64 MultiplyByQuantizedMultiplier rounds the Q31 multiplier to Q15 first and shifts once (ties up), in the
// default and in the single-rounding build alike. Plain loops: clarity wins over speed.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/accumulate.hpp"
#include "mosaiq/reference/conv.hpp"
#include "mosaiq/reference/depthwise.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/reference/hard_swish.hpp"
#include "mosaiq/reference/pointwise.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/reference/resize.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

using i16 = std::int16_t;

/// The Q15 multiplier of TFLite's 64-bit MultiplyByQuantizedMultiplier: the Q31 one rounded half up, saturating at
/// 0x7FFF (multiplier >= 0).
constexpr std::int32_t q15_multiplier(std::int32_t multiplier) noexcept {
  return multiplier < 0x7FFF0000 ? static_cast<std::int32_t>((std::int64_t{multiplier} + (1 << 15)) >> 16) : 0x7FFF;
}

/// TFLite's MultiplyByQuantizedMultiplier(int64_t x, int32_t multiplier, int shift) (kernels/internal/common.h):
/// the Q31 multiplier rounded to Q15 (saturating at 0x7FFF), one product, one shift by 15 - shift rounding half up.
/// Defined for multiplier >= 0, shift in [-31, 7] and |x| < 2^47 (TFLite's DCHECKs; the result then fits int32 for
/// the layers that use it).
constexpr std::int32_t multiply_by_quantized_multiplier_64(std::int64_t x, quantized_multiplier q) noexcept {
  const std::int64_t reduced = q15_multiplier(q.multiplier);
  const int total_shift = 15 - q.shift;
  return static_cast<std::int32_t>((x * reduced + (std::int64_t{1} << (total_shift - 1))) >> total_shift);
}

/// multiply_by_quantized_multiplier_64 for int32 accumulators as the single-rounding scale of mosaiq's epilogues:
/// (x * M15 + 2^(14 - shift)) >> (15 - shift) equals (x * (M15 << 16) + 2^(30 - shift)) >> (31 - shift), both terms
/// scaled by 2^16 (shift <= 7 keeps 14 - shift >= 0), so multiply_by_quantized_multiplier<rounding::single_round>
/// with this scale is TFLite's 16x8 requantization, whatever rounding the build's 8-bit layers use. The 16x8 SIMD
/// kernels' epilogue (tests/pointwise16x8_test.cpp proves the identity on random and extreme values).
constexpr requant_scale single_round_scale_16x8(quantized_multiplier q) noexcept {
  return {static_cast<std::int32_t>(static_cast<std::uint32_t>(q15_multiplier(q.multiplier)) << 16), 0, 31 - q.shift};
}

/// The fused activation's clamp for an int16 output of scale `output_scale` (zero point 0): TFLite's
/// CalculateActivationRangeQuantized with the int16 limits.
inline clamp_range activation_range_16(activation act, float output_scale) noexcept {
  constexpr std::int32_t qmin = std::numeric_limits<i16>::min(), qmax = std::numeric_limits<i16>::max();
  const quant_params out{output_scale, 0};
  const auto at = [&](float real) { return mosaiq::detail::quantize_for_range(real, out); };
  switch (act) {
    case activation::none:
      return {qmin, qmax};
    case activation::relu:
      return {std::max(qmin, at(0.0f)), qmax};
    case activation::relu6:
      return {std::max(qmin, at(0.0f)), std::min(qmax, at(6.0f))};
    case activation::relu_n1_to_1:
      return {std::max(qmin, at(-1.0f)), std::min(qmax, at(1.0f))};
  }
  return {qmin, qmax};
}

/// What a 16x8 conv-like layer needs besides its weights: one multiplier per output channel (or one for all) and
/// the clamp. Zero points are 0 by definition of the mode.
struct conv_requant_16x8 {
  clamp_range clamp{};
  std::vector<quantized_multiplier> multipliers;

  const quantized_multiplier& multiplier_for(int output_channel) const noexcept {
    return multipliers.size() == 1 ? multipliers.front() : multipliers[static_cast<std::size_t>(output_channel)];
  }
};

/// TFLite's Prepare for an int16 conv-like layer: multiplier = input_scale * filter_scale / output_scale in double
/// per channel, QuantizeMultiplier; the clamp from the activation. Reports invalid_argument and returns an empty
/// bundle (which the kernels refuse) for a non-positive scale or a multiplier the int64 requantization cannot take
/// (shift above 7).
inline conv_requant_16x8 make_conv_requant_16x8(float input_scale, std::span<const float> filter_scales,
                                                float output_scale, activation act) {
  const auto positive = [](float s) { return std::isfinite(s) && s > 0.0f; };
  if (!require(!filter_scales.empty(), errc::invalid_argument, "16x8 conv requant: at least one filter scale") ||
      !require(positive(input_scale) && positive(output_scale), errc::invalid_argument,
               "16x8 conv requant: input and output scales must be finite and positive"))
    return {};
  conv_requant_16x8 q{.clamp = activation_range_16(act, output_scale), .multipliers = {}};
  for (const float filter_scale : filter_scales) {
    if (!require(std::isfinite(filter_scale) && filter_scale >= 0.0f, errc::invalid_argument,
                 "16x8 conv requant: filter scales must be finite and non-negative"))
      return {};
    const quantized_multiplier m =
        quantize_multiplier(conv_real_multiplier_per_channel(input_scale, filter_scale, output_scale));
    if (!require(m.shift >= -31 && m.shift <= 7, errc::invalid_argument,
                 "16x8 conv requant: input_scale * filter_scale / output_scale must be below 2^7"))
      return {};
    q.multipliers.push_back(m);
  }
  return q;
}

namespace detail {

inline bool check_conv_requant_16x8(const conv_requant_16x8& q, int output_channels) {
  const std::size_t count = q.multipliers.size();
  return require(count == 1 || (output_channels >= 0 && count == static_cast<std::size_t>(output_channels)),
                 errc::invalid_argument, "16x8 conv requant: need one multiplier, or one per output channel") &&
         require(q.clamp.min >= std::numeric_limits<i16>::min() && q.clamp.max <= std::numeric_limits<i16>::max() &&
                     q.clamp.min <= q.clamp.max,
                 errc::invalid_argument, "16x8 conv requant: clamp must be a non-empty range inside int16");
}

/// Accumulator to int16: + bias, the int64 requantization, clamp.
inline i16 requantize_16x8(std::int64_t acc, const std::int64_t* bias, int out_c, const conv_requant_16x8& q) {
  if (bias != nullptr) acc += bias[out_c];
  const std::int32_t v = multiply_by_quantized_multiplier_64(acc, q.multiplier_for(out_c));
  return static_cast<i16>(std::clamp(v, q.clamp.min, q.clamp.max));
}

/// Grouped convolution (depthwise, pointwise, conv2d) in 16x8: the shared accumulation loop in int64, no offsets.
inline void convolve_16x8(const tensor_view<const i16>& input, const i8* filter, const std::int64_t* bias,
                          const tensor_view<i16>& output, const grouped_conv& conv, const conv_requant_16x8& q) {
  if (!check_grouped_conv(input, filter, output, conv) || !check_conv_requant_16x8(q, output.channels())) return;
  convolve<std::int64_t>(input, filter, output, conv, std::int64_t{0}, std::int64_t{0},
                         [&](int out_c, std::int64_t acc) { return requantize_16x8(acc, bias, out_c, q); });
}

}  // namespace detail

/// 16x8 1x1 convolution: filter [Cout][Cin] int8, bias Cout int64 or nullptr. Misuse leaves `output` untouched.
inline void pointwise_conv_16x8(tensor_view<const i16> input, const i8* filter, const std::int64_t* bias,
                                tensor_view<i16> output, const conv_requant_16x8& q) {
  detail::convolve_16x8(input, filter, bias, output, detail::pointwise_as_grouped(input.channels(), output.channels()),
                        q);
}

/// 16x8 convolution: filter [Cout][KH][KW][Cin] int8; taps outside the image are skipped (padding with 0).
inline void conv2d_16x8(tensor_view<const i16> input, const i8* filter, const std::int64_t* bias,
                        tensor_view<i16> output, const conv2d_params& p, const conv_requant_16x8& q) {
  detail::convolve_16x8(input, filter, bias, output, detail::conv2d_as_grouped(p, input.channels(), output.channels()),
                        q);
}

/// 16x8 depthwise convolution: filter [KH][KW][C*M] int8.
inline void depthwise_conv_16x8(tensor_view<const i16> input, const i8* filter, const std::int64_t* bias,
                                tensor_view<i16> output, const depthwise_params& p, const conv_requant_16x8& q) {
  detail::convolve_16x8(input, filter, bias, output, detail::depthwise_as_grouped(p, input.channels()), q);
}

/// 16x8 transposed convolution (TFLite's int16 TRANSPOSE_CONV: int64 scratch accumulators): the scatter of
/// reference::transpose_conv, then bias, the int64 requantization and the clamp per output element.
inline void transpose_conv_16x8(tensor_view<const i16> input, const i8* filter, const std::int64_t* bias,
                                tensor_view<i16> output, const transpose_conv_params& p, const conv_requant_16x8& q,
                                std::span<std::int64_t> accumulators) {
  const std::size_t count = static_cast<std::size_t>(output.batch()) * output.dims().elements();
  if (!detail::transpose_conv::check(input, filter, output, p) ||
      !detail::check_conv_requant_16x8(q, output.channels()) ||
      !require(accumulators.size() >= count, errc::invalid_argument,
               "transpose_conv_16x8: fewer accumulators than output elements"))
    return;
  std::fill_n(accumulators.begin(), count, std::int64_t{0});
  const auto at = [&](int n, int y, int x, int c) -> std::int64_t& {
    const std::size_t pixel = (static_cast<std::size_t>(n) * output.height() + y) * output.width() + x;
    return accumulators[pixel * static_cast<std::size_t>(output.channels()) + c];
  };
  detail::transpose_conv::scatter(input, filter, output, p, [&](int n, int y, int x, int c, i16 v, i8 w) {
    at(n, y, x, c) += std::int64_t{v} * std::int64_t{w};
  });
  for (int n = 0; n < output.batch(); ++n)
    for (int y = 0; y < output.height(); ++y)
      for (int x = 0; x < output.width(); ++x)
        for (int c = 0; c < output.channels(); ++c)
          output.pixel(n, y, x)[c] = detail::requantize_16x8(at(n, y, x, c), bias, c, q);
}

/// The same with accumulators of its own (allocates them).
inline void transpose_conv_16x8(tensor_view<const i16> input, const i8* filter, const std::int64_t* bias,
                                tensor_view<i16> output, const transpose_conv_params& p, const conv_requant_16x8& q) {
  std::vector<std::int64_t> accumulators(static_cast<std::size_t>(output.batch()) * output.dims().elements());
  transpose_conv_16x8(input, filter, bias, output, p, q, accumulators);
}

/// What TFLite's ADD Prepare derives for int16 inputs and output with zero points 0 (the general, not power-of-two,
/// path): as make_add_params with the inputs shifted left by 15 (|x| <= 2^15, so 2 * 2^15 << 15 fits int32).
struct add_params_16 {
  static constexpr int left_shift = 15;
  quantized_multiplier input1_multiplier{}, input2_multiplier{}, output_multiplier{};
  clamp_range clamp{};
  bool valid = false;
};

/// Reports invalid_argument and returns invalid params for a non-positive scale or an output multiplier not below 1.
inline add_params_16 make_add_params_16(float a_scale, float b_scale, float out_scale,
                                        activation act = activation::none) {
  const auto positive = [](float s) { return std::isfinite(s) && s > 0.0f; };
  if (!require(positive(a_scale) && positive(b_scale) && positive(out_scale), errc::invalid_argument,
               "16-bit add: every scale must be finite and positive"))
    return {};
  const double twice_max_input_scale = static_cast<double>(2.0f * std::max(a_scale, b_scale));
  const double real1 = static_cast<double>(a_scale) / twice_max_input_scale;
  const double real2 = static_cast<double>(b_scale) / twice_max_input_scale;
  const double real_out =
      twice_max_input_scale / static_cast<double>(static_cast<float>(1 << add_params_16::left_shift) * out_scale);
  const auto below_one = [](double r) { return r > 0.0 && r < 1.0; };
  if (!require(below_one(real1) && below_one(real2) && below_one(real_out), errc::invalid_argument,
               "16-bit add: 2 * max(input scales) must be below 2^15 * output scale"))
    return {};
  add_params_16 p{.input1_multiplier = quantize_multiplier(real1),
                  .input2_multiplier = quantize_multiplier(real2),
                  .output_multiplier = quantize_multiplier(real_out),
                  .clamp = activation_range_16(act, out_scale),
                  .valid = false};
  p.valid = require(p.input1_multiplier.shift <= 0 && p.input2_multiplier.shift <= 0 && p.output_multiplier.shift <= 0,
                    errc::invalid_argument, "16-bit add: a multiplier rounded up to 1");
  return p;
}

/// add_params_16's three multipliers decoded for rounding R (once per call, or once at load by a kernel).
struct add_scales_16 {
  requant_scale input1{}, input2{}, output{};
  clamp_range clamp{};
};

template <rounding R>
constexpr add_scales_16 add_scales_16_of(const add_params_16& p) noexcept {
  return {prepare_scale<R>(p.input1_multiplier), prepare_scale<R>(p.input2_multiplier),
          prepare_scale<R>(p.output_multiplier), p.clamp};
}

/// One element of add_16: each input shifted left by 15 and scaled to the common sum, the output multiplier, the clamp.
template <rounding R>
constexpr i16 add_16_element(i16 a, i16 b, const add_scales_16& s) noexcept {
  const std::int32_t scaled1 =
      multiply_by_quantized_multiplier<R>(std::int32_t{a} * (1 << add_params_16::left_shift), s.input1);
  const std::int32_t scaled2 =
      multiply_by_quantized_multiplier<R>(std::int32_t{b} * (1 << add_params_16::left_shift), s.input2);
  const std::int32_t raw = multiply_by_quantized_multiplier<R>(scaled1 + scaled2, s.output);
  return static_cast<i16>(std::clamp(raw, s.clamp.min, s.clamp.max));
}

/// out = a + b in int16 (TFLite's AddFunc with left shift 15), same-shape or broadcast as reference::add. R is the
/// rounding of MultiplyByQuantizedMultiplierSmallerThanOneExp. On misuse nothing is written.
template <rounding R>
void add_16(tensor_view<const i16> a, tensor_view<const i16> b, tensor_view<i16> out, const add_params_16& p) {
  if (!detail::check_binary_views(a, b, out, detail::add_view_names)) return;
  if (!require(p.valid, errc::invalid_argument, "16-bit add: params were not built by make_add_params_16")) return;
  const add_scales_16 scales = add_scales_16_of<R>(p);
  detail::for_each_broadcast(a, b, out, [&](i16 va, i16 vb) { return add_16_element<R>(va, vb, scales); });
}

/// TFLite's QUANTIZE between integer types (Requantize): out = zp_out + MultiplyByQuantizedMultiplier(x - zp_in, M)
/// with M from in.scale / out.scale, clamped to the output type. In and Out are i8 or i16 (an int16 side has zero
/// point 0). Reports invalid_argument and writes nothing for unusable scales or differing shapes.
template <rounding R, class In, class Out>
requires((std::same_as<In, i8> || std::same_as<In, i16>)&&(
    std::same_as<Out, i8> || std::same_as<Out, i16>)) void requantize(std::type_identity_t<tensor_view<const In>> input,
                                                                      quant_params in, tensor_view<Out> output,
                                                                      quant_params out) {
  if (!check_view(input, "requantize: input") || !check_view(output, "requantize: output") ||
      !require(input.dims() == output.dims() && input.batch() == output.batch(), errc::shape_mismatch,
               "requantize: input and output shapes differ"))
    return;
  const quantized_multiplier m = quantize_multiplier<R>(static_cast<double>(in.scale) / static_cast<double>(out.scale));
  if (!require(std::isfinite(in.scale) && in.scale > 0.0f && std::isfinite(out.scale) && out.scale > 0.0f &&
                   is_valid_multiplier(m),
               errc::invalid_argument, "requantize: scales must be finite, positive and within 2^30 of each other"))
    return;
  const requant_scale s = prepare_scale<R>(m);
  constexpr std::int32_t lo = std::numeric_limits<Out>::min(), hi = std::numeric_limits<Out>::max();
  for (int n = 0; n < input.batch(); ++n)
    for (int y = 0; y < input.height(); ++y)
      for (int x = 0; x < input.width(); ++x)
        for (int c = 0; c < input.channels(); ++c) {
          const std::int32_t v =
              multiply_by_quantized_multiplier<R>(std::int32_t{input(n, y, x, c)} - in.zero_point, s) + out.zero_point;
          output(n, y, x, c) = static_cast<Out>(std::clamp(v, lo, hi));
        }
}

namespace detail {

/// An int32 result clamped into an int16 range (a fused activation's, or the whole type's).
constexpr i16 clamp_16(std::int32_t v, clamp_range range) noexcept {
  return static_cast<i16>(std::clamp(v, range.min, range.max));
}

inline constexpr clamp_range int16_range{std::numeric_limits<i16>::min(), std::numeric_limits<i16>::max()};

inline bool is_usable_scale_16(float scale) noexcept { return std::isfinite(scale) && scale > 0.0f; }

}  // namespace detail

// ---------------------------------------------------------------------------------------------------------------
// MUL
// ---------------------------------------------------------------------------------------------------------------

/// What TFLite's MUL Prepare derives for int16 inputs and output (16x8: every zero point 0, which TFLite enforces):
/// the real multiplier s_a * s_b / s_out computed in float, QuantizeMultiplier for rounding `round`; the clamp.
struct mul_params_16 {
  quantized_multiplier output_multiplier{};
  clamp_range clamp{};
  rounding round = rounding::tflite_reference;
  bool valid = false;
};

/// Reports invalid_argument and returns invalid params for a scale that is not finite and positive, or a multiplier
/// of 2^30 or more (outside the domain of both roundings).
template <rounding R = rounding::tflite_reference>
mul_params_16 make_mul_params_16(float a_scale, float b_scale, float out_scale, activation act = activation::none) {
  if (!require(detail::is_usable_scale_16(a_scale) && detail::is_usable_scale_16(b_scale) &&
                   detail::is_usable_scale_16(out_scale),
               errc::invalid_argument, "16-bit mul: every scale must be finite and positive"))
    return {};
  const float real_multiplier = a_scale * b_scale / out_scale;
  const quantized_multiplier m = quantize_multiplier<R>(static_cast<double>(real_multiplier));
  if (!require(std::isfinite(real_multiplier) && is_valid_multiplier(m), errc::invalid_argument,
               "16-bit mul: s_a * s_b / s_out must be below 2^30"))
    return {};
  return {.output_multiplier = m, .clamp = activation_range_16(act, out_scale), .round = R, .valid = true};
}

/// One element of mul_16: the int32 product, the output multiplier (rounding R), the clamp.
template <rounding R>
constexpr i16 mul_16_element(i16 a, i16 b, requant_scale scale, clamp_range clamp) noexcept {
  return detail::clamp_16(multiply_by_quantized_multiplier<R>(std::int32_t{a} * b, scale), clamp);
}

/// out = a * b in int16 (TFLite's reference_integer_ops::Mul / BroadcastMul4DSlow for int16_t): the int32 product
/// (|a b| <= 2^30), MultiplyByQuantizedMultiplier with rounding R, the clamp. Broadcasting and aliasing as
/// reference::mul: the per-channel form the squeeze-and-excitation blocks and attention gates use is b of shape
/// 1 x 1 x C. A multiplier of 1 or more shifts the product left and wraps as TFLite's release builds do. On misuse
/// nothing is written.
template <rounding R>
void mul_16(tensor_view<const i16> a, tensor_view<const i16> b, tensor_view<i16> out, const mul_params_16& p) {
  if (!detail::check_binary_views(a, b, out, detail::mul_view_names)) return;
  if (!require(p.valid && p.round == R, errc::invalid_argument,
               "16-bit mul: params were not built by make_mul_params_16 for this rounding mode"))
    return;
  const requant_scale scale = prepare_scale<R>(p.output_multiplier);
  detail::for_each_broadcast(a, b, out, [&](i16 va, i16 vb) { return mul_16_element<R>(va, vb, scale, p.clamp); });
}

// ---------------------------------------------------------------------------------------------------------------
// AVERAGE_POOL_2D (the selfie model's whole-map means are average pools whose window is the whole map)
// ---------------------------------------------------------------------------------------------------------------

/// The most taps an int16 average pool takes: 65535 * 32768 + 65535 / 2 still fits TFLite's int32 sum.
inline constexpr std::int64_t max_average_pool_taps_16 = 65535;

namespace detail {

/// What an int16 average pool runs with once its views and params are checked.
struct average_pool_16_plan {
  window_geometry geometry;
  clamp_range clamp;
};

/// average_pool_16's checks (the pool's own, a window of more than max_average_pool_taps_16 taps, an activation
/// without a usable scale), shared with the SIMD op: the plan, or nothing after reporting.
inline std::optional<average_pool_16_plan> resolve_average_pool_16(const tensor_view<const i16>& in,
                                                                   const tensor_view<i16>& out,
                                                                   const pool_params& params, float scale) {
  const std::optional<window_geometry> geometry = resolve_pool(in, out, params);
  if (!geometry) return std::nullopt;
  if (!require(std::int64_t{params.kernel.h} * params.kernel.w <= max_average_pool_taps_16, errc::invalid_argument,
               "16-bit average pool: at most 65535 taps per window (the int32 sum)") ||
      !require(params.act == activation::none || is_usable_scale_16(scale), errc::invalid_argument,
               "16-bit average pool: a fused activation needs a finite positive scale"))
    return std::nullopt;
  return average_pool_16_plan{*geometry, activation_range_16(params.act, scale)};
}

}  // namespace detail

/// Average pool in int16 (TFLite's reference_integer_ops::AveragePool for int16_t): the in-image taps summed in
/// int32, divided by their count rounded half away from zero, clamped by the fused activation. Input and output
/// share `scale` (TFLite requires equal quantization, zero points 0); it only matters for the activation's clamp.
/// On misuse (the pool's own checks, a window of more than max_average_pool_taps_16 taps, an activation without a
/// usable scale) nothing is written.
inline void average_pool_16(tensor_view<const i16> in, tensor_view<i16> out, const pool_params& params,
                            float scale = 1.0f) {
  const std::optional<detail::average_pool_16_plan> plan = detail::resolve_average_pool_16(in, out, params, scale);
  if (!plan) return;
  detail::average_windows<i16>(in, out, plan->geometry, params, plan->clamp);
}

// ---------------------------------------------------------------------------------------------------------------
// MEAN over height and width (mosaiq's global_average_pool layer; the 144x256 selfie model's squeeze pools)
// ---------------------------------------------------------------------------------------------------------------

/// The most pixels an int16 MEAN sums: 65536 * 32768 still fits TFLite's int32 sum (all -32768 is exactly INT32_MIN).
inline constexpr std::int64_t max_mean_pixels_16 = 65536;

/// What TFLite's int16 MEAN over axes {1, 2} (keep_dims) runs with: PrepareMeanOrSum's QuantizeMultiplier of the
/// double s_in / s_out, with QuantizedMeanOrSum's 1 / pixel_count folded in (detail::fold_mean_count).
struct mean_params_16 {
  quantized_multiplier multiplier{};
  int pixel_count = 0;
  rounding round = rounding::tflite_reference;
  bool valid = false;
};

/// Reports invalid_argument and returns invalid params for a scale that is not finite and positive, a pixel count
/// outside [1, max_mean_pixels_16], or s_in / s_out outside the multiplier domain of both roundings (2^30 or more).
template <rounding R = rounding::tflite_reference>
mean_params_16 make_mean_params_16(float input_scale, float output_scale, int pixel_count) {
  if (!require(detail::is_usable_scale_16(input_scale) && detail::is_usable_scale_16(output_scale),
               errc::invalid_argument, "16-bit mean: scales must be finite and positive") ||
      !require(pixel_count >= 1 && pixel_count <= max_mean_pixels_16, errc::invalid_argument,
               "16-bit mean: height * width must be in [1, 65536] (the int32 sum)"))
    return {};
  const quantized_multiplier ratio =
      quantize_multiplier<R>(static_cast<double>(input_scale) / static_cast<double>(output_scale));
  if (!require(is_valid_multiplier(ratio), errc::invalid_argument, "16-bit mean: s_in / s_out must be below 2^30"))
    return {};
  return {
      .multiplier = detail::fold_mean_count(ratio, pixel_count), .pixel_count = pixel_count, .round = R, .valid = true};
}

namespace detail {

/// mean_16's checks, shared with the SIMD op: whether the views and params fit, after reporting what does not.
template <rounding R>
bool check_mean_16(const tensor_view<const i16>& in, const tensor_view<i16>& out, const mean_params_16& p) {
  if (!check_view(in, "16-bit mean: input") || !check_view(out, "16-bit mean: output")) return false;
  return require(out.dims() == shape{1, 1, in.channels()} && out.batch() == in.batch(), errc::shape_mismatch,
                 "16-bit mean: output must be 1 x 1 x channels with the input's batch") &&
         require(p.valid && p.round == R && std::int64_t{in.height()} * in.width() == p.pixel_count,
                 errc::invalid_argument,
                 "16-bit mean: params were not built by make_mean_params_16 for this rounding and height * width");
}

}  // namespace detail

/// Mean over height and width of every channel in int16 (TFLite's MEAN with keep_dims over axes {1, 2}, zero points
/// 0: reference_ops::QuantizedMeanOrSum, which both TFLite kernel variants run for int16): the int32 sum of the
/// channel's pixels, MultiplyByQuantizedMultiplier (rounding R) by the folded multiplier, clamped to int16. Output
/// 1 x 1 x C with the input's batch. Rounds twice in the reference build (5 / 4 is 2 there, 1 under single rounding).
/// No fused activation (MEAN has none). On misuse (views, shapes, params of another pixel count or rounding) nothing
/// is written.
template <rounding R>
void mean_16(tensor_view<const i16> in, tensor_view<i16> out, const mean_params_16& p) {
  if (!detail::check_mean_16<R>(in, out, p)) return;
  const requant_scale scale = prepare_scale<R>(p.multiplier);
  for (int n = 0; n < in.batch(); ++n)
    for (int c = 0; c < in.channels(); ++c) {
      std::int32_t sum = 0;
      for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x) sum += in(n, y, x, c);
      out(n, 0, 0, c) = detail::clamp_16(multiply_by_quantized_multiplier<R>(sum, scale), detail::int16_range);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// LOGISTIC
// ---------------------------------------------------------------------------------------------------------------

/// The fixed quantization of an int16 logistic output: scale 1/32768, zero point 0 (TFLite requires it).
inline constexpr quant_params logistic_output_quant_16{1.0f / 32768.0f, 0};

/// What TFLite's int16 LOGISTIC Prepare derives from the input scale: the input is brought to the table's scale
/// 1 / (3 * 4096) by (x * input_multiplier + rounding) >> input_left_shift, the multiplier a 15-bit integer.
struct logistic_params_16 {
  std::int32_t input_multiplier = 0;
  int input_left_shift = 0;
  bool valid = false;
};

/// TFLite's Prepare: an input scale of exactly 2^-12 (CheckedLog2: log2 within 1e-3 of an integer) is the power-of-two
/// case, multiplier 3 and no shift (TFLite stores 0 and substitutes 3 << 0 when it runs); any other scale gives
/// multiplier = scale * 4096 * 3 in double, doubled (with the shift counting) while it is at most 32767 / 2 and the
/// shift at most 30, then truncated. Reports invalid_argument for a scale that is not finite and positive or above
/// 32767 / 12288 (TFLite Micro's check that the multiplier fits 15 bits, so x * multiplier fits int32).
inline logistic_params_16 make_logistic_params_16(float input_scale) {
  if (!require(detail::is_usable_scale_16(input_scale), errc::invalid_argument,
               "16-bit logistic: the input scale must be finite and positive"))
    return {};
  const float log2_scale = std::log(input_scale) * (1.0f / std::log(2.0f));
  const float log2_rounded = std::round(log2_scale);
  if (std::fabs(log2_scale - log2_rounded) < 1e-3f && static_cast<int>(log2_rounded) == -12)
    return {.input_multiplier = 3, .input_left_shift = 0, .valid = true};
  double multiplier = static_cast<double>(input_scale) * 4096.0 * 3.0;
  int shift = 0;
  while (multiplier <= 32767.0 / 2.0 && shift <= 30) {
    ++shift;
    multiplier *= 2.0;
  }
  if (!require(multiplier <= 32767.0, errc::invalid_argument,
               "16-bit logistic: the input scale must be at most 32767 / 12288 (inputs within +-87000)"))
    return {};
  return {.input_multiplier = static_cast<std::int32_t>(multiplier), .input_left_shift = shift, .valid = true};
}

namespace detail {

/// TFLite's sigmoid_table_uint16: sigmoid(i / 24) in unsigned Q16, i = 0..255, its published values (they are
/// within one unit of round(65536 sigmoid(i / 24)) but not that formula, so they are data here, not computed).
inline constexpr std::uint16_t sigmoid_table_q16[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535};

}  // namespace detail

/// One element of TFLite's int16 logistic (reference_integer_ops::Logistic): x on the table's scale (3 * 4096 per
/// unit), |x| / 512 the table index (steps of 1/24), its low 9 bits interpolating linearly to the next entry; 1 - s
/// for negative inputs (sigmoid is odd around 1/2); back to Q15 rounding half up. Output in [1, 32767].
constexpr i16 logistic_16_element(i16 x, const logistic_params_16& p) noexcept {
  const std::int32_t rounding_term = p.input_left_shift > 0 ? 1 << (p.input_left_shift - 1) : 0;
  const std::int32_t input = (std::int32_t{x} * p.input_multiplier + rounding_term) >> p.input_left_shift;
  const auto magnitude = static_cast<std::uint32_t>(input < 0 ? -input : input);
  const std::uint32_t index = magnitude >> 9;
  std::uint32_t q25 = 0x7FFFu << 10;  // saturated beyond the table (|x| >= 255 / 24)
  if (index < 255) {
    const std::uint32_t lower = detail::sigmoid_table_q16[index], upper = detail::sigmoid_table_q16[index + 1];
    q25 = (lower << 9) + (magnitude & 0x1FFu) * (upper - lower);
  }
  q25 = input >= 0 ? q25 + (1u << 9) : (1u << 25) - q25 + (1u << 9) - 1;
  return static_cast<i16>(q25 >> 10);
}

/// out = sigmoid(in): input of any scale (params from make_logistic_params_16), output at logistic_output_quant_16.
/// Same extents required (any strides; out may be in). On misuse nothing is written.
inline void logistic_16(tensor_view<const i16> in, tensor_view<i16> out, const logistic_params_16& p) {
  if (!require(p.valid, errc::invalid_argument, "16-bit logistic: params were not built by make_logistic_params_16"))
    return;
  static constexpr const char* names[3] = {"16-bit logistic: input", "16-bit logistic: output",
                                           "16-bit logistic: input and output extents differ"};
  detail::hard_swish::map_elements<i16>(
      in, out, [&p](i16 x) { return logistic_16_element(x, p); }, names);
}

// ---------------------------------------------------------------------------------------------------------------
// HARD_SWISH
// ---------------------------------------------------------------------------------------------------------------

/// What an int16 HARD_SWISH derives from its scales. TFLite has no int16 HARD_SWISH; TFLite Micro's int16 kernel is
/// followed (HardSwishInt16): its two Q15 multipliers as the 8-bit Prepare makes them (QuantizeMultiplier of a float
/// ratio, then DownScaleInt32ToInt16Multiplier), but from the input scale itself, not input scale / 128, because
/// that kernel applies them to the unshifted 16-bit input (see docs/decisions.md, "Selfie 16x8").
struct hard_swish_params_16 {
  std::int16_t reluish_multiplier = 0;  ///< Q15 mantissa of input scale / (3 / 32768)
  int reluish_exponent = 0;
  std::int16_t output_multiplier = 0;  ///< Q15 mantissa of input scale / output scale
  int output_exponent = 0;
  bool valid = false;
};

/// Reports invalid_argument and returns invalid params for a scale that is not finite and positive, or an exponent
/// above 15 (a ratio of 2^15 or more: x << exponent would leave int32) or below -31.
inline hard_swish_params_16 make_hard_swish_params_16(float input_scale, float output_scale) {
  if (!require(detail::is_usable_scale_16(input_scale) && detail::is_usable_scale_16(output_scale),
               errc::invalid_argument, "16-bit hard swish: scales must be finite and positive"))
    return {};
  const float reluish_scale = 3.0f / 32768.0f;
  const quantized_multiplier out = quantize_multiplier(static_cast<double>(input_scale / output_scale));
  const quantized_multiplier reluish = quantize_multiplier(static_cast<double>(input_scale / reluish_scale));
  const auto usable = [](quantized_multiplier m) { return m.shift >= -31 && m.shift <= 15; };
  if (!require(usable(out) && usable(reluish), errc::invalid_argument,
               "16-bit hard swish: input scale / output scale and input scale / (3 / 32768) must be in [2^-32, 2^15)"))
    return {};
  return {.reluish_multiplier = detail::hard_swish::downscale_to_q15(reluish.multiplier),
          .reluish_exponent = reluish.shift,
          .output_multiplier = detail::hard_swish::downscale_to_q15(out.multiplier),
          .output_exponent = out.shift,
          .valid = true};
}

/// One element of TFLite Micro's HardSwishInt16, MultiplyByQuantizedMultiplier rounding R: the input on [-3, 3] ->
/// Q15 (saturated to int16) and then [0, 1]; the input times the output mantissa; that times the [0, 1] factor;
/// the output exponent (a rounding right shift, or a left shift by a multiply with 2^31 - 1); clamped to int16.
template <rounding R>
constexpr i16 hard_swish_16_element(i16 x, const hard_swish_params_16& p) noexcept {
  const auto q31 = [](std::int16_t q15) { return static_cast<std::int32_t>(q15) * (1 << 16); };
  const std::int32_t reluish_wide =
      multiply_by_quantized_multiplier<R>(x, quantized_multiplier{q31(p.reluish_multiplier), p.reluish_exponent});
  const std::int32_t reluish = (detail::clamp_16(reluish_wide, detail::int16_range) + (1 << 15)) >> 1;  // [0, 32767]
  const std::int32_t on_output_scale =
      multiply_by_quantized_multiplier<R>(x, quantized_multiplier{q31(p.output_multiplier), 0});
  std::int32_t output =
      multiply_by_quantized_multiplier<R>(on_output_scale, quantized_multiplier{reluish * (1 << 16), 0});
  output = p.output_exponent > 0
               ? multiply_by_quantized_multiplier<R>(
                     output, quantized_multiplier{std::numeric_limits<std::int32_t>::max(), p.output_exponent})
               : rounding_divide_by_pot(output, -p.output_exponent);
  return detail::clamp_16(output, detail::int16_range);
}

/// out = hard_swish(in) in int16 (zero points 0), params from make_hard_swish_params_16. Same extents required (any
/// strides; out may be in). On misuse nothing is written.
template <rounding R>
void hard_swish_16(tensor_view<const i16> in, tensor_view<i16> out, const hard_swish_params_16& p) {
  if (!require(p.valid, errc::invalid_argument,
               "16-bit hard swish: params were not built by make_hard_swish_params_16"))
    return;
  static constexpr const char* names[3] = {"16-bit hard swish: input", "16-bit hard swish: output",
                                           "16-bit hard swish: input and output extents differ"};
  detail::hard_swish::map_elements<i16>(
      in, out, [&p](i16 x) { return hard_swish_16_element<R>(x, p); }, names);
}

// ---------------------------------------------------------------------------------------------------------------
// RESIZE_BILINEAR
// ---------------------------------------------------------------------------------------------------------------

/// TFLite's int16 RESIZE_BILINEAR (ResizeBilinearInteger<int16_t>, the same Q10 / Q20 arithmetic as
/// resize_bilinear_tflite_int8): the output size is out's; input and output share their quantization. Mode: ties
/// away from zero (TFLite's default build) or up (TFLITE_SINGLE_ROUNDING). On misuse nothing is written.
template <rounding Mode = rounding::tflite_reference>
void resize_bilinear_16(tensor_view<const i16> in, tensor_view<i16> out, resize_mode mode) {
  detail::resize_bilinear_q10<Mode, i16>(in, out, mode);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
