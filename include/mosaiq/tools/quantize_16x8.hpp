// Post-training quantization of a 16x8 (i16) network: float weights and calibrated ranges to Net::weights, by the
// rules tools::reference_16x8::quantize encodes (TFLite converter's 16x8 mode), so that the network and that runner
// compute the same tensors bit for bit:
//   activations  symmetric, scale max(|min|, |max|) / 32767 of the calibrated range, zero point 0
//                (tools::int16_activation_scale); logistic outputs 1/32768, average pool and resize outputs their
//                input's scale (the executors' prepare() gives those, as for the 8-bit networks);
//   filters      int8 per output channel, max|w_c| / 127 (quantize_weights_per_channel_i8), no bias-driven widening;
//   biases       int64 round(b / (input scale * filter scale)) (tools::quantize_bias_64).
// The scale and bias functions are reference_16x8.hpp's own, so there is one definition of each rule; which layer's
// output takes which scale is the executors' (net/executor_16x8.hpp) and the runner's prepare_layer: the runner is to
// take them from the network's executors next (docs/decisions.md, "The i16 (16x8) network element, step 1").
//
//   auto w = mosaiq::tools::quantize_network<net16>(float_weights, mosaiq::tools::calibrate(float_weights, samples));
//   auto p = net16::prepare(*w);
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/net/network.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/tools/calibrate.hpp"
#include "mosaiq/tools/float_network.hpp"
#include "mosaiq/tools/quantize.hpp"
#include "mosaiq/tools/reference_16x8.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools {

/// The 16x8 quantization of a calibrated range: int16_activation_scale, zero point 0.
inline quant_params activation_quant_16(float_range range) noexcept { return {int16_activation_scale(range), 0}; }

namespace detail {

/// Fills a 16x8 conv layer's int8 per-channel filter, filter scales and int64 biases from float weights.
template <class FloatWeights, class QuantWeights>
bool quantize_conv_16x8(const FloatWeights& fw, channel_axis axis, quant_params input, QuantWeights& qw) {
  const std::size_t channels = qw.bias.size();
  if (!require(fw.filter.size() == qw.filter.size() && fw.bias.size() == channels, errc::shape_mismatch,
               "quantize_network (i16): float filter or bias has another size than the layer's"))
    return false;
  const per_channel_i8_weights w = quantize_weights_per_channel_i8(fw.filter, channels, axis);
  if (w.scales.size() != channels) return false;
  std::copy(w.values.begin(), w.values.end(), qw.filter.begin());
  std::copy(w.scales.begin(), w.scales.end(), qw.filter_scales.begin());
  for (std::size_t c = 0; c < channels; ++c) qw.bias[c] = quantize_bias_64(fw.bias[c], input.scale, w.scales[c]);
  return true;
}

template <class Net, std::size_t I>
bool quantize_layer_16x8(const float_weights<Net>& fw, const std::array<float_range, Net::tensor_count>& ranges,
                         std::array<quant_params, Net::tensor_count>& quant, typename Net::weights& out) {
  using Layer = typename Net::template layer<I>;
  if constexpr (Layer::role == layer_role::op) {
    using W = quantized_layer_weights_t<Net, I>;
    constexpr layer_node node = Net::topology.layers[I];
    W& lw = out.template layer<I>();
    if constexpr (has_output_quant<W>) lw.output = activation_quant_16(ranges[static_cast<std::size_t>(node.output)]);
    if constexpr (has_filter<W>) {
      constexpr channel_axis axis =
          Layer::kind == std::string_view("depthwise") ? channel_axis::last : channel_axis::first;
      if (!quantize_conv_16x8(fw.template layer<I>(), axis, quant[static_cast<std::size_t>(node.inputs[0])], lw))
        return false;
    }
    propagate_quant<Net, I>(out, quant);
  }
  return true;
}

}  // namespace detail

/// Fills `out` (the input quantization, every layer's filters, biases, filter scales and output quantization) of a
/// 16x8 network from float weights and per-tensor ranges (index = tensor id, as calibrate() returns them). The
/// input quantization is options.input when given (its zero point must be 0), else from range 0. Returns false after
/// reporting through mosaiq::require when sizes or scales are unusable; `out` is then partly written. A scale a
/// layer's 16x8 kernel cannot take is reported by Net::prepare, as reference_16x8::quantize reports it.
template <class Net>
requires std::same_as<typename Net::element_type, i16>
bool quantize_network(const float_weights<Net>& fw, const std::array<float_range, Net::tensor_count>& ranges,
                      typename Net::weights& out, const quantize_options& options = {}) {
  std::array<quant_params, Net::tensor_count> quant{};
  quant[0] = options.input ? *options.input : activation_quant_16(ranges[0]);
  if (!require(std::isfinite(quant[0].scale) && quant[0].scale > 0.0f && quant[0].zero_point == 0,
               errc::invalid_argument,
               "quantize_network (i16): the input quantization needs a finite positive scale and zero point 0"))
    return false;
  out.input = quant[0];
  bool ok = true;
  mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
    ok = ok && (detail::quantize_layer_16x8<Net, I>(fw, ranges, quant, out) && ...);
  });
  return ok;
}

/// The same, into a new heap object; null when quantization failed.
template <class Net>
requires std::same_as<typename Net::element_type, i16> std::unique_ptr<typename Net::weights> quantize_network(
    const float_weights<Net>& fw, const std::array<float_range, Net::tensor_count>& ranges,
    const quantize_options& options = {}) {
  auto out = std::make_unique<typename Net::weights>();
  if (!quantize_network<Net>(fw, ranges, *out, options)) return nullptr;
  return out;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools
