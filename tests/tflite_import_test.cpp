// The emitter end to end: tflite_import_models wrote quantized models, mosaiq-import turned each into a header and a
// weights blob at build time, and this file compiles those headers. Each generated network loads its blob and must
// equal, bit for bit, an op-by-op interpreter of the same .tflite on mosaiq's reference ops (TFLite semantics), on
// several random inputs. Also: what the importer refuses, and how it says so.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "branches_i8.hpp"
#include "branches_u8.hpp"
#include "gate_i8.hpp"
#include "gate_u8.hpp"
#include "head_i8.hpp"
#include "head_u8.hpp"
#include "mosaiq/net.hpp"
#include "mosaiq/tflite/emitter.hpp"
#include "mosaiq/tflite/reader.hpp"
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

/// Loads the generated network's blob, runs it and the interpreter on random inputs, and compares.
template <class Net>
void check_generated_network(const std::string& model) {
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
    const std::vector<T> expected = interpreter.run(input);
    CAPTURE(model);
    CAPTURE(trial);
    REQUIRE(expected.size() == output.size());
    CHECK(output == expected);
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
}

TEST_CASE("generated networks have the model's structure") {
  // The residual add reads the earlier tensor by name: its second operand was the current one.
  static_assert(branches_u8::network::layer_count > 15);
  static_assert(branches_u8::network::output_shape == mosaiq::shape{4, 4, 5});
  static_assert(head_i8::network::output_shape == mosaiq::shape{1, 1, 4});
  const std::string header = text_of(models_dir + "/branches_u8.hpp");
  CHECK(header.find("mosaiq::layers::add<\"t") != std::string::npos);
  CHECK(header.find("mosaiq::layers::concat<\"t") != std::string::npos);
  CHECK(header.find("operator 0 (CONV_2D): 'image' [1,9,11,3] -> 'c1' [1,5,6,8]") != std::string::npos);
  CHECK(header.find(".dilation = {2, 2}") != std::string::npos);
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
