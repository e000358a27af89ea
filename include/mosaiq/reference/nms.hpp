// Reference TFLite NMS (NON_MAX_SUPPRESSION_V4 / V5): TF's candidate-queue algorithm written as plainly as
// possible, with a linear search for the best candidate instead of a heap and std::min / std::max as TFLite's
// ComputeIntersectionOverUnion writes them. The oracle that nms<nms_rule::tflite>() is proven equal to.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mosaiq/ops/priors.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

/// TFLite's IoU of boxes given as two diagonal corners each, (xmin, ymin) = (x1, y1) and (xmax, ymax) = (x2, y2)
/// in any order: 0 when either area is <= 0.
inline float tflite_nms_iou(const corner_box& i, const corner_box& j) {
  const float i_ymin = std::min(i.ymin, i.ymax), i_ymax = std::max(i.ymin, i.ymax);
  const float i_xmin = std::min(i.xmin, i.xmax), i_xmax = std::max(i.xmin, i.xmax);
  const float j_ymin = std::min(j.ymin, j.ymax), j_ymax = std::max(j.ymin, j.ymax);
  const float j_xmin = std::min(j.xmin, j.xmax), j_xmax = std::max(j.xmin, j.xmax);
  const float area_i = (i_ymax - i_ymin) * (i_xmax - i_xmin);
  const float area_j = (j_ymax - j_ymin) * (j_xmax - j_xmin);
  if (area_i <= 0 || area_j <= 0) return 0.0f;
  const float inter_h = std::max(std::min(i_ymax, j_ymax) - std::max(i_ymin, j_ymin), 0.0f);
  const float inter_w = std::max(std::min(i_xmax, j_xmax) - std::max(i_xmin, j_xmin), 0.0f);
  const float inter = inter_h * inter_w;
  return inter / (area_i + area_j - inter);
}

struct tflite_nms_result {
  std::vector<std::uint32_t> indices;
  std::vector<float> scores;
};

/// NON_MAX_SUPPRESSION_V5 (V4: sigma 0) on float boxes and scores, up to max_output_size selections.
inline tflite_nms_result tflite_nms(std::span<const corner_box> boxes, std::span<const float> scores,
                                    std::size_t max_output_size, float iou_threshold, float score_threshold,
                                    float sigma) {
  struct candidate {
    std::uint32_t index;
    float score;
    std::size_t suppress_begin;
  };
  std::vector<candidate> queue;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    if (scores[i] > score_threshold) queue.push_back({static_cast<std::uint32_t>(i), scores[i], 0});
  tflite_nms_result result;
  const float scale = sigma > 0.0f ? -0.5f / sigma : 0.0f;
  while (result.indices.size() < max_output_size && !queue.empty()) {
    auto best = queue.begin();
    for (auto it = queue.begin(); it != queue.end(); ++it)
      if (it->score > best->score || (it->score == best->score && it->index < best->index)) best = it;
    candidate next = *best;
    queue.erase(best);
    const float original = next.score;
    bool hard = false;
    for (std::size_t j = result.indices.size(); j-- > next.suppress_begin;) {
      const float iou = tflite_nms_iou(boxes[next.index], boxes[result.indices[j]]);
      if (iou >= iou_threshold) {
        hard = true;
        break;
      }
      if (sigma > 0.0f) next.score = next.score * std::exp(scale * iou * iou);
      if (next.score <= score_threshold) break;
    }
    next.suppress_begin = result.indices.size();
    if (hard) continue;
    if (next.score == original) {
      result.indices.push_back(next.index);
      result.scores.push_back(next.score);
    } else if (next.score > score_threshold) {
      queue.push_back(next);
    }
  }
  return result;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
