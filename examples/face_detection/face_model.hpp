// SSD-MobileNetV1 face detector of @vladmandic/face-api (src/ssdMobilenetv1/ is the spec): the
// network type (face_network.hpp), its model file, and its post-processing: box decoding with the
// shipped anchors, a score threshold applied to the quantized class logits, and NMS. Two ways to
// run it: `detector` runs the network built in the including unit, `dispatched_detector`
// (face_dispatch.hpp) the best per-target build linked into the program.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/aligned_bytes.hpp"
#include "face_network.hpp"
#include "mosaiq/ops/box_decode.hpp"
#include "mosaiq/ops/nms.hpp"
#include "mosaiq/ops/priors.hpp"

namespace face {

inline constexpr std::size_t head_count = 6;
inline constexpr std::array<int, head_count> feature_sizes{32, 16, 8, 4, 2, 1};
inline constexpr std::array<int, head_count> anchors_per_cell{3, 6, 6, 6, 6, 6};
inline constexpr std::size_t anchor_count = [] {
  std::size_t n = 0;
  for (std::size_t h = 0; h < head_count; ++h)
    n += std::size_t(feature_sizes[h]) * std::size_t(feature_sizes[h]) * std::size_t(anchors_per_cell[h]);
  return n;
}();
static_assert(anchor_count == 5118);
inline constexpr int classes_per_anchor = 3;  ///< background, face, and an unused third logit
inline constexpr int face_class = 1;

/// The TF Object Detection API generator that reproduces the shipped anchors (see the test and
/// docs/decisions.md): 6 layers, scales 0.2..0.95, ratios 1, 2, 0.5, 3, 0.3333, the 2017 order
/// with the interpolated box right after ratio 1.
inline constexpr ssd_anchor_generator anchor_generator{
    .feature_maps = {{{32, 32}, {16, 16}, {8, 8}, {4, 4}, {2, 2}, {1, 1}}},
    .aspect_ratios = {1.0f, 2.0f, 0.5f, 3.0f, 0.3333f},
    .interpolated_after_unit_ratio = true,
};
static_assert(anchor_generator.anchor_count() == anchor_count);

/// Weight-source names in the order of the network's layers with weights.
enum class source_kind { conv, depthwise_bn, predictor };
struct weight_source {
  source_kind kind;
  std::string prefix;  ///< tfjs name prefix
};

inline std::vector<weight_source> weight_sources() {
  std::vector<weight_source> s;
  const auto predictors = [&](int h) {
    const std::string p = "Prediction/BoxPredictor_" + std::to_string(h);
    s.push_back({source_kind::predictor, p + "/BoxEncodingPredictor"});
    s.push_back({source_kind::predictor, p + "/ClassPredictor"});
  };
  s.push_back({source_kind::conv, "MobilenetV1/Conv2d_0_pointwise"});
  for (int i = 1; i <= 13; ++i) {
    s.push_back({source_kind::depthwise_bn, "MobilenetV1/Conv2d_" + std::to_string(i) + "_depthwise"});
    s.push_back({source_kind::conv, "MobilenetV1/Conv2d_" + std::to_string(i) + "_pointwise"});
    if (i == 11) predictors(0);
    if (i == 13) predictors(1);
  }
  for (int e = 0; e < 8; ++e) {
    s.push_back({source_kind::conv, "Prediction/Conv2d_" + std::to_string(e) + "_pointwise"});
    if (e % 2 == 1) predictors(e / 2 + 2);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Model file: "MOSAIQFD", version, element type, the anchors (float [yc, xc, h, w]), then the
// network's weights blob (network::save), which names the layer list and shapes itself.

inline constexpr char model_magic[8] = {'M', 'O', 'S', 'A', 'I', 'Q', 'F', 'D'};

template <quantized_element T>
struct model {
  using net = ssd_mobilenet_v1<T>;
  std::vector<center_box> anchors = std::vector<center_box>(anchor_count);
  typename net::weights weights{};
};

template <quantized_element T>
void save_model(const model<T>& m, const std::string& path) {
  using net = typename model<T>::net;
  std::vector<std::byte> blob(net::blob_bytes);
  if (net::save(m.weights, blob) != blob.size()) throw std::runtime_error("face model: network::save failed");
  std::ofstream out(path, std::ios::binary);
  const std::uint32_t version = 1, element = std::is_same_v<T, u8> ? 0 : 1,
                      anchors = static_cast<std::uint32_t>(anchor_count);
  out.write(model_magic, sizeof model_magic);
  for (const std::uint32_t v : {version, element, anchors}) out.write(reinterpret_cast<const char*>(&v), sizeof v);
  out.write(reinterpret_cast<const char*>(m.anchors.data()), std::streamsize(m.anchors.size() * sizeof(center_box)));
  out.write(reinterpret_cast<const char*>(blob.data()), std::streamsize(blob.size()));
  if (!out) throw std::runtime_error("face model: cannot write " + path);
}

/// A model file's contents: the anchors and the network's weights blob (network::save), which a
/// network (built here or dispatched) loads.
struct model_file {
  std::vector<center_box> anchors;
  std::vector<std::byte> blob;
};

/// Reads a model file written by save_model for the same element type.
template <quantized_element T>
model_file read_model_file(const std::string& path) {
  using net = typename model<T>::net;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("face model: cannot open " + path + " (run the converter first)");
  char magic[8];
  std::uint32_t header[3];
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(header), sizeof header);
  if (!in || std::memcmp(magic, model_magic, sizeof magic) != 0 || header[0] != 1)
    throw std::runtime_error("face model: " + path + " is not a mosaiq face model (version 1)");
  if (header[1] != (std::is_same_v<T, u8> ? 0u : 1u))
    throw std::runtime_error("face model: " + path + " holds the other element type");
  if (header[2] != anchor_count) throw std::runtime_error("face model: anchor count differs");
  model_file file{std::vector<center_box>(anchor_count), std::vector<std::byte>(net::blob_bytes)};
  in.read(reinterpret_cast<char*>(file.anchors.data()), std::streamsize(anchor_count * sizeof(center_box)));
  in.read(reinterpret_cast<char*>(file.blob.data()), std::streamsize(file.blob.size()));
  if (!in || in.peek() != std::char_traits<char>::eof())
    throw std::runtime_error("face model: " + path + " has the wrong size for this network");
  return file;
}

/// Reads a model file into the weights of the network built in this unit.
template <quantized_element T>
void load_model(const std::string& path, model<T>& m) {
  model_file file = read_model_file<T>(path);
  if (!model<T>::net::load(file.blob, m.weights))
    throw std::runtime_error("face model: weights blob does not match the network");
  m.anchors = std::move(file.anchors);
}

// ---------------------------------------------------------------------------------------------
// Post-processing (face-api's outputLayer + nonMaxSuppression): score = sigmoid(class logit 1),
// kept when > min_confidence; boxes decoded from the anchor [yc, xc, h, w] with scales 10/10/5/5;
// greedy NMS dropping IoU > 0.5; at most max_results faces.

struct detection {
  float score = 0;
  corner_box box;  ///< normalized to the 512x512 network input
};

struct detect_options {
  float min_confidence = 0.5f;
  float iou_threshold = 0.5f;
  std::size_t max_results = 100;
};

inline float sigmoid(float x) noexcept { return 1.0f / (1.0f + std::exp(-x)); }

/// Head h's box and class tensors as values per anchor: float or quantized.
template <class V>
struct head_view {
  const V* boxes = nullptr;    ///< [anchors of the head][4], in (y, x, anchor) order
  const V* classes = nullptr;  ///< [anchors of the head][3]
  quant_params box_quant{}, class_quant{};
};

/// Scratch for decode_and_suppress: candidates, their boxes and scores, and the NMS workspace,
/// sized for every anchor at compile time.
struct postprocess_scratch {
  std::array<corner_box, anchor_count> boxes{};
  std::array<float, anchor_count> scores{};
  std::array<std::uint32_t, anchor_count> kept{};
  nms_workspace<anchor_count> nms{};
};

namespace detail {

/// The smallest quantized logit whose score passes: scores are then compared as bytes.
template <class V>
int first_passing_logit(quant_params q, float min_confidence) noexcept {
  for (int v = element_traits<V>::min; v <= element_traits<V>::max; ++v)
    if (sigmoid(dequantize_value(static_cast<V>(v), q)) > min_confidence) return v;
  return element_traits<V>::max + 1;
}

}  // namespace detail

/// Decodes the candidates whose face score passes and runs NMS; writes at most out.size() faces
/// in descending score order and returns how many. No heap.
template <class V>
std::size_t decode_and_suppress(const std::array<head_view<V>, head_count>& heads, std::span<const center_box> anchors,
                                const detect_options& options, postprocess_scratch& scratch, std::span<detection> out) {
  std::size_t candidates = 0, anchor = 0;
  for (std::size_t h = 0; h < head_count; ++h) {
    const head_view<V>& head = heads[h];
    const std::size_t count =
        std::size_t(feature_sizes[h]) * std::size_t(feature_sizes[h]) * std::size_t(anchors_per_cell[h]);
    // Quantized heads: the threshold is one integer compare per anchor; only passing anchors are
    // dequantized, passed through the sigmoid and decoded.
    int first_passing = 0;
    if constexpr (!std::is_same_v<V, float>)
      first_passing = detail::first_passing_logit<V>(head.class_quant, options.min_confidence);
    const input_tensor<V> encodings{std::span<const V>(head.boxes, count * 4), head.box_quant};
    for (std::size_t a = 0; a < count; ++a, ++anchor) {
      const V logit = head.classes[a * classes_per_anchor + face_class];
      float score = 0;
      if constexpr (std::is_same_v<V, float>) {
        score = sigmoid(logit);
        if (!(score > options.min_confidence)) continue;
      } else {
        if (int(logit) < first_passing) continue;
        score = sigmoid(dequantize_value(logit, head.class_quant));
      }
      scratch.boxes[candidates] = decode_tf_box(anchors[anchor], encodings.four(a * 4), box_coder_scales{});
      scratch.scores[candidates] = score;
      ++candidates;
    }
  }
  const std::size_t limit = std::min(out.size(), options.max_results);
  const std::size_t kept = nms(std::span<const corner_box>(scratch.boxes.data(), candidates),
                               std::span<const float>(scratch.scores.data(), candidates),
                               nms_options{.iou_threshold = options.iou_threshold},
                               std::span<std::uint32_t>(scratch.kept.data(), limit), scratch.nms.span());
  for (std::size_t i = 0; i < kept; ++i) out[i] = {scratch.scores[scratch.kept[i]], scratch.boxes[scratch.kept[i]]};
  return kept;
}

/// Anchors shipped as corners [ymin, xmin, ymax, xmax] to [yc, xc, h, w] as face-api computes them.
inline center_box anchor_from_corners(float ymin, float xmin, float ymax, float xmax) noexcept {
  const float h = ymax - ymin, w = xmax - xmin;
  return {ymin + h / 2, xmin + w / 2, h, w};
}

using mosaiq_examples::aligned_bytes;

// ---------------------------------------------------------------------------------------------
// The detector: a model, its prepared network and a 64-byte aligned arena, set up once; detect()
// runs a frame with no heap allocation.

template <quantized_element T>
class detector {
 public:
  using net = ssd_mobilenet_v1<T>;

  explicit detector(const model<T>& m)
      : model_(&m), prepared_(net::prepare(m.weights)), arena_(net::arena_bytes, arena_alignment) {}

  /// Quantization the network input expects (pixels map to x / 127.5 - 1).
  quant_params input_quant() const noexcept { return model_->weights.input; }

  /// Runs the network on a 512x512x3 image (already in the input quantization) and post-processes.
  std::size_t detect(tensor_view<const T> image, const detect_options& options, std::span<detection> out) {
    serial_executor serial;
    return detect(image, options, out, serial);
  }
  /// The same with the network on the executor's threads (post-processing on the caller).
  template <parallel_executor E>
  std::size_t detect(tensor_view<const T> image, const detect_options& options, std::span<detection> out, E& exec) {
    net::run(prepared_, image, tensor_view<T>(last_head_.data(), net::output_shape), arena_.bytes, exec);
    return postprocess(options, out);
  }

  /// Post-processing of the last run alone (the benchmark times it separately).
  std::size_t postprocess(const detect_options& options, std::span<detection> out) {
    std::array<head_view<T>, head_count> heads{head<"box0", "cls0">(), head<"box1", "cls1">(), head<"box2", "cls2">(),
                                               head<"box3", "cls3">(), head<"box4", "cls4">(), {}};
    heads[5] = {net::template output_view<"box5">(arena_.bytes).data(), last_head_.data(),
                net::template output_quant<"box5">(prepared_), prepared_.tensor_quant(net::tensor_count - 1)};
    return decode_and_suppress<T>(heads, model_->anchors, options, scratch_, out);
  }

  const typename net::prepared& prepared() const noexcept { return prepared_; }
  std::span<std::byte> arena() noexcept { return arena_.bytes; }

 private:
  template <fixed_string Box, fixed_string Class>
  head_view<T> head() const noexcept {
    return {net::template output_view<Box>(arena_.bytes).data(), net::template output_view<Class>(arena_.bytes).data(),
            net::template output_quant<Box>(prepared_), net::template output_quant<Class>(prepared_)};
  }

  const model<T>* model_;
  typename net::prepared prepared_;
  aligned_bytes arena_;
  std::array<T, std::size_t(net::output_shape.elements())> last_head_{};
  postprocess_scratch scratch_{};
};

}  // namespace face
