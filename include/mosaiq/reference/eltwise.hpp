// Reference element-wise ops: quantized add and mul (with TFLite's broadcasting) and channel concat with TFLite's
// exact semantics, and their float twins. Plain scalar loops, one output element at a time: these are the oracles the
// SIMD kernels in ops/ are proven equal to, so clarity wins over speed everywhere in this file.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

namespace detail {

inline bool is_usable_scale(float scale) noexcept { return std::isfinite(scale) && scale > 0.0f; }

template <quantized_element T>
constexpr bool is_representable_zero_point(std::int32_t zero_point) noexcept {
  return zero_point >= element_traits<T>::min && zero_point <= element_traits<T>::max;
}

/// A binary op's three quantizations: usable scales, zero points that fit T; reports the first problem.
template <quantized_element T>
bool check_quantizations(quant_params a, quant_params b, quant_params out, const char* bad_scale,
                         const char* bad_zero_point) {
  return require(is_usable_scale(a.scale) && is_usable_scale(b.scale) && is_usable_scale(out.scale),
                 errc::invalid_argument, bad_scale) &&
         require(is_representable_zero_point<T>(a.zero_point) && is_representable_zero_point<T>(b.zero_point) &&
                     is_representable_zero_point<T>(out.zero_point),
                 errc::invalid_argument, bad_zero_point);
}

template <class A, class B>
constexpr bool same_extents(const A& a, const B& b) noexcept {
  return a.dims() == b.dims() && a.batch() == b.batch();
}

/// TFLite's broadcast rule on one axis (NHWC, shapes aligned from the right, a missing axis is 1): each input's extent
/// is the output's or 1, and the output's is one of them.
constexpr bool broadcasts_to(int a, int b, int out) noexcept {
  return (a == out || a == 1) && (b == out || b == 1) && (a == out || b == out);
}

/// Whether out is the broadcast shape of a and b on all four axes (batch, height, width, channels).
template <class A, class B, class O>
constexpr bool is_broadcast_of(const A& a, const B& b, const O& out) noexcept {
  return broadcasts_to(a.batch(), b.batch(), out.batch()) && broadcasts_to(a.height(), b.height(), out.height()) &&
         broadcasts_to(a.width(), b.width(), out.width()) && broadcasts_to(a.channels(), b.channels(), out.channels());
}

/// The element of v that output element (n, y, x, c) reads: index 0 on every axis v broadcasts.
template <class T>
constexpr T broadcast_element(const tensor_view<const T>& v, int n, int y, int x, int c) noexcept {
  return v.pixel(v.batch() == 1 ? 0 : n, v.height() == 1 ? 0 : y, v.width() == 1 ? 0 : x)[v.channels() == 1 ? 0 : c];
}

/// Checks a binary element-wise op's views (each reported under its own name) and their broadcast shapes.
template <class A, class B, class O>
bool check_binary_views(const A& a, const B& b, const O& out, const char* const (&names)[3]) {
  return check_view(a, names[0]) && check_view(b, names[1]) && check_view(out, names[2]) &&
         require(is_broadcast_of(a, b, out), errc::shape_mismatch,
                 "eltwise: every axis of a and b must equal the output's or be 1, and out must be their broadcast "
                 "shape (TFLite broadcasting)");
}

inline constexpr const char* add_view_names[3] = {"add: input a", "add: input b", "add: output"};
inline constexpr const char* mul_view_names[3] = {"mul: input a", "mul: input b", "mul: output"};

/// out(n, y, x, c) = f(a element, b element) over out's extents with broadcasting; f sees every element of out once,
/// and reads both inputs before the write (so out may be exactly a or b).
template <class T, class U, class F>
void for_each_broadcast(const tensor_view<const T>& a, const tensor_view<const T>& b, const tensor_view<U>& out, F f) {
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x) {
        U* pixel_out = out.pixel(n, y, x);
        for (int c = 0; c < out.channels(); ++c)
          pixel_out[c] = f(broadcast_element(a, n, y, x, c), broadcast_element(b, n, y, x, c));
      }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------------------------
// Residual add
// ---------------------------------------------------------------------------------------------------------------

/// What TFLite's ADD Prepare (tensorflow/lite/kernels/add.cc) derives from the three quantizations; built once at
/// load by make_add_params. The multipliers are kept as (Q31, shift) pairs so either rounding mode can use them.
struct add_params {
  /// 8-bit inputs are shifted left by 20 bits before rescaling: |q - zp| <= 255, so 2 * 255 << 20 still fits int32.
  static constexpr int left_shift = 20;

  std::int32_t input1_offset = 0;            ///< -zero_point of the first input
  std::int32_t input2_offset = 0;            ///< -zero_point of the second input
  std::int32_t output_offset = 0;            ///< zero_point of the output
  quantized_multiplier input1_multiplier{};  ///< s1 / (2 max(s1, s2)), shift <= 0
  quantized_multiplier input2_multiplier{};  ///< s2 / (2 max(s1, s2)), shift <= 0
  quantized_multiplier output_multiplier{};  ///< 2 max(s1, s2) / (2^20 s_out), shift <= 0
  clamp_range clamp{};                       ///< fused activation in the output's quantized domain
  /// Only make_add_params sets this, and only when every check passed; add() refuses anything else.
  bool valid = false;

  friend constexpr bool operator==(const add_params&, const add_params&) = default;
};

/// TFLite's ADD Prepare for uint8/int8: twice_max_input_scale = 2 max(s1, s2) (a float product, as in add.cc),
/// real input multipliers s_i / twice_max, real output multiplier twice_max / ((1 << 20) s_out) (the denominator is a
/// float product too), each through QuantizeMultiplierSmallerThanOneExp. Reports invalid_argument and returns
/// invalid params when a scale is not finite and positive, a zero point does not fit T, or the output multiplier is
/// not below 1 (where TFLite's TFLITE_CHECK aborts).
template <quantized_element T>
add_params make_add_params(quant_params a, quant_params b, quant_params out, activation act = activation::none) {
  if (!detail::check_quantizations<T>(a, b, out, "add: every scale must be finite and positive",
                                      "add: a zero point does not fit the element type"))
    return {};

  const double twice_max_input_scale = static_cast<double>(2.0f * std::max(a.scale, b.scale));
  const double real_input1_multiplier = static_cast<double>(a.scale) / twice_max_input_scale;
  const double real_input2_multiplier = static_cast<double>(b.scale) / twice_max_input_scale;
  const double real_output_multiplier =
      twice_max_input_scale / static_cast<double>(static_cast<float>(1 << add_params::left_shift) * out.scale);

  // QuantizeMultiplierSmallerThanOneExp's checks: 0 < real < 1 and a non-positive shift after rounding.
  const auto smaller_than_one = [](double real) { return real > 0.0 && real < 1.0; };
  if (!require(smaller_than_one(real_input1_multiplier) && smaller_than_one(real_input2_multiplier) &&
                   smaller_than_one(real_output_multiplier),
               errc::invalid_argument, "add: 2 * max(input scales) must be below 2^20 * output scale"))
    return {};

  add_params params;
  params.input1_offset = -a.zero_point;
  params.input2_offset = -b.zero_point;
  params.output_offset = out.zero_point;
  // The two modes quantize multipliers below 1 identically (they differ only for shifts above 30).
  params.input1_multiplier = quantize_multiplier(real_input1_multiplier);
  params.input2_multiplier = quantize_multiplier(real_input2_multiplier);
  params.output_multiplier = quantize_multiplier(real_output_multiplier);
  if (!require(params.input1_multiplier.shift <= 0 && params.input2_multiplier.shift <= 0 &&
                   params.output_multiplier.shift <= 0,
               errc::invalid_argument, "add: a multiplier rounded up to 1"))
    return {};
  params.clamp = activation_range<T>(act, out);
  params.valid = true;
  return params;
}

namespace detail {

/// The multipliers of add_params decoded for one rounding mode (done once per call, not per element).
struct add_scales {
  requant_scale input1, input2, output;
};

template <rounding R>
add_scales decode_add_scales(const add_params& params) noexcept {
  return {prepare_scale<R>(params.input1_multiplier), prepare_scale<R>(params.input2_multiplier),
          prepare_scale<R>(params.output_multiplier)};
}

/// One element of TFLite's AddElementwise / AddFunc. MultiplyByQuantizedMultiplierSmallerThanOneExp is
/// RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x, M), -shift) in the default build and the single-rounding
/// MultiplyByQuantizedMultiplier under TFLITE_SINGLE_ROUNDING: exactly multiply_by_quantized_multiplier<R> for
/// shift <= 0.
template <rounding R, quantized_element T>
T add_element(T a, T b, const add_params& params, const add_scales& scales) noexcept {
  const std::int32_t input1 = params.input1_offset + static_cast<std::int32_t>(a);
  const std::int32_t input2 = params.input2_offset + static_cast<std::int32_t>(b);
  const std::int32_t shifted_input1 = input1 * (1 << add_params::left_shift);
  const std::int32_t shifted_input2 = input2 * (1 << add_params::left_shift);
  const std::int32_t scaled_input1 = multiply_by_quantized_multiplier<R>(shifted_input1, scales.input1);
  const std::int32_t scaled_input2 = multiply_by_quantized_multiplier<R>(shifted_input2, scales.input2);
  const std::int32_t raw_sum = scaled_input1 + scaled_input2;
  const std::int32_t raw_output = multiply_by_quantized_multiplier<R>(raw_sum, scales.output) + params.output_offset;
  return static_cast<T>(std::clamp(raw_output, params.clamp.min, params.clamp.max));
}

}  // namespace detail

/// out = a + b, requantized as TFLite's uint8/int8 ADD, with TFLite's broadcasting: on each NHWC axis a and b have
/// out's extent or 1 (a scalar is 1x1x1, a per-channel vector 1x1xC, a lower-rank tensor gets leading 1s), and out is
/// their broadcast shape (BroadcastAdd4DSlow reads index 0 on broadcast axes; without broadcasting this is
/// AddElementwise). Any strides are fine; out may be exactly a or b (same data and strides) since every element is
/// read before it is written. R chooses tflite_reference (double rounding) or single_round (a TFLITE_SINGLE_ROUNDING
/// build). On misuse nothing is written.
template <rounding R, quantized_element T>
void add(std::type_identity_t<tensor_view<const T>> a, std::type_identity_t<tensor_view<const T>> b, tensor_view<T> out,
         const add_params& params) {
  if (!detail::check_binary_views(a, b, out, detail::add_view_names)) return;
  if (!require(params.valid, errc::invalid_argument, "add: params were not built by a successful make_add_params"))
    return;
  const detail::add_scales scales = detail::decode_add_scales<R>(params);
  detail::for_each_broadcast(a, b, out, [&](T va, T vb) { return detail::add_element<R, T>(va, vb, params, scales); });
}

/// Float twin: out = activation(a + b), as TFLite's float ADD. Same shape rules as the quantized add.
inline void add(tensor_view<const float> a, tensor_view<const float> b, tensor_view<float> out,
                activation act = activation::none) {
  if (!detail::check_binary_views(a, b, out, detail::add_view_names)) return;
  detail::for_each_broadcast(a, b, out, [act](float va, float vb) { return apply_activation(act, va + vb); });
}

// ---------------------------------------------------------------------------------------------------------------
// Multiply
// ---------------------------------------------------------------------------------------------------------------

/// What TFLite's MUL Prepare (tensorflow/lite/kernels/mul.cc) derives for uint8/int8; built once by make_mul_params.
/// The multiplier is quantized for one rounding mode (they differ for shifts above 30), recorded in `round`.
struct mul_params {
  std::int32_t input1_offset = 0;            ///< -zero_point of the first input
  std::int32_t input2_offset = 0;            ///< -zero_point of the second input
  std::int32_t output_offset = 0;            ///< zero_point of the output
  quantized_multiplier output_multiplier{};  ///< s1 * s2 / s_out, any shift in [-31, 30]
  clamp_range clamp{};                       ///< fused activation in the output's quantized domain
  rounding round = rounding::tflite_reference;
  /// Only make_mul_params sets this, and only when every check passed; mul() refuses anything else.
  bool valid = false;

