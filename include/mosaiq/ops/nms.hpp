// Non-maximum suppression and SSD detection post-processing with static memory:
//  * nms(): greedy NMS over user boxes + scores with Caffe-SSD / OpenCV NMSFast_ rules; nms<nms_rule>() picks the
//    Caffe or the TFLite NON_MAX_SUPPRESSION_V4/V5 rules (corners in either order, soft-NMS sigma) at compile time.
//  * detection_output<Cfg>: Caffe-SSD DetectionOutput (decode, per-class threshold, top_k, NMS with eta, keep_top_k).
//  * tflite_detection_postprocess<Cfg>: TFLite TFLite_Detection_PostProcess, fast (class-agnostic) and regular modes,
//    TFLite or MediaPipe box decoding, keypoints (BlazeFace-style heads), float or quantized anchors.
//  * soft_nms(): linear and gaussian Soft-NMS with OpenCV softNMSBoxes rules.
// Every buffer comes from a caller's scratch span whose size is a compile-time constant of the config (or a constexpr
// function of the box count); nothing allocates. Scores are compared with the threshold before anything else is done,
// in the quantized domain where the mapping is monotonic, so only candidates are dequantized and decoded.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/box_decode.hpp"
#include "mosaiq/ops/priors.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// "No limit" for top_k / keep_top_k (Caffe's -1).
inline constexpr std::size_t no_limit = std::numeric_limits<std::size_t>::max();

/// How scores are obtained from the score tensor.
enum class score_activation : std::uint8_t {
  none,      ///< the tensor already holds probabilities (Caffe: a Softmax layer precedes DetectionOutput)
  softmax,   ///< logits; softmax over all classes of a prior (background included)
  logistic,  ///< logits; sigmoid per element
};

/// Scores, row-major [boxes][classes], float or quantized.
template <tensor_element T>
struct score_tensor {
  std::span<const T> values;
  quant_params quant{};
  score_activation activation = score_activation::none;
};

namespace detail {

inline constexpr std::size_t scratch_alignment = 64;

constexpr std::size_t round_up(std::size_t n, std::size_t to) noexcept { return (n + to - 1) / to * to; }

/// Bytes one array of n Ts takes in a scratch layout.
template <class T>
constexpr std::size_t scratch_array_bytes(std::size_t n) noexcept {
  return round_up(n * sizeof(T), scratch_alignment);
}

/// Carves aligned arrays out of a caller's scratch span; fails (nullptr, ok() false) instead of overrunning it.
class scratch_arena {
 public:
  explicit scratch_arena(std::span<std::byte> bytes) noexcept : bytes_(bytes) {
    const auto address = reinterpret_cast<std::uintptr_t>(bytes.data());
    used_ = round_up(address, scratch_alignment) - address;
  }
  template <class T>
  T* take(std::size_t n) noexcept {
    const std::size_t size = scratch_array_bytes<T>(n);
    if (!ok_ || used_ > bytes_.size() || bytes_.size() - used_ < size) {
      ok_ = false;
      return nullptr;
    }
    T* result = reinterpret_cast<T*>(bytes_.data() + used_);
    used_ += size;
    return result;
  }
  bool ok() const noexcept { return ok_; }

 private:
  std::span<std::byte> bytes_;
  std::size_t used_ = 0;
  bool ok_ = true;
};

/// A score and the box (prior / anchor) it belongs to.
struct scored_index {
  float score;
  std::uint32_t index;
};

/// Descending score, ties to the lower index: the order std::stable_sort gives Caffe, OpenCV and TFLite. A total
/// order on non-NaN scores, so the unstable std algorithms reproduce it without allocating.
constexpr bool ranks_before(const scored_index& a, const scored_index& b) noexcept {
  return a.score > b.score || (a.score == b.score && a.index < b.index);
}

/// The kept boxes of a greedy NMS as structure-of-arrays, so one candidate is tested against a block of them with
/// vector instructions.
struct kept_boxes {
  float* xmin = nullptr;
  float* ymin = nullptr;
  float* xmax = nullptr;
  float* ymax = nullptr;
  float* area = nullptr;
  std::size_t count = 0;

  static constexpr std::size_t scratch_bytes(std::size_t capacity) noexcept {
    return 5 * scratch_array_bytes<float>(capacity);
  }
  bool take(scratch_arena& arena, std::size_t capacity) noexcept {
    xmin = arena.take<float>(capacity);
    ymin = arena.take<float>(capacity);
    xmax = arena.take<float>(capacity);
    ymax = arena.take<float>(capacity);
    area = arena.take<float>(capacity);
    count = 0;
    return arena.ok();
  }
  void push(const corner_box& b, float box_area_value) noexcept {
    xmin[count] = b.xmin;
    ymin[count] = b.ymin;
    xmax[count] = b.xmax;
    ymax[count] = b.ymax;
    area[count] = box_area_value;
    ++count;
  }
};

/// Kept boxes are tested in blocks of this many; a block is computed branch-free, then the loop may exit early.
inline constexpr std::size_t iou_block = 16;

/// Caffe JaccardOverlap(candidate, kept) (normalized) for every kept box: suppressed iff some overlap is not
/// <= threshold. Intersections that are empty or inverted give 0; max/min keep Caffe's argument order, so a NaN
/// coordinate behaves as in Caffe/OpenCV (a NaN kept box suppresses everything after it).
inline bool caffe_suppressed(const kept_boxes& kept, const corner_box& c, float c_area, float threshold) noexcept {
  for (std::size_t start = 0; start < kept.count; start += iou_block) {
    const std::size_t end = std::min(kept.count, start + iou_block);
    int any = 0;
    for (std::size_t i = start; i < end; ++i) {
      const float ix0 = c.xmin < kept.xmin[i] ? kept.xmin[i] : c.xmin;
      const float iy0 = c.ymin < kept.ymin[i] ? kept.ymin[i] : c.ymin;
      const float ix1 = kept.xmax[i] < c.xmax ? kept.xmax[i] : c.xmax;
      const float iy1 = kept.ymax[i] < c.ymax ? kept.ymax[i] : c.ymax;
      const float iw = ix1 - ix0, ih = iy1 - iy0;
      const float inter = iw * ih;
      const float overlap = inter / (c_area + kept.area[i] - inter);
      any |= static_cast<int>((iw > 0) & (ih > 0) & !(overlap <= threshold));
    }
    if (any) return true;
  }
  return false;
}

/// iou_block kept boxes as structure-of-arrays: a candidate against a whole block is one fixed-length loop the
/// compiler vectorizes. Unused lanes hold an empty box (xmin +inf, xmax -inf) whose intersection is never positive.
struct box_block {
  std::array<float, iou_block> xmin, ymin, xmax, ymax, area;

  void clear() noexcept {
    xmin.fill(std::numeric_limits<float>::infinity());
    ymin.fill(std::numeric_limits<float>::infinity());
    xmax.fill(-std::numeric_limits<float>::infinity());
    ymax.fill(-std::numeric_limits<float>::infinity());
    area.fill(0.0f);
  }
  void set(std::size_t lane, const corner_box& b, float box_area_value) noexcept {
    xmin[lane] = b.xmin;
    ymin[lane] = b.ymin;
    xmax[lane] = b.xmax;
    ymax[lane] = b.ymax;
    area[lane] = box_area_value;
  }
  corner_box box(std::size_t lane) const noexcept { return {xmin[lane], ymin[lane], xmax[lane], ymax[lane]}; }

  /// caffe_suppressed's test against every lane.
  bool caffe_suppresses(const corner_box& c, float c_area, float threshold) const noexcept {
    int any = 0;
    for (std::size_t i = 0; i < iou_block; ++i) {
      const float ix0 = c.xmin < xmin[i] ? xmin[i] : c.xmin;
      const float iy0 = c.ymin < ymin[i] ? ymin[i] : c.ymin;
      const float ix1 = xmax[i] < c.xmax ? xmax[i] : c.xmax;
      const float iy1 = ymax[i] < c.ymax ? ymax[i] : c.ymax;
      const float iw = ix1 - ix0, ih = iy1 - iy0;
      const float inter = iw * ih;
      const float overlap = inter / (c_area + area[i] - inter);
      any |= static_cast<int>((iw > 0) & (ih > 0) & !(overlap <= threshold));
    }
    return any != 0;
  }
};

/// TFLite ComputeIntersectionOverUnion(kept, candidate): areas <= 0 give 0, sides clamped at 0; suppressed iff some
/// IoU > threshold (NaN never suppresses). Areas here are the plain products (kept.area holds them).
inline bool tflite_suppressed(const kept_boxes& kept, const corner_box& c, float c_area, float threshold) noexcept {
  if (!(c_area > 0)) return false;
  for (std::size_t start = 0; start < kept.count; start += iou_block) {
    const std::size_t end = std::min(kept.count, start + iou_block);
    int any = 0;
    for (std::size_t i = start; i < end; ++i) {
      const float iy0 = kept.ymin[i] < c.ymin ? c.ymin : kept.ymin[i];
      const float ix0 = kept.xmin[i] < c.xmin ? c.xmin : kept.xmin[i];
      const float iy1 = c.ymax < kept.ymax[i] ? c.ymax : kept.ymax[i];
      const float ix1 = c.xmax < kept.xmax[i] ? c.xmax : kept.xmax[i];
      const float ih = iy1 - iy0 < 0 ? 0.0f : iy1 - iy0;
      const float iw = ix1 - ix0 < 0 ? 0.0f : ix1 - ix0;
      const float inter = ih * iw;
      const float iou = inter / (kept.area[i] + c_area - inter);
      any |= static_cast<int>((kept.area[i] > 0) & (iou > threshold));
    }
    if (any) return true;
  }
  return false;
}

constexpr float tflite_area(const corner_box& b) noexcept { return (b.ymax - b.ymin) * (b.xmax - b.xmin); }

/// Caffe's normalized JaccardOverlap of two boxes (0 for empty, inverted or zero-area intersections).
inline float caffe_iou(const corner_box& a, const corner_box& b) noexcept {
  const float ix0 = a.xmin < b.xmin ? b.xmin : a.xmin, iy0 = a.ymin < b.ymin ? b.ymin : a.ymin;
  const float ix1 = b.xmax < a.xmax ? b.xmax : a.xmax, iy1 = b.ymax < a.ymax ? b.ymax : a.ymax;
  const float iw = ix1 - ix0, ih = iy1 - iy0;
  if (!(iw > 0 && ih > 0)) return 0.0f;
  const float inter = iw * ih;
  return inter / (box_area(a) + box_area(b) - inter);
}

/// A (score, index) pair as one integer whose descending order is ranks_before's: the score's bits mapped so that
/// unsigned order is float order, above the complemented index (ties to the lower index). -0 is folded onto +0,
/// with which it compares equal. Not for NaN scores (thresholds drop them first).
inline std::uint64_t rank_key(float score, std::uint32_t index) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(score + 0.0f);
  const std::uint32_t ordered = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  return (std::uint64_t{ordered} << 32) | static_cast<std::uint32_t>(~index);
}
constexpr std::uint32_t rank_key_index(std::uint64_t key) noexcept { return ~static_cast<std::uint32_t>(key); }
/// The ordered score bits of a key: compare these to compare scores.
constexpr std::uint32_t rank_key_score_bits(std::uint64_t key) noexcept {
  return static_cast<std::uint32_t>(key >> 32);
}
inline float rank_key_score(std::uint64_t key) noexcept {
  const std::uint32_t ordered = rank_key_score_bits(key);
  return std::bit_cast<float>((ordered & 0x80000000u) != 0 ? ordered & 0x7fffffffu : ~ordered);
}

/// The best top_k keys offered so far, without a heap: keys are appended until the buffer is full, then an
/// nth_element cuts it back to top_k and raises the floor above the top_k-th key, so later keys mostly fail one
/// compare. Keys are unique.
struct class_selection {
  std::uint64_t* keys;
  std::uint32_t count;
  std::uint64_t floor;  ///< keys below this cannot make the top_k

  /// Buffer length for a top_k over `boxes` offers: a quarter of slack between cuts, never more than all boxes.
  static constexpr std::size_t capacity_for(std::size_t top_k, std::size_t boxes) noexcept {
    return std::min(boxes, top_k + top_k / 4 + 16);
  }
  /// Returns whether this offer filled the buffer and raised the floor.
  bool offer(std::uint64_t key, std::size_t top_k, std::size_t capacity) noexcept {
    if (key < floor) return false;
    keys[count++] = key;
    if (count < capacity) return false;
    cut(top_k);
    floor = keys[top_k - 1] + 1;
    return true;
  }
  /// Leaves the best min(count, top_k) keys as a max-heap (they are taken in order, often only a few); returns how
  /// many.
  std::uint32_t finish(std::size_t top_k) noexcept {
    if (count > top_k) cut(top_k);
    std::make_heap(keys, keys + count);
    return count;
  }

 private:
  void cut(std::size_t top_k) noexcept {
    std::nth_element(keys, keys + (top_k - 1), keys + count, std::greater<>());
    count = static_cast<std::uint32_t>(top_k);
  }
};

/// Calls f(c, row[c]) for every c in [0, Classes) but `skip` with row[c] > threshold and row[c] >= at_least, in
/// class order. The compares of up to 64 classes go into a bit mask first (branch-free, vectorized), so a row costs
/// one branch per candidate, not per class.
template <std::size_t Classes, class F>
inline void for_each_above(const float* row, float threshold, float at_least, int skip, F&& f) {
  for (std::size_t base = 0; base < Classes; base += 64) {
    const std::size_t length = std::min<std::size_t>(64, Classes - base);
    std::uint64_t mask = 0;
    for (std::size_t c = 0; c < length; ++c)
      mask |= static_cast<std::uint64_t>((row[base + c] > threshold) & (row[base + c] >= at_least)) << c;
    if (skip >= 0 && static_cast<std::size_t>(skip) - base < length)
      mask &= ~(std::uint64_t{1} << (static_cast<std::size_t>(skip) - base));
    for (; mask != 0; mask &= mask - 1) {
      const std::size_t c = base + static_cast<std::size_t>(std::countr_zero(mask));
      f(c, row[c]);
    }
  }
}

/// Index of the first maximum of v[first, n) under strict > (TFLite's ArgMaxVector: a NaN never becomes the maximum
/// unless it comes first).
template <class V>
std::size_t first_max_index(const V* v, std::size_t first, std::size_t n) noexcept {
  std::size_t best = first;
  for (std::size_t c = first + 1; c < n; ++c)
    if (v[c] > v[best]) best = c;
  return best;
}

/// v[b] for b the first maximum of v[first, n) under strict > (TFLite's ArgMaxVector: a NaN wins only in the first
/// place), bit for bit, where the class b itself is not needed. Eight runs keep their own maximum (one chain of
/// dependent compares is latency-bound); every run starts from v[first] and a NaN never replaces a value, so the
/// result is the largest value. Only a zero maximum needs the plain loop: its sign is the first zero's.
inline float first_max_value(const float* v, std::size_t first, std::size_t n) noexcept {
  if (std::isnan(v[first])) return v[first];
  constexpr std::size_t runs = 8;
  std::array<float, runs> largest;
  largest.fill(v[first]);
  std::size_t c = first + 1;
  for (; c + runs <= n; c += runs)
    for (std::size_t k = 0; k < runs; ++k) largest[k] = v[c + k] > largest[k] ? v[c + k] : largest[k];
  for (; c < n; ++c) largest[0] = v[c] > largest[0] ? v[c] : largest[0];
  float best = largest[0];
  for (std::size_t k = 1; k < runs; ++k) best = largest[k] > best ? largest[k] : best;
  return best != 0 ? best : v[first_max_index(v, first, n)];
}

/// Turns a quantized or float score tensor into float scores and answers "is this score a candidate" cheaply.
template <tensor_element T>
class score_reader {
 public:
  /// inclusive: score >= threshold (TFLite); otherwise score > threshold (Caffe, OpenCV).
  score_reader(const score_tensor<T>& tensor, std::size_t classes, float threshold, bool inclusive,
               float* row_buffer) noexcept
      : values_(tensor.values.data()),
        classes_(classes),
        threshold_(threshold),
        inclusive_(inclusive),
        activation_(tensor.activation),
        row_(row_buffer) {
    if constexpr (quantized_element<T>) {
      const float scale = tensor.quant.scale;
      if (activation_ == score_activation::softmax) {
        for (int i = 0; i < 256; ++i)
          table_[static_cast<std::size_t>(i)] = static_cast<float>(std::exp(static_cast<double>(scale) * (i - 255)));
      } else {
        for (std::int32_t q = element_traits<T>::min; q <= element_traits<T>::max; ++q) {
          const float x = dequantize_value(static_cast<T>(q), tensor.quant);
          table_[static_cast<u8>(q)] = activation_ == score_activation::logistic ? sigmoid(x) : x;
        }
        // Scores rise with q (scale > 0), so the candidates are exactly q >= cut: one integer compare each.
        cut_ = element_traits<T>::max + 1;
        for (std::int32_t q = element_traits<T>::max; q >= element_traits<T>::min && passes(table_[static_cast<u8>(q)]);
             --q)
          cut_ = q;
      }
    } else if (activation_ == score_activation::logistic && threshold > 0.0f && threshold < 0.999f) {
      // sigmoid(x) > t needs x > logit(t); a margin keeps rounding of the float sigmoid on the safe side, and the
      // exact test on the computed score follows.
      const double logit = std::log(static_cast<double>(threshold) / (1.0 - threshold));
      logit_cut_ = static_cast<float>(logit - 1e-3 * (1.0 + std::abs(logit)));
    }
  }

  bool passes(float score) const noexcept { return inclusive_ ? score >= threshold_ : score > threshold_; }

  /// Calls f(class, score) for every class of `row` whose score passes the threshold, in class order.
  template <class F>
  void for_each_candidate(std::size_t row, F&& f) const {
    const T* r = values_ + row * classes_;
    if (activation_ == score_activation::softmax) {
      softmax_row(r);
      for (std::size_t c = 0; c < classes_; ++c)
        if (passes(row_[c])) f(c, row_[c]);
      return;
    }
    if constexpr (quantized_element<T>) {
      for (std::size_t c = 0; c < classes_; ++c)
        if (static_cast<std::int32_t>(r[c]) >= cut_) f(c, table_[static_cast<u8>(r[c])]);
    } else if (activation_ == score_activation::logistic) {
      for (std::size_t c = 0; c < classes_; ++c) {
        if (r[c] < logit_cut_) continue;
        const float s = sigmoid(r[c]);
        if (passes(s)) f(c, s);
      }
    } else {
      for (std::size_t c = 0; c < classes_; ++c)
        if (passes(r[c])) f(c, r[c]);
    }
  }

  /// Whether class c of row may pass, without computing its score (exact for every activation but softmax,
  /// where it only says "maybe"); then score() gives the float score.
  bool may_pass(std::size_t row, std::size_t c) const noexcept {
    const T value = values_[row * classes_ + c];
    if (activation_ == score_activation::softmax) return true;
    if constexpr (quantized_element<T>)
      return static_cast<std::int32_t>(value) >= cut_;
    else if (activation_ == score_activation::logistic)
      return !(value < logit_cut_);
    else
      return passes(value);
  }

  /// The score of class c of row (a softmax row is normalized on every call: use scores() for whole rows).
  float score(std::size_t row, std::size_t c) const noexcept {
    const T* r = values_ + row * classes_;
    if (activation_ == score_activation::softmax) {
      softmax_row(r);
      return row_[c];
    }
    if constexpr (quantized_element<T>)
      return table_[static_cast<u8>(r[c])];
    else
      return activation_ == score_activation::logistic ? sigmoid(r[c]) : r[c];
  }

  /// All scores of a row, in a buffer owned by the reader (valid until the next call).
  const float* scores(std::size_t row) const noexcept {
    const T* r = values_ + row * classes_;
    if (activation_ == score_activation::softmax) {
      softmax_row(r);
    } else {
      for (std::size_t c = 0; c < classes_; ++c) {
        if constexpr (quantized_element<T>)
          row_[c] = table_[static_cast<u8>(r[c])];
        else
          row_[c] = activation_ == score_activation::logistic ? sigmoid(r[c]) : r[c];
      }
    }
    return row_;
  }

  /// The score first_max writes, without the class (for float scores without an activation, the faster way).
  float max_score(std::size_t row, std::size_t first) const noexcept {
    if constexpr (std::same_as<T, float>)
      if (activation_ == score_activation::none) return first_max_value(values_ + row * classes_, first, classes_);
    float best = 0;
    first_max(row, first, best);
    return best;
  }

  /// Index of the first maximum score among classes [first, classes) of row; the quantized monotone case compares
  /// integers. Returns the class and writes its score.
  std::size_t first_max(std::size_t row, std::size_t first, float& best_score) const noexcept {
    const T* r = values_ + row * classes_;
    if constexpr (quantized_element<T>) {
      if (activation_ != score_activation::softmax) {
        const std::size_t best = first_max_index(r, first, classes_);
        best_score = table_[static_cast<u8>(r[best])];
        return best;
      }
    } else if (activation_ == score_activation::none) {
      const std::size_t best = first_max_index(r, first, classes_);
      best_score = r[best];
      return best;
    }
    const float* s = scores(row);
    const std::size_t best = first_max_index(s, first, classes_);
    best_score = s[best];
    return best;
  }

 private:
  static float sigmoid(float x) noexcept { return 1.0f / (1.0f + std::exp(-x)); }

  void softmax_row(const T* r) const noexcept {
    if constexpr (quantized_element<T>) {
      std::int32_t max = element_traits<T>::min;
      for (std::size_t c = 0; c < classes_; ++c) max = std::max<std::int32_t>(max, r[c]);
      float sum = 0.0f;
      for (std::size_t c = 0; c < classes_; ++c) {
        row_[c] = table_[static_cast<std::size_t>(static_cast<std::int32_t>(r[c]) - max + 255)];
        sum += row_[c];
      }
      const float inverse = 1.0f / sum;
      for (std::size_t c = 0; c < classes_; ++c) row_[c] *= inverse;
    } else {
      // NaN logits are skipped by the max and poison the sum: the whole row then fails every threshold.
      float max = -std::numeric_limits<float>::infinity();
      for (std::size_t c = 0; c < classes_; ++c) max = r[c] > max ? r[c] : max;
      float sum = 0.0f;
      for (std::size_t c = 0; c < classes_; ++c) {
        row_[c] = std::exp(r[c] - max);
        sum += row_[c];
      }
      for (std::size_t c = 0; c < classes_; ++c) row_[c] /= sum;
    }
  }

  const T* values_;
  std::size_t classes_;
  float threshold_;
  bool inclusive_;
  score_activation activation_;
  float* row_;
  std::array<float, 256> table_{};
  std::int32_t cut_ = 0;
  float logit_cut_ = -std::numeric_limits<float>::infinity();
};

template <tensor_element T>
bool check_score_quant(const score_tensor<T>& scores) {
  if constexpr (quantized_element<T>)
    return require(std::isfinite(scores.quant.scale) && scores.quant.scale > 0.0f, errc::invalid_argument,
                   "scores: quantization scale must be finite and positive");
  return true;
}

template <tensor_element T>
bool check_box_quant(const input_tensor<T>& boxes) {
  if constexpr (quantized_element<T>)
    return require(std::isfinite(boxes.quant.scale), errc::invalid_argument,
                   "boxes: quantization scale must be finite");
  return true;
}

}  // namespace detail

// =====================================================================================================================
// Plain NMS

/// Greedy NMS with Caffe ApplyNMSFast / OpenCV NMSBoxes rules: candidates score > score_threshold (strict; NaN never),
/// descending score with ties to the lower index, the first top_k of them (pre-NMS), a candidate is dropped iff its
/// normalized IoU with a kept box is > the adaptive threshold (degenerate and inverted boxes: IoU 0), and after each
/// kept box `if (eta < 1 && threshold > 0.5) threshold *= eta`.
struct nms_options {
  float score_threshold = -FLT_MAX;
  float iou_threshold = 0.3f;
  float eta = 1.0f;
  std::size_t top_k = no_limit;
};

namespace detail {

/// A candidate of TFLite's NMS queue: its current (possibly decayed) score and how many selected boxes it has been
/// checked against (TF's suppress_begin_index), so no selected box decays it twice.
struct tflite_candidate {
  float score;
  std::uint32_t index;
  std::uint32_t checked;
};

}  // namespace detail

/// Scratch bytes nms() needs for up to `boxes` boxes, under either nms_rule.
constexpr std::size_t nms_scratch_bytes(std::size_t boxes) noexcept {
  // Caffe: the candidates; TFLite: the candidates and the IoUs of one candidate with the selected boxes.
  return detail::scratch_alignment +
         std::max(
             detail::scratch_array_bytes<detail::scored_index>(boxes),
             detail::scratch_array_bytes<detail::tflite_candidate>(boxes) + detail::scratch_array_bytes<float>(boxes)) +
         detail::kept_boxes::scratch_bytes(boxes);
}

/// A scratch buffer sized at compile time for up to MaxBoxes boxes.
template <std::size_t MaxBoxes>
struct nms_workspace {
  alignas(detail::scratch_alignment) std::array<std::byte, nms_scratch_bytes(MaxBoxes)> bytes{};
  std::span<std::byte> span() noexcept { return bytes; }
};

/// Writes the kept box indices in descending score order into `kept` (at most kept.size() of them: NMS stops when
/// it is full) and returns how many. Bad arguments (size mismatch, small scratch, iou_threshold < 0 or NaN, eta not
/// in (0, 1]) are reported through require() and return 0.
inline std::size_t nms(std::span<const corner_box> boxes, std::span<const float> scores, const nms_options& options,
                       std::span<std::uint32_t> kept, std::span<std::byte> scratch) {
  if (!require(boxes.size() == scores.size(), errc::shape_mismatch, "nms: boxes and scores differ in length")) return 0;
  if (!require(boxes.size() <= std::numeric_limits<std::uint32_t>::max(), errc::invalid_argument,
               "nms: too many boxes"))
    return 0;
  if (!require(options.iou_threshold >= 0.0f && options.eta > 0.0f && options.eta <= 1.0f, errc::invalid_argument,
               "nms: iou_threshold must be >= 0 and eta in (0, 1]"))
    return 0;
  detail::scratch_arena arena(scratch);
  auto* candidates = arena.take<detail::scored_index>(boxes.size());
  detail::kept_boxes kept_boxes;
  if (!require(kept_boxes.take(arena, boxes.size()), errc::shape_mismatch,
               "nms: scratch smaller than nms_scratch_bytes"))
    return 0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    if (scores[i] > options.score_threshold) candidates[count++] = {scores[i], static_cast<std::uint32_t>(i)};
  const std::size_t considered = std::min(count, options.top_k);
  std::partial_sort(candidates, candidates + considered, candidates + count, detail::ranks_before);
  float threshold = options.iou_threshold;
  std::size_t written = 0;
  for (std::size_t i = 0; i < considered && written < kept.size(); ++i) {
    const corner_box& box = boxes[candidates[i].index];
    const float area = box_area(box);
    if (detail::caffe_suppressed(kept_boxes, box, area, threshold)) continue;
    kept_boxes.push(box, area);
    kept[written++] = candidates[i].index;
    if (options.eta < 1.0f && threshold > 0.5f) threshold *= options.eta;
  }
  return written;
}

// =====================================================================================================================
// NMS rules chosen at compile time

/// Whose rules a plain NMS follows.
enum class nms_rule : std::uint8_t {
  caffe,   ///< Caffe ApplyNMSFast / OpenCV NMSBoxes (nms_options): suppress at IoU > threshold, inverted boxes IoU 0
  tflite,  ///< TFLite NON_MAX_SUPPRESSION_V4 / V5 (tflite_nms_options): corners in either order, IoU >= threshold,
           ///< Gaussian soft-NMS with hard suppression first
};

/// TFLite NON_MAX_SUPPRESSION_V4 (soft_nms_sigma 0) and V5 (reference non_max_suppression.h, TF's
/// NonMaxSuppressionV5 op). A box is two diagonal corners in either order: corner_box's (xmin, ymin) and (xmax, ymax)
/// are TFLite's (x1, y1) and (x2, y2), and min/max of each pair are taken before the IoU. Candidates: score >
/// score_threshold (strict; NaN never). The best current score is taken first (ties to the lower index) and checked
/// against the boxes selected since it was last checked, newest first: IoU >= iou_threshold drops it (hard
/// suppression, before any decay); otherwise, with sigma > 0, its score is multiplied by exp(-0.5 / sigma * iou^2)
/// and the check stops once the score is <= score_threshold. An unchanged score selects it; a decayed score above
/// the threshold returns it to the queue. IoU is 0 when either area is <= 0. Selected scores are the decayed ones.
struct tflite_nms_options {
  float iou_threshold = 0.5f;
  float score_threshold = -std::numeric_limits<float>::infinity();
  float soft_nms_sigma = 0.0f;
};

template <nms_rule Rule>
using nms_options_for = std::conditional_t<Rule == nms_rule::tflite, tflite_nms_options, nms_options>;

namespace detail {

/// TFLite's box: min/max of each corner pair in std::min/std::max argument order (NaN coordinates behave as there).
constexpr corner_box ordered_corners(const corner_box& b) noexcept {
  return {b.xmax < b.xmin ? b.xmax : b.xmin, b.ymax < b.ymin ? b.ymax : b.ymin, b.xmin < b.xmax ? b.xmax : b.xmin,
          b.ymin < b.ymax ? b.ymax : b.ymin};
}

/// TFLite's IoU of a candidate with a selected box (both with ordered corners, areas tflite_area): 0 when an area is
/// <= 0, intersection sides clamped at 0.
inline float tflite_nms_iou(const corner_box& c, float c_area, const corner_box& s, float s_area) noexcept {
  const float iymax = s.ymax < c.ymax ? s.ymax : c.ymax, ixmax = s.xmax < c.xmax ? s.xmax : c.xmax;
  const float iymin = c.ymin < s.ymin ? s.ymin : c.ymin, ixmin = c.xmin < s.xmin ? s.xmin : c.xmin;
  const float ih = iymax - iymin, iw = ixmax - ixmin;
  const float inter = (ih < 0 ? 0.0f : ih) * (iw < 0 ? 0.0f : iw);
  const float ratio = inter / (c_area + s_area - inter);
  return ((c_area <= 0) | (s_area <= 0)) ? 0.0f : ratio;
}

/// Whether some selected box has IoU >= threshold with the candidate. Without decay the order of the checks does not
/// matter, so blocks are computed branch-free.
inline bool tflite_hard_suppressed(const kept_boxes& kept, const corner_box& c, float c_area,
                                   float threshold) noexcept {
  for (std::size_t start = 0; start < kept.count; start += iou_block) {
    const std::size_t end = std::min(kept.count, start + iou_block);
    int any = 0;
    for (std::size_t i = start; i < end; ++i) {
      const corner_box s{kept.xmin[i], kept.ymin[i], kept.xmax[i], kept.ymax[i]};
      any |= static_cast<int>(tflite_nms_iou(c, c_area, s, kept.area[i]) >= threshold);
    }
    if (any) return true;
  }
  return false;
}

/// The V5 check of one candidate against the boxes selected since it was last checked. Returns false when the
/// candidate is dropped; otherwise its score is decayed and its checked count brought up to date. TF walks the boxes
/// newest first, drops the candidate at the first IoU >= threshold and stops decaying once the score is <= the score
/// threshold. A candidate that stops there is dropped too (its score fell to the threshold), so a hard suppression by
/// any of the boxes drops it whatever the order: the IoUs are computed first in branch-free blocks (into ious, indexed
/// like the selected boxes) and only a candidate no box suppresses runs the decays, in TF's order, skipping IoU 0
/// (exp(0) is 1, so the product keeps its bits).
inline bool tflite_soft_check(const kept_boxes& kept, tflite_candidate& next, const corner_box& box, float area,
                              const tflite_nms_options& options, float scale, float* ious) noexcept {
  const std::size_t begin = next.checked, end = kept.count;
  for (std::size_t start = begin; start < end; start += iou_block) {
    const std::size_t stop = std::min(end, start + iou_block);
    int any = 0;
    for (std::size_t i = start; i < stop; ++i) {
      const corner_box s{kept.xmin[i], kept.ymin[i], kept.xmax[i], kept.ymax[i]};
      ious[i] = tflite_nms_iou(box, area, s, kept.area[i]);
      any |= static_cast<int>(ious[i] >= options.iou_threshold);
    }
    if (any) return false;
  }
  for (std::size_t j = end; j-- > begin;) {
    if (ious[j] == 0.0f) continue;
    next.score = next.score * std::exp(scale * ious[j] * ious[j]);
    if (next.score <= options.score_threshold) break;
  }
  next.checked = static_cast<std::uint32_t>(end);
  return true;
}

/// TF's queue order: a max-heap on the current score, ties to the lower index (a strict total order, so every heap
/// layout pops the same sequence).
/// A function object, so the std heap algorithms inline it (a function name would pass as a pointer).
inline constexpr auto tflite_queue_before = [](const tflite_candidate& a, const tflite_candidate& b) noexcept {
  return b.score > a.score || (b.score == a.score && b.index < a.index);
};

/// Puts the heap's top, whose score has just decreased, back in order: one sift down instead of a pop and a push.
inline void tflite_requeue_top(tflite_candidate* heap, std::size_t count) noexcept {
  const tflite_candidate moving = heap[0];
  std::size_t i = 0;
  for (std::size_t child = 1; child < count; child = 2 * i + 1) {
    if (child + 1 < count && tflite_queue_before(heap[child], heap[child + 1])) ++child;
    if (!tflite_queue_before(moving, heap[child])) break;
    heap[i] = heap[child];
    i = child;
  }
  heap[i] = moving;
}

/// The TFLite queue loop over candidates[0, count) (a max-heap in tflite_queue_before order): selects up to
/// kept.size() boxes. The best candidate is checked where it stands at the top of the heap (the check does not touch
/// the heap): selected or dropped, it is popped; decayed above the threshold, it is requeued in place. Returns how
/// many boxes were selected.
inline std::size_t tflite_select(std::span<const corner_box> boxes, tflite_candidate* candidates, std::size_t count,
                                 const tflite_nms_options& options, kept_boxes& selected, float* ious,
                                 std::span<std::uint32_t> kept, std::span<float> kept_scores) {
  const bool soft = options.soft_nms_sigma > 0.0f;
  const float scale = soft ? -0.5f / options.soft_nms_sigma : 0.0f;
  std::make_heap(candidates, candidates + count, tflite_queue_before);
  while (selected.count < kept.size() && count > 0) {
    tflite_candidate next = candidates[0];
    const float original = next.score;
    const corner_box box = ordered_corners(boxes[next.index]);
    const float area = tflite_area(box);
    const bool kept_on = soft ? tflite_soft_check(selected, next, box, area, options, scale, ious)
                              : !tflite_hard_suppressed(selected, box, area, options.iou_threshold);
    if (kept_on && next.score != original && next.score > options.score_threshold) {
      candidates[0] = next;
      tflite_requeue_top(candidates, count);
      continue;
    }
    std::pop_heap(candidates, candidates + count--, tflite_queue_before);
    if (kept_on && next.score == original) {
      kept[selected.count] = next.index;
      kept_scores[selected.count] = next.score;
      selected.push(box, area);
    }
  }
  return selected.count;
}

/// TFLite NMS V4/V5 (see tflite_nms_options) into kept / kept_scores; returns the valid count.
inline std::size_t tflite_nms(std::span<const corner_box> boxes, std::span<const float> scores,
                              const tflite_nms_options& options, std::span<std::uint32_t> kept,
                              std::span<float> kept_scores, std::span<std::byte> scratch) {
  if (!require(options.iou_threshold >= 0.0f && options.iou_threshold <= 1.0f && options.soft_nms_sigma >= 0.0f,
               errc::invalid_argument, "nms: TFLite rule needs iou_threshold in [0, 1] and soft_nms_sigma >= 0"))
    return 0;
  scratch_arena arena(scratch);
  auto* candidates = arena.take<tflite_candidate>(boxes.size());
  const std::size_t capacity = std::min(boxes.size(), kept.size());
  auto* ious = arena.take<float>(capacity);
  kept_boxes selected;
  if (!require(selected.take(arena, capacity), errc::shape_mismatch, "nms: scratch smaller than nms_scratch_bytes"))
    return 0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    if (scores[i] > options.score_threshold) candidates[count++] = {scores[i], static_cast<std::uint32_t>(i), 0};
  return tflite_select(boxes, candidates, count, options, selected, ious, kept, kept_scores);
}

}  // namespace detail

/// NMS under a compile-time rule: `nms<nms_rule::tflite>(boxes, scores, {.iou_threshold = 0.5f}, kept, kept_scores,
/// scratch)`. Writes the selected indices and their scores (TFLite V5: decayed; Caffe: as given) and returns the
/// valid count; kept.size() is the max_output_size, and the entries after the valid count are zero, as TFLite's
/// outputs are. kept_scores must be at least as long as kept. Bad arguments are reported through require() and
/// return 0.
template <nms_rule Rule>
std::size_t nms(std::span<const corner_box> boxes, std::span<const float> scores, const nms_options_for<Rule>& options,
                std::span<std::uint32_t> kept, std::span<float> kept_scores, std::span<std::byte> scratch) {
  if (!require(boxes.size() == scores.size() && kept_scores.size() >= kept.size(), errc::shape_mismatch,
               "nms: boxes/scores lengths differ or kept_scores is shorter than kept"))
    return 0;
  if (!require(boxes.size() <= std::numeric_limits<std::uint32_t>::max(), errc::invalid_argument,
               "nms: too many boxes"))
    return 0;
  std::size_t count = 0;
  if constexpr (Rule == nms_rule::tflite) {
    count = detail::tflite_nms(boxes, scores, options, kept, kept_scores, scratch);
  } else {
    count = nms(boxes, scores, options, kept, scratch);
    for (std::size_t i = 0; i < count; ++i) kept_scores[i] = scores[kept[i]];
  }
  std::fill(kept.begin() + static_cast<std::ptrdiff_t>(count), kept.end(), 0u);
  std::fill(kept_scores.begin() + static_cast<std::ptrdiff_t>(count), kept_scores.end(), 0.0f);
  return count;
}

// =====================================================================================================================
// Soft-NMS

enum class soft_nms_method : std::uint8_t { linear, gaussian };

/// OpenCV softNMSBoxes rules: repeatedly select the highest current score (ties to the lower index) while it is
/// >= score_threshold and fewer than top_k are selected; decay every other live score: linear `s *= 1 - iou` when
/// iou > iou_threshold, gaussian `s *= exp(-iou^2 / sigma)`. IoU is the normalized Caffe one (a zero-area pair has
/// IoU 0 here, 1 in OpenCV). NaN scores never enter.
struct soft_nms_options {
  soft_nms_method method = soft_nms_method::gaussian;
  float sigma = 0.5f;
  float iou_threshold = 0.3f;
  float score_threshold = 0.001f;
  std::size_t top_k = no_limit;
};

constexpr std::size_t soft_nms_scratch_bytes(std::size_t boxes) noexcept {
  return detail::scratch_alignment + detail::scratch_array_bytes<detail::scored_index>(boxes);
}

/// Writes selected indices and their decayed scores (selection order); returns how many (at most kept.size()).
inline std::size_t soft_nms(std::span<const corner_box> boxes, std::span<const float> scores,
                            const soft_nms_options& options, std::span<std::uint32_t> kept,
                            std::span<float> kept_scores, std::span<std::byte> scratch) {
  if (!require(boxes.size() == scores.size() && kept_scores.size() >= kept.size(), errc::shape_mismatch,
               "soft_nms: boxes/scores lengths differ or kept_scores is shorter than kept"))
    return 0;
  if (!require(options.score_threshold >= 0.0f && options.iou_threshold >= 0.0f && options.sigma > 0.0f,
               errc::invalid_argument, "soft_nms: thresholds must be >= 0 and sigma > 0"))
    return 0;
  detail::scratch_arena arena(scratch);
  auto* live = arena.take<detail::scored_index>(boxes.size());
  if (!require(arena.ok(), errc::shape_mismatch, "soft_nms: scratch smaller than soft_nms_scratch_bytes")) return 0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    if (scores[i] >= options.score_threshold) live[count++] = {scores[i], static_cast<std::uint32_t>(i)};
  const std::size_t limit = std::min({options.top_k, kept.size(), boxes.size()});
  std::size_t written = 0;
  while (written < limit && count > 0) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < count; ++i)
      if (detail::ranks_before(live[i], live[best])) best = i;
    const detail::scored_index selected = live[best];
    kept[written] = selected.index;
    kept_scores[written++] = selected.score;
    live[best] = live[--count];
    const corner_box& selected_box = boxes[selected.index];
    std::size_t survivors = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const float iou = detail::caffe_iou(selected_box, boxes[live[i].index]);
      float score = live[i].score;
      if (options.method == soft_nms_method::linear) {
        if (iou > options.iou_threshold) score *= 1.0f - iou;
      } else {
        score *= std::exp(-(iou * iou) / options.sigma);
      }
      // Scores below the threshold can never be selected again (decay factors are in [0, 1]).
      if (score >= options.score_threshold) live[survivors++] = {score, live[i].index};
    }
    count = survivors;
  }
  return written;
}

// =====================================================================================================================
// Caffe-SSD DetectionOutput

/// Static shape of a DetectionOutput layer. top_k is Caffe's nms_param.top_k (pre-NMS, per class; 0 keeps nothing),
/// keep_top_k the per-image cap after NMS; no_limit stands for Caffe's -1. background_label -1: no background class.
struct detection_output_config {
  std::size_t priors = 0;
  std::size_t classes = 0;
  int background_label = 0;
  std::size_t top_k = no_limit;
  std::size_t keep_top_k = no_limit;
  box_code code = box_code::corner;  ///< Caffe's default; SSD prototxts say CENTER_SIZE
  bool share_location = true;
  bool variance_encoded_in_target = false;

  constexpr std::size_t foreground_classes() const noexcept {
    return background_label >= 0 && static_cast<std::size_t>(background_label) < classes ? classes - 1 : classes;
  }
  constexpr std::size_t class_top_k() const noexcept { return std::min(top_k, priors); }
  /// A class never needs more kept boxes than keep_top_k: later (lower ranked) ones cannot make the final cut.
  constexpr std::size_t class_keep() const noexcept { return std::min(class_top_k(), keep_top_k); }
  constexpr std::size_t max_detections() const noexcept {
    return std::min(keep_top_k, foreground_classes() * class_keep());
  }
  constexpr std::size_t loc_classes() const noexcept { return share_location ? 1 : classes; }
};

template <detection_output_config Cfg>
concept valid_detection_output_config = Cfg.priors > 0 && Cfg.classes > 0 && Cfg.background_label >= -1 &&
                                        (Cfg.background_label < 0 ||
                                         static_cast<std::size_t>(Cfg.background_label) < Cfg.classes) &&
                                        Cfg.priors <= std::numeric_limits<std::uint32_t>::max() &&
                                        Cfg.classes <= std::numeric_limits<std::uint32_t>::max() &&
                                        Cfg.foreground_classes() * Cfg.priors
                                            <= std::numeric_limits<std::uint32_t>::max();  // (class, prior) in 32 bits

/// Runtime thresholds (Caffe names and defaults: confidence -FLT_MAX, nms 0.3, eta 1).
struct detection_thresholds {
  float confidence = -FLT_MAX;
  float nms = 0.3f;
  float eta = 1.0f;
};

/// One output row [image_id, label, confidence, xmin, ymin, xmax, ymax] (normalized, unclipped).
struct detection {
  std::int32_t image = 0;
  std::int32_t label = 0;
  float score = 0;
  corner_box box;

  constexpr std::array<float, 7> row() const noexcept {
    return {static_cast<float>(image), static_cast<float>(label), score, box.xmin, box.ymin, box.xmax, box.ymax};
  }
};

/// Caffe-SSD DetectionOutput for one image. Inputs: loc [priors][loc_classes][4], conf [priors][classes], priors.
/// Output order is Caffe's: label ascending, then descending score (ties: lower prior index). Where Caffe's
/// keep_top_k sort is unstable, equal scores are broken by lower label, then lower prior index.
/// No detection returns 0 (Caffe instead writes one row of -1s; detection::row() of a default row is not that).
template <detection_output_config Cfg>
requires valid_detection_output_config<Cfg>
class detection_output {
 public:
  static constexpr detection_output_config config = Cfg;
  static constexpr std::size_t max_detections = Cfg.max_detections();

 private:
  static constexpr std::size_t top_k = Cfg.class_top_k();
  static constexpr std::size_t slots = Cfg.foreground_classes();  ///< one per non-background class
  /// Fast path: the best `global_capacity` candidates of all classes. The greedy NMS usually keeps keep_top_k boxes
  /// long before it reaches the end of them; when it does not, the per-class selection below runs instead.
  static constexpr std::size_t global_capacity =
      std::min(slots * Cfg.priors, std::max<std::size_t>(2048, 16 * max_detections));
  static constexpr std::size_t class_capacity = detail::class_selection::capacity_for(top_k, Cfg.priors);
  static constexpr std::size_t blocks_per_class = (Cfg.class_keep() + detail::iou_block - 1) / detail::iou_block;
  /// Kept boxes never exceed max_detections in total, and each class leaves at most one block partly filled.
  static constexpr std::size_t pool_blocks =
      std::min(slots * blocks_per_class, (max_detections + detail::iou_block - 1) / detail::iou_block + slots);

  /// One class during NMS: its candidates as a max-heap of keys, kept keys collected at the back of the same array.
  struct class_nms {
    std::uint64_t* keys;
    std::uint32_t size;       ///< candidates (keys[0, size))
    std::uint32_t remaining;  ///< still on the heap
    std::uint32_t kept;
    float threshold;  ///< adaptive (eta) NMS threshold
    std::uint32_t taken() const noexcept { return size - remaining; }
  };

  struct work {
    std::uint64_t* global_keys;
    std::uint64_t* class_keys;
    detail::class_selection* selections;
    class_nms* classes;
    std::uint64_t* merge;
    std::uint32_t* class_counts;
    float* row_buffer;
    std::uint32_t* block_table;
    detail::box_block* block_pool;
  };

 public:
  static constexpr std::size_t scratch_bytes =
      detail::scratch_alignment + 2 * detail::scratch_array_bytes<std::uint64_t>(global_capacity) +
      detail::scratch_array_bytes<std::uint64_t>(slots * class_capacity) +
      detail::scratch_array_bytes<detail::class_selection>(slots) + detail::scratch_array_bytes<class_nms>(slots) +
      detail::scratch_array_bytes<std::uint64_t>(slots) + detail::scratch_array_bytes<std::uint32_t>(slots) +
      detail::scratch_array_bytes<float>(Cfg.classes) +
      detail::scratch_array_bytes<std::uint32_t>(slots * blocks_per_class) +
      detail::scratch_array_bytes<detail::box_block>(pool_blocks);

  /// A scratch buffer of the right size, for callers without an arena.
  struct workspace {
    alignas(detail::scratch_alignment) std::array<std::byte, scratch_bytes> bytes{};
  };

  constexpr explicit detection_output(detection_thresholds thresholds = {}) noexcept : thresholds_(thresholds) {}

  /// Runs on one image; returns the number of rows written to out (which must hold max_detections rows).
  template <tensor_element L, tensor_element S>
  std::size_t run(input_tensor<L> loc, score_tensor<S> conf, std::span<const prior_box> priors,
                  std::span<detection> out, std::span<std::byte> scratch, std::int32_t image = 0) const {
    if (!require(loc.values.size() == Cfg.priors * Cfg.loc_classes() * 4 &&
                     conf.values.size() == Cfg.priors * Cfg.classes && priors.size() == Cfg.priors &&
                     out.size() >= max_detections,
                 errc::shape_mismatch, "detection_output: loc/conf/priors/out sizes differ from the config"))
      return 0;
    if (!require(thresholds_.nms >= 0.0f && thresholds_.eta > 0.0f && thresholds_.eta <= 1.0f, errc::invalid_argument,
                 "detection_output: nms threshold must be >= 0 and eta in (0, 1]"))
      return 0;
    if (!detail::check_score_quant(conf) || !detail::check_box_quant(loc)) return 0;
    detail::scratch_arena arena(scratch);
    work w{};
    w.global_keys = arena.take<std::uint64_t>(2 * global_capacity);
    w.class_keys = arena.take<std::uint64_t>(slots * class_capacity);
    w.selections = arena.take<detail::class_selection>(slots);
    w.classes = arena.take<class_nms>(slots);
    w.merge = arena.take<std::uint64_t>(slots);
    w.class_counts = arena.take<std::uint32_t>(slots);
    w.row_buffer = arena.take<float>(Cfg.classes);
    w.block_table = arena.take<std::uint32_t>(slots * blocks_per_class);
    w.block_pool = arena.take<detail::box_block>(pool_blocks);
    if (!require(arena.ok(), errc::shape_mismatch, "detection_output: scratch smaller than scratch_bytes")) return 0;
    if constexpr (top_k == 0 || slots == 0 || max_detections == 0) {
      return 0;
    } else {
      const bool dropped = select_global(conf, w);
      if (greedy_nms(loc, priors, w, dropped)) return write_output(w, out, image);
      // The global candidates ran out before keep_top_k boxes were kept: start over with every class's top_k.
      select_per_class(conf, w);
      greedy_nms(loc, priors, w, false);
      return write_output(w, out, image);
    }
  }

  const detection_thresholds& thresholds() const noexcept { return thresholds_; }

 private:
  /// Keys order candidates as the greedy NMS takes them: score, then lower label, then lower prior.
  static std::uint64_t key_of(float score, std::size_t slot, std::size_t prior) noexcept {
    return detail::rank_key(score, static_cast<std::uint32_t>(slot * Cfg.priors + prior));
  }
  static std::size_t slot_of_key(std::uint64_t key) noexcept { return detail::rank_key_index(key) / Cfg.priors; }
  static std::uint32_t prior_of_key(std::uint64_t key) noexcept {
    return static_cast<std::uint32_t>(detail::rank_key_index(key) % Cfg.priors);
  }
  static constexpr std::size_t slot_of(std::size_t label) noexcept {
    return Cfg.background_label >= 0 && label > static_cast<std::size_t>(Cfg.background_label) ? label - 1 : label;
  }
  static constexpr std::size_t label_of(std::size_t slot) noexcept {
    return Cfg.background_label >= 0 && slot >= static_cast<std::size_t>(Cfg.background_label) ? slot + 1 : slot;
  }

  /// Calls offer(class, score, prior) for every score > confidence (and, for plain float scores, >= at_least, a
  /// bound the caller may raise while the scan runs), prior by prior, background excluded.
  template <tensor_element S, class Offer>
  void scan_scores(const score_tensor<S>& conf, float* row_buffer, const float& at_least, Offer&& offer) const {
    if constexpr (std::same_as<S, float>) {
      if (conf.activation == score_activation::none) {
        const float* values = conf.values.data();
        for (std::size_t p = 0; p < Cfg.priors; ++p)
          detail::for_each_above<Cfg.classes>(values + p * Cfg.classes, thresholds_.confidence, at_least,
                                              Cfg.background_label,
                                              [&](std::size_t c, float score) { offer(c, score, p); });
        return;
      }
    }
    const detail::score_reader<S> reader(conf, Cfg.classes, thresholds_.confidence, false, row_buffer);
    for (std::size_t p = 0; p < Cfg.priors; ++p) {
      reader.for_each_candidate(p, [&](std::size_t c, float score) {
        if (static_cast<int>(c) != Cfg.background_label) offer(c, score, p);
      });
    }
  }

  /// The best global_capacity candidates of all classes (a threshold-raising selection that keeps half of them at
  /// each cut), split into per-class heaps. Returns whether a cut dropped candidates.
  template <tensor_element S>
  bool select_global(const score_tensor<S>& conf, work& w) const {
    detail::class_selection selection{w.global_keys, 0, 0};
    constexpr std::size_t keep = global_capacity / 2;
    float at_least = -std::numeric_limits<float>::infinity();
    bool dropped = false;
    scan_scores(conf, w.row_buffer, at_least, [&](std::size_t c, float score, std::size_t p) {
      if (!selection.offer(key_of(score, slot_of(c), p), keep, global_capacity)) return;
      dropped = true;
      at_least = detail::rank_key_score(selection.floor - 1);
    });
    // Counting sort by class into the second half of the buffer, then each class's keys become a max-heap.
    std::fill(w.class_counts, w.class_counts + slots, 0u);
    for (std::uint32_t i = 0; i < selection.count; ++i) ++w.class_counts[slot_of_key(w.global_keys[i])];
    std::uint64_t* sorted = w.global_keys + global_capacity;
    std::uint32_t offset = 0;
    for (std::size_t s = 0; s < slots; ++s) {
      w.classes[s] = {sorted + offset, 0, 0, 0, thresholds_.nms};
      offset += w.class_counts[s];
    }
    for (std::uint32_t i = 0; i < selection.count; ++i) {
      class_nms& target = w.classes[slot_of_key(w.global_keys[i])];
      target.keys[target.size++] = w.global_keys[i];
    }
    for (std::size_t s = 0; s < slots; ++s) {
      std::make_heap(w.classes[s].keys, w.classes[s].keys + w.classes[s].size);
      w.classes[s].remaining = w.classes[s].size;
    }
    return dropped;
  }

  /// Every class's best top_k candidates, each class in its own threshold-raising selection.
  template <tensor_element S>
  void select_per_class(const score_tensor<S>& conf, work& w) const {
    for (std::size_t s = 0; s < slots; ++s) w.selections[s] = {w.class_keys + s * class_capacity, 0, 0};
    const float at_least = -std::numeric_limits<float>::infinity();
    scan_scores(conf, w.row_buffer, at_least, [&](std::size_t c, float score, std::size_t p) {
      const std::size_t s = slot_of(c);
      w.selections[s].offer(key_of(score, s, p), top_k, class_capacity);
    });
    for (std::size_t s = 0; s < slots; ++s) {
      const std::uint32_t count = w.selections[s].finish(top_k);
      w.classes[s] = {w.selections[s].keys, count, count, 0, thresholds_.nms};
    }
  }

  /// Greedy NMS per class, all classes interleaved in one rank order (score, then label, then prior): a class's
  /// candidates come off its own heap in its Caffe order, so what it keeps is unchanged, and the first keep_top_k
  /// boxes kept overall are Caffe's keep_top_k result, so the work stops there. Boxes are decoded only here.
  /// Returns false if the result may be incomplete: some candidates were `dropped` before, a class ran out of
  /// candidates before its top_k, and fewer than keep_top_k boxes were kept.
  template <tensor_element L>
  bool greedy_nms(const input_tensor<L>& loc, std::span<const prior_box> priors, work& w, bool dropped) const {
    const auto active = [](const class_nms& state) { return state.taken() < top_k && state.kept < Cfg.class_keep(); };
    std::size_t heads = 0;
    for (std::size_t s = 0; s < slots; ++s)
      if (w.classes[s].remaining > 0) w.merge[heads++] = w.classes[s].keys[0];
    std::make_heap(w.merge, w.merge + heads);
    std::size_t kept_total = 0, blocks_used = 0;
    bool ran_dry = false;
    while (heads > 0 && kept_total < Cfg.keep_top_k) {
      const std::uint64_t key = w.merge[0];
      const std::size_t s = slot_of_key(key);
      class_nms& state = w.classes[s];
      std::pop_heap(state.keys, state.keys + state.remaining);
      --state.remaining;
      const corner_box box = decode(loc, priors, prior_of_key(key), label_of(s));
      const float area = box_area(box);
      std::uint32_t* class_blocks = w.block_table + s * blocks_per_class;
      bool suppressed = false;
      for (std::size_t b = 0; b * detail::iou_block < state.kept && !suppressed; ++b)
        suppressed = w.block_pool[class_blocks[b]].caffe_suppresses(box, area, state.threshold);
      if (!suppressed) {
        const std::size_t lane = state.kept % detail::iou_block;
        if (lane == 0) {
          class_blocks[state.kept / detail::iou_block] = static_cast<std::uint32_t>(blocks_used);
          w.block_pool[blocks_used++].clear();
        }
        w.block_pool[class_blocks[state.kept / detail::iou_block]].set(lane, box, area);
        // Kept keys fill the class's array from the back, behind the heap (taken keys are no longer needed).
        state.keys[state.size - 1 - state.kept++] = key;
        ++kept_total;
        if (thresholds_.eta < 1.0f && state.threshold > 0.5f) state.threshold *= thresholds_.eta;
      }
      std::pop_heap(w.merge, w.merge + heads);
      if (state.remaining > 0 && active(state)) {
        w.merge[heads - 1] = state.keys[0];
        std::push_heap(w.merge, w.merge + heads);
      } else {
        --heads;
        ran_dry = ran_dry || (state.remaining == 0 && active(state));
      }
    }
    return !(dropped && ran_dry && kept_total < Cfg.keep_top_k);
  }

  /// Caffe's label-major order: each class's kept boxes in rank order.
  std::size_t write_output(const work& w, std::span<detection> out, std::int32_t image) const {
    std::size_t written = 0;
    for (std::size_t s = 0; s < slots; ++s) {
      const class_nms& state = w.classes[s];
      const std::uint32_t* class_blocks = w.block_table + s * blocks_per_class;
      for (std::uint32_t i = 0; i < state.kept; ++i) {
        const std::uint64_t key = state.keys[state.size - 1 - i];
        out[written++] = {image, static_cast<std::int32_t>(label_of(s)), detail::rank_key_score(key),
                          w.block_pool[class_blocks[i / detail::iou_block]].box(i % detail::iou_block)};
      }
    }
    return written;
  }

  template <tensor_element L>
  static corner_box decode(const input_tensor<L>& loc, std::span<const prior_box> priors, std::size_t prior,
                           std::size_t label) noexcept {
    const std::size_t loc_class = Cfg.share_location ? 0 : label;
    return decode_caffe_box(Cfg.code, priors[prior], loc.four((prior * Cfg.loc_classes() + loc_class) * 4),
                            Cfg.variance_encoded_in_target);
  }

  detection_thresholds thresholds_;
};

// =====================================================================================================================
// TFLite Detection_PostProcess

/// How box encodings are decoded against their anchors.
enum class anchor_decoding : std::uint8_t {
  tflite,     ///< TFLite DecodeCenterSizeBoxes (decode_tf_box): [ty, tx, th, tw], sizes exp(t / scale), in double
  mediapipe,  ///< MediaPipe TensorsToDetections DecodeBoxes (decode_mediapipe_box): float, layout from the config
};

/// Static shape of TFLite_Detection_PostProcess. classes excludes the background; background_column says whether the
/// score tensor has classes + 1 columns with the background first. With keypoints > 0 each encoding row holds the
/// 4 box values and then keypoints raw pairs (BlazeFace-style heads; TFLite reads only the first 4 values of a row),
/// decoded for the output rows with MediaPipe's keypoint rule (decode_keypoint) and the box scales.
struct tflite_postprocess_config {
  std::size_t anchors = 0;
  std::size_t classes = 0;
  bool background_column = true;
  std::size_t max_detections = 10;
  std::size_t max_classes_per_detection = 1;
  std::size_t detections_per_class = 100;
  bool use_regular_nms = false;
  std::size_t keypoints = 0;
  anchor_decoding decoding = anchor_decoding::tflite;
  mediapipe_box_layout layout{};  ///< mediapipe decoding only (TFLite's is [ty, tx, th, tw], exponential sizes)

  constexpr std::size_t encoding_length() const noexcept { return 4 + 2 * keypoints; }
  constexpr std::size_t score_columns() const noexcept { return classes + (background_column ? 1 : 0); }
  constexpr std::size_t classes_per_detection() const noexcept {
    return use_regular_nms ? 1 : std::min(max_classes_per_detection, classes);
  }
  /// Rows of the output tensors.
  constexpr std::size_t output_rows() const noexcept { return max_detections * classes_per_detection(); }
};

template <tflite_postprocess_config Cfg>
concept valid_tflite_postprocess_config = Cfg.anchors > 0 && Cfg.classes > 0 &&
                                          Cfg.anchors <= std::numeric_limits<std::uint32_t>::max() &&
                                          (!Cfg.use_regular_nms || Cfg.detections_per_class > 0) &&
                                          (Cfg.use_regular_nms || Cfg.max_classes_per_detection > 0) &&
                                          (Cfg.decoding == anchor_decoding::mediapipe ||
                                           (!Cfg.layout.reverse_output_order &&
                                            !Cfg.layout.apply_exponential_on_box_size));

/// Runtime parameters (TFLite custom options).
struct tflite_postprocess_params {
  float score_threshold = 0.0f;
  float iou_threshold = 0.6f;
  box_coder_scales scales{};
};

/// Output tensors, each output_rows() long: boxes [ymin, xmin, ymax, xmax], 0-based classes (background excluded),
/// scores; with keypoints, output_rows() * keypoints of them, row r's at [r * keypoints, (r + 1) * keypoints).
/// Rows after the returned count are zero (TFLite's fast mode leaves them unwritten).
struct tflite_postprocess_outputs {
  std::span<std::array<float, 4>> boxes;
  std::span<float> classes;
  std::span<float> scores;
  std::span<keypoint> keypoints = {};
};

/// TFLite detection postprocess (detection_postprocess.cc): boxes decoded with the TF box coder on demand, scores
/// >= threshold (inclusive), stable descending order (ties to the lower anchor), greedy NMS suppressing IoU > iou
/// threshold with areas <= 0 giving IoU 0. Fast mode: NMS once on each anchor's best class score, up to
/// max_detections anchors, each output with its max_classes_per_detection best classes (ties to the lower class).
/// Regular mode: NMS per class with detections_per_class, merged to the max_detections best (ties: lower class, then
/// NMS order). Deviation: TFLite fails on inverted decoded boxes; here they never overlap anything.
template <tflite_postprocess_config Cfg>
requires valid_tflite_postprocess_config<Cfg>
class tflite_detection_postprocess {
 public:
  static constexpr tflite_postprocess_config config = Cfg;
  static constexpr std::size_t output_rows = Cfg.output_rows();

 private:
  static constexpr std::size_t kept_capacity = Cfg.use_regular_nms ? Cfg.detections_per_class : Cfg.max_detections;
  static constexpr std::size_t merge_capacity = Cfg.use_regular_nms ? Cfg.max_detections + Cfg.detections_per_class : 0;
  struct selected_entry {
    float score;
    std::uint32_t anchor;
    std::uint32_t label;
  };

 public:
  static constexpr std::size_t scratch_bytes =
      detail::scratch_alignment + detail::scratch_array_bytes<detail::scored_index>(Cfg.anchors) +
      detail::scratch_array_bytes<float>(Cfg.score_columns()) + detail::kept_boxes::scratch_bytes(kept_capacity) +
      detail::scratch_array_bytes<std::uint32_t>(kept_capacity) +
      detail::scratch_array_bytes<selected_entry>(2 * merge_capacity) +
      (Cfg.use_regular_nms ? detail::scratch_array_bytes<corner_box>(Cfg.anchors) +
                                 detail::scratch_array_bytes<std::uint8_t>(Cfg.anchors)
                           : 0);

  struct workspace {
    alignas(detail::scratch_alignment) std::array<std::byte, scratch_bytes> bytes{};
  };

  constexpr explicit tflite_detection_postprocess(tflite_postprocess_params params = {}) noexcept : params_(params) {}

  /// box_encodings [anchors][encoding_length] (ty, tx, th, tw, then the keypoint pairs), scores
  /// [anchors][score_columns], anchors [yc, xc, h, w]. Returns num_detections.
  template <tensor_element B, tensor_element S>
  std::size_t run(input_tensor<B> box_encodings, score_tensor<S> scores, std::span<const center_box> anchors,
                  const tflite_postprocess_outputs& out, std::span<std::byte> scratch) const {
    if (!require(anchors.size() == Cfg.anchors, errc::shape_mismatch,
                 "tflite_detection_postprocess: anchor count differs from the config"))
      return 0;
    return run_with(
        box_encodings, scores, [anchors](std::size_t a) { return anchors[a]; }, out, scratch);
  }

  /// The same with the anchors as a tensor [anchors][4] (yc, xc, h, w), float or quantized as TFLite models store
  /// them: each value is dequantized as it is read ((q - zero_point) * scale, TFLite's Dequantize), which gives
  /// bit for bit the result of running on the dequantized anchors.
  template <tensor_element B, tensor_element S, tensor_element A>
  std::size_t run(input_tensor<B> box_encodings, score_tensor<S> scores, input_tensor<A> anchors,
                  const tflite_postprocess_outputs& out, std::span<std::byte> scratch) const {
    if (!require(anchors.values.size() == Cfg.anchors * 4, errc::shape_mismatch,
                 "tflite_detection_postprocess: anchor tensor size differs from the config"))
      return 0;
    if (!detail::check_box_quant(anchors)) return 0;
    return run_with(
        box_encodings, scores,
        [anchors](std::size_t a) {
          const std::array<float, 4> v = anchors.four(a * 4);
          return center_box{v[0], v[1], v[2], v[3]};
        },
        out, scratch);
  }

