// Post-training quantization: float weights (tools/float_network.hpp) and calibrated tensor ranges
// (tools/calibrate.hpp) to a network's quantized weights, TFLite's recipe:
//   activations  asymmetric per tensor, scale = (max - min) / 255, zero point nudged to an integer
//                in the element range (u8 [0, 255], i8 [-128, 127]); 0 is exact
//                (tflite::optimize::utils::GetAsymmetricQuantizationParams);
//   filters      u8: asymmetric per tensor with a filter zero point; i8: symmetric per output
//                channel, scale = max|w| / 127, values in [-127, 127];
//   biases       int32 = round(b / (input_scale * filter_scale[c])), saturated; when a bias would
//                not fit in half of int32 the filter scale is widened first (TFLite's
//                AdjustWeightsForBiasScale), so an all-zero channel keeps its bias;
//   outputs      layers whose weights carry an output quantization (conv2d, depthwise, pointwise,
//                add, concat, global average pool) get it from their output tensor's range; the
//                others take what their executor decides (pooling and resize keep the input's,
//                softmax and logistic the fixed 1/256 one), so calibrated ranges of those tensors
//                are not used.
// Plus the value helpers to feed a quantized network floats and read its results as floats.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/net/executor.hpp"
#include "mosaiq/net/network.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/tools/calibrate.hpp"
#include "mosaiq/tools/float_network.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools {

// ---------------------------------------------------------------------------------------------
// Activations

/// Asymmetric quantization of a real range for T, as TFLite's GetAsymmetricQuantizationParams
/// (float arithmetic): the range is widened to contain 0, scale = (max - min) / (qmax - qmin),
/// zero point = round(qmin - min / scale) clamped to [qmin, qmax]. A range of width 0 ([0, 0]: a
/// tensor that was always zero) is taken as [0, 1], since a zero scale cannot requantize.
/// Example: [-1, 3] gives u8 scale 4/255, zero point 64 (63.75 nudged); i8 zero point -64.
template <quantized_element T>
quant_params activation_quant(float_range range) noexcept {
  constexpr auto qmin = static_cast<float>(element_traits<T>::min);
  constexpr auto qmax = static_cast<float>(element_traits<T>::max);
  float min = std::min(range.min, 0.0f), max = std::max(range.max, 0.0f);
  if (!(max - min > 0.0f)) {
    min = 0.0f;
    max = 1.0f;
  }
  const float scale = (max - min) / (qmax - qmin);
  const float zero_point_from_min = qmin - min / scale;
  std::int32_t zero_point = 0;
  if (zero_point_from_min < qmin)
    zero_point = element_traits<T>::min;
  else if (zero_point_from_min > qmax)
    zero_point = element_traits<T>::max;
  else
    zero_point = static_cast<std::int32_t>(std::round(zero_point_from_min));
  return {scale, zero_point};
}

// ---------------------------------------------------------------------------------------------
// Weights

/// A filter quantized per tensor to u8 (TFLite's legacy uint8 scheme).
struct per_tensor_u8_weights {
  std::vector<u8> values;
  float scale = 0.0f;  ///< 0 only for an all-zero filter (every value is the zero point)
  std::int32_t zero_point = 0;
};

namespace detail {

/// round(w / scale) + zero point, clamped to T; a zero scale maps everything to the zero point.
template <quantized_element T>
T quantize_weight(float w, float scale, std::int32_t zero_point, std::int32_t lo, std::int32_t hi) noexcept {
  if (scale == 0.0f) return static_cast<T>(zero_point);
  const float q = std::round(w / scale) + static_cast<float>(zero_point);
  return static_cast<T>(static_cast<std::int32_t>(std::clamp(q, static_cast<float>(lo), static_cast<float>(hi))));
}

/// i8 per-channel values as TFLite's SymmetricPerChannelQuantizeValues: round(w * (127 / max|w|)).
inline i8 quantize_symmetric(float w, float inverse_scale) noexcept {
  const float q = std::round(w * inverse_scale);
  return static_cast<i8>(static_cast<std::int32_t>(std::clamp(q, -127.0f, 127.0f)));
}

}  // namespace detail

/// How a filter's quantization range is chosen.
enum class weight_range {
  min_max,  ///< the whole range of the values (TFLite)
  /// the range, shrunk by a factor in [0.3, 1] (steps of 0.01), with the least squared rounding
  /// and clipping error: one outlier then no longer coarsens the grid of every other weight (per
  /// tensor u8 depthwise filters after batch-norm folding are the case that needs it)
  mse,
};

/// Per-tensor asymmetric u8: the range [min(w, 0), max(w, 0)] (or its MSE-best shrink) through
/// activation_quant's formula (without its [0, 1] substitute: an all-zero filter gets scale 0,
/// zero point 0).
inline per_tensor_u8_weights quantize_weights_per_tensor_u8(std::span<const float> weights,
                                                            weight_range method = weight_range::min_max) {
  per_tensor_u8_weights r;
  r.values.resize(weights.size());
  if (weights.empty()) return r;
  const auto [lo, hi] = std::minmax_element(weights.begin(), weights.end());
  if (std::min(*lo, 0.0f) == std::max(*hi, 0.0f)) {
    std::fill(r.values.begin(), r.values.end(), u8{0});
    return r;
  }
  quant_params q = activation_quant<u8>({*lo, *hi});
  if (method == weight_range::mse) {
    const auto squared_error = [&](quant_params c) {
      double e = 0;
      for (const float w : weights) {
        const double d =
            (detail::quantize_weight<u8>(w, c.scale, c.zero_point, 0, 255) - c.zero_point) * double(c.scale) - w;
        e += d * d;
      }
      return e;
    };
    double best = squared_error(q);
    for (int percent = 99; percent >= 30; --percent) {
      const float f = static_cast<float>(percent) / 100.0f;
      const quant_params c = activation_quant<u8>({*lo * f, *hi * f});
      const double e = squared_error(c);
      if (e < best) best = e, q = c;
    }
  }
  r.scale = q.scale;
  r.zero_point = q.zero_point;
  for (std::size_t i = 0; i < weights.size(); ++i)
    r.values[i] = detail::quantize_weight<u8>(weights[i], q.scale, q.zero_point, 0, 255);
  return r;
}

/// Which filter axis is the output channel: first for conv2d [Cout][KH][KW][Cin] and pointwise
/// [Cout][Cin], last for depthwise [KH][KW][C*M].
enum class channel_axis { first, last };

/// A filter quantized to i8, symmetric per output channel.
struct per_channel_i8_weights {
  std::vector<i8> values;
  std::vector<float> scales;  ///< max|w| / 127 per channel; 0 for an all-zero channel
};

namespace detail {
inline std::size_t channel_of(std::size_t index, std::size_t size, std::size_t channels, channel_axis axis) noexcept {
  return axis == channel_axis::last ? index % channels : index / (size / channels);
}
}  // namespace detail

/// Symmetric per-channel i8 (TFLite's SymmetricPerChannelQuantization): scale[c] = max|w_c| / 127,
/// values round(w * 127 / max|w_c|) in [-127, 127]. `weights.size()` must be a multiple of
/// `channels` (reported; empty result otherwise).
inline per_channel_i8_weights quantize_weights_per_channel_i8(std::span<const float> weights, std::size_t channels,
                                                              channel_axis axis) {
  per_channel_i8_weights r;
  if (!require(channels > 0 && weights.size() % channels == 0, errc::shape_mismatch,
               "quantize_weights_per_channel_i8: the filter size must be a multiple of the channel count"))
    return r;
  std::vector<float> half_range(channels, 0.0f);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    float& h = half_range[detail::channel_of(i, weights.size(), channels, axis)];
    h = std::max(h, std::fabs(weights[i]));
  }
  r.scales.resize(channels);
  std::vector<float> inverse(channels, 0.0f);
  for (std::size_t c = 0; c < channels; ++c) {
    r.scales[c] = half_range[c] / 127.0f;
    inverse[c] = half_range[c] == 0.0f ? 0.0f : 127.0f / half_range[c];
  }
  r.values.resize(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i)
    r.values[i] =
        detail::quantize_symmetric(weights[i], inverse[detail::channel_of(i, weights.size(), channels, axis)]);
  return r;
}

