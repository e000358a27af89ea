// The importer's last stage: a graph (after the pattern passes) -> the layer list of a static mosaiq::network,
// then (a) a C++ header that spells it, one layer per line with the source tensor names as comments, and (b) its
// weights. A quantized graph gives the weights blob its network::load reads (the layout network::save writes:
// header naming the element type, rounding, input shape and every layer's kind, output shape and payload size, then
// the input quantization and each layer's weight fields in order). A float graph lowers to the same layer list (one
// lowering: only the payloads differ) and gives the float weights file tools::load_float_weights reads
// (tools/float_blob.hpp), which a calibrator quantizes on images into the weights blob (cmake/MosaiqModel.cmake).
//
// Branches become taps and froms: a tensor read anywhere but as the current tensor of the very next layer is
// tapped right after it is made (as "t<file tensor index>"), and a layer whose input is not the current tensor
// starts with a from. ADD and MUL are commutative in TFLite's quantized arithmetic, so either operand may be the
// current one. A graph with several outputs keeps them all: run()'s output is the one the last op makes, each other
// becomes an output layer (`layers::output<"t<index>">`) right after its producer, read after the run with
// network::output_view. Ops that contribute to no output are left out. Anything the network vocabulary cannot
// express is a failed result naming the operator index, its op and the reason.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mosaiq/tflite/graph.hpp"

namespace mosaiq::tflite {

/// One layer of the emitted network.
struct emitted_layer {
  std::string kind;                     // the layer's kind as network blobs name it ("conv2d", "tap", ...)
  std::string spelling;                 // the C++ type, e.g. mosaiq::layers::pointwise<{.out_channels = 8}>
  std::string comment;                  // where it comes from: operator index, op name, tensor names and shapes
  std::array<std::int32_t, 3> shape{};  // output height, width, channels (tap, from: the tensor they name)
  std::vector<std::uint8_t> payload;    // the weight fields, in the order and layout network::save writes them
  /// Float graphs: a conv-like layer's float filter (in the quantized filter's layout) and bias, the payload empty.
  std::vector<float> float_filter{}, float_bias{};
};

struct emitted_network {
  element_type element = element_type::uint8;  // uint8 or int8
  bool from_float = false;                     // lowered from a float graph: float weights, no quantization yet
  /// A float graph for TFLite's 16x8 mode (lower_float_16x8): the int8 network's layers, int16 activations
  /// (`mosaiq::i16` as the header's element), int8 filters and int64 biases from the calibrator.
  bool sixteen_by_eight = false;
  std::array<std::int32_t, 3> input_shape{};
  float input_scale = 1.0f;
  std::int32_t input_zero_point = 0;
  std::string input_comment;
  std::string output_comment;  // run()'s output: the tensor the last layer makes, its name, shape, quantization
  /// The graph's other outputs, each an output layer `layers::output<name>` after the layer that makes it.
  struct extra_output {
    std::string name;     // the output layer's name ("t<file tensor index>")
    std::string comment;  // the tensor's name, shape and quantization in the file
  };
  std::vector<extra_output> extra_outputs;
  std::vector<emitted_layer> layers;
  /// Facts a user should read about this model's import (printed by mosaiq-import), e.g. rounding deviations.
  std::vector<std::string> notes;
};

/// Lowers a graph whose activations are uint8 or int8 (TFLite-quantized: every scale and zero point is kept as the
/// file gives it). Run apply_quantized_patterns first.
result<emitted_network> lower_quantized(const graph& g);

/// Lowers a float32 graph to the layer list lower_quantized would give the same graph quantized, for a network of
/// `element` (uint8 or int8): float weights (float16 widened), no quantization (calibration chooses it).
result<emitted_network> lower_float(const graph& g, element_type element);

/// Lowers a float32 graph for a 16x8 (i16) network: lower_float's int8 layer list, which a 16x8 network runs with
/// int16 activations (net/executor_16x8.hpp). A layer kind without a 16x8 executor is refused, named with its source.
result<emitted_network> lower_float_16x8(const graph& g);

/// Whether a 16x8 network takes layers of `kind` (network blobs' names: "conv2d", "tap", ...): the kinds with a
/// 16x8 executor (net/executor_16x8.hpp's has_16x8_executor; the importer builds no network type to ask, and
/// tflite_import_test checks the two agree) and the layers that only name tensors.
bool has_16x8_layer(std::string_view kind);

/// The pattern passes that lead to layers mosaiq has: activation fusion (and, for float graphs, batch norm folding
/// and hard-swish recognition). Squeeze-and-excitation blocks stay as their ops (pool, 1x1s, logistic, mul), which
/// are layers themselves.
void apply_emitter_patterns(graph& g);

/// What the header's network is built for beyond the model itself.
struct header_options {
  /// Most threads a run uses (`mosaiq::input<...>::with_max_threads<N>`); the arena holds a workspace slice per
  /// thread. The weights blob does not depend on it.
  int max_threads = 1;
  static constexpr int max_supported_threads = 64;
};

/// The header text: `namespace <name> { using network = mosaiq::network<...>; }` plus the blob's file name.
std::string emit_header(const emitted_network& net, const std::string& name, const std::string& source,
                        const std::string& blob_name, const header_options& options = {});

/// The weights blob network::load reads for the network emit_header spells.
std::vector<std::uint8_t> emit_blob(const emitted_network& net);

/// The float weights file of a network lowered from a float graph (layout in tools/float_blob.hpp).
std::vector<std::uint8_t> emit_float_weights(const emitted_network& net);

/// A name usable as a C++ namespace ("selfie-256" -> "selfie_256"; a leading digit gets a "model_" prefix).
std::string identifier_from(const std::string& text);

}  // namespace mosaiq::tflite
