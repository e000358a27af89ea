// mosaiq-tflite-summary MODEL.tflite: reads a model, builds its graph and prints the graph's summary (inputs,
// outputs, one line per op with options, tensor names and shapes, the op histogram), or the reason it cannot.
#include <cstdio>

#include "mosaiq/tflite/graph.hpp"
#include "mosaiq/tflite/reader.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.tflite\n", argv[0]);
    return 2;
  }
  namespace tfl = mosaiq::tflite;
  const auto bytes = tfl::read_file(argv[1]);
  const auto model = bytes ? tfl::read_model(bytes.value()) : tfl::result<tfl::model>::failure(bytes.error());
  const auto graph = model ? tfl::build_graph(model.value()) : tfl::result<tfl::graph>::failure(model.error());
  if (!graph) {
    std::fprintf(stderr, "%s: %s\n", argv[1], graph.error().c_str());
    return 1;
  }
  std::fputs(tfl::summary(graph.value()).c_str(), stdout);
  return 0;
}