/// int32 bias of one output channel: round(b / (input_scale * filter_scale)) (the scale a float
/// product, as TFLite computes it), saturated to [-(2^31 - 1), 2^31 - 1]; 0 when the scale is 0.
inline std::int32_t quantize_bias(float bias, float input_scale, float filter_scale) noexcept {
  const float bias_scale = input_scale * filter_scale;
  if (bias_scale == 0.0f) return 0;
  const double q = std::round(static_cast<double>(bias) / static_cast<double>(bias_scale));
  constexpr double limit = std::numeric_limits<std::int32_t>::max();
  return static_cast<std::int32_t>(std::clamp(q, -limit, limit));
}

namespace detail {

/// TFLite's AdjustWeightsForBiasScale: the smallest filter scale for which |bias| stays below half
/// of int32 at this input scale; 0 when any scale will do.
inline float min_filter_scale_for_bias(float bias_half_range, float input_scale) noexcept {
  constexpr double int32_max = std::numeric_limits<std::int32_t>::max();
  return static_cast<float>(2.0 * static_cast<double>(bias_half_range) / int32_max / static_cast<double>(input_scale));
}

/// Fills a conv_weights (filter, bias, filter scales and zero point) from float weights.
template <quantized_element T, class FloatWeights, class QuantWeights>
bool quantize_conv(const FloatWeights& fw, channel_axis axis, quant_params input, QuantWeights& qw,
                   weight_range method = weight_range::min_max) {
  const std::size_t channels = qw.bias.size();
  if (!require(fw.filter.size() == qw.filter.size() && fw.bias.size() == channels, errc::shape_mismatch,
               "quantize_network: float filter or bias has another size than the layer's") ||
      !require(std::isfinite(input.scale) && input.scale > 0.0f, errc::invalid_argument,
               "quantize_network: a conv layer's input scale must be finite and positive"))
    return false;
  if constexpr (std::same_as<T, u8>) {
    per_tensor_u8_weights w = quantize_weights_per_tensor_u8(fw.filter, method);
    float bias_half_range = 0.0f;
    for (const float b : fw.bias) bias_half_range = std::max(bias_half_range, std::fabs(b));
    const float needed = min_filter_scale_for_bias(bias_half_range, input.scale);
    if (bias_half_range > 0.0f && w.scale <= needed) {
      // Widen the scale, keep the zero point: 0 stays exact and the values shrink toward it.
      w.scale = needed;
      for (std::size_t i = 0; i < w.values.size(); ++i)
        w.values[i] = quantize_weight<u8>(fw.filter[i], w.scale, w.zero_point, 0, 255);
    }
    std::copy(w.values.begin(), w.values.end(), qw.filter.begin());
    qw.filter_scales[0] = w.scale;
    qw.filter_zero_point = w.zero_point;
    for (std::size_t c = 0; c < channels; ++c) qw.bias[c] = quantize_bias(fw.bias[c], input.scale, w.scale);
  } else {
    per_channel_i8_weights w = quantize_weights_per_channel_i8(fw.filter, channels, axis);
    if (w.scales.size() != channels) return false;
    for (std::size_t c = 0; c < channels; ++c) {
      const float needed = min_filter_scale_for_bias(std::fabs(fw.bias[c]), input.scale);
      if (fw.bias[c] != 0.0f && w.scales[c] <= needed) {
        w.scales[c] = needed;
        for (std::size_t i = 0; i < w.values.size(); ++i)
          if (channel_of(i, w.values.size(), channels, axis) == c)
            w.values[i] = quantize_symmetric(fw.filter[i], 1.0f / needed);
      }
    }
    std::copy(w.values.begin(), w.values.end(), qw.filter.begin());
    std::copy(w.scales.begin(), w.scales.end(), qw.filter_scales.begin());
    qw.filter_zero_point = 0;
    for (std::size_t c = 0; c < channels; ++c) qw.bias[c] = quantize_bias(fw.bias[c], input.scale, w.scales[c]);
  }
  return true;
}

/// The quantization of layer I's output tensor, as the network's prepare() will derive it: from
/// the weights' `output` when the layer has one, otherwise from the layer's executor (same as the
/// input for pooling and resize, fixed for softmax and logistic).
template <class Net, std::size_t I>
void propagate_quant(const typename Net::weights& w, std::array<quant_params, Net::tensor_count>& quant) {
  using Layer = typename Net::template layer<I>;
  if constexpr (Layer::role == layer_role::op) {
    using T = typename Net::element_type;
    using W = quantized_layer_weights_t<Net, I>;
    constexpr layer_node node = Net::topology.layers[I];
    const W& lw = w.template layer<I>();
    if constexpr (has_output_quant<W>) {
      quant[static_cast<std::size_t>(node.output)] = lw.output;
    } else {
      constexpr std::size_t arity = Layer::inputs.size();
      std::array<quant_params, arity> inputs{};
      for (std::size_t k = 0; k < arity; ++k) inputs[k] = quant[static_cast<std::size_t>(node.inputs[k])];
      using exec = executor<Layer, T, Net::round, Net::template layer_input_shape<I>, node.dims>;
      quant[static_cast<std::size_t>(node.output)] = exec::prepare(lw, inputs).output;
    }
  }
}

template <class Net, std::size_t I>
bool quantize_layer(const float_weights<Net>& fw, const std::array<float_range, Net::tensor_count>& ranges,
                    std::array<quant_params, Net::tensor_count>& quant, typename Net::weights& out,
                    weight_range method) {
  using Layer = typename Net::template layer<I>;
  if constexpr (Layer::role == layer_role::op) {
    using T = typename Net::element_type;
    using W = quantized_layer_weights_t<Net, I>;
    constexpr layer_node node = Net::topology.layers[I];
    W& lw = out.template layer<I>();
    if constexpr (has_output_quant<W>) lw.output = activation_quant<T>(ranges[static_cast<std::size_t>(node.output)]);
    if constexpr (has_filter<W>) {
      constexpr channel_axis axis =
          Layer::kind == std::string_view("depthwise") ? channel_axis::last : channel_axis::first;
      if (!quantize_conv<T>(fw.template layer<I>(), axis, quant[static_cast<std::size_t>(node.inputs[0])], lw, method))
        return false;
    }
    propagate_quant<Net, I>(out, quant);
  }
  return true;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Networks

struct quantize_options {
  /// The input quantization; by default chosen from the calibrated range of tensor 0. Images fed
  /// as raw u8 pixels: {1.0f, 0} with float inputs in [0, 255].
  std::optional<quant_params> input;
  /// Range of per-tensor u8 filters (int8 filters are per channel, always min/max).
  weight_range u8_filters = weight_range::min_max;
};

/// Fills `out` (every layer's filters, biases, scales and output quantization, and the input
/// quantization) from float weights and per-tensor ranges (index = tensor id, e.g. calibrate()'s
/// result). Returns false after reporting through mosaiq::require when sizes or scales are
/// unusable; `out` is then partly written.
template <class Net>
requires quantized_element<typename Net::element_type>
bool quantize_network(const float_weights<Net>& fw, const std::array<float_range, Net::tensor_count>& ranges,
                      typename Net::weights& out, const quantize_options& options = {}) {
  using T = typename Net::element_type;
  std::array<quant_params, Net::tensor_count> quant{};
  quant[0] = options.input ? *options.input : activation_quant<T>(ranges[0]);
  if (!require(std::isfinite(quant[0].scale) && quant[0].scale > 0.0f &&
                   quant[0].zero_point >= element_traits<T>::min && quant[0].zero_point <= element_traits<T>::max,
               errc::invalid_argument, "quantize_network: the input quantization is unusable"))
    return false;
  out.input = quant[0];
  bool ok = true;  // chunks after a failed layer are skipped, as the && fold skips its later layers
  mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
    ok = ok && (detail::quantize_layer<Net, I>(fw, ranges, quant, out, options.u8_filters) && ...);
  });
  return ok;
}

/// The same, into a new heap object (Net::weights holds every filter by value and may be large).
/// Null when quantization failed. (i16 networks: tools/quantize_16x8.hpp.)
template <class Net>
requires quantized_element<typename Net::element_type> std::unique_ptr<typename Net::weights> quantize_network(
    const float_weights<Net>& fw, const std::array<float_range, Net::tensor_count>& ranges,
    const quantize_options& options = {}) {
  auto out = std::make_unique<typename Net::weights>();
  if (!quantize_network<Net>(fw, ranges, *out, options)) return nullptr;
  return out;
}

/// Quantization of every tensor of Net with weights `w` (0: the input, tensor_count - 1: the
/// output), as Net::prepare derives it, without preparing kernels.
template <class Net>
std::array<quant_params, Net::tensor_count> tensor_quant(const typename Net::weights& w) {
  std::array<quant_params, Net::tensor_count> quant{};
  quant[0] = w.input;
  mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
    (detail::propagate_quant<Net, I>(w, quant), ...);
  });
  return quant;
}

template <class Net>
quant_params output_quant(const typename Net::weights& w) {
  return tensor_quant<Net>(w).back();
}

// ---------------------------------------------------------------------------------------------
// Values

/// real -> T: zero point + round(real / scale) (half away from zero), clamped. Views of equal
/// shape and batch (any strides); misuse is reported and nothing is written.
template <network_element T>
void quantize(tensor_view<const float> in, tensor_view<T> out, quant_params q) {
  if (!check_view(in, "tools::quantize: input") || !check_view(out, "tools::quantize: output") ||
      !require(in.dims() == out.dims() && in.batch() == out.batch(), errc::shape_mismatch,
               "tools::quantize: input and output shapes differ"))
    return;
  for (int n = 0; n < in.batch(); ++n)
    for (int y = 0; y < in.height(); ++y)
      for (int x = 0; x < in.width(); ++x)
        for (int c = 0; c < in.channels(); ++c) out(n, y, x, c) = quantize_value<T>(in(n, y, x, c), q);
}

