// Layer descriptors of static networks: compile-time configs (class-type template arguments with
// designated initializers), shape inference, cost (MACs, parameters) and the weights each layer
// owns. How a layer runs lives in net/executor.hpp.
//
// They are in mosaiq::layers because mosaiq::depthwise (and later the other op names) are taken
// by the fast kernel class templates in ops/.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <tuple>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/resize_mode.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/net/banding.hpp"
#include "mosaiq/ops/conv.hpp"
#include "mosaiq/ops/depthwise.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/ops/resize.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// A string usable as a template argument: the names of tapped tensors, `layers::tap<"skip">`.
template <std::size_t N>
struct fixed_string {
  char chars[N]{};
  constexpr fixed_string(const char (&text)[N]) noexcept { std::copy_n(text, N, chars); }
  constexpr std::string_view view() const noexcept { return {chars, N - 1}; }
};

/// The network input: element type, shape, the rounding every layer requantizes with, and the most
/// threads a run may use (the arena holds that many workspace slices per layer that needs one). The element is u8,
/// i8, or i16 for TFLite's 16x8 mode (net/executor_16x8.hpp: its layers, zero points 0).
template <network_element T, int Height, int Width, int Channels, rounding Round = rounding::tflite_reference,
          int MaxThreads = 1, banding Banding = banding::off()>
struct input {
  static_assert(Height > 0 && Width > 0 && Channels > 0, "mosaiq::input: every extent must be positive");
  static_assert(MaxThreads >= 1, "mosaiq::input: MaxThreads must be at least 1");
  using element_type = T;
  static constexpr shape dims{Height, Width, Channels};
  static constexpr rounding round = Round;
  static constexpr int max_threads = MaxThreads;
  static constexpr banding bands = Banding;
  /// The same input for runs on up to N threads: `mosaiq::input<u8, 64, 64, 3>::with_max_threads<4>`.
  template <int N>
  using with_max_threads = input<T, Height, Width, Channels, Round, N, Banding>;
  /// The same input with a banding choice (net/banding.hpp): `...::with_banding<mosaiq::banding::automatic()>`.
  template <banding B>
  using with_banding = input<T, Height, Width, Channels, Round, MaxThreads, B>;
  /// The same input with another element type: `...::with_element<mosaiq::i16>` (the 16x8 twin of an 8-bit one).
  template <network_element E>
  using with_element = input<E, Height, Width, Channels, Round, MaxThreads, Banding>;
};

/// What a layer is in the layer list: an op makes a new tensor; a tap names the current tensor;
/// `from` makes a named tensor current again (the start of a branch).
enum class layer_role { op, tap, from };

/// Why a layer does not fit the tensors it is given (reported by network's static_asserts).
enum class shape_error { none, add_shape_mismatch, concat_spatial_mismatch, window_does_not_fit, invalid_config };

struct shape_result {
  shape output{};
  shape_error error = shape_error::none;
};

/// Multiply-accumulates and stored parameters of one layer.
struct layer_cost {
  std::uint64_t macs = 0;
  std::uint64_t filter_elements = 0;  ///< 8-bit weights
  std::uint64_t bias_elements = 0;    ///< int32 biases
};

namespace layers {

/// In `inputs` lists, the tensor the previous layer produced (or `from` selected).
inline constexpr std::string_view current_tensor{};

/// Weights of layers that have none besides, possibly, an output quantization.
struct no_weights {
  constexpr auto fields() noexcept { return std::tuple<>{}; }
  constexpr auto fields() const noexcept { return std::tuple<>{}; }
};

/// The output quantization of a layer that requantizes without weights (add, concat, mean).
struct output_quant_weights {
  quant_params output{};
  constexpr auto fields() noexcept { return std::tie(output); }
  constexpr auto fields() const noexcept { return std::tie(output); }
};

/// uint8 convolutions are per-tensor (one filter scale), int8 ones per output channel.
template <network_element T>
constexpr std::size_t filter_scale_count(int output_channels) noexcept {
  return std::same_as<T, u8> ? 1 : static_cast<std::size_t>(output_channels);
}

/// Weights of conv2d, depthwise and pointwise, in the layouts the reference ops take.
template <network_element T, std::size_t FilterElements, int OutputChannels>
struct conv_weights {
  std::array<T, FilterElements> filter{};
  std::array<std::int32_t, static_cast<std::size_t>(OutputChannels)> bias{};
  std::array<float, filter_scale_count<T>(OutputChannels)> filter_scales{};
  std::int32_t filter_zero_point = 0;  ///< uint8 only; int8 filters are symmetric
  quant_params output{};
  constexpr auto fields() noexcept { return std::tie(filter, bias, filter_scales, filter_zero_point, output); }
  constexpr auto fields() const noexcept { return std::tie(filter, bias, filter_scales, filter_zero_point, output); }
};

/// Weights of conv-like layers in a 16x8 (i16) network, TFLite's 16x8 mode: int8 symmetric per-channel filters and
/// int64 biases (the accumulator of a 16x8 layer is int64 in TFLite); the output quantization has zero point 0.
template <std::size_t FilterElements, int OutputChannels>
struct conv_weights<i16, FilterElements, OutputChannels> {
  std::array<i8, FilterElements> filter{};
  std::array<std::int64_t, static_cast<std::size_t>(OutputChannels)> bias{};
  std::array<float, static_cast<std::size_t>(OutputChannels)> filter_scales{};
  quant_params output{};
  constexpr auto fields() noexcept { return std::tie(filter, bias, filter_scales, output); }
  constexpr auto fields() const noexcept { return std::tie(filter, bias, filter_scales, output); }
};

constexpr bool fits(shape s) noexcept { return s.height > 0 && s.width > 0 && s.channels > 0; }

constexpr std::uint64_t count(shape s) noexcept { return s.elements(); }

// ---------------------------------------------------------------------------------------------
// Windowed convolutions.

// A layer's config is its op's config (ops/), so a field added to an op is a field of its layer. The
// network's input<..., Round> decides the rounding of every layer: `.round` stays unset in a layer.
using conv2d_config = mosaiq::conv2d_config;
using depthwise_config = mosaiq::depthwise_config;
using pointwise_config = mosaiq::pointwise_config;

constexpr shape_result windowed_output(shape in, hw kernel, hw stride, hw dilation, padding pad, int channels,
                                       bool config_ok) noexcept {
  if (!config_ok || !is_valid_window(kernel, stride, dilation, pad) || channels <= 0)
    return {{1, 1, 1}, shape_error::invalid_config};
  const window_geometry g = resolve_window(in.height, in.width, kernel, stride, dilation, pad);
  if (g.y.output <= 0 || g.x.output <= 0) return {{1, 1, 1}, shape_error::window_does_not_fit};
  return {{g.y.output, g.x.output, channels}};
}

/// General convolution, filter [Cout][KH][KW][Cin].
template <conv2d_config Config>
struct conv2d {
  static_assert(Config.round == rounding::tflite_reference,
                "mosaiq::layers::conv2d: the network's input<..., Round> sets the rounding: leave .round unset");
  static constexpr conv2d_config config = Config;
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "conv2d";
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept {
    return windowed_output(in[0], Config.kernel, Config.stride, Config.dilation, Config.pad, Config.out_channels, true);
  }
  static constexpr layer_cost cost(shape in, shape out) noexcept {
    const std::uint64_t taps = std::uint64_t(Config.kernel.h) * Config.kernel.w * in.channels;
    return {count(out) * taps, taps * out.channels, std::uint64_t(out.channels)};
  }
  template <network_element T, shape In, shape Out>
  using weights =
      conv_weights<T, std::size_t(Out.channels) * Config.kernel.h * Config.kernel.w * In.channels, Out.channels>;
};

/// Depthwise convolution, filter [KH][KW][C*M], output channel ic * M + m.
template <depthwise_config Config = depthwise_config{}>
struct depthwise {
  static_assert(Config.round == rounding::tflite_reference,
                "mosaiq::layers::depthwise: the network's input<..., Round> sets the rounding: leave .round unset");
  static constexpr depthwise_config config = Config;
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "depthwise";
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept {
    return windowed_output(in[0], Config.kernel, Config.stride, Config.dilation, Config.pad,
                           in[0].channels * Config.depth_multiplier, Config.depth_multiplier >= 1);
  }
  static constexpr layer_cost cost(shape, shape out) noexcept {
    const std::uint64_t taps = std::uint64_t(Config.kernel.h) * Config.kernel.w;
    return {count(out) * taps, taps * out.channels, std::uint64_t(out.channels)};
  }
  template <network_element T, shape In, shape Out>
  using weights = conv_weights<T, std::size_t(Config.kernel.h) * Config.kernel.w * Out.channels, Out.channels>;
};

/// 1x1 convolution, filter [Cout][Cin].
template <pointwise_config Config>
struct pointwise {
  static_assert(Config.round == rounding::tflite_reference,
                "mosaiq::layers::pointwise: the network's input<..., Round> sets the rounding: leave .round unset");
  static constexpr pointwise_config config = Config;
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "pointwise";
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept {
    if (Config.out_channels <= 0) return {{1, 1, 1}, shape_error::invalid_config};
    return {{in[0].height, in[0].width, Config.out_channels}};
  }
  static constexpr layer_cost cost(shape in, shape out) noexcept {
    return {count(out) * std::uint64_t(in.channels), std::uint64_t(in.channels) * out.channels,
            std::uint64_t(out.channels)};
  }
  template <network_element T, shape In, shape Out>
  using weights = conv_weights<T, std::size_t(Out.channels) * In.channels, Out.channels>;
};

struct transpose_conv_config {
  int out_channels = 0;
  hw kernel{2, 2};
  hw stride{2, 2};
  mosaiq::padding padding = mosaiq::padding::same();
  activation act = activation::none;
  friend constexpr bool operator==(const transpose_conv_config&, const transpose_conv_config&) = default;
};

/// Transposed convolution (TFLite TRANSPOSE_CONV with bias), filter [Cout][KH][KW][Cin]; the output extents are
/// TensorFlow's: SAME in * stride, VALID in * stride + max(kernel - stride, 0).
template <transpose_conv_config Config>
struct transpose_conv {
  static constexpr transpose_conv_config config = Config;
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "transpose_conv";
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept {
    if (Config.out_channels <= 0 || !is_valid_window(Config.kernel, Config.stride, hw{1, 1}, Config.padding) ||
        Config.padding.mode == padding_mode::explicit_pads)
      return {{1, 1, 1}, shape_error::invalid_config};
    const auto extent = [](int input, int k, int s) {
      return Config.padding.mode == padding_mode::valid ? input * s + std::max(k - s, 0) : input * s;
    };
    return {{extent(in[0].height, Config.kernel.h, Config.stride.h),
             extent(in[0].width, Config.kernel.w, Config.stride.w), Config.out_channels}};
  }
  /// Every input pixel meets every filter tap (taps falling outside the output are counted too).
  static constexpr layer_cost cost(shape in, shape out) noexcept {
    const std::uint64_t taps = std::uint64_t(Config.kernel.h) * Config.kernel.w * in.channels;
    return {std::uint64_t(in.pixels()) * taps * std::uint64_t(out.channels), taps * out.channels,
            std::uint64_t(out.channels)};
  }
  template <network_element T, shape In, shape Out>
  using weights =
      conv_weights<T, std::size_t(Out.channels) * Config.kernel.h * Config.kernel.w * In.channels, Out.channels>;
};

// ---------------------------------------------------------------------------------------------
// Pooling, resize, softmax: no weights; pooling and resize keep the input quantization.

/// Not the op's pool_params: a pool layer defaults to 2x2 windows at stride 2 (the usual downsampling step), the op
/// to no kernel and stride 1.
struct pool_config {
  hw kernel{2, 2};
  hw stride{2, 2};
  padding pad = padding::valid();
  activation act = activation::none;
  friend constexpr bool operator==(const pool_config&, const pool_config&) = default;
};

template <pool_config Config, std::string_view const& Kind>
struct pool_layer {
  static constexpr pool_config config = Config;
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = Kind;
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept {
    return windowed_output(in[0], Config.kernel, Config.stride, hw{1, 1}, Config.pad, in[0].channels, true);
  }
  /// One accumulate per window tap.
  static constexpr layer_cost cost(shape, shape out) noexcept {
    return {count(out) * std::uint64_t(Config.kernel.h) * Config.kernel.w, 0, 0};
  }
  template <network_element T, shape In, shape Out>
  using weights = no_weights;
};

inline constexpr std::string_view average_pool_kind = "average_pool";
inline constexpr std::string_view max_pool_kind = "max_pool";
template <pool_config Config = pool_config{}>
struct average_pool : pool_layer<Config, average_pool_kind> {};
template <pool_config Config = pool_config{}>
struct max_pool : pool_layer<Config, max_pool_kind> {};

/// Mean over height and width (TFLite MEAN with keep_dims): output 1 x 1 x C, may requantize.
/// (The unused parameter only makes the spelling `global_average_pool<>` match the other layers.)
template <int Unused = 0>
struct global_average_pool {
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "global_average_pool";
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept { return {{1, 1, in[0].channels}}; }
  static constexpr layer_cost cost(shape in, shape) noexcept { return {count(in), 0, 0}; }
  template <network_element T, shape In, shape Out>
  using weights = output_quant_weights;
};

using resize_config = mosaiq::resize_config;

template <resize_config Config, std::string_view const& Kind, std::uint64_t TapsPerOutput>
struct resize_layer {
  static_assert(Config.out_height == 0 && Config.out_width == 0,
                "mosaiq::layers: a resize layer scales by an integer .scale; .out_height and .out_width are the op's");
  static constexpr resize_config config = Config;
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = Kind;
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept {
    if (Config.scale < 1) return {{1, 1, 1}, shape_error::invalid_config};
    return {{in[0].height * Config.scale, in[0].width * Config.scale, in[0].channels}};
  }
  /// Bilinear: four weighted taps per output element; nearest: none.
  static constexpr layer_cost cost(shape, shape out) noexcept { return {count(out) * TapsPerOutput, 0, 0}; }
  template <network_element T, shape In, shape Out>
  using weights = no_weights;
};

inline constexpr std::string_view resize_bilinear_kind = "resize_bilinear";
inline constexpr std::string_view resize_nearest_kind = "resize_nearest";
/// Upsampling by an integer factor; input and output share quantization (as in TFLite).
template <resize_config Config = resize_config{}>
struct resize_bilinear : resize_layer<Config, resize_bilinear_kind, 4> {};
template <resize_config Config = resize_config{}>
struct resize_nearest : resize_layer<Config, resize_nearest_kind, 0> {};

/// Not the op's softmax_config, which is the channel count (a layer takes it from its input shape): beta.
struct softmax_config {
  float beta = 1.0f;
  friend constexpr bool operator==(const softmax_config&, const softmax_config&) = default;
};

/// Softmax over channels; output quantization is fixed (scale 1/256, zero point at the minimum).
template <softmax_config Config = softmax_config{}>
struct softmax {
  static constexpr softmax_config config = Config;
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "softmax";
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept {
    if (!(Config.beta > 0.0f)) return {in[0], shape_error::invalid_config};
    return {in[0]};
  }
  /// One exponential-table lookup and accumulate per element.
  static constexpr layer_cost cost(shape in, shape) noexcept { return {count(in), 0, 0}; }
  template <network_element T, shape In, shape Out>
  using weights = no_weights;
};

/// Log-softmax over channels (TFLite LOG_SOFTMAX, beta 1); output quantization is fixed (scale 16/256, zero point at
/// the maximum). At most 4095 channels (the fixed-point sum of exponentials). (The unused parameter only makes the
/// spelling `log_softmax<>` match the other layers.)
template <int Unused = 0>
struct log_softmax {
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "log_softmax";
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept {
    if (in[0].channels > 4095) return {in[0], shape_error::invalid_config};
    return {in[0]};
  }
  /// One exponential-table lookup and accumulate per element.
  static constexpr layer_cost cost(shape in, shape) noexcept { return {count(in), 0, 0}; }
  template <network_element T, shape In, shape Out>
  using weights = no_weights;
};

/// Logistic (sigmoid) of every element (TFLite LOGISTIC: squeeze-and-excitation gates, segmentation masks); output
/// quantization is fixed (scale 1/256, zero point at the minimum). (The unused parameter only makes the spelling
/// `logistic<>` match the other layers.)
template <int Unused = 0>
struct logistic {
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "logistic";
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept { return {in[0]}; }
  /// One table lookup per element.
  static constexpr layer_cost cost(shape in, shape) noexcept { return {count(in), 0, 0}; }
  template <network_element T, shape In, shape Out>
  using weights = no_weights;
};

/// Hard-swish x * relu6(x + 3) / 6 of every element (TFLite HARD_SWISH), requantized to the layer's output
/// quantization. (The unused parameter only makes the spelling `hard_swish<>` match the other layers.)
template <int Unused = 0>
struct hard_swish {
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "hard_swish";
  static constexpr std::array<std::string_view, 1> inputs{current_tensor};

  static constexpr shape_result infer(const std::array<shape, 1>& in) noexcept { return {in[0]}; }
  /// One table lookup per element.
  static constexpr layer_cost cost(shape in, shape) noexcept { return {count(in), 0, 0}; }
  template <network_element T, shape In, shape Out>
  using weights = output_quant_weights;
};

// ---------------------------------------------------------------------------------------------
// Graph structure: naming tensors, branching, and the ops that join branches.

/// Names the current tensor so a later add/concat/from can use it; keeps it alive until then.
template <fixed_string Name>
struct tap {
  static constexpr layer_role role = layer_role::tap;
  static constexpr std::string_view kind = "tap";
  static constexpr std::string_view name = Name.view();
};

/// Names the current tensor as an extra network output (an SSD head, a skip feature map): it is
/// never overwritten during the run and is read after run() returns, through
/// network::output_view<Name>(arena) with quantization network::output_quant<Name>(prepared).
/// Later layers may read it too (as a tap).
template <fixed_string Name>
struct output {
  static constexpr layer_role role = layer_role::tap;
  static constexpr std::string_view kind = "output";
  static constexpr std::string_view name = Name.view();
  static constexpr bool keeps_alive = true;
};

/// Makes a tapped tensor the current one: the next layer starts a branch from it.
template <fixed_string Name>
struct from {
  static constexpr layer_role role = layer_role::from;
  static constexpr std::string_view kind = "from";
  static constexpr std::string_view name = Name.view();
};

/// The output shape of an element-wise layer under TFLite broadcasting: per axis the inputs' extents are equal or
/// one of them is 1, and the output takes the larger.
constexpr shape_result broadcast_output(shape a, shape b) noexcept {
  const auto axis = [](int x, int y) { return x == y || x == 1 || y == 1; };
  if (!axis(a.height, b.height) || !axis(a.width, b.width) || !axis(a.channels, b.channels))
    return {a, shape_error::add_shape_mismatch};
  return {shape{std::max(a.height, b.height), std::max(a.width, b.width), std::max(a.channels, b.channels)}};
}

/// What add and mul share: the current and a tapped tensor in, their broadcast shape out, one operation per output
/// element, an output quantization as the only weights.
template <fixed_string Tapped, activation Act>
struct broadcasting_layer {
  static constexpr activation act = Act;
  static constexpr layer_role role = layer_role::op;
  static constexpr std::array<std::string_view, 2> inputs{current_tensor, Tapped.view()};

  static constexpr shape_result infer(const std::array<shape, 2>& in) noexcept {
    return broadcast_output(in[0], in[1]);
  }
  static constexpr layer_cost cost(shape, shape out) noexcept { return {count(out), 0, 0}; }
  template <network_element T, shape In, shape Out>
  using weights = output_quant_weights;
};

/// Residual connection: current + tapped with TFLite broadcasting (equal shapes, or a 1x1xC vector, a scalar...),
/// requantized to the layer's output quantization.
template <fixed_string Tapped, activation Act = activation::none>
struct add : broadcasting_layer<Tapped, Act> {
  static constexpr std::string_view kind = "add";
};

/// current * tapped with TFLite's MUL requantization and broadcasting: a squeeze-and-excitation or attention gate is
/// layers::mul<"features"> after the 1x1xC gate (or the gate tapped and multiplied into the map).
template <fixed_string Tapped, activation Act = activation::none>
struct mul : broadcasting_layer<Tapped, Act> {
  static constexpr std::string_view kind = "mul";
};

/// Channel concatenation of the named tensors, in order (tap the current tensor to include it).
template <fixed_string... Tapped>
struct concat {
  static_assert(sizeof...(Tapped) >= 1, "layers::concat: name at least one tapped tensor");
  static constexpr layer_role role = layer_role::op;
  static constexpr std::string_view kind = "concat";
  static constexpr std::array<std::string_view, sizeof...(Tapped)> inputs{Tapped.view()...};

  static constexpr shape_result infer(const std::array<shape, sizeof...(Tapped)>& in) noexcept {
    shape out{in[0].height, in[0].width, 0};
    for (const shape& s : in) {
      if (s.height != out.height || s.width != out.width) return {{1, 1, 1}, shape_error::concat_spatial_mismatch};
      out.channels += s.channels;
    }
    return {out};
  }
  static constexpr layer_cost cost(shape, shape) noexcept { return {}; }
  template <network_element T, shape In, shape Out>
  using weights = output_quant_weights;
};

}  // namespace layers

/// What every layer descriptor provides.
template <class L>
concept layer_descriptor = requires {
  { L::role } -> std::convertible_to<layer_role>;
  { L::kind } -> std::convertible_to<std::string_view>;
};

template <class L>
concept op_layer = layer_descriptor<L> && L::role == layer_role::op;

namespace detail {
template <class... L>
constexpr bool all_layer_descriptors() noexcept {
  const bool each[] = {true, layer_descriptor<L>...};
  return std::find(std::begin(each), std::end(each), false) == std::end(each);
}
}  // namespace detail

/// Every one of L... is a layer descriptor. Checked over a braced list, not as `layer_descriptor... L` (a fold, which
/// clang rejects beyond 256 layers without -fbracket-depth).
template <class... L>
concept layer_descriptors = detail::all_layer_descriptors<L...>();

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
