// The float twin of a static network: per-layer float weights in the layouts the quantized weights
// use, and a runner that computes every tensor of the network in float with the reference float
// ops, following Net::topology (taps, branches, adds and concats). The offline half of
// post-training quantization (tools/calibrate.hpp records tensor ranges from it,
// tools/quantize.hpp turns float weights and ranges into Net::weights); it allocates freely.
//
//   using net = mosaiq::network<mosaiq::input<mosaiq::u8, 64, 64, 3>, ...>;
//   mosaiq::tools::float_weights<net> fw;          // fill fw.layer<I>().filter / .bias
//   mosaiq::tools::float_runner<net> runner;
//   runner.run(fw, image);                          // image: 64x64x3 floats, NHWC
//   auto probabilities = runner.output();           // or runner.tensor(i), runner.tensor<"skip">()
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/indexed.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/net/layers.hpp"
#include "mosaiq/net/network.hpp"
#include "mosaiq/net/reference_params.hpp"
#include "mosaiq/reference/conv.hpp"
#include "mosaiq/reference/depthwise.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/reference/hard_swish.hpp"
#include "mosaiq/reference/pointwise.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/reference/resize.hpp"
#include "mosaiq/reference/softmax.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools {

/// Float filter and bias of a conv2d, depthwise or pointwise layer, in the quantized layouts:
/// conv2d [Cout][KH][KW][Cin], depthwise [KH][KW][C*M], pointwise [Cout][Cin]; one bias per output
/// channel. Sized at construction (heap storage: float weights of a real network do not belong on
/// the stack); resizing them is a misuse that quantize_network reports.
template <std::size_t FilterElements, std::size_t OutputChannels>
struct float_conv_weights {
  static constexpr std::size_t filter_elements = FilterElements;
  static constexpr std::size_t output_channels = OutputChannels;
  std::vector<float> filter = std::vector<float>(FilterElements, 0.0f);
  std::vector<float> bias = std::vector<float>(OutputChannels, 0.0f);
};

/// Layers without float weights (pooling, resize, softmax, add, concat, tap, from, output).
struct no_float_weights {};

namespace detail {

/// Quantized weights with a filter: conv2d, depthwise, pointwise (and any later conv-like layer).
template <class W>
concept has_filter = requires(W w) {
  w.filter;
  w.bias;
  w.filter_scales;
};

/// Quantized weights that carry the layer's output quantization.
template <class W>
concept has_output_quant = requires(W w) {
  { w.output } -> std::convertible_to<quant_params>;
};

template <class W>
struct float_weights_for {
  using type = no_float_weights;
};
template <has_filter W>
struct float_weights_for<W> {
  using type = float_conv_weights<std::tuple_size_v<decltype(W::filter)>, std::tuple_size_v<decltype(W::bias)>>;
};

/// Net::layer_weights<I>, derived from the layer descriptor (the same type; spelled here because
/// clang 14 checks access to network's private helpers when the public alias is used from outside).
template <class Net, std::size_t I, bool Op = Net::topology.layers[I].role == layer_role::op>
struct quantized_layer_weights {
  using type = layers::no_weights;
};
template <class Net, std::size_t I>
struct quantized_layer_weights<Net, I, true> {
  using type =
      typename Net::template layer<I>::template weights<typename Net::element_type, Net::template layer_input_shape<I>,
                                                        Net::topology.layers[I].dims>;
};
template <class Net, std::size_t I>
using quantized_layer_weights_t = typename quantized_layer_weights<Net, I>::type;

template <class Net, std::size_t... I>
auto float_weights_tuple(std::index_sequence<I...>)
    -> mosaiq::detail::indexed_tuple<typename float_weights_for<quantized_layer_weights_t<Net, I>>::type...>;

template <class>
inline constexpr bool unsupported_layer = false;

/// The reference kernels' parameters of a layer config (net/reference_params.hpp: the float and the 16x8 runners and
/// the 16x8 network's executors call the same kernels' twins).
using mosaiq::detail::conv2d_params_of;
using mosaiq::detail::depthwise_params_of;
using mosaiq::detail::pool_params_of;
using mosaiq::detail::transpose_conv_params_of;

}  // namespace detail

