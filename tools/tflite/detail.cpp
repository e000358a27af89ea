#include "detail.hpp"

namespace mosaiq::tflite::detail {

std::string shape_string(const std::vector<std::int32_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::uint64_t element_count(const std::vector<std::int32_t>& shape, const std::string& where) {
  constexpr std::uint64_t limit = std::uint64_t{1} << 40;
  std::uint64_t count = 1;
  for (const std::int32_t d : shape) {
    if (d < 0) fail(where, ": negative dimension in shape ", shape_string(shape));
    if (d != 0 && count > limit / static_cast<std::uint64_t>(d))
      fail(where, ": shape ", shape_string(shape), " has more than 2^40 elements");
    count *= static_cast<std::uint64_t>(d);
  }
  return count;
}

namespace {
std::string tensor_list(const std::vector<std::int32_t>& indices, const subgraph& graph) {
  std::string out;
  for (const std::int32_t i : indices) {
    if (!out.empty()) out += ", ";
    if (i < 0 || static_cast<std::size_t>(i) >= graph.tensors.size()) {
      out += "(none)";
      continue;
    }
    const tensor& t = graph.tensors[static_cast<std::size_t>(i)];
    out += "'" + t.name + "' " + shape_string(t.shape);
  }
  return out;
}
}  // namespace

std::string describe_operator(std::size_t index, const std::string& op_name, const operation& op,
                              const subgraph& graph) {
  return "operator " + std::to_string(index) + " (" + op_name + "; inputs: " + tensor_list(op.inputs, graph) +
         "; outputs: " + tensor_list(op.outputs, graph) + ")";
}

}  // namespace mosaiq::tflite::detail