  friend constexpr bool operator==(const mul_params&, const mul_params&) = default;
};

/// TFLite's MUL Prepare for uint8/int8: real multiplier s1 * s2 / s_out computed in float (as mul.cc writes it) and
/// widened to double, through QuantizeMultiplier (multipliers of 1 and above are allowed; below 2^-32 they flush to
/// zero). Reports invalid_argument and returns invalid params when a scale is not finite and positive, a zero point
/// does not fit T, or the multiplier is 2^30 or more in the tflite_reference mode (TFLite's left shift of 1 << 31 is
/// undefined there; single_round saturates such shifts as TFLite's build does).
template <quantized_element T, rounding R = rounding::tflite_reference>
mul_params make_mul_params(quant_params a, quant_params b, quant_params out, activation act = activation::none) {
  if (!detail::check_quantizations<T>(a, b, out, "mul: every scale must be finite and positive",
                                      "mul: a zero point does not fit the element type"))
    return {};
  const float real_multiplier = a.scale * b.scale / out.scale;
  if (!require(std::isfinite(real_multiplier), errc::invalid_argument, "mul: s_a * s_b / s_out overflows float"))
    return {};
  mul_params params;
  params.input1_offset = -a.zero_point;
  params.input2_offset = -b.zero_point;
  params.output_offset = out.zero_point;
  params.output_multiplier = quantize_multiplier<R>(static_cast<double>(real_multiplier));
  if (!require(is_valid_multiplier(params.output_multiplier), errc::invalid_argument,
               "mul: s_a * s_b / s_out must be below 2^30"))
    return {};
  params.clamp = activation_range<T>(act, out);
  params.round = R;
  params.valid = true;
  return params;
}

namespace detail {

/// One element of TFLite's MulElementwise: output_offset + MultiplyByQuantizedMultiplier((a + offset1) * (b +
/// offset2)), clamped. The product of two offset 8-bit values fits 17 bits.
template <rounding R, quantized_element T>
T mul_element(T a, T b, const mul_params& params, requant_scale scale) noexcept {
  const std::int32_t product =
      (params.input1_offset + static_cast<std::int32_t>(a)) * (params.input2_offset + static_cast<std::int32_t>(b));
  return requantize<R, T>(product, scale, params.output_offset, params.clamp.min, params.clamp.max);
}

}  // namespace detail

/// out = a * b, requantized as TFLite's uint8/int8 MUL (reference kernels MulElementwise / BroadcastMul4DSlow), with
/// the same broadcasting and aliasing rules as add. params must come from make_mul_params<T, R>. On misuse nothing is
/// written.
template <rounding R, quantized_element T>
void mul(std::type_identity_t<tensor_view<const T>> a, std::type_identity_t<tensor_view<const T>> b, tensor_view<T> out,
         const mul_params& params) {
  if (!detail::check_binary_views(a, b, out, detail::mul_view_names)) return;
  if (!require(params.valid && params.round == R, errc::invalid_argument,
               "mul: params were not built by a successful make_mul_params for this rounding mode"))
    return;
  const requant_scale scale = prepare_scale<R>(params.output_multiplier);
  detail::for_each_broadcast(a, b, out, [&](T va, T vb) { return detail::mul_element<R, T>(va, vb, params, scale); });
}

/// Float twin: out = activation(a * b), as TFLite's float MUL. Same shape rules as the quantized mul.
inline void mul(tensor_view<const float> a, tensor_view<const float> b, tensor_view<float> out,
                activation act = activation::none) {
  if (!detail::check_binary_views(a, b, out, detail::mul_view_names)) return;
  detail::for_each_broadcast(a, b, out, [act](float va, float vb) { return apply_activation(act, va * vb); });
}

// ---------------------------------------------------------------------------------------------------------------
// Concatenation along channels
// ---------------------------------------------------------------------------------------------------------------

/// One branch of a channel concat and the quantization its values are in.
template <quantized_element T>
struct concat_input {
  tensor_view<const T> view;
  quant_params quant;
};

namespace detail {

/// TFLite's ConcatenationWithScaling for one element of an input whose quantization differs from the output's
/// (tensorflow/lite/kernels/internal/reference/concatenation.h): scale = s_in * (1.f / s_out) and
/// bias = -zp_in * scale in float, value = int(TfLiteRound(q * scale + bias)) + zp_out, clamped to T.
/// TfLiteRound is std::round (half away from zero).
struct concat_rescale {
  float scale = 1.0f;
  float bias = 0.0f;
  std::int32_t output_zero_point = 0;

