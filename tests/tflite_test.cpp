// The TFLite importer's reader and graph stages on small models the tests write with the flatbuffers builder:
// every accepted op with its options, tensors and constants (per-channel quantization, float16 widening, buffers
// stored after the flatbuffer), and every error path, including truncation at every length and byte corruption.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "mosaiq/tflite/graph.hpp"
#include "mosaiq/tflite/reader.hpp"
#include "tflite_builder.hpp"

namespace {

namespace tfl = mosaiq::tflite;
namespace files = mosaiq::test::tflite_files;
namespace fb = files::fb;

using files::activation;
using files::count;
using files::float_constant;
using files::int_constant;

/// input [1,8,8,4] -> CONV_2D 3x3 stride 2 SAME RELU6 with 6 filters and bias -> output [1,4,4,6].
files::model_spec conv_model() {
  files::model_spec m;
  m.tensors = {activation("input", {1, 8, 8, 4}), float_constant("weights", {6, 3, 3, 4}), float_constant("bias", {6}),
               activation("output", {1, 4, 4, 6})};
  m.ops = {{.code = 3,
            .inputs = {0, 1, 2},
            .outputs = {3},
            .options_type = fb::BuiltinOptions_Conv2DOptions,
            .options = files::conv_options(0, 2, 2, 3)}};
  m.inputs = {0};
  m.outputs = {3};
  return m;
}

tfl::result<tfl::model> read(const std::vector<std::uint8_t>& bytes) { return tfl::read_model(bytes); }

/// The error of reading (or, when reading succeeds, of building the graph of) a model.
std::string error_of(const files::model_spec& spec) {
  const auto bytes = files::write(spec);
  const auto model = read(bytes);
  if (!model) return model.error();
  const auto graph = tfl::build_graph(model.value());
  return graph ? std::string("(no error)") : graph.error();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

#define CHECK_ERROR(spec, part)                    \
  do {                                             \
    const std::string error_text = error_of(spec); \
    INFO("error: ", error_text);                   \
    CHECK(contains(error_text, part));             \
  } while (false)

template <class T>
files::options_writer table(flatbuffers::Offset<T> (*create)(flatbuffers::FlatBufferBuilder&)) {
  return [create](flatbuffers::FlatBufferBuilder& b) { return create(b).Union(); };
}

struct op_case {
  const char* name;
  files::model_spec spec;
  tfl::builtin op;
  tfl::op_options options;
};

/// A single-op model: the op reads every tensor but the last, which it writes; the non-constant ones are the
/// graph's inputs.
files::model_spec single_op(std::vector<files::tensor_spec> tensors, files::op_spec op) {
  files::model_spec m;
  m.tensors = std::move(tensors);
  const auto last = static_cast<std::int32_t>(m.tensors.size() - 1);
  for (std::int32_t i = 0; i < last; ++i) op.inputs.push_back(i);
  op.outputs = {last};
  m.ops = {std::move(op)};
  for (std::int32_t i = 0; i < last; ++i)
    if (m.tensors[static_cast<std::size_t>(i)].data.empty()) m.inputs.push_back(i);
  m.outputs = {last};
  return m;
}

std::vector<op_case> accepted_ops() {
  const auto in = [] { return activation("x", {1, 8, 8, 4}); };
  const auto same_out = [] { return activation("y", {1, 8, 8, 4}); };
  std::vector<op_case> cases;
  cases.push_back({"CONV_2D", conv_model(), tfl::builtin::conv_2d,
                   tfl::conv2d_options{tfl::padding::same, 2, 2, 1, 1, tfl::activation::relu6}});
  cases.push_back(
      {"DEPTHWISE_CONV_2D",
       single_op({in(), float_constant("w", {1, 3, 3, 4}), float_constant("b", {4}), activation("y", {1, 4, 4, 4})},
                 {.code = 4,
                  .options_type = fb::BuiltinOptions_DepthwiseConv2DOptions,
                  .options = [](auto& b) { return fb::CreateDepthwiseConv2DOptions(b, 1, 1, 1, 1, 1, 2, 2).Union(); }}),
       tfl::builtin::depthwise_conv_2d,
       tfl::depthwise_options{tfl::padding::valid, 1, 1, 2, 2, 1, tfl::activation::relu}});
  cases.push_back(
      {"TRANSPOSE_CONV",
       single_op({int_constant("shape", {1, 16, 16, 2}), float_constant("w", {2, 2, 2, 4}), in(),
                  float_constant("b", {2}), activation("y", {1, 16, 16, 2})},
                 {.code = 67,
                  .options_type = fb::BuiltinOptions_TransposeConvOptions,
                  .options = [](auto& b) { return fb::CreateTransposeConvOptions(b, 1, 2, 2, 0).Union(); }}),
       tfl::builtin::transpose_conv, tfl::transpose_conv_options{tfl::padding::valid, 2, 2}});
  cases.push_back(
      {"Convolution2DTransposeBias",
       single_op({in(), float_constant("w", {2, 2, 2, 4}), float_constant("b", {2}), activation("y", {1, 16, 16, 2})},
                 {.code = 32,
                  .custom_code = "Convolution2DTransposeBias",
                  .custom_options = files::bytes_of(std::vector<std::int32_t>{1, 2, 3})}),
       tfl::builtin::convolution_2d_transpose_bias, tfl::transpose_conv_options{tfl::padding::same, 2, 3}});
  for (const auto& [code, op] : {std::pair{1, tfl::builtin::average_pool_2d}, {17, tfl::builtin::max_pool_2d}})
    cases.push_back(
        {code == 1 ? "AVERAGE_POOL_2D" : "MAX_POOL_2D",
         single_op({in(), activation("y", {1, 4, 4, 4})},
                   {.code = code,
                    .options_type = fb::BuiltinOptions_Pool2DOptions,
                    .options = [](auto& b) { return fb::CreatePool2DOptions(b, 0, 2, 2, 3, 3, 2).Union(); }}),
         op, tfl::pool2d_options{tfl::padding::same, 2, 2, 3, 3, tfl::activation::relu_n1_to_1}});
  cases.push_back(
      {"FULLY_CONNECTED",
       single_op(
           {activation("x", {1, 16}), float_constant("w", {3, 16}), float_constant("b", {3}), activation("y", {1, 3})},
           {.code = 9,
            .options_type = fb::BuiltinOptions_FullyConnectedOptions,
            .options = [](auto& b) { return fb::CreateFullyConnectedOptions(b, 1, 0, true).Union(); }}),
       tfl::builtin::fully_connected, tfl::fully_connected_options{tfl::activation::relu, true}});
  cases.push_back(
      {"ADD",
       single_op({in(), in(), same_out()}, {.code = 0,
                                            .options_type = fb::BuiltinOptions_AddOptions,
                                            .options = [](auto& b) { return fb::CreateAddOptions(b, 1).Union(); }}),
       tfl::builtin::add, tfl::elementwise_options{tfl::activation::relu}});
  cases.push_back(
      {"SUB",
       single_op({in(), in(), same_out()}, {.code = 41,
                                            .options_type = fb::BuiltinOptions_SubOptions,
                                            .options = [](auto& b) { return fb::CreateSubOptions(b, 3).Union(); }}),
       tfl::builtin::sub, tfl::elementwise_options{tfl::activation::relu6}});
  cases.push_back({"MUL",
                   single_op({in(), activation("s", {1, 1, 1, 4}), same_out()},
                             {.code = 18,
                              .options_type = fb::BuiltinOptions_MulOptions,
                              .options = [](auto& b) { return fb::CreateMulOptions(b, 0).Union(); }}),
                   tfl::builtin::mul, tfl::elementwise_options{}});
  cases.push_back({"CONCATENATION",
                   single_op({in(), in(), activation("y", {1, 8, 8, 8})},
                             {.code = 2,
                              .options_type = fb::BuiltinOptions_ConcatenationOptions,
                              .options = [](auto& b) { return fb::CreateConcatenationOptions(b, -1, 0).Union(); }}),
                   tfl::builtin::concatenation, tfl::concatenation_options{-1, tfl::activation::none}});
  cases.push_back(
      {"RESHAPE",
       single_op({in(), activation("y", {1, 256})},
                 {.code = 22,
                  .options_type = fb::BuiltinOptions_ReshapeOptions,
                  .options =
                      [](auto& b) {
                        return fb::CreateReshapeOptions(b, b.CreateVector(std::vector<std::int32_t>{1, 256})).Union();
                      }}),
       tfl::builtin::reshape, tfl::reshape_options{{1, 256}}});
  cases.push_back(
      {"RESIZE_BILINEAR",
       single_op({in(), int_constant("size", {16, 16}), activation("y", {1, 16, 16, 4})},
                 {.code = 23,
                  .options_type = fb::BuiltinOptions_ResizeBilinearOptions,
                  .options = [](auto& b) { return fb::CreateResizeBilinearOptions(b, false, true).Union(); }}),
       tfl::builtin::resize_bilinear, tfl::resize_options{false, true}});
  cases.push_back(
      {"RESIZE_NEAREST_NEIGHBOR",
       single_op({in(), int_constant("size", {16, 16}), activation("y", {1, 16, 16, 4})},
                 {.code = 97,
                  .options_type = fb::BuiltinOptions_ResizeNearestNeighborOptions,
                  .options = [](auto& b) { return fb::CreateResizeNearestNeighborOptions(b, true, false).Union(); }}),
       tfl::builtin::resize_nearest_neighbor, tfl::resize_options{true, false}});
  cases.push_back(
      {"SOFTMAX",
       single_op({in(), same_out()}, {.code = 25,
                                      .options_type = fb::BuiltinOptions_SoftmaxOptions,
                                      .options = [](auto& b) { return fb::CreateSoftmaxOptions(b, 0.5f).Union(); }}),
       tfl::builtin::softmax, tfl::softmax_options{0.5f}});
  cases.push_back({"MEAN",
                   single_op({in(), int_constant("axes", {1, 2}), activation("y", {1, 1, 1, 4})},
                             {.code = 40,
                              .options_type = fb::BuiltinOptions_ReducerOptions,
                              .options = [](auto& b) { return fb::CreateReducerOptions(b, true).Union(); }}),
                   tfl::builtin::mean, tfl::reducer_options{true}});
  cases.push_back(
      {"PAD",
       single_op({in(), int_constant("paddings", {0, 0, 1, 1, 1, 1, 0, 0}), activation("y", {1, 10, 10, 4})},
                 {.code = 34, .options_type = fb::BuiltinOptions_PadOptions, .options = table(&fb::CreatePadOptions)}),
       tfl::builtin::pad, tfl::no_options{}});
  cases.back().spec.tensors[1].shape = {4, 2};
  cases.push_back({"HARD_SWISH",
                   single_op({in(), same_out()}, {.code = 117,
                                                  .options_type = fb::BuiltinOptions_HardSwishOptions,
                                                  .options = table(&fb::CreateHardSwishOptions)}),
                   tfl::builtin::hard_swish, tfl::no_options{}});
  for (const auto& [code, op, name] : {std::tuple{14, tfl::builtin::logistic, "LOGISTIC"},
                                       {19, tfl::builtin::relu, "RELU"},
                                       {21, tfl::builtin::relu6, "RELU6"}})
    cases.push_back({name, single_op({in(), same_out()}, {.code = code}), op, tfl::no_options{}});
  cases.push_back(
      {"DEQUANTIZE",
       single_op(
           {{.name = "q", .type = files::i8, .shape = {1, 8, 8, 4}, .scale = {0.5f}, .zero_point = {3}}, same_out()},
           {.code = 6}),
       tfl::builtin::dequantize, tfl::no_options{}});
  cases.push_back(
      {"QUANTIZE",
       single_op({in(), {.name = "q", .type = files::u8, .shape = {1, 8, 8, 4}, .scale = {0.5f}, .zero_point = {128}}},
                 {.code = 114,
                  .options_type = fb::BuiltinOptions_QuantizeOptions,
                  .options = table(&fb::CreateQuantizeOptions)}),
       tfl::builtin::quantize, tfl::no_options{}});
  return cases;
}

files::model_spec accepted(const std::string& name) {
  for (op_case& c : accepted_ops())
    if (c.name == name) return c.spec;
  FAIL("no op case ", name);
  return {};
}

}  // namespace

TEST_CASE("tflite reader: every accepted op, its options and its place in the graph") {
  for (const op_case& c : accepted_ops()) {
    INFO("op ", std::string(c.name));
    const auto bytes = files::write(c.spec);
    const auto model = read(bytes);
    REQUIRE_MESSAGE(model.ok(), model.error());
    const tfl::subgraph& sg = model.value().subgraphs.at(0);
    REQUIRE(sg.operators.size() == 1);
    CHECK(sg.operators[0].op == c.op);
    CHECK(sg.operators[0].options == c.options);
    CHECK(sg.operators[0].inputs == c.spec.ops[0].inputs);
    CHECK(tfl::builtin_name(c.op) == c.name);
    const auto graph = tfl::build_graph(model.value());
    REQUIRE_MESSAGE(graph.ok(), graph.error());
    REQUIRE(graph.value().ops.size() == 1);
    CHECK(graph.value().ops[0].options == c.options);
    CHECK(contains(tfl::summary(graph.value()), std::string("0: ") + c.name));
  }
}

TEST_CASE("tflite reader: model, tensor and buffer facts") {
  const auto bytes = files::write(conv_model());
  const auto model = read(bytes);
  REQUIRE(model.ok());
  const tfl::model& m = model.value();
  CHECK(m.version == 3);
  CHECK(m.description == "mosaiq test");
  REQUIRE(m.buffers.size() == 3);  // the empty buffer 0, weights, bias
  CHECK(m.buffers[0].data.empty());
  CHECK(m.buffers[1].data.size() == 6 * 3 * 3 * 4 * 4);
  const tfl::tensor& w = m.subgraphs[0].tensors[1];
  CHECK(w.name == "weights");
  CHECK(w.shape == std::vector<std::int32_t>{6, 3, 3, 4});
  CHECK(w.buffer == 1);
  CHECK(m.operator_codes.at(0).builtin_code == 3);

  const auto graph = tfl::build_graph(m);
  REQUIRE(graph.ok());
  const auto& weights = std::get<std::vector<float>>(graph.value().tensors[1].constant);
  REQUIRE(weights.size() == 216);
  CHECK(weights[0] == -0.5f);
  CHECK(weights[9] == 0.0f);  // 0.25 * (9 % 7) - 0.5
  CHECK(tfl::summary(graph.value()) ==
        "model 'mosaiq test': 4 tensors (2 constants), 1 ops\n"
        "inputs: 'input' [1,8,8,4] float32\n"
        "outputs: 'output' [1,4,4,6] float32\n"
        "0: CONV_2D [SAME stride 2x2 dilation 1x1 RELU6] ('input' [1,8,8,4] float32, 'weights' [6,3,3,4] float32 "
        "const, 'bias' [6] float32 const) -> 'output' [1,4,4,6] float32\n"
        "op histogram: CONV_2D 1;\n");
}

TEST_CASE("tflite reader: constant data stored after the flatbuffer (models over 2 GB)") {
  files::model_spec spec = conv_model();
  spec.external_buffers = true;
  const auto bytes = files::write(spec);
  const auto inline_bytes = files::write(conv_model());
  const auto model = read(bytes);
  REQUIRE_MESSAGE(model.ok(), model.error());
  const auto reference = read(inline_bytes);
  REQUIRE(reference.ok());
  for (std::size_t b = 1; b < 3; ++b) {
    const auto external = model.value().buffers[b].data, inside = reference.value().buffers[b].data;
    REQUIRE(external.size() == inside.size());
    CHECK(std::equal(external.begin(), external.end(), inside.begin()));
    CHECK(external.data() >= bytes.data() + bytes.size() - 1024);  // really after the flatbuffer
  }
  spec.inline_copy_too = true;
  CHECK(contains(read(files::write(spec)).error(), "buffer 1 has both inline data and an external offset"));
  const std::vector<std::uint8_t> cut(bytes.begin(), bytes.end() - 16);
  const auto truncated = read(cut);
  REQUIRE_FALSE(truncated.ok());
  CHECK(contains(truncated.error(), "lies outside the file"));
}

TEST_CASE("tflite reader: quantized tensors keep their scales and zero points") {
  files::model_spec m;
  std::vector<std::int8_t> weights(3 * 1 * 1 * 2);
  for (std::size_t i = 0; i < weights.size(); ++i)
    weights[i] = static_cast<std::int8_t>(-100 + 37 * static_cast<int>(i));
  m.tensors = {{.name = "x", .type = files::i8, .shape = {1, 4, 4, 2}, .scale = {0.5f}, .zero_point = {-3}},
               {.name = "w",
                .type = files::i8,
                .shape = {3, 1, 1, 2},
                .data = files::bytes_of(weights),
                .scale = {0.1f, 0.2f, 0.3f},
                .zero_point = {0, 0, 0}},
               {.name = "b",
                .type = files::i32,
                .shape = {3},
                .data = files::bytes_of(std::vector<std::int32_t>{-7, 0, 70000}),
                .scale = {0.05f, 0.1f, 0.15f},
                .zero_point = {0, 0, 0}},
               {.name = "y", .type = files::i8, .shape = {1, 4, 4, 3}, .scale = {0.25f}, .zero_point = {127}}};
  m.ops = {{.code = 3,
            .inputs = {0, 1, 2},
            .outputs = {3},
            .options_type = fb::BuiltinOptions_Conv2DOptions,
            .options = files::conv_options(1, 1, 1)}};
  m.inputs = {0};
  m.outputs = {3};
  const auto bytes = files::write(m);
  const auto model = read(bytes);
  REQUIRE_MESSAGE(model.ok(), model.error());
  const auto graph = tfl::build_graph(model.value());
  REQUIRE(graph.ok());
  const auto& t = graph.value().tensors;
  CHECK(t[0].quant == tfl::quantization{{0.5f}, {-3}, 0});
  CHECK(t[1].quant.per_channel());
  CHECK(t[1].quant.scale == std::vector<float>{0.1f, 0.2f, 0.3f});
  CHECK(std::get<std::vector<std::int8_t>>(t[1].constant) == weights);
  CHECK(std::get<std::vector<std::int32_t>>(t[2].constant) == std::vector<std::int32_t>{-7, 0, 70000});
  CHECK(t[3].quant.zero_point == std::vector<std::int64_t>{127});
  CHECK(t[1].type == tfl::element_type::int8);
}

TEST_CASE("tflite graph: float16 weights are widened and their DEQUANTIZE ops folded") {
  files::model_spec m;
  // 1, -2, 0.5, 65504 (the largest half), 2^-24 (the smallest subnormal), -0, 1/3 rounded to half.
  const std::vector<std::uint16_t> halves{0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001, 0x8000, 0x3555, 0x0400};
  m.tensors = {activation("x", {1, 2, 2, 2}),
               {.name = "w16", .type = files::f16, .shape = {4, 1, 1, 2}, .data = files::bytes_of(halves)},
               activation("w", {4, 1, 1, 2}),
               activation("y", {1, 2, 2, 4})};
  m.ops = {{.code = 6, .inputs = {1}, .outputs = {2}},
           {.code = 3,
            .inputs = {0, 2},
            .outputs = {3},
            .options_type = fb::BuiltinOptions_Conv2DOptions,
            .options = files::conv_options(0, 1, 1)}};
  m.inputs = {0};
  m.outputs = {3};
  const auto bytes = files::write(m);
  const auto model = read(bytes);
  REQUIRE(model.ok());
  CHECK(model.value().subgraphs[0].operators.size() == 2);
  const auto graph = tfl::build_graph(model.value());
  REQUIRE_MESSAGE(graph.ok(), graph.error());
  REQUIRE(graph.value().ops.size() == 1);
  CHECK(graph.value().ops[0].op == tfl::builtin::conv_2d);
  const tfl::graph_tensor& w = graph.value().tensors[2];
  CHECK(w.type == tfl::element_type::float32);
  CHECK(w.stored_type == tfl::element_type::float16);
  const auto& values = std::get<std::vector<float>>(w.constant);
  CHECK(values == std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f, 0x1p-24f, -0.0f, 0.333251953125f, 0x1p-14f});
  CHECK(std::signbit(values[5]));
}

