// The TFLite importer's pattern passes on small models the tests write: each pattern where it applies (with the
// rewritten op's options, tensors, folded constants and recorded parts) and its near misses, which must stay as
// they are: a second reader of an intermediate tensor, an intermediate graph output, a wrong constant, another
// activation, a window that is not the whole map.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mosaiq/tflite/graph.hpp"
#include "mosaiq/tflite/patterns.hpp"
#include "mosaiq/tflite/reader.hpp"
#include "tflite_builder.hpp"

namespace {

namespace tfl = mosaiq::tflite;
namespace files = mosaiq::test::tflite_files;
namespace fb = files::fb;
using files::activation;
using files::float_constant;
using tensor_index = std::int32_t;

/// A model written op by op: each call adds a tensor and returns its index.
struct model_writer {
  files::model_spec spec;

  tensor_index tensor(files::tensor_spec t) {
    spec.tensors.push_back(std::move(t));
    return static_cast<tensor_index>(spec.tensors.size() - 1);
  }
  tensor_index input(std::string name, std::vector<std::int32_t> shape) {
    const tensor_index t = tensor(activation(std::move(name), std::move(shape)));
    spec.inputs.push_back(t);
    return t;
  }
  tensor_index scalar(std::string name, float value) { return tensor(float_constant(std::move(name), {1}, {value})); }
  /// An op writing a new tensor `out`.
  tensor_index op(std::int32_t code, std::vector<tensor_index> inputs, files::tensor_spec out,
                  fb::BuiltinOptions options_type = fb::BuiltinOptions_NONE, files::options_writer options = {}) {
    const tensor_index t = tensor(std::move(out));
    spec.ops.push_back({.code = code,
                        .inputs = std::move(inputs),
                        .outputs = {t},
                        .options_type = options_type,
                        .options = std::move(options)});
    return t;
  }
  tensor_index conv(tensor_index in, const std::string& name, std::vector<std::int32_t> weight_shape,
                    std::vector<std::int32_t> out_shape, std::int8_t fused = 0) {
    const tensor_index w = tensor(float_constant(name + "/w", weight_shape));
    const tensor_index b = tensor(float_constant(name + "/b", {weight_shape[0]}));
    return op(3, {in, w, b}, activation(name, std::move(out_shape)), fb::BuiltinOptions_Conv2DOptions,
              files::conv_options(1, 1, 1, fused));
  }
  tensor_index unary(std::int32_t code, tensor_index in, const std::string& name) {
    return op(code, {in}, activation(name, spec.tensors[static_cast<std::size_t>(in)].shape));
  }
  /// ADD (0) or MUL (18) with a fused activation, output shaped like the larger operand.
  tensor_index binary(std::int32_t code, tensor_index a, tensor_index b, const std::string& name,
                      std::int8_t fused = 0) {
    const auto& shape_a = spec.tensors[static_cast<std::size_t>(a)].shape;
    const auto& shape_b = spec.tensors[static_cast<std::size_t>(b)].shape;
    const auto shape = files::count(shape_a) >= files::count(shape_b) ? shape_a : shape_b;
    if (code == 0)
      return op(code, {a, b}, activation(name, shape), fb::BuiltinOptions_AddOptions,
                [fused](auto& builder) { return fb::CreateAddOptions(builder, fused).Union(); });
    return op(code, {a, b}, activation(name, shape), fb::BuiltinOptions_MulOptions,
              [fused](auto& builder) { return fb::CreateMulOptions(builder, fused).Union(); });
  }
  void output(tensor_index t) { spec.outputs.push_back(t); }
};

constexpr std::int32_t add_code = 0, average_pool_code = 1, conv_code = 3, depthwise_code = 4, logistic_code = 14,
                       mul_code = 18, relu_code = 19, relu6_code = 21, mean_code = 40;
constexpr std::int8_t fused_relu = 1, fused_relu6 = 3;

tensor_index index_of(const files::model_spec& spec, const std::string& name) {
  for (std::size_t i = 0; i < spec.tensors.size(); ++i)
    if (spec.tensors[i].name == name) return static_cast<tensor_index>(i);
  FAIL("no tensor ", name);
  return -1;
}

tfl::graph graph_of(const files::model_spec& spec) {
  const auto bytes = files::write(spec);
  const auto model = tfl::read_model(bytes);
  REQUIRE_MESSAGE(model.ok(), model.error());
  auto graph = tfl::build_graph(model.value());
  REQUIRE_MESSAGE(graph.ok(), graph.error());
  return std::move(graph).value();  // constants are copies: the graph outlives the bytes
}

std::vector<tfl::builtin> ops_of(const tfl::graph& g) {
  std::vector<tfl::builtin> out;
  for (const auto& op : g.ops) out.push_back(op.op);
  return out;
}

std::vector<std::size_t> part_sources(const tfl::graph_op& op) {
  std::vector<std::size_t> out;
  for (const auto& part : op.parts) out.push_back(part.source_index);
  return out;
}

const std::vector<float>& values_of(const tfl::graph& g, tensor_index t) {
  return std::get<std::vector<float>>(g.tensors[static_cast<std::size_t>(t)].constant);
}

tfl::activation fused_of(const tfl::graph_op& op) {
  if (const auto* o = std::get_if<tfl::conv2d_options>(&op.options)) return o->fused;
  if (const auto* o = std::get_if<tfl::depthwise_options>(&op.options)) return o->fused;
  return std::get<tfl::fully_connected_options>(op.options).fused;
}

}  // namespace

