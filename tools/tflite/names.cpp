// TFLite's names for its builtin operator codes, element types and option enums, for messages and summaries.
#include <array>
#include <string>
#include <string_view>

#include "mosaiq/tflite/model.hpp"

namespace mosaiq::tflite {
namespace {

// BuiltinOperator 0..161, in code order.
constexpr std::array<std::string_view, 162> builtin_names{"ADD",
                                                          "AVERAGE_POOL_2D",
                                                          "CONCATENATION",
                                                          "CONV_2D",
                                                          "DEPTHWISE_CONV_2D",
                                                          "DEPTH_TO_SPACE",
                                                          "DEQUANTIZE",
                                                          "EMBEDDING_LOOKUP",
                                                          "FLOOR",
                                                          "FULLY_CONNECTED",
                                                          "HASHTABLE_LOOKUP",
                                                          "L2_NORMALIZATION",
                                                          "L2_POOL_2D",
                                                          "LOCAL_RESPONSE_NORMALIZATION",
                                                          "LOGISTIC",
                                                          "LSH_PROJECTION",
                                                          "LSTM",
                                                          "MAX_POOL_2D",
                                                          "MUL",
                                                          "RELU",
                                                          "RELU_N1_TO_1",
                                                          "RELU6",
                                                          "RESHAPE",
                                                          "RESIZE_BILINEAR",
                                                          "RNN",
                                                          "SOFTMAX",
                                                          "SPACE_TO_DEPTH",
                                                          "SVDF",
                                                          "TANH",
                                                          "CONCAT_EMBEDDINGS",
                                                          "SKIP_GRAM",
                                                          "CALL",
                                                          "CUSTOM",
                                                          "EMBEDDING_LOOKUP_SPARSE",
                                                          "PAD",
                                                          "UNIDIRECTIONAL_SEQUENCE_RNN",
                                                          "GATHER",
                                                          "BATCH_TO_SPACE_ND",
                                                          "SPACE_TO_BATCH_ND",
                                                          "TRANSPOSE",
                                                          "MEAN",
                                                          "SUB",
                                                          "DIV",
                                                          "SQUEEZE",
                                                          "UNIDIRECTIONAL_SEQUENCE_LSTM",
                                                          "STRIDED_SLICE",
                                                          "BIDIRECTIONAL_SEQUENCE_RNN",
                                                          "EXP",
                                                          "TOPK_V2",
                                                          "SPLIT",
                                                          "LOG_SOFTMAX",
                                                          "DELEGATE",
                                                          "BIDIRECTIONAL_SEQUENCE_LSTM",
                                                          "CAST",
                                                          "PRELU",
                                                          "MAXIMUM",
                                                          "ARG_MAX",
                                                          "MINIMUM",
                                                          "LESS",
                                                          "NEG",
                                                          "PADV2",
                                                          "GREATER",
                                                          "GREATER_EQUAL",
                                                          "LESS_EQUAL",
                                                          "SELECT",
                                                          "SLICE",
                                                          "SIN",
                                                          "TRANSPOSE_CONV",
                                                          "SPARSE_TO_DENSE",
                                                          "TILE",
                                                          "EXPAND_DIMS",
                                                          "EQUAL",
                                                          "NOT_EQUAL",
                                                          "LOG",
                                                          "SUM",
                                                          "SQRT",
                                                          "RSQRT",
                                                          "SHAPE",
                                                          "POW",
                                                          "ARG_MIN",
                                                          "FAKE_QUANT",
                                                          "REDUCE_PROD",
                                                          "REDUCE_MAX",
                                                          "PACK",
                                                          "LOGICAL_OR",
                                                          "ONE_HOT",
                                                          "LOGICAL_AND",
                                                          "LOGICAL_NOT",
                                                          "UNPACK",
                                                          "REDUCE_MIN",
                                                          "FLOOR_DIV",
                                                          "REDUCE_ANY",
                                                          "SQUARE",
                                                          "ZEROS_LIKE",
                                                          "FILL",
                                                          "FLOOR_MOD",
                                                          "RANGE",
                                                          "RESIZE_NEAREST_NEIGHBOR",
                                                          "LEAKY_RELU",
                                                          "SQUARED_DIFFERENCE",
                                                          "MIRROR_PAD",
                                                          "ABS",
                                                          "SPLIT_V",
                                                          "UNIQUE",
                                                          "CEIL",
                                                          "REVERSE_V2",
                                                          "ADD_N",
                                                          "GATHER_ND",
                                                          "COS",
                                                          "WHERE",
                                                          "RANK",
                                                          "ELU",
                                                          "REVERSE_SEQUENCE",
                                                          "MATRIX_DIAG",
                                                          "QUANTIZE",
                                                          "MATRIX_SET_DIAG",
                                                          "ROUND",
                                                          "HARD_SWISH",
                                                          "IF",
                                                          "WHILE",
                                                          "NON_MAX_SUPPRESSION_V4",
                                                          "NON_MAX_SUPPRESSION_V5",
                                                          "SCATTER_ND",
                                                          "SELECT_V2",
                                                          "DENSIFY",
                                                          "SEGMENT_SUM",
                                                          "BATCH_MATMUL",
                                                          "PLACEHOLDER_FOR_GREATER_OP_CODES",
                                                          "CUMSUM",
                                                          "CALL_ONCE",
                                                          "BROADCAST_TO",
                                                          "RFFT2D",
                                                          "CONV_3D",
                                                          "IMAG",
                                                          "REAL",
                                                          "COMPLEX_ABS",
                                                          "HASHTABLE",
                                                          "HASHTABLE_FIND",
                                                          "HASHTABLE_IMPORT",
                                                          "HASHTABLE_SIZE",
                                                          "REDUCE_ALL",
                                                          "CONV_3D_TRANSPOSE",
                                                          "VAR_HANDLE",
                                                          "READ_VARIABLE",
                                                          "ASSIGN_VARIABLE",
                                                          "BROADCAST_ARGS",
                                                          "RANDOM_STANDARD_NORMAL",
                                                          "BUCKETIZE",
                                                          "RANDOM_UNIFORM",
                                                          "MULTINOMIAL",
                                                          "GELU",
                                                          "DYNAMIC_UPDATE_SLICE",
                                                          "RELU_0_TO_1",
                                                          "UNSORTED_SEGMENT_PROD",
                                                          "UNSORTED_SEGMENT_MAX",
                                                          "UNSORTED_SEGMENT_SUM",
                                                          "ATAN2",
                                                          "UNSORTED_SEGMENT_MIN",
                                                          "SIGN",
                                                          "BITCAST",
                                                          "BITWISE_XOR",
                                                          "RIGHT_SHIFT"};

}  // namespace

std::string builtin_name(std::int32_t code) {
  if (code >= 0 && static_cast<std::size_t>(code) < builtin_names.size())
    return std::string(builtin_names[static_cast<std::size_t>(code)]);
  return "BUILTIN_" + std::to_string(code);
}

std::string builtin_name(builtin op) {
  if (op == builtin::convolution_2d_transpose_bias) return "Convolution2DTransposeBias";
  if (op == builtin::squeeze_excitation) return "SQUEEZE_EXCITATION";
  if (op == builtin::attention_gate) return "ATTENTION_GATE";
  return builtin_name(static_cast<std::int32_t>(op));
}

std::string_view to_string(element_type type) noexcept {
  switch (type) {
    case element_type::float32:
      return "float32";
    case element_type::float16:
      return "float16";
    case element_type::int32:
      return "int32";
    case element_type::uint8:
      return "uint8";
    case element_type::int8:
      return "int8";
  }
  return "unknown";
}

std::size_t element_bytes(element_type type) noexcept {
  switch (type) {
    case element_type::float32:
    case element_type::int32:
      return 4;
    case element_type::float16:
      return 2;
    case element_type::uint8:
    case element_type::int8:
      return 1;
  }
  return 0;
}

std::string_view to_string(padding value) noexcept { return value == padding::same ? "SAME" : "VALID"; }

std::string_view to_string(activation value) noexcept {
  switch (value) {
    case activation::none:
      return "NONE";
    case activation::relu:
      return "RELU";
    case activation::relu_n1_to_1:
      return "RELU_N1_TO_1";
    case activation::relu6:
      return "RELU6";
  }
  return "unknown";
}

}  // namespace mosaiq::tflite