TEST_CASE("tflite graph: widen_half over all 65536 bit patterns") {
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const int exponent = (bits >> 10) & 31, mantissa = bits & 1023;
    const float sign = (bits & 0x8000) ? -1.0f : 1.0f;
    const float value = tfl::widen_half(h);
    if (exponent == 31) {
      CHECK((mantissa == 0 ? std::isinf(value) && std::signbit(value) == (sign < 0) : std::isnan(value)));
      continue;
    }
    // value = (implicit bit + mantissa) * 2^(exponent - 25), subnormals with exponent 1 and no implicit bit.
    const float expected =
        sign * std::ldexp(static_cast<float>((exponent ? 1024 : 0) + mantissa), (exponent ? exponent : 1) - 25);
    if (value != expected || std::signbit(value) != std::signbit(expected)) {
      INFO("bits ", bits);
      CHECK(value == expected);
    }
  }
}

TEST_CASE("tflite reader: builtin_code and deprecated_builtin_code") {
  files::model_spec old_file = conv_model();
  old_file.ops[0].only_deprecated_code = true;  // a file from before builtin_code existed
  const auto bytes = files::write(old_file);
  const auto model = read(bytes);
  REQUIRE(model.ok());
  CHECK(model.value().subgraphs[0].operators[0].op == tfl::builtin::conv_2d);
  // Codes from 127 on live in builtin_code only (deprecated_builtin_code holds the 127 placeholder).
  files::model_spec gelu = conv_model();
  gelu.ops[0] = {.code = 150, .inputs = {0}, .outputs = {3}};
  CHECK_ERROR(gelu, "unsupported op GELU at operator 0 (GELU; inputs: 'input' [1,8,8,4]; outputs: 'output' [1,4,4,6])");
}

TEST_CASE("tflite reader: bad files are clear errors") {
  const auto with = [](auto change) {
    files::model_spec spec = conv_model();
    change(spec);
    return spec;
  };
  SUBCASE("not a model") {
    auto bytes = files::write(conv_model());
    bytes[4] = 'X';
    CHECK(contains(read(bytes).error(), "no \"TFL3\" file identifier"));
    CHECK(contains(read(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 7)).error(), "truncated"));
    CHECK(contains(read(std::vector<std::uint8_t>{}).error(), "truncated"));
  }
  SUBCASE("files and alignment") {
    CHECK(contains(tfl::read_file("/nonexistent/model.tflite").error(), "cannot open /nonexistent/model.tflite"));
    const auto bytes = files::write(conv_model());
    std::vector<std::uint8_t> shifted(bytes.size() + 1);
    std::copy(bytes.begin(), bytes.end(), shifted.begin() + 1);
    CHECK(contains(tfl::read_model(std::span(shifted).subspan(1)).error(), "must start 8-byte aligned"));
  }
  SUBCASE("unsupported ops name the op, the operator index and its tensors") {
    CHECK_ERROR(with([](auto& s) { s.ops[0].code = 99; }),
                "unsupported op SQUARED_DIFFERENCE at operator 0 (SQUARED_DIFFERENCE; inputs: 'input' [1,8,8,4], "
                "'weights' [6,3,3,4], 'bias' [6]; outputs: 'output' [1,4,4,6])");
    CHECK_ERROR(with([](auto& s) {
                  s.ops[0].code = 32;
                  s.ops[0].custom_code = "MyOp";
                }),
                "unsupported op custom op 'MyOp' at operator 0");
  }
  SUBCASE("unsupported or invalid options") {
    CHECK_ERROR(with([](auto& s) { s.ops[0].options = files::conv_options(0, 1, 1, 4); }), "fused activation TANH");
    CHECK_ERROR(with([](auto& s) { s.ops[0].options = files::conv_options(0, 0, 1); }), "stride_w 0");
    CHECK_ERROR(with([](auto& s) { s.ops[0].options = files::conv_options(0, 1, 1, 0, 1, 0); }), "dilation_h_factor 0");
    CHECK_ERROR(with([](auto& s) { s.ops[0].options = files::conv_options(5, 1, 1); }), "padding 5");
    CHECK_ERROR(with([](auto& s) {
                  s.ops[0].options_type = fb::BuiltinOptions_AddOptions;
                  s.ops[0].options = [](auto& b) { return fb::CreateAddOptions(b).Union(); };
                }),
                "builtin options of type 11 where type 1 belongs");
    CHECK_ERROR(with([](auto& s) {
                  s.ops[0].options_type = fb::BuiltinOptions_NONE;
                  s.ops[0].options = nullptr;
                }),
                "its builtin options are missing");
    files::model_spec fc = with([](auto& s) {
      s.tensors = {activation("x", {1, 4}), float_constant("w", {2, 4}), activation("y", {1, 2})};
      s.ops[0] = {.code = 9,
                  .inputs = {0, 1},
                  .outputs = {2},
                  .options_type = fb::BuiltinOptions_FullyConnectedOptions,
                  .options = [](auto& b) { return fb::CreateFullyConnectedOptions(b, 0, 1).Union(); }};
      s.outputs = {2};
    });
    CHECK_ERROR(fc, "shuffled weights format");
    fc.ops[0].options = [](auto& b) { return fb::CreateFullyConnectedOptions(b, 0, 0, false, true).Union(); };
    CHECK_ERROR(fc, "asymmetric_quantize_inputs");
    files::model_spec resize = accepted("RESIZE_BILINEAR");
    resize.ops[0].options = [](auto& b) { return fb::CreateResizeBilinearOptions(b, true, true).Union(); };
    CHECK_ERROR(resize, "align_corners and half_pixel_centers together");
    files::model_spec softmax = accepted("SOFTMAX");
    softmax.ops[0].options = [](auto& b) { return fb::CreateSoftmaxOptions(b, 0.0f).Union(); };
    CHECK_ERROR(softmax, "softmax beta 0");
    files::model_spec transpose = accepted("Convolution2DTransposeBias");
    transpose.ops[0].custom_options.resize(8);
    CHECK_ERROR(transpose, "custom options of 8 bytes, expected 12");
    transpose.ops[0].custom_options = files::bytes_of(std::vector<std::int32_t>{0, 2, 2});
    CHECK_ERROR(transpose, "padding 0");
    files::model_spec logistic = accepted("LOGISTIC");
    logistic.ops[0].options_type = fb::BuiltinOptions_AddOptions;
    logistic.ops[0].options = [](auto& b) { return fb::CreateAddOptions(b).Union(); };
    CHECK_ERROR(logistic, "builtin options on an op that has none");
  }
  SUBCASE("operator arity and indices") {
    CHECK_ERROR(with([](auto& s) { s.ops[0].inputs = {0}; }), "takes 2 to 3 inputs, has 1");
    CHECK_ERROR(with([](auto& s) { s.ops[0].inputs = {0, -1, 2}; }), "input 1 is required but omitted");
    CHECK_ERROR(with([](auto& s) { s.ops[0].outputs = {3, 3}; }), "has 2 outputs, expected 1");
    CHECK_ERROR(with([](auto& s) {
                  s.ops[0].inputs = {0, 1, 99};
                }),
                "operator 0 input refers to tensor 99, out of range (the subgraph has 4 tensors)");
    CHECK_ERROR(with([](auto& s) { s.ops[0].outputs = {-1}; }), "operator 0 output refers to tensor -1");
    CHECK_ERROR(with([](auto& s) { s.inputs = {4}; }), "subgraph 0 input refers to tensor 4");
    CHECK_ERROR(with([](auto& s) { s.ops[0].opcode_index = 5; }), "opcode index 5 is out of range");
    CHECK_ERROR(with([](auto& s) { s.no_subgraph = true; }), "the model has no subgraph");
  }
  SUBCASE("tensors and buffers") {
    CHECK_ERROR(with([](auto& s) { s.tensors[1].buffer = 77; }),
                "tensor 1 'weights': buffer index 77 is out of range (the model has 3 buffers)");
    CHECK_ERROR(with([](auto& s) { s.tensors[2].shape = {7}; }),
                "tensor 2 'bias': its constant data has 24 bytes but shape [7] of float32 needs 28");
    CHECK_ERROR(with([](auto& s) { s.tensors[0].type = files::i64; }),
                "tensor 0 'input': element type INT64 is not supported");
    CHECK_ERROR(with([](auto& s) { s.tensors[0].shape = {1, -8, 8, 4}; }), "negative dimension");
    CHECK_ERROR(with([](auto& s) { s.tensors[1].shape = {1 << 30, 1 << 30, 4, 1}; }), "more than 2^40 elements");
  }
  SUBCASE("quantization") {
    const auto quantized = [&](auto change) {
      return with([&](auto& s) {
        s.tensors[1].scale = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
        s.tensors[1].zero_point = {0, 0, 0, 0, 0, 0};
        change(s.tensors[1]);
      });
    };
    CHECK(error_of(quantized([](auto&) {})) == "(no error)");
    CHECK_ERROR(quantized([](auto& t) { t.zero_point.pop_back(); }), "6 scales but 5 zero points");
    CHECK_ERROR(quantized([](auto& t) { t.quantized_dimension = 3; }), "6 per-channel scales for dimension 3");
    CHECK_ERROR(quantized([](auto& t) { t.quantized_dimension = 7; }), "quantized_dimension 7 is outside");
    CHECK_ERROR(quantized([](auto& t) { t.scale[2] = std::numeric_limits<float>::infinity(); }),
                "scale inf is not a finite");
    CHECK_ERROR(with([](auto& s) {
                  s.tensors[0].type = files::i8;
                  s.tensors[0].scale = {1.0f};
                  s.tensors[0].zero_point = {200};
                }),
                "zero point 200 is outside the range of int8");
  }
  SUBCASE("graph: shapes, state and data flow") {
    CHECK_ERROR(with([](auto& s) {
                  s.tensors[0].shape_signature = {1, -1, -1, 4};
                }),
                "tensor 0 'input': dynamic shape [1,-1,-1,4]");
    CHECK_ERROR(with([](auto& s) { s.tensors[3].shape = {2, 4, 4, 6}; }), "batch 2 in shape [2,4,4,6]");
    CHECK_ERROR(with([](auto& s) { s.tensors[0].type = files::f16; }), "float16 activations are not supported");
    CHECK_ERROR(with([](auto& s) { s.tensors[0].is_variable = true; }), "variable tensors");
    CHECK_ERROR(with([](auto& s) { s.inputs = {1}; }), "graph input 1 'weights' is a constant");
    CHECK_ERROR(with([](auto& s) { s.ops.push_back(s.ops[0]); }), "written by more than one operator");
    CHECK_ERROR(with([](auto& s) { s.inputs = {}; }), "reads a tensor that no operator writes before it");
    CHECK_ERROR(with([](auto& s) { s.inputs = {0, 3}; }), "graph input 3 'output' is written by an operator");
    CHECK_ERROR(with([](auto& s) {
                  s.tensors[1].type = files::f16;
                  s.tensors[1].data.resize(s.tensors[1].data.size() / 2);
                  s.tensors.push_back(activation("widened", {6, 3, 3, 2}));
                  s.ops.insert(s.ops.begin(), {.code = 6, .inputs = {1}, .outputs = {4}});
                  s.ops[1].inputs = {0, 4, 2};
                }),
                "DEQUANTIZE of float16 constant 'weights' writes 'widened' of another type or shape");
    CHECK_ERROR(with([](auto& s) {
                  s.tensors.push_back(activation("loose", {1, 4, 4, 6}));
                  s.outputs = {4};
                }),
                "graph output 4 'loose' is never written");
    // Two ops that read each other's output.
    CHECK_ERROR(with([](auto& s) {
                  s.tensors.push_back(activation("back", {1, 8, 8, 4}));
                  s.ops[0].inputs = {4, 1, 2};
                  s.ops.push_back({.code = 19, .inputs = {3}, .outputs = {4}});
                  s.ops[1].inputs = {3};
                }),
                "a cycle or a missing producer");
  }
}

TEST_CASE("tflite reader: topological order follows data, not file order") {
  files::model_spec m;
  m.tensors = {activation("x", {1, 4, 4, 2}), activation("a", {1, 4, 4, 2}), activation("b", {1, 4, 4, 2})};
  m.ops = {{.code = 19, .inputs = {1}, .outputs = {2}},
           {.code = 117,
            .inputs = {0},
            .outputs = {1},
            .options_type = fb::BuiltinOptions_HardSwishOptions,
            .options = table(&fb::CreateHardSwishOptions)}};
  m.inputs = {0};
  m.outputs = {2};
  const auto bytes = files::write(m);
  const auto model = read(bytes);
  REQUIRE(model.ok());
  const auto graph = tfl::build_graph(model.value());
  REQUIRE_MESSAGE(graph.ok(), graph.error());
  REQUIRE(graph.value().ops.size() == 2);
  CHECK(graph.value().ops[0].op == tfl::builtin::hard_swish);
  CHECK(graph.value().ops[0].source_index == 1);
  CHECK(graph.value().ops[1].op == tfl::builtin::relu);
}

namespace {
/// Reads and, when that succeeds, builds and prints the graph: what the fuzzer runs too.
std::string read_all(std::span<const std::uint8_t> bytes) {
  const std::vector<std::uint8_t> copy(bytes.begin(), bytes.end());  // aligned, and owned by this call
  const auto model = tfl::read_model(copy);
  if (!model) return "error: " + model.error();
  const auto graph = tfl::build_graph(model.value());
  return graph ? tfl::summary(graph.value()) : "error: " + graph.error();
}
}  // namespace

