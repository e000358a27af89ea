// libFuzzer target for the TFLite importer's reader, graph and pattern stages: any bytes either fail with a message
// or give a model whose every view, index and op order holds (checked here, for the graph before and after the
// pattern passes), never a crash (ASan/UBSan). Seeded with the
// committed corpus (tests/fuzz_corpus/tflite) and, by scripts/fuzz-tflite, the MediaPipe selfie models.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mosaiq/tflite/graph.hpp"
#include "mosaiq/tflite/patterns.hpp"
#include "mosaiq/tflite/reader.hpp"

namespace {

namespace tfl = mosaiq::tflite;

void expect(bool condition) {
  if (!condition) __builtin_trap();
}

bool in_range(std::int32_t index, std::size_t count) { return index >= 0 && static_cast<std::size_t>(index) < count; }

void check_model(const tfl::model& m, const std::vector<std::uint8_t>& bytes) {
  for (const tfl::buffer& b : m.buffers)
    expect(b.data.empty() ||
           (b.data.data() >= bytes.data() && b.data.data() + b.data.size() <= bytes.data() + bytes.size()));
  for (const tfl::subgraph& sg : m.subgraphs) {
    for (const tfl::tensor& t : sg.tensors) expect(t.buffer < m.buffers.size());
    for (const tfl::operation& op : sg.operators) {
      for (const std::int32_t i : op.inputs) expect(i == -1 || in_range(i, sg.tensors.size()));
      expect(op.outputs.size() == 1 && in_range(op.outputs[0], sg.tensors.size()));
    }
  }
}

/// Every op reads only constants, graph inputs and tensors written by earlier ops; every graph output is written.
void check_graph(const tfl::graph& g) {
  std::vector<bool> available(g.tensors.size(), false);
  for (std::size_t t = 0; t < g.tensors.size(); ++t) available[t] = g.tensors[t].is_constant();
  for (const std::int32_t in : g.inputs) available[static_cast<std::size_t>(in)] = true;
  for (const tfl::graph_op& op : g.ops) {
    for (const std::int32_t in : op.inputs)
      expect(in == -1 || (in_range(in, g.tensors.size()) && available[static_cast<std::size_t>(in)]));
    available[static_cast<std::size_t>(op.outputs[0])] = true;
  }
  for (const std::int32_t out : g.outputs) expect(available[static_cast<std::size_t>(out)]);
  expect(!tfl::summary(g).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> bytes(data, data + size);  // aligned, as read_model asks
  const auto model = tfl::read_model(bytes);
  if (!model) {
    expect(!model.error().empty());
    return 0;
  }
  check_model(model.value(), bytes);
  auto graph = tfl::build_graph(model.value());
  if (!graph) {
    expect(!graph.error().empty());
    return 0;
  }
  check_graph(graph.value());
  const std::size_t ops = graph.value().ops.size();
  tfl::apply_patterns(graph.value());
  expect(graph.value().ops.size() <= ops);
  check_graph(graph.value());
  return 0;
}
