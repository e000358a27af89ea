// Box decoding for SSD-style detectors: Caffe DecodeBBox (CORNER, CENTER_SIZE, CORNER_SIZE, with variances or
// variance_encoded_in_target), TF's faster_rcnn_box_coder as TFLite's detection postprocess applies it, and MediaPipe's
// TensorsToDetections box and keypoint decoding (BlazeFace-style heads). Location
// tensors are float or quantized u8/i8; quantized values are dequantized when a box is decoded, so only the
// candidates that survive the score threshold are ever touched.
#pragma once

#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/priors.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Element types a location or score tensor may have.
template <class T>
concept tensor_element = std::same_as<T, float> || quantized_element<T>;

/// A flat read-only tensor with its quantization (ignored for float).
template <tensor_element T>
struct input_tensor {
  std::span<const T> values;
  quant_params quant{};

  float operator[](std::size_t i) const noexcept {
    if constexpr (std::same_as<T, float>)
      return values[i];
    else
      return dequantize_value(values[i], quant);
  }
  std::array<float, 4> four(std::size_t first) const noexcept {
    return {(*this)[first], (*this)[first + 1], (*this)[first + 2], (*this)[first + 3]};
  }
};

/// Caffe PriorBoxParameter.CodeType.
enum class box_code : std::uint8_t { corner, center_size, corner_size };

/// Caffe BBoxSize (normalized): 0 for inverted boxes, else width * height (NaN propagates).
constexpr float box_area(const corner_box& b) noexcept {
  if (b.xmax < b.xmin || b.ymax < b.ymin) return 0.0f;
  return (b.xmax - b.xmin) * (b.ymax - b.ymin);
}

/// Caffe DecodeBBox (bbox_util.cpp) in its float arithmetic; no clipping (DetectionOutput passes clip_bbox = false).
/// A degenerate prior (Caffe CHECKs width, height > 0) decodes to a degenerate box instead of aborting.
inline corner_box decode_caffe_box(box_code code, const prior_box& prior, const std::array<float, 4>& loc,
                                   bool variance_encoded_in_target) noexcept {
  const corner_box& p = prior.box;
  const std::array<float, 4> v =
      variance_encoded_in_target ? std::array<float, 4>{1.0f, 1.0f, 1.0f, 1.0f} : prior.variance;
  switch (code) {
    case box_code::corner:
      if (variance_encoded_in_target) return {p.xmin + loc[0], p.ymin + loc[1], p.xmax + loc[2], p.ymax + loc[3]};
      return {p.xmin + v[0] * loc[0], p.ymin + v[1] * loc[1], p.xmax + v[2] * loc[2], p.ymax + v[3] * loc[3]};
    case box_code::corner_size: {
      const float width = p.xmax - p.xmin, height = p.ymax - p.ymin;
      if (variance_encoded_in_target)
        return {p.xmin + loc[0] * width, p.ymin + loc[1] * height, p.xmax + loc[2] * width, p.ymax + loc[3] * height};
      return {p.xmin + v[0] * loc[0] * width, p.ymin + v[1] * loc[1] * height, p.xmax + v[2] * loc[2] * width,
              p.ymax + v[3] * loc[3] * height};
    }
    case box_code::center_size:
    default: {
      const float width = p.xmax - p.xmin, height = p.ymax - p.ymin;
      const float center_x = (p.xmin + p.xmax) / 2.0f, center_y = (p.ymin + p.ymax) / 2.0f;
      float box_cx, box_cy, box_w, box_h;
      if (variance_encoded_in_target) {
        box_cx = loc[0] * width + center_x;
        box_cy = loc[1] * height + center_y;
        box_w = std::exp(loc[2]) * width;
        box_h = std::exp(loc[3]) * height;
      } else {
        box_cx = v[0] * loc[0] * width + center_x;
        box_cy = v[1] * loc[1] * height + center_y;
        box_w = std::exp(v[2] * loc[2]) * width;
        box_h = std::exp(v[3] * loc[3]) * height;
      }
      // Caffe divides by 2. (double) and stores a float: the same value as the float ops (53 >= 2*24 + 2).
      return {box_cx - box_w / 2.0f, box_cy - box_h / 2.0f, box_cx + box_w / 2.0f, box_cy + box_h / 2.0f};
    }
  }
}

/// TF faster_rcnn_box_coder scales (y, x, h, w).
struct box_coder_scales {
  float y = 10.0f, x = 10.0f, h = 5.0f, w = 5.0f;
};

/// TFLite DecodeCenterSizeBoxes: encodings [ty, tx, th, tw], anchors [yc, xc, h, w]; computed in double and stored as
/// float, unclipped. Returned as a corner_box (xmin, ymin, xmax, ymax); TFLite outputs them as [ymin, xmin, ymax,
/// xmax].
inline corner_box decode_tf_box(const center_box& anchor, const std::array<float, 4>& encoding,
                                box_coder_scales scales) noexcept {
  const double ycenter = static_cast<double>(encoding[0]) / scales.y * anchor.height + anchor.ycenter;
  const double xcenter = static_cast<double>(encoding[1]) / scales.x * anchor.width + anchor.xcenter;
  const double half_h = 0.5 * std::exp(static_cast<double>(encoding[2]) / scales.h) * anchor.height;
  const double half_w = 0.5 * std::exp(static_cast<double>(encoding[3]) / scales.w) * anchor.width;
  return {static_cast<float>(xcenter - half_w), static_cast<float>(ycenter - half_h),
          static_cast<float>(xcenter + half_w), static_cast<float>(ycenter + half_h)};
}

/// A decoded keypoint (normalized image coordinates).
struct keypoint {
  float x = 0, y = 0;
  friend constexpr bool operator==(const keypoint&, const keypoint&) = default;
};

/// Which of MediaPipe's TensorsToDetections options shape the raw values.
struct mediapipe_box_layout {
  bool reverse_output_order = false;           ///< raw box [x, y, w, h] and keypoints (x, y); else [y, x, h, w], (y, x)
  bool apply_exponential_on_box_size = false;  ///< sizes exp(t / scale) * anchor; else t / scale * anchor
};

/// MediaPipe TensorsToDetections DecodeBoxes, in its float arithmetic: centre = raw / scale * anchor size + anchor
/// centre, unclipped. An inverted box (negative size) is returned as decoded; MediaPipe drops such detections later.
inline corner_box decode_mediapipe_box(const center_box& anchor, const std::array<float, 4>& raw,
                                       box_coder_scales scales, mediapipe_box_layout layout) noexcept {
  const bool reverse = layout.reverse_output_order;
  const float raw_y = reverse ? raw[1] : raw[0], raw_x = reverse ? raw[0] : raw[1];
  const float raw_h = reverse ? raw[3] : raw[2], raw_w = reverse ? raw[2] : raw[3];
  const float x_center = raw_x / scales.x * anchor.width + anchor.xcenter;
  const float y_center = raw_y / scales.y * anchor.height + anchor.ycenter;
  const float h = layout.apply_exponential_on_box_size ? std::exp(raw_h / scales.h) * anchor.height
                                                       : raw_h / scales.h * anchor.height;
  const float w = layout.apply_exponential_on_box_size ? std::exp(raw_w / scales.w) * anchor.width
                                                       : raw_w / scales.w * anchor.width;
  return {x_center - w / 2.0f, y_center - h / 2.0f, x_center + w / 2.0f, y_center + h / 2.0f};
}

/// One keypoint as MediaPipe decodes it (float): raw / scale * anchor size + anchor centre, per axis. `first` and
/// `second` are the raw pair as stored: (y, x), or (x, y) with reverse_output_order.
inline keypoint decode_keypoint(const center_box& anchor, float first, float second, box_coder_scales scales,
                                bool reverse_output_order) noexcept {
  const float raw_y = reverse_output_order ? second : first, raw_x = reverse_output_order ? first : second;
  return {raw_x / scales.x * anchor.width + anchor.xcenter, raw_y / scales.y * anchor.height + anchor.ycenter};
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
