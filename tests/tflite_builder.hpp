// Writes small .tflite files with the flatbuffers builder (flatc's code for tools/tflite/tflite_subset.fbs, which
// keeps TFLite's field ids), for the reader's tests and the fuzzer's seed corpus.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "tflite_subset_generated.h"

namespace mosaiq::test::tflite_files {

namespace fb = mosaiq::tflite::schema;

/// TFLite TensorType numbers.
enum type_code : std::int8_t { f32 = 0, f16 = 1, i32 = 2, u8 = 3, i64 = 4, i8 = 9 };

struct tensor_spec {
  std::string name;
  std::int8_t type = f32;
  std::vector<std::int32_t> shape;
  std::vector<std::uint8_t> data;  // empty: an activation
  std::vector<float> scale;
  std::vector<std::int64_t> zero_point;
  std::int32_t quantized_dimension = 0;
  std::vector<std::int32_t> shape_signature;
  bool is_variable = false;
  std::int64_t buffer = -1;  // >= 0: this buffer index instead of a fresh one (for out-of-range tests)
};

using options_writer = std::function<flatbuffers::Offset<void>(flatbuffers::FlatBufferBuilder&)>;

struct op_spec {
  std::int32_t code = 0;  // BuiltinOperator
  std::vector<std::int32_t> inputs, outputs;
  fb::BuiltinOptions options_type = fb::BuiltinOptions_NONE;
  options_writer options;
  std::string custom_code;
  std::vector<std::uint8_t> custom_options;
  bool only_deprecated_code = false;  // an old file: builtin_code left 0, the code in deprecated_builtin_code
  std::int64_t opcode_index = -1;     // >= 0: this opcode index instead of the op's own
};

struct model_spec {
  std::vector<tensor_spec> tensors;
  std::vector<op_spec> ops;
  std::vector<std::int32_t> inputs, outputs;
  std::string description = "mosaiq test";
  std::uint32_t version = 3;
  bool external_buffers = false;  // constant data after the flatbuffer (offset/size), as in models over 2 GB
  bool inline_copy_too = false;   // with external_buffers: the data inline as well (invalid)
  bool no_subgraph = false;
};

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<std::uint8_t> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

inline tensor_spec activation(std::string name, std::vector<std::int32_t> shape, std::int8_t type = f32) {
  return {.name = std::move(name), .type = type, .shape = std::move(shape)};
}

inline std::size_t count(const std::vector<std::int32_t>& shape) {
  std::size_t n = 1;
  for (const auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

/// A float constant with the given values.
inline tensor_spec float_constant(std::string name, std::vector<std::int32_t> shape, const std::vector<float>& values) {
  return {.name = std::move(name), .type = f32, .shape = std::move(shape), .data = bytes_of(values)};
}

/// A float constant whose values are 0.25 * (i % 7) - 0.5.
inline tensor_spec float_constant(std::string name, std::vector<std::int32_t> shape) {
  std::vector<float> values(count(shape));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  return float_constant(std::move(name), std::move(shape), values);
}

inline tensor_spec int_constant(std::string name, std::vector<std::int32_t> values) {
  return {.name = std::move(name),
          .type = i32,
          .shape = {static_cast<std::int32_t>(values.size())},
          .data = bytes_of(values)};
}

namespace detail {

inline std::int8_t deprecated_code(const op_spec& op) {
  return static_cast<std::int8_t>(op.code < 127 ? op.code : 127);
}

inline flatbuffers::Offset<fb::Tensor> write_tensor(flatbuffers::FlatBufferBuilder& b, const tensor_spec& t,
                                                    std::uint32_t buffer) {
  flatbuffers::Offset<fb::QuantizationParameters> quant;
  if (!t.scale.empty() || !t.zero_point.empty())
    quant = fb::CreateQuantizationParameters(b, b.CreateVector(t.scale), b.CreateVector(t.zero_point),
                                             t.quantized_dimension);
  const auto signature = t.shape_signature.empty() ? 0 : b.CreateVector(t.shape_signature);
  return fb::CreateTensor(b, b.CreateVector(t.shape), t.type, buffer, b.CreateString(t.name), quant, t.is_variable,
                          signature);
}

inline flatbuffers::Offset<fb::Operator> write_operator(flatbuffers::FlatBufferBuilder& b, const op_spec& op,
                                                        std::uint32_t opcode_index) {
  const auto options = op.options ? op.options(b) : 0;
  const auto custom = op.custom_options.empty() ? 0 : b.CreateVector(op.custom_options);
  return fb::CreateOperator(b, opcode_index, b.CreateVector(op.inputs), b.CreateVector(op.outputs), op.options_type,
                            options, custom);
}

/// One flatbuffer; `external_offset` places constant data at that file offset instead of inline.
inline std::vector<std::uint8_t> write_flatbuffer(const model_spec& spec, std::uint64_t external_offset) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers{fb::CreateBuffer(b)};
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  std::uint64_t offset = external_offset;
  for (const tensor_spec& t : spec.tensors) {
    std::uint32_t index = 0;
    if (!t.data.empty()) {
      index = static_cast<std::uint32_t>(buffers.size());
      if (spec.external_buffers) {
        buffers.push_back(
            fb::CreateBuffer(b, spec.inline_copy_too ? b.CreateVector(t.data) : 0, offset, t.data.size()));
        offset += (t.data.size() + 15) / 16 * 16;
      } else {
        b.ForceVectorAlignment(t.data.size(), 1, 16);
        buffers.push_back(fb::CreateBuffer(b, b.CreateVector(t.data)));
      }
    }
    tensors.push_back(write_tensor(b, t, t.buffer >= 0 ? static_cast<std::uint32_t>(t.buffer) : index));
  }
  std::vector<flatbuffers::Offset<fb::OperatorCode>> codes;
  std::vector<flatbuffers::Offset<fb::Operator>> ops;
  for (const op_spec& op : spec.ops) {
    const auto custom = op.custom_code.empty() ? 0 : b.CreateString(op.custom_code);
    codes.push_back(fb::CreateOperatorCode(b, deprecated_code(op), custom, 1, op.only_deprecated_code ? 0 : op.code));
    const auto index = op.opcode_index >= 0 ? op.opcode_index : static_cast<std::int64_t>(codes.size() - 1);
    ops.push_back(write_operator(b, op, static_cast<std::uint32_t>(index)));
  }
  std::vector<flatbuffers::Offset<fb::SubGraph>> subgraphs;
  if (!spec.no_subgraph)
    subgraphs.push_back(fb::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(spec.inputs),
                                           b.CreateVector(spec.outputs), b.CreateVector(ops), b.CreateString("main")));
  fb::FinishModelBuffer(b, fb::CreateModel(b, spec.version, b.CreateVector(codes), b.CreateVector(subgraphs),
                                           b.CreateString(spec.description), b.CreateVector(buffers)));
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

}  // namespace detail

/// The model's file bytes.
inline std::vector<std::uint8_t> write(const model_spec& spec) {
  if (!spec.external_buffers) return detail::write_flatbuffer(spec, 0);
  // The flatbuffer's size does not depend on the offsets' values: write once to learn it, then for real.
  const std::size_t size = detail::write_flatbuffer(spec, 16).size();
  const std::uint64_t start = (size + 15) / 16 * 16;
  std::vector<std::uint8_t> file = detail::write_flatbuffer(spec, start);
  file.resize(start, 0);
  for (const tensor_spec& t : spec.tensors) {
    if (t.data.empty()) continue;
    file.insert(file.end(), t.data.begin(), t.data.end());
    file.resize((file.size() + 15) / 16 * 16, 0);
  }
  return file;
}

/// The fuzz corpus writers (skipped tests, run by hand: MOSAIQ_TFLITE_CORPUS_DIR=tests/fuzz_corpus/tflite
/// tflite_tests --no-skip -tc='*corpus*') save NAME.tflite there; false without the variable.
inline bool save_corpus_file(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  const char* dir = std::getenv("MOSAIQ_TFLITE_CORPUS_DIR");
  if (!dir) return false;
  std::ofstream(std::string(dir) + "/" + name + ".tflite", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return true;
}

// Options tables, as the tests write them.
inline options_writer conv_options(std::int8_t padding, int stride_w, int stride_h, std::int8_t activation = 0,
                                   int dilation_w = 1, int dilation_h = 1) {
  return [=](flatbuffers::FlatBufferBuilder& b) {
    return fb::CreateConv2DOptions(b, padding, stride_w, stride_h, activation, dilation_w, dilation_h).Union();
  };
}

}  // namespace mosaiq::test::tflite_files