TEST_CASE("tflite reader: truncation at every length is an error, never a crash") {
  for (const bool external : {false, true}) {
    files::model_spec spec = accepted("TRANSPOSE_CONV");  // four inputs, three constants
    spec.external_buffers = external;
    const auto bytes = files::write(spec);
    const std::string full = read_all(bytes);
    REQUIRE(!contains(full, "error"));
    std::size_t accepted = 0;
    for (std::size_t length = 0; length < bytes.size(); ++length) {
      const std::string text = read_all(std::span(bytes).first(length));
      // A cut that loses only trailing alignment padding leaves the same model; any other cut is an error.
      if (contains(text, "error:")) continue;
      ++accepted;
      INFO("length ", length, " of ", bytes.size());
      CHECK(text == full);
      CHECK(std::all_of(bytes.begin() + static_cast<std::ptrdiff_t>(length), bytes.end(),
                        [](std::uint8_t b) { return b == 0; }));
    }
    CHECK(accepted < 16);
  }
}

TEST_CASE("tflite reader: every single-byte corruption is an error or a model, never a crash") {
  const auto bytes = files::write(accepted("CONV_2D"));
  std::size_t errors = 0;
  for (std::size_t at = 0; at < bytes.size(); ++at)
    for (const std::uint8_t flip : {0x01, 0x80, 0xff}) {
      auto corrupt = bytes;
      corrupt[at] ^= flip;
      errors += contains(read_all(corrupt), "error:");
    }
  // Flips inside constant data or names leave a valid model; flips in the structure are caught.
  CHECK(errors > 0);
  CHECK(!contains(read_all(bytes), "error:"));
}

