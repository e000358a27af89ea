// The emitter end to end: tflite_import_models wrote quantized models, mosaiq-import turned each into a header and a
// weights blob at build time, and this file compiles those headers. Each generated network loads its blob and must
// equal, bit for bit, an op-by-op interpreter of the same .tflite on mosaiq's reference ops (TFLite semantics), on
// several random inputs. Also: what the importer refuses, and how it says so.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "branches_i8.hpp"
#include "branches_u8.hpp"
#include "gate_i8.hpp"
#include "gate_u8.hpp"
#include "head_i8.hpp"
#include "head_u8.hpp"
#include "heads_i8.hpp"
#include "heads_u8.hpp"
#include "mosaiq/net.hpp"
#include "mosaiq/tflite/emitter.hpp"
#include "mosaiq/tflite/reader.hpp"
#include "mosaiq/tools/float_blob.hpp"
#include "support.hpp"
#include "tflite_quantized_writer.hpp"
#include "tflite_reference_interpreter.hpp"

namespace {

namespace tfl = mosaiq::tflite;
namespace files = mosaiq::test::tflite_files;
namespace fb = files::fb;

const std::string models_dir = MOSAIQ_IMPORT_MODELS_DIR;

std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::transform(chars.begin(), chars.end(), bytes.begin(), [](char c) { return std::byte(c); });
  return bytes;
}

tfl::graph read_graph(const std::vector<std::uint8_t>& bytes) {
  const auto model = tfl::read_model(bytes);
  REQUIRE_MESSAGE(model.ok(), model.error());
  auto graph = tfl::build_graph(model.value());
  REQUIRE_MESSAGE(graph.ok(), graph.error());
  return std::move(graph).value();
}

/// No extra outputs to compare.
struct no_extra_outputs {
  template <class Interpreter>
  void operator()(std::span<const std::byte>, const Interpreter&) const {}
};

/// Loads the generated network's blob, runs it and the interpreter on random inputs, and compares run()'s output with
/// the interpreter's graph output `main_output`, and through `check_extras(arena, interpreter)` the extra outputs.
template <class Net, class CheckExtras = no_extra_outputs>
void check_generated_network(const std::string& model, std::size_t main_output = 0, CheckExtras check_extras = {}) {
  using T = typename Net::element_type;
  const auto blob = read_bytes(models_dir + "/" + model + ".mosaiq");
  auto weights = std::make_unique<typename Net::weights>();
  REQUIRE(Net::load(blob, *weights));
  const typename Net::prepared prepared = Net::prepare(*weights);
  const auto file = tfl::read_file(models_dir + "/" + model + ".tflite");
  REQUIRE(file.ok());
  const tfl::graph graph = read_graph(file.value());
  mosaiq::test::reference_interpreter<T> interpreter(graph);

  std::vector<std::byte> arena_storage(Net::arena_bytes + 64);
  auto* aligned = reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(arena_storage.data()) + 63) / 64 * 64);
  const std::span<std::byte> arena(aligned, Net::arena_bytes);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> value(mosaiq::element_traits<T>::min, mosaiq::element_traits<T>::max);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<T> input(Net::input_shape.elements());
    for (T& v : input) v = static_cast<T>(value(rng));
    std::vector<T> output(Net::output_shape.elements());
    Net::run(prepared, mosaiq::tensor_view<const T>(input.data(), Net::input_shape),
             mosaiq::tensor_view<T>(output.data(), Net::output_shape), arena);
    interpreter.run(input);
    const std::vector<T>& expected = interpreter.output(main_output);
    CAPTURE(model);
    CAPTURE(trial);
    REQUIRE(expected.size() == output.size());
    CHECK(output == expected);
    check_extras(arena, interpreter);
    if constexpr (Net::max_threads > 1) {
      // The same on max_threads threads and on more (the extra ones stay idle).
      for (const int threads : {Net::max_threads, Net::max_threads + 1}) {
        mosaiq::thread_pool pool(threads);
        std::vector<T> threaded(output.size());
        Net::run(prepared, mosaiq::tensor_view<const T>(input.data(), Net::input_shape),
                 mosaiq::tensor_view<T>(threaded.data(), Net::output_shape), arena, pool);
        CAPTURE(threads);
        CHECK(threaded == output);
        check_extras(arena, interpreter);
      }
    }
    // A network that saturated everywhere would prove little: the outputs must vary.
    CHECK(std::count(output.begin(), output.end(), output.front()) < static_cast<std::ptrdiff_t>(output.size()));
  }
}

