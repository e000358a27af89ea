// tflite_import_models DIR: writes the quantized models the emitter tests import at build time (CMake runs
// mosaiq-import on them and compiles tflite_import_test.cpp against the headers it writes):
//   branches_{u8,i8}: every op of the importer's vocabulary that exists as a layer, with a residual add whose
//     current operand is the second one, a concat of two branches, a squeeze-and-excitation style gate, both
//     resizes, both pools, a dilated conv, softmax;
//   head_{u8,i8}: the input read twice (x * x), mean, a reshape to [1,C], fully connected, softmax, and an op that
//     does not reach the output;
//   gate_{u8,i8}: a squeeze-and-excitation block (mean, 1x1 ReLU, 1x1, logistic, mul) and a logistic mask;
//   heads_{u8,i8}: four outputs (a feature map also read by two heads, a box head, a summary through a reshape, the
//     scores), run()'s output not the file's first;
//   rejected_sub_u8: SUB, which the importer refuses (the tool's error test).
#include <cstdio>
#include <fstream>
#include <string>

#include "tflite_quantized_writer.hpp"

namespace {

namespace files = mosaiq::test::tflite_files;
namespace fb = files::fb;
namespace code = files::codes;
using index = files::quantized_writer::index;

constexpr std::int8_t same = 0, valid = 1, relu = 1, relu6 = 3;

files::options_writer depthwise_options(std::int8_t padding, int stride, int multiplier, std::int8_t act) {
  return [=](auto& b) { return fb::CreateDepthwiseConv2DOptions(b, padding, stride, stride, multiplier, act).Union(); };
}
files::options_writer pool_options(std::int8_t padding, int stride, int filter) {
  return [=](auto& b) { return fb::CreatePool2DOptions(b, padding, stride, stride, filter, filter, 0).Union(); };
}

index conv(files::quantized_writer& m, index in, const std::string& name, std::vector<std::int32_t> filter_shape,
           index out, files::options_writer options) {
  const index w = m.filter(name + "/weights", filter_shape, 0);
  const index b = m.bias(name + "/bias", filter_shape[0]);
  return m.op(code::conv, {in, w, b}, out, fb::BuiltinOptions_Conv2DOptions, std::move(options));
}

index depthwise(files::quantized_writer& m, index in, const std::string& name, std::vector<std::int32_t> filter_shape,
                index out, files::options_writer options) {
  const index w = m.filter(name + "/weights", filter_shape, 3);
  const index b = m.bias(name + "/bias", filter_shape[3]);
  return m.op(code::depthwise, {in, w, b}, out, fb::BuiltinOptions_DepthwiseConv2DOptions, std::move(options));
}

index resize(files::quantized_writer& m, std::int32_t op_code, index in, const std::string& name, int size,
             bool half_pixel) {
  auto shape = m.shape(in);
  shape[1] = shape[2] = size;
  const index out = m.same_quant(name, shape, in);
  const index sizes = m.int_vector(name + "/size", {size, size});
  if (op_code == code::resize_bilinear)
    return m.op(op_code, {in, sizes}, out, fb::BuiltinOptions_ResizeBilinearOptions,
                [=](auto& b) { return fb::CreateResizeBilinearOptions(b, false, half_pixel).Union(); });
  return m.op(op_code, {in, sizes}, out, fb::BuiltinOptions_ResizeNearestNeighborOptions,
              [=](auto& b) { return fb::CreateResizeNearestNeighborOptions(b, false, half_pixel).Union(); });
}

index binary(files::quantized_writer& m, std::int32_t op_code, index a, index b, index out) {
  if (op_code == code::add)
    return m.op(op_code, {a, b}, out, fb::BuiltinOptions_AddOptions,
                [](auto& builder) { return fb::CreateAddOptions(builder, 0).Union(); });
  return m.op(op_code, {a, b}, out, fb::BuiltinOptions_MulOptions,
              [](auto& builder) { return fb::CreateMulOptions(builder, 0).Union(); });
}

index mean(files::quantized_writer& m, index in, index out) {
  const index axes = m.int_vector(m.at(out).name + "/axes", {1, 2});
  return m.op(code::mean, {in, axes}, out, fb::BuiltinOptions_ReducerOptions,
              [](auto& b) { return fb::CreateReducerOptions(b, true).Union(); });
}

index softmax(files::quantized_writer& m, index in, float beta) {
  return m.op(code::softmax, {in}, m.probability("softmax", m.shape(in)), fb::BuiltinOptions_SoftmaxOptions,
              [=](auto& b) { return fb::CreateSoftmaxOptions(b, beta).Union(); });
}

/// RESHAPE of a [1,1,1,C] tensor to [1,C], same quantization.
index to_vector(files::quantized_writer& m, index in, const std::string& name) {
  const std::int32_t channels = m.shape(in).back();
  return m.op(code::reshape, {in, m.int_vector(name + "/shape", {1, channels})}, m.same_quant(name, {1, channels}, in),
              fb::BuiltinOptions_ReshapeOptions, [=](auto& b) {
                return fb::CreateReshapeOptions(b, b.CreateVector(std::vector<std::int32_t>{1, channels})).Union();
              });
}

files::model_spec branches(bool int8) {
  files::quantized_writer m(int8, 19);
  const index in = m.input("image", {1, 9, 11, 3}, 1.0f / 64.0f, 128);
  const index c1 = conv(m, in, "c1", {8, 3, 3, 3}, m.activation_tensor("c1", {1, 5, 6, 8}, 6.0f / 255.0f, 0),
                        files::conv_options(same, 2, 2, relu6));
  const index d1 = depthwise(m, c1, "d1", {1, 3, 3, 8}, m.activation_tensor("d1", {1, 5, 6, 8}, 0.02f, 0),
                             depthwise_options(same, 1, 1, relu));
  const index p1 = conv(m, d1, "p1", {8, 1, 1, 8}, m.activation_tensor("p1", {1, 5, 6, 8}, 0.03f, 128),
                        files::conv_options(same, 1, 1));
  const index a1 = binary(m, code::add, c1, p1, m.activation_tensor("a1", {1, 5, 6, 8}, 0.04f, 120));
  const index ap = m.op(code::average_pool, {a1}, m.same_quant("ap", {1, 5, 6, 8}, a1),
                        fb::BuiltinOptions_Pool2DOptions, pool_options(same, 1, 3));
  const index cat = m.op(code::concatenation, {ap, d1}, m.activation_tensor("cat", {1, 5, 6, 16}, 0.05f, 110),
                         fb::BuiltinOptions_ConcatenationOptions,
                         [](auto& b) { return fb::CreateConcatenationOptions(b, -1, 0).Union(); });
  const index d2 = depthwise(m, cat, "d2", {1, 3, 3, 32}, m.activation_tensor("d2", {1, 2, 2, 32}, 0.04f, 130),
                             depthwise_options(valid, 2, 2, 0));
  const index g = mean(m, d2, m.activation_tensor("pooled", {1, 1, 1, 32}, 0.03f, 128));
  const index gate = conv(m, g, "gate", {32, 1, 1, 32}, m.activation_tensor("gate", {1, 1, 1, 32}, 0.02f, 0),
                          files::conv_options(same, 1, 1, relu));
  const index gated = binary(m, code::mul, d2, gate, m.activation_tensor("gated", {1, 2, 2, 32}, 0.01f, 128));
  const index up = resize(m, code::resize_bilinear, gated, "up", 4, true);
  const index mp = m.op(code::max_pool, {up}, m.same_quant("mp", {1, 2, 2, 32}, up), fb::BuiltinOptions_Pool2DOptions,
                        pool_options(valid, 2, 2));
  const index near = resize(m, code::resize_nearest, mp, "near", 4, false);
  const index c3 = conv(m, near, "c3", {5, 3, 3, 32}, m.activation_tensor("c3", {1, 4, 4, 5}, 0.08f, 128),
                        files::conv_options(same, 1, 1, 0, 2, 2));
  m.output(softmax(m, c3, 0.5f));
  return m.spec;
}

files::model_spec head(bool int8) {
  files::quantized_writer m(int8, 7);
  const index in = m.input("features", {1, 4, 4, 6}, 0.02f, 100);
  const index square = binary(m, code::mul, in, in, m.activation_tensor("square", {1, 4, 4, 6}, 0.01f, 10));
  const index g = mean(m, square, m.activation_tensor("mean", {1, 1, 1, 6}, 0.008f, 128));
  m.op(code::max_pool, {square}, m.same_quant("unused", {1, 2, 2, 6}, square), fb::BuiltinOptions_Pool2DOptions,
       pool_options(valid, 2, 2));
  const index flat = to_vector(m, g, "flat");
  const index w = m.filter("fc/weights", {4, 6}, 0);
  const index b = m.bias("fc/bias", 4);
  const index fc = m.op(code::fully_connected, {flat, w, b}, m.activation_tensor("fc", {1, 4}, 0.02f, 0),
                        fb::BuiltinOptions_FullyConnectedOptions,
                        [](auto& builder) { return fb::CreateFullyConnectedOptions(builder, relu).Union(); });
  m.output(softmax(m, fc, 1.0f));
  return m.spec;
}

index logistic(files::quantized_writer& m, index in, const std::string& name) {
  return m.op(code::logistic, {in}, m.probability(name, m.shape(in)));
}

/// A squeeze-and-excitation block as the selfie model has them (pool, 1x1 ReLU, 1x1, logistic, multiply), then a
/// one-channel mask through a logistic.
files::model_spec gate(bool int8) {
  files::quantized_writer m(int8, 3);
  const index in = m.input("rgb", {1, 6, 6, 4}, 1.0f / 32.0f, 128);
  const index x =
      conv(m, in, "features", {12, 3, 3, 4}, m.activation_tensor("features", {1, 6, 6, 12}, 6.0f / 255.0f, 0),
           files::conv_options(same, 1, 1, relu6));
  const index pooled = mean(m, x, m.activation_tensor("squeeze", {1, 1, 1, 12}, 0.015f, 0));
  const index reduced = conv(m, pooled, "reduce", {6, 1, 1, 12}, m.activation_tensor("reduce", {1, 1, 1, 6}, 0.01f, 0),
                             files::conv_options(same, 1, 1, relu));
  const index expanded =
      conv(m, reduced, "expand", {12, 1, 1, 6}, m.activation_tensor("expand", {1, 1, 1, 12}, 0.02f, 128),
           files::conv_options(same, 1, 1));
  const index excitation = logistic(m, expanded, "excitation");
  const index scaled = binary(m, code::mul, x, excitation, m.activation_tensor("scaled", {1, 6, 6, 12}, 0.015f, 0));
  const index logits = conv(m, scaled, "logits", {1, 1, 1, 12}, m.activation_tensor("logits", {1, 6, 6, 1}, 0.05f, 128),
                            files::conv_options(same, 1, 1));
  m.output(logistic(m, logits, "mask"));
  return m.spec;
}

/// An SSD-like model with four outputs, run()'s in the middle of the file's output list: a feature map that is an
/// output and is read again by two heads, a box head nothing reads, a pooled summary that leaves through a reshape
/// to [1,C], and the score head's logistic (the last op, so run()'s output).
files::model_spec heads(bool int8) {
  files::quantized_writer m(int8, 11);
  const index in = m.input("image", {1, 8, 8, 3}, 1.0f / 64.0f, 128);
  const index features =
      conv(m, in, "features", {8, 3, 3, 3}, m.activation_tensor("features", {1, 8, 8, 8}, 6.0f / 255.0f, 0),
           files::conv_options(same, 1, 1, relu6));
  const index boxes = conv(m, features, "boxes", {4, 1, 1, 8}, m.activation_tensor("boxes", {1, 8, 8, 4}, 0.05f, 128),
                           files::conv_options(same, 1, 1));
  const index down = depthwise(m, features, "down", {1, 3, 3, 8}, m.activation_tensor("down", {1, 4, 4, 8}, 0.03f, 0),
                               depthwise_options(same, 2, 1, relu));
  const index pooled = mean(m, down, m.activation_tensor("pooled", {1, 1, 1, 8}, 0.02f, 0));
  const index summary = to_vector(m, pooled, "summary");
  const index scores = conv(m, down, "scores", {2, 1, 1, 8}, m.activation_tensor("scores", {1, 4, 4, 2}, 0.06f, 128),
                            files::conv_options(same, 1, 1));
  const index probabilities = logistic(m, scores, "probabilities");
  for (const index out : {boxes, probabilities, features, summary}) m.output(out);
  return m.spec;
}

files::model_spec rejected_sub() {
  files::quantized_writer m(false);
  const index in = m.input("x", {1, 2, 2, 3}, 0.1f, 128);
  m.output(m.op(code::sub, {in, in}, m.activation_tensor("difference", {1, 2, 2, 3}, 0.1f, 128),
                fb::BuiltinOptions_SubOptions, [](auto& b) { return fb::CreateSubOptions(b, 0).Union(); }));
  return m.spec;
}

bool save(const std::string& dir, const std::string& name, const files::model_spec& spec) {
  const std::vector<std::uint8_t> bytes = files::write(spec);
  std::ofstream out(dir + "/" + name + ".tflite", std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok = save(dir, "branches_u8", branches(false)) && save(dir, "branches_i8", branches(true)) &&
                  save(dir, "head_u8", head(false)) && save(dir, "head_i8", head(true)) &&
                  save(dir, "gate_u8", gate(false)) && save(dir, "gate_i8", gate(true)) &&
                  save(dir, "heads_u8", heads(false)) && save(dir, "heads_i8", heads(true)) &&
                  save(dir, "rejected_sub_u8", rejected_sub());
  if (!ok) std::fprintf(stderr, "tflite_import_models: cannot write into %s\n", dir.c_str());
  return ok ? 0 : 1;
}