/// Float weights of every layer of Net, indexed like Net::weights: layer<I>() is a
/// float_conv_weights for conv-like layers, no_float_weights for the others.
template <class Net>
struct float_weights {
  decltype(detail::float_weights_tuple<Net>(std::make_index_sequence<Net::layer_count>{})) layers{};

  template <std::size_t I>
  auto& layer() noexcept {
    return mosaiq::detail::element<I>(layers);
  }
  template <std::size_t I>
  const auto& layer() const noexcept {
    return mosaiq::detail::element<I>(layers);
  }
};

/// Runs Net in float, layer by layer, and keeps every tensor (tensor 0 is the input, the last one
/// the output, the ids are Net::topology's). Each op layer runs its reference float twin:
/// conv2d/depthwise/pointwise with bias and fused activation, average/max pool with activation,
/// global average pool, bilinear/nearest resize, softmax (beta), logistic, add and mul (activation),
/// concat. Tap, output and from layers only name tensors (dispatch is on Layer::role).
template <class Net>
class float_runner {
 public:
  static constexpr std::size_t tensor_count = Net::tensor_count;

  float_runner() {
    for (std::size_t t = 0; t < tensor_count; ++t) tensors_[t].assign(Net::topology.tensors[t].dims.elements(), 0.0f);
  }

  /// Shape of tensor `t`.
  static constexpr shape tensor_shape(std::size_t t) noexcept { return Net::topology.tensors[t].dims; }

  /// Computes the network on `input` (Net::input_shape, batch 1, any pixel stride). Misuse
  /// (a wrong shape, an invalid view) is reported through mosaiq::require and nothing runs.
  bool run(const float_weights<Net>& w, tensor_view<const float> input) {
    return run(w, input, [](std::size_t, std::span<float>) {});
  }