  concat_rescale(quant_params in, quant_params out) noexcept
      : scale(in.scale * (1.0f / out.scale)),
        bias(static_cast<float>(-in.zero_point) * scale),
        output_zero_point(out.zero_point) {}

  template <quantized_element T>
  T operator()(T q) const noexcept {
    // Separate statements so no compiler contracts q * scale + bias into an FMA: the oracle rounds twice, as the
    // expression in TFLite's source does when it is not contracted.
    const float product = static_cast<float>(static_cast<std::int32_t>(q)) * scale;
    const float sum = product + bias;
    // Rounded values beyond +-2^24 saturate T either way; clamping first keeps the int conversion defined.
    const float rounded = std::clamp(std::round(sum), -16777216.0f, 16777216.0f);
    return saturate_cast<T>(static_cast<std::int32_t>(rounded) + output_zero_point);
  }
};

/// Whether every input whose quantization differs from out_quant gets a finite float scale and bias. Extreme ratios
/// (1 / 1e-45, 1e30 * 1e30) overflow, and the rounded NaN or infinity would then go through an undefined int
/// conversion.
template <quantized_element T>
bool rescales_are_finite(std::span<const concat_input<T>> inputs, quant_params out_quant) noexcept {
  for (const concat_input<T>& input : inputs) {
    if (input.quant == out_quant) continue;
    const concat_rescale rescale(input.quant, out_quant);
    if (!is_usable_real_multiplier(rescale.scale) || !std::isfinite(rescale.bias)) return false;
  }
  return true;
}

}  // namespace detail

/// Concatenates the inputs along channels into out, in order: input i fills channels [sum of earlier channel
/// counts, + its own). Every input must have out's height, width and batch, and their channel counts must add up to
/// out's. An input whose quant_params equal out_quant is copied; the others are requantized exactly as TFLite's
/// uint8 ConcatenationWithScaling (reference and builtin kernel). TFLite rejects int8 inputs whose quantization
/// differs from the output's; here int8 follows the same float formula, clamped to [-128, 127].
/// out may itself be a channel slice of a wider tensor; inputs must not overlap out unless an input is exactly the
/// slice it is copied to. On misuse nothing is written.
template <quantized_element T>
void concat(std::type_identity_t<std::span<const concat_input<T>>> inputs, tensor_view<T> out, quant_params out_quant) {
  if (!check_view(out, "concat: output")) return;
  int channel_total = 0;
  bool needs_rescale = false;
  for (const concat_input<T>& input : inputs) {
    if (!check_view(input.view, "concat: input")) return;
    if (!require(input.view.height() == out.height() && input.view.width() == out.width() &&
                     input.view.batch() == out.batch(),
                 errc::shape_mismatch, "concat: every input must have the output's height, width and batch"))
      return;
    channel_total += input.view.channels();
    needs_rescale = needs_rescale || !(input.quant == out_quant);
    if (!require(input.quant == out_quant || (detail::is_usable_scale(input.quant.scale) &&
                                              detail::is_representable_zero_point<T>(input.quant.zero_point)),
                 errc::invalid_argument, "concat: an input's scale or zero point is unusable"))
      return;
  }
  if (!require(channel_total == out.channels(), errc::shape_mismatch,
               "concat: the inputs' channel counts must add up to the output's"))
    return;
  if (!require(!needs_rescale || (detail::is_usable_scale(out_quant.scale) &&
                                  detail::is_representable_zero_point<T>(out_quant.zero_point) &&
                                  detail::rescales_are_finite<T>(inputs, out_quant)),
               errc::invalid_argument, "concat: the output's scale or zero point is unusable, or a rescale overflows"))
    return;

  int first_channel = 0;
  for (const concat_input<T>& input : inputs) {
    const tensor_view<T> slice = out.channel_slice(first_channel, input.view.channels());
    first_channel += input.view.channels();
    const bool copy = input.quant == out_quant;
    const detail::concat_rescale rescale(input.quant, out_quant);
    for (int n = 0; n < slice.batch(); ++n)
      for (int y = 0; y < slice.height(); ++y)
        for (int x = 0; x < slice.width(); ++x) {
          const T* source = input.view.pixel(n, y, x);
          T* destination = slice.pixel(n, y, x);
          for (int c = 0; c < slice.channels(); ++c) destination[c] = copy ? source[c] : rescale(source[c]);
        }
  }
}

/// Float twin: copies the inputs into consecutive channel ranges of out. Same shape rules as the quantized concat.
inline void concat(std::span<const tensor_view<const float>> inputs, tensor_view<float> out) {
  if (!check_view(out, "concat: output")) return;
  int channel_total = 0;
  for (const tensor_view<const float>& input : inputs) {
    if (!check_view(input, "concat: input")) return;
    if (!require(input.height() == out.height() && input.width() == out.width() && input.batch() == out.batch(),
                 errc::shape_mismatch, "concat: every input must have the output's height, width and batch"))
      return;
    channel_total += input.channels();
  }
  if (!require(channel_total == out.channels(), errc::shape_mismatch,
               "concat: the inputs' channel counts must add up to the output's"))
    return;

  int first_channel = 0;
  for (const tensor_view<const float>& input : inputs) {
    const tensor_view<float> slice = out.channel_slice(first_channel, input.channels());
    first_channel += input.channels();
    for (int n = 0; n < slice.batch(); ++n)
      for (int y = 0; y < slice.height(); ++y)
        for (int x = 0; x < slice.width(); ++x) {
          // An element loop, not memcpy/std::copy: an input may be exactly its destination slice (in-place concat).
          const float* source = input.pixel(n, y, x);
          float* destination = slice.pixel(n, y, x);
          for (int c = 0; c < slice.channels(); ++c) destination[c] = source[c];
        }
  }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
