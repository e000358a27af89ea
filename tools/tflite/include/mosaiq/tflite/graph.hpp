// The importer's second stage: a read model -> a neutral graph of tensors, constants and ops in topological order,
// ready for pattern matching and emission. Float16 constants are widened to float (with the DEQUANTIZE ops that
// widened them at run time folded away); quantized constants keep their scales and zero points. Rejects what a
// static mosaiq network cannot be: dynamic shapes, batch > 1, state (variable tensors), cycles, tensors written
// twice or read before anything writes them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "mosaiq/tflite/model.hpp"

namespace mosaiq::tflite {

/// A constant's values: float for float32 and (widened) float16 data, the stored integers otherwise.
using constant_data = std::variant<std::monostate, std::vector<float>, std::vector<std::int32_t>,
                                   std::vector<std::uint8_t>, std::vector<std::int8_t>>;

struct graph_tensor {
  std::string name;
  element_type type = element_type::float32;         // as the graph computes with it (float32 for widened float16)
  element_type stored_type = element_type::float32;  // as the file stores it
  std::vector<std::int32_t> shape;
  quantization quant;
  constant_data constant;
  bool is_constant() const noexcept { return !std::holds_alternative<std::monostate>(constant); }
};

struct graph_op {
  builtin op = builtin::add;
  op_options options;
  std::vector<std::int32_t> inputs, outputs;  // graph tensor indices (the file's); -1: omitted optional input
  std::size_t source_index = 0;               // the operator's index in the file
  /// When a pattern pass (patterns.hpp) made this op out of several: those ops, in graph order, as read.
  std::vector<graph_op> parts;
};

/// Tensor indices are the file's (subgraph 0), so messages and summaries name the same tensors as other tools.
struct graph {
  std::string description;
  std::vector<graph_tensor> tensors;
  std::vector<graph_op> ops;  // topologically ordered: every op after the ops that produce its inputs
  std::vector<std::int32_t> inputs, outputs;
};

result<graph> build_graph(const model& source);

/// float16 bits -> float (IEEE 754 binary16: subnormals, infinities and NaN included).
float widen_half(std::uint16_t bits) noexcept;

/// Op names with their counts, in order of first appearance.
std::vector<std::pair<std::string, std::size_t>> op_histogram(const graph& g);

/// A readable summary: inputs, outputs, one line per op with its options and its tensors' names and shapes, the
/// op histogram.
std::string summary(const graph& g);

/// One op's options as text ("SAME stride 2x2 dilation 1x1 RELU6").
std::string options_string(const op_options& options);

}  // namespace mosaiq::tflite
