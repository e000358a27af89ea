// The importer's third stage: passes that rewrite a neutral graph into the layer vocabulary of mosaiq's static
// networks. Each pass rewrites only where the result computes the same values: every tensor a pattern swallows
// must have exactly one reader (the pattern's next op) and must not be a graph output. A rewritten op keeps the
// ops it replaced in graph_op::parts (with their weights' tensors), so nothing read from the file is lost.
#pragma once

#include <cstddef>
#include <string>

#include "mosaiq/tflite/graph.hpp"

namespace mosaiq::tflite {

/// conv/depthwise/fully-connected -> MUL by a per-channel constant -> ADD of a per-channel constant, in float
/// graphs: the scale goes into the weights and bias, the shift into the bias (new constant tensors appended to
/// the graph, named "<weights>/batch_norm"), an activation fused into the ADD moves to the convolution.
std::size_t fold_batch_norm(graph& g);

/// x * relu6(x + 3) / 6 in float graphs -> HARD_SWISH: ADD of the scalar 3 (with RELU6 fused, or then a RELU6),
/// then MUL by x and by the scalar 1/6 in any association ((x*r)*c, x*(r*c), (x*c)*r and operand orders).
std::size_t recognise_hard_swish(graph& g);

/// A RELU or RELU6 op after a conv/depthwise/fully-connected op without fused activation -> that activation
/// fused; quantized only where the activation's output keeps the convolution output's quantization.
std::size_t fuse_activations(graph& g);

/// AVERAGE_POOL_2D over the whole map (or MEAN over H and W, keep_dims) -> one or two 1x1 convolutions on the
/// 1x1 map -> LOGISTIC -> MUL: squeeze_excitation when the MUL scales the pooled tensor itself, attention_gate
/// when it scales another tensor of the same channel count (the selfie decoder's and LR-ASPP head's gate).
/// Inputs of the block: scaled tensor, pooled tensor, then each convolution's weights and bias.
/// Run after fuse_activations, which fuses the RELU between the convolutions.
std::size_t recognise_excitation(graph& g);

struct pattern_counts {
  std::size_t batch_norm_folds = 0, hard_swish_decomposed = 0, hard_swish_ops = 0, activation_fusions = 0,
              squeeze_excitations = 0, attention_gates = 0;
  bool operator==(const pattern_counts&) const = default;
};

/// All passes in the order they depend on each other (batch norm and hard-swish first, which expose
/// activations, then activation fusion, then excitation blocks). hard_swish_ops counts HARD_SWISH ops after.
pattern_counts apply_patterns(graph& g);

/// "batch norm folds 0, hard-swish 11 (0 decomposed), ...".
std::string to_string(const pattern_counts& counts);

}  // namespace mosaiq::tflite