  /// The same, calling `on_tensor(t, values)` on the input (t = 0) and on each op layer's output
  /// tensor t as soon as it is computed, before any later layer reads it. The values (dense NHWC
  /// std::span<float>) may be changed in place: rounding chosen tensors to a quantization grid
  /// simulates a quantized network in float, one tensor's precision at a time.
  template <class OnTensor>
  bool run(const float_weights<Net>& w, tensor_view<const float> input, OnTensor&& on_tensor) {
    if (!check_view(input, "float_runner::run: input") ||
        !require(input.dims() == Net::input_shape && input.batch() == 1, errc::shape_mismatch,
                 "float_runner::run: input must have the network's input shape and batch 1"))
      return false;
    if (!check_sizes(w)) return false;
    const tensor_view<float> first = view(0);
    for (int y = 0; y < input.height(); ++y)
      for (int x = 0; x < input.width(); ++x)
        for (int c = 0; c < input.channels(); ++c) first(y, x, c) = input(y, x, c);
    on_tensor(std::size_t{0}, std::span<float>(tensors_[0]));
    mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      (run_layer<I>(mosaiq::detail::element<I>(w.layers), on_tensor), ...);
    });
    return true;
  }

  /// Dense NHWC input of Net::input_shape.elements() floats.
  bool run(const float_weights<Net>& w, std::span<const float> input) {
    return run(w, input, [](std::size_t, std::span<float>) {});
  }
  template <class OnTensor>
  bool run(const float_weights<Net>& w, std::span<const float> input, OnTensor&& on_tensor) {
    if (!require(input.size() == Net::input_shape.elements(), errc::shape_mismatch,
                 "float_runner::run: input must have input_shape.elements() values"))
      return false;
    return run(w, tensor_view<const float>(input.data(), Net::input_shape), on_tensor);
  }

  /// Tensor `t` of the last run (dense, batch 1).
  tensor_view<const float> tensor(std::size_t t) const noexcept {
    return tensor_view<const float>(tensors_[t].data(), tensor_shape(t));
  }
  /// The tensor a tap or output layer names.
  template <fixed_string Name>
  tensor_view<const float> tensor() const noexcept {
    static_assert(Net::template tensor_named<Name> < tensor_count,
                  "float_runner: no tap or output layer has this name");
    return tensor(Net::template tensor_named<Name>);
  }
  /// Values of tensor `t` (NHWC, dense).
  std::span<const float> values(std::size_t t) const noexcept { return tensors_[t]; }
  tensor_view<const float> output() const noexcept { return tensor(tensor_count - 1); }

 private:
  tensor_view<float> view(std::size_t t) noexcept { return tensor_view<float>(tensors_[t].data(), tensor_shape(t)); }

  /// Every float filter and bias still has its layer's size (they are vectors a caller may resize).
  static bool check_sizes(const float_weights<Net>& w) {
    bool ok = true;
    mosaiq::detail::for_each_element(w.layers, [&]<class L>(const L& l) {
      if constexpr (!std::is_same_v<L, no_float_weights>)
        ok = ok && l.filter.size() == L::filter_elements && l.bias.size() == L::output_channels;
    });
    return require(ok, errc::shape_mismatch,
                   "float_runner::run: a float filter or bias has another size than its layer's");
  }

  template <std::size_t I, class W, class OnTensor>
  void run_layer(const W& lw, OnTensor& on_tensor) {
    using Layer = typename Net::template layer<I>;
    if constexpr (Layer::role == layer_role::op) {
      constexpr layer_node node = Net::topology.layers[I];
      constexpr std::size_t arity = Layer::inputs.size();
      std::array<tensor_view<const float>, arity> in{};
      for (std::size_t k = 0; k < arity; ++k) in[k] = tensor(static_cast<std::size_t>(node.inputs[k]));
      const tensor_view<float> out = view(static_cast<std::size_t>(node.output));
      constexpr std::string_view kind = Layer::kind;

      if constexpr (kind == "conv2d") {
        constexpr auto c = Layer::config;
        reference::conv2d(in[0], lw.filter.data(), lw.bias.data(), out, detail::conv2d_params_of(c), c.act);
      } else if constexpr (kind == "depthwise") {
        constexpr auto c = Layer::config;
        reference::depthwise_conv(in[0], lw.filter.data(), lw.bias.data(), out, detail::depthwise_params_of(c), c.act);
      } else if constexpr (kind == "transpose_conv") {
        constexpr auto c = Layer::config;
        reference::transpose_conv(in[0], lw.filter.data(), lw.bias.data(), out, detail::transpose_conv_params_of(c),
                                  c.act);
      } else if constexpr (kind == "pointwise") {
        reference::pointwise_conv(in[0], lw.filter.data(), lw.bias.data(), out, Layer::config.act);
      } else if constexpr (kind == "average_pool" || kind == "max_pool") {
        const reference::pool_params p = detail::pool_params_of(Layer::config);
        if constexpr (kind == "average_pool")
          reference::average_pool(in[0], out, p);
        else
          reference::max_pool(in[0], out, p);
      } else if constexpr (kind == "global_average_pool") {
        reference::global_average_pool(in[0], out);
      } else if constexpr (kind == "resize_bilinear") {
        reference::resize_bilinear(in[0], out, Layer::config.mode);
      } else if constexpr (kind == "resize_nearest") {
        reference::resize_nearest<float>(in[0], out, Layer::config.mode);
      } else if constexpr (kind == "softmax") {
        reference::softmax(in[0], out, Layer::config.beta);
      } else if constexpr (kind == "logistic") {
        reference::logistic(in[0], out);
      } else if constexpr (kind == "hard_swish") {
        reference::hard_swish(in[0], out);
      } else if constexpr (kind == "add") {
        reference::add(in[0], in[1], out, Layer::act);
      } else if constexpr (kind == "mul") {
        reference::mul(in[0], in[1], out, Layer::act);
      } else if constexpr (kind == "concat") {
        reference::concat(std::span<const tensor_view<const float>>(in), out);
      } else {
        static_assert(detail::unsupported_layer<Layer>,
                      "tools::float_runner: this layer kind has no float implementation yet (add it here)");
      }
      on_tensor(static_cast<std::size_t>(node.output), std::span<float>(tensors_[std::size_t(node.output)]));
    }
  }

  std::array<std::vector<float>, tensor_count> tensors_{};
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools
