// The TFLite reader and graph on MediaPipe Selfie Segmentation (npm @mediapipe/selfie_segmentation, both variants).
// The expected counts, shapes and op histograms were established independently of this reader: by walking the
// files' flatbuffer tables by hand (vtable offsets, no flatbuffers library), and agree with the model card's
// 256x256x3 -> 256x256x1 and 144x256x3 -> 144x256x1.
//
// The package directory comes from MOSAIQ_SELFIE_DIR (scripts/test fetches it with `npm pack`); without it the
// binary prints why and exits 77 (ctest: skipped).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mosaiq/tflite/graph.hpp"
#include "mosaiq/tflite/patterns.hpp"
#include "mosaiq/tflite/reader.hpp"

namespace {

namespace tfl = mosaiq::tflite;
std::filesystem::path package_dir;

struct expected_model {
  const char* file;
  std::size_t tensors, file_operators, buffers;
  std::vector<std::int32_t> input_shape, output_shape;
  std::map<std::string, std::size_t> histogram;  // of the graph, after folding the 110 float16 DEQUANTIZE ops
  std::map<std::string, std::size_t> rewritten;  // after the pattern passes
  tfl::builtin pool;                             // of the excitation blocks
};

std::map<std::string, std::size_t> histogram(const tfl::graph& g) {
  std::map<std::string, std::size_t> out;
  for (const auto& [name, count] : tfl::op_histogram(g)) out[name] = count;
  return out;
}

/// Counted by hand in the summary: every RELU follows a conv or depthwise whose output nothing else reads; the
/// encoder's six squeeze-and-excitation blocks (pool, 1x1 + RELU, 1x1, LOGISTIC, MUL with the pooled tensor); the
/// LR-ASPP head's gate (pool of one tensor, one 1x1, LOGISTIC, MUL with RELU(1x1 of it)) and the decoder's three
/// gates (pool of skip + upsampled, two 1x1, LOGISTIC, MUL with the skip tensor alone).
void check_patterns(tfl::graph g, const expected_model& expected) {
  const tfl::pattern_counts counts = tfl::apply_patterns(g);
  CHECK(counts == tfl::pattern_counts{.batch_norm_folds = 0,
                                      .hard_swish_decomposed = 0,
                                      .hard_swish_ops = 11,
                                      .activation_fusions = 22,
                                      .squeeze_excitations = 6,
                                      .attention_gates = 4});
  CHECK(histogram(g) == expected.rewritten);
  std::size_t one_convolution_gates = 0;
  for (const tfl::graph_op& op : g.ops) {
    const auto* options = std::get_if<tfl::excitation_options>(&op.options);
    if (!options) continue;
    CHECK(options->pool == expected.pool);
    one_convolution_gates += options->convolutions.size() == 1 ? 1 : 0;
    if (op.op == tfl::builtin::squeeze_excitation) CHECK(op.inputs[0] == op.inputs[1]);
    // pool, convolutions, the RELUs fused into all but the last, LOGISTIC, MUL
    CHECK(op.parts.size() == options->convolutions.size() * 2 + 2);
    CHECK(options->convolutions.back() == tfl::activation::none);
  }
  CHECK(one_convolution_gates == 1);
}

/// Both models after the pattern passes: what stays an op, and the blocks.
std::map<std::string, std::size_t> rewritten_histogram() {
  return {{"CONV_2D", 24},        {"DEPTHWISE_CONV_2D", 11},
          {"HARD_SWISH", 11},     {"SQUEEZE_EXCITATION", 6},
          {"ATTENTION_GATE", 4},  {"ADD", 14},
          {"RESIZE_BILINEAR", 3}, {"Convolution2DTransposeBias", 1},
          {"LOGISTIC", 1}};
}

void check_model(const expected_model& expected) {
  INFO("model ", expected.file);
  const auto bytes = tfl::read_file((package_dir / expected.file).string());
  REQUIRE_MESSAGE(bytes.ok(), bytes.error());
  const auto model = tfl::read_model(bytes.value());
  REQUIRE_MESSAGE(model.ok(), model.error());
  const tfl::model& m = model.value();
  CHECK(m.version == 3);
  REQUIRE(m.subgraphs.size() == 1);
  CHECK(m.subgraphs[0].tensors.size() == expected.tensors);
  CHECK(m.subgraphs[0].operators.size() == expected.file_operators);
  CHECK(m.buffers.size() == expected.buffers);

  const auto graph = tfl::build_graph(m);
  REQUIRE_MESSAGE(graph.ok(), graph.error());
  const tfl::graph& g = graph.value();
  REQUIRE(g.inputs.size() == 1);
  REQUIRE(g.outputs.size() == 1);
  CHECK(g.tensors[static_cast<std::size_t>(g.inputs[0])].shape == expected.input_shape);
  CHECK(g.tensors[static_cast<std::size_t>(g.outputs[0])].shape == expected.output_shape);
  CHECK(histogram(g) == expected.histogram);
  CHECK(g.ops.size() + 110 == expected.file_operators);
  // Every float weight was stored as float16 and is now a widened float32 constant.
  for (const tfl::graph_op& op : g.ops) {
    if (op.op != tfl::builtin::conv_2d && op.op != tfl::builtin::depthwise_conv_2d) continue;
    const tfl::graph_tensor& w = g.tensors[static_cast<std::size_t>(op.inputs[1])];
    CHECK(w.is_constant());
    CHECK(w.stored_type == tfl::element_type::float16);
    CHECK(w.type == tfl::element_type::float32);
  }
  // The last two ops: the 2x2 stride-2 transposed convolution to one channel, then the logistic.
  REQUIRE(g.ops.size() >= 2);
  CHECK(g.ops[g.ops.size() - 2].op == tfl::builtin::convolution_2d_transpose_bias);
  CHECK(g.ops[g.ops.size() - 2].options == tfl::op_options{tfl::transpose_conv_options{tfl::padding::same, 2, 2}});
  CHECK(g.ops.back().op == tfl::builtin::logistic);
  check_patterns(g, expected);
}

}  // namespace

