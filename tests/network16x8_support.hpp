// Weights of a 16x8 (i16) network for tests: random float weights quantized as the converter's 16x8 rules quantize
// trained ones (tools/quantize_16x8.hpp), from ranges calibrated on random inputs, so every scale is one the 16x8
// kernels take and outputs spread over the int16 range.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "mosaiq/core/parallel.hpp"
#include "mosaiq/tools/calibrate.hpp"
#include "mosaiq/tools/quantize_16x8.hpp"

namespace mosaiq::test {

/// A quantized network's weights and the float inputs its ranges were calibrated on.
template <class Net>
struct random_16x8_network {
  std::unique_ptr<typename Net::weights> weights;
  std::vector<std::vector<float>> samples;
};

/// Filters and biases drawn from N(0, 0.3), ranges from `sample_count` inputs uniform in [-1, 1), one generator
/// seeded with `seed` for both.
template <class Net>
random_16x8_network<Net> random_16x8_weights(std::uint32_t seed, int sample_count = 3) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> weight(0.0f, 0.3f);
  auto fw = std::make_unique<tools::float_weights<Net>>();
  mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&](auto& layer) {
          if constexpr (requires { layer.filter; }) {
            for (auto& w : layer.filter) w = weight(rng);
            for (auto& b : layer.bias) b = weight(rng);
          }
        }(fw->template layer<I>()),
        ...);
  });
  std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
  random_16x8_network<Net> out;
  out.samples.assign(std::size_t(sample_count), std::vector<float>(Net::input_shape.elements()));
  for (auto& sample : out.samples) std::generate(sample.begin(), sample.end(), [&] { return pixel(rng); });
  out.weights = tools::quantize_network<Net>(*fw, tools::calibrate(*fw, out.samples));
  REQUIRE(out.weights != nullptr);
  return out;
}

}  // namespace mosaiq::test
