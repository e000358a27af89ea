// Operators: which builtin codes the reader accepts, how many inputs each takes, and their builtin options.
#include <algorithm>
#include <cmath>

#include "detail.hpp"
#include "tflite_subset_generated.h"

namespace mosaiq::tflite::detail {
namespace {

namespace fb = schema;

struct op_rule {
  builtin op;
  std::size_t min_inputs, max_inputs;  // inputs past min_inputs are optional (-1 allowed)
};

// TRANSPOSE_CONV: output shape, weights, input, optional bias; RESHAPE: optional shape tensor.
constexpr op_rule rules[] = {
    {builtin::add, 2, 2},
    {builtin::average_pool_2d, 1, 1},
    {builtin::concatenation, 1, 1024},
    {builtin::conv_2d, 2, 3},
    {builtin::depthwise_conv_2d, 2, 3},
    {builtin::dequantize, 1, 1},
    {builtin::fully_connected, 2, 3},
    {builtin::logistic, 1, 1},
    {builtin::max_pool_2d, 1, 1},
    {builtin::mul, 2, 2},
    {builtin::relu, 1, 1},
    {builtin::relu6, 1, 1},
    {builtin::reshape, 1, 2},
    {builtin::resize_bilinear, 2, 2},
    {builtin::softmax, 1, 1},
    {builtin::pad, 2, 2},
    {builtin::mean, 2, 2},
    {builtin::sub, 2, 2},
    {builtin::transpose_conv, 3, 4},
    {builtin::resize_nearest_neighbor, 2, 2},
    {builtin::quantize, 1, 1},
    {builtin::hard_swish, 1, 1},
    {builtin::convolution_2d_transpose_bias, 3, 3},
};

constexpr std::int32_t custom_code = 32;
constexpr std::string_view transpose_conv_bias_code = "Convolution2DTransposeBias";

/// The op an operator code names, as an index into `rules`' codes: custom codes other than MediaPipe's
/// transposed convolution have none.
std::int32_t rule_code(const operator_code& code) {
  if (code.builtin_code != custom_code) return code.builtin_code;
  return code.custom_code == transpose_conv_bias_code
             ? static_cast<std::int32_t>(builtin::convolution_2d_transpose_bias)
             : custom_code;
}

const op_rule* find_rule(std::int32_t code) {
  const auto* it = std::find_if(std::begin(rules), std::end(rules),
                                [&](const op_rule& r) { return static_cast<std::int32_t>(r.op) == code; });
  return it == std::end(rules) ? nullptr : it;
}

/// Reads one operator's options with the context needed for messages.
class options_reader {
 public:
  options_reader(const fb::Operator& source, std::string where) : source_(source), where_(std::move(where)) {}

  /// The operator's options table of type T, or nullptr when it has none (fails when `required`).
  template <class T>
  const T* table(fb::BuiltinOptions expected, bool required) const {
    const fb::BuiltinOptions type = source_.builtin_options_type();
    if (type != fb::BuiltinOptions_NONE && type != expected)
      fail(where_, ": unsupported option: builtin options of type ", static_cast<int>(type), " where type ",
           static_cast<int>(expected), " belongs");
    const T* options = type == expected ? static_cast<const T*>(source_.builtin_options()) : nullptr;
    if (!options && required) fail(where_, ": its builtin options are missing");
    return options;
  }

  padding pad(std::int8_t value) const {
    if (value != 0 && value != 1) fail(where_, ": unsupported option: padding ", static_cast<int>(value));
    return static_cast<padding>(value);
  }

  activation fused(std::int8_t value) const {
    if (value >= 0 && value <= 3) return static_cast<activation>(value);
    fail(where_, ": unsupported option: fused activation ",
         value == 4   ? "TANH"
         : value == 5 ? "SIGN_BIT"
                      : std::to_string(value));
  }

  std::int32_t positive(std::int32_t value, const char* what) const {
    if (value < 1) fail(where_, ": unsupported option: ", what, " ", value);
    return value;
  }

  op_options read(builtin op) const;

 private:
  op_options conv() const {
    const auto* o = table<fb::Conv2DOptions>(fb::BuiltinOptions_Conv2DOptions, true);
    return conv2d_options{pad(o->padding()),
                          positive(o->stride_w(), "stride_w"),
                          positive(o->stride_h(), "stride_h"),
                          positive(o->dilation_w_factor(), "dilation_w_factor"),
                          positive(o->dilation_h_factor(), "dilation_h_factor"),
                          fused(o->fused_activation_function())};
  }
  op_options depthwise() const {
    const auto* o = table<fb::DepthwiseConv2DOptions>(fb::BuiltinOptions_DepthwiseConv2DOptions, true);
    return depthwise_options{pad(o->padding()),
                             positive(o->stride_w(), "stride_w"),
                             positive(o->stride_h(), "stride_h"),
                             positive(o->dilation_w_factor(), "dilation_w_factor"),
                             positive(o->dilation_h_factor(), "dilation_h_factor"),
                             o->depth_multiplier(),
                             fused(o->fused_activation_function())};
  }
  /// Convolution2DTransposeBias keeps TfLiteTransposeConvParams' bytes as its custom options.
  op_options transpose_conv_bias() const {
    if (source_.builtin_options_type() != fb::BuiltinOptions_NONE)
      fail(where_, ": unsupported option: builtin options on a custom op");
    const auto* bytes = source_.custom_options();
    if (!bytes || bytes->size() != 12)
      fail(where_, ": custom options of ", bytes ? bytes->size() : 0,
           " bytes, expected 12 (padding, stride_w, stride_h)");
    std::int32_t fields[3];
    for (std::size_t f = 0; f < 3; ++f)
      fields[f] = static_cast<std::int32_t>(flatbuffers::ReadScalar<std::uint32_t>(bytes->data() + 4 * f));
    if (fields[0] != 1 && fields[0] != 2) fail(where_, ": unsupported option: padding ", fields[0]);
    return transpose_conv_options{fields[0] == 1 ? padding::same : padding::valid, positive(fields[1], "stride_w"),
                                  positive(fields[2], "stride_h"), activation::none};
  }
  op_options transpose_conv() const {
    const auto* o = table<fb::TransposeConvOptions>(fb::BuiltinOptions_TransposeConvOptions, true);
    return transpose_conv_options{pad(o->padding()), positive(o->stride_w(), "stride_w"),
                                  positive(o->stride_h(), "stride_h"), fused(o->fused_activation_function())};
  }
  op_options pool() const {
    const auto* o = table<fb::Pool2DOptions>(fb::BuiltinOptions_Pool2DOptions, true);
    return pool2d_options{pad(o->padding()),
                          positive(o->stride_w(), "stride_w"),
                          positive(o->stride_h(), "stride_h"),
                          positive(o->filter_width(), "filter_width"),
                          positive(o->filter_height(), "filter_height"),
                          fused(o->fused_activation_function())};
  }
  op_options fully_connected() const {
    const auto* o = table<fb::FullyConnectedOptions>(fb::BuiltinOptions_FullyConnectedOptions, false);
    if (!o) return fully_connected_options{};
    if (o->weights_format() != 0) fail(where_, ": unsupported option: shuffled weights format");
    if (o->asymmetric_quantize_inputs()) fail(where_, ": unsupported option: asymmetric_quantize_inputs (hybrid)");
    return fully_connected_options{fused(o->fused_activation_function()), o->keep_num_dims()};
  }
  template <class T>
  op_options elementwise(fb::BuiltinOptions type) const {
    const auto* o = table<T>(type, false);
    return elementwise_options{o ? fused(o->fused_activation_function()) : activation::none};
  }
  op_options concatenation() const {
    const auto* o = table<fb::ConcatenationOptions>(fb::BuiltinOptions_ConcatenationOptions, false);
    return o ? concatenation_options{o->axis(), fused(o->fused_activation_function())} : concatenation_options{};
  }
  op_options reshape() const {
    const auto* o = table<fb::ReshapeOptions>(fb::BuiltinOptions_ReshapeOptions, false);
    reshape_options out;
    if (o && o->new_shape()) out.new_shape.assign(o->new_shape()->begin(), o->new_shape()->end());
    return out;
  }
  template <class T>
  op_options resize(fb::BuiltinOptions type) const {
    const auto* o = table<T>(type, false);
    const resize_options out{o && o->align_corners(), o && o->half_pixel_centers()};
    if (out.align_corners && out.half_pixel_centers)
      fail(where_, ": unsupported option: align_corners and half_pixel_centers together");
    return out;
  }
  op_options softmax() const {
    const auto* o = table<fb::SoftmaxOptions>(fb::BuiltinOptions_SoftmaxOptions, true);
    if (!std::isfinite(o->beta()) || o->beta() <= 0) fail(where_, ": unsupported option: softmax beta ", o->beta());
    return softmax_options{o->beta()};
  }
  op_options mean() const {
    const auto* o = table<fb::ReducerOptions>(fb::BuiltinOptions_ReducerOptions, false);
    return reducer_options{o && o->keep_dims()};
  }
  template <class T>
  op_options none(fb::BuiltinOptions type) const {
    table<T>(type, false);
    return no_options{};
  }

  const fb::Operator& source_;
  std::string where_;
};

op_options options_reader::read(builtin op) const {
  switch (op) {
    case builtin::conv_2d:
      return conv();
    case builtin::depthwise_conv_2d:
      return depthwise();
    case builtin::transpose_conv:
      return transpose_conv();
    case builtin::convolution_2d_transpose_bias:
      return transpose_conv_bias();
    case builtin::average_pool_2d:
    case builtin::max_pool_2d:
      return pool();
    case builtin::fully_connected:
      return fully_connected();
    case builtin::add:
      return elementwise<fb::AddOptions>(fb::BuiltinOptions_AddOptions);
    case builtin::sub:
      return elementwise<fb::SubOptions>(fb::BuiltinOptions_SubOptions);
    case builtin::mul:
      return elementwise<fb::MulOptions>(fb::BuiltinOptions_MulOptions);
    case builtin::concatenation:
      return concatenation();
    case builtin::reshape:
      return reshape();
    case builtin::resize_bilinear:
      return resize<fb::ResizeBilinearOptions>(fb::BuiltinOptions_ResizeBilinearOptions);
    case builtin::resize_nearest_neighbor:
      return resize<fb::ResizeNearestNeighborOptions>(fb::BuiltinOptions_ResizeNearestNeighborOptions);
    case builtin::softmax:
      return softmax();
    case builtin::mean:
      return mean();
    case builtin::pad:
      return none<fb::PadOptions>(fb::BuiltinOptions_PadOptions);
    case builtin::dequantize:
      return none<fb::DequantizeOptions>(fb::BuiltinOptions_DequantizeOptions);
    case builtin::quantize:
      return none<fb::QuantizeOptions>(fb::BuiltinOptions_QuantizeOptions);
    case builtin::hard_swish:
      return none<fb::HardSwishOptions>(fb::BuiltinOptions_HardSwishOptions);
    case builtin::logistic:
    case builtin::relu:
    case builtin::relu6:
      // These have no options table in TFLite's union.
      if (source_.builtin_options_type() != fb::BuiltinOptions_NONE)
        fail(where_, ": unsupported option: builtin options on an op that has none");
      return no_options{};
    case builtin::squeeze_excitation:  // made by the pattern passes, never read from a file
    case builtin::attention_gate:
      break;
  }
  fail(where_, ": no options rule");
}

}  // namespace

void read_operation(const fb::Operator& source, const operator_code& code, std::size_t index, const subgraph& graph,
                    operation& op) {
  const std::string name =
      code.builtin_code == custom_code ? "custom op '" + code.custom_code + "'" : builtin_name(code.builtin_code);
  const std::string where = describe_operator(index, name, op, graph);
  const op_rule* rule = find_rule(rule_code(code));
  if (!rule) fail("unsupported op ", name, " at ", where);
  op.op = rule->op;
  if (op.inputs.size() < rule->min_inputs || op.inputs.size() > rule->max_inputs)
    fail(where, ": takes ", rule->min_inputs, " to ", rule->max_inputs, " inputs, has ", op.inputs.size());
  for (std::size_t i = 0; i < rule->min_inputs; ++i)
    if (op.inputs[i] < 0) fail(where, ": input ", i, " is required but omitted");
  if (op.outputs.size() != 1) fail(where, ": has ", op.outputs.size(), " outputs, expected 1");
  op.options = options_reader(source, where).read(rule->op);
}

}  // namespace mosaiq::tflite::detail
