// Deterministic stand-in weights for any mosaiq static network, for speed and composition demos
// (NOT a trained model: the outputs mean nothing).
//
//   static net::weights w;
//   mosaiq_examples::make_demo_weights<net>(w, /*seed*/ 7, samples, input_quant);
//
// The recipe is post-training quantization (mosaiq::tools) of random float weights:
//  1. float weights drawn uniformly from a fixed-seed generator (splitmix64: the same stream on every
//     platform and standard library) with a He-like scale, std sqrt(2 / fan_in) before a ReLU/ReLU6
//     and sqrt(1 / fan_in) before a linear output, so activations keep their magnitude from layer to
//     layer; filters of linear outputs sum to zero and small random biases;
//  2. the biases of linear layers are then shifted so each output channel has zero mean on the
//     samples (without it the positive mean of ReLU features becomes a constant offset per class and
//     one class wins everywhere);
//  3. the float network runs on the samples and every tensor's min/max is recorded
//     (tools::calibrate); the inputs of a concat take the concat's range, as TFLite's converter
//     gives concatenation inputs and output one quantization, so the concat copies;
//  4. tools::quantize_network: u8 per tensor with a filter zero point, i8 per output channel.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mosaiq/mosaiq.hpp>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace mosaiq_examples {

/// splitmix64 (Steele, Lea, Flood 2014): a tiny generator whose stream is fully specified.
class splitmix64 {
 public:
  explicit constexpr splitmix64(std::uint64_t seed) noexcept : state_(seed) {}
  constexpr std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1), 24 random bits (exact in float).
  constexpr float uniform() noexcept {
    return static_cast<float>(static_cast<std::int32_t>(next() >> 40) - (1 << 23)) / static_cast<float>(1 << 23);
  }

 private:
  std::uint64_t state_;
};

namespace detail {

template <class Layer>
constexpr bool is_conv_like = Layer::role == mosaiq::layer_role::op && (Layer::kind == std::string_view("conv2d") ||
                                                                        Layer::kind == std::string_view("depthwise") ||
                                                                        Layer::kind == std::string_view("pointwise"));

template <class Layer>
constexpr bool is_linear_conv() {
  if constexpr (is_conv_like<Layer>)
    return Layer::config.act == mosaiq::activation::none;
  else
    return false;
}

/// Layers whose output keeps the input's quantization.
constexpr bool keeps_quantization(std::string_view kind) {
  return kind == "resize_bilinear" || kind == "resize_nearest" || kind == "average_pool" || kind == "max_pool";
}

template <class Net>
constexpr std::string_view kind_of(std::size_t layer) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::string_view kind;
    ((I == layer ? (kind = Net::template layer<I>::kind, 0) : 0), ...);
    return kind;
  }
  (std::make_index_sequence<Net::layer_count>{});
}

}  // namespace detail

/// Step 1: He-like random float weights (see the file comment).
template <class Net>
mosaiq::tools::float_weights<Net> random_float_weights(std::uint64_t seed) {
  mosaiq::tools::float_weights<Net> fw;
  splitmix64 rng(seed);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          using Layer = typename Net::template layer<I>;
          if constexpr (detail::is_conv_like<Layer>) {
            auto& lw = fw.template layer<I>();
            constexpr mosaiq::layer_node node = Net::topology.layers[I];
            constexpr bool depthwise = Layer::kind == std::string_view("depthwise");
            constexpr bool linear = detail::is_linear_conv<Layer>();
            const std::size_t count = lw.filter.size(), channels = lw.bias.size();
            const std::size_t fan_in =
                depthwise ? count / channels : count / static_cast<std::size_t>(node.dims.channels);
            const float a = std::sqrt(3.0f * (linear ? 1.0f : 2.0f) / static_cast<float>(fan_in));
            for (float& v : lw.filter) v = a * rng.uniform();
            // Depthwise filters are [KH][KW][C*M]; conv2d and pointwise [Cout][KH][KW][Cin].
            const auto channel_of = [&](std::size_t i) { return depthwise ? i % channels : i / (count / channels); };
            if (linear) {
              std::vector<double> sum(channels, 0.0);
              for (std::size_t i = 0; i < count; ++i) sum[channel_of(i)] += lw.filter[i];
              const double taps = static_cast<double>(count / channels);
              for (std::size_t i = 0; i < count; ++i) lw.filter[i] -= static_cast<float>(sum[channel_of(i)] / taps);
            }
            for (float& b : lw.bias) b = 0.05f * rng.uniform();
          }
        }(),
        ...);
  }
  (std::make_index_sequence<Net::layer_count>{});
  return fw;
}

/// Step 2: biases of linear conv layers shifted so that every output channel has zero mean over
/// `samples` (dense NHWC floats). One float run per sample; exact when no linear layer feeds
/// another through nonlinear layers (true of class-score heads).
template <class Net, class Samples>
void center_linear_outputs(mosaiq::tools::float_weights<Net>& fw, const Samples& samples) {
  std::array<std::vector<double>, Net::layer_count> mean{};
  mosaiq::tools::float_runner<Net> runner;
  std::size_t count = 0;
  for (const auto& sample : samples) {
    if (!runner.run(fw, std::span<const float>(sample))) return;
    ++count;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            using Layer = typename Net::template layer<I>;
            if constexpr (detail::is_linear_conv<Layer>()) {
              const auto values = runner.values(static_cast<std::size_t>(Net::topology.layers[I].output));
              const std::size_t channels = fw.template layer<I>().bias.size();
              mean[I].resize(channels, 0.0);
              const double pixels = static_cast<double>(values.size() / channels);
              for (std::size_t i = 0; i < values.size(); ++i) mean[I][i % channels] += values[i] / pixels;
            }
          }(),
          ...);
    }
    (std::make_index_sequence<Net::layer_count>{});
  }
  if (count == 0) return;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          if constexpr (detail::is_linear_conv<typename Net::template layer<I>>()) {
            auto& bias = fw.template layer<I>().bias;
            for (std::size_t c = 0; c < bias.size(); ++c)
              bias[c] -= static_cast<float>(mean[I][c] / static_cast<double>(count));
          }
        }(),
        ...);
  }
  (std::make_index_sequence<Net::layer_count>{});
}

/// Step 3, second half: every input of a concat gets the concat's range, and so does the tensor
/// each of them keeps its quantization from (through resizes and pools), so all of them quantize
/// alike and the concat copies bytes (TFLite's converter and XNNPACK require it; mosaiq would
/// requantize otherwise).
template <class Net>
void unify_concat_ranges(std::array<mosaiq::tools::float_range, Net::tensor_count>& ranges) {
  for (std::size_t layer = 0; layer < Net::layer_count; ++layer) {
    const mosaiq::layer_node& node = Net::topology.layers[layer];
    if (node.role != mosaiq::layer_role::op || detail::kind_of<Net>(layer) != "concat") continue;
    mosaiq::tools::float_range joint = ranges[static_cast<std::size_t>(node.output)];
    for (int k = 0; k < node.input_count; ++k) {
      const auto t = static_cast<std::size_t>(node.inputs[static_cast<std::size_t>(k)]);
      joint.min = std::min(joint.min, ranges[t].min), joint.max = std::max(joint.max, ranges[t].max);
    }
    ranges[static_cast<std::size_t>(node.output)] = joint;
    for (int k = 0; k < node.input_count; ++k) {
      auto t = static_cast<std::size_t>(node.inputs[static_cast<std::size_t>(k)]);
      for (;;) {
        ranges[t] = joint;
        const int producer = Net::topology.tensors[t].producer;
        if (producer < 0 || !detail::keeps_quantization(detail::kind_of<Net>(static_cast<std::size_t>(producer))))
          break;
        t = static_cast<std::size_t>(Net::topology.layers[static_cast<std::size_t>(producer)].inputs[0]);
      }
    }
  }
}

/// Steps 1-4: fills `out` for Net. `samples` are dense NHWC float inputs (the real values the
/// input quantization `input` maps the input bytes to); `input` is stored as out.input.
template <class Net, class Samples>
bool make_demo_weights(typename Net::weights& out, std::uint64_t seed, const Samples& samples,
                       mosaiq::quant_params input) {
  mosaiq::tools::float_weights<Net> fw = random_float_weights<Net>(seed);
  center_linear_outputs<Net>(fw, samples);
  auto ranges = mosaiq::tools::calibrate<Net>(fw, samples);
  unify_concat_ranges<Net>(ranges);
  return mosaiq::tools::quantize_network<Net>(fw, ranges, out, {.input = input});
}

}  // namespace mosaiq_examples
