// Pattern passes on the neutral graph: batch norm folding, hard-swish recognition, activation fusion and
// squeeze-and-excitation / attention-gate blocks. Each pass matches one op at a time, rewrites, and looks again
// (the graphs are small), so a match always sees the current graph.
#include "mosaiq/tflite/patterns.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <set>

namespace mosaiq::tflite {
namespace {

using tensor_index = std::int32_t;

/// Who writes and who reads each tensor of the current op list (positions in graph::ops).
struct uses {
  std::vector<int> producer, reader;  // reader: the last op reading the tensor
  std::vector<int> reads;             // input slots that read the tensor, over all ops
  std::vector<bool> is_output;
};

uses find_uses(const graph& g) {
  const std::size_t n = g.tensors.size();
  uses u{std::vector<int>(n, -1), std::vector<int>(n, -1), std::vector<int>(n, 0), std::vector<bool>(n, false)};
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    for (const tensor_index t : g.ops[i].outputs) u.producer[static_cast<std::size_t>(t)] = static_cast<int>(i);
    for (const tensor_index t : g.ops[i].inputs) {
      if (t < 0) continue;
      ++u.reads[static_cast<std::size_t>(t)];
      u.reader[static_cast<std::size_t>(t)] = static_cast<int>(i);
    }
  }
  for (const tensor_index t : g.outputs) u.is_output[static_cast<std::size_t>(t)] = true;
  return u;
}

int producer_of(const uses& u, tensor_index t) { return t < 0 ? -1 : u.producer[static_cast<std::size_t>(t)]; }

/// The position of the one op that reads `t`, or -1 when `t` has other readers or is a graph output: only such
/// tensors may disappear inside a pattern.
int sole_reader(const uses& u, tensor_index t) {
  const auto i = static_cast<std::size_t>(t);
  return t >= 0 && u.reads[i] == 1 && !u.is_output[i] ? u.reader[i] : -1;
}

const graph_tensor& tensor_at(const graph& g, tensor_index t) { return g.tensors[static_cast<std::size_t>(t)]; }

/// The ops at `positions` become `replacement`, placed where the last of them was (its output is the pattern's
/// output, so every reader still comes after it); the replaced ops, flattened, become its parts.
void replace(graph& g, std::vector<int> positions, graph_op replacement) {
  std::sort(positions.begin(), positions.end());
  replacement.parts.clear();
  for (const int p : positions) {
    const graph_op& op = g.ops[static_cast<std::size_t>(p)];
    if (op.parts.empty())
      replacement.parts.push_back(op);
    else
      replacement.parts.insert(replacement.parts.end(), op.parts.begin(), op.parts.end());
  }
  replacement.source_index = replacement.parts.front().source_index;
  g.ops[static_cast<std::size_t>(positions.back())] = std::move(replacement);
  for (auto it = positions.rbegin() + 1; it != positions.rend(); ++it) g.ops.erase(g.ops.begin() + *it);
}

/// Runs `match` (graph, uses, op position) -> whether it rewrote, over the ops until no op matches.
template <class Match>
std::size_t rewrite_all(graph& g, Match match) {
  std::size_t count = 0;
  for (bool rewrote = true; rewrote;) {
    rewrote = false;
    const uses u = find_uses(g);
    for (std::size_t i = 0; i < g.ops.size() && !rewrote; ++i) rewrote = match(g, u, static_cast<int>(i));
    count += rewrote ? 1 : 0;
  }
  return count;
}

bool is_linear(builtin op) {
  return op == builtin::conv_2d || op == builtin::depthwise_conv_2d || op == builtin::fully_connected;
}

/// The fused activation of a conv/depthwise/fully-connected or ADD/SUB/MUL op's options, nullptr for others.
activation* fused_activation(op_options& options) {
  if (auto* o = std::get_if<conv2d_options>(&options)) return &o->fused;
  if (auto* o = std::get_if<depthwise_options>(&options)) return &o->fused;
  if (auto* o = std::get_if<fully_connected_options>(&options)) return &o->fused;
  if (auto* o = std::get_if<elementwise_options>(&options)) return &o->fused;
  return nullptr;
}

activation fused_of(const graph_op& op) {
  op_options options = op.options;
  const activation* a = fused_activation(options);
  return a ? *a : activation::none;
}

/// The input of a two-input op that is not `t`; -1 when both are.
tensor_index other_input(const graph_op& op, tensor_index t) {
  if (op.inputs.size() != 2) return -1;
  if (op.inputs[0] == t) return op.inputs[1] == t ? -1 : op.inputs[1];
  return op.inputs[1] == t ? op.inputs[0] : -1;
}

bool is_float(const graph_tensor& t) { return t.type == element_type::float32 && t.quant.empty(); }

const std::vector<float>* float_values(const graph& g, tensor_index t) {
  return t < 0 ? nullptr : std::get_if<std::vector<float>>(&tensor_at(g, t).constant);
}

std::optional<float> scalar_value(const graph& g, tensor_index t) {
  const auto* values = float_values(g, t);
  if (!values || values->size() != 1) return std::nullopt;
  return values->front();
}

bool is_sixth(const graph& g, tensor_index t) {
  const auto value = scalar_value(g, t);
  return value && std::abs(*value - 1.0f / 6.0f) <= 1e-6f;
}

// ---- batch norm -----------------------------------------------------------------------------------------------

/// A float constant that broadcasts along the last (channel) axis only, expanded to `channels` values.
std::optional<std::vector<float>> per_channel(const graph& g, tensor_index t, std::int32_t channels) {
  const auto* values = float_values(g, t);
  if (!values) return std::nullopt;
  const auto& shape = tensor_at(g, t).shape;
  for (std::size_t d = 0; d + 1 < shape.size(); ++d)
    if (shape[d] != 1) return std::nullopt;
  if (values->size() == 1) return std::vector<float>(static_cast<std::size_t>(channels), values->front());
  if (values->size() != static_cast<std::size_t>(channels)) return std::nullopt;
  return *values;
}

tensor_index append_constant(graph& g, std::string name, std::vector<std::int32_t> shape, std::vector<float> values) {
  g.tensors.push_back({.name = std::move(name),
                       .type = element_type::float32,
                       .stored_type = element_type::float32,
                       .shape = std::move(shape),
                       .quant = {},
                       .constant = std::move(values)});
  return static_cast<tensor_index>(g.tensors.size() - 1);
}

/// weights * scale per output channel: [O,...] for conv and fully-connected, [1,H,W,O] for depthwise.
std::optional<std::vector<float>> scaled_weights(const graph& g, const graph_op& conv,
                                                 const std::vector<float>& scale) {
  const auto* weights = float_values(g, conv.inputs[1]);
  const auto& shape = tensor_at(g, conv.inputs[1]).shape;
  const bool channel_last = conv.op == builtin::depthwise_conv_2d;
  if (shape.empty()) return std::nullopt;
  const auto channels = static_cast<std::size_t>(channel_last ? shape.back() : shape.front());
  if (!weights || channels != scale.size() || weights->empty()) return std::nullopt;
  std::vector<float> out(*weights);
  const std::size_t per_channel_count = out.size() / channels;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] *= scale[channel_last ? i % channels : i / per_channel_count];
  return out;
}

bool fold_batch_norm_at(graph& g, const uses& u, int position) {
  graph_op conv = g.ops[static_cast<std::size_t>(position)];
  if (!is_linear(conv.op) || fused_of(conv) != activation::none) return false;
  const tensor_index y = conv.outputs[0];
  if (!is_float(tensor_at(g, y)) || tensor_at(g, y).shape.empty()) return false;  // a scalar has no channels
  const auto channels = tensor_at(g, y).shape.back();
  const int mul = sole_reader(u, y);
  if (mul < 0 || g.ops[static_cast<std::size_t>(mul)].op != builtin::mul) return false;
  const graph_op& mul_op = g.ops[static_cast<std::size_t>(mul)];
  const auto scale = per_channel(g, other_input(mul_op, y), channels);
  const int add = sole_reader(u, mul_op.outputs[0]);
  if (!scale || fused_of(mul_op) != activation::none || add < 0) return false;
  const graph_op& add_op = g.ops[static_cast<std::size_t>(add)];
  const auto shift =
      add_op.op == builtin::add ? per_channel(g, other_input(add_op, mul_op.outputs[0]), channels) : std::nullopt;
  const auto weights = scaled_weights(g, conv, *scale);
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
  const auto* bias = has_bias ? float_values(g, conv.inputs[2]) : nullptr;
  if (!shift || !weights || (has_bias && (!bias || bias->size() != scale->size()))) return false;
  if (tensor_at(g, add_op.outputs[0]).shape != tensor_at(g, y).shape) return false;  // no broadcast to more axes
  std::vector<float> folded_bias(*shift);
  for (std::size_t c = 0; c < folded_bias.size(); ++c) folded_bias[c] += (bias ? (*bias)[c] : 0.0f) * (*scale)[c];
  const graph_tensor& w = tensor_at(g, conv.inputs[1]);
  const std::string name = w.name + "/batch_norm";
  const std::vector<std::int32_t> weight_shape = w.shape;
  conv.inputs.resize(3);
  conv.inputs[1] = append_constant(g, name, weight_shape, *weights);
  conv.inputs[2] = append_constant(g, name + "_bias", {channels}, std::move(folded_bias));
  *fused_activation(conv.options) = fused_of(add_op);
  conv.outputs = add_op.outputs;
  replace(g, {position, mul, add}, std::move(conv));
  return true;
}

// ---- hard-swish -----------------------------------------------------------------------------------------------

/// After relu6(x + 3) = `r` (at `positions`), the multiplications by x and 1/6 in any association; the output or -1.
tensor_index hard_swish_product(const graph& g, const uses& u, tensor_index x, tensor_index r,
                                std::vector<int>& positions) {
  const int m = sole_reader(u, r);
  if (m < 0 || g.ops[static_cast<std::size_t>(m)].op != builtin::mul) return -1;
  const graph_op& first = g.ops[static_cast<std::size_t>(m)];
  const tensor_index q = other_input(first, r);
  if (fused_of(first) != activation::none || q < 0) return -1;
  positions.push_back(m);
  if (q == x || is_sixth(g, q)) {  // (x * r) * c or (r * c) * x
    const int n = sole_reader(u, first.outputs[0]);
    if (n < 0 || g.ops[static_cast<std::size_t>(n)].op != builtin::mul) return -1;
    const graph_op& second = g.ops[static_cast<std::size_t>(n)];
    const tensor_index s = other_input(second, first.outputs[0]);
    const bool factors = q == x ? is_sixth(g, s) : s == x;
    if (!factors || fused_of(second) != activation::none) return -1;
    positions.push_back(n);
    return second.outputs[0];
  }
  const int p = producer_of(u, q);  // (x * c) * r
  if (p < 0 || sole_reader(u, q) != m || g.ops[static_cast<std::size_t>(p)].op != builtin::mul) return -1;
  const graph_op& scaled = g.ops[static_cast<std::size_t>(p)];
  const tensor_index c = other_input(scaled, x);
  if (c < 0 || !is_sixth(g, c) || fused_of(scaled) != activation::none) return -1;
  positions.push_back(p);
  return first.outputs[0];
}

bool recognise_hard_swish_at(graph& g, const uses& u, int position) {
  const graph_op& add = g.ops[static_cast<std::size_t>(position)];
  if (add.op != builtin::add || add.inputs.size() != 2) return false;
  const auto is_three = [&](tensor_index t) { return scalar_value(g, t) == 3.0f; };
  const tensor_index x = is_three(add.inputs[1]) ? add.inputs[0] : is_three(add.inputs[0]) ? add.inputs[1] : -1;
  if (x < 0 || tensor_at(g, x).is_constant() || !is_float(tensor_at(g, x))) return false;
  std::vector<int> positions{position};
  tensor_index r = add.outputs[0];
  if (fused_of(add) == activation::none) {  // a separate RELU6
    const int relu6 = sole_reader(u, r);
    if (relu6 < 0 || g.ops[static_cast<std::size_t>(relu6)].op != builtin::relu6) return false;
    positions.push_back(relu6);
    r = g.ops[static_cast<std::size_t>(relu6)].outputs[0];
  } else if (fused_of(add) != activation::relu6) {
    return false;
  }
  const tensor_index y = hard_swish_product(g, u, x, r, positions);
  if (y < 0 || tensor_at(g, y).shape != tensor_at(g, x).shape) return false;
  replace(g, positions, {builtin::hard_swish, no_options{}, {x}, {y}, 0, {}});
  return true;
}

// ---- activation fusion ----------------------------------------------------------------------------------------

bool fuse_activation_at(graph& g, const uses& u, int position) {
  const graph_op& act = g.ops[static_cast<std::size_t>(position)];
  if (act.op != builtin::relu && act.op != builtin::relu6) return false;
  const tensor_index x = act.inputs[0];
  const int p = producer_of(u, x);
  if (p < 0 || sole_reader(u, x) != position) return false;
  graph_op fused = g.ops[static_cast<std::size_t>(p)];
  activation* a = fused_activation(fused.options);
  if (!is_linear(fused.op) || !a || *a != activation::none) return false;
  const graph_tensor &in = tensor_at(g, x), &out = tensor_at(g, act.outputs[0]);
  if (in.type != out.type || in.quant != out.quant) return false;  // a requantizing activation stays an op
  *a = act.op == builtin::relu ? activation::relu : activation::relu6;
  fused.outputs = act.outputs;
  replace(g, {p, position}, std::move(fused));
  return true;
}

// ---- squeeze-and-excitation and attention gates ---------------------------------------------------------------

bool is_map_1x1(const graph_tensor& t) { return t.shape.size() == 4 && t.shape[1] == 1 && t.shape[2] == 1; }

/// A convolution with a 1x1 constant kernel on a 1x1 map.
bool is_squeeze_convolution(const graph& g, const graph_op& op) {
  if (op.op != builtin::conv_2d || !tensor_at(g, op.inputs[1]).is_constant()) return false;
  const auto& w = tensor_at(g, op.inputs[1]).shape;
  return w.size() == 4 && w[1] == 1 && w[2] == 1 && is_map_1x1(tensor_at(g, op.inputs[0]));
}

/// AVERAGE_POOL_2D whose window is the whole map, or MEAN over axes 1 and 2 keeping them; output [1,1,1,C].
bool is_whole_map_mean(const graph& g, const graph_op& op) {
  const auto& in = tensor_at(g, op.inputs[0]).shape;
  if (in.size() != 4 || !is_map_1x1(tensor_at(g, op.outputs[0]))) return false;
  if (const auto* o = std::get_if<pool2d_options>(&op.options); o && op.op == builtin::average_pool_2d)
    return o->filter_h == in[1] && o->filter_w == in[2] && o->fused == activation::none;
  const auto* o = std::get_if<reducer_options>(&op.options);
  const auto* axes = op.inputs.size() == 2 && op.inputs[1] >= 0
                         ? std::get_if<std::vector<std::int32_t>>(&tensor_at(g, op.inputs[1]).constant)
                         : nullptr;
  if (op.op != builtin::mean || !o || !o->keep_dims || !axes) return false;
  std::set<std::int32_t> normalized;
  for (const std::int32_t a : *axes) normalized.insert(a < 0 ? a + 4 : a);
  return normalized == std::set<std::int32_t>{1, 2};
}

/// From the gate tensor (a LOGISTIC's output read only by the MUL at `mul`) back through the 1x1 convolutions to
/// the whole-map mean; the block, or nothing.
std::optional<graph_op> excitation_block(const graph& g, const uses& u, int mul, tensor_index gate, tensor_index scaled,
                                         std::vector<int>& positions) {
  const int logistic = producer_of(u, gate);
  if (logistic < 0 || sole_reader(u, gate) != mul || g.ops[static_cast<std::size_t>(logistic)].op != builtin::logistic)
    return std::nullopt;
  positions = {mul, logistic};
  std::vector<int> convolutions;
  for (tensor_index z = g.ops[static_cast<std::size_t>(logistic)].inputs[0];;) {
    const int p = producer_of(u, z);
    if (p < 0 || sole_reader(u, z) != positions.back()) return std::nullopt;
    const graph_op& op = g.ops[static_cast<std::size_t>(p)];
    positions.push_back(p);
    if (is_whole_map_mean(g, op)) break;
    if (!is_squeeze_convolution(g, op) || convolutions.size() == 2) return std::nullopt;
    convolutions.insert(convolutions.begin(), p);
    z = op.inputs[0];
  }
  const graph_op& pool = g.ops[static_cast<std::size_t>(positions.back())];
  const auto& scaled_shape = tensor_at(g, scaled).shape;
  const auto& output_shape = tensor_at(g, g.ops[static_cast<std::size_t>(mul)].outputs[0]).shape;
  if (convolutions.empty() || scaled_shape.size() != 4 || scaled_shape.back() != tensor_at(g, gate).shape.back() ||
      output_shape != scaled_shape)
    return std::nullopt;
  const tensor_index pooled = pool.inputs[0];
  graph_op block{scaled == pooled ? builtin::squeeze_excitation : builtin::attention_gate,
                 excitation_options{pool.op, {}},
                 {scaled, pooled},
                 g.ops[static_cast<std::size_t>(mul)].outputs,
                 0,
                 {}};
  for (const int c : convolutions) {
    const graph_op& conv = g.ops[static_cast<std::size_t>(c)];
    block.inputs.push_back(conv.inputs[1]);
    block.inputs.push_back(conv.inputs.size() > 2 ? conv.inputs[2] : -1);
    std::get<excitation_options>(block.options).convolutions.push_back(fused_of(conv));
  }
  return block;
}

bool recognise_excitation_at(graph& g, const uses& u, int position) {
  const graph_op& mul = g.ops[static_cast<std::size_t>(position)];
  if (mul.op != builtin::mul || mul.inputs.size() != 2 || fused_of(mul) != activation::none) return false;
  for (std::size_t k = 0; k < 2; ++k) {
    std::vector<int> positions;
    auto block = excitation_block(g, u, position, mul.inputs[k], mul.inputs[1 - k], positions);
    if (!block) continue;
    replace(g, positions, std::move(*block));
    return true;
  }
  return false;
}

std::size_t count_ops(const graph& g, builtin op) {
  return static_cast<std::size_t>(
      std::count_if(g.ops.begin(), g.ops.end(), [&](const graph_op& o) { return o.op == op; }));
}

}  // namespace

std::size_t fold_batch_norm(graph& g) { return rewrite_all(g, fold_batch_norm_at); }
std::size_t recognise_hard_swish(graph& g) { return rewrite_all(g, recognise_hard_swish_at); }
std::size_t fuse_activations(graph& g) { return rewrite_all(g, fuse_activation_at); }
std::size_t recognise_excitation(graph& g) { return rewrite_all(g, recognise_excitation_at); }

pattern_counts apply_patterns(graph& g) {
  pattern_counts counts;
  counts.batch_norm_folds = fold_batch_norm(g);
  counts.hard_swish_decomposed = recognise_hard_swish(g);
  counts.activation_fusions = fuse_activations(g);
  recognise_excitation(g);
  counts.hard_swish_ops = count_ops(g, builtin::hard_swish);
  counts.squeeze_excitations = count_ops(g, builtin::squeeze_excitation);
  counts.attention_gates = count_ops(g, builtin::attention_gate);
  return counts;
}

std::string to_string(const pattern_counts& c) {
  return "batch norm folds " + std::to_string(c.batch_norm_folds) + ", hard-swish " + std::to_string(c.hard_swish_ops) +
         " (" + std::to_string(c.hard_swish_decomposed) + " decomposed), activation fusions " +
         std::to_string(c.activation_fusions) + ", squeeze-excitation " + std::to_string(c.squeeze_excitations) +
         ", attention gates " + std::to_string(c.attention_gates);
}

}  // namespace mosaiq::tflite