// ---- activation fusion ----------------------------------------------------------------------------------------

TEST_CASE("patterns: RELU and RELU6 fold into conv, depthwise and fully-connected") {
  model_writer m;
  const auto x = m.input("x", {1, 4, 4, 2});
  const auto c = m.conv(x, "conv", {3, 1, 1, 2}, {1, 4, 4, 3});
  const auto r = m.unary(relu_code, c, "relu");
  const auto w = m.tensor(float_constant("dw/w", {1, 3, 3, 3}));
  const auto d = m.op(depthwise_code, {r, w}, activation("dw", {1, 4, 4, 3}), fb::BuiltinOptions_DepthwiseConv2DOptions,
                      [](auto& b) { return fb::CreateDepthwiseConv2DOptions(b, 0, 1, 1, 1, 0).Union(); });
  const auto r6 = m.unary(relu6_code, d, "relu6");
  const auto fw = m.tensor(float_constant("fc/w", {5, 48}));
  const auto f = m.op(9, {r6, fw, -1}, activation("fc", {1, 5}), fb::BuiltinOptions_FullyConnectedOptions,
                      [](auto& b) { return fb::CreateFullyConnectedOptions(b, 0).Union(); });
  m.output(m.unary(relu_code, f, "fc_relu"));
  tfl::graph g = graph_of(m.spec);
  CHECK(tfl::fuse_activations(g) == 3);
  REQUIRE(ops_of(g) ==
          std::vector{tfl::builtin::conv_2d, tfl::builtin::depthwise_conv_2d, tfl::builtin::fully_connected});
  CHECK(fused_of(g.ops[0]) == tfl::activation::relu);
  CHECK(fused_of(g.ops[1]) == tfl::activation::relu6);
  CHECK(fused_of(g.ops[2]) == tfl::activation::relu);
  CHECK(g.ops[0].outputs == std::vector{r});
  CHECK(g.ops[1].inputs[0] == r);
  CHECK(g.ops[2].outputs == g.outputs);
  CHECK(part_sources(g.ops[0]) == std::vector<std::size_t>{0, 1});
  CHECK(part_sources(g.ops[2]) == std::vector<std::size_t>{4, 5});
  CHECK(tfl::summary(g).find("-> 'relu' [1,4,4,3] float32 <- file ops 0 1") != std::string::npos);
}

TEST_CASE("patterns: activation fusion near misses stay separate ops") {
  SUBCASE("the convolution's output has a second reader") {
    model_writer m;
    const auto x = m.input("x", {1, 4, 4, 2});
    const auto c = m.conv(x, "conv", {2, 1, 1, 2}, {1, 4, 4, 2});
    m.output(m.binary(add_code, m.unary(relu_code, c, "relu"), c, "sum"));
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::fuse_activations(g) == 0);
    CHECK(g.ops.size() == 3);
  }
  SUBCASE("the convolution's output is a graph output") {
    model_writer m;
    const auto c = m.conv(m.input("x", {1, 4, 4, 2}), "conv", {2, 1, 1, 2}, {1, 4, 4, 2});
    m.output(m.unary(relu_code, c, "relu"));
    m.output(c);
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::fuse_activations(g) == 0);
  }
  SUBCASE("the convolution already has a fused activation") {
    model_writer m;
    const auto c = m.conv(m.input("x", {1, 4, 4, 2}), "conv", {2, 1, 1, 2}, {1, 4, 4, 2}, fused_relu6);
    m.output(m.unary(relu_code, c, "relu"));
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::fuse_activations(g) == 0);
  }
  SUBCASE("the producer is not a convolution") {
    model_writer m;
    const auto x = m.input("x", {1, 4, 4, 2});
    m.output(m.unary(relu_code, m.binary(add_code, x, x, "sum"), "relu"));
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::fuse_activations(g) == 0);
  }
}

TEST_CASE("patterns: a quantized RELU folds only where it keeps the convolution's quantization") {
  for (const float relu_scale : {0.5f, 0.25f}) {
    model_writer m;
    const auto x =
        m.tensor({.name = "x", .type = files::u8, .shape = {1, 2, 2, 1}, .scale = {0.5f}, .zero_point = {3}});
    m.spec.inputs = {x};
    const auto w = m.tensor(
        {.name = "w", .type = files::u8, .shape = {1, 1, 1, 1}, .data = {7}, .scale = {0.1f}, .zero_point = {5}});
    const auto c = m.op(conv_code, {x, w},
                        {.name = "conv", .type = files::u8, .shape = {1, 2, 2, 1}, .scale = {0.5f}, .zero_point = {9}},
                        fb::BuiltinOptions_Conv2DOptions, files::conv_options(1, 1, 1));
    m.output(
        m.op(relu_code, {c},
             {.name = "relu", .type = files::u8, .shape = {1, 2, 2, 1}, .scale = {relu_scale}, .zero_point = {9}}));
    tfl::graph g = graph_of(m.spec);
    CAPTURE(relu_scale);
    CHECK(tfl::fuse_activations(g) == (relu_scale == 0.5f ? 1u : 0u));
  }
}

// ---- hard-swish -----------------------------------------------------------------------------------------------

enum class association { product_then_sixth, sixth_then_x, x_sixth_first };

/// x * relu6(x + 3) / 6 written three ways; `relu6_op`: a RELU6 op rather than RELU6 fused into the ADD.
model_writer decomposed_hard_swish(association order, bool relu6_op, float three = 3.0f, float sixth = 1.0f / 6.0f) {
  model_writer m;
  const auto x = m.conv(m.input("in", {1, 4, 4, 2}), "x", {2, 1, 1, 2}, {1, 4, 4, 2});
  const auto c3 = m.scalar("three", three), c6 = m.scalar("sixth", sixth);
  const auto scaled_x = order == association::x_sixth_first ? m.binary(mul_code, x, c6, "x_6") : -1;
  const auto t = m.binary(add_code, x, c3, "x_plus_3", relu6_op ? 0 : fused_relu6);
  const auto r = relu6_op ? m.unary(relu6_code, t, "relu6") : t;
  if (order == association::product_then_sixth)
    m.output(m.binary(mul_code, m.binary(mul_code, x, r, "x_r"), c6, "hswish"));
  else if (order == association::sixth_then_x)
    m.output(m.binary(mul_code, x, m.binary(mul_code, c6, r, "r_6"), "hswish"));
  else
    m.output(m.binary(mul_code, r, scaled_x, "hswish"));
  return m;
}

TEST_CASE("patterns: decomposed hard-swish in each association becomes HARD_SWISH") {
  for (const auto order : {association::product_then_sixth, association::sixth_then_x, association::x_sixth_first})
    for (const bool relu6_op : {false, true}) {
      CAPTURE(static_cast<int>(order));
      CAPTURE(relu6_op);
      tfl::graph g = graph_of(decomposed_hard_swish(order, relu6_op).spec);
      CHECK(tfl::recognise_hard_swish(g) == 1);
      REQUIRE(ops_of(g) == std::vector{tfl::builtin::conv_2d, tfl::builtin::hard_swish});
      CHECK(g.ops[1].inputs == g.ops[0].outputs);
      CHECK(g.ops[1].outputs == g.outputs);
      CHECK(g.ops[1].parts.size() == (relu6_op ? 4u : 3u));
    }
}

TEST_CASE("patterns: hard-swish near misses stay as they are") {
  SUBCASE("not 3") {
    tfl::graph g = graph_of(decomposed_hard_swish(association::product_then_sixth, true, 2.5f).spec);
    CHECK(tfl::recognise_hard_swish(g) == 0);
  }
  SUBCASE("not 1/6") {
    tfl::graph g = graph_of(decomposed_hard_swish(association::sixth_then_x, false, 3.0f, 0.2f).spec);
    CHECK(tfl::recognise_hard_swish(g) == 0);
  }
  SUBCASE("the clamp's output has a second reader") {
    model_writer m = decomposed_hard_swish(association::product_then_sixth, true);
    m.output(index_of(m.spec, "relu6"));  // read by the MUL and a graph output too
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::recognise_hard_swish(g) == 0);
  }
  SUBCASE("the product with x is a graph output") {
    model_writer m = decomposed_hard_swish(association::product_then_sixth, false);
    m.output(index_of(m.spec, "x_r"));
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::recognise_hard_swish(g) == 0);
  }
  SUBCASE("RELU instead of RELU6") {
    model_writer m;
    const auto x = m.input("x", {1, 4, 4, 2});
    const auto r = m.binary(add_code, x, m.scalar("three", 3.0f), "t", fused_relu);
    m.output(m.binary(mul_code, m.binary(mul_code, x, r, "x_r"), m.scalar("sixth", 1.0f / 6.0f), "y"));
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::recognise_hard_swish(g) == 0);
  }
  SUBCASE("the product is with another tensor than x") {
    model_writer m;
    const auto x = m.input("x", {1, 4, 4, 2}), z = m.input("z", {1, 4, 4, 2});
    const auto r = m.binary(add_code, x, m.scalar("three", 3.0f), "t", fused_relu6);
    m.output(m.binary(mul_code, m.binary(mul_code, z, r, "z_r"), m.scalar("sixth", 1.0f / 6.0f), "y"));
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::recognise_hard_swish(g) == 0);
  }
}

// ---- squeeze-and-excitation and attention gates ---------------------------------------------------------------

/// feature [1,4,4,8] -> whole-map mean -> 1x1 conv to 4 + RELU op -> 1x1 conv to 8 -> LOGISTIC -> MUL with `scaled`
/// (the feature itself, or a second input when `gate`). `convolutions`: 0 (LOGISTIC of the mean), 1 (to 8
/// directly), 2 or 3.
struct excitation_case {
  bool mean = false, gate = false, whole_map = true, pooled_read_twice = false, logistic_is_output = false;
  int convolutions = 2;
};

model_writer excitation_model(const excitation_case& c) {
  model_writer m;
  const auto feature = m.conv(m.input("in", {1, 4, 4, 8}), "feature", {8, 1, 1, 8}, {1, 4, 4, 8});
  const auto scaled = c.gate ? m.input("skip", {1, 4, 4, 8}) : feature;
  const std::int32_t window = c.whole_map ? 4 : 2;
  const std::vector<std::int32_t> pooled_shape{1, 4 / window, 4 / window, 8};
  const auto pooled =
      c.mean
          ? m.op(mean_code, {feature, m.tensor(files::int_constant("axes", {1, 2}))},
                 activation("pooled", pooled_shape), fb::BuiltinOptions_ReducerOptions,
                 [](auto& b) { return fb::CreateReducerOptions(b, true).Union(); })
          : m.op(average_pool_code, {feature}, activation("pooled", pooled_shape), fb::BuiltinOptions_Pool2DOptions,
                 [window](auto& b) { return fb::CreatePool2DOptions(b, 1, window, window, window, window).Union(); });
  auto z = pooled;
  for (int i = 0; i + 1 < c.convolutions; ++i) {
    const std::string name = "squeeze" + std::to_string(i);
    const auto channels = m.spec.tensors[static_cast<std::size_t>(z)].shape.back();
    z = m.unary(relu_code, m.conv(z, name, {4, 1, 1, channels}, {1, pooled_shape[1], pooled_shape[2], 4}),
                name + "_relu");
  }
  const auto channels = m.spec.tensors[static_cast<std::size_t>(z)].shape.back();
  const auto excite = c.convolutions > 0 ? m.conv(z, "excite", {8, 1, 1, channels}, pooled_shape) : pooled;
  const auto gate = m.unary(logistic_code, excite, "gate");
  m.output(m.binary(mul_code, scaled, gate, "scaled"));
  if (c.pooled_read_twice) m.output(m.binary(add_code, pooled, pooled, "pooled_twice"));
  if (c.logistic_is_output) m.output(gate);
  return m;
}

tensor_index named(const tfl::graph& g, const std::string& name) {
  for (std::size_t i = 0; i < g.tensors.size(); ++i)
    if (g.tensors[i].name == name) return static_cast<tensor_index>(i);
  FAIL("no tensor ", name);
  return -1;
}

TEST_CASE("patterns: squeeze-and-excitation after a whole-map AVERAGE_POOL_2D or MEAN") {
  for (const bool mean : {false, true}) {
    CAPTURE(mean);
    tfl::graph g = graph_of(excitation_model({.mean = mean}).spec);
    const tfl::pattern_counts counts = tfl::apply_patterns(g);
    CHECK(counts == tfl::pattern_counts{.activation_fusions = 1, .squeeze_excitations = 1});
    REQUIRE(ops_of(g) == std::vector{tfl::builtin::conv_2d, tfl::builtin::squeeze_excitation});
    const tfl::graph_op& se = g.ops[1];
    const auto pool = mean ? tfl::builtin::mean : tfl::builtin::average_pool_2d;
    CHECK(se.options == tfl::op_options{tfl::excitation_options{pool, {tfl::activation::relu, tfl::activation::none}}});
    const auto feature = named(g, "feature");
    CHECK(se.inputs == std::vector{feature, feature, named(g, "squeeze0/w"), named(g, "squeeze0/b"),
                                   named(g, "excite/w"), named(g, "excite/b")});
    CHECK(values_of(g, se.inputs[2]).size() == 4 * 8);  // the weights are kept
    CHECK(se.outputs == g.outputs);
    CHECK(part_sources(se) == std::vector<std::size_t>{1, 2, 3, 4, 5, 6});
  }
}

TEST_CASE("patterns: an attention gate scales another tensor than the pooled one") {
  for (const int convolutions : {1, 2}) {
    CAPTURE(convolutions);
    tfl::graph g = graph_of(excitation_model({.gate = true, .convolutions = convolutions}).spec);
    const tfl::pattern_counts counts = tfl::apply_patterns(g);
    CHECK(counts.attention_gates == 1);
    CHECK(counts.squeeze_excitations == 0);
    REQUIRE(ops_of(g) == std::vector{tfl::builtin::conv_2d, tfl::builtin::attention_gate});
    CHECK(g.ops[1].inputs[0] == named(g, "skip"));
    CHECK(g.ops[1].inputs[1] == named(g, "feature"));
    CHECK(g.ops[1].inputs.size() == 2u + 2u * static_cast<std::size_t>(convolutions));
    CHECK(std::get<tfl::excitation_options>(g.ops[1].options).convolutions.size() ==
          static_cast<std::size_t>(convolutions));
  }
}

TEST_CASE("patterns: excitation near misses stay as they are") {
  for (const excitation_case c : {excitation_case{.whole_map = false}, excitation_case{.pooled_read_twice = true},
                                  excitation_case{.logistic_is_output = true}, excitation_case{.convolutions = 0},
                                  excitation_case{.convolutions = 3}}) {
    tfl::graph g = graph_of(excitation_model(c).spec);
    const std::size_t ops = g.ops.size();
    const tfl::pattern_counts counts = tfl::apply_patterns(g);
    CAPTURE(tfl::summary(g));
    CHECK(counts.squeeze_excitations + counts.attention_gates == 0);
    CHECK(g.ops.size() == ops - counts.activation_fusions);
  }
  SUBCASE("the RELU between the convolutions is not fused yet") {
    tfl::graph g = graph_of(excitation_model({}).spec);
    CHECK(tfl::recognise_excitation(g) == 0);
  }
  SUBCASE("MEAN over H only") {
    model_writer m = excitation_model({.mean = true});
    m.spec.tensors[static_cast<std::size_t>(index_of(m.spec, "axes"))] = files::int_constant("axes", {1, 1});
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::apply_patterns(g).squeeze_excitations == 0);
  }
}

// ---- batch norm -----------------------------------------------------------------------------------------------

/// conv [3,1,1,2] (weights 1..6, bias 1,2,3) or depthwise [1,1,1,3] (weights 1,2,3, no bias) -> MUL by
/// (2, 0.5, -1) -> ADD (0.25, 1, -2) with RELU fused. Values chosen so that the folded ones are exact.
model_writer batch_norm_model(bool depthwise, std::vector<std::int32_t> scale_shape = {3},
                              bool mul_output_read_twice = false) {
  model_writer m;
  const auto x = m.input("x", {1, 2, 2, depthwise ? 3 : 2});
  tensor_index y;
  if (depthwise) {
    const auto w = m.tensor(float_constant("w", {1, 1, 1, 3}, {1, 2, 3}));
    y = m.op(depthwise_code, {x, w}, activation("y", {1, 2, 2, 3}), fb::BuiltinOptions_DepthwiseConv2DOptions,
             [](auto& b) { return fb::CreateDepthwiseConv2DOptions(b, 0, 1, 1, 1, 0).Union(); });
  } else {
    const auto w = m.tensor(float_constant("w", {3, 1, 1, 2}, {1, 2, 3, 4, 5, 6}));
    const auto b = m.tensor(float_constant("b", {3}, {1, 2, 3}));
    y = m.op(conv_code, {x, w, b}, activation("y", {1, 2, 2, 3}), fb::BuiltinOptions_Conv2DOptions,
             files::conv_options(0, 1, 1));
  }
  std::vector<float> scale(files::count(scale_shape));
  for (std::size_t i = 0; i < scale.size(); ++i) scale[i] = std::vector<float>{2.0f, 0.5f, -1.0f}[i % 3];
  const auto scaled = m.binary(mul_code, y, m.tensor(float_constant("gamma", scale_shape, scale)), "scaled");
  m.output(m.binary(add_code, m.tensor(float_constant("beta", {1, 1, 1, 3}, {0.25f, 1.0f, -2.0f})), scaled, "bn",
                    fused_relu));
  if (mul_output_read_twice) m.output(scaled);
  return m;
}

TEST_CASE("patterns: a per-channel MUL then ADD after a convolution folds into its weights and bias") {
  SUBCASE("conv") {
    tfl::graph g = graph_of(batch_norm_model(false).spec);
    CHECK(tfl::fold_batch_norm(g) == 1);
    REQUIRE(g.ops.size() == 1);
    const tfl::graph_op& conv = g.ops[0];
    CHECK(fused_of(conv) == tfl::activation::relu);
    CHECK(conv.outputs == g.outputs);
    CHECK(values_of(g, conv.inputs[1]) == std::vector<float>{2, 4, 1.5f, 2, -5, -6});
    CHECK(values_of(g, conv.inputs[2]) == std::vector<float>{2.25f, 2, -5});
    CHECK(g.tensors[static_cast<std::size_t>(conv.inputs[1])].name == "w/batch_norm");
    CHECK(values_of(g, named(g, "w")) == std::vector<float>{1, 2, 3, 4, 5, 6});  // the file's weights stay
    CHECK(part_sources(conv) == std::vector<std::size_t>{0, 1, 2});
  }
  SUBCASE("depthwise without bias, scale as a [1,1,1,3] constant") {
    tfl::graph g = graph_of(batch_norm_model(true, {1, 1, 1, 3}).spec);
    CHECK(tfl::fold_batch_norm(g) == 1);
    REQUIRE(g.ops.size() == 1);
    CHECK(values_of(g, g.ops[0].inputs[1]) == std::vector<float>{2, 1, -3});
    CHECK(values_of(g, g.ops[0].inputs[2]) == std::vector<float>{0.25f, 1, -2});
  }
  SUBCASE("then the activation pass has nothing left") {
    tfl::graph g = graph_of(batch_norm_model(false).spec);
    CHECK(tfl::apply_patterns(g) == tfl::pattern_counts{.batch_norm_folds = 1});
  }
}

TEST_CASE("patterns: batch norm near misses stay as they are") {
  SUBCASE("a scale that varies over the map") {
    tfl::graph g = graph_of(batch_norm_model(false, {1, 2, 2, 3}).spec);
    CHECK(tfl::fold_batch_norm(g) == 0);
  }
  SUBCASE("the scaled tensor is a graph output") {
    tfl::graph g = graph_of(batch_norm_model(false, {3}, true).spec);
    CHECK(tfl::fold_batch_norm(g) == 0);
  }
  SUBCASE("a MUL by an activation, not a constant") {
    model_writer m;
    const auto x = m.input("x", {1, 2, 2, 2}), s = m.input("s", {1, 1, 1, 2});
    const auto y = m.conv(x, "conv", {2, 1, 1, 2}, {1, 2, 2, 2});
    m.output(m.binary(add_code, m.binary(mul_code, y, s, "scaled"), m.tensor(float_constant("beta", {2})), "bn"));
    tfl::graph g = graph_of(m.spec);
    CHECK(tfl::fold_batch_norm(g) == 0);
  }
}

// The fuzz corpus's pattern models (see files::save_corpus_file), so that the sanitizer stage's replay runs
// every pass on a model where it applies.
TEST_CASE("patterns: write the fuzz corpus" * doctest::skip()) {
  const auto save = [](const std::string& name, const model_writer& m) {
    REQUIRE_MESSAGE(files::save_corpus_file("patterns_" + name, files::write(m.spec)), "set MOSAIQ_TFLITE_CORPUS_DIR");
  };
  save("squeeze_excitation_mean", excitation_model({.mean = true}));
  save("attention_gate", excitation_model({.gate = true, .convolutions = 1}));
  save("hard_swish", decomposed_hard_swish(association::x_sixth_first, true));
  save("batch_norm", batch_norm_model(false));
}
