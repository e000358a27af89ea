// TFLite-mode NMS (NON_MAX_SUPPRESSION_V4 / V5), keypoint decoding (MediaPipe TensorsToDetections) and quantized
// anchors in the detection post-processing: hand-computed cases from TFLite's and MediaPipe's documented rules, the
// reference twin on random inputs, misuse, and no heap.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "allocation_counter.hpp"
#include "mosaiq/ops/nms.hpp"
#include "mosaiq/reference/nms.hpp"
#include "support.hpp"

namespace {

using mosaiq::center_box;
using mosaiq::corner_box;
using mosaiq::keypoint;
using mosaiq::nms_rule;

constexpr float nan_value = std::numeric_limits<float>::quiet_NaN();

/// A box from TFLite's [y1, x1, y2, x2] layout.
constexpr corner_box from_yxyx(float y1, float x1, float y2, float x2) { return {x1, y1, x2, y2}; }

struct nms_output {
  std::vector<std::uint32_t> indices;
  std::vector<float> scores;
  std::size_t valid = 0;
};

template <nms_rule Rule>
nms_output run_nms(const std::vector<corner_box>& boxes, const std::vector<float>& scores,
                   const mosaiq::nms_options_for<Rule>& options, std::size_t max_output_size) {
  std::vector<std::byte> scratch(mosaiq::nms_scratch_bytes(boxes.size()));
  // Outputs start as garbage: the op must write every entry.
  nms_output out{std::vector<std::uint32_t>(max_output_size, 0xdeadu), std::vector<float>(max_output_size, -7.0f)};
  out.valid = mosaiq::nms<Rule>(boxes, scores, options, out.indices, out.scores, scratch);
  return out;
}

/// TFLite's kernel test boxes: two clusters of three overlapping boxes and one far box.
const std::vector<corner_box> tflite_boxes{from_yxyx(0, 0, 1, 1),         from_yxyx(0, 0.1f, 1, 1.1f),
                                           from_yxyx(0, -0.1f, 1, 0.9f),  from_yxyx(0, 10, 1, 11),
                                           from_yxyx(0, 10.1f, 1, 11.1f), from_yxyx(0, 100, 1, 101)};
const std::vector<float> tflite_scores{0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};

std::vector<corner_box> swap_corners(std::vector<corner_box> boxes) {
  for (auto& b : boxes) b = {b.xmax, b.ymax, b.xmin, b.ymin};
  return boxes;
}

}  // namespace

TEST_CASE("tflite nms V4: hand-computed selections, valid count, zeroed tail") {
  const auto out =
      run_nms<nms_rule::tflite>(tflite_boxes, tflite_scores, {.iou_threshold = 0.5f, .score_threshold = 0}, 6);
  CHECK(out.valid == 3);
  CHECK(out.indices == std::vector<std::uint32_t>{3, 0, 5, 0, 0, 0});
  CHECK(out.scores == std::vector<float>{0.95f, 0.9f, 0.3f, 0, 0, 0});
  // The score threshold is strict and drops the far box; max_output_size is the output length.
  CHECK(run_nms<nms_rule::tflite>(tflite_boxes, tflite_scores, {.iou_threshold = 0.5f, .score_threshold = 0.4f}, 6)
            .indices == std::vector<std::uint32_t>{3, 0, 0, 0, 0, 0});
  CHECK(run_nms<nms_rule::tflite>(tflite_boxes, tflite_scores, {.iou_threshold = 0.5f, .score_threshold = 0.3f}, 6)
            .valid == 2);
  const auto two = run_nms<nms_rule::tflite>(tflite_boxes, tflite_scores, {.iou_threshold = 0.5f}, 2);
  CHECK(two.valid == 2);
  CHECK(two.indices == std::vector<std::uint32_t>{3, 0});
}

TEST_CASE("tflite nms: corners in either order; the Caffe rule gives inverted boxes IoU 0") {
  const auto swapped = swap_corners(tflite_boxes);
  const auto tflite = run_nms<nms_rule::tflite>(swapped, tflite_scores, {.iou_threshold = 0.5f}, 6);
  CHECK(tflite.valid == 3);
  CHECK(tflite.indices == std::vector<std::uint32_t>{3, 0, 5, 0, 0, 0});
  // Mixed: only some boxes swapped.
  auto mixed = tflite_boxes;
  mixed[1] = swapped[1];
  mixed[3] = swapped[3];
  CHECK(run_nms<nms_rule::tflite>(mixed, tflite_scores, {.iou_threshold = 0.5f}, 6).indices == tflite.indices);
  const auto caffe = run_nms<nms_rule::caffe>(swapped, tflite_scores, {.iou_threshold = 0.5f}, 6);
  CHECK(caffe.valid == 6);
  CHECK(caffe.indices == std::vector<std::uint32_t>{3, 0, 1, 2, 4, 5});
  CHECK(caffe.scores == std::vector<float>{0.95f, 0.9f, 0.75f, 0.6f, 0.5f, 0.3f});
}

TEST_CASE("tflite nms: IoU >= threshold suppresses (Caffe: >), zero areas have IoU 0") {
  // IoU exactly 0.5: the right half of the unit box.
  const std::vector<corner_box> half{from_yxyx(0, 0, 1, 1), from_yxyx(0, 0.5f, 1, 1)};
  const std::vector<float> scores{0.9f, 0.8f};
  CHECK(run_nms<nms_rule::tflite>(half, scores, {.iou_threshold = 0.5f}, 2).valid == 1);
  CHECK(run_nms<nms_rule::caffe>(half, scores, {.iou_threshold = 0.5f}, 2).valid == 2);
  // A zero-area box overlaps nothing (IoU 0), so only a threshold of 0 suppresses next to it; with threshold 0 every
  // later box is suppressed by the first selection.
  const std::vector<corner_box> flat{from_yxyx(0, 0, 0, 1), from_yxyx(0, 0, 1, 1), from_yxyx(5, 5, 6, 6)};
  const std::vector<float> flat_scores{0.9f, 0.8f, 0.7f};
  CHECK(run_nms<nms_rule::tflite>(flat, flat_scores, {.iou_threshold = 0.1f}, 3).valid == 3);
  const auto zero = run_nms<nms_rule::tflite>(flat, flat_scores, {.iou_threshold = 0.0f}, 3);
  CHECK(zero.valid == 1);
  CHECK(zero.indices[0] == 0);
  // A zero-area box is selected once (TFLite's kernel would select it again: docs/decisions.md).
  const std::vector<corner_box> lone{from_yxyx(0, 0, 0, 0)};
  CHECK(run_nms<nms_rule::tflite>(lone, {0.5f}, {.iou_threshold = 0.5f}, 3).valid == 1);
  // NaN scores never enter; equal scores go to the lower index.
  const std::vector<corner_box> far{from_yxyx(0, 0, 1, 1), from_yxyx(2, 2, 3, 3), from_yxyx(4, 4, 5, 5)};
  const auto ties = run_nms<nms_rule::tflite>(far, {0.5f, nan_value, 0.5f}, {.iou_threshold = 0.5f}, 3);
  CHECK(ties.valid == 2);
  CHECK(ties.indices == std::vector<std::uint32_t>{0, 2, 0});
}

TEST_CASE("tflite nms V5: soft-NMS decays, re-queues and returns the decayed scores") {
  // Hand computation with sigma 0.5 (scale -1) and IoU threshold 1 (no hard suppression between distinct boxes):
  // 3 and 0 do not overlap: selected at 0.95, 0.9. Box 1 meets 0 at IoU 0.9 / 1.1: 0.75 exp(-(9/11)^2) = 0.3841;
  // box 2 likewise 0.6 -> 0.3073, box 4 meets 3: 0.5 -> 0.2561. Then 1 (checked against everything) is selected
  // at 0.3841; 2 meets 1 at IoU 0.8 / 1.2: 0.3073 exp(-4/9) = 0.1970 and returns; 5 (0.3) and 4 (0.2561, nothing
  // new overlaps it) are selected, then 2 at 0.1970.
  const auto soft = run_nms<nms_rule::tflite>(tflite_boxes, tflite_scores,
                                              {.iou_threshold = 1.0f, .score_threshold = 0, .soft_nms_sigma = 0.5f}, 6);
  CHECK(soft.valid == 6);
  CHECK(soft.indices == std::vector<std::uint32_t>{3, 0, 1, 5, 4, 2});
  const std::array<double, 6> expected{0.95,
                                       0.9,
                                       0.75 * std::exp(-81.0 / 121.0),
                                       0.3,
                                       0.5 * std::exp(-81.0 / 121.0),
                                       0.6 * std::exp(-81.0 / 121.0) * std::exp(-4.0 / 9.0)};
  for (std::size_t i = 0; i < 6; ++i) CHECK(soft.scores[i] == doctest::Approx(expected[i]).epsilon(1e-5));
  // Hard suppression comes before any decay: at IoU threshold 0.5 the overlapping boxes are dropped outright, where a
  // decay-only soft NMS (OpenCV's) would keep them with lower scores.
  const auto hard = run_nms<nms_rule::tflite>(tflite_boxes, tflite_scores,
                                              {.iou_threshold = 0.5f, .score_threshold = 0, .soft_nms_sigma = 0.5f}, 6);
  CHECK(hard.valid == 3);
  CHECK(hard.indices == std::vector<std::uint32_t>{3, 0, 5, 0, 0, 0});
  CHECK(hard.scores == std::vector<float>{0.95f, 0.9f, 0.3f, 0, 0, 0});
  // A decayed score at or below the threshold leaves the queue: 0.3841, 0.3073, 0.2561 all fall below 0.4.
  const auto pruned = run_nms<nms_rule::tflite>(
      tflite_boxes, tflite_scores, {.iou_threshold = 1.0f, .score_threshold = 0.4f, .soft_nms_sigma = 0.5f}, 6);
  CHECK(pruned.valid == 2);
  // A score decayed to exactly the threshold leaves the queue (TF pushes back only scores > threshold).
  const std::vector<corner_box> pair{from_yxyx(0, 0, 1, 1), from_yxyx(0, 0, 1, 0.25f)};
  const float iou = mosaiq::reference::tflite_nms_iou(pair[0], pair[1]);
  CHECK(iou == 0.25f);
  const float decayed = 0.8f * std::exp(-1.0f * iou * iou);
  CHECK(run_nms<nms_rule::tflite>(pair, {0.9f, 0.8f},
                                  {.iou_threshold = 0.5f, .score_threshold = decayed, .soft_nms_sigma = 0.5f}, 2)
            .valid == 1);
  CHECK(run_nms<nms_rule::tflite>(
            pair, {0.9f, 0.8f}, {.iou_threshold = 0.5f, .score_threshold = decayed * 0.999f, .soft_nms_sigma = 0.5f}, 2)
            .valid == 2);
}

TEST_CASE("tflite nms: random boxes against the reference twin, V4 and V5") {
  std::mt19937 rng(22);
  std::uniform_real_distribution<float> coordinate(0.0f, 1.0f), extent(0.0f, 0.4f), unit(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 9);
  const std::array<float, 4> sigmas{0.0f, 0.1f, 0.5f, 2.0f};
  const std::array<float, 5> ious{0.0f, 0.3f, 0.5f, 0.7f, 1.0f};
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t n = static_cast<std::size_t>(trial % 7 == 0 ? trial % 5 : 1 + trial * 3 % 257);
    std::vector<corner_box> boxes(n);
    std::vector<float> scores(n);
    for (std::size_t i = 0; i < n; ++i) {
      const float x = coordinate(rng), y = coordinate(rng), w = extent(rng), h = extent(rng);
      boxes[i] = {x, y, x + w, y + h};
      const int k = kind(rng);
      if (k == 0) boxes[i] = {boxes[i].xmax, boxes[i].ymax, boxes[i].xmin, boxes[i].ymin};     // swapped corners
      if (k == 1) boxes[i].xmax = boxes[i].xmin;                                               // zero area
      if (k == 2 && i > 0) boxes[i] = boxes[i - 1];                                            // duplicate
      if (k == 4 && trial % 2 == 1) (i % 2 == 0 ? boxes[i].ymin : boxes[i].xmax) = nan_value;  // NaN corner
      scores[i] = k == 3 && i > 0 ? scores[i - 1] : std::round(unit(rng) * 64.0f) / 64.0f;     // many ties
    }
    const mosaiq::tflite_nms_options options{.iou_threshold = ious[static_cast<std::size_t>(trial) % ious.size()],
                                             .score_threshold = trial % 3 == 0 ? 0.25f : 0.0f,
                                             .soft_nms_sigma = sigmas[static_cast<std::size_t>(trial / 5) % 4]};
    const std::size_t max_output = trial % 4 == 0 ? n / 3 + 1 : n + 2;
    const auto expected = mosaiq::reference::tflite_nms(boxes, scores, max_output, options.iou_threshold,
                                                        options.score_threshold, options.soft_nms_sigma);
    const auto actual = run_nms<nms_rule::tflite>(boxes, scores, options, max_output);
    CAPTURE(trial);
    REQUIRE(actual.valid == expected.indices.size());
    for (std::size_t i = 0; i < max_output; ++i) {
      const bool valid = i < actual.valid;
      CHECK(actual.indices[i] == (valid ? expected.indices[i] : 0u));
      const float want = valid ? expected.scores[i] : 0.0f;
      CHECK(std::memcmp(&actual.scores[i], &want, sizeof(float)) == 0);
    }
  }
}

TEST_CASE("tflite nms: misuse is reported") {
  mosaiq::test::recording_handler errors;
  std::vector<std::uint32_t> kept(4);
  std::vector<float> kept_scores(4);
  std::vector<std::byte> scratch(mosaiq::nms_scratch_bytes(tflite_boxes.size()));
  const auto run = [&](const mosaiq::tflite_nms_options& options, std::span<float> scores_out,
                       std::span<std::byte> bytes) {
    return mosaiq::nms<nms_rule::tflite>(tflite_boxes, tflite_scores, options, kept, scores_out, bytes);
  };
  CHECK(run({.iou_threshold = 1.5f}, kept_scores, scratch) == 0);
  CHECK(run({.iou_threshold = nan_value}, kept_scores, scratch) == 0);
  CHECK(run({.iou_threshold = 0.5f, .soft_nms_sigma = -1.0f}, kept_scores, scratch) == 0);
  CHECK(run({.iou_threshold = 0.5f}, std::span(kept_scores).first(3), scratch) == 0);
  CHECK(run({.iou_threshold = 0.5f}, kept_scores, std::span(scratch).first(64)) == 0);
  CHECK(errors.calls() == 5);
  CHECK(run({.iou_threshold = 0.5f}, kept_scores, scratch) == 3);
  CHECK(errors.calls() == 5);
}

// =====================================================================================================================
// Keypoints and quantized anchors in the detection post-processing

namespace {

struct postprocess_output {
  std::vector<std::array<float, 4>> boxes;
  std::vector<float> classes, scores;
  std::vector<keypoint> keypoints;
  std::size_t count = 0;
};

template <mosaiq::tflite_postprocess_config Cfg, class Anchors>
postprocess_output run_postprocess(const std::vector<float>& encodings, const std::vector<float>& scores,
                                   const Anchors& anchors, mosaiq::tflite_postprocess_params params) {
  using op = mosaiq::tflite_detection_postprocess<Cfg>;
  static typename op::workspace scratch;
  postprocess_output out{std::vector<std::array<float, 4>>(op::output_rows), std::vector<float>(op::output_rows),
                         std::vector<float>(op::output_rows),
                         std::vector<keypoint>(op::output_rows * Cfg.keypoints, keypoint{-9, -9})};
  out.count = op(params).run(mosaiq::input_tensor<float>{encodings}, mosaiq::score_tensor<float>{scores}, anchors,
                             {out.boxes, out.classes, out.scores, out.keypoints}, scratch.bytes);
  return out;
}

bool same_bits(const postprocess_output& a, const postprocess_output& b) {
  const auto bytes_equal = [](const auto& x, const auto& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0;
  };
  return a.count == b.count && bytes_equal(a.boxes, b.boxes) && bytes_equal(a.classes, b.classes) &&
         bytes_equal(a.scores, b.scores) && bytes_equal(a.keypoints, b.keypoints);
}

constexpr mosaiq::tflite_postprocess_config with_exponential_sizes(mosaiq::tflite_postprocess_config c) {
  c.layout.apply_exponential_on_box_size = true;
  return c;
}
constexpr mosaiq::tflite_postprocess_config without_keypoints(mosaiq::tflite_postprocess_config c) {
  c.keypoints = 0;
  return c;
}

/// An output box [ymin, xmin, ymax, xmax] against hand-computed values.
void check_box(const std::array<float, 4>& box, const std::array<double, 4>& expected) {
  for (std::size_t i = 0; i < 4; ++i) CHECK(box[i] == doctest::Approx(expected[i]).epsilon(1e-6));
}

/// The first expected.size() output keypoints against hand-computed (x, y) values.
void check_keypoints(const std::vector<keypoint>& actual, const std::vector<std::array<double, 2>>& expected) {
  REQUIRE(actual.size() >= expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(actual[i].x == doctest::Approx(expected[i][0]).epsilon(1e-6));
    CHECK(actual[i].y == doctest::Approx(expected[i][1]).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("keypoints: BlazeFace-style MediaPipe decoding, hand-computed") {
  // BlazeFace's TensorsToDetections options: [x, y, w, h] then (x, y) pairs, linear sizes, all scales 128,
  // one class without a background column, unit-size anchors.
  constexpr mosaiq::tflite_postprocess_config blazeface{
      .anchors = 2,
      .classes = 1,
      .background_column = false,
      .max_detections = 2,
      .keypoints = 2,
      .decoding = mosaiq::anchor_decoding::mediapipe,
      .layout = {.reverse_output_order = true, .apply_exponential_on_box_size = false}};
  const std::vector<center_box> anchors{{0.5f, 0.25f, 1, 1}, {0.5f, 0.75f, 1, 1}};
  const std::vector<float> encodings{12.8f, -25.6f, 64, 32, 0,    0,    -12.8f, 25.6f,  // anchor 0
                                     0,     0,      32, 32, 6.4f, 6.4f, 0,      0};     // anchor 1
  const mosaiq::tflite_postprocess_params params{
      .score_threshold = 0.5f, .iou_threshold = 0.3f, .scales = {128, 128, 128, 128}};
  const auto out = run_postprocess<blazeface>(encodings, {0.9f, 0.8f}, anchors, params);
  REQUIRE(out.count == 2);
  // Anchor 0: centre (0.25 + 0.1, 0.5 - 0.2), size 0.5 x 0.25 -> y [0.175, 0.425], x [0.1, 0.6].
  check_box(out.boxes[0], {0.175, 0.1, 0.425, 0.6});
  // Anchor 1: keypoint (0.75 + 0.05, 0.5 + 0.05), then the anchor centre.
  check_keypoints(out.keypoints, {{0.25, 0.5}, {0.15, 0.7}, {0.8, 0.55}, {0.75, 0.5}});
  // Exponential sizes: exp(64 / 128) * 1 wide.
  constexpr auto exponential = with_exponential_sizes(blazeface);
  const auto exp_out = run_postprocess<exponential>(encodings, {0.9f, 0.8f}, anchors, params);
  CHECK(exp_out.boxes[0][3] - exp_out.boxes[0][1] == doctest::Approx(std::exp(0.5)).epsilon(1e-6));
}

TEST_CASE("keypoints: TFLite box decoding with (y, x) keypoint pairs, fast and regular modes") {
  constexpr mosaiq::tflite_postprocess_config fast{
      .anchors = 2, .classes = 2, .max_detections = 2, .max_classes_per_detection = 2, .keypoints = 1};
  constexpr mosaiq::tflite_postprocess_config regular{
      .anchors = 2, .classes = 2, .max_detections = 3, .use_regular_nms = true, .keypoints = 1};
  const std::vector<center_box> anchors{{0.5f, 0.5f, 0.2f, 0.4f}, {0.1f, 0.1f, 0.1f, 0.1f}};
  const std::vector<float> encodings{1, -2, 0, 0, 5, -5,  // anchor 0
                                     0, 0,  0, 0, 0, 0};  // anchor 1: the anchor itself
  const std::vector<float> scores{0, 0.9f, 0.6f, 0, 0.7f, 0.8f};
  const mosaiq::tflite_postprocess_params params{.score_threshold = 0.5f, .iou_threshold = 0.5f};
  const auto f = run_postprocess<fast>(encodings, scores, anchors, params);
  REQUIRE(f.count == 2);
  // TF box coder: centre (0.5 + 1 / 10 * 0.2, 0.5 - 2 / 10 * 0.4) = (0.52, 0.42), size 0.2 x 0.4.
  check_box(f.boxes[0], {0.42, 0.22, 0.62, 0.62});
  // Keypoint (y, x) = (0.5 + 5 / 10 * 0.2, 0.5 - 5 / 10 * 0.4), repeated on the anchor's second class row.
  check_keypoints(f.keypoints, {{0.3, 0.6}, {0.3, 0.6}, {0.1, 0.1}, {0.1, 0.1}});
  const auto r = run_postprocess<regular>(encodings, scores, anchors, params);
  REQUIRE(r.count == 3);
  // Scores 0.9 (anchor 0), 0.8 (anchor 1), 0.7 (anchor 1).
  check_keypoints(r.keypoints, {{0.3, 0.6}, {0.1, 0.1}, {0.1, 0.1}});
}

TEST_CASE("keypoints: random heads agree with the box-only op and with MediaPipe's formula") {
  std::mt19937 rng(7);
  std::normal_distribution<float> raw(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f), size(0.05f, 0.3f);
  constexpr std::size_t anchor_count = 300, k = 3;
  constexpr mosaiq::tflite_postprocess_config with_keypoints{
      .anchors = anchor_count,
      .classes = 4,
      .max_detections = 20,
      .keypoints = k,
      .decoding = mosaiq::anchor_decoding::mediapipe,
      .layout = {.reverse_output_order = true, .apply_exponential_on_box_size = true}};
  constexpr auto box_only = without_keypoints(with_keypoints);
  std::vector<center_box> anchors(anchor_count);
  for (auto& a : anchors) a = {unit(rng), unit(rng), size(rng), size(rng)};
  std::vector<float> encodings(anchor_count * (4 + 2 * k)), boxes_only(anchor_count * 4);
  for (float& v : encodings) v = raw(rng);
  for (std::size_t a = 0; a < anchor_count; ++a)
    std::copy_n(encodings.begin() + static_cast<std::ptrdiff_t>(a * (4 + 2 * k)), 4,
                boxes_only.begin() + static_cast<std::ptrdiff_t>(a * 4));
  std::vector<float> scores(anchor_count * 5);
  for (float& s : scores) s = unit(rng);
  const mosaiq::tflite_postprocess_params params{
      .score_threshold = 0.3f, .iou_threshold = 0.5f, .scales = {10, 10, 5, 5}};
  const auto full = run_postprocess<with_keypoints>(encodings, scores, anchors, params);
  const auto plain = run_postprocess<box_only>(boxes_only, scores, anchors, params);
  REQUIRE(full.count == 20);
  CHECK(full.count == plain.count);
  CHECK(std::memcmp(full.boxes.data(), plain.boxes.data(), full.boxes.size() * sizeof(full.boxes[0])) == 0);
  CHECK(full.scores == plain.scores);
  CHECK(full.classes == plain.classes);
  // Each output row's anchor is the one whose MediaPipe-decoded box (float, as written in DecodeBoxes) it holds.
  for (std::size_t row = 0; row < full.count; ++row) {
    std::size_t matches = 0;
    for (std::size_t a = 0; a < anchor_count; ++a) {
      const float* e = encodings.data() + a * (4 + 2 * k);
      const center_box& an = anchors[a];
      const float xc = e[0] / 10.0f * an.width + an.xcenter, yc = e[1] / 10.0f * an.height + an.ycenter;
      const float h = std::exp(e[3] / 5.0f) * an.height, w = std::exp(e[2] / 5.0f) * an.width;
      if (full.boxes[row] != std::array<float, 4>{yc - h / 2.0f, xc - w / 2.0f, yc + h / 2.0f, xc + w / 2.0f}) continue;
      ++matches;
      for (std::size_t p = 0; p < k; ++p) {
        const keypoint expected{e[4 + 2 * p] / 10.0f * an.width + an.xcenter,
                                e[5 + 2 * p] / 10.0f * an.height + an.ycenter};
        CHECK(full.keypoints[row * k + p] == expected);
      }
    }
    CHECK(matches == 1);
  }
}

TEST_CASE("quantized anchors: bit for bit the run on the dequantized anchors") {
  std::mt19937 rng(3);
  std::normal_distribution<float> raw(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  constexpr std::size_t anchor_count = 200;
  constexpr mosaiq::tflite_postprocess_config fast{
      .anchors = anchor_count, .classes = 3, .max_detections = 15, .max_classes_per_detection = 2, .keypoints = 2};
  constexpr mosaiq::tflite_postprocess_config regular{.anchors = anchor_count,
                                                      .classes = 3,
                                                      .max_detections = 15,
                                                      .detections_per_class = 8,
                                                      .use_regular_nms = true,
                                                      .keypoints = 2};
  constexpr mosaiq::tflite_postprocess_config mediapipe{.anchors = anchor_count,
                                                        .classes = 3,
                                                        .max_detections = 15,
                                                        .keypoints = 2,
                                                        .decoding = mosaiq::anchor_decoding::mediapipe};
  std::vector<std::uint8_t> q(anchor_count * 4);
  for (auto& v : q) v = static_cast<std::uint8_t>(byte(rng));
  std::vector<float> encodings(anchor_count * 8), scores(anchor_count * 4);
  for (float& v : encodings) v = raw(rng);
  for (float& s : scores) s = unit(rng);
  const mosaiq::tflite_postprocess_params params{.score_threshold = 0.2f, .iou_threshold = 0.5f};
  for (const mosaiq::quant_params quant : {mosaiq::quant_params{1.0f / 256, 0}, mosaiq::quant_params{0.0047f, 17}}) {
    // TFLite's Dequantize: (q - zero_point) * scale in float.
    std::vector<center_box> dequantized(anchor_count);
    for (std::size_t a = 0; a < anchor_count; ++a) {
      std::array<float, 4> v{};
      for (std::size_t i = 0; i < 4; ++i)
        v[i] = (static_cast<float>(q[a * 4 + i]) - static_cast<float>(quant.zero_point)) * quant.scale;
      dequantized[a] = {v[0], v[1], v[2], v[3]};
    }
    const mosaiq::input_tensor<std::uint8_t> quantized{q, quant};
    CHECK(same_bits(run_postprocess<fast>(encodings, scores, quantized, params),
                    run_postprocess<fast>(encodings, scores, dequantized, params)));
    CHECK(same_bits(run_postprocess<regular>(encodings, scores, quantized, params),
                    run_postprocess<regular>(encodings, scores, dequantized, params)));
    CHECK(same_bits(run_postprocess<mediapipe>(encodings, scores, quantized, params),
                    run_postprocess<mediapipe>(encodings, scores, dequantized, params)));
    CHECK(run_postprocess<fast>(encodings, scores, quantized, params).count > 0);
  }
  // A hand case: q 128 at scale 1/256 is 0.5.
  const std::vector<float> one_encoding(8, 0.0f);
  constexpr mosaiq::tflite_postprocess_config single{.anchors = 1, .classes = 1, .max_detections = 1, .keypoints = 2};
  const std::vector<std::uint8_t> anchor_q{128, 64, 32, 32};
  const auto out = run_postprocess<single>(one_encoding, {0.0f, 0.9f},
                                           mosaiq::input_tensor<std::uint8_t>{anchor_q, {1.0f / 256, 0}}, params);
  REQUIRE(out.count == 1);
  CHECK(out.boxes[0] == std::array<float, 4>{0.5f - 0.0625f, 0.25f - 0.0625f, 0.5f + 0.0625f, 0.25f + 0.0625f});
  check_keypoints(out.keypoints, {{0.25, 0.5}});
}

TEST_CASE("keypoints and quantized anchors: misuse is reported") {
  mosaiq::test::recording_handler errors;
  constexpr mosaiq::tflite_postprocess_config cfg{.anchors = 2, .classes = 1, .max_detections = 2, .keypoints = 1};
  using op = mosaiq::tflite_detection_postprocess<cfg>;
  static op::workspace scratch;
  std::vector<std::array<float, 4>> boxes(2);
  std::vector<float> classes(2), scores(2), encodings(12, 0.0f), conf(4, 0.9f);
  std::vector<keypoint> keypoints(2);
  const std::vector<center_box> anchors(2, center_box{0.5f, 0.5f, 0.1f, 0.1f});
  const std::vector<std::uint8_t> q(8, 1);
  const op layer({.score_threshold = 0.5f});
  const mosaiq::score_tensor<float> score_input{conf};
  // Box-only encodings where keypoints are expected, a short keypoint output, a short anchor tensor, a NaN scale.
  CHECK(layer.run(mosaiq::input_tensor<float>{std::span(encodings).first(8)}, score_input, anchors,
                  {boxes, classes, scores, keypoints}, scratch.bytes) == 0);
  CHECK(layer.run(mosaiq::input_tensor<float>{encodings}, score_input, anchors,
                  {boxes, classes, scores, std::span(keypoints).first(1)}, scratch.bytes) == 0);
  CHECK(layer.run(mosaiq::input_tensor<float>{encodings}, score_input,
                  mosaiq::input_tensor<std::uint8_t>{std::span(q).first(4), {0.1f, 0}},
                  {boxes, classes, scores, keypoints}, scratch.bytes) == 0);
  CHECK(layer.run(mosaiq::input_tensor<float>{encodings}, score_input,
                  mosaiq::input_tensor<std::uint8_t>{q, {nan_value, 0}}, {boxes, classes, scores, keypoints},
                  scratch.bytes) == 0);
  CHECK(errors.calls() == 4);
  CHECK(layer.run(mosaiq::input_tensor<float>{encodings}, score_input, mosaiq::input_tensor<std::uint8_t>{q, {0.1f, 0}},
                  {boxes, classes, scores, keypoints}, scratch.bytes) == 1);
  CHECK(errors.calls() == 4);
}

TEST_CASE("tflite nms and keypoint post-processing: no heap allocation while running") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  constexpr std::size_t n = 2000;
  std::vector<corner_box> boxes(n);
  std::vector<float> box_scores(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float x = unit(rng), y = unit(rng);
    boxes[i] = {x + 0.1f, y + 0.1f, x, y};
    box_scores[i] = unit(rng);
  }
  static mosaiq::nms_workspace<n> nms_scratch;
  std::vector<std::uint32_t> kept(100);
  std::vector<float> kept_scores(100);
  constexpr mosaiq::tflite_postprocess_config blazeface{.anchors = 896,
                                                        .classes = 1,
                                                        .background_column = false,
                                                        .max_detections = 100,
                                                        .keypoints = 6,
                                                        .decoding = mosaiq::anchor_decoding::mediapipe,
                                                        .layout = {.reverse_output_order = true}};
  using op = mosaiq::tflite_detection_postprocess<blazeface>;
  static op::workspace scratch;
  std::vector<float> encodings(896 * 16, 1.0f), scores(896);
  for (float& s : scores) s = unit(rng);
  std::vector<std::uint8_t> anchors_q(896 * 4, 100);
  std::vector<std::array<float, 4>> out_boxes(100);
  std::vector<float> out_classes(100), out_scores(100);
  std::vector<keypoint> out_keypoints(600);
  const op layer({.score_threshold = 0.5f, .iou_threshold = 0.3f, .scales = {128, 128, 128, 128}});

  const long before = mosaiq::test::heap_allocations();
  const std::size_t v4 =
      mosaiq::nms<nms_rule::tflite>(boxes, box_scores, {.iou_threshold = 0.5f}, kept, kept_scores, nms_scratch.span());
  const std::size_t v5 = mosaiq::nms<nms_rule::tflite>(
      boxes, box_scores, {.iou_threshold = 0.5f, .soft_nms_sigma = 0.5f}, kept, kept_scores, nms_scratch.span());
  const std::size_t detections = layer.run(mosaiq::input_tensor<float>{encodings}, mosaiq::score_tensor<float>{scores},
                                           mosaiq::input_tensor<std::uint8_t>{anchors_q, {1.0f / 128, 0}},
                                           {out_boxes, out_classes, out_scores, out_keypoints}, scratch.bytes);
  CHECK(mosaiq::test::heap_allocations() == before);
  CHECK(v4 == 100);
  CHECK(v5 == 100);
  CHECK(detections > 0);
}
