// The TFLite reader: verifier first, then every field read through flatc's accessors for tflite_subset.fbs, with
// each index and size checked before it is used.
#include "mosaiq/tflite/reader.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "detail.hpp"
#include "tflite_subset_generated.h"

namespace mosaiq::tflite {
namespace {

namespace fb = schema;
using detail::fail;

constexpr std::array<std::string_view, 18> tensor_type_names{
    "FLOAT32", "FLOAT16", "INT32",      "UINT8",  "INT64",    "STRING",  "BOOL",   "INT16",  "COMPLEX64",
    "INT8",    "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE", "VARIANT", "UINT32", "UINT16", "INT4"};

std::string tensor_type_name(std::int8_t code) {
  if (code >= 0 && static_cast<std::size_t>(code) < tensor_type_names.size())
    return std::string(tensor_type_names[static_cast<std::size_t>(code)]);
  return "type " + std::to_string(code);
}

template <class T>
std::vector<T> to_vector(const flatbuffers::Vector<T>* v) {
  return v ? std::vector<T>(v->begin(), v->end()) : std::vector<T>{};
}

std::string to_string(const flatbuffers::String* s) { return s ? s->str() : std::string{}; }

void verify(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 8) fail("truncated file: ", bytes.size(), " bytes cannot hold a TFLite model");
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % 8 != 0) fail("the model's bytes must start 8-byte aligned");
  if (!fb::ModelBufferHasIdentifier(bytes.data())) fail("not a TFLite model: no \"TFL3\" file identifier");
  // Models over 2 GB keep their buffers after the flatbuffer: the verifier checks the flatbuffer part.
  const std::size_t flatbuffer_bytes = std::min<std::size_t>(bytes.size(), FLATBUFFERS_MAX_BUFFER_SIZE - 1);
  flatbuffers::Verifier verifier(bytes.data(), flatbuffer_bytes);
  if (!fb::VerifyModelBuffer(verifier))
    fail("corrupt or truncated TFLite model: the flatbuffers verifier rejects its ", bytes.size(), " bytes");
}

std::vector<buffer> read_buffers(const fb::Model& m, std::span<const std::uint8_t> bytes) {
  std::vector<buffer> out;
  if (!m.buffers()) return out;
  for (std::size_t i = 0; i < m.buffers()->size(); ++i) {
    const fb::Buffer* b = m.buffers()->Get(static_cast<flatbuffers::uoffset_t>(i));
    const std::size_t inline_size = b && b->data() ? b->data()->size() : 0;
    // offset > 1: the data lies outside the flatbuffer, at that offset from the start of the file.
    if (b && b->offset() > 1) {
      const std::uint64_t offset = b->offset(), size = b->size();
      if (inline_size != 0) fail("buffer ", i, " has both inline data and an external offset");
      if (offset > bytes.size() || size > bytes.size() - offset)
        fail("buffer ", i, ": external data [", offset, ", +", size, ") lies outside the file of ", bytes.size(),
             " bytes (truncated?)");
      out.push_back({bytes.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(size))});
    } else {
      out.push_back({inline_size ? std::span<const std::uint8_t>(b->data()->data(), inline_size)
                                 : std::span<const std::uint8_t>{}});
    }
  }
  return out;
}

std::vector<operator_code> read_operator_codes(const fb::Model& m) {
  std::vector<operator_code> out;
  if (!m.operator_codes()) return out;
  for (const fb::OperatorCode* code : *m.operator_codes()) {
    // deprecated_builtin_code holds codes below 127; newer files also write builtin_code. TFLite reads the larger.
    const std::int32_t builtin_code = std::max<std::int32_t>(code->deprecated_builtin_code(), code->builtin_code());
    out.push_back({builtin_code, to_string(code->custom_code()), code->version()});
  }
  return out;
}

bool accepted_type(std::int8_t code) {
  constexpr std::array accepted{element_type::float32, element_type::float16, element_type::int32, element_type::uint8,
                                element_type::int8};
  return std::any_of(accepted.begin(), accepted.end(),
                     [&](element_type t) { return static_cast<std::int8_t>(t) == code; });
}

quantization read_quantization(const fb::QuantizationParameters* q, const tensor& t, const std::string& where) {
  quantization out;
  if (!q || !q->scale() || q->scale()->size() == 0) return out;
  out.scale = to_vector(q->scale());
  out.zero_point = to_vector(q->zero_point());
  out.quantized_dimension = q->quantized_dimension();
  if (out.zero_point.size() != out.scale.size())
    fail(where, ": quantization has ", out.scale.size(), " scales but ", out.zero_point.size(), " zero points");
  for (const float s : out.scale)
    if (!std::isfinite(s) || s < 0) fail(where, ": quantization scale ", s, " is not a finite non-negative number");
  if (out.per_channel()) {
    const auto dim = out.quantized_dimension;
    if (dim < 0 || static_cast<std::size_t>(dim) >= t.shape.size())
      fail(where, ": quantized_dimension ", dim, " is outside its shape ", detail::shape_string(t.shape));
    if (static_cast<std::size_t>(t.shape[static_cast<std::size_t>(dim)]) != out.scale.size())
      fail(where, ": ", out.scale.size(), " per-channel scales for dimension ", dim, " of shape ",
           detail::shape_string(t.shape));
  }
  const auto [low, high] = t.type == element_type::uint8  ? std::pair<std::int64_t, std::int64_t>{0, 255}
                           : t.type == element_type::int8 ? std::pair<std::int64_t, std::int64_t>{-128, 127}
                                                          : std::pair{std::numeric_limits<std::int64_t>::min(),
                                                                      std::numeric_limits<std::int64_t>::max()};
  for (const std::int64_t zp : out.zero_point)
    if (zp < low || zp > high) fail(where, ": zero point ", zp, " is outside the range of ", to_string(t.type));
  return out;
}

tensor read_tensor(const fb::Tensor& source, std::size_t index, const model& m) {
  tensor t;
  t.name = to_string(source.name());
  const std::string where = "tensor " + std::to_string(index) + " '" + t.name + "'";
  if (!accepted_type(source.type()))
    fail(where, ": element type ", tensor_type_name(source.type()),
         " is not supported (float32, float16, int32, uint8, int8)");
  t.type = static_cast<element_type>(source.type());
  t.shape = to_vector(source.shape());
  t.shape_signature = to_vector(source.shape_signature());
  for (const std::int32_t d : t.shape)
    if (d < 0) fail(where, ": negative dimension in shape ", detail::shape_string(t.shape));
  t.buffer = source.buffer();
  t.is_variable = source.is_variable();
  if (t.buffer >= m.buffers.size())
    fail(where, ": buffer index ", t.buffer, " is out of range (the model has ", m.buffers.size(), " buffers)");
  t.quant = read_quantization(source.quantization(), t, where);
  const std::span<const std::uint8_t> data = m.buffers[t.buffer].data;
  if (!data.empty()) {
    const std::uint64_t expected = detail::element_count(t.shape, where) * element_bytes(t.type);
    if (data.size() != expected)
      fail(where, ": its constant data has ", data.size(), " bytes but shape ", detail::shape_string(t.shape), " of ",
           to_string(t.type), " needs ", expected);
  }
  return t;
}

std::vector<std::int32_t> read_indices(const flatbuffers::Vector<std::int32_t>* v, std::size_t tensor_count,
                                       bool allow_omitted, const std::string& what) {
  std::vector<std::int32_t> out = to_vector(v);
  for (const std::int32_t i : out)
    if (i < (allow_omitted ? -1 : 0) || (i >= 0 && static_cast<std::size_t>(i) >= tensor_count))
      fail(what, " refers to tensor ", i, ", out of range (the subgraph has ", tensor_count, " tensors)");
  return out;
}

subgraph read_subgraph(const fb::SubGraph& source, std::size_t index, const model& m) {
  subgraph sg;
  sg.name = to_string(source.name());
  if (source.tensors())
    for (std::size_t i = 0; i < source.tensors()->size(); ++i)
      sg.tensors.push_back(read_tensor(*source.tensors()->Get(static_cast<flatbuffers::uoffset_t>(i)), i, m));
  const std::string where = "subgraph " + std::to_string(index);
  sg.inputs = read_indices(source.inputs(), sg.tensors.size(), false, where + " input");
  sg.outputs = read_indices(source.outputs(), sg.tensors.size(), false, where + " output");
  if (source.operators())
    for (std::size_t i = 0; i < source.operators()->size(); ++i) {
      const fb::Operator& op = *source.operators()->Get(static_cast<flatbuffers::uoffset_t>(i));
      const std::string op_where = "operator " + std::to_string(i);
      operation read;
      read.inputs = read_indices(op.inputs(), sg.tensors.size(), true, op_where + " input");
      read.outputs = read_indices(op.outputs(), sg.tensors.size(), false, op_where + " output");
      if (op.opcode_index() >= m.operator_codes.size())
        fail(op_where, ": opcode index ", op.opcode_index(), " is out of range (the model has ",
             m.operator_codes.size(), " operator codes)");
      detail::read_operation(op, m.operator_codes[op.opcode_index()], i, sg, read);
      sg.operators.push_back(std::move(read));
    }
  return sg;
}

model read_verified(const fb::Model& source, std::span<const std::uint8_t> bytes) {
  model m;
  m.version = source.version();
  m.description = to_string(source.description());
  m.buffers = read_buffers(source, bytes);
  m.operator_codes = read_operator_codes(source);
  if (!source.subgraphs() || source.subgraphs()->size() == 0) fail("the model has no subgraph");
  for (std::size_t i = 0; i < source.subgraphs()->size(); ++i)
    m.subgraphs.push_back(read_subgraph(*source.subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(i)), i, m));
  return m;
}

}  // namespace

result<model> read_model(std::span<const std::uint8_t> bytes) {
  try {
    verify(bytes);
    return read_verified(*fb::GetModel(bytes.data()), bytes);
  } catch (const detail::import_error& e) {
    return result<model>::failure(e.what());
  }
}

result<std::vector<std::uint8_t>> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return result<std::vector<std::uint8_t>>::failure("cannot open " + path);
  const std::streamsize size = in.tellg();
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::max<std::streamsize>(size, 0)));
  in.seekg(0);
  if (size < 0 || !in.read(reinterpret_cast<char*>(bytes.data()), size))
    return result<std::vector<std::uint8_t>>::failure("cannot read " + path);
  return bytes;
}

}  // namespace mosaiq::tflite
