// Batch-norm folding into a preceding depthwise convolution (any kernel, stride, dilation and
// depth multiplier), in float, before quantization:
//   w'[.., oc] = w[.., oc] * s[oc],  b'[oc] = (b[oc] - mean[oc]) * s[oc] + beta[oc],
//   s[oc] = gamma[oc] / sqrt(var[oc] + eps).
// Dilation and stride do not enter: BN scales each output channel, and every tap of output channel
// oc sits at (fy * KW + fx) * C*M + oc in the [KH][KW][C*M] filter.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>

#include "mosaiq/core/error.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools {

/// Per-channel batch-norm statistics and affine parameters (one entry per output channel).
struct batchnorm_params {
  std::span<const float> gamma, beta, mean, variance;
  float epsilon = 1e-3f;
};

/// Folds `bn` into a depthwise filter [KH][KW][C*M] and bias (C*M), in place. `bias` must have
/// C*M entries (a layer without bias starts from zeros). Returns false (reported through
/// mosaiq::require) when sizes disagree or a variance + epsilon is not positive.
inline bool fold_batchnorm_into_depthwise(std::span<float> filter, std::span<float> bias, const batchnorm_params& bn) {
  const std::size_t channels = bias.size();
  if (!require(channels > 0 && filter.size() % channels == 0, errc::shape_mismatch,
               "batchnorm fold: filter size must be a multiple of the output channels (bias size)") ||
      !require(bn.gamma.size() == channels && bn.beta.size() == channels && bn.mean.size() == channels &&
                   bn.variance.size() == channels,
               errc::shape_mismatch, "batchnorm fold: gamma, beta, mean and variance need one entry per channel"))
    return false;
  for (std::size_t c = 0; c < channels; ++c)
    if (!require(bn.variance[c] + bn.epsilon > 0.0f, errc::invalid_argument,
                 "batchnorm fold: variance + epsilon must be positive"))
      return false;
  for (std::size_t c = 0; c < channels; ++c) {
    // Double for the per-channel factor: the fold should not add rounding of its own.
    const double scale = static_cast<double>(bn.gamma[c]) / std::sqrt(static_cast<double>(bn.variance[c]) + bn.epsilon);
    for (std::size_t i = c; i < filter.size(); i += channels)
      filter[i] = static_cast<float>(static_cast<double>(filter[i]) * scale);
    bias[c] = static_cast<float>((static_cast<double>(bias[c]) - bn.mean[c]) * scale + bn.beta[c]);
  }
  return true;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools
