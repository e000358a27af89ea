// A static network run in TFLite's 16x8 quantization through the reference kernels of reference/int16.hpp: int16
// activations (zero point 0), int8 symmetric per-channel filters, int64 biases. The oracle a 16x8 network element
// type and its SIMD kernels are checked against, and the way to measure what 16x8 costs a model in accuracy before
// those exist (docs/decisions.md, "Selfie 16x8"). Net only supplies the topology and the layer configs; its element
// type and quantized weights are not used. Quantization follows the converter's 16x8 mode:
//   activations  scale max(|min|, |max|) / 32767 of the calibrated range (no zero point); logistic outputs 1/32768;
//                average pool and resize outputs keep their input's scale (TFLite requires equal quantization);
//                MEAN (global_average_pool) outputs their own calibrated range (the converter does not tie them);
//   filters      i8 per output channel, max|w_c| / 127 (tools::quantize_weights_per_channel_i8);
//   biases       int64, round(b / (input scale * filter scale)).
// Plain scalar loops, heap storage, no speed: a 256x256 selfie frame takes about as long as the float twin.
//
//   mosaiq::tools::reference_16x8<net> net16;
//   net16.quantize(float_weights, mosaiq::tools::calibrate<net>(float_weights, samples));   // min/max ranges
//   net16.run(input);                                 // dense NHWC floats of net::input_shape
//   std::vector<float> mask = net16.output();         // dequantized
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/indexed.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/net/layers.hpp"
#include "mosaiq/net/network.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/tools/calibrate.hpp"
#include "mosaiq/tools/float_network.hpp"
#include "mosaiq/tools/quantize.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools {

/// The 16x8 activation scale of a calibrated range: symmetric, max(|min|, |max|) / 32767; a range that was always
/// zero gets 1 / 32767 (a zero scale cannot requantize).
inline float int16_activation_scale(float_range range) noexcept {
  const float half_range = std::max(std::fabs(range.min), std::fabs(range.max));
  return (half_range > 0.0f ? half_range : 1.0f) / 32767.0f;
}

/// An int64 bias of a 16x8 layer: round(b / (input scale * filter scale)), the scale a float product as TFLite
/// computes it; 0 for an all-zero filter channel (scale 0).
inline std::int64_t quantize_bias_64(float bias, float input_scale, float filter_scale) noexcept {
  const float bias_scale = input_scale * filter_scale;
  if (bias_scale == 0.0f) return 0;
  return static_cast<std::int64_t>(std::round(static_cast<double>(bias) / static_cast<double>(bias_scale)));
}

/// real -> int16 at `scale` (zero point 0): round half away from zero, saturated.
inline reference::i16 quantize_16(float real, float scale) noexcept {
  const float q = std::round(real / scale);
  return static_cast<reference::i16>(std::clamp(q, -32768.0f, 32767.0f));
}

/// What one layer of a 16x8 network runs with, prepared once by reference_16x8::quantize. Only the members of the
/// layer's kind are set.
struct layer_16x8 {
  std::vector<i8> filter;          ///< conv-like layers: per-channel int8, the float filter's layout
  std::vector<std::int64_t> bias;  ///< one per output channel
  reference::conv_requant_16x8 requant;
  reference::add_params_16 add;
  reference::mul_params_16 mul;
  reference::logistic_params_16 logistic;
  reference::hard_swish_params_16 hard_swish;
  reference::mean_params_16 mean;
};

template <class Net>
class reference_16x8 {
 public:
  static constexpr std::size_t tensor_count = Net::tensor_count;

  reference_16x8() {
    for (std::size_t t = 0; t < tensor_count; ++t) tensors_[t].assign(tensor_shape(t).elements(), 0);
  }

  static constexpr shape tensor_shape(std::size_t t) noexcept { return Net::topology.tensors[t].dims; }

  /// Quantizes the float weights `fw` with every tensor's calibrated range (index = tensor id, as tools::calibrate
  /// returns them; TFLite's 16x8 mode takes min/max ranges). Returns false after reporting through mosaiq::require
  /// when a filter has another size than its layer's or a scale gives a multiplier a 16x8 kernel cannot take; run()
  /// refuses until a quantize() succeeded.
  bool quantize(const float_weights<Net>& fw, const std::array<float_range, tensor_count>& ranges) {
    ready_ = false;
    scales_[0] = int16_activation_scale(ranges[0]);
    bool ok = true;
    mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      ((ok = ok && prepare_layer<I>(mosaiq::detail::element<I>(fw.layers), ranges)), ...);
    });
    ready_ = ok;
    return ok;
  }

  /// Runs the network on a dense NHWC input of Net::input_shape.elements() floats, quantized to tensor 0's scale.
  /// Misuse (no successful quantize(), a wrong size) is reported and nothing runs.
  bool run(std::span<const float> input) {
    if (!require(ready_, errc::invalid_argument, "reference_16x8::run: quantize() has not succeeded") ||
        !require(input.size() == Net::input_shape.elements(), errc::shape_mismatch,
                 "reference_16x8::run: input must have input_shape.elements() values"))
      return false;
    std::transform(input.begin(), input.end(), tensors_[0].begin(),
                   [s = scales_[0]](float x) { return quantize_16(x, s); });
    mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      (run_layer<I>(), ...);
    });
    return true;
  }

  /// Scale of tensor t (zero point 0).
  float scale(std::size_t t) const noexcept { return scales_[t]; }
  /// Values of tensor t of the last run (NHWC, dense).
  std::span<const reference::i16> values(std::size_t t) const noexcept { return tensors_[t]; }
  /// Tensor t of the last run in real numbers.
  std::vector<float> dequantized(std::size_t t) const {
    std::vector<float> real(tensors_[t].size());
    std::transform(tensors_[t].begin(), tensors_[t].end(), real.begin(),
                   [s = scales_[t]](reference::i16 q) { return static_cast<float>(q) * s; });
    return real;
  }
  std::vector<float> output() const { return dequantized(tensor_count - 1); }

 private:
  template <std::size_t I>
  using layer_t = typename Net::template layer<I>;

  template <std::size_t I>
  static constexpr bool is_conv_like =
      layer_t<I>::kind == std::string_view("conv2d") || layer_t<I>::kind == std::string_view("depthwise") ||
      layer_t<I>::kind == std::string_view("pointwise") || layer_t<I>::kind == std::string_view("transpose_conv");

  /// Layer I's output scale from its range or its kind; its filter, bias and parameters.
  template <std::size_t I, class FloatLayer>
  bool prepare_layer(const FloatLayer& fw, const std::array<float_range, tensor_count>& ranges) {
    using Layer = layer_t<I>;
    if constexpr (Layer::role != layer_role::op) {
      return true;
    } else {
      constexpr layer_node node = Net::topology.layers[I];
      constexpr std::string_view kind = Layer::kind;
      const auto out = static_cast<std::size_t>(node.output);
      const float in_scale = scales_[static_cast<std::size_t>(node.inputs[0])];
      if constexpr (kind == "logistic")
        scales_[out] = reference::logistic_output_quant_16.scale;
      else if constexpr (kind == "average_pool" || kind == "resize_bilinear")
        scales_[out] = in_scale;
      else
        scales_[out] = int16_activation_scale(ranges[out]);

      layer_16x8& l = layers_[I];
      if constexpr (is_conv_like<I>) {
        return prepare_conv<I>(fw, in_scale, scales_[out]);
      } else if constexpr (kind == "logistic") {
        l.logistic = reference::make_logistic_params_16(in_scale);
        return l.logistic.valid;
      } else if constexpr (kind == "hard_swish") {
        l.hard_swish = reference::make_hard_swish_params_16(in_scale, scales_[out]);
        return l.hard_swish.valid;
      } else if constexpr (kind == "global_average_pool") {
        const shape in_dims = tensor_shape(static_cast<std::size_t>(node.inputs[0]));
        l.mean = reference::make_mean_params_16<Net::round>(in_scale, scales_[out], in_dims.height * in_dims.width);
        return l.mean.valid;
      } else if constexpr (kind == "add" || kind == "mul") {
        const float other_scale = scales_[static_cast<std::size_t>(node.inputs[1])];
        if constexpr (kind == "add") {
          l.add = reference::make_add_params_16(in_scale, other_scale, scales_[out], Layer::act);
          return l.add.valid;
        } else {
          l.mul = reference::make_mul_params_16<Net::round>(in_scale, other_scale, scales_[out], Layer::act);
          return l.mul.valid;
        }
      } else {
        return true;  // average pool and resize need nothing beyond their scale
      }
    }
  }

  template <std::size_t I, class FloatLayer>
  bool prepare_conv(const FloatLayer& fw, float in_scale, float out_scale) {
    using Layer = layer_t<I>;
    if (!require(fw.filter.size() == FloatLayer::filter_elements && fw.bias.size() == FloatLayer::output_channels,
                 errc::shape_mismatch, "reference_16x8::quantize: a float filter or bias has another size"))
      return false;
    constexpr channel_axis axis =
        Layer::kind == std::string_view("depthwise") ? channel_axis::last : channel_axis::first;
    const per_channel_i8_weights q = quantize_weights_per_channel_i8(fw.filter, fw.bias.size(), axis);
    layer_16x8& l = layers_[I];
    l.filter = q.values;
    l.bias.resize(fw.bias.size());
    for (std::size_t c = 0; c < fw.bias.size(); ++c) l.bias[c] = quantize_bias_64(fw.bias[c], in_scale, q.scales[c]);
    l.requant = reference::make_conv_requant_16x8(in_scale, q.scales, out_scale, Layer::config.act);
    return !l.requant.multipliers.empty();
  }

  tensor_view<const reference::i16> input_view(int t) const noexcept {
    return {tensors_[static_cast<std::size_t>(t)].data(), tensor_shape(static_cast<std::size_t>(t))};
  }

  template <std::size_t I>
  void run_layer() {
    using Layer = layer_t<I>;
    if constexpr (Layer::role == layer_role::op) {
      constexpr layer_node node = Net::topology.layers[I];
      constexpr std::string_view kind = Layer::kind;
      constexpr auto R = Net::round;
      const auto out_id = static_cast<std::size_t>(node.output);
      const tensor_view<reference::i16> out(tensors_[out_id].data(), tensor_shape(out_id));
      const tensor_view<const reference::i16> in = input_view(node.inputs[0]);
      const layer_16x8& l = layers_[I];
      if constexpr (kind == "conv2d") {
        reference::conv2d_16x8(in, l.filter.data(), l.bias.data(), out, detail::conv2d_params_of(Layer::config),
                               l.requant);
      } else if constexpr (kind == "depthwise") {
        reference::depthwise_conv_16x8(in, l.filter.data(), l.bias.data(), out,
                                       detail::depthwise_params_of(Layer::config), l.requant);
      } else if constexpr (kind == "pointwise") {
        reference::pointwise_conv_16x8(in, l.filter.data(), l.bias.data(), out, l.requant);
      } else if constexpr (kind == "transpose_conv") {
        reference::transpose_conv_16x8(in, l.filter.data(), l.bias.data(), out,
                                       detail::transpose_conv_params_of(Layer::config), l.requant);
      } else if constexpr (kind == "average_pool") {
        reference::average_pool_16(in, out, detail::pool_params_of(Layer::config), scales_[out_id]);
      } else if constexpr (kind == "global_average_pool") {
        reference::mean_16<R>(in, out, l.mean);
      } else if constexpr (kind == "resize_bilinear") {
        reference::resize_bilinear_16<R>(in, out, Layer::config.mode);
      } else if constexpr (kind == "logistic") {
        reference::logistic_16(in, out, l.logistic);
      } else if constexpr (kind == "hard_swish") {
        reference::hard_swish_16<R>(in, out, l.hard_swish);
      } else if constexpr (kind == "add") {
        reference::add_16<R>(in, input_view(node.inputs[1]), out, l.add);
      } else if constexpr (kind == "mul") {
        reference::mul_16<R>(in, input_view(node.inputs[1]), out, l.mul);
      } else {
        static_assert(detail::unsupported_layer<Layer>,
                      "tools::reference_16x8: this layer kind has no 16x8 reference yet (reference/int16.hpp)");
      }
    }
  }

  std::array<float, tensor_count> scales_{};
  std::array<layer_16x8, Net::layer_count> layers_{};
  std::array<std::vector<reference::i16>, tensor_count> tensors_{};
  bool ready_ = false;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools
