// How a resize maps output pixels to input coordinates. Shared by the bilinear and nearest ops, the
// reference ones and the SIMD ones.
#pragma once

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// The three coordinate conventions of TensorFlow / TFLite (flags align_corners, half_pixel_centers).
/// `scale` is in/out, except align_corners with out > 1, where it is (in-1)/(out-1).
enum class resize_mode {
  /// align_corners = false, half_pixel_centers = false (TF1 default, ONNX "asymmetric"): x = o * scale.
  legacy,
  /// half_pixel_centers = true (TF2, Keras UpSampling2D, PyTorch align_corners=False): x = (o + 0.5) * scale - 0.5.
  half_pixel,
  /// align_corners = true: x = o * (in-1)/(out-1); with out == 1 the legacy scale applies, as in TFLite and XNNPACK.
  align_corners,
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
