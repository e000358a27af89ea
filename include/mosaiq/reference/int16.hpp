// Reference kernels for TFLite's "16x8" quantization: int16 activations with zero point 0, int8 symmetric
// per-channel filters, int64 biases (the converter's EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
// mode). The oracle for a network whose precision-critical tensors are 16-bit (docs/decisions.md, "Selfie accuracy:
// 16-bit activations scoped"); TFLite's reference semantics:
//   conv2d / depthwise / pointwise  acc = sum of x * w in int64 (no offsets: both zero points are 0), + bias (int64),
//                                   MultiplyByQuantizedMultiplier(int64 acc, M, shift), clamp, int16 (no zero point);
//   transpose conv                  the same scatter of x * w into int64 accumulators, then the same epilogue;
//   add                             AddFunc as for 8 bits with the inputs shifted left by 15 instead of 20;
//   requantize (QUANTIZE)           int8 <-> int16: zp_out + MultiplyByQuantizedMultiplier(x - zp_in, s_in / s_out).
// The int64 MultiplyByQuantizedMultiplier rounds the Q31 multiplier to Q15 first and shifts once (ties up), in the
// default and in the single-rounding build alike. Plain loops: clarity wins over speed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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
#include "mosaiq/reference/pointwise.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

using i16 = std::int16_t;

/// TFLite's MultiplyByQuantizedMultiplier(int64_t x, int32_t multiplier, int shift) (kernels/internal/common.h):
/// the Q31 multiplier rounded to Q15 (saturating at 0x7FFF), one product, one shift by 15 - shift rounding half up.
/// Defined for multiplier >= 0, shift in [-31, 7] and |x| < 2^47 (TFLite's DCHECKs; the result then fits int32 for
/// the layers that use it).
constexpr std::int32_t multiply_by_quantized_multiplier_64(std::int64_t x, quantized_multiplier q) noexcept {
  const std::int64_t reduced = q.multiplier < 0x7FFF0000 ? (std::int64_t{q.multiplier} + (1 << 15)) >> 16 : 0x7FFF;
  const int total_shift = 15 - q.shift;
  return static_cast<std::int32_t>((x * reduced + (std::int64_t{1} << (total_shift - 1))) >> total_shift);
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
                                tensor_view<i16> output, const transpose_conv_params& p, const conv_requant_16x8& q) {
  if (!detail::transpose_conv::check(input, filter, output, p) ||
      !detail::check_conv_requant_16x8(q, output.channels()))
    return;
  detail::transpose_conv::accumulators<std::int64_t, i16> acc(output);
  detail::transpose_conv::scatter(input, filter, output, p, [&](int n, int y, int x, int c, i16 v, i8 w) {
    acc(n, y, x, c) += std::int64_t{v} * std::int64_t{w};
  });
  for (int n = 0; n < output.batch(); ++n)
    for (int y = 0; y < output.height(); ++y)
      for (int x = 0; x < output.width(); ++x)
        for (int c = 0; c < output.channels(); ++c)
          output.pixel(n, y, x)[c] = detail::requantize_16x8(acc(n, y, x, c), bias, c, q);
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

/// out = a + b in int16 (TFLite's AddFunc with left shift 15), same-shape or broadcast as reference::add. R is the
/// rounding of MultiplyByQuantizedMultiplierSmallerThanOneExp. On misuse nothing is written.
template <rounding R>
void add_16(tensor_view<const i16> a, tensor_view<const i16> b, tensor_view<i16> out, const add_params_16& p) {
  if (!detail::check_binary_views(a, b, out, detail::add_view_names)) return;
  if (!require(p.valid, errc::invalid_argument, "16-bit add: params were not built by make_add_params_16")) return;
  const requant_scale s1 = prepare_scale<R>(p.input1_multiplier), s2 = prepare_scale<R>(p.input2_multiplier),
                      so = prepare_scale<R>(p.output_multiplier);
  detail::for_each_broadcast(a, b, out, [&](i16 va, i16 vb) {
    const std::int32_t scaled1 = multiply_by_quantized_multiplier<R>(std::int32_t{va} * (1 << p.left_shift), s1);
    const std::int32_t scaled2 = multiply_by_quantized_multiplier<R>(std::int32_t{vb} * (1 << p.left_shift), s2);
    const std::int32_t raw = multiply_by_quantized_multiplier<R>(scaled1 + scaled2, so);
    return static_cast<i16>(std::clamp(raw, p.clamp.min, p.clamp.max));
  });
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

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