TEST_CASE("selfie segmentation 256x256: read, graph and op histogram") {
  check_model({"selfie_segmentation.tflite",
               360,
               246,
               116,
               {1, 256, 256, 3},
               {1, 256, 256, 1},
               {{"CONV_2D", 43},
                {"DEPTHWISE_CONV_2D", 11},
                {"HARD_SWISH", 11},
                {"RELU", 22},
                {"AVERAGE_POOL_2D", 10},
                {"LOGISTIC", 11},
                {"MUL", 10},
                {"ADD", 14},
                {"RESIZE_BILINEAR", 3},
                {"Convolution2DTransposeBias", 1}},
               rewritten_histogram(),
               tfl::builtin::average_pool_2d});
}

TEST_CASE("selfie segmentation landscape 144x256: read, graph and op histogram") {
  check_model({"selfie_segmentation_landscape.tflite",
               370,
               246,
               126,
               {1, 144, 256, 3},
               {1, 144, 256, 1},
               {{"CONV_2D", 43},
                {"DEPTHWISE_CONV_2D", 11},
                {"HARD_SWISH", 11},
                {"RELU", 22},
                {"MEAN", 10},
                {"LOGISTIC", 11},
                {"MUL", 10},
                {"ADD", 14},
                {"RESIZE_BILINEAR", 3},
                {"Convolution2DTransposeBias", 1}},
               rewritten_histogram(),
               tfl::builtin::mean});
}

int main(int argc, char** argv) {
  const char* dir = std::getenv("MOSAIQ_SELFIE_DIR");
  if (!dir || !*dir || !std::filesystem::exists(std::filesystem::path(dir) / "selfie_segmentation.tflite")) {
    std::printf(
        "skipped: the @mediapipe/selfie_segmentation package is not available (set MOSAIQ_SELFIE_DIR to an "
        "unpacked `npm pack` of it; scripts/common.sh fetch_selfie)\n");
    return 77;
  }
  package_dir = dir;
  doctest::Context context(argc, argv);
  return context.run();
}
