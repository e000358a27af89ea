// mosaiq-tflite-summary [--patterns] MODEL.tflite: reads a model, builds its graph and prints the graph's summary
// (inputs, outputs, one line per op with options, tensor names and shapes, the op histogram), or the reason it
// cannot. With --patterns, the summary of the graph after the pattern passes, then what they found.
#include <cstdio>
#include <string_view>

#include "mosaiq/tflite/graph.hpp"
#include "mosaiq/tflite/patterns.hpp"
#include "mosaiq/tflite/reader.hpp"

int main(int argc, char** argv) {
  const bool patterns = argc == 3 && std::string_view(argv[1]) == "--patterns";
  if (argc != 2 && !patterns) {
    std::fprintf(stderr, "usage: %s [--patterns] MODEL.tflite\n", argv[0]);
    return 2;
  }
  const char* path = argv[argc - 1];
  namespace tfl = mosaiq::tflite;
  const auto bytes = tfl::read_file(path);
  const auto model = bytes ? tfl::read_model(bytes.value()) : tfl::result<tfl::model>::failure(bytes.error());
  auto graph = model ? tfl::build_graph(model.value()) : tfl::result<tfl::graph>::failure(model.error());
  if (!graph) {
    std::fprintf(stderr, "%s: %s\n", path, graph.error().c_str());
    return 1;
  }
  if (!patterns) {
    std::fputs(tfl::summary(graph.value()).c_str(), stdout);
    return 0;
  }
  const tfl::pattern_counts counts = tfl::apply_patterns(graph.value());
  std::fputs(tfl::summary(graph.value()).c_str(), stdout);
  std::printf("patterns: %s\n", tfl::to_string(counts).c_str());
  return 0;
}
