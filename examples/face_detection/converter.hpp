// face-api's SSD-MobileNetV1 weights (tfjs manifest + bin) to a mosaiq face model:
//   1. read and dequantize the tfjs tensors (tfjs_weights.hpp);
//   2. lay them out for mosaiq (conv [Cout][KH][KW][Cin], depthwise [KH][KW][C], pointwise
//      [Cout][Cin]) and fold each depthwise layer's batch norm into its filter and bias;
//   3. calibrate activation ranges with the float network on sample photos;
//   4. quantize (u8 per-tensor or i8 per-channel weights) and keep the shipped anchors.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "face_model.hpp"
#include "image.hpp"
#include "mosaiq/tools.hpp"
#include "tfjs_weights.hpp"

namespace face {

inline const std::filesystem::path manifest_in_package = "model/ssd_mobilenetv1_model-weights_manifest.json";

/// The six demo photos of the package.
inline std::vector<std::filesystem::path> sample_photos(const std::filesystem::path& package) {
  std::vector<std::filesystem::path> photos;
  for (int i = 1; i <= 6; ++i) photos.push_back(package / "demo" / ("sample" + std::to_string(i) + ".jpg"));
  return photos;
}

template <quantized_element T>
struct float_model {
  using net = ssd_mobilenet_v1<T>;
  tools::float_weights<net> weights;
  std::vector<center_box> anchors;
};

namespace detail {

/// BatchNorm epsilon of face-api's depthwise layers (mobileNetV1.ts).
inline constexpr float batchnorm_epsilon = 0.0010000000474974513f;

template <class FloatConv>
void fill_from_source(FloatConv& layer, const weight_source& source, const weight_map& m) {
  std::vector<float>& filter = layer.filter;
  std::vector<float>& bias = layer.bias;
  const std::size_t cout = bias.size();
  if (source.kind == source_kind::depthwise_bn) {
    // [KH][KW][C][1] is mosaiq's [KH][KW][C] (depth multiplier 1).
    filter = need(m, source.prefix + "/depthwise_weights", filter.size()).values;
    std::fill(bias.begin(), bias.end(), 0.0f);
    const std::string bn = source.prefix + "/BatchNorm/";
    const tools::batchnorm_params params{need(m, bn + "gamma", cout).values, need(m, bn + "beta", cout).values,
                                         need(m, bn + "moving_mean", cout).values,
                                         need(m, bn + "moving_variance", cout).values, batchnorm_epsilon};
    if (!tools::fold_batchnorm_into_depthwise(filter, bias, params))
      throw std::runtime_error("cannot fold the batch norm of " + source.prefix);
    return;
  }
  // tfjs conv filters are [KH][KW][Cin][Cout]; mosaiq wants [Cout][KH][KW][Cin].
  const named_tensor& w = need(m, source.prefix + "/weights", filter.size());
  if (w.shape.size() != 4 || std::size_t(w.shape[3]) != cout)
    throw std::runtime_error(source.prefix + ": unexpected filter shape");
  const std::size_t taps = std::size_t(w.shape[0]) * std::size_t(w.shape[1]), cin = std::size_t(w.shape[2]);
  for (std::size_t t = 0; t < taps; ++t)
    for (std::size_t i = 0; i < cin; ++i)
      for (std::size_t o = 0; o < cout; ++o) filter[(o * taps + t) * cin + i] = w.values[(t * cin + i) * cout + o];
  const std::string bias_name =
      source.kind == source_kind::predictor ? source.prefix + "/biases" : source.prefix + "/convolution_bn_offset";
  bias = need(m, bias_name, cout).values;
}

}  // namespace detail

/// Reads the package's weights into the float network and its anchors.
template <quantized_element T>
std::unique_ptr<float_model<T>> read_face_api(const std::filesystem::path& package) {
  using net = ssd_mobilenet_v1<T>;
  const weight_map m = read_tfjs_weights(package / manifest_in_package);
  auto model = std::make_unique<float_model<T>>();
  const std::vector<weight_source> sources = weight_sources();
  std::size_t next = 0;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    const auto fill = [&]<std::size_t L>(std::integral_constant<std::size_t, L>) {
      auto& layer = model->weights.template layer<L>();
      if constexpr (requires { layer.filter; }) {
        if (next >= sources.size()) throw std::runtime_error("face network has more weighted layers than face-api");
        detail::fill_from_source(layer, sources[next++], m);
      }
    };
    (fill(std::integral_constant<std::size_t, I>{}), ...);
  }
  (std::make_index_sequence<net::layer_count>{});
  if (next != sources.size()) throw std::runtime_error("face-api has weights the face network does not use");

  const named_tensor& corners = need(m, "Output/extra_dim", anchor_count * 4);
  model->anchors.resize(anchor_count);
  for (std::size_t a = 0; a < anchor_count; ++a) {
    const float* c = corners.values.data() + a * 4;
    model->anchors[a] = anchor_from_corners(c[0], c[1], c[2], c[3]);
  }
  return model;
}

/// Float inputs of the sample photos, preprocessed as face-api does.
inline std::vector<std::vector<float>> calibration_inputs(const std::filesystem::path& package) {
  std::vector<std::vector<float>> inputs;
  for (const auto& photo : sample_photos(package))
    inputs.push_back(to_float_input(network_input(load_rgb(photo.string()))));
  return inputs;
}

/// Network input quantization: pixels are fed unchanged (u8) or shifted by -128 (i8), scale 1/127.5.
template <quantized_element T>
constexpr quant_params pixel_input_quant() noexcept {
  return {1.0f / 127.5f, std::is_same_v<T, u8> ? 128 : 0};
}

/// What the float network shows on the calibration photos: every tensor's range (for the
/// activation quantization) and per-channel mean (for bias correction). The u8 and i8 networks
/// have the same tensors, so one calibration serves both.
struct calibration {
  std::array<tools::float_range, ssd_mobilenet_v1<u8>::tensor_count> ranges{};
  std::vector<std::vector<double>> channel_means;  ///< [tensor][channel]
};

/// What calibrate_face_model does after each float run by default: nothing.
struct no_after_run {
  void operator()(const auto& /*runner*/, std::size_t /*input*/) const noexcept {}
};

/// `after_run(runner, i)` sees the float network's tensors for input i, so that a caller needing the float outputs
/// too (the face test's float detections) does not run the network a second time.
template <class AfterRun = no_after_run>
calibration calibrate_face_model(const float_model<u8>& source, const std::vector<std::vector<float>>& inputs,
                                 const tools::calibration_options& options = {}, AfterRun after_run = {}) {
  using net = ssd_mobilenet_v1<u8>;
  tools::calibrator<net> ranges(options);
  auto runner = std::make_unique<tools::float_runner<net>>();
  calibration result;
  result.channel_means.resize(net::tensor_count);
  for (std::size_t t = 0; t < net::tensor_count; ++t)
    result.channel_means[t].assign(std::size_t(net::topology.tensors[t].dims.channels), 0.0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<float>& input = inputs[i];
    if (!runner->run(source.weights, std::span<const float>(input)))
      throw std::runtime_error("calibration input of the wrong size");
    after_run(*runner, i);
    ranges.observe(*runner);
    for (std::size_t t = 0; t < net::tensor_count; ++t) {
      const std::span<const float> values = runner->values(t);
      std::vector<double>& means = result.channel_means[t];
      const std::size_t channels = means.size(), pixels = values.size() / channels;
      for (std::size_t i = 0; i < values.size(); ++i) means[i % channels] += values[i] / double(pixels * inputs.size());
    }
  }
  result.ranges = ranges.ranges();
  return result;
}

namespace detail {

/// Where output o's k-th weight sits in a float filter, and which input channel it reads:
/// depthwise [tap][C] reads channel o; conv2d/pointwise [o][tap][Cin].
struct weight_position {
  std::size_t index, input_channel;
};
inline weight_position weight_of(bool depthwise, std::size_t cout, std::size_t cin, std::size_t per_output,
                                 std::size_t o, std::size_t k) noexcept {
  return depthwise ? weight_position{k * cout + o, o} : weight_position{o * per_output + k, k % cin};
}

/// Bias correction (Nagel et al. 2019, "Data-free quantization"): a quantized filter w_q = w + e
/// shifts every output by e . E[x]; subtracting that expectation, measured per input channel on
/// the calibration photos, from the float bias removes the systematic part of the weight
/// rounding error. This matters for per-tensor u8 depthwise filters, whose scale is set by the
/// widest channel after batch norm folding. Taps in the padding are ignored.
template <class Net, std::size_t I, class FloatWeights>
void correct_bias(FloatWeights& fw, const typename Net::weights& qw, const calibration& cal) {
  auto& layer = fw.template layer<I>();
  if constexpr (requires { layer.filter; }) {
    const auto& q = qw.template layer<I>();
    const std::vector<double>& mean = cal.channel_means[std::size_t(Net::topology.layers[I].inputs[0])];
    const std::size_t cout = layer.bias.size(), cin = mean.size();
    const bool depthwise = Net::template layer<I>::kind == "depthwise";
    const std::size_t per_output = layer.filter.size() / cout;
    for (std::size_t o = 0; o < cout; ++o) {
      const float scale = q.filter_scales[q.filter_scales.size() == 1 ? 0 : o];
      double shift = 0;
      for (std::size_t k = 0; k < per_output; ++k) {
        const weight_position w = weight_of(depthwise, cout, cin, per_output, o, k);
        const double error = double(q.filter[w.index] - q.filter_zero_point) * scale - layer.filter[w.index];
        shift += error * mean[w.input_channel];
      }
      layer.bias[o] = static_cast<float>(layer.bias[o] - shift);
    }
  }
}

/// Per-channel mean of (quantized - float) of every tensor over the photos: the systematic error
/// the quantized network carries. `linear` counts only positions whose float value is strictly
/// inside a ReLU6 layer's (0, 6), where the error is not clipped away.
struct tensor_errors {
  std::vector<std::vector<double>> all, linear;
};

template <quantized_element T>
tensor_errors measure_errors(const tools::float_weights<ssd_mobilenet_v1<T>>& reference, const model<T>& quantized,
                             const std::vector<std::vector<float>>& inputs) {
  using net = ssd_mobilenet_v1<T>;
  tensor_errors e;
  std::vector<std::vector<double>> all_count(net::tensor_count), linear_count(net::tensor_count);
  e.all.resize(net::tensor_count), e.linear.resize(net::tensor_count);
  for (std::size_t t = 0; t < net::tensor_count; ++t) {
    const std::size_t c = std::size_t(net::topology.tensors[t].dims.channels);
    e.all[t].assign(c, 0), e.linear[t].assign(c, 0), all_count[t].assign(c, 0), linear_count[t].assign(c, 0);
  }
  const auto run = std::make_unique<detector<T>>(quantized);  // the prepared network and its arena
  const typename net::prepared& prepared = run->prepared();
  std::vector<T> output(net::output_shape.elements()), input(net::input_shape.elements());
  auto runner = std::make_unique<tools::float_runner<net>>();
  const auto accumulate = [&](std::size_t t, const T* q) {
    const quant_params qp = prepared.tensor_quant(t);
    const std::span<const float> f = runner->values(t);
    const std::size_t channels = e.all[t].size();
    for (std::size_t i = 0; i < f.size(); ++i) {
      const double d = (double(q[i]) - qp.zero_point) * qp.scale - f[i];
      e.all[t][i % channels] += d, all_count[t][i % channels] += 1;
      if (f[i] > 0.0f && f[i] < 6.0f) e.linear[t][i % channels] += d, linear_count[t][i % channels] += 1;
    }
  };
  for (const auto& x : inputs) {
    runner->run(reference, std::span<const float>(x));
    for (std::size_t i = 0; i < x.size(); ++i)  // the pixels back from x = p / 127.5 - 1
      input[i] = static_cast<T>(std::lround((x[i] + 1.0f) * 127.5f) - (std::is_same_v<T, u8> ? 0 : 128));
    struct observer {
      const decltype(accumulate)* add;
      void before(std::size_t) const noexcept {}
      void after(std::size_t layer, std::span<std::byte> a) const {
        const std::size_t t = std::size_t(net::topology.layers[layer].output);
        if (t + 1 < net::tensor_count) (*add)(t, reinterpret_cast<const T*>(a.data() + net::tensor_offset(t)));
      }
    };
    net::run_observed(prepared, tensor_view<const T>(input.data(), net::input_shape),
                      tensor_view<T>(output.data(), net::output_shape), run->arena(), observer{&accumulate});
    accumulate(net::tensor_count - 1, output.data());
  }
  for (std::size_t t = 0; t < net::tensor_count; ++t)
    for (std::size_t c = 0; c < e.all[t].size(); ++c) {
      e.all[t][c] /= std::max(all_count[t][c], 1.0);
      e.linear[t][c] /= std::max(linear_count[t][c], 1.0);
    }
  return e;
}

/// Empirical bias correction: the part of a layer's mean output error that its input's mean error
/// does not explain (through the layer's float filter) is the layer's own; its float bias loses it.
template <class Net, std::size_t I, class FloatWeights>
void correct_bias_empirically(FloatWeights& fw, const tensor_errors& e) {
  auto& layer = fw.template layer<I>();
  if constexpr (requires { layer.filter; }) {
    const layer_node node = Net::topology.layers[I];
    const std::vector<double>& in = e.all[std::size_t(node.inputs[0])];
    const std::vector<double>& out = e.linear[std::size_t(node.output)];
    const std::size_t cout = layer.bias.size(), cin = in.size(), per_output = layer.filter.size() / cout;
    const bool depthwise = Net::template layer<I>::kind == "depthwise";
    for (std::size_t o = 0; o < cout; ++o) {
      double propagated = 0;
      for (std::size_t k = 0; k < per_output; ++k) {
        const weight_position w = weight_of(depthwise, cout, cin, per_output, o, k);
        propagated += layer.filter[w.index] * in[w.input_channel];
      }
      layer.bias[o] = static_cast<float>(layer.bias[o] - (out[o] - propagated));
    }
  }
}

}  // namespace detail

/// Quantizes with calibrated ranges, then once more with bias-corrected float biases. The
/// quantized input (p - 128) / 127.5 is half a step below face-api's p / 127.5 - 1; the stem's
/// bias absorbs the difference (exact away from the border).
template <quantized_element T>
std::unique_ptr<model<T>> quantize_face_model(const float_model<T>& source, const calibration& cal,
                                              bool bias_correction = true,
                                              const std::vector<std::vector<float>>* empirical_inputs = nullptr,
                                              int empirical_passes = 1) {
  using net = ssd_mobilenet_v1<T>;
  auto shifted = std::make_unique<tools::float_weights<net>>(source.weights);
  auto& stem = shifted->template layer<0>();
  const std::size_t taps = stem.filter.size() / stem.bias.size();
  for (std::size_t o = 0; o < stem.bias.size(); ++o) {
    double sum = 0;
    for (std::size_t k = 0; k < taps; ++k) sum += stem.filter[o * taps + k];
    stem.bias[o] += static_cast<float>(0.5 / 127.5 * sum);
  }
  auto result = std::make_unique<model<T>>();
  result->anchors = source.anchors;
  const tools::quantize_options options{.input = pixel_input_quant<T>(), .u8_filters = tools::weight_range::mse};
  if (!tools::quantize_network<net>(*shifted, cal.ranges, result->weights, options))
    throw std::runtime_error("face model: quantization failed");
  if (bias_correction) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (detail::correct_bias<net, I>(*shifted, result->weights, cal), ...);
    }
    (std::make_index_sequence<net::layer_count>{});
    if (!tools::quantize_network<net>(*shifted, cal.ranges, result->weights, options))
      throw std::runtime_error("face model: quantization failed");
  }
  for (int pass = 0; empirical_inputs != nullptr && pass < empirical_passes; ++pass) {
    const detail::tensor_errors errors = detail::measure_errors<T>(source.weights, *result, *empirical_inputs);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (detail::correct_bias_empirically<net, I>(*shifted, errors), ...);
    }
    (std::make_index_sequence<net::layer_count>{});
    if (!tools::quantize_network<net>(*shifted, cal.ranges, result->weights, options))
      throw std::runtime_error("face model: quantization failed");
  }
  return result;
}

}  // namespace face
