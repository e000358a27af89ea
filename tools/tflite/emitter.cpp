// graph -> the layer list of a static network -> header text and weights blob or float weights (see emitter.hpp).
#include "mosaiq/tflite/emitter.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "detail.hpp"
#include "mosaiq/tflite/patterns.hpp"

namespace mosaiq::tflite {
namespace {

using detail::fail;
using detail::shape_string;
using tensor_index = std::int32_t;
using dims3 = std::array<std::int32_t, 3>;

/// A per-tensor quantization as layers store it (mosaiq::quant_params; the importer does not depend on the core).
struct quant_params {
  float scale = 1.0f;
  std::int32_t zero_point = 0;
  bool operator==(const quant_params&) const = default;
};

// ---------------------------------------------------------------------------------------------------------------
// Text.

/// The shortest decimal that reads back as the same float ("0.5", "2", "1e-05").
std::string float_text(float value) {
  char text[32];
  for (int digits = 6; digits <= 9; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(value));
    if (std::strtof(text, nullptr) == value) break;
  }
  return text;
}

/// The same as a C++ float literal ("0.5f", "2.0f", "1e-05f").
std::string float_literal(float value) {
  std::string out = float_text(value);
  if (out.find_first_of(".en") == std::string::npos) out += ".0";
  return out + "f";
}

std::string hw_text(std::int32_t h, std::int32_t w) { return "{" + std::to_string(h) + ", " + std::to_string(w) + "}"; }

std::string padding_text(padding p) {
  return p == padding::same ? "mosaiq::padding::same()" : "mosaiq::padding::valid()";
}

std::string activation_text(activation a) {
  switch (a) {
    case activation::relu:
      return "mosaiq::activation::relu";
    case activation::relu6:
      return "mosaiq::activation::relu6";
    case activation::relu_n1_to_1:
      return "mosaiq::activation::relu_n1_to_1";
    case activation::none:
      break;
  }
  return "mosaiq::activation::none";
}

/// A layer's config argument with designated initializers, "<mosaiq::layers::pool_config{.a = 1, .b = 2}>" (the
/// config type spelled out: clang 14 does not deduce a class-type template argument from a braced list).
std::string config_text(const std::string& config_type, const std::vector<std::string>& fields) {
  std::string out = "<mosaiq::layers::" + config_type + "{";
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? ", " : "") + fields[i];
  return out + "}>";
}

std::string quant_text(const quantization& q) {
  if (q.empty()) return "";
  if (q.per_channel()) return " (per-channel)";
  return " scale " + float_text(q.scale[0]) + " zp " + std::to_string(q.zero_point.empty() ? 0 : q.zero_point[0]);
}

// ---------------------------------------------------------------------------------------------------------------
// Blob bytes.

struct byte_sink {
  std::vector<std::uint8_t>& out;
  template <class T>
  void put(const T& value) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof(T));
  }
  template <class T>
  void put_all(const std::vector<T>& values) {
    for (const T& v : values) put(v);
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Lowering.

/// Float graphs lower through the same steps as quantized ones; only the payloads (float weights instead of
/// quantized fields) and the quantization checks differ, each at the one place that writes or checks them.
class lowering {
 public:
  /// `float_element`: the element type of the network a float graph becomes; none for a quantized graph.
  lowering(const graph& g, std::optional<element_type> float_element) : g_(g), canonical_(g.tensors.size()) {
    for (std::size_t t = 0; t < canonical_.size(); ++t) canonical_[t] = static_cast<tensor_index>(t);
    if (float_element) {
      net_.element = *float_element;
      net_.from_float = true;
    }
  }

  emitted_network run() {
    check_interface();
    collect_layer_ops();
    name_branch_tensors();
    emit_layers();
    return std::move(net_);
  }

 private:
  /// An op that becomes a layer: its activation inputs (canonical tensors) in the op's order.
  struct layer_op {
    const graph_op* op = nullptr;
    std::vector<tensor_index> inputs;
    tensor_index output = 0;
    bool commutative = false;        // ADD, MUL: either input may be the current tensor
    bool reads_all_by_name = false;  // CONCATENATION
  };

  const graph_tensor& tensor(tensor_index t) const { return g_.tensors[static_cast<std::size_t>(t)]; }
  std::string name_of(tensor_index t) const { return "t" + std::to_string(t); }

  std::string where(const graph_op& op) const {
    return "operator " + std::to_string(op.source_index) + " (" + builtin_name(op.op) + ")";
  }
  std::string tensor_text(tensor_index t) const { return "'" + tensor(t).name + "' " + shape_string(tensor(t).shape); }

  /// A [1,H,W,C] or [1,C] activation as H x W x C.
  dims3 dims_of(tensor_index t, const graph_op* op) const {
    const auto& s = tensor(t).shape;
    if (s.size() == 4 && s[0] == 1) return {s[1], s[2], s[3]};
    if (s.size() == 2 && s[0] == 1) return {1, 1, s[1]};
    if (op) fail(where(*op), ": tensor ", tensor_text(t), " is neither [1,H,W,C] nor [1,C]");
    fail("tensor ", tensor_text(t), " is neither [1,H,W,C] nor [1,C]");
  }

  quant_params per_tensor(tensor_index t, const graph_op& op) const {
    const quantization& q = tensor(t).quant;
    if (q.empty() || q.per_channel())
      fail(where(op), ": tensor ", tensor_text(t), " needs one scale and zero point (per-tensor quantization)");
    return {q.scale[0], static_cast<std::int32_t>(q.zero_point.empty() ? 0 : q.zero_point[0])};
  }

  /// The type of every activation of the graph: float32, or the quantized network's element type.
  element_type activation_type() const { return net_.from_float ? element_type::float32 : net_.element; }

  void check_interface() {
    if (g_.inputs.size() != 1)
      fail("the model has ", g_.inputs.size(), " inputs; a mosaiq network has one (and any number of outputs)");
    if (g_.outputs.empty()) fail("the model has no outputs");
    const tensor_index in = g_.inputs[0];
    const graph_tensor& input = tensor(in);
    if (net_.from_float) {
      if (input.type != element_type::float32 || !input.quant.empty())
        fail("input ", tensor_text(in), " is ", to_string(input.type), "; float import needs a float32 input");
      if (input.shape.size() != 4) fail("input ", tensor_text(in), " is not [1,H,W,C]");
      net_.input_shape = dims_of(in, nullptr);
      net_.input_comment = "input " + tensor_text(in) + " float32 (quantization calibrated)";
      return;
    }
    if (input.type != element_type::uint8 && input.type != element_type::int8)
      fail("input ", tensor_text(in), " is ", to_string(input.type),
           "; quantized import needs uint8 or int8 activations (float models are calibrated: lower_float)");
    if (input.shape.size() != 4) fail("input ", tensor_text(in), " is not [1,H,W,C]");
    net_.element = input.type;
    net_.input_shape = dims_of(in, nullptr);
    const quantization& q = input.quant;
    if (q.empty() || q.per_channel()) fail("input ", tensor_text(in), " needs per-tensor quantization");
    net_.input_scale = q.scale[0];
    net_.input_zero_point = static_cast<std::int32_t>(q.zero_point.empty() ? 0 : q.zero_point[0]);
    net_.input_comment = "input " + tensor_text(in) + quant_text(q);
  }

  /// The ops the outputs depend on, in graph order.
  std::vector<const graph_op*> needed_ops() const {
    std::vector<bool> needed(g_.tensors.size(), false);
    for (const tensor_index out : g_.outputs) needed[static_cast<std::size_t>(out)] = true;
    std::vector<const graph_op*> ops;
    for (auto op = g_.ops.rbegin(); op != g_.ops.rend(); ++op) {
      const bool used = std::any_of(op->outputs.begin(), op->outputs.end(),
                                    [&](tensor_index t) { return needed[static_cast<std::size_t>(t)]; });
      if (!used) continue;
      ops.push_back(&*op);
      for (const tensor_index t : op->inputs)
        if (t >= 0) needed[static_cast<std::size_t>(t)] = true;
    }
    std::reverse(ops.begin(), ops.end());
    return ops;
  }

  tensor_index canonical(tensor_index t) const { return canonical_[static_cast<std::size_t>(t)]; }

  /// A tensor an op reads as data: an activation of the network's element type.
  tensor_index activation_input(const graph_op& op, std::size_t slot) const {
    if (slot >= op.inputs.size() || op.inputs[slot] < 0) fail(where(op), ": input ", slot, " is missing");
    const tensor_index t = op.inputs[slot];
    if (tensor(t).is_constant())
      fail(where(op), ": input ", tensor_text(t), " is a constant; mosaiq layers take activations here");
    if (tensor(t).type != activation_type())
      fail(where(op), ": tensor ", tensor_text(t), " is ", to_string(tensor(t).type), ", the network is ",
           to_string(activation_type()));
    return canonical(t);
  }

  /// A RESHAPE that keeps the NHWC layout ([1,1,1,C] <-> [1,C]) is no layer: its output is its input.
  bool is_alias(const graph_op& op) {
    if (op.op != builtin::reshape) return false;
    const tensor_index in = activation_input(op, 0), out = op.outputs[0];
    if (dims_of(in, &op) != dims_of(out, &op) || tensor(in).quant != tensor(out).quant)
      fail(where(op), ": only reshapes between [1,1,1,C] and [1,C] (same quantization) are supported, not ",
           tensor_text(in), " -> ", tensor_text(out));
    canonical_[static_cast<std::size_t>(out)] = in;
    return true;
  }

  std::vector<tensor_index> activation_inputs(const graph_op& op) const {
    switch (op.op) {
      case builtin::transpose_conv:
        return {activation_input(op, 2)};
      case builtin::add:
      case builtin::mul:
        return {activation_input(op, 0), activation_input(op, 1)};
      case builtin::concatenation: {
        std::vector<tensor_index> all;
        for (std::size_t k = 0; k < op.inputs.size(); ++k) all.push_back(activation_input(op, k));
        return all;
      }
      default:
        return {activation_input(op, 0)};
    }
  }

  void collect_layer_ops() {
    for (const graph_op* op : needed_ops()) {
      if (op->outputs.size() != 1) fail(where(*op), ": has ", op->outputs.size(), " outputs, layers make one");
      if (is_alias(*op)) continue;
      const tensor_index out = op->outputs[0];
      if (tensor(out).type != activation_type())
        fail(where(*op), ": output ", tensor_text(out), " is ", to_string(tensor(out).type), ", the network is ",
             to_string(activation_type()));
      ops_.push_back({op, activation_inputs(*op), out, op->op == builtin::add || op->op == builtin::mul,
                      op->op == builtin::concatenation});
    }
    if (ops_.empty()) fail("the model computes nothing: its output is its input");
    choose_outputs();
  }

  /// run()'s output is what the last layer makes (a graph output: no later op reads it); every other graph output
  /// becomes an output layer right after the layer that makes it, kept alive to the end of the run.
  void choose_outputs() {
    const tensor_index last = ops_.back().output;
    for (const tensor_index out : g_.outputs) {
      const tensor_index t = canonical(out);
      const std::string text = tensor_text(out) + quant_text(tensor(t).quant);
      if (t == last) {
        net_.output_comment = text;
      } else if (t == g_.inputs[0]) {
        fail("the output ", tensor_text(out), " is the model's input; a network's outputs are computed");
      } else if (extra_outputs_.insert(t).second) {
        net_.extra_outputs.push_back({name_of(t), text});
      }
    }
    if (net_.output_comment.empty())
      fail("the last op's output ", tensor_text(last), " is not a graph output");  // needed_ops makes it one
  }

  tensor_index previous_output(std::size_t q) const { return q == 0 ? g_.inputs[0] : ops_[q - 1].output; }

  /// The input slot that is the layer's current tensor: 0, or 1 for ADD/MUL whose second operand was just made;
  /// -1 for concat (every input by name).
  int primary_slot(std::size_t q) const {
    const layer_op& l = ops_[q];
    if (l.reads_all_by_name) return -1;
    if (l.commutative && l.inputs[0] != previous_output(q) && l.inputs[1] == previous_output(q)) return 1;
    return 0;
  }

  /// Every tensor read other than as the current tensor of the layer right after its producer needs a tap.
  void name_branch_tensors() {
    for (std::size_t q = 0; q < ops_.size(); ++q) {
      const int primary = primary_slot(q);
      for (std::size_t k = 0; k < ops_[q].inputs.size(); ++k)
        if (int(k) != primary || ops_[q].inputs[k] != previous_output(q)) named_.insert(ops_[q].inputs[k]);
    }
  }

  void emit_branch_layer(const char* kind, tensor_index t, std::string comment) {
    const std::string spelling = std::string("mosaiq::layers::") + kind + "<\"" + name_of(t) + "\">";
    net_.layers.push_back({kind, spelling, std::move(comment), dims_of(t, nullptr), {}});
  }

  /// An output layer after an extra output (later layers may read it as a tap), a tap after a tensor read again.
  void emit_name_for(tensor_index t) {
    if (extra_outputs_.count(t))
      emit_branch_layer("output", t, "extra output: " + tensor_text(t));
    else if (named_.count(t))
      emit_branch_layer("tap", t, "read again later: " + tensor_text(t));
  }

  void emit_layers() {
    tensor_index current = g_.inputs[0];
    emit_name_for(current);
    for (std::size_t q = 0; q < ops_.size(); ++q) {
      const layer_op& l = ops_[q];
      const int primary = primary_slot(q);
      const tensor_index first = l.inputs[std::size_t(std::max(primary, 0))];
      if (primary >= 0 && first != current) {
        emit_branch_layer("from", first, "branch from " + tensor_text(first));
        current = first;
      }
      emitted_layer layer = lower_op(l, primary);
      layer.shape = dims_of(l.output, l.op);
      layer.comment =
          where(*l.op) + ": " + inputs_text(l) + " -> " + tensor_text(l.output) + quant_text(tensor(l.output).quant);
      net_.layers.push_back(std::move(layer));
      current = l.output;
      emit_name_for(current);
    }
  }

  std::string inputs_text(const layer_op& l) const {
    std::string out;
    for (std::size_t k = 0; k < l.inputs.size(); ++k) out += (k ? ", " : "") + tensor_text(l.inputs[k]);
    return out;
  }

  // -------------------------------------------------------------------------------------------------------------
  // One op -> one layer.

  emitted_layer lower_op(const layer_op& l, int primary) {
    const graph_op& op = *l.op;
    switch (op.op) {
      case builtin::conv_2d:
        return lower_conv(l);
      case builtin::depthwise_conv_2d:
        return lower_depthwise(l);
      case builtin::fully_connected:
        return lower_fully_connected(l);
      case builtin::transpose_conv:
      case builtin::convolution_2d_transpose_bias:
        return lower_transpose_conv(l);
      case builtin::average_pool_2d:
      case builtin::max_pool_2d:
        return lower_pool(l);
      case builtin::mean:
        return lower_mean(l);
      case builtin::resize_bilinear:
      case builtin::resize_nearest_neighbor:
        return lower_resize(l);
      case builtin::softmax:
      case builtin::logistic:
        return lower_probability(l);
      case builtin::hard_swish:
        return with_output_quant(l, "hard_swish", "mosaiq::layers::hard_swish<>");
      case builtin::add:
      case builtin::mul:
        return lower_binary(l, primary);
      case builtin::concatenation:
        return lower_concat(l);
      default:
        break;
    }
    if (op.op == builtin::relu || op.op == builtin::relu6)
      fail(where(op),
           ": a standalone activation can only be fused into the conv before it, and here it cannot be"
           " (its input has other readers or another quantization)");
    fail(where(op), ": mosaiq has no layer for this op");
  }

  emitted_layer with_output_quant(const layer_op& l, const char* kind, std::string spelling) const {
    emitted_layer layer{kind, std::move(spelling), {}, {}, {}};
    if (net_.from_float) return layer;  // calibration chooses the output quantization
    const quant_params out = per_tensor(l.output, *l.op);
    byte_sink sink{layer.payload};
    sink.put(out.scale);
    sink.put(out.zero_point);
    return layer;
  }

  /// conv_weights' fields: filter, bias, filter scales (one for u8, one per output channel for i8), filter zero
  /// point, output quantization. `channel_axis` is the filter's output-channel dimension.
  void put_conv_weights(emitted_layer& layer, const layer_op& l, tensor_index filter, tensor_index bias,
                        std::int32_t out_channels, std::int32_t channel_axis) const {
    if (net_.from_float) return put_float_conv_weights(layer, *l.op, filter, bias, out_channels);
    const graph_op& op = *l.op;
    const graph_tensor& f = tensor(filter);
    byte_sink sink{layer.payload};
    if (f.type != net_.element || !f.is_constant())
      fail(where(op), ": the filter ", tensor_text(filter), " must be a constant of the network's element type");
    if (net_.element == element_type::uint8)
      sink.put_all(std::get<std::vector<std::uint8_t>>(f.constant));
    else
      sink.put_all(std::get<std::vector<std::int8_t>>(f.constant));
    sink.put_all(bias_values(op, bias, out_channels));
    const quantization& q = f.quant;
    const bool per_channel = q.per_channel();
    if (q.empty() ||
        (per_channel && (q.scale.size() != std::size_t(out_channels) || q.quantized_dimension != channel_axis)))
      fail(where(op), ": the filter ", tensor_text(filter), " needs one scale, or one per output channel along axis ",
           channel_axis);
    if (net_.element == element_type::uint8) {
      if (per_channel) fail(where(op), ": uint8 filters are per-tensor in mosaiq (and TFLite); ", tensor_text(filter));
      sink.put(q.scale[0]);
      sink.put(static_cast<std::int32_t>(q.zero_point.empty() ? 0 : q.zero_point[0]));
    } else {
      if (std::any_of(q.zero_point.begin(), q.zero_point.end(), [](std::int64_t z) { return z != 0; }))
        fail(where(op), ": int8 filters must be symmetric (zero point 0); ", tensor_text(filter));
      for (std::int32_t c = 0; c < out_channels; ++c) sink.put(q.scale[per_channel ? std::size_t(c) : 0]);
      sink.put(std::int32_t{0});
    }
    const quant_params out = per_tensor(l.output, op);
    sink.put(out.scale);
    sink.put(out.zero_point);
  }

  /// Float graphs: the filter as stored (float32 or widened float16, the quantized filter's layout) and the bias
  /// (zeros when the op has none).
  void put_float_conv_weights(emitted_layer& layer, const graph_op& op, tensor_index filter, tensor_index bias,
                              std::int32_t out_channels) const {
    const auto* values = std::get_if<std::vector<float>>(&tensor(filter).constant);
    if (!values) fail(where(op), ": the filter ", tensor_text(filter), " must be a float constant");
    layer.float_filter = *values;
    if (bias < 0) {
      layer.float_bias.assign(std::size_t(out_channels), 0.0f);
      return;
    }
    const auto* bias_values = std::get_if<std::vector<float>>(&tensor(bias).constant);
    if (!bias_values || bias_values->size() != std::size_t(out_channels))
      fail(where(op), ": the bias ", tensor_text(bias), " must be a float constant with ", out_channels, " values");
    layer.float_bias = *bias_values;
  }

  std::vector<std::int32_t> bias_values(const graph_op& op, tensor_index bias, std::int32_t out_channels) const {
    if (bias < 0) return std::vector<std::int32_t>(std::size_t(out_channels), 0);
    const graph_tensor& b = tensor(bias);
    const auto* values = std::get_if<std::vector<std::int32_t>>(&b.constant);
    if (!values || values->size() != std::size_t(out_channels))
      fail(where(op), ": the bias ", tensor_text(bias), " must be an int32 constant with ", out_channels, " values");
    return *values;
  }

  tensor_index optional_input(const graph_op& op, std::size_t slot) const {
    return slot < op.inputs.size() ? op.inputs[slot] : -1;
  }

  const std::vector<std::int32_t>& filter_shape(const graph_op& op, tensor_index filter, std::size_t rank) const {
    if (filter < 0 || tensor(filter).shape.size() != rank) fail(where(op), ": the filter must have rank ", rank);
    return tensor(filter).shape;
  }

  emitted_layer lower_conv(const layer_op& l) {
    const graph_op& op = *l.op;
    const auto& o = std::get<conv2d_options>(op.options);
    const auto& s = filter_shape(op, op.inputs[1], 4);  // [Cout][KH][KW][Cin]
    const dims3 in = dims_of(l.inputs[0], &op);
    if (s[3] != in[2])
      fail(where(op), ": grouped convolutions (filter depth ", s[3], " of ", in[2], ") are not supported");
    const bool one_by_one = s[1] == 1 && s[2] == 1 && o.stride_h == 1 && o.stride_w == 1;
    emitted_layer layer;
    if (one_by_one) {
      std::vector<std::string> f{".out_channels = " + std::to_string(s[0])};
      if (o.fused != activation::none) f.push_back(".act = " + activation_text(o.fused));
      layer = {"pointwise", "mosaiq::layers::pointwise" + config_text("pointwise_config", f), {}, {}, {}};
    } else {
      std::vector<std::string> f{".out_channels = " + std::to_string(s[0]), ".kernel = " + hw_text(s[1], s[2]),
                                 ".stride = " + hw_text(o.stride_h, o.stride_w)};
      if (o.dilation_h != 1 || o.dilation_w != 1) f.push_back(".dilation = " + hw_text(o.dilation_h, o.dilation_w));
      f.push_back(".pad = " + padding_text(o.pad));
      if (o.fused != activation::none) f.push_back(".act = " + activation_text(o.fused));
      layer = {"conv2d", "mosaiq::layers::conv2d" + config_text("conv2d_config", f), {}, {}, {}};
    }
    put_conv_weights(layer, l, op.inputs[1], optional_input(op, 2), s[0], 0);
    return layer;
  }

  emitted_layer lower_depthwise(const layer_op& l) {
    const graph_op& op = *l.op;
    const auto& o = std::get<depthwise_options>(op.options);
    const auto& s = filter_shape(op, op.inputs[1], 4);  // [1][KH][KW][C*M]
    const dims3 in = dims_of(l.inputs[0], &op);
    if (s[0] != 1 || s[3] % in[2] != 0)
      fail(where(op), ": the filter ", tensor_text(op.inputs[1]), " is not [1,KH,KW,C*M] for ", in[2], " channels");
    const std::int32_t multiplier = s[3] / in[2];
    std::vector<std::string> f{".kernel = " + hw_text(s[1], s[2]), ".stride = " + hw_text(o.stride_h, o.stride_w)};
    if (o.dilation_h != 1 || o.dilation_w != 1) f.push_back(".dilation = " + hw_text(o.dilation_h, o.dilation_w));
    f.push_back(".pad = " + padding_text(o.pad));
    if (multiplier != 1) f.push_back(".depth_multiplier = " + std::to_string(multiplier));
    if (o.fused != activation::none) f.push_back(".act = " + activation_text(o.fused));
    emitted_layer layer{"depthwise", "mosaiq::layers::depthwise" + config_text("depthwise_config", f), {}, {}, {}};
    put_conv_weights(layer, l, op.inputs[1], optional_input(op, 2), s[3], 3);
    return layer;
  }

  /// On a 1x1xC map (a [1,C] vector) a fully connected layer is a 1x1 convolution.
  emitted_layer lower_fully_connected(const layer_op& l) {
    const graph_op& op = *l.op;
    const auto& o = std::get<fully_connected_options>(op.options);
    const auto& s = filter_shape(op, op.inputs[1], 2);  // [Cout][Cin]
    const dims3 in = dims_of(l.inputs[0], &op);
    if (in[0] != 1 || in[1] != 1 || in[2] != s[1])
      fail(where(op), ": only a [1,C] or 1x1xC input with C = ", s[1], " is supported, not ", tensor_text(l.inputs[0]));
    std::vector<std::string> f{".out_channels = " + std::to_string(s[0])};
    if (o.fused != activation::none) f.push_back(".act = " + activation_text(o.fused));
    emitted_layer layer{"pointwise", "mosaiq::layers::pointwise" + config_text("pointwise_config", f), {}, {}, {}};
    put_conv_weights(layer, l, op.inputs[1], optional_input(op, 2), s[0], 0);
    return layer;
  }

  /// TRANSPOSE_CONV (output_shape, weights, input[, bias]) and MediaPipe's Convolution2DTransposeBias (input,
  /// weights, bias): weights [Cout][KH][KW][Cin] as conv2d's.
  emitted_layer lower_transpose_conv(const layer_op& l) {
    const graph_op& op = *l.op;
    const auto& o = std::get<transpose_conv_options>(op.options);
    const tensor_index filter = op.inputs[1];
    const tensor_index bias = optional_input(op, op.op == builtin::transpose_conv ? 3 : 2);
    const auto& s = filter_shape(op, filter, 4);
    if (o.fused != activation::none)
      fail(where(op), ": a fused activation on a transposed convolution is not supported");
    const std::vector<std::string> f{".out_channels = " + std::to_string(s[0]), ".kernel = " + hw_text(s[1], s[2]),
                                     ".stride = " + hw_text(o.stride_h, o.stride_w),
                                     ".padding = " + padding_text(o.pad)};
    emitted_layer layer{
        "transpose_conv", "mosaiq::layers::transpose_conv" + config_text("transpose_conv_config", f), {}, {}, {}};
    put_conv_weights(layer, l, filter, bias, s[0], 0);
    return layer;
  }

  void require_same_quant(const layer_op& l, const char* why) const {
    if (net_.from_float) return;  // the network keeps the input's quantization, as TFLite requires
    if (per_tensor(l.inputs[0], *l.op) != per_tensor(l.output, *l.op))
      fail(where(*l.op), ": input ", tensor_text(l.inputs[0]), " and output ", tensor_text(l.output),
           " must share scale and zero point (", why, ")");
  }

  emitted_layer lower_pool(const layer_op& l) {
    const auto& o = std::get<pool2d_options>(l.op->options);
    require_same_quant(l, "as TFLite requires for pooling");
    std::vector<std::string> f{".kernel = " + hw_text(o.filter_h, o.filter_w),
                               ".stride = " + hw_text(o.stride_h, o.stride_w), ".pad = " + padding_text(o.pad)};
    if (o.fused != activation::none) f.push_back(".act = " + activation_text(o.fused));
    const bool average = l.op->op == builtin::average_pool_2d;
    const std::string kind = average ? "average_pool" : "max_pool";
    return {kind, "mosaiq::layers::" + kind + config_text("pool_config", f), {}, {}, {}};
  }

  emitted_layer lower_mean(const layer_op& l) {
    const graph_op& op = *l.op;
    const tensor_index axes = op.inputs[1];
    const auto* values = std::get_if<std::vector<std::int32_t>>(&tensor(axes).constant);
    std::vector<std::int32_t> sorted = values ? *values : std::vector<std::int32_t>{};
    std::sort(sorted.begin(), sorted.end());
    if (tensor(l.inputs[0]).shape.size() != 4 || sorted != std::vector<std::int32_t>{1, 2})
      fail(where(op), ": only a mean over height and width (axes 1 and 2 of [1,H,W,C]) is supported");
    return with_output_quant(l, "global_average_pool", "mosaiq::layers::global_average_pool<>");
  }

  emitted_layer lower_resize(const layer_op& l) {
    const graph_op& op = *l.op;
    const auto& o = std::get<resize_options>(op.options);
    const dims3 in = dims_of(l.inputs[0], &op), out = dims_of(l.output, &op);
    const std::int32_t scale = in[0] > 0 ? out[0] / in[0] : 0;
    if (scale < 1 || out[0] != in[0] * scale || out[1] != in[1] * scale)
      fail(where(op), ": only resizes by one integer factor on both axes are supported, not ", tensor_text(l.inputs[0]),
           " -> ", tensor_text(l.output));
    require_same_quant(l, "as TFLite requires for resizing");
    const char* mode = o.align_corners        ? "mosaiq::resize_mode::align_corners"
                       : o.half_pixel_centers ? "mosaiq::resize_mode::half_pixel"
                                              : "mosaiq::resize_mode::legacy";
    const bool bilinear = op.op == builtin::resize_bilinear;
    if (bilinear && net_.element == element_type::int8 && !net_.from_float)
      note_once(
          "int8 RESIZE_BILINEAR: mosaiq rounds ties half up, as TFLite's int8 kernel built with "
          "TFLITE_SINGLE_ROUNDING (and XNNPACK); TFLite's default int8 build rounds negative ties away from "
          "zero (docs/decisions.md)");
    const std::string kind = bilinear ? "resize_bilinear" : "resize_nearest";
    return {kind,
            "mosaiq::layers::" + kind +
                config_text("resize_config", {".scale = " + std::to_string(scale), std::string(".mode = ") + mode}),
            {},
            {},
            {}};
  }

  /// SOFTMAX and LOGISTIC: the output quantization is fixed (scale 1/256, zero point at the minimum), as TFLite
  /// requires of quantized models.
  emitted_layer lower_probability(const layer_op& l) {
    const graph_op& op = *l.op;
    const std::int32_t zero = net_.element == element_type::uint8 ? 0 : -128;
    if (!net_.from_float) {
      const quant_params out = per_tensor(l.output, op);
      if (out.scale != 1.0f / 256.0f || out.zero_point != zero)
        fail(where(op), ": the output ", tensor_text(l.output), " must have scale 1/256 and zero point ", zero);
    }
    if (op.op == builtin::logistic) return {"logistic", "mosaiq::layers::logistic<>", {}, {}, {}};
    const float beta = std::get<softmax_options>(op.options).beta;
    const std::string config = beta == 1.0f ? "<>" : config_text("softmax_config", {".beta = " + float_literal(beta)});
    return {"softmax", "mosaiq::layers::softmax" + config, {}, {}, {}};
  }

  emitted_layer lower_binary(const layer_op& l, int primary) {
    const graph_op& op = *l.op;
    const auto& o = std::get<elementwise_options>(op.options);
    const dims3 a = dims_of(l.inputs[0], &op), b = dims_of(l.inputs[1], &op);
    for (std::size_t axis = 0; axis < 3; ++axis)
      if (a[axis] != b[axis] && a[axis] != 1 && b[axis] != 1)
        fail(where(op), ": ", tensor_text(l.inputs[0]), " and ", tensor_text(l.inputs[1]), " do not broadcast");
    const tensor_index other = l.inputs[primary == 1 ? 0 : 1];
    const std::string kind = op.op == builtin::add ? "add" : "mul";
    std::string spelling = "mosaiq::layers::" + kind + "<\"" + name_of(other) + "\"";
    if (o.fused != activation::none) spelling += ", " + activation_text(o.fused);
    return with_output_quant(l, kind.c_str(), spelling + ">");
  }

  emitted_layer lower_concat(const layer_op& l) {
    const graph_op& op = *l.op;
    const auto& o = std::get<concatenation_options>(op.options);
    const auto rank = static_cast<std::int32_t>(tensor(l.output).shape.size());
    if (o.axis != -1 && o.axis != rank - 1) fail(where(op), ": only concatenation along channels is supported");
    if (o.fused != activation::none) fail(where(op), ": a fused activation on a concatenation is not supported");
    std::string spelling = "mosaiq::layers::concat<";
    for (std::size_t k = 0; k < l.inputs.size(); ++k) {
      if (!net_.from_float) per_tensor(l.inputs[k], op);
      spelling += (k ? ", \"" : "\"") + name_of(l.inputs[k]) + "\"";
    }
    return with_output_quant(l, "concat", spelling + ">");
  }

  void note_once(const std::string& note) {
    if (std::find(net_.notes.begin(), net_.notes.end(), note) == net_.notes.end()) net_.notes.push_back(note);
  }

  const graph& g_;
  std::vector<tensor_index> canonical_;
  std::vector<layer_op> ops_;
  std::set<tensor_index> named_;
  std::set<tensor_index> extra_outputs_;  // graph outputs other than run()'s, canonical
  emitted_network net_;
};

}  // namespace

result<emitted_network> lower_quantized(const graph& g) {
  try {
    return lowering(g, std::nullopt).run();
  } catch (const detail::import_error& e) {
    return result<emitted_network>::failure(e.what());
  }
}

result<emitted_network> lower_float(const graph& g, element_type element) {
  if (element != element_type::uint8 && element != element_type::int8)
    return result<emitted_network>::failure("a float model becomes a uint8 or int8 network, not " +
                                            std::string(to_string(element)));
  try {
    return lowering(g, element).run();
  } catch (const detail::import_error& e) {
    return result<emitted_network>::failure(e.what());
  }
}

bool has_16x8_layer(std::string_view kind) {
  static constexpr std::array<std::string_view, 14> kinds = {"conv2d",
                                                             "depthwise",
                                                             "pointwise",
                                                             "transpose_conv",
                                                             "average_pool",
                                                             "global_average_pool",
                                                             "resize_bilinear",
                                                             "logistic",
                                                             "hard_swish",
                                                             "add",
                                                             "mul",
                                                             "tap",
                                                             "output",
                                                             "from"};
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

result<emitted_network> lower_float_16x8(const graph& g) {
  auto net = lower_float(g, element_type::int8);
  if (!net) return net;
  for (const emitted_layer& layer : net.value().layers)
    if (!has_16x8_layer(layer.kind))
      return result<emitted_network>::failure("a 16x8 (i16) network has no " + layer.kind + " layer yet (" +
                                              layer.comment + "); import it as --type i8 or u8");
  net.value().sixteen_by_eight = true;
  return net;
}

void apply_emitter_patterns(graph& g) {
  fold_batch_norm(g);
  recognise_hard_swish(g);
  fuse_activations(g);
}

std::string emit_header(const emitted_network& net, const std::string& name, const std::string& source,
                        const std::string& blob_name, const header_options& options) {
  std::ostringstream out;
  out << "// Generated by mosaiq-import from " << source << ". The weights are in " << blob_name << ":\n"
      << "//   static " << name << "::network::weights w;   " << name << "::network::load(blob, w);\n";
  if (net.from_float)
    out << "// A float model: the quantization in " << blob_name << " comes from calibration images\n"
        << "// (mosaiq_add_model CALIBRATION), its float weights from the file tools::load_float_weights reads.\n";
  if (net.sixteen_by_eight)
    out << "// TFLite's 16x8 mode (--type i16x8): int16 activations with zero point 0, int8 per-channel filters and\n"
        << "// int64 biases (tools/quantize_16x8.hpp); the layers are those of the model's int8 network.\n";
  out << "// run() writes the output " << net.output_comment << ".\n";
  if (!net.extra_outputs.empty()) {
    out << "// Extra outputs, read after run() with network::output_view<\"name\">(arena) (valid until the arena is\n"
        << "// reused) and network::output_quant<\"name\">(prepared):\n";
    for (const emitted_network::extra_output& extra : net.extra_outputs)
      out << "//   \"" << extra.name << "\": " << extra.comment << "\n";
  }
  out << "// Each layer's comment names the TFLite operator and tensors it comes from.\n"
      << "#pragma once\n\n#include \"mosaiq/net.hpp\"\n\nnamespace " << name << " {\n\n"
      << "inline constexpr const char* weights_file = \"" << blob_name << "\";\n\n"
      << "using network = mosaiq::network<\n";
  const char* element = net.sixteen_by_eight                 ? "mosaiq::i16"
                        : net.element == element_type::uint8 ? "mosaiq::u8"
                                                             : "mosaiq::i8";
  out << "    mosaiq::input<" << element << ", " << net.input_shape[0] << ", " << net.input_shape[1] << ", "
      << net.input_shape[2] << ">";
  if (options.max_threads > 1) out << "::with_max_threads<" << options.max_threads << ">";
  out << ",  // " << net.input_comment << "\n";
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const bool last = i + 1 == net.layers.size();
    out << "    " << net.layers[i].spelling << (last ? ">;" : ",") << "  // " << net.layers[i].comment << "\n";
  }
  out << "\n}  // namespace " << name << "\n";
  return out.str();
}

/// The start both weights files share: magic, version, byte order, the header fields, the input shape, and per
/// layer its kind, output shape and the sizes `layer_sizes` writes.
template <class LayerSizes>
std::vector<std::uint8_t> blob_header(const char (&magic)[9], std::initializer_list<std::uint32_t> fields,
                                      const emitted_network& net, LayerSizes layer_sizes) {
  std::vector<std::uint8_t> blob(magic, magic + 8);
  byte_sink sink{blob};
  const std::uint32_t version = 1, byte_order = 0x01020304;
  for (const std::uint32_t v : {version, byte_order}) sink.put(v);
  for (const std::uint32_t v : fields) sink.put(v);
  sink.put(std::uint32_t(net.layers.size()));
  for (const std::int32_t v : net.input_shape) sink.put(v);
  for (const emitted_layer& layer : net.layers) {
    sink.put(static_cast<std::uint32_t>(layer.kind.size()));
    blob.insert(blob.end(), layer.kind.begin(), layer.kind.end());
    for (const std::int32_t v : layer.shape) sink.put(v);
    layer_sizes(sink, layer);
  }
  return blob;
}

std::vector<std::uint8_t> emit_blob(const emitted_network& net) {
  const std::uint32_t element = net.element == element_type::uint8 ? 0 : 1;
  const std::uint32_t rounding_mode = 0;  // rounding::tflite_reference, mosaiq::input's default
  std::vector<std::uint8_t> blob = blob_header(
      "MOSAIQNW", {element, rounding_mode}, net,
      [](byte_sink& sink, const emitted_layer& layer) { sink.put(static_cast<std::uint64_t>(layer.payload.size())); });
  byte_sink sink{blob};
  sink.put(net.input_scale);
  sink.put(net.input_zero_point);
  for (const emitted_layer& layer : net.layers) blob.insert(blob.end(), layer.payload.begin(), layer.payload.end());
  return blob;
}

std::vector<std::uint8_t> emit_float_weights(const emitted_network& net) {
  std::vector<std::uint8_t> blob = blob_header("MOSAIQFW", {}, net, [](byte_sink& sink, const emitted_layer& layer) {
    sink.put(static_cast<std::uint64_t>(layer.float_filter.size()));
    sink.put(static_cast<std::uint64_t>(layer.float_bias.size()));
  });
  byte_sink sink{blob};
  for (const emitted_layer& layer : net.layers) {
    sink.put_all(layer.float_filter);
    sink.put_all(layer.float_bias);
  }
  return blob;
}

std::string identifier_from(const std::string& text) {
  std::string out;
  for (const char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "model_" + out;
  return out;
}

}  // namespace mosaiq::tflite