template <network_element T>
std::vector<T> quantize(std::span<const float> values, quant_params q) {
  std::vector<T> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = quantize_value<T>(values[i], q);
  return out;
}

/// T -> real: scale * (q - zero point).
template <class U>
requires network_element<std::remove_const_t<U>>
void dequantize(tensor_view<U> in, tensor_view<float> out, quant_params q) {
  if (!check_view(in, "tools::dequantize: input") || !check_view(out, "tools::dequantize: output") ||
      !require(in.dims() == out.dims() && in.batch() == out.batch(), errc::shape_mismatch,
               "tools::dequantize: input and output shapes differ"))
    return;
  for (int n = 0; n < in.batch(); ++n)
    for (int y = 0; y < in.height(); ++y)
      for (int x = 0; x < in.width(); ++x)
        for (int c = 0; c < in.channels(); ++c) out(n, y, x, c) = dequantize_value(in(n, y, x, c), q);
}

template <class U>
requires network_element<std::remove_const_t<U>> std::vector<float> dequantize(std::span<U> values, quant_params q) {
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = dequantize_value(values[i], q);
  return out;
}

/// A float input (Net::input_shape, dense) quantized with the network's input quantization.
template <class Net>
std::vector<typename Net::element_type> quantize_input(const typename Net::weights& w, std::span<const float> input) {
  if (!require(input.size() == Net::input_shape.elements(), errc::shape_mismatch,
               "tools::quantize_input: input must have input_shape.elements() values"))
    return {};
  return quantize<typename Net::element_type>(input, w.input);
}

/// A network output (Net::output_shape) in floats, with the output quantization `w` gives.
template <class Net>
std::vector<float> dequantize_output(const typename Net::weights& w,
                                     std::span<const typename Net::element_type> output) {
  if (!require(output.size() == Net::output_shape.elements(), errc::shape_mismatch,
               "tools::dequantize_output: output must have output_shape.elements() values"))
    return {};
  return dequantize(output, output_quant<Net>(w));
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools
