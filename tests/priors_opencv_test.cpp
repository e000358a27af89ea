// OpenCV dnn's own PriorBox and DetectionOutput layers against mosaiq's prior generator, its built-in prior tables
// and detection_output. The built-in tables are compared with priors OpenCV computes from prototxt text written here
// from the published models (the SSD300 deploy prototxt of ssd_pascal.py, chuanqi305's MobileNetSSD_deploy.prototxt),
// never derived from mosaiq's tables, so a wrong field in a table (the SSD300 variances were one) is a difference.
#include <doctest/doctest.h>

#if defined(MOSAIQ_HAVE_OPENCV)

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

// OpenCV 4.6's headers mix enum types, which C++20 deprecates.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-enum-enum-conversion"
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#pragma GCC diagnostic pop

#include "mosaiq/ops/nms.hpp"
#include "ssd_test_data.hpp"

namespace {

using mosaiq::caffe_prior_layer;
using mosaiq::detection;
using mosaiq::prior_box;

/// A detector's PriorBox layers as a prototxt states them: the image size, and per layer its feature map and the body
/// of its prior_box_param.
struct prior_model {
  int image_height = 300, image_width = 300;
  struct layer {
    int height = 0, width = 0;
    std::string param;
  };
  std::vector<layer> layers;
};

constexpr const char* ssd_variance_text = " variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2";

/// VGG_VOC0712_SSD_300x300 deploy.prototxt (written by ssd_pascal.py): conv4_3_norm, fc7, conv6_2 ... conv9_2.
prior_model ssd300_model() {
  const auto param = [](const std::string& sizes, const std::string& ratios, int step) {
    return sizes + ratios + " flip: true clip: false" + ssd_variance_text + " step: " + std::to_string(step) +
           " offset: 0.5";
  };
  return {300,
          300,
          {{38, 38, param("min_size: 30 max_size: 60", " aspect_ratio: 2", 8)},
           {19, 19, param("min_size: 60 max_size: 111", " aspect_ratio: 2 aspect_ratio: 3", 16)},
           {10, 10, param("min_size: 111 max_size: 162", " aspect_ratio: 2 aspect_ratio: 3", 32)},
           {5, 5, param("min_size: 162 max_size: 213", " aspect_ratio: 2 aspect_ratio: 3", 64)},
           {3, 3, param("min_size: 213 max_size: 264", " aspect_ratio: 2", 100)},
           {1, 1, param("min_size: 264 max_size: 315", " aspect_ratio: 2", 300)}}};
}

/// chuanqi305 MobileNetSSD_deploy.prototxt: no step (300 / layer size), conv11 has no max_size.
prior_model mobilenet_ssd_model() {
  const auto param = [](const std::string& sizes, const std::string& ratios) {
    return sizes + ratios + " flip: true clip: false" + ssd_variance_text + " offset: 0.5";
  };
  const std::string two_three = " aspect_ratio: 2 aspect_ratio: 3";
  return {300,
          300,
          {{19, 19, param("min_size: 60", " aspect_ratio: 2")},
           {10, 10, param("min_size: 105 max_size: 150", two_three)},
           {5, 5, param("min_size: 150 max_size: 195", two_three)},
           {3, 3, param("min_size: 195 max_size: 240", two_three)},
           {2, 2, param("min_size: 240 max_size: 285", two_three)},
           {1, 1, param("min_size: 285 max_size: 300", two_three)}}};
}

std::string number_text(float v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
  return text;
}

/// The prior_box_param body that states what a caffe_prior_layer means (for the generator grid, not the tables).
std::string prior_param_text(const caffe_prior_layer& layer) {
  std::string text;
  const auto field = [&text](const char* name, float v) { text += std::string(" ") + name + ": " + number_text(v); };
  for (int i = 0; i < layer.min_size_count(); ++i) field("min_size", layer.min_sizes[static_cast<std::size_t>(i)]);
  for (int i = 0; i < layer.max_size_count(); ++i) field("max_size", layer.max_sizes[static_cast<std::size_t>(i)]);
  for (const float ratio : layer.aspect_ratios)
    if (ratio > 0) field("aspect_ratio", ratio);
  text += std::string(" flip: ") + (layer.flip ? "true" : "false") + " clip: " + (layer.clip ? "true" : "false");
  for (const float v : layer.variances) field("variance", v);
  if (layer.step_h > 0 && layer.step_h == layer.step_w) field("step", layer.step_h);
  if (layer.step_h > 0 && layer.step_h != layer.step_w) field("step_h", layer.step_h);
  if (layer.step_w > 0 && layer.step_h != layer.step_w) field("step_w", layer.step_w);
  field("offset", layer.offset);
  return text;
}

std::string input_layer(const std::string& name, const std::vector<int>& dims) {
  std::string text = "layer { name: '" + name + "' type: 'Input' top: '" + name + "' input_param { shape {";
  for (const int d : dims) text += " dim: " + std::to_string(d);
  return text + " } } }\n";
}

/// The model's inputs ('data' and one feature map per layer), PriorBox layers and their concat 'mbox_priorbox'.
std::string prior_prototxt(const prior_model& model) {
  std::string text = input_layer("data", {1, 3, model.image_height, model.image_width});
  std::string concat = "layer { name: 'mbox_priorbox' type: 'Concat' top: 'mbox_priorbox' concat_param { axis: 2 }";
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const auto& layer = model.layers[i];
    const std::string map = "map" + std::to_string(i), prior = "prior" + std::to_string(i);
    text += input_layer(map, {1, 1, layer.height, layer.width});
    text += "layer { name: '" + prior + "' type: 'PriorBox' bottom: '" + map + "' bottom: 'data' top: '" + prior +
            "' prior_box_param {" + layer.param + " } }\n";
    concat += " bottom: '" + prior + "'";
  }
  return text + concat + " }\n";
}

/// Zero-filled blobs for the model's inputs: PriorBox reads only their shapes.
void set_model_inputs(cv::dnn::Net& net, const prior_model& model) {
  const auto zeros = [](std::vector<int> dims) {
    return cv::Mat(static_cast<int>(dims.size()), dims.data(), CV_32F, 0.0f);
  };
  net.setInput(zeros({1, 3, model.image_height, model.image_width}), "data");
  for (std::size_t i = 0; i < model.layers.size(); ++i)
    net.setInput(zeros({1, 1, model.layers[i].height, model.layers[i].width}), "map" + std::to_string(i));
}

/// A PriorBox blob [1, 2, 4N] (corners, then variances) as mosaiq's priors.
std::vector<prior_box> to_priors(const cv::Mat& blob) {
  REQUIRE(blob.dims == 3);
  REQUIRE(blob.size[1] == 2);
  const std::size_t n = static_cast<std::size_t>(blob.size[2]) / 4;
  const auto* values = blob.ptr<float>();
  std::vector<prior_box> priors(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float* box = values + i * 4;
    const float* variance = values + (n + i) * 4;
    priors[i] = {{box[0], box[1], box[2], box[3]}, {variance[0], variance[1], variance[2], variance[3]}};
  }
  return priors;
}

std::vector<prior_box> opencv_priors(const prior_model& model) {
  const std::string text = "name: 'priors'\n" + prior_prototxt(model);
  cv::dnn::Net net = cv::dnn::readNetFromCaffe(text.data(), text.size());
  set_model_inputs(net, model);
  return to_priors(net.forward("mbox_priorbox"));
}

std::vector<prior_box> opencv_priors(const caffe_prior_layer& layer) {
  return opencv_priors(prior_model{
      layer.image_height, layer.image_width, {{layer.layer_height, layer.layer_width, prior_param_text(layer)}}});
}

std::vector<prior_box> mosaiq_priors(std::span<const caffe_prior_layer> layers) {
  std::vector<prior_box> priors(mosaiq::caffe_prior_count(layers));
  REQUIRE(mosaiq::generate_caffe_priors(layers, priors) == priors.size());
  return priors;
}

/// Largest coordinate difference, in units of float's epsilon (the spacing at 1, the scale of normalized boxes);
/// variances must be equal.
float worst_difference_in_epsilons(const std::vector<prior_box>& expected, const std::vector<prior_box>& actual) {
  REQUIRE(expected.size() == actual.size());
  float worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    REQUIRE(expected[i].variance == actual[i].variance);
    const auto& e = expected[i].box;
    const auto& a = actual[i].box;
    worst = std::max({worst, std::abs(e.xmin - a.xmin), std::abs(e.ymin - a.ymin), std::abs(e.xmax - a.xmax),
                      std::abs(e.ymax - a.ymax)});
  }
  return worst / std::numeric_limits<float>::epsilon();
}

/// A built-in table against the priors OpenCV computes for the model's prototxt. The tables follow the Caffe ssd head
/// (double arithmetic) and OpenCV computes in float: the boxes are a rounding apart and the variances equal. The same
/// layers under OpenCV's size rule give OpenCV's priors to the bit.
void check_table(const prior_model& model, std::span<const caffe_prior_layer> table) {
  const std::vector<prior_box> expected = opencv_priors(model);
  REQUIRE(expected.size() == mosaiq::caffe_prior_count(table));
  const float worst = worst_difference_in_epsilons(expected, mosaiq_priors(table));
  MESSAGE("largest coordinate difference from OpenCV's priors, Caffe size rule: " << worst << " float epsilons");
  CHECK(worst <= 1.0f);
  std::vector<caffe_prior_layer> opencv_rule(table.begin(), table.end());
  for (auto& layer : opencv_rule) layer.size_rule = mosaiq::prior_size_rule::opencv;
  const auto same_rule = mosaiq_priors(opencv_rule);
  CHECK(std::equal(expected.begin(), expected.end(), same_rule.begin(), same_rule.end()));
}

/// OpenCV's DetectionOutput (SSD test parameters, CENTER_SIZE, shared locations, background 0) on the priors its own
/// PriorBox layers compute for the model, and those priors.
struct opencv_ssd_result {
  std::vector<detection> detections;  ///< grouped by label as Caffe and mosaiq order them
  std::vector<prior_box> priors;
};
opencv_ssd_result opencv_ssd(const prior_model& model, const mosaiq::test::ssd_inputs& in, int classes,
                             float confidence, int top_k, int keep_top_k) {
  const int n = static_cast<int>(in.loc.size() / 4);
  const std::string text = "name: 'ssd'\n" + prior_prototxt(model) + input_layer("loc", {1, n * 4}) +
                           input_layer("conf", {1, n * classes}) +
                           "layer { name: 'detection_out' type: 'DetectionOutput' bottom: 'loc' bottom: 'conf' "
                           "bottom: 'mbox_priorbox' top: 'detection_out'\n  detection_output_param { num_classes: " +
                           std::to_string(classes) + " share_location: true background_label_id: 0\n" +
                           "    nms_param { nms_threshold: 0.45 top_k: " + std::to_string(top_k) +
                           " }\n    code_type: CENTER_SIZE keep_top_k: " + std::to_string(keep_top_k) +
                           " confidence_threshold: " + number_text(confidence) + " } }\n";
  cv::dnn::Net net = cv::dnn::readNetFromCaffe(text.data(), text.size());
  set_model_inputs(net, model);
  const int loc_dims[] = {1, n * 4}, conf_dims[] = {1, n * classes};
  net.setInput(cv::Mat(2, loc_dims, CV_32F, const_cast<float*>(in.loc.data())), "loc");
  net.setInput(cv::Mat(2, conf_dims, CV_32F, const_cast<float*>(in.conf.data())), "conf");
  std::vector<cv::Mat> outputs;
  net.forward(outputs, std::vector<cv::String>{"detection_out", "mbox_priorbox"});
  opencv_ssd_result result{{}, to_priors(outputs[1])};
  const auto* r = outputs[0].ptr<float>();
  for (std::size_t i = 0; i < outputs[0].total() / 7; ++i, r += 7)
    if (r[2] > 0)
      result.detections.push_back({static_cast<int>(r[0]), static_cast<int>(r[1]), r[2], {r[3], r[4], r[5], r[6]}});
  // OpenCV sorts by score; Caffe (and mosaiq) group by label.
  std::stable_sort(result.detections.begin(), result.detections.end(), [](const detection& a, const detection& b) {
    return a.label != b.label ? a.label < b.label : a.score > b.score;
  });
  return result;
}

}  // namespace

TEST_CASE("OpenCV PriorBox: the built-in SSD300 and MobileNet-SSD layers give their deploy prototxts' priors") {
  static_assert(mosaiq::caffe_prior_count(mosaiq::ssd300_prior_layers) == 8732);
  static_assert(mosaiq::caffe_prior_count(mosaiq::mobilenet_ssd_prior_layers) == 1917);
  check_table(ssd300_model(), mosaiq::ssd300_prior_layers);
  check_table(mobilenet_ssd_model(), mosaiq::mobilenet_ssd_prior_layers);
}

TEST_CASE("OpenCV PriorBox: the generator's fields mean what the prototxt fields mean") {
  // One change from a base layer each: flip, clip, offsets, per-axis steps, default steps on a non-square image,
  // several min/max sizes, fractional sizes, a repeated ratio, one variance for all four.
  const caffe_prior_layer base{.layer_height = 7,
                               .layer_width = 9,
                               .min_sizes = {40},
                               .max_sizes = {90},
                               .aspect_ratios = {2, 3},
                               .step_h = 32,
                               .step_w = 32,
                               .variances = {0.1f, 0.1f, 0.2f, 0.2f}};
  std::vector<caffe_prior_layer> layers(12, base);
  layers[1].flip = false;
  layers[2].clip = true;
  layers[3].offset = 0.0f;
  layers[4].offset = 0.3f;
  layers[5].step_h = 24, layers[5].step_w = 40;
  layers[6].image_height = 240, layers[6].image_width = 320, layers[6].step_h = 0, layers[6].step_w = 0;
  layers[7].min_sizes = {20, 60}, layers[7].max_sizes = {50, 100};
  layers[8].min_sizes = {35.84f}, layers[8].max_sizes = {76.8f};
  layers[9].aspect_ratios = {2, 0.5f, 3, 2};
  layers[10].variances = {0.1f, 0.1f, 0.1f, 0.1f};
  layers[11].min_sizes = {300}, layers[11].max_sizes = {400}, layers[11].clip = true, layers[11].aspect_ratios = {};
  for (std::size_t i = 0; i < layers.size(); ++i) {
    CAPTURE(i);
    CAPTURE(prior_param_text(layers[i]));
    const auto expected = opencv_priors(layers[i]);
    auto layer = layers[i];
    layer.size_rule = mosaiq::prior_size_rule::opencv;
    const auto actual = mosaiq_priors(std::span(&layer, 1));
    CHECK(std::equal(expected.begin(), expected.end(), actual.begin(), actual.end()));
    // Caffe's rule truncates fractional sizes (layer 8); with integral sizes it is a rounding away from OpenCV.
    layer.size_rule = mosaiq::prior_size_rule::caffe_ssd;
    if (i != 8) CHECK(worst_difference_in_epsilons(expected, mosaiq_priors(std::span(&layer, 1))) <= 1.0f);
  }
}

TEST_CASE("OpenCV DetectionOutput on its own PriorBox priors agrees with mosaiq on the built-in tables") {
  std::mt19937 rng(21);
  constexpr mosaiq::detection_output_config ssd300{
      .priors = 8732, .classes = 21, .top_k = 400, .keep_top_k = 200, .code = mosaiq::box_code::center_size};
  static constexpr auto ssd300_priors =
      mosaiq::caffe_priors<mosaiq::caffe_prior_count(mosaiq::ssd300_prior_layers)>(mosaiq::ssd300_prior_layers);
  for (int trial = 0; trial < 3; ++trial) {
    CAPTURE(trial);
    const auto in = mosaiq::test::random_ssd_inputs(8732, 21, 1, rng);
    const auto expected = opencv_ssd(ssd300_model(), in, 21, 0.01f, 400, 200);
    CHECK(expected.detections.size() == 200);
    const mosaiq::detection_thresholds thresholds{.confidence = 0.01f, .nms = 0.45f};
    // mosaiq on the same priors isolates DetectionOutput; on its built-in table it is the whole SSD300 post-process.
    mosaiq::test::check_same_detections(
        expected.detections, mosaiq::test::run_detection<ssd300>(in.loc, in.conf, expected.priors, thresholds));
    mosaiq::test::check_same_detections(
        expected.detections, mosaiq::test::run_detection<ssd300>(in.loc, in.conf, ssd300_priors, thresholds));
  }
  // MobileNet-SSD: 1917 priors from PriorBox layers without step; deploy threshold 0.3 and a low one.
  constexpr mosaiq::detection_output_config mobilenet{
      .priors = 1917, .classes = 21, .top_k = 100, .keep_top_k = 100, .code = mosaiq::box_code::center_size};
  static constexpr auto mobilenet_priors = mosaiq::caffe_priors<1917>(mosaiq::mobilenet_ssd_prior_layers);
  for (const float threshold : {0.3f, 0.01f}) {
    CAPTURE(threshold);
    const auto in = mosaiq::test::random_ssd_inputs(1917, 21, 1, rng, 30);
    const auto expected = opencv_ssd(mobilenet_ssd_model(), in, 21, threshold, 100, 100);
    const mosaiq::detection_thresholds thresholds{.confidence = threshold, .nms = 0.45f};
    mosaiq::test::check_same_detections(
        expected.detections, mosaiq::test::run_detection<mobilenet>(in.loc, in.conf, expected.priors, thresholds));
    mosaiq::test::check_same_detections(
        expected.detections, mosaiq::test::run_detection<mobilenet>(in.loc, in.conf, mobilenet_priors, thresholds));
  }
}

#endif
