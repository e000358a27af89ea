// SSD-shaped test data and checks shared by the NMS suites (nms_test.cpp, priors_opencv_test.cpp): realistic random
// loc / conf tensors, one call of a detection_output layer, and detection lists compared row by row.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <span>
#include <vector>

#include "mosaiq/ops/nms.hpp"

namespace mosaiq::test {

inline void check_same_detections(const std::vector<detection>& expected, std::span<const detection> actual) {
  REQUIRE(expected.size() == actual.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(expected[i].label == actual[i].label);
    CHECK(expected[i].score == actual[i].score);
    CHECK(expected[i].box.xmin == doctest::Approx(actual[i].box.xmin).epsilon(1e-6));
    CHECK(expected[i].box.ymin == doctest::Approx(actual[i].box.ymin).epsilon(1e-6));
    CHECK(expected[i].box.xmax == doctest::Approx(actual[i].box.xmax).epsilon(1e-6));
    CHECK(expected[i].box.ymax == doctest::Approx(actual[i].box.ymax).epsilon(1e-6));
  }
}

/// Realistic SSD outputs: background-dominant softmax with a few confident objects, random box offsets.
struct ssd_inputs {
  std::vector<float> loc, conf;
};
inline ssd_inputs random_ssd_inputs(std::size_t priors, std::size_t classes, std::size_t loc_classes, std::mt19937& rng,
                                    int objects = 60) {
  std::normal_distribution<float> offset(0.0f, 0.6f), noise(0.0f, 1.0f);
  ssd_inputs in;
  in.loc.resize(priors * loc_classes * 4);
  for (float& v : in.loc) v = offset(rng);
  in.conf.resize(priors * classes);
  std::uniform_int_distribution<std::size_t> pick_prior(0, priors - 1), pick_class(1, classes - 1);
  std::vector<float> logits(classes);
  std::vector<int> object_class(priors, 0);
  for (int o = 0; o < objects; ++o) {
    const std::size_t center = pick_prior(rng), label = pick_class(rng);
    for (std::size_t p = center; p < std::min(priors, center + 12); ++p) object_class[p] = static_cast<int>(label);
  }
  for (std::size_t p = 0; p < priors; ++p) {
    for (std::size_t c = 0; c < classes; ++c) logits[c] = noise(rng);
    logits[0] += 4.0f;
    if (object_class[p] > 0) logits[static_cast<std::size_t>(object_class[p])] += 6.0f + noise(rng);
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float& v : logits) sum += std::exp(static_cast<double>(v - max));
    for (std::size_t c = 0; c < classes; ++c)
      in.conf[p * classes + c] = static_cast<float>(std::exp(static_cast<double>(logits[c] - max)) / sum);
  }
  return in;
}

template <mosaiq::detection_output_config Cfg>
std::vector<detection> run_detection(const std::vector<float>& loc, const std::vector<float>& conf,
                                     std::span<const prior_box> priors, mosaiq::detection_thresholds thresholds) {
  static typename mosaiq::detection_output<Cfg>::workspace scratch;
  std::vector<detection> out(std::max<std::size_t>(1, mosaiq::detection_output<Cfg>::max_detections));
  const mosaiq::detection_output<Cfg> layer(thresholds);
  out.resize(
      layer.run(mosaiq::input_tensor<float>{loc}, mosaiq::score_tensor<float>{conf}, priors, out, scratch.bytes));
  return out;
}

}  // namespace mosaiq::test