 private:
  template <tensor_element B, tensor_element S, class Anchors>
  std::size_t run_with(const input_tensor<B>& box_encodings, const score_tensor<S>& scores, const Anchors& anchors,
                       const tflite_postprocess_outputs& out, std::span<std::byte> scratch) const {
    if (!require(box_encodings.values.size() == Cfg.anchors * Cfg.encoding_length() &&
                     scores.values.size() == Cfg.anchors * Cfg.score_columns() && out.boxes.size() >= output_rows &&
                     out.classes.size() >= output_rows && out.scores.size() >= output_rows &&
                     out.keypoints.size() >= output_rows * Cfg.keypoints,
                 errc::shape_mismatch, "tflite_detection_postprocess: tensor sizes differ from the config"))
      return 0;
    if (!require(params_.iou_threshold > 0.0f && params_.iou_threshold <= 1.0f, errc::invalid_argument,
                 "tflite_detection_postprocess: iou_threshold must be in (0, 1]"))
      return 0;
    if (!detail::check_score_quant(scores) || !detail::check_box_quant(box_encodings)) return 0;
    detail::scratch_arena arena(scratch);
    work w;
    w.candidates = arena.take<detail::scored_index>(Cfg.anchors);
    w.row_buffer = arena.take<float>(Cfg.score_columns());
    w.kept.take(arena, kept_capacity);
    w.kept_anchors = arena.take<std::uint32_t>(kept_capacity);
    w.selected = arena.take<selected_entry>(2 * merge_capacity);
    if constexpr (Cfg.use_regular_nms) {
      w.decoded = arena.take<corner_box>(Cfg.anchors);
      w.decoded_flags = arena.take<std::uint8_t>(Cfg.anchors);
    }
    if (!require(arena.ok(), errc::shape_mismatch, "tflite_detection_postprocess: scratch smaller than scratch_bytes"))
      return 0;
    for (std::size_t i = 0; i < output_rows; ++i) {
      out.boxes[i] = {0, 0, 0, 0};
      out.classes[i] = 0;
      out.scores[i] = 0;
    }
    std::fill_n(out.keypoints.begin(), output_rows * Cfg.keypoints, keypoint{});
    const detail::score_reader<S> reader(scores, Cfg.score_columns(), params_.score_threshold, true, w.row_buffer);
    const anchor_view<B, Anchors> source{box_encodings, anchors};
    if constexpr (Cfg.use_regular_nms)
      return run_regular(source, reader, out, w);
    else
      return run_fast(source, reader, out, w);
  }

  static constexpr std::size_t first_class = Cfg.background_column ? 1 : 0;

  struct work {
    detail::scored_index* candidates = nullptr;
    float* row_buffer = nullptr;
    detail::kept_boxes kept;
    std::uint32_t* kept_anchors = nullptr;
    selected_entry* selected = nullptr;
    corner_box* decoded = nullptr;
    std::uint8_t* decoded_flags = nullptr;
  };

  /// The encodings with the anchors they are decoded against.
  template <tensor_element B, class Anchors>
  struct anchor_view {
    const input_tensor<B>& encodings;
    const Anchors& anchors;
  };

  /// A copy, not a subobject of the template parameter object: clang 14 crashes generating code that passes
  /// Cfg.layout itself by value.
  static constexpr mediapipe_box_layout layout{Cfg.layout.reverse_output_order,
                                               Cfg.layout.apply_exponential_on_box_size};

  template <class Source>
  corner_box decode(const Source& source, std::size_t anchor) const {
    const std::array<float, 4> raw = source.encodings.four(anchor * Cfg.encoding_length());
    if constexpr (Cfg.decoding == anchor_decoding::tflite)
      return decode_tf_box(source.anchors(anchor), raw, params_.scales);
    else
      return decode_mediapipe_box(source.anchors(anchor), raw, params_.scales, layout);
  }

  /// Decodes the anchor's keypoints into output row `row` (only output rows are ever decoded).
  template <class Source>
  void write_keypoints(const Source& source, std::size_t anchor, const tflite_postprocess_outputs& out,
                       std::size_t row) const {
    if constexpr (Cfg.keypoints > 0) {
      const center_box box = source.anchors(anchor);
      const std::size_t first = anchor * Cfg.encoding_length() + 4;
      for (std::size_t k = 0; k < Cfg.keypoints; ++k)
        out.keypoints[row * Cfg.keypoints + k] =
            decode_keypoint(box, source.encodings[first + 2 * k], source.encodings[first + 2 * k + 1], params_.scales,
                            layout.reverse_output_order);
    }
  }

  /// Greedy NMS over candidates[0, count) taken in rank order from a heap, up to `limit` kept. Returns kept count.
  template <class Decode>
  static std::size_t greedy(detail::scored_index* candidates, std::size_t count, std::size_t limit, float threshold,
                            work& w, Decode&& decode_anchor) {
    // Lazy order: a heap costs O(count), and only the popped prefix is ever sorted.
    const auto worse = [](const detail::scored_index& a, const detail::scored_index& b) {
      return detail::ranks_before(b, a);
    };
    std::make_heap(candidates, candidates + count, worse);
    w.kept.count = 0;
    std::size_t remaining = count;
    while (remaining > 0 && w.kept.count < limit) {
      std::pop_heap(candidates, candidates + remaining, worse);
      const detail::scored_index candidate = candidates[--remaining];
      const corner_box box = decode_anchor(candidate.index);
      const float area = detail::tflite_area(box);
      if (detail::tflite_suppressed(w.kept, box, area, threshold)) continue;
      w.kept_anchors[w.kept.count] = candidate.index;
      w.kept.push(box, area);
    }
    return w.kept.count;
  }

  template <class Source, tensor_element S>
  std::size_t run_fast(const Source& source, const detail::score_reader<S>& reader,
                       const tflite_postprocess_outputs& out, work& w) const {
    std::size_t count = 0;
    for (std::size_t a = 0; a < Cfg.anchors; ++a) {
      const float best = reader.max_score(a, first_class);
      if (reader.passes(best)) w.candidates[count++] = {best, static_cast<std::uint32_t>(a)};
    }
    const std::size_t kept = greedy(w.candidates, count, Cfg.max_detections, params_.iou_threshold, w,
                                    [&](std::size_t anchor) { return decode(source, anchor); });
    constexpr std::size_t per_detection = Cfg.classes_per_detection();
    for (std::size_t i = 0; i < kept; ++i) {
      const std::uint32_t anchor = w.kept_anchors[i];
      const corner_box& b = {w.kept.xmin[i], w.kept.ymin[i], w.kept.xmax[i], w.kept.ymax[i]};
      if constexpr (per_detection == 1) {
        float best = 0;
        const std::size_t label = reader.first_max(anchor, first_class, best);
        write_row(out, i, b, label - first_class, best);
        write_keypoints(source, anchor, out, i);
      } else {
        const float* s = reader.scores(anchor);
        std::array<std::uint32_t, per_detection> top{};
        std::size_t filled = 0;
        for (std::size_t c = first_class; c < Cfg.score_columns(); ++c) {
          // Insertion into a short descending list; strict > keeps the lower class first on ties.
          std::size_t at = filled;
          while (at > 0 && s[c] > s[top[at - 1]]) --at;
          if (at >= per_detection) continue;
          for (std::size_t k = std::min(filled, per_detection - 1); k > at; --k) top[k] = top[k - 1];
          top[at] = static_cast<std::uint32_t>(c);
          filled = std::min(filled + 1, per_detection);
        }
        for (std::size_t k = 0; k < filled; ++k) {
          write_row(out, i * per_detection + k, b, top[k] - first_class, s[top[k]]);
          write_keypoints(source, anchor, out, i * per_detection + k);
        }
      }
    }
    return kept;
  }

  template <class Source, tensor_element S>
  std::size_t run_regular(const Source& source, const detail::score_reader<S>& reader,
                          const tflite_postprocess_outputs& out, work& w) const {
    std::fill(w.decoded_flags, w.decoded_flags + Cfg.anchors, std::uint8_t{0});
    const auto cached_decode = [&](std::size_t anchor) {
      if (!w.decoded_flags[anchor]) {
        w.decoded[anchor] = decode(source, anchor);
        w.decoded_flags[anchor] = 1;
      }
      return w.decoded[anchor];
    };
    selected_entry* running = w.selected;
    selected_entry* merged = w.selected + merge_capacity;
    std::size_t running_count = 0;
    for (std::size_t c = first_class; c < Cfg.score_columns(); ++c) {
      std::size_t count = 0;
      for (std::size_t a = 0; a < Cfg.anchors; ++a) {
        if (!reader.may_pass(a, c)) continue;
        const float s = reader.score(a, c);
        if (reader.passes(s)) w.candidates[count++] = {s, static_cast<std::uint32_t>(a)};
      }
      if (count == 0) continue;
      const std::size_t kept =
          greedy(w.candidates, count, Cfg.detections_per_class, params_.iou_threshold, w, cached_decode);
      // Merge (stable: earlier classes first on equal scores) and keep the max_detections best.
      std::size_t i = 0, j = 0, n = 0;
      const auto class_entry = [&](std::size_t k) {
        return selected_entry{reader_score(reader, w.kept_anchors[k], c), w.kept_anchors[k],
                              static_cast<std::uint32_t>(c - first_class)};
      };
      while (n < Cfg.max_detections && (i < running_count || j < kept)) {
        if (j >= kept || (i < running_count && !(class_entry(j).score > running[i].score)))
          merged[n++] = running[i++];
        else
          merged[n++] = class_entry(j++);
      }
      std::copy(merged, merged + n, running);
      running_count = n;
    }
    for (std::size_t k = 0; k < running_count; ++k) {
      write_row(out, k, cached_decode(running[k].anchor), running[k].label, running[k].score);
      write_keypoints(source, running[k].anchor, out, k);
    }
    return running_count;
  }

  template <tensor_element S>
  static float reader_score(const detail::score_reader<S>& reader, std::size_t anchor, std::size_t c) noexcept {
    return reader.score(anchor, c);
  }

  static void write_row(const tflite_postprocess_outputs& out, std::size_t row, const corner_box& b, std::size_t label,
                        float score) noexcept {
    out.boxes[row] = {b.ymin, b.xmin, b.ymax, b.xmax};
    out.classes[row] = static_cast<float>(label);
    out.scores[row] = score;
  }

  tflite_postprocess_params params_;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