tfl::result<tfl::emitted_network> lower(const files::model_spec& spec) {
  const std::vector<std::uint8_t> bytes = files::write(spec);
  tfl::graph graph = read_graph(bytes);
  tfl::apply_emitter_patterns(graph);
  return tfl::lower_quantized(graph);
}

std::string import_error(const files::model_spec& spec) {
  const auto net = lower(spec);
  REQUIRE_FALSE(net.ok());
  return net.error();
}

/// heads_{u8,i8}: the file's outputs are boxes, scores (run()'s), features and the reshaped summary; the extra ones
/// are output layers named after their tensors' indices in the file (the summary after the pooled tensor it
/// reshapes).
template <class Net>
void check_heads(const std::string& model) {
  using T = typename Net::element_type;
  const auto extras = [](std::span<const std::byte> arena, const auto& interpreter) {
    const auto equals = [&](mosaiq::tensor_view<const T> view, std::size_t graph_output) {
      const std::vector<T>& expected = interpreter.output(graph_output);
      REQUIRE(view.dims().elements() == expected.size());
      return std::equal(expected.begin(), expected.end(), view.data());
    };
    CHECK(equals(Net::template output_view<"t4">(arena), 0));   // boxes
    CHECK(equals(Net::template output_view<"t1">(arena), 2));   // features, also read by two heads
    CHECK(equals(Net::template output_view<"t10">(arena), 3));  // summary = pooled
  };
  check_generated_network<Net>(model, 1, extras);
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("generated networks equal the reference interpreter of their .tflite bit for bit") {
  check_generated_network<branches_u8::network>("branches_u8");
  check_generated_network<branches_i8::network>("branches_i8");
  check_generated_network<head_u8::network>("head_u8");
  check_generated_network<head_i8::network>("head_i8");
  check_generated_network<gate_u8::network>("gate_u8");
  check_generated_network<gate_i8::network>("gate_i8");
  check_heads<heads_u8::network>("heads_u8");
  check_heads<heads_i8::network>("heads_i8");
}

TEST_CASE("generated networks have the model's structure") {
  // The residual add reads the earlier tensor by name: its second operand was the current one.
  static_assert(branches_u8::network::layer_count > 15);
  static_assert(branches_u8::network::output_shape == mosaiq::shape{4, 4, 5});
  static_assert(head_i8::network::output_shape == mosaiq::shape{1, 1, 4});
  // mosaiq_add_model MAX_THREADS (tests/CMakeLists.txt): the branches and gate models run on up to two threads.
  static_assert(branches_u8::network::max_threads == 2 && gate_i8::network::max_threads == 2);
  static_assert(head_u8::network::max_threads == 1);
  const std::string header = text_of(models_dir + "/branches_u8.hpp");
  CHECK(header.find("mosaiq::layers::add<\"t") != std::string::npos);
  CHECK(header.find("mosaiq::layers::concat<\"t") != std::string::npos);
  CHECK(header.find("operator 0 (CONV_2D): 'image' [1,9,11,3] -> 'c1' [1,5,6,8]") != std::string::npos);
  CHECK(header.find(".dilation = {2, 2}") != std::string::npos);
  // Four outputs: run()'s is the last op's, the others output layers after their producers, named in the header.
  static_assert(heads_u8::network::output_shape == mosaiq::shape{4, 4, 2});
  static_assert(heads_i8::network::extra_output_count == 3);
  const std::string heads = text_of(models_dir + "/heads_i8.hpp");
  CHECK(heads.find("// run() writes the output 'probabilities' [1,4,4,2]") != std::string::npos);
  CHECK(heads.find("//   \"t10\": 'summary' [1,8] scale 0.02 zp -128") != std::string::npos);
  CHECK(heads.find("mosaiq::layers::output<\"t1\">,  // extra output: 'features' [1,8,8,8]") != std::string::npos);
  // The max pool that feeds nothing is left out.
  CHECK(text_of(models_dir + "/head_u8.hpp").find("max_pool") == std::string::npos);
}

TEST_CASE("a blob for another network is refused") {
  mosaiq::test::recording_handler errors;
  const auto blob = read_bytes(models_dir + "/branches_u8.mosaiq");
  auto weights = std::make_unique<branches_i8::network::weights>();
  CHECK_FALSE(branches_i8::network::load(blob, *weights));
  CHECK(errors.last() == mosaiq::errc::blob_mismatch);
}

TEST_CASE("the importer names the operator and the reason for what it cannot emit") {
  using index = files::quantized_writer::index;
  SUBCASE("an op without a layer") {
    files::quantized_writer m(false);
    const index x = m.input("x", {1, 2, 2, 3}, 0.1f, 128);
    m.output(m.op(files::codes::sub, {x, x}, m.activation_tensor("d", {1, 2, 2, 3}, 0.1f, 128),
                  fb::BuiltinOptions_SubOptions, [](auto& b) { return fb::CreateSubOptions(b, 0).Union(); }));
    CHECK(import_error(m.spec) == "operator 0 (SUB): mosaiq has no layer for this op");
  }
  SUBCASE("a constant operand of ADD") {
    files::quantized_writer m(true);
    const index x = m.input("x", {1, 2, 2, 3}, 0.1f, 128);
    const index c = m.filter("c", {1, 2, 2, 3}, 3);
    m.output(m.op(files::codes::add, {x, c}, m.activation_tensor("s", {1, 2, 2, 3}, 0.1f, 128),
                  fb::BuiltinOptions_AddOptions, [](auto& b) { return fb::CreateAddOptions(b, 0).Union(); }));
    CHECK(import_error(m.spec).starts_with("operator 0 (ADD): input 'c' [1,2,2,3] is a constant"));
  }
  SUBCASE("a pool whose output quantization differs from its input's") {
    files::quantized_writer m(false);
    const index x = m.input("x", {1, 4, 4, 3}, 0.1f, 128);
    m.output(m.op(files::codes::max_pool, {x}, m.activation_tensor("p", {1, 2, 2, 3}, 0.2f, 128),
                  fb::BuiltinOptions_Pool2DOptions,
                  [](auto& b) { return fb::CreatePool2DOptions(b, 1, 2, 2, 2, 2, 0).Union(); }));
    CHECK(import_error(m.spec).find("operator 0 (MAX_POOL_2D): input 'x' [1,4,4,3] and output 'p' [1,2,2,3] must "
                                    "share scale and zero point") == 0);
  }
  SUBCASE("two inputs") {
    files::quantized_writer m(false);
    const index x = m.input("x", {1, 2, 2, 3}, 0.1f, 128);
    const index y = m.input("y", {1, 2, 2, 3}, 0.1f, 128);
    m.output(m.op(files::codes::add, {x, y}, m.activation_tensor("s", {1, 2, 2, 3}, 0.1f, 128),
                  fb::BuiltinOptions_AddOptions, [](auto& b) { return fb::CreateAddOptions(b, 0).Union(); }));
    CHECK(import_error(m.spec) == "the model has 2 inputs; a mosaiq network has one (and any number of outputs)");
  }
  SUBCASE("the input as an output") {
    files::quantized_writer m(false);
    const index x = m.input("x", {1, 2, 2, 3}, 0.1f, 128);
    m.output(m.op(files::codes::logistic, {x}, m.probability("y", {1, 2, 2, 3})));
    m.output(x);
    CHECK(import_error(m.spec) == "the output 'x' [1,2,2,3] is the model's input; a network's outputs are computed");
  }
  SUBCASE("a float model") {
    files::model_spec spec;
    spec.tensors = {files::activation("x", {1, 2, 2, 3}), files::activation("y", {1, 2, 2, 3})};
    spec.ops = {{.code = files::codes::logistic, .inputs = {0}, .outputs = {1}}};
    spec.inputs = {0};
    spec.outputs = {1};
    CHECK(import_error(spec).find("input 'x' [1,2,2,3] is float32") == 0);
  }
}

TEST_CASE("HARD_SWISH and TRANSPOSE_CONV become the selfie ops' layers, with their weights") {
  // The layers themselves arrive with the selfie-ops branch: here only the text and the payload are checked.
  using index = files::quantized_writer::index;
  constexpr std::int32_t hard_swish_code = 117, transpose_conv_code = 67;
  for (const bool int8 : {false, true}) {
    CAPTURE(int8);
    files::quantized_writer m(int8);
    const index x = m.input("x", {1, 4, 4, 6}, 0.05f, 128);
    const index h =
        m.op(hard_swish_code, {x}, m.activation_tensor("h", {1, 4, 4, 6}, 0.04f, 100),
             fb::BuiltinOptions_HardSwishOptions, [](auto& b) { return fb::CreateHardSwishOptions(b).Union(); });
    const index shape = m.int_vector("up/shape", {1, 8, 8, 3});
    const index w = m.filter("up/weights", {3, 2, 2, 6}, 0);
    const index b = m.bias("up/bias", 3);
    m.output(m.op(transpose_conv_code, {shape, w, h, b}, m.activation_tensor("up", {1, 8, 8, 3}, 0.1f, 128),
                  fb::BuiltinOptions_TransposeConvOptions,
                  [](auto& builder) { return fb::CreateTransposeConvOptions(builder, 0, 2, 2, 0).Union(); }));
    const auto net = lower(m.spec);
    REQUIRE_MESSAGE(net.ok(), net.error());
    const auto& layers = net.value().layers;
    REQUIRE(layers.size() == 2);
    CHECK(layers[0].spelling == "mosaiq::layers::hard_swish<>");
    CHECK(layers[0].payload.size() == 8);  // the output quantization
    CHECK(layers[1].spelling ==
          "mosaiq::layers::transpose_conv<mosaiq::layers::transpose_conv_config{.out_channels = 3, .kernel = {2, 2}, "
          ".stride = {2, 2}, "
          ".padding = mosaiq::padding::same()}>");
    const std::size_t scales = int8 ? 3 : 1;
    CHECK(layers[1].payload.size() == 3 * 2 * 2 * 6 + 4 * 3 + 4 * scales + 4 + 8);
    CHECK(layers[1].shape == std::array<std::int32_t, 3>{8, 8, 3});
  }
}

namespace {

/// The hand-written network mosaiq-import's lowering of float_gate_model() spells (layer kinds and shapes are what
/// its float weights file records).
using float_gate_net = mosaiq::network<
    mosaiq::input<mosaiq::i8, 4, 4, 3>,
    mosaiq::layers::conv2d<mosaiq::layers::conv2d_config{
        .out_channels = 4, .kernel = {3, 3}, .pad = mosaiq::padding::same(), .act = mosaiq::activation::relu6}>,
    mosaiq::layers::tap<"t3">,
    mosaiq::layers::average_pool<mosaiq::layers::pool_config{.kernel = {4, 4}, .stride = {4, 4}}>,
    mosaiq::layers::logistic<>, mosaiq::layers::mul<"t3">>;

/// conv 3x3 + bias + RELU6 -> whole-map AVERAGE_POOL_2D -> LOGISTIC -> MUL into the conv output, all float32.
files::model_spec float_gate_model() {
  files::model_spec spec;
  spec.tensors = {files::activation("x", {1, 4, 4, 3}),
                  files::float_constant("w", {4, 3, 3, 3}),
                  files::float_constant("b", {4}, {0.1f, 0.2f, 0.3f, 0.4f}),
                  files::activation("c", {1, 4, 4, 4}),
                  files::activation("p", {1, 1, 1, 4}),
                  files::activation("g", {1, 1, 1, 4}),
                  files::activation("y", {1, 4, 4, 4})};
  spec.ops = {{.code = files::codes::conv,
               .inputs = {0, 1, 2},
               .outputs = {3},
               .options_type = fb::BuiltinOptions_Conv2DOptions,
               .options = files::conv_options(0, 1, 1, 3)},
              {.code = files::codes::average_pool,
               .inputs = {3},
               .outputs = {4},
               .options_type = fb::BuiltinOptions_Pool2DOptions,
               .options = [](auto& b) { return fb::CreatePool2DOptions(b, 1, 4, 4, 4, 4, 0).Union(); }},
              {.code = files::codes::logistic, .inputs = {4}, .outputs = {5}},
              {.code = files::codes::mul,
               .inputs = {3, 5},
               .outputs = {6},
               .options_type = fb::BuiltinOptions_MulOptions,
               .options = [](auto& b) { return fb::CreateMulOptions(b, 0).Union(); }}};
  spec.inputs = {0};
  spec.outputs = {6};
  return spec;
}

}  // namespace

TEST_CASE("a float model lowers to the same layer list, with its float weights as the float weights file") {
  const files::model_spec spec = float_gate_model();
  tfl::graph graph = read_graph(files::write(spec));
  tfl::apply_emitter_patterns(graph);
  const auto net = tfl::lower_float(graph, tfl::element_type::int8);
  REQUIRE_MESSAGE(net.ok(), net.error());
  const tfl::emitted_network& n = net.value();
  CHECK(n.from_float);
  CHECK(n.element == tfl::element_type::int8);
  std::vector<std::string> kinds;
  for (const auto& layer : n.layers) {
    kinds.push_back(layer.kind);
    CHECK(layer.payload.empty());  // calibration decides every quantization
  }
  CHECK(kinds == std::vector<std::string>{"conv2d", "tap", "average_pool", "logistic", "mul"});
  CHECK(n.layers[0].spelling ==
        "mosaiq::layers::conv2d<mosaiq::layers::conv2d_config{.out_channels = 4, .kernel = {3, 3}, .stride = {1, 1}, "
        ".pad = mosaiq::padding::same(), .act = mosaiq::activation::relu6}>");
  CHECK(n.layers[4].spelling == "mosaiq::layers::mul<\"t3\">");
  const std::vector<std::uint8_t>& filter_bytes = spec.tensors[1].data;
  std::vector<float> filter(filter_bytes.size() / sizeof(float));
  std::memcpy(filter.data(), filter_bytes.data(), filter_bytes.size());
  CHECK(n.layers[0].float_filter == filter);
  CHECK(n.layers[0].float_bias == std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f});

  // The emitter's float weights file is the one tools::save_float_weights writes for the network it spells, and
  // tools::load_float_weights reads it back.
  mosaiq::tools::float_weights<float_gate_net> fw;
  fw.layer<0>().filter = filter;
  fw.layer<0>().bias = n.layers[0].float_bias;
  const std::vector<std::byte> expected = mosaiq::tools::save_float_weights<float_gate_net>(fw);
  const std::vector<std::uint8_t> written = tfl::emit_float_weights(n);
  REQUIRE(written.size() == expected.size());
  CHECK(std::memcmp(written.data(), expected.data(), written.size()) == 0);
  mosaiq::tools::float_weights<float_gate_net> loaded;
  CHECK(mosaiq::tools::load_float_weights<float_gate_net>(std::as_bytes(std::span(written)), loaded));
  CHECK(loaded.layer<0>().filter == filter);

  // Each lowering refuses the other kind of graph.
  const auto quantized = tfl::lower_quantized(graph);
  REQUIRE_FALSE(quantized.ok());
  CHECK(quantized.error().find("input 'x' [1,4,4,3] is float32") == 0);
  files::quantized_writer m(false);
  const auto q = m.input("x", {1, 2, 2, 3}, 0.1f, 128);
  m.output(m.op(files::codes::logistic, {q}, m.probability("y", {1, 2, 2, 3})));
  tfl::graph quantized_graph = read_graph(files::write(m.spec));
  const auto refused = tfl::lower_float(quantized_graph, tfl::element_type::uint8);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error() == "input 'x' [1,2,2,3] is uint8; float import needs a float32 input");
}

TEST_CASE("--type i16x8: a float model lowers to the int8 layer list, spelled with mosaiq::i16; others refused") {
  const files::model_spec spec = float_gate_model();
  tfl::graph graph = read_graph(files::write(spec));
  tfl::apply_emitter_patterns(graph);
  const auto net = tfl::lower_float_16x8(graph);
  REQUIRE_MESSAGE(net.ok(), net.error());
  const auto net8 = tfl::lower_float(graph, tfl::element_type::int8);
  REQUIRE(net8.ok());
  CHECK(net.value().sixteen_by_eight);
  CHECK_FALSE(net8.value().sixteen_by_eight);
  REQUIRE(net.value().layers.size() == net8.value().layers.size());
  for (std::size_t i = 0; i < net8.value().layers.size(); ++i)
    CHECK(net.value().layers[i].spelling == net8.value().layers[i].spelling);
  // The float weights do not depend on the element: the int8 network's file, which the i16 twin reads too.
  CHECK(tfl::emit_float_weights(net.value()) == tfl::emit_float_weights(net8.value()));
  const std::string header = tfl::emit_header(net.value(), "gate", "gate.tflite", "gate.mosaiq");
  CHECK(header.find("    mosaiq::input<mosaiq::i16, 4, 4, 3>,") != std::string::npos);
  CHECK(header.find("TFLite's 16x8 mode") != std::string::npos);
  CHECK(
      tfl::emit_header(net8.value(), "gate", "gate.tflite", "gate.mosaiq").find("mosaiq::input<mosaiq::i8, 4, 4, 3>") !=
      std::string::npos);

  // A layer kind without a 16x8 executor: the whole-map pool as MAX_POOL_2D.
  files::model_spec max_spec = float_gate_model();
  max_spec.ops[1].code = files::codes::max_pool;
  tfl::graph max_graph = read_graph(files::write(max_spec));
  tfl::apply_emitter_patterns(max_graph);
  REQUIRE(tfl::lower_float(max_graph, tfl::element_type::int8).ok());
  const auto refused = tfl::lower_float_16x8(max_graph);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().find("a 16x8 (i16) network has no max_pool layer yet (operator 1 (MAX_POOL_2D)") == 0);
}

TEST_CASE("--type i16x8: the importer's 16x8 layer kinds are the kinds with a 16x8 executor") {
  namespace L = mosaiq::layers;
  const auto agree = []<class Layer>() {
    CHECK_MESSAGE(tfl::has_16x8_layer(Layer::kind) == mosaiq::has_16x8_executor<Layer>, Layer::kind);
  };
  agree.operator()<L::conv2d<L::conv2d_config{.out_channels = 4}>>();
  agree.operator()<L::depthwise<>>();
  agree.operator()<L::pointwise<L::pointwise_config{.out_channels = 4}>>();
  agree.operator()<L::transpose_conv<L::transpose_conv_config{.out_channels = 1}>>();
  agree.operator()<L::average_pool<>>();
  agree.operator()<L::max_pool<>>();
  agree.operator()<L::global_average_pool<>>();
  agree.operator()<L::resize_bilinear<>>();
  agree.operator()<L::resize_nearest<>>();
  agree.operator()<L::softmax<>>();
  agree.operator()<L::log_softmax<>>();
  agree.operator()<L::logistic<>>();
  agree.operator()<L::hard_swish<>>();
  agree.operator()<L::add<"t">>();
  agree.operator()<L::mul<"t">>();
  agree.operator()<L::concat<"a", "b">>();
  for (const char* kind : {"tap", "output", "from"}) CHECK(tfl::has_16x8_layer(kind));
  CHECK_FALSE(tfl::has_16x8_layer("conv"));
}

TEST_CASE("a float model's extra output becomes an output layer, which the twin's calibration treats as a tap") {
  files::model_spec spec = float_gate_model();
  spec.outputs = {3, 6};  // the conv output too, before run()'s
  tfl::graph graph = read_graph(files::write(spec));
  tfl::apply_emitter_patterns(graph);
  const auto net = tfl::lower_float(graph, tfl::element_type::uint8);
  REQUIRE_MESSAGE(net.ok(), net.error());
  std::vector<std::string> kinds;
  for (const auto& layer : net.value().layers) kinds.push_back(layer.kind);
  CHECK(kinds == std::vector<std::string>{"conv2d", "output", "average_pool", "logistic", "mul"});
  CHECK(net.value().layers[1].spelling == "mosaiq::layers::output<\"t3\">");
  REQUIRE(net.value().extra_outputs.size() == 1);
  CHECK(net.value().extra_outputs[0].name == "t3");
  CHECK(net.value().output_comment == "'y' [1,4,4,4]");
}