// Writes the fuzzer's committed seed corpus (tests/fuzz_corpus/tflite): accepted models and rejected ones. Skipped
// unless asked for: MOSAIQ_TFLITE_CORPUS_DIR=tests/fuzz_corpus/tflite tflite_tests --no-skip -tc='*corpus*'
TEST_CASE("tflite reader: write the fuzz corpus" * doctest::skip()) {
  const auto save = [](const std::string& name, const std::vector<std::uint8_t>& bytes) {
    REQUIRE_MESSAGE(files::save_corpus_file(name, bytes), "set MOSAIQ_TFLITE_CORPUS_DIR");
  };
  for (const char* name : {"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "Convolution2DTransposeBias",
                           "AVERAGE_POOL_2D", "FULLY_CONNECTED", "MUL", "CONCATENATION", "RESHAPE", "RESIZE_BILINEAR",
                           "SOFTMAX", "MEAN", "PAD", "HARD_SWISH", "QUANTIZE"})
    save(std::string("accepted_") + name, files::write(accepted(name)));
  files::model_spec external = conv_model();
  external.external_buffers = true;
  save("accepted_external_buffers", files::write(external));
  const auto conv = files::write(conv_model());
  save("rejected_truncated", std::vector<std::uint8_t>(conv.begin(), conv.begin() + conv.size() / 2));
  files::model_spec unsupported = conv_model();
  unsupported.ops[0].code = 99;
  save("rejected_unsupported_op", files::write(unsupported));
  files::model_spec dynamic = conv_model();
  dynamic.tensors[0].shape_signature = {1, -1, -1, 4};
  save("rejected_dynamic_shape", files::write(dynamic));
  files::model_spec cycle = conv_model();
  cycle.inputs = {};
  save("rejected_missing_producer", files::write(cycle));
}
