// Priors, box decoding, NMS, Caffe DetectionOutput, TFLite detection postprocess and Soft-NMS: hand-computed cases
// for each rule, random SSD-shaped inputs against plain std::vector / std::stable_sort implementations written here,
// and (when the build defines MOSAIQ_HAVE_OPENCV) OpenCV dnn's NMSBoxes and softNMSBoxes (its PriorBox and
// DetectionOutput: priors_opencv_test.cpp).
#include "mosaiq/ops/nms.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <new>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "allocation_counter.hpp"
#include "ssd_test_data.hpp"

#if defined(MOSAIQ_HAVE_OPENCV)
// OpenCV 4.6's headers mix enum types, which C++20 deprecates.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-enum-enum-conversion"
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#pragma GCC diagnostic pop
#endif

namespace {

using mosaiq::box_code;
using mosaiq::center_box;
using mosaiq::corner_box;
using mosaiq::detection;
using mosaiq::no_limit;
using mosaiq::prior_box;
using mosaiq::test::check_same_detections;
using mosaiq::test::random_ssd_inputs;
using mosaiq::test::run_detection;

constexpr float nan_value = std::numeric_limits<float>::quiet_NaN();
constexpr float inf_value = std::numeric_limits<float>::infinity();

/// Records errors instead of aborting, for the misuse tests.
struct error_recorder {
  static inline int count = 0;
  static inline mosaiq::errc last = mosaiq::errc::ok;
  static void handler(mosaiq::errc code, const char*, mosaiq::source_location) {
    ++count;
    last = code;
  }
  mosaiq::error_handler previous;
  error_recorder() : previous(mosaiq::set_error_handler(&handler)) { count = 0; }
  ~error_recorder() { mosaiq::set_error_handler(previous); }
};

std::vector<std::uint32_t> run_nms(const std::vector<corner_box>& boxes, const std::vector<float>& scores,
                                   const mosaiq::nms_options& options) {
  std::vector<std::byte> scratch(mosaiq::nms_scratch_bytes(boxes.size()));
  std::vector<std::uint32_t> kept(boxes.size());
  kept.resize(mosaiq::nms(boxes, scores, options, kept, scratch));
  return kept;
}

// ---------------------------------------------------------------------------------------------------------------------
// Plain scalar versions of the rules (the oracle for random inputs).

float ref_box_size(const corner_box& b) {
  if (b.xmax < b.xmin || b.ymax < b.ymin) return 0.0f;
  return (b.xmax - b.xmin) * (b.ymax - b.ymin);
}

/// Caffe JaccardOverlap(bbox1, bbox2), normalized, as bbox_util.cpp writes it.
float ref_caffe_overlap(const corner_box& b1, const corner_box& b2) {
  if (b2.xmin > b1.xmax || b2.xmax < b1.xmin || b2.ymin > b1.ymax || b2.ymax < b1.ymin) return 0.0f;
  const corner_box inter{std::max(b1.xmin, b2.xmin), std::max(b1.ymin, b2.ymin), std::min(b1.xmax, b2.xmax),
                         std::min(b1.ymax, b2.ymax)};
  const float w = inter.xmax - inter.xmin, h = inter.ymax - inter.ymin;
  if (w > 0 && h > 0) {
    const float inter_size = w * h;
    return inter_size / (ref_box_size(b1) + ref_box_size(b2) - inter_size);
  }
  return 0.0f;
}

/// Caffe ApplyNMSFast over candidate indices.
std::vector<int> ref_caffe_nms(const std::vector<corner_box>& boxes, const std::vector<float>& scores, float score_th,
                               float nms_th, float eta, long top_k) {
  std::vector<std::pair<float, int>> order;
  for (int i = 0; i < static_cast<int>(scores.size()); ++i)
    if (scores[static_cast<std::size_t>(i)] > score_th) order.emplace_back(scores[static_cast<std::size_t>(i)], i);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (top_k > -1 && static_cast<long>(order.size()) > top_k) order.resize(static_cast<std::size_t>(top_k));
  std::vector<int> kept;
  float adaptive = nms_th;
  for (const auto& [score, idx] : order) {
    bool keep = true;
    for (const int k : kept) {
      if (keep)
        keep = ref_caffe_overlap(boxes[static_cast<std::size_t>(idx)], boxes[static_cast<std::size_t>(k)]) <= adaptive;
      else
        break;
    }
    if (keep) kept.push_back(idx);
    if (keep && eta < 1 && adaptive > 0.5f) adaptive *= eta;
  }
  return kept;
}

corner_box ref_decode_center_size(const prior_box& p, const float* l) {
  const float pw = p.box.xmax - p.box.xmin, ph = p.box.ymax - p.box.ymin;
  const float pcx = (p.box.xmin + p.box.xmax) / 2.0f, pcy = (p.box.ymin + p.box.ymax) / 2.0f;
  const float cx = p.variance[0] * l[0] * pw + pcx, cy = p.variance[1] * l[1] * ph + pcy;
  const float w = std::exp(p.variance[2] * l[2]) * pw, h = std::exp(p.variance[3] * l[3]) * ph;
  return {cx - w / 2.0f, cy - h / 2.0f, cx + w / 2.0f, cy + h / 2.0f};
}

/// Caffe DetectionOutput (CENTER_SIZE) on float loc and float scores; keep_top_k ties: lower label, lower prior.
std::vector<detection> ref_detection_output(const std::vector<float>& loc, const std::vector<float>& conf,
                                            std::span<const prior_box> priors, int classes, int background,
                                            float conf_th, float nms_th, float eta, long top_k, long keep_top_k,
                                            bool share_location) {
  const std::size_t n = priors.size();
  const int loc_classes = share_location ? 1 : classes;
  std::vector<std::tuple<float, int, int>> all;  // score, label, prior
  std::map<int, std::vector<int>> per_label;
  for (int c = 0; c < classes; ++c) {
    if (c == background) continue;
    std::vector<corner_box> boxes(n);
    std::vector<float> scores(n);
    const int lc = share_location ? 0 : c;
    for (std::size_t p = 0; p < n; ++p) {
      boxes[p] = ref_decode_center_size(
          priors[p], &loc[(p * static_cast<std::size_t>(loc_classes) + static_cast<std::size_t>(lc)) * 4]);
      scores[p] = conf[p * static_cast<std::size_t>(classes) + static_cast<std::size_t>(c)];
    }
    for (const int k : ref_caffe_nms(boxes, scores, conf_th, nms_th, eta, top_k))
      all.emplace_back(scores[static_cast<std::size_t>(k)], c, k);
  }
  if (keep_top_k > -1 && static_cast<long>(all.size()) > keep_top_k) {
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) != std::get<0>(b)   ? std::get<0>(a) > std::get<0>(b)
             : std::get<1>(a) != std::get<1>(b) ? std::get<1>(a) < std::get<1>(b)
                                                : std::get<2>(a) < std::get<2>(b);
    });
    all.resize(static_cast<std::size_t>(keep_top_k));
  }
  std::map<int, std::vector<std::pair<float, int>>> grouped;
  for (const auto& [score, label, prior] : all) grouped[label].emplace_back(score, prior);
  std::vector<detection> out;
  for (auto& [label, entries] : grouped) {
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const int lc = share_location ? 0 : label;
    for (const auto& [score, prior] : entries)
      out.push_back(
          {0, label, score,
           ref_decode_center_size(priors[static_cast<std::size_t>(prior)],
                                  &loc[(static_cast<std::size_t>(prior) * static_cast<std::size_t>(loc_classes) +
                                        static_cast<std::size_t>(lc)) *
                                       4])});
  }
  return out;
}

constexpr auto ssd300_priors =
    mosaiq::caffe_priors<mosaiq::caffe_prior_count(mosaiq::ssd300_prior_layers)>(mosaiq::ssd300_prior_layers);
constexpr auto mobilenet_anchors =
    mosaiq::ssd_anchors<mosaiq::ssd_mobilenet_anchor_generator.anchor_count()>(mosaiq::ssd_mobilenet_anchor_generator);

}  // namespace

// =====================================================================================================================

TEST_CASE("constexpr_sqrt equals std::sqrt") {
  static_assert(mosaiq::constexpr_sqrt(4.0) == 2.0 && mosaiq::constexpr_sqrt(0.0) == 0.0);
  static_assert(mosaiq::constexpr_sqrt(2.25f) == 1.5f);
  // The values the generators take roots of: aspect ratios, min*max size products, scale products.
  for (const double v : {2.0, 3.0, 0.5, 1.0 / 3.0, 1800.0, 6660.0, 17982.0, 34506.0, 56232.0, 83160.0, 0.35 * 0.5,
                         static_cast<double>(2.0f), static_cast<double>(1.0f / 3.0f), static_cast<double>(0.5f)}) {
    CAPTURE(v);
    CHECK(mosaiq::constexpr_sqrt(v) == std::sqrt(v));
    CHECK(mosaiq::constexpr_sqrt(static_cast<float>(v)) == std::sqrt(static_cast<float>(v)));
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-60, 60);
  int mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    const double v = std::ldexp(mantissa(rng), exponent(rng));
    mismatches += mosaiq::constexpr_sqrt(v) != std::sqrt(v);
    const auto f = static_cast<float>(v);
    mismatches += mosaiq::constexpr_sqrt(f) != std::sqrt(f);
  }
  CHECK(mismatches == 0);
  CHECK(std::isnan(mosaiq::constexpr_sqrt(-1.0)));
  CHECK(mosaiq::constexpr_sqrt(inf_value) == inf_value);
}

TEST_CASE("Caffe PriorBox: ratio list, order, values, size rules, clip") {
  int count = 0;
  mosaiq::caffe_prior_layer layer{.layer_height = 1, .layer_width = 1, .min_sizes = {30}, .aspect_ratios = {2, 3}};
  auto list = layer.ratio_list(count);
  CHECK(count == 5);
  CHECK(list[1] == 2.0f);
  CHECK(list[2] == 0.5f);
  CHECK(list[3] == 3.0f);
  CHECK(list[4] == 1.0f / 3.0f);
  layer.aspect_ratios = {2, 0.5f, 1.0000001f};
  layer.ratio_list(count);
  CHECK(count == 3);  // 0.5 already there through flip, 1.0000001 within 1e-6 of 1
  layer.flip = false;
  layer.aspect_ratios = {2};
  layer.ratio_list(count);
  CHECK(count == 2);

  // One cell at the image centre: min 30, max 60, ratio 2 with flip -> 4 priors in Caffe order.
  const mosaiq::caffe_prior_layer one{.layer_height = 1,
                                      .layer_width = 1,
                                      .min_sizes = {30},
                                      .max_sizes = {60},
                                      .aspect_ratios = {2},
                                      .step_h = 300,
                                      .step_w = 300,
                                      .variances = {0.1f, 0.1f, 0.2f, 0.2f}};
  REQUIRE(one.prior_count() == 4);
  std::array<prior_box, 4> priors{};
  REQUIRE(mosaiq::generate_caffe_priors(one, priors) == 4);
  CHECK(priors[0].box == corner_box{0.45f, 0.45f, 0.55f, 0.55f});
  const double side = std::sqrt(1800.0), root2 = std::sqrt(2.0);
  const auto expect = [](double center, double extent) { return static_cast<float>((center - extent / 2.) / 300.); };
  CHECK(priors[1].box.xmin == expect(150, static_cast<float>(side)));
  CHECK(priors[1].box.ymax == static_cast<float>((150 + static_cast<double>(static_cast<float>(side)) / 2.) / 300.));
  CHECK(priors[2].box.xmin == expect(150, static_cast<float>(30 * root2)));  // wide: w = min * sqrt(2)
  CHECK(priors[2].box.ymin == expect(150, static_cast<float>(30 / root2)));
  CHECK(priors[3].box.xmin == expect(150, static_cast<float>(30 / root2)));  // flipped: tall
  CHECK(priors[3].variance == std::array<float, 4>{0.1f, 0.1f, 0.2f, 0.2f});

  // Cell centres: (w + offset) * step; step defaults to image / layer.
  const mosaiq::caffe_prior_layer grid{
      .layer_height = 2, .layer_width = 3, .image_height = 60, .image_width = 90, .min_sizes = {10}};
  std::array<prior_box, 6> cells{};
  REQUIRE(mosaiq::generate_caffe_priors(grid, cells) == 6);
  CHECK(cells[1].box.xmin == doctest::Approx((45.0 - 5.0) / 90.0));  // row 0, column 1: cx = 1.5 * 30
  CHECK(cells[3].box.ymin == doctest::Approx((45.0 - 5.0) / 60.0));  // row 1, column 0: cy = 1.5 * 30

  // Fractional sizes: truncated to int by the Caffe ssd head, kept by OpenCV.
  mosaiq::caffe_prior_layer fractional{
      .layer_height = 1, .layer_width = 1, .min_sizes = {35.84f}, .step_h = 300, .step_w = 300};
  std::array<prior_box, 1> p{};
  mosaiq::generate_caffe_priors(fractional, p);
  CHECK(p[0].box.xmin == static_cast<float>((150 - 35 / 2.) / 300.));
  fractional.size_rule = mosaiq::prior_size_rule::opencv;
  mosaiq::generate_caffe_priors(fractional, p);
  CHECK(p[0].box.xmin == (150.0f - 35.84f * 0.5f) / 300.0f);

  // Clip to [0, 1] after generation.
  mosaiq::caffe_prior_layer big{
      .layer_height = 1, .layer_width = 1, .min_sizes = {300}, .max_sizes = {400}, .step_h = 300, .step_w = 300};
  std::array<prior_box, 2> b{};
  mosaiq::generate_caffe_priors(big, b);
  CHECK(b[1].box.xmin < 0.0f);
  big.clip = true;
  mosaiq::generate_caffe_priors(big, b);
  CHECK(b[1].box == corner_box{0, 0, 1, 1});
}

TEST_CASE("SSD300 priors: 8732, compile time equals run time") {
  static_assert(ssd300_priors.size() == 8732);
  static_assert(mosaiq::ssd300_prior_layers[0].priors_per_cell() == 4 &&
                mosaiq::ssd300_prior_layers[1].priors_per_cell() == 6);
  std::vector<prior_box> runtime(8732);
  REQUIRE(mosaiq::generate_caffe_priors(mosaiq::ssd300_prior_layers, runtime) == 8732);
  CHECK(std::equal(runtime.begin(), runtime.end(), ssd300_priors.begin()));
  // ssd_pascal.py's variances on every prior (Caffe's default would be 0.1 for all four).
  CHECK(std::all_of(ssd300_priors.begin(), ssd300_priors.end(), [](const prior_box& p) {
    return p.variance == std::array<float, 4>{0.1f, 0.1f, 0.2f, 0.2f};
  }));
  // First prior: cell (0, 0) of conv4_3, centre 4, side 30.
  CHECK(ssd300_priors[0].box.xmin == static_cast<float>((4 - 15.) / 300.));
  CHECK(ssd300_priors[0].box.xmax == static_cast<float>((4 + 15.) / 300.));
  // Last prior: the 1x1 layer's 1/2 ratio box.
  CHECK(ssd300_priors[8731].box.ymin ==
        static_cast<float>((150 - static_cast<float>(264 * std::sqrt(2.0)) / 2.) / 300.));
}

TEST_CASE("SSD-MobileNet anchors: 1917, lowest layer reduced, interpolated scale") {
  static_assert(mobilenet_anchors.size() == 1917);
  const center_box first = mobilenet_anchors[0];
  CHECK(first.ycenter == doctest::Approx(0.5 / 19).epsilon(1e-6));
  CHECK(first.height == doctest::Approx(0.1).epsilon(1e-6));
  CHECK(mobilenet_anchors[1].height == doctest::Approx(0.2 / std::sqrt(2.0)).epsilon(1e-6));
  CHECK(mobilenet_anchors[1].width == doctest::Approx(0.2 * std::sqrt(2.0)).epsilon(1e-6));
  CHECK(mobilenet_anchors[2].height == doctest::Approx(0.2 * std::sqrt(2.0)).epsilon(1e-6));
  // Layer 1 (10x10, scale 0.35), first cell: ratios 1, 2, 0.5, 3, 1/3 then sqrt(0.35 * 0.5) at ratio 1.
  const std::size_t layer1 = 19 * 19 * 3;
  CHECK(mobilenet_anchors[layer1].height == doctest::Approx(0.35).epsilon(1e-6));
  CHECK(mobilenet_anchors[layer1].xcenter == doctest::Approx(0.05).epsilon(1e-6));
  CHECK(mobilenet_anchors[layer1 + 5].height == doctest::Approx(std::sqrt(0.35 * 0.5)).epsilon(1e-6));
  CHECK(mobilenet_anchors[layer1 + 6].xcenter == doctest::Approx(0.15).epsilon(1e-6));
  // Last layer (1x1): scale 0.95, interpolated with 1.0.
  CHECK(mobilenet_anchors[1916].height == doctest::Approx(std::sqrt(0.95)).epsilon(1e-6));
  std::vector<center_box> runtime(1917);
  REQUIRE(mosaiq::generate_ssd_anchors(mosaiq::ssd_mobilenet_anchor_generator, runtime) == 1917);
  CHECK(std::equal(runtime.begin(), runtime.end(), mobilenet_anchors.begin()));
}

TEST_CASE("generators report bad configs instead of writing") {
  error_recorder errors;
  std::array<prior_box, 2> small{};
  CHECK(mosaiq::generate_caffe_priors(mosaiq::ssd300_prior_layers[5], small) == 0);
  CHECK(errors.last == mosaiq::errc::shape_mismatch);
  CHECK(mosaiq::generate_caffe_priors(mosaiq::caffe_prior_layer{.layer_height = 1, .layer_width = 1}, small) == 0);
  CHECK(errors.last == mosaiq::errc::invalid_argument);
  std::array<center_box, 1> anchors{};
  CHECK(mosaiq::generate_ssd_anchors(mosaiq::ssd_mobilenet_anchor_generator, anchors) == 0);
  CHECK(errors.count == 3);
}

TEST_CASE("box decoding: Caffe codes, TF box coder, quantized locations") {
  const prior_box prior{{0.4f, 0.4f, 0.6f, 0.6f}, {0.1f, 0.1f, 0.2f, 0.2f}};
  const float ln2 = std::log(2.0f);
  const corner_box center = mosaiq::decode_caffe_box(box_code::center_size, prior, {1, -1, 0, ln2 / 0.2f}, false);
  CHECK(center.xmin == doctest::Approx(0.42));
  CHECK(center.xmax == doctest::Approx(0.62));
  CHECK(center.ymin == doctest::Approx(0.28));
  CHECK(center.ymax == doctest::Approx(0.68));
  const corner_box encoded = mosaiq::decode_caffe_box(box_code::center_size, prior, {0.1f, -0.1f, 0, ln2}, true);
  CHECK(encoded.xmin == doctest::Approx(0.42));
  CHECK(encoded.ymax == doctest::Approx(0.68));
  const corner_box corner = mosaiq::decode_caffe_box(box_code::corner, prior, {1, -1, 0, 1}, false);
  CHECK(corner.xmin == doctest::Approx(0.5));
  CHECK(corner.ymin == doctest::Approx(0.3));
  CHECK(corner.xmax == doctest::Approx(0.6));
  CHECK(corner.ymax == doctest::Approx(0.8));
  const corner_box corner_size = mosaiq::decode_caffe_box(box_code::corner_size, prior, {1, -1, 0, 1}, false);
  CHECK(corner_size.xmin == doctest::Approx(0.42));  // 0.4 + 0.1 * 1 * 0.2
  CHECK(corner_size.ymax == doctest::Approx(0.64));  // 0.6 + 0.2 * 1 * 0.2
  CHECK(mosaiq::box_area(corner_box{0.5f, 0, 0.4f, 1}) == 0.0f);

  const corner_box tf = mosaiq::decode_tf_box({0.5f, 0.5f, 0.2f, 0.1f}, {10, -10, 0, 5 * std::log(2.0f)}, {});
  CHECK(tf.ymin == doctest::Approx(0.6));
  CHECK(tf.ymax == doctest::Approx(0.8));
  CHECK(tf.xmin == doctest::Approx(0.3));
  CHECK(tf.xmax == doctest::Approx(0.5));

  const std::array<std::uint8_t, 4> q{138, 118, 128, 139};
  const mosaiq::input_tensor<std::uint8_t> quantized{q, {0.1f, 128}};
  const auto values = quantized.four(0);
  CHECK(values[0] == doctest::Approx(1.0));
  CHECK(values[1] == doctest::Approx(-1.0));
  CHECK(values[2] == 0.0f);
  const std::array<std::int8_t, 2> qi{-128, 127};
  const mosaiq::input_tensor<std::int8_t> signed_values{qi, {0.5f, -1}};
  CHECK(signed_values[0] == -63.5f);
  CHECK(signed_values[1] == 64.0f);
}

TEST_CASE("nms: hand-computed rules") {
  const std::vector<corner_box> boxes{{0, 0, 10, 10}, {1, 0, 11, 10}, {20, 20, 30, 30}};
  const std::vector<float> scores{0.9f, 0.8f, 0.7f};
  CHECK(run_nms(boxes, scores, {.iou_threshold = 0.45f}) == std::vector<std::uint32_t>{0, 2});  // IoU 90/110
  CHECK(run_nms(boxes, scores, {.iou_threshold = 0.85f}) == std::vector<std::uint32_t>{0, 1, 2});
  // top_k cuts before NMS: box 2 is never considered even though box 1 is suppressed.
  CHECK(run_nms(boxes, scores, {.iou_threshold = 0.45f, .top_k = 2}) == std::vector<std::uint32_t>{0});
  CHECK(run_nms(boxes, scores, {.iou_threshold = 0.45f, .top_k = 0}).empty());
  CHECK(run_nms(boxes, scores, {.iou_threshold = 0.45f, .top_k = 100}) == std::vector<std::uint32_t>{0, 2});
  // Strict score threshold.
  CHECK(run_nms(boxes, scores, {.score_threshold = 0.7f, .iou_threshold = 0.45f}) == std::vector<std::uint32_t>{0});
  CHECK(run_nms(boxes, scores, {.score_threshold = 0.9f}).empty());
  // Equal scores: the lower index wins.
  const std::vector<corner_box> same{{0, 0, 1, 1}, {0, 0, 1, 1}, {0, 0, 1, 1}};
  CHECK(run_nms(same, {0.5f, 0.5f, 0.5f}, {.iou_threshold = 0.5f}) == std::vector<std::uint32_t>{0});
  CHECK(run_nms(same, {0.4f, 0.5f, 0.5f}, {.iou_threshold = 0.5f}) == std::vector<std::uint32_t>{1});
  // IoU exactly at the threshold is kept (suppress iff >).
  const std::vector<corner_box> half{{0, 0, 3, 1}, {1, 0, 4, 1}};  // inter 2, union 4
  CHECK(run_nms(half, {0.9f, 0.8f}, {.iou_threshold = 0.5f}) == std::vector<std::uint32_t>{0, 1});
  CHECK(run_nms(half, {0.9f, 0.8f}, {.iou_threshold = 0.4999f}) == std::vector<std::uint32_t>{0});
  // Adaptive eta: after the first kept box the threshold 0.9 becomes 0.45, so IoU 0.6 now suppresses.
  const std::vector<corner_box> eta_boxes{{0, 0, 10, 10}, {0, 0, 10, 6}};
  CHECK(run_nms(eta_boxes, {0.9f, 0.8f}, {.iou_threshold = 0.9f}) == std::vector<std::uint32_t>{0, 1});
  CHECK(run_nms(eta_boxes, {0.9f, 0.8f}, {.iou_threshold = 0.9f, .eta = 0.5f}) == std::vector<std::uint32_t>{0});
  // eta only applies while the threshold is above 0.5.
  CHECK(run_nms(eta_boxes, {0.9f, 0.8f}, {.iou_threshold = 0.5f, .eta = 0.5f}) == std::vector<std::uint32_t>{0});
  CHECK(run_nms(eta_boxes, {0.9f, 0.8f}, {.iou_threshold = 0.61f, .eta = 0.99f}) == std::vector<std::uint32_t>{0, 1});
  // Degenerate boxes: zero area and inverted boxes have IoU 0 with everything.
  const std::vector<corner_box> flat{{1, 1, 1, 5}, {1, 1, 1, 5}};
  CHECK(run_nms(flat, {0.9f, 0.8f}, {.iou_threshold = 0.1f}) == std::vector<std::uint32_t>{0, 1});
  const std::vector<corner_box> inverted{{10, 10, 0, 0}, {0, 0, 10, 10}};
  CHECK(run_nms(inverted, {0.9f, 0.8f}, {.iou_threshold = 0.1f}) == std::vector<std::uint32_t>{0, 1});
  // Touching boxes do not overlap.
  CHECK(run_nms({{0, 0, 1, 1}, {1, 0, 2, 1}}, {0.9f, 0.8f}, {.iou_threshold = 0.0f}) ==
        std::vector<std::uint32_t>{0, 1});
  CHECK(run_nms({{0, 0, 1, 1}, {0.5f, 0, 2, 1}}, {0.9f, 0.8f}, {.iou_threshold = 0.0f}) ==
        std::vector<std::uint32_t>{0});
  // The output span bounds the result.
  std::vector<std::byte> scratch(mosaiq::nms_scratch_bytes(3));
  std::array<std::uint32_t, 1> one{};
  CHECK(mosaiq::nms(boxes, scores, {.iou_threshold = 0.45f}, one, scratch) == 1);
}

TEST_CASE("nms: NaN and infinite inputs follow Caffe/OpenCV") {
  // NaN scores never pass; +inf ranks first; -inf fails the default -FLT_MAX threshold.
  const std::vector<corner_box> apart{{0, 0, 1, 1}, {2, 2, 3, 3}, {4, 4, 5, 5}, {6, 6, 7, 7}};
  CHECK(run_nms(apart, {nan_value, 0.5f, inf_value, -inf_value}, {}) == std::vector<std::uint32_t>{2, 1});
  // A NaN coordinate on the top box: its area is NaN, so every overlapping later box gets IoU NaN and is dropped.
  const std::vector<corner_box> nan_top{{nan_value, 0, 10, 10}, {0, 0, 10, 10}, {1, 0, 10, 10}, {50, 50, 60, 60}};
  CHECK(run_nms(nan_top, {0.9f, 0.8f, 0.7f, 0.6f}, {.iou_threshold = 0.45f}) == std::vector<std::uint32_t>{0, 3});
  // A NaN coordinate on a later box: intersection widths are NaN, IoU 0, it is kept.
  const std::vector<corner_box> nan_later{{0, 0, 10, 10}, {0, nan_value, 10, 10}};
  CHECK(run_nms(nan_later, {0.9f, 0.8f}, {.iou_threshold = 0.45f}) == std::vector<std::uint32_t>{0, 1});
  // Infinite coordinates stay defined (inf - inf is NaN, handled like the NaN cases).
  const std::vector<corner_box> infinite{{-inf_value, -inf_value, inf_value, inf_value}, {0, 0, 1, 1}, {0, 0, 1, 1}};
  const auto kept = run_nms(infinite, {0.9f, 0.8f, 0.7f}, {.iou_threshold = 0.45f});
  CHECK(std::vector<int>(kept.begin(), kept.end()) ==
        ref_caffe_nms(infinite, {0.9f, 0.8f, 0.7f}, -FLT_MAX, 0.45f, 1.0f, -1));
  // Misuse is reported and nothing is written.
  error_recorder errors;
  CHECK(run_nms(apart, {0.1f, 0.2f, 0.3f, 0.4f}, {.iou_threshold = nan_value}).empty());
  CHECK(run_nms(apart, {0.1f, 0.2f, 0.3f, 0.4f}, {.eta = 0.0f}).empty());
  std::array<std::uint32_t, 4> kept_small{};
  std::array<std::byte, 16> tiny{};
  CHECK(mosaiq::nms(apart, std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f}, {}, kept_small, tiny) == 0);
  CHECK(errors.count == 3);
}

TEST_CASE("nms: random boxes against the scalar Caffe rules") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> coordinate(0.0f, 1.0f), extent(0.01f, 0.4f), score(0.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + rng() % 300;
    std::vector<corner_box> boxes(n);
    std::vector<float> scores(n);
    for (std::size_t i = 0; i < n; ++i) {
      const float x = coordinate(rng), y = coordinate(rng);
      boxes[i] = {x, y, x + extent(rng), y + extent(rng)};
      if (rng() % 20 == 0) std::swap(boxes[i].xmin, boxes[i].xmax);  // some inverted
      scores[i] = rng() % 10 == 0 ? 0.5f : score(rng);               // some ties
    }
    const float threshold = trial % 2 ? 0.45f : 0.7f, eta = trial % 3 ? 1.0f : 0.9f;
    const long top_k = trial % 4 == 0 ? 50 : -1;
    const auto expected = ref_caffe_nms(boxes, scores, 0.2f, threshold, eta, top_k);
    const auto actual = run_nms(boxes, scores,
                                {.score_threshold = 0.2f,
                                 .iou_threshold = threshold,
                                 .eta = eta,
                                 .top_k = top_k < 0 ? no_limit : static_cast<std::size_t>(top_k)});
    REQUIRE(std::vector<int>(actual.begin(), actual.end()) == expected);
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// DetectionOutput

namespace {
// 4 priors whose decoded boxes (CORNER code, zero prior, variance 1) equal the loc values.
constexpr std::array<prior_box, 4> identity_priors{
    {{{}, {1, 1, 1, 1}}, {{}, {1, 1, 1, 1}}, {{}, {1, 1, 1, 1}}, {{}, {1, 1, 1, 1}}}};
const std::vector<float> hand_loc{0, 0, .4f, .4f, .05f, 0, .45f, .4f, .5f, .5f, .9f, .9f, .6f, .6f, 1, 1};
const std::vector<float> hand_conf{.1f, .8f, .1f, .1f, .7f, .2f, .2f, .3f, .5f, .3f, .05f, .65f};

std::vector<std::tuple<int, float, int>> label_score_prior(const std::vector<detection>& rows,
                                                           const std::vector<float>& loc) {
  std::vector<std::tuple<int, float, int>> result;
  for (const auto& row : rows) {
    int prior = -1;
    for (int p = 0; p < 4; ++p)
      if (loc[static_cast<std::size_t>(p) * 4] == row.box.xmin &&
          loc[static_cast<std::size_t>(p) * 4 + 1] == row.box.ymin)
        prior = p;
    result.emplace_back(row.label, row.score, prior);
  }
  return result;
}
}  // namespace

TEST_CASE("detection_output: hand-computed Caffe rules") {
  using rows = std::vector<std::tuple<int, float, int>>;
  constexpr mosaiq::detection_output_config base{.priors = 4, .classes = 3, .code = box_code::corner};
  const mosaiq::detection_thresholds thresholds{.confidence = 0.1f, .nms = 0.45f};
  // class 1: p0 .8, p1 .7 (IoU .78 with p0: suppressed), p2 .3; class 2: p3 .65, p2 .5 (IoU .39), p1 .2.
  CHECK(label_score_prior(run_detection<base>(hand_loc, hand_conf, identity_priors, thresholds), hand_loc) ==
        rows{{1, .8f, 0}, {1, .3f, 2}, {2, .65f, 3}, {2, .5f, 2}, {2, .2f, 1}});
  // keep_top_k 3: the three best overall, printed label-major.
  constexpr mosaiq::detection_output_config keep3{.priors = 4, .classes = 3, .keep_top_k = 3, .code = box_code::corner};
  CHECK(label_score_prior(run_detection<keep3>(hand_loc, hand_conf, identity_priors, thresholds), hand_loc) ==
        rows{{1, .8f, 0}, {2, .65f, 3}, {2, .5f, 2}});
  // top_k 1: one candidate per class before NMS.
  constexpr mosaiq::detection_output_config top1{.priors = 4, .classes = 3, .top_k = 1, .code = box_code::corner};
  CHECK(label_score_prior(run_detection<top1>(hand_loc, hand_conf, identity_priors, thresholds), hand_loc) ==
        rows{{1, .8f, 0}, {2, .65f, 3}});
  // top_k 0 keeps nothing (Caffe), top_k larger than the candidates changes nothing.
  constexpr mosaiq::detection_output_config top0{.priors = 4, .classes = 3, .top_k = 0, .code = box_code::corner};
  CHECK(run_detection<top0>(hand_loc, hand_conf, identity_priors, thresholds).empty());
  constexpr mosaiq::detection_output_config top100{.priors = 4, .classes = 3, .top_k = 100, .code = box_code::corner};
  CHECK(run_detection<top100>(hand_loc, hand_conf, identity_priors, thresholds).size() == 5);
  // No background: class 0 competes too (p3 .3, p2 .2) and comes first.
  constexpr mosaiq::detection_output_config no_background{
      .priors = 4, .classes = 3, .background_label = -1, .code = box_code::corner};
  CHECK(label_score_prior(run_detection<no_background>(hand_loc, hand_conf, identity_priors, thresholds), hand_loc) ==
        rows{{0, .3f, 3}, {0, .2f, 2}, {1, .8f, 0}, {1, .3f, 2}, {2, .65f, 3}, {2, .5f, 2}, {2, .2f, 1}});
  // Background 2: classes 0 and 1 are the foreground.
  constexpr mosaiq::detection_output_config background2{
      .priors = 4, .classes = 3, .background_label = 2, .code = box_code::corner};
  CHECK(label_score_prior(run_detection<background2>(hand_loc, hand_conf, identity_priors, thresholds), hand_loc) ==
        rows{{0, .3f, 3}, {0, .2f, 2}, {1, .8f, 0}, {1, .3f, 2}});
  // Everything under the threshold: no rows.
  CHECK(run_detection<base>(hand_loc, hand_conf, identity_priors, {.confidence = 0.9f, .nms = 0.45f}).empty());
  // Strict threshold: .8 == threshold is dropped.
  CHECK(label_score_prior(run_detection<base>(hand_loc, hand_conf, identity_priors, {.confidence = 0.7f, .nms = 0.45f}),
                          hand_loc) == rows{{1, .8f, 0}});
  // Caffe default threshold (-FLT_MAX): every prior is a candidate, NMS alone decides.
  CHECK(run_detection<base>(hand_loc, hand_conf, identity_priors, {.nms = 0.45f}).size() == 6);
  // Boxes are output unclipped and as decoded.
  const auto rows_out = run_detection<base>(hand_loc, hand_conf, identity_priors, thresholds);
  CHECK(rows_out[0].box == corner_box{0, 0, .4f, .4f});
  CHECK(rows_out[0].row() == std::array<float, 7>{0, 1, .8f, 0, 0, .4f, .4f});
}

TEST_CASE("detection_output: ties, NaN, infinities, degenerate boxes") {
  using rows = std::vector<std::tuple<int, float, int>>;
  constexpr mosaiq::detection_output_config cfg{.priors = 4, .classes = 2, .code = box_code::corner};
  const std::vector<float> same_loc{0, 0, 1, 1, .01f, 0, 1, 1, .02f, 0, 1, 1, .03f, 0, 1, 1};
  // Equal scores on overlapping boxes: the lowest prior index is kept.
  CHECK(label_score_prior(run_detection<cfg>(same_loc, {0, .5f, 0, .5f, 0, .5f, 0, .5f}, identity_priors,
                                             {.confidence = 0.1f, .nms = 0.45f}),
                          same_loc) == rows{{1, .5f, 0}});
  // NaN and -inf scores never pass; +inf does.
  const std::vector<float> apart{0, 0, .1f, .1f, .2f, .2f, .3f, .3f, .4f, .4f, .5f, .5f, .6f, .6f, .7f, .7f};
  CHECK(label_score_prior(run_detection<cfg>(apart, {0, nan_value, 0, inf_value, 0, -inf_value, 0, .5f},
                                             identity_priors, {.nms = 0.45f}),
                          apart) == rows{{1, inf_value, 1}, {1, .5f, 3}});
  // NaN location on the best box: it is output, the overlapping ones are suppressed (Caffe/OpenCV behaviour).
  const std::vector<float> nan_loc{nan_value, 0, 1, 1, 0, 0, 1, 1, .1f, 0, 1, 1, 5, 5, 6, 6};
  const auto nan_rows = run_detection<cfg>(nan_loc, {0, .9f, 0, .8f, 0, .7f, 0, .6f}, identity_priors,
                                           {.confidence = 0.1f, .nms = 0.45f});
  REQUIRE(nan_rows.size() == 2);
  CHECK(std::isnan(nan_rows[0].box.xmin));
  CHECK(nan_rows[1].score == .6f);
  // Zero-area and inverted boxes never suppress nor get suppressed.
  const std::vector<float> degenerate{0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1};
  CHECK(run_detection<cfg>(degenerate, {0, .9f, 0, .8f, 0, .7f, 0, .6f}, identity_priors,
                           {.confidence = 0.1f, .nms = 0.1f})
            .size() == 4);
  // Huge location values overflow exp() to inf: defined results, no crash.
  constexpr mosaiq::detection_output_config center{.priors = 4, .classes = 2, .code = box_code::center_size};
  constexpr std::array<prior_box, 4> unit{{{{0, 0, .5f, .5f}}, {{0, 0, .5f, .5f}}, {{.5f, .5f, 1, 1}}, {{0, 0, 1, 1}}}};
  const std::vector<float> wild{0, 0, 1e30f, 1e30f, inf_value, -inf_value, nan_value, 0, 0, 0, -1e30f, 0, 1, 1, 1, 1};
  const auto wild_rows =
      run_detection<center>(wild, {0, .9f, 0, .8f, 0, .7f, 0, .6f}, unit, {.confidence = 0.1f, .nms = 0.45f});
  CHECK(wild_rows.size() >= 1);
  CHECK(wild_rows[0].score == .9f);
}

TEST_CASE("detection_output: quantized scores compare in the quantized domain") {
  using rows = std::vector<std::tuple<int, float, int>>;
  constexpr mosaiq::detection_output_config cfg{.priors = 4, .classes = 3, .code = box_code::corner};
  static mosaiq::detection_output<cfg>::workspace scratch;
  std::array<detection, 8> out{};
  // Scores q / 256: the threshold 32/256 keeps q = 33, drops q = 32.
  const std::array<std::uint8_t, 12> conf{0, 33, 32, 0, 200, 0, 0, 0, 255, 0, 31, 40};
  const mosaiq::detection_output<cfg> layer({.confidence = 32.0f / 256.0f, .nms = 0.45f});
  const std::size_t n =
      layer.run(mosaiq::input_tensor<float>{hand_loc}, mosaiq::score_tensor<std::uint8_t>{conf, {1.0f / 256.0f, 0}},
                identity_priors, out, scratch.bytes);
  CHECK(label_score_prior({out.begin(), out.begin() + static_cast<long>(n)}, hand_loc) ==
        rows{{1, 200 / 256.0f, 1}, {2, 1.0f - 1 / 256.0f, 2}, {2, 40 / 256.0f, 3}});
  // int8 scores and int8 locations (scale 1/100): same boxes to 1e-6.
  std::array<std::int8_t, 16> loc_q{};
  for (std::size_t i = 0; i < 16; ++i) loc_q[i] = static_cast<std::int8_t>(std::lround(hand_loc[i] * 100));
  std::array<std::int8_t, 12> conf_q{};
  for (std::size_t i = 0; i < 12; ++i) conf_q[i] = static_cast<std::int8_t>(conf[i] - 128);
  const std::size_t m =
      layer.run(mosaiq::input_tensor<std::int8_t>{loc_q, {0.01f, 0}},
                mosaiq::score_tensor<std::int8_t>{conf_q, {1.0f / 256.0f, -128}}, identity_priors, out, scratch.bytes);
  REQUIRE(m == 3);
  CHECK(out[0].box.xmax == doctest::Approx(0.45f));
  CHECK(out[2].score == 40 / 256.0f);
  // Logistic over quantized logits: sigmoid(q * 0.1) > 0.5 iff q > 0.
  const std::array<std::int8_t, 12> logits{0, 1, 0, 0, 0, 0, 0, -1, 0, 0, 0, 5};
  const mosaiq::detection_output<cfg> half({.confidence = 0.5f, .nms = 0.45f});
  const std::size_t k =
      half.run(mosaiq::input_tensor<float>{hand_loc},
               mosaiq::score_tensor<std::int8_t>{logits, {0.1f, 0}, mosaiq::score_activation::logistic},
               identity_priors, out, scratch.bytes);
  CHECK(label_score_prior({out.begin(), out.begin() + static_cast<long>(k)}, hand_loc) ==
        rows{{1, 1.0f / (1.0f + std::exp(-0.1f)), 0}, {2, 1.0f / (1.0f + std::exp(-0.5f)), 3}});
  // Softmax over quantized logits: equal logits give 1/3 each.
  const std::array<std::uint8_t, 12> flat{7, 7, 7, 7, 7, 7, 0, 9, 0, 0, 0, 0};
  const mosaiq::detection_output<cfg> third({.confidence = 0.3f, .nms = 0.45f});
  const std::size_t s =
      third.run(mosaiq::input_tensor<float>{hand_loc},
                mosaiq::score_tensor<std::uint8_t>{flat, {1.0f, 0}, mosaiq::score_activation::softmax}, identity_priors,
                out, scratch.bytes);
  // p0, p1, p3 at 1/3 per class (p1 suppressed by p0), p2 class 1 near 1 (e^-9 elsewhere).
  CHECK(label_score_prior({out.begin(), out.begin() + static_cast<long>(s)}, hand_loc) == rows{{1, out[0].score, 2},
                                                                                               {1, out[1].score, 0},
                                                                                               {1, out[1].score, 3},
                                                                                               {2, out[1].score, 0},
                                                                                               {2, out[1].score, 3}});
  CHECK(out[0].score == doctest::Approx(1.0 / (1.0 + 2 * std::exp(-9.0))));
  CHECK(out[1].score == doctest::Approx(1.0 / 3.0));
}

TEST_CASE("detection_output: misuse is reported") {
  constexpr mosaiq::detection_output_config cfg{.priors = 4, .classes = 3};
  static mosaiq::detection_output<cfg>::workspace scratch;
  std::array<detection, 8> out{};
  error_recorder errors;
  const mosaiq::detection_output<cfg> layer({.nms = 0.45f});
  CHECK(layer.run(mosaiq::input_tensor<float>{std::span(hand_loc).first(8)}, mosaiq::score_tensor<float>{hand_conf},
                  identity_priors, out, scratch.bytes) == 0);
  CHECK(layer.run(mosaiq::input_tensor<float>{hand_loc}, mosaiq::score_tensor<float>{hand_conf}, identity_priors, out,
                  std::span(scratch.bytes).first(100)) == 0);
  const mosaiq::detection_output<cfg> bad_eta({.nms = 0.45f, .eta = 1.5f});
  CHECK(bad_eta.run(mosaiq::input_tensor<float>{hand_loc}, mosaiq::score_tensor<float>{hand_conf}, identity_priors, out,
                    scratch.bytes) == 0);
  const std::array<std::uint8_t, 12> q{};
  CHECK(layer.run(mosaiq::input_tensor<float>{hand_loc}, mosaiq::score_tensor<std::uint8_t>{q, {0.0f, 0}},
                  identity_priors, out, scratch.bytes) == 0);
  CHECK(errors.count == 4);
}

TEST_CASE("detection_output: random SSD300 inputs against the scalar Caffe rules") {
  std::mt19937 rng(3);
  constexpr mosaiq::detection_output_config ssd300{
      .priors = 8732, .classes = 21, .top_k = 400, .keep_top_k = 200, .code = box_code::center_size};
  for (int trial = 0; trial < 3; ++trial) {
    const auto in = random_ssd_inputs(8732, 21, 1, rng);
    const auto expected =
        ref_detection_output(in.loc, in.conf, ssd300_priors, 21, 0, 0.01f, 0.45f, 1.0f, 400, 200, true);
    CHECK(expected.size() == 200);
    check_same_detections(expected,
                          run_detection<ssd300>(in.loc, in.conf, ssd300_priors, {.confidence = 0.01f, .nms = 0.45f}));
  }
  // Identical priors and zero offsets: every class keeps one box after walking its whole top_k, more candidates than
  // the global first pass holds, so the per-class selection has to take over.
  const std::vector<prior_box> same_priors(8732, ssd300_priors[100]);
  auto crowded = random_ssd_inputs(8732, 21, 1, rng);
  std::fill(crowded.loc.begin(), crowded.loc.end(), 0.0f);
  const auto expected_crowded =
      ref_detection_output(crowded.loc, crowded.conf, same_priors, 21, 0, 0.01f, 0.45f, 1.0f, 400, 200, true);
  CHECK(expected_crowded.size() == 20);
  check_same_detections(expected_crowded, run_detection<ssd300>(crowded.loc, crowded.conf, same_priors,
                                                                {.confidence = 0.01f, .nms = 0.45f}));
  // No limits, eta, no background, per-class locations, on a smaller prior set.
  std::vector<prior_box> priors(ssd300_priors.end() - 600, ssd300_priors.end());
  constexpr mosaiq::detection_output_config open{
      .priors = 600, .classes = 5, .background_label = -1, .code = box_code::center_size, .share_location = false};
  for (int trial = 0; trial < 3; ++trial) {
    const auto in = random_ssd_inputs(600, 5, 5, rng, 40);
    const auto expected = ref_detection_output(in.loc, in.conf, priors, 5, -1, 0.02f, 0.6f, 0.9f, -1, -1, false);
    check_same_detections(
        expected, run_detection<open>(in.loc, in.conf, priors, {.confidence = 0.02f, .nms = 0.6f, .eta = 0.9f}));
  }
}

TEST_CASE("detection_output: quantized and logit inputs against the scalar rules on dequantized scores") {
  std::mt19937 rng(5);
  constexpr mosaiq::detection_output_config cfg{
      .priors = 1917, .classes = 21, .top_k = 100, .keep_top_k = 100, .code = box_code::center_size};
  std::vector<prior_box> priors(ssd300_priors.begin(), ssd300_priors.begin() + 1917);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> loc_q(1917 * 4), conf_q(1917 * 21);
  for (auto& v : loc_q) v = static_cast<std::uint8_t>(byte(rng));
  for (auto& v : conf_q) v = static_cast<std::uint8_t>(byte(rng) < 240 ? byte(rng) / 8 : byte(rng));
  const mosaiq::quant_params loc_quant{0.02f, 128}, conf_quant{1.0f / 256.0f, 0}, logit_quant{0.0625f, 100};
  std::vector<float> loc(loc_q.size()), conf(conf_q.size()), sigmoid(conf_q.size()), softmax(conf_q.size());
  for (std::size_t i = 0; i < loc.size(); ++i) loc[i] = mosaiq::dequantize_value(loc_q[i], loc_quant);
  for (std::size_t i = 0; i < conf.size(); ++i) {
    conf[i] = mosaiq::dequantize_value(conf_q[i], conf_quant);
    sigmoid[i] = 1.0f / (1.0f + std::exp(-mosaiq::dequantize_value(conf_q[i], logit_quant)));
  }
  // Softmax as documented: exp table of scale * (q - max), float sum in class order, times 1/sum.
  for (std::size_t p = 0; p < 1917; ++p) {
    const auto* row = &conf_q[p * 21];
    const int max = *std::max_element(row, row + 21);
    float sum = 0;
    for (int c = 0; c < 21; ++c)
      sum += static_cast<float>(std::exp(static_cast<double>(logit_quant.scale) * (row[c] - max)));
    for (int c = 0; c < 21; ++c)
      softmax[p * 21 + static_cast<std::size_t>(c)] =
          static_cast<float>(std::exp(static_cast<double>(logit_quant.scale) * (row[c] - max))) * (1.0f / sum);
  }
  static mosaiq::detection_output<cfg>::workspace scratch;
  std::vector<detection> out(100);
  const mosaiq::detection_output<cfg> layer({.confidence = 0.05f, .nms = 0.45f});
  const auto run = [&](mosaiq::score_activation activation, mosaiq::quant_params quant) {
    return std::vector<detection>(
        out.begin(),
        out.begin() + static_cast<long>(layer.run(mosaiq::input_tensor<std::uint8_t>{loc_q, loc_quant},
                                                  mosaiq::score_tensor<std::uint8_t>{conf_q, quant, activation}, priors,
                                                  out, scratch.bytes)));
  };
  check_same_detections(ref_detection_output(loc, conf, priors, 21, 0, 0.05f, 0.45f, 1.0f, 100, 100, true),
                        run(mosaiq::score_activation::none, conf_quant));
  check_same_detections(ref_detection_output(loc, sigmoid, priors, 21, 0, 0.05f, 0.45f, 1.0f, 100, 100, true),
                        run(mosaiq::score_activation::logistic, logit_quant));
  check_same_detections(ref_detection_output(loc, softmax, priors, 21, 0, 0.05f, 0.45f, 1.0f, 100, 100, true),
                        run(mosaiq::score_activation::softmax, logit_quant));
}

// ---------------------------------------------------------------------------------------------------------------------
// TFLite detection postprocess

namespace {
struct tflite_row {
  std::array<float, 4> box;
  float label, score;
  friend bool operator==(const tflite_row&, const tflite_row&) = default;
};

corner_box ref_tf_decode(const center_box& a, const float* t) {
  const double yc = t[0] / 10.0 * a.height + a.ycenter, xc = t[1] / 10.0 * a.width + a.xcenter;
  const double hh = 0.5 * std::exp(t[2] / 5.0) * a.height, hw = 0.5 * std::exp(t[3] / 5.0) * a.width;
  return {static_cast<float>(xc - hw), static_cast<float>(yc - hh), static_cast<float>(xc + hw),
          static_cast<float>(yc + hh)};
}

float ref_tf_iou(const corner_box& i, const corner_box& j) {
  const float area_i = (i.ymax - i.ymin) * (i.xmax - i.xmin), area_j = (j.ymax - j.ymin) * (j.xmax - j.xmin);
  if (area_i <= 0 || area_j <= 0) return 0.0f;
  const float iymin = std::max<float>(i.ymin, j.ymin), ixmin = std::max<float>(i.xmin, j.xmin);
  const float iymax = std::min<float>(i.ymax, j.ymax), ixmax = std::min<float>(i.xmax, j.xmax);
  const float inter = std::max<float>(iymax - iymin, 0.0f) * std::max<float>(ixmax - ixmin, 0.0f);
  return inter / (area_i + area_j - inter);
}

/// TFLite NonMaxSuppressionSingleClassHelper: indices selected.
std::vector<int> ref_tf_nms(const std::vector<corner_box>& boxes, const std::vector<float>& scores, float score_th,
                            float iou_th, std::size_t max_detections) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(scores.size()); ++i)
    if (scores[static_cast<std::size_t>(i)] >= score_th) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return scores[static_cast<std::size_t>(a)] > scores[static_cast<std::size_t>(b)];
  });
  std::vector<bool> active(order.size(), true);
  std::vector<int> selected;
  for (std::size_t i = 0; i < order.size() && selected.size() < max_detections; ++i) {
    if (!active[i]) continue;
    selected.push_back(order[i]);
    for (std::size_t j = i + 1; j < order.size(); ++j)
      if (active[j] &&
          ref_tf_iou(boxes[static_cast<std::size_t>(order[i])], boxes[static_cast<std::size_t>(order[j])]) > iou_th)
        active[j] = false;
  }
  return selected;
}

std::vector<tflite_row> ref_tflite(const std::vector<float>& enc, const std::vector<float>& scores,
                                   std::span<const center_box> anchors, std::size_t classes, float score_th,
                                   float iou_th, std::size_t max_det, std::size_t per_det, bool regular,
                                   std::size_t per_class) {
  const std::size_t n = anchors.size(), columns = classes + 1;
  std::vector<corner_box> boxes(n);
  for (std::size_t a = 0; a < n; ++a) boxes[a] = ref_tf_decode(anchors[a], &enc[a * 4]);
  std::vector<tflite_row> out;
  const auto row_of = [&](int anchor, std::size_t label, float score) {
    const corner_box& b = boxes[static_cast<std::size_t>(anchor)];
    return tflite_row{{b.ymin, b.xmin, b.ymax, b.xmax}, static_cast<float>(label), score};
  };
  if (!regular) {
    std::vector<float> max_scores(n);
    for (std::size_t a = 0; a < n; ++a)
      max_scores[a] = *std::max_element(&scores[a * columns + 1], &scores[a * columns + columns]);
    for (const int a : ref_tf_nms(boxes, max_scores, score_th, iou_th, max_det)) {
      std::vector<std::size_t> labels(classes);
      for (std::size_t c = 0; c < classes; ++c) labels[c] = c;
      std::stable_sort(labels.begin(), labels.end(), [&](std::size_t x, std::size_t y) {
        return scores[static_cast<std::size_t>(a) * columns + 1 + x] >
               scores[static_cast<std::size_t>(a) * columns + 1 + y];
      });
      for (std::size_t k = 0; k < std::min(per_det, classes); ++k)
        out.push_back(row_of(a, labels[k], scores[static_cast<std::size_t>(a) * columns + 1 + labels[k]]));
    }
    return out;
  }
  std::vector<std::tuple<float, std::size_t, int>> all;  // score, label, anchor (class order, NMS order)
  for (std::size_t c = 0; c < classes; ++c) {
    std::vector<float> class_scores(n);
    for (std::size_t a = 0; a < n; ++a) class_scores[a] = scores[a * columns + 1 + c];
    for (const int a : ref_tf_nms(boxes, class_scores, score_th, iou_th, per_class))
      all.emplace_back(class_scores[static_cast<std::size_t>(a)], c, a);
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& x, const auto& y) { return std::get<0>(x) > std::get<0>(y); });
  if (all.size() > max_det) all.resize(max_det);
  for (const auto& [score, label, anchor] : all) out.push_back(row_of(anchor, label, score));
  return out;
}

template <mosaiq::tflite_postprocess_config Cfg, class S>
std::vector<tflite_row> run_tflite(const std::vector<float>& enc, const mosaiq::score_tensor<S>& scores,
                                   std::span<const center_box> anchors, mosaiq::tflite_postprocess_params params,
                                   std::size_t* count = nullptr) {
  using op = mosaiq::tflite_detection_postprocess<Cfg>;
  static typename op::workspace scratch;
  std::vector<std::array<float, 4>> boxes(op::output_rows);
  std::vector<float> classes(op::output_rows), out_scores(op::output_rows);
  const std::size_t n =
      op(params).run(mosaiq::input_tensor<float>{enc}, scores, anchors, {boxes, classes, out_scores}, scratch.bytes);
  if (count) *count = n;
  const std::size_t rows = Cfg.use_regular_nms ? n : n * Cfg.classes_per_detection();
  std::vector<tflite_row> out;
  for (std::size_t i = 0; i < op::output_rows; ++i) {
    if (i < rows)
      out.push_back({boxes[i], classes[i], out_scores[i]});
    else
      CHECK((boxes[i] == std::array<float, 4>{} && classes[i] == 0 && out_scores[i] == 0));  // zero-filled tail
  }
  return out;
}
}  // namespace

TEST_CASE("tflite postprocess: hand-computed fast and regular modes") {
  // 4 anchors of size 0.2 at (0.2, 0.2), (0.22, 0.2), (0.6, 0.6), (0.2, 0.2); zero encodings decode to the anchors.
  const std::vector<center_box> anchors{
      {.2f, .2f, .2f, .2f}, {.22f, .2f, .2f, .2f}, {.6f, .6f, .2f, .2f}, {.2f, .2f, .2f, .2f}};
  const std::vector<float> enc(16, 0.0f);
  // columns: background, class 0, class 1
  const std::vector<float> scores{.9f, .3f, .6f, 0, .7f, .2f, 0, .5f, .5f, 0, .1f, .05f};
  constexpr mosaiq::tflite_postprocess_config fast{.anchors = 4, .classes = 2, .max_detections = 3};
  const auto rows = run_tflite<fast>(enc, mosaiq::score_tensor<float>{scores}, anchors,
                                     {.score_threshold = 0.1f, .iou_threshold = 0.5f});
  // anchor 1 (.7) first, anchor 0 (.6, IoU .82 with 1) suppressed, anchor 2 (.5: first max -> class 0),
  // anchor 3 (.1 >= .1 inclusive, identical to anchor 0's box, IoU .82 with anchor 1) suppressed.
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].label == 0);
  CHECK(rows[0].score == .7f);
  CHECK(rows[0].box[0] == doctest::Approx(.12));
  CHECK(rows[1].label == 0);
  CHECK(rows[1].score == .5f);
  // Two classes per detection: anchor 1 -> (0 .7, 1 .2), anchor 2 -> (0 .5, 1 .5) (tie: lower class first).
  constexpr mosaiq::tflite_postprocess_config fast2{
      .anchors = 4, .classes = 2, .max_detections = 3, .max_classes_per_detection = 2};
  std::size_t count = 0;
  const auto rows2 = run_tflite<fast2>(enc, mosaiq::score_tensor<float>{scores}, anchors,
                                       {.score_threshold = 0.1f, .iou_threshold = 0.5f}, &count);
  CHECK(count == 2);
  REQUIRE(rows2.size() == 4);
  CHECK((rows2[1].label == 1 && rows2[1].score == .2f));
  CHECK((rows2[2].label == 0 && rows2[3].label == 1 && rows2[3].score == .5f));
  // Regular: class 0: 1 (.7), 0 suppressed, 2 (.5), 3 (.1) suppressed; class 1: 0 (.6), 2 (.5), 1 (.2) suppressed,
  // 3 (.05) under the threshold. Merged best 3: .7 (c0), .6 (c1), then .5 c0 before .5 c1.
  constexpr mosaiq::tflite_postprocess_config regular{
      .anchors = 4, .classes = 2, .max_detections = 3, .use_regular_nms = true};
  const auto rows3 = run_tflite<regular>(enc, mosaiq::score_tensor<float>{scores}, anchors,
                                         {.score_threshold = 0.1f, .iou_threshold = 0.5f});
  REQUIRE(rows3.size() == 3);
  CHECK((rows3[0].score == .7f && rows3[0].label == 0));
  CHECK((rows3[1].score == .6f && rows3[1].label == 1));
  CHECK((rows3[2].score == .5f && rows3[2].label == 0));
  // Nothing above the threshold.
  CHECK(run_tflite<regular>(enc, mosaiq::score_tensor<float>{scores}, anchors, {.score_threshold = 0.95f}).empty());
}

TEST_CASE("tflite postprocess: random SSD-MobileNet inputs against the scalar TFLite rules") {
  std::mt19937 rng(9);
  std::normal_distribution<float> encoding(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> enc(1917 * 4), scores(1917 * 91);
  for (auto& v : enc) v = encoding(rng);
  for (auto& v : scores) {
    const float u = uniform(rng);
    v = u * u * u * u;
  }
  constexpr mosaiq::tflite_postprocess_config fast{.anchors = 1917, .classes = 90};
  constexpr mosaiq::tflite_postprocess_config fast3{
      .anchors = 1917, .classes = 90, .max_detections = 20, .max_classes_per_detection = 3};
  constexpr mosaiq::tflite_postprocess_config regular{
      .anchors = 1917, .classes = 90, .max_detections = 100, .use_regular_nms = true};
  for (const float threshold : {1e-8f, 0.3f, 0.9f}) {
    CAPTURE(threshold);
    const mosaiq::tflite_postprocess_params params{.score_threshold = threshold, .iou_threshold = 0.6f};
    CHECK(run_tflite<fast>(enc, mosaiq::score_tensor<float>{scores}, mobilenet_anchors, params) ==
          ref_tflite(enc, scores, mobilenet_anchors, 90, threshold, 0.6f, 10, 1, false, 100));
    CHECK(run_tflite<fast3>(enc, mosaiq::score_tensor<float>{scores}, mobilenet_anchors, params) ==
          ref_tflite(enc, scores, mobilenet_anchors, 90, threshold, 0.6f, 20, 3, false, 100));
    CHECK(run_tflite<regular>(enc, mosaiq::score_tensor<float>{scores}, mobilenet_anchors, params) ==
          ref_tflite(enc, scores, mobilenet_anchors, 90, threshold, 0.6f, 100, 1, true, 100));
  }
  // uint8 scores (scale 1/255): the same as float scores holding the dequantized values.
  std::vector<std::uint8_t> q(scores.size());
  std::vector<float> dq(scores.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<std::uint8_t>(std::lround(scores[i] * 255));
    dq[i] = mosaiq::dequantize_value(q[i], {1.0f / 255.0f, 0});
  }
  const mosaiq::tflite_postprocess_params params{.score_threshold = 0.2f, .iou_threshold = 0.6f};
  CHECK(run_tflite<fast>(enc, mosaiq::score_tensor<std::uint8_t>{q, {1.0f / 255.0f, 0}}, mobilenet_anchors, params) ==
        ref_tflite(enc, dq, mobilenet_anchors, 90, 0.2f, 0.6f, 10, 1, false, 100));
  CHECK(run_tflite<regular>(enc, mosaiq::score_tensor<std::uint8_t>{q, {1.0f / 255.0f, 0}}, mobilenet_anchors,
                            params) == ref_tflite(enc, dq, mobilenet_anchors, 90, 0.2f, 0.6f, 100, 1, true, 100));
}

// ---------------------------------------------------------------------------------------------------------------------
// Soft-NMS

namespace {
std::pair<std::vector<std::uint32_t>, std::vector<float>> run_soft(const std::vector<corner_box>& boxes,
                                                                   const std::vector<float>& scores,
                                                                   const mosaiq::soft_nms_options& options) {
  std::vector<std::byte> scratch(mosaiq::soft_nms_scratch_bytes(boxes.size()));
  std::vector<std::uint32_t> kept(boxes.size());
  std::vector<float> kept_scores(boxes.size());
  const std::size_t n = mosaiq::soft_nms(boxes, scores, options, kept, kept_scores, scratch);
  kept.resize(n);
  kept_scores.resize(n);
  return {kept, kept_scores};
}
}  // namespace

TEST_CASE("soft_nms: hand-computed linear and gaussian decay") {
  // IoU 90/110 = 0.818..., score 0.8 -> gaussian 0.8 * exp(-iou^2 / 0.5) = 0.2097, linear 0.8 * (1 - iou) = 0.1455.
  const std::vector<corner_box> boxes{{0, 0, 10, 10}, {1, 0, 11, 10}, {50, 50, 60, 60}};
  const std::vector<float> scores{0.9f, 0.8f, 0.1f};
  const auto [gaussian_kept, gaussian_scores] = run_soft(boxes, scores, {.score_threshold = 0.05f});
  CHECK(gaussian_kept == std::vector<std::uint32_t>{0, 1, 2});
  CHECK(gaussian_scores[1] == doctest::Approx(0.2097).epsilon(1e-3));
  const auto [linear_kept, linear_scores] =
      run_soft(boxes, scores, {.method = mosaiq::soft_nms_method::linear, .score_threshold = 0.05f});
  CHECK(linear_kept == std::vector<std::uint32_t>{0, 1, 2});
  CHECK(linear_scores[1] == doctest::Approx(0.1455).epsilon(1e-3));
  // Linear with a threshold above the IoU: no decay. Scores under the threshold stop the selection.
  CHECK(run_soft(boxes, scores,
                 {.method = mosaiq::soft_nms_method::linear, .iou_threshold = 0.9f, .score_threshold = 0.05f})
            .second[1] == 0.8f);
  CHECK(run_soft(boxes, scores, {.score_threshold = 0.25f}).first == std::vector<std::uint32_t>{0});
  // Decay can reorder: box 1 falls below box 2.
  const auto [reordered, reordered_scores] = run_soft(boxes, {0.9f, 0.8f, 0.5f}, {.score_threshold = 0.05f});
  CHECK(reordered == std::vector<std::uint32_t>{0, 2, 1});
  // top_k caps the output; NaN scores never enter; ties to the lower index.
  CHECK(run_soft(boxes, scores, {.score_threshold = 0.05f, .top_k = 1}).first.size() == 1);
  CHECK(run_soft(boxes, {nan_value, 0.5f, 0.5f}, {}).first == std::vector<std::uint32_t>{1, 2});
}

TEST_CASE("no heap allocation while running") {
  std::mt19937 rng(1);
  const auto in = random_ssd_inputs(8732, 21, 1, rng);
  constexpr mosaiq::detection_output_config ssd300{
      .priors = 8732, .classes = 21, .top_k = 400, .keep_top_k = 200, .code = box_code::center_size};
  static mosaiq::detection_output<ssd300>::workspace scratch;
  static std::array<detection, 200> out;
  const mosaiq::detection_output<ssd300> layer({.confidence = 0.01f, .nms = 0.45f});
  constexpr mosaiq::tflite_postprocess_config regular{.anchors = 1917, .classes = 20, .use_regular_nms = true};
  static mosaiq::tflite_detection_postprocess<regular>::workspace tflite_scratch;
  std::array<std::array<float, 4>, 10> boxes{};
  std::array<float, 10> classes{}, scores{};
  std::vector<float> enc(1917 * 4, 0.1f);
  static mosaiq::nms_workspace<8732> nms_scratch;
  std::vector<corner_box> plain(8732);
  for (std::size_t i = 0; i < plain.size(); ++i)
    plain[i] = mosaiq::decode_caffe_box(box_code::center_size, ssd300_priors[i], {}, false);
  std::vector<float> plain_scores(in.conf.begin(), in.conf.begin() + 8732);
  std::vector<std::uint32_t> kept(8732);
  std::vector<float> kept_scores(8732);

  const long allocations_before = mosaiq::test::heap_allocations();
  const std::size_t n = layer.run(mosaiq::input_tensor<float>{in.loc}, mosaiq::score_tensor<float>{in.conf},
                                  ssd300_priors, out, scratch.bytes);
  const std::size_t t =
      mosaiq::tflite_detection_postprocess<regular>({.score_threshold = 0.05f})
          .run(mosaiq::input_tensor<float>{enc}, mosaiq::score_tensor<float>{std::span(in.conf).first(1917 * 21)},
               mobilenet_anchors, {boxes, classes, scores}, tflite_scratch.bytes);
  const std::size_t k =
      mosaiq::nms(plain, plain_scores, {.score_threshold = 0.01f, .iou_threshold = 0.45f}, kept, nms_scratch.span());
  const std::size_t s = mosaiq::soft_nms(std::span(plain).first(500), std::span(plain_scores).first(500),
                                         {.score_threshold = 0.01f}, kept, kept_scores, nms_scratch.span());
  CHECK(mosaiq::test::heap_allocations() == allocations_before);
  CHECK(n == 200);
  CHECK(t > 0);
  CHECK(k > 0);
  CHECK(s > 0);
  // The counter itself works.
  const long before_probe = mosaiq::test::heap_allocations();
  // A direct call: unlike a new-expression, the compiler may not elide it.
  void* probe = ::operator new(16);
  ::operator delete(probe);
  CHECK(mosaiq::test::heap_allocations() >= before_probe + 1);
}

// ---------------------------------------------------------------------------------------------------------------------
// OpenCV

#if defined(MOSAIQ_HAVE_OPENCV)
TEST_CASE("OpenCV NMSBoxes agrees on (x, y, w, h) integer boxes") {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> position(0, 200), size(1, 60);
  std::uniform_real_distribution<float> score(0.0f, 1.0f);
  int compared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + rng() % 200;
    std::vector<cv::Rect2d> rects(n);
    std::vector<corner_box> boxes(n);
    std::vector<float> scores(n);
    for (std::size_t i = 0; i < n; ++i) {
      const int x = position(rng), y = position(rng), w = size(rng), h = size(rng);
      rects[i] = cv::Rect2d(x, y, w, h);
      boxes[i] = {static_cast<float>(x), static_cast<float>(y), static_cast<float>(x + w), static_cast<float>(y + h)};
      scores[i] = score(rng);
    }
    const float threshold = trial % 2 ? 0.45f : 0.3f, eta = trial % 3 == 0 ? 0.8f : 1.0f;
    const int top_k = trial % 4 == 0 ? 30 : 0;
    // Skip draws with an IoU within float rounding of the threshold (OpenCV computes it as 1 - (1 - iou) in double).
    bool near = false;
    for (std::size_t i = 0; i < n && !near; ++i)
      for (std::size_t j = i + 1; j < n && !near; ++j) {
        const double iou = mosaiq::detail::caffe_iou(boxes[i], boxes[j]);
        for (double t = threshold; t > 0.0; t *= eta) {
          near = near || std::abs(iou - t) < 1e-5;
          if (eta == 1.0f || t <= 0.5) break;
        }
      }
    if (near) continue;
    std::vector<int> expected;
    cv::dnn::NMSBoxes(rects, scores, 0.2f, threshold, expected, eta, top_k);
    const auto actual = run_nms(boxes, scores,
                                {.score_threshold = 0.2f,
                                 .iou_threshold = threshold,
                                 .eta = eta,
                                 .top_k = top_k > 0 ? static_cast<std::size_t>(top_k) : no_limit});
    REQUIRE(std::vector<int>(actual.begin(), actual.end()) == expected);
    ++compared;
  }
  CHECK(compared > 200);
}

TEST_CASE("OpenCV softNMSBoxes agrees") {
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> position(0, 100), size(5, 50);
  std::uniform_real_distribution<float> score(0.0f, 1.0f);
  for (int trial = 0; trial < 100; ++trial) {
    const std::size_t n = 1 + rng() % 60;
    std::vector<cv::Rect> rects(n);
    std::vector<corner_box> boxes(n);
    std::vector<float> scores(n);
    for (std::size_t i = 0; i < n; ++i) {
      const int x = position(rng), y = position(rng), w = size(rng), h = size(rng);
      rects[i] = cv::Rect(x, y, w, h);
      boxes[i] = {static_cast<float>(x), static_cast<float>(y), static_cast<float>(x + w), static_cast<float>(y + h)};
      scores[i] = score(rng);
    }
    const auto method = trial % 2 ? cv::dnn::SoftNMSMethod::SOFTNMS_LINEAR : cv::dnn::SoftNMSMethod::SOFTNMS_GAUSSIAN;
    std::vector<int> expected;
    std::vector<float> expected_scores;
    cv::dnn::softNMSBoxes(rects, scores, expected_scores, 0.1f, 0.3f, expected, 0, 0.5f, method);
    const auto [actual, actual_scores] =
        run_soft(boxes, scores,
                 {.method = trial % 2 ? mosaiq::soft_nms_method::linear : mosaiq::soft_nms_method::gaussian,
                  .sigma = 0.5f,
                  .iou_threshold = 0.3f,
                  .score_threshold = 0.1f});
    // Decayed scores differ in the last bits (OpenCV's IoU is 1 - (1 - iou) in double): near-equal scores may swap.
    REQUIRE(actual.size() == expected.size());
    std::size_t same = 0;
    for (std::size_t i = 0; i < actual.size(); ++i) {
      same += static_cast<int>(actual[i]) == expected[i];
      CHECK(actual_scores[i] == doctest::Approx(expected_scores[i]).epsilon(1e-4));
    }
    CHECK(same == actual.size());
  }
}
#endif

TEST_CASE("first_max_value: bit for bit the plain strict-> loop's value (NaN first or later, signed zeros, ties)") {
  const auto plain = [](const float* v, std::size_t first, std::size_t n) {
    std::size_t best = first;
    for (std::size_t c = first + 1; c < n; ++c)
      if (v[c] > v[best]) best = c;
    return v[best];
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, -inf, inf, 0.0f, -0.0f, 1.0f, -1.0f, 0.5f};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(0, 15);  // 0-7: a special value, 8-15: a few small values (ties)
  std::vector<float> v(48);
  for (int trial = 0; trial < 40000; ++trial) {
    const std::size_t n = 1 + static_cast<std::size_t>(trial % 41);
    const std::size_t first = static_cast<std::size_t>(trial / 41 % 3) % n;
    const int specials_from = trial % 5 == 0 ? 0 : 1;  // one trial in five may start with a NaN
    for (std::size_t c = 0; c < n; ++c) {
      const int k = std::max(pick(rng), specials_from);
      v[c] = k < 8 ? specials[k] : static_cast<float>(k - 12) * 0.25f;
    }
    const float expected = plain(v.data(), first, n);
    const float got = mosaiq::detail::first_max_value(v.data(), first, n);
    REQUIRE(std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(expected));
  }
}
