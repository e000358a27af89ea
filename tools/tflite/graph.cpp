// read model -> neutral graph: constants decoded, float16 widened, activations checked for static batch-1 shapes,
// ops put in topological order.
#include "mosaiq/tflite/graph.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "detail.hpp"

namespace mosaiq::tflite {
namespace {

using detail::fail;
using detail::shape_string;

template <class T>
std::vector<T> copy_values(std::span<const std::uint8_t> bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

constant_data decode_constant(element_type type, std::span<const std::uint8_t> bytes) {
  switch (type) {
    case element_type::float32:
      return copy_values<float>(bytes);
    case element_type::float16: {
      const auto halves = copy_values<std::uint16_t>(bytes);
      std::vector<float> out(halves.size());
      std::transform(halves.begin(), halves.end(), out.begin(), widen_half);
      return out;
    }
    case element_type::int32:
      return copy_values<std::int32_t>(bytes);
    case element_type::uint8:
      return copy_values<std::uint8_t>(bytes);
    case element_type::int8:
      return copy_values<std::int8_t>(bytes);
  }
  return {};
}

std::string tensor_where(std::size_t index, const tensor& t) {
  return "tensor " + std::to_string(index) + " '" + t.name + "'";
}

graph_tensor convert_tensor(const tensor& t, std::size_t index, const model& m) {
  graph_tensor out{
      .name = t.name, .type = t.type, .stored_type = t.type, .shape = t.shape, .quant = t.quant, .constant = {}};
  const auto data = m.buffers[t.buffer].data;
  if (!data.empty()) {
    out.constant = decode_constant(t.type, data);
    if (t.type == element_type::float16) out.type = element_type::float32;
  } else if (t.is_variable) {
    fail(tensor_where(index, t), ": variable tensors (state between runs) are not supported");
  }
  return out;
}

/// An activation (graph input or op output) must have a static shape with batch 1.
void check_activation(const tensor& t, std::size_t index) {
  const std::string where = tensor_where(index, t);
  if (std::find(t.shape_signature.begin(), t.shape_signature.end(), -1) != t.shape_signature.end())
    fail(where, ": dynamic shape ", shape_string(t.shape_signature), " (only static shapes are supported)");
  if (t.shape.size() >= 2 && t.shape[0] != 1)
    fail(where, ": batch ", t.shape[0], " in shape ", shape_string(t.shape), " (only batch 1 is supported)");
  if (t.type == element_type::float16) fail(where, ": float16 activations are not supported");
}

/// DEQUANTIZE of a float16 constant is how converters store float weights at half size: the graph keeps the
/// widened values as the output's constant instead of an op.
bool fold_float16_dequantize(const operation& op, graph& g) {
  if (op.op != builtin::dequantize) return false;
  const graph_tensor& in = g.tensors[static_cast<std::size_t>(op.inputs[0])];
  if (in.stored_type != element_type::float16 || !in.is_constant()) return false;
  graph_tensor& out = g.tensors[static_cast<std::size_t>(op.outputs[0])];
  if (out.type != element_type::float32 || out.shape != in.shape)
    fail("operator DEQUANTIZE of float16 constant '", in.name, "' writes '", out.name, "' of another type or shape");
  out.constant = in.constant;
  out.stored_type = element_type::float16;
  return true;
}

/// Kahn's algorithm over tensor producers, keeping the file's order among ready ops.
std::vector<graph_op> topological_order(std::vector<graph_op> ops, const graph& g) {
  std::vector<int> producer(g.tensors.size(), -1);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto out = static_cast<std::size_t>(ops[i].outputs[0]);
    if (producer[out] >= 0 || g.tensors[out].is_constant())
      fail("tensor ", out, " '", g.tensors[out].name, "' is written by more than one operator or is a constant");
    producer[out] = static_cast<int>(i);
  }
  for (const std::int32_t in : g.inputs)
    if (producer[static_cast<std::size_t>(in)] >= 0)
      fail("graph input ", in, " '", g.tensors[static_cast<std::size_t>(in)].name, "' is written by an operator");
  std::vector<bool> available(g.tensors.size(), false), done(ops.size(), false);
  for (const std::int32_t in : g.inputs) available[static_cast<std::size_t>(in)] = true;
  for (std::size_t t = 0; t < g.tensors.size(); ++t) available[t] = available[t] || g.tensors[t].is_constant();
  std::vector<graph_op> ordered;
  while (ordered.size() < ops.size()) {
    bool progressed = false;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const bool ready = std::all_of(ops[i].inputs.begin(), ops[i].inputs.end(),
                                     [&](std::int32_t t) { return t < 0 || available[static_cast<std::size_t>(t)]; });
      if (done[i] || !ready) continue;
      done[i] = progressed = true;
      available[static_cast<std::size_t>(ops[i].outputs[0])] = true;
      ordered.push_back(ops[i]);
    }
    if (!progressed) {
      const auto stuck = static_cast<std::size_t>(std::find(done.begin(), done.end(), false) - done.begin());
      fail("operator ", ops[stuck].source_index, " (", builtin_name(ops[stuck].op),
           ") reads a tensor that no operator writes before it (a cycle or a missing producer)");
    }
  }
  for (const std::int32_t out : g.outputs)
    if (!available[static_cast<std::size_t>(out)])
      fail("graph output ", out, " '", g.tensors[static_cast<std::size_t>(out)].name, "' is never written");
  return ordered;
}

graph build(const model& m) {
  const subgraph& sg = m.subgraphs.front();
  graph g{.description = m.description, .tensors = {}, .ops = {}, .inputs = sg.inputs, .outputs = sg.outputs};
  for (std::size_t i = 0; i < sg.tensors.size(); ++i) g.tensors.push_back(convert_tensor(sg.tensors[i], i, m));
  for (const std::int32_t in : sg.inputs) {
    if (g.tensors[static_cast<std::size_t>(in)].is_constant())
      fail("graph input ", in, " '", g.tensors[static_cast<std::size_t>(in)].name, "' is a constant");
    check_activation(sg.tensors[static_cast<std::size_t>(in)], static_cast<std::size_t>(in));
  }
  std::vector<graph_op> ops;
  for (std::size_t i = 0; i < sg.operators.size(); ++i) {
    const operation& op = sg.operators[i];
    if (fold_float16_dequantize(op, g)) continue;
    for (const std::int32_t out : op.outputs)
      check_activation(sg.tensors[static_cast<std::size_t>(out)], static_cast<std::size_t>(out));
    ops.push_back({op.op, op.options, op.inputs, op.outputs, i, {}});
  }
  g.ops = topological_order(std::move(ops), g);
  return g;
}

std::string type_string(const graph_tensor& t) {
  std::string out(to_string(t.type));
  if (t.stored_type != t.type) out += " (stored " + std::string(to_string(t.stored_type)) + ")";
  if (!t.quant.empty())
    out += t.quant.per_channel()
               ? " q[" + std::to_string(t.quant.scale.size()) + " channels, dim " +
                     std::to_string(t.quant.quantized_dimension) + "]"
               : " q[" + std::to_string(t.quant.scale[0]) + ", " + std::to_string(t.quant.zero_point[0]) + "]";
  return out;
}

std::string tensor_string(const graph& g, std::int32_t index) {
  if (index < 0) return "(none)";
  const graph_tensor& t = g.tensors[static_cast<std::size_t>(index)];
  return "'" + t.name + "' " + shape_string(t.shape) + " " + type_string(t) + (t.is_constant() ? " const" : "");
}

std::string tensor_list(const graph& g, const std::vector<std::int32_t>& indices) {
  std::string out;
  for (const std::int32_t i : indices) out += (out.empty() ? "" : ", ") + tensor_string(g, i);
  return out;
}

struct options_printer {
  std::ostringstream& out;
  void operator()(const no_options&) const {}
  void operator()(const conv2d_options& o) const {
    out << to_string(o.pad) << " stride " << o.stride_h << "x" << o.stride_w << " dilation " << o.dilation_h << "x"
        << o.dilation_w << " " << to_string(o.fused);
  }
  void operator()(const depthwise_options& o) const {
    out << to_string(o.pad) << " stride " << o.stride_h << "x" << o.stride_w << " dilation " << o.dilation_h << "x"
        << o.dilation_w << " multiplier " << o.depth_multiplier << " " << to_string(o.fused);
  }
  void operator()(const transpose_conv_options& o) const {
    out << to_string(o.pad) << " stride " << o.stride_h << "x" << o.stride_w << " " << to_string(o.fused);
  }
  void operator()(const pool2d_options& o) const {
    out << to_string(o.pad) << " filter " << o.filter_h << "x" << o.filter_w << " stride " << o.stride_h << "x"
        << o.stride_w << " " << to_string(o.fused);
  }
  void operator()(const fully_connected_options& o) const {
    out << to_string(o.fused) << (o.keep_num_dims ? " keep_num_dims" : "");
  }
  void operator()(const elementwise_options& o) const { out << to_string(o.fused); }
  void operator()(const concatenation_options& o) const { out << "axis " << o.axis << " " << to_string(o.fused); }
  void operator()(const reshape_options& o) const { out << "new_shape " << shape_string(o.new_shape); }
  void operator()(const resize_options& o) const {
    out << (o.align_corners ? "align_corners" : o.half_pixel_centers ? "half_pixel_centers" : "asymmetric");
  }
  void operator()(const softmax_options& o) const { out << "beta " << o.beta; }
  void operator()(const reducer_options& o) const { out << (o.keep_dims ? "keep_dims" : "no keep_dims"); }
  void operator()(const excitation_options& o) const {
    out << builtin_name(o.pool);
    for (const activation a : o.convolutions) out << ", 1x1 " << to_string(a);
    out << ", LOGISTIC";
  }
};

/// " <- file ops 6 7 8" for an op a pattern pass made out of several.
std::string parts_string(const graph_op& op) {
  if (op.parts.empty()) return {};
  std::ostringstream out;
  out << " <- file ops";
  for (const graph_op& part : op.parts) out << " " << part.source_index;
  return out.str();
}

}  // namespace

float widen_half(std::uint16_t bits) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu, out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);  // infinity or NaN (payload kept)
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 -> 127
  } else if (mantissa == 0) {
    out = sign;  // signed zero
  } else {       // subnormal: normalize
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    out = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

result<graph> build_graph(const model& source) {
  try {
    if (source.subgraphs.empty()) fail("the model has no subgraph");
    return build(source);
  } catch (const detail::import_error& e) {
    return result<graph>::failure(e.what());
  }
}

std::vector<std::pair<std::string, std::size_t>> op_histogram(const graph& g) {
  std::vector<std::pair<std::string, std::size_t>> counts;
  for (const graph_op& op : g.ops) {
    const std::string name = builtin_name(op.op);
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == name; });
    if (it == counts.end())
      counts.emplace_back(name, 1);
    else
      ++it->second;
  }
  return counts;
}

std::string options_string(const op_options& options) {
  std::ostringstream out;
  std::visit(options_printer{out}, options);
  return out.str();
}

std::string summary(const graph& g) {
  std::ostringstream out;
  const auto constants =
      std::count_if(g.tensors.begin(), g.tensors.end(), [](const auto& t) { return t.is_constant(); });
  out << "model '" << g.description << "': " << g.tensors.size() << " tensors (" << constants << " constants), "
      << g.ops.size() << " ops\n";
  out << "inputs: " << tensor_list(g, g.inputs) << "\noutputs: " << tensor_list(g, g.outputs) << "\n";
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const graph_op& op = g.ops[i];
    const std::string options = options_string(op.options);
    out << i << ": " << builtin_name(op.op) << (options.empty() ? "" : " [" + options + "]") << " ("
        << tensor_list(g, op.inputs) << ") -> " << tensor_list(g, op.outputs) << parts_string(op) << "\n";
  }
  out << "op histogram:";
  for (const auto& [name, count] : op_histogram(g)) out << " " << name << " " << count << ";";
  out << "\n";
  return out.str();
}

}  // namespace mosaiq::tflite
