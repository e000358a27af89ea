// What the TFLite reader returns: a model file's content in plain C++ types, checked (indices in range, constant
// sizes that match their shapes, supported ops and options) but not yet interpreted. No flatbuffers type leaks out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace mosaiq::tflite {

/// Element types the reader accepts (TFLite's TensorType numbers).
enum class element_type : std::int8_t { float32 = 0, float16 = 1, int32 = 2, uint8 = 3, int8 = 9 };

std::string_view to_string(element_type type) noexcept;
std::size_t element_bytes(element_type type) noexcept;

/// The operators the reader accepts: TFLite's BuiltinOperator numbers, and MediaPipe's custom transposed
/// convolution (negative: it has no builtin code). The other negative values are blocks the pattern passes
/// (patterns.hpp) make out of several ops; the reader never produces them.
enum class builtin : std::int32_t {
  /// scaled * logistic(1x1 convs(whole-map mean(pooled))), scaled != pooled (options: excitation_options).
  attention_gate = -4,
  /// x * logistic(1x1 convs(whole-map mean(x))) (options: excitation_options).
  squeeze_excitation = -3,
  /// CUSTOM "Convolution2DTransposeBias" (MediaPipe): inputs input, weights [O,H,W,I], bias [O]; its 12 bytes of
  /// custom options are int32 padding (1 SAME, 2 VALID), stride_w, stride_h.
  convolution_2d_transpose_bias = -2,
  add = 0,
  average_pool_2d = 1,
  concatenation = 2,
  conv_2d = 3,
  depthwise_conv_2d = 4,
  dequantize = 6,
  fully_connected = 9,
  logistic = 14,
  max_pool_2d = 17,
  mul = 18,
  relu = 19,
  relu6 = 21,
  reshape = 22,
  resize_bilinear = 23,
  softmax = 25,
  pad = 34,
  mean = 40,
  sub = 41,
  transpose_conv = 67,
  resize_nearest_neighbor = 97,
  quantize = 114,
  hard_swish = 117,
};

/// TFLite's name of any builtin operator code ("CONV_2D", "SQUARED_DIFFERENCE"...); "BUILTIN_<n>" for codes newer
/// than this table.
std::string builtin_name(std::int32_t code);
std::string builtin_name(builtin op);

/// Affine quantization: real = scale * (q - zero_point). One entry: per tensor; more: per channel along
/// `quantized_dimension`. Empty: not quantized.
struct quantization {
  std::vector<float> scale;
  std::vector<std::int64_t> zero_point;
  std::int32_t quantized_dimension = 0;
  bool empty() const noexcept { return scale.empty(); }
  bool per_channel() const noexcept { return scale.size() > 1; }
  bool operator==(const quantization&) const = default;
};

struct tensor {
  std::string name;
  element_type type = element_type::float32;
  std::vector<std::int32_t> shape;
  std::vector<std::int32_t> shape_signature;  // -1 marks a dynamic dimension; empty when the file has none
  std::uint32_t buffer = 0;                   // index into model::buffers; buffer 0 is TFLite's empty buffer
  quantization quant;
  bool is_variable = false;
};

/// A buffer's bytes: a view into the bytes the model was read from (inside the flatbuffer, or after it for
/// models over 2 GB). Empty for activations.
struct buffer {
  std::span<const std::uint8_t> data;
};

struct operator_code {
  std::int32_t builtin_code = 0;  // the larger of builtin_code and deprecated_builtin_code, as TFLite reads them
  std::string custom_code;
  std::int32_t version = 1;
};

enum class padding : std::int8_t { same = 0, valid = 1 };
/// Fused activations the reader accepts (TFLite's ActivationFunctionType numbers; TANH and SIGN_BIT are refused).
enum class activation : std::int8_t { none = 0, relu = 1, relu_n1_to_1 = 2, relu6 = 3 };

std::string_view to_string(padding value) noexcept;
std::string_view to_string(activation value) noexcept;

struct conv2d_options {
  padding pad = padding::same;
  std::int32_t stride_w = 1, stride_h = 1, dilation_w = 1, dilation_h = 1;
  activation fused = activation::none;
  bool operator==(const conv2d_options&) const = default;
};
struct depthwise_options {
  padding pad = padding::same;
  std::int32_t stride_w = 1, stride_h = 1, dilation_w = 1, dilation_h = 1, depth_multiplier = 1;
  activation fused = activation::none;
  bool operator==(const depthwise_options&) const = default;
};
/// TRANSPOSE_CONV and Convolution2DTransposeBias.
struct transpose_conv_options {
  padding pad = padding::same;
  std::int32_t stride_w = 1, stride_h = 1;
  activation fused = activation::none;
  bool operator==(const transpose_conv_options&) const = default;
};
struct pool2d_options {
  padding pad = padding::same;
  std::int32_t stride_w = 1, stride_h = 1, filter_w = 1, filter_h = 1;
  activation fused = activation::none;
  bool operator==(const pool2d_options&) const = default;
};
struct fully_connected_options {
  activation fused = activation::none;
  bool keep_num_dims = false;
  bool operator==(const fully_connected_options&) const = default;
};
/// ADD, SUB, MUL.
struct elementwise_options {
  activation fused = activation::none;
  bool operator==(const elementwise_options&) const = default;
};
struct concatenation_options {
  std::int32_t axis = 0;
  activation fused = activation::none;
  bool operator==(const concatenation_options&) const = default;
};
struct reshape_options {
  std::vector<std::int32_t> new_shape;  // empty: the shape comes from the second input or the output tensor
  bool operator==(const reshape_options&) const = default;
};
/// RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR.
struct resize_options {
  bool align_corners = false, half_pixel_centers = false;
  bool operator==(const resize_options&) const = default;
};
struct softmax_options {
  float beta = 1.0f;
  bool operator==(const softmax_options&) const = default;
};
/// MEAN.
struct reducer_options {
  bool keep_dims = false;
  bool operator==(const reducer_options&) const = default;
};
/// LOGISTIC, RELU, RELU6, HARD_SWISH, PAD, DEQUANTIZE, QUANTIZE.
struct no_options {
  bool operator==(const no_options&) const = default;
};
/// squeeze_excitation and attention_gate: how the summary was pooled (AVERAGE_POOL_2D or MEAN over the whole map)
/// and the fused activation of each 1x1 convolution after it, in order (a LOGISTIC follows the last).
struct excitation_options {
  builtin pool = builtin::average_pool_2d;
  std::vector<activation> convolutions;
  bool operator==(const excitation_options&) const = default;
};

using op_options = std::variant<no_options, conv2d_options, depthwise_options, transpose_conv_options, pool2d_options,
                                fully_connected_options, elementwise_options, concatenation_options, reshape_options,
                                resize_options, softmax_options, reducer_options, excitation_options>;

/// One operator. Tensor indices are into the subgraph's tensors; -1 marks an omitted optional input.
struct operation {
  builtin op = builtin::add;
  std::vector<std::int32_t> inputs, outputs;
  op_options options;
};

struct subgraph {
  std::string name;
  std::vector<tensor> tensors;
  std::vector<std::int32_t> inputs, outputs;
  std::vector<operation> operators;
};

/// A read model. Its buffers view the bytes it was read from: keep those alive while it is used.
struct model {
  std::uint32_t version = 0;
  std::string description;
  std::vector<operator_code> operator_codes;
  std::vector<subgraph> subgraphs;
  std::vector<buffer> buffers;
};

/// A value or the reason there is none. The importer's stages report bad input this way, never by crashing.
template <class T>
class result {
 public:
  result(T value) : value_(std::move(value)) {}
  static result failure(std::string message) {
    result r;
    r.error_ = std::move(message);
    return r;
  }
  bool ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const std::string& error() const noexcept { return error_; }

 private:
  result() = default;
  std::optional<T> value_;
  std::string error_;
};

}  // namespace mosaiq::tflite
