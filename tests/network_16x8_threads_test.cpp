// An i16 (16x8) network on 2 and 3 threads against its serial run: the ThreadSanitizer stage's i16 network
// (tests.txt's threads group, tsan_tests). Each 16x8 executor that runs row bands (the stem and the transposed
// convolution with a workspace slice per thread, pointwise, depthwise, the resize; hard swish and the residual add
// joining the layer before them in row runs) splits into bands here, so TSan sees every 16x8 band's reads and writes
// beside another thread's. That the output equals the oracle, and the threads cases over every selfie layer kind, are
// network_16x8_test's (tools::reference_16x8, pools of 1 to 6 threads).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "allocation_counter.hpp"
#include "mosaiq/net.hpp"
#include "mosaiq/tools.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;

/// The i16 network's banded layer kinds, with maps large enough for three bands each.
using net16_threads = network<
    input<i16, 40, 32, 3>::with_max_threads<3>,  //
    layers::conv2d<layers::conv2d_config{
        .out_channels = 8, .kernel = {3, 3}, .stride = {2, 2}, .pad = padding::same()}>,
    layers::hard_swish<>,                                             //
    layers::pointwise<layers::pointwise_config{.out_channels = 16}>,  //
    layers::tap<"e">,                                                 //
    layers::depthwise<layers::depthwise_config{.kernel = {3, 3}, .pad = padding::same(), .act = activation::relu}>,
    layers::add<"e">,                                                                             //
    layers::resize_bilinear<layers::resize_config{.scale = 2, .mode = resize_mode::half_pixel}>,  //
    layers::transpose_conv<layers::transpose_conv_config{.out_channels = 1, .kernel = {2, 2}}>,   //
    layers::logistic<>>;
static_assert(net16_threads::layer_bands<0>(3) == 3 && net16_threads::layer_bands<2>(3) == 3 &&
              net16_threads::layer_bands<4>(3) == 3 && net16_threads::layer_bands<6>(3) == 3 &&
              net16_threads::layer_bands<7>(3) == 3);
static_assert(net16_threads::parallel_steps(2) > 0);

/// Weights from random floats, quantized by the converter's 16x8 rules over ranges calibrated on `samples`.
std::unique_ptr<net16_threads::weights> random_weights(std::mt19937& rng,
                                                       const std::vector<std::vector<float>>& samples) {
  auto fw = std::make_unique<tools::float_weights<net16_threads>>();
  std::normal_distribution<float> weight(0.0f, 0.3f);
  mosaiq::detail::for_index_chunks<net16_threads::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
    const auto fill = [&](auto& layer) {
      if constexpr (requires { layer.filter; }) {
        for (auto& w : layer.filter) w = weight(rng);
        for (auto& b : layer.bias) b = weight(rng);
      }
    };
    (fill(fw->template layer<I>()), ...);
  });
  return tools::quantize_network<net16_threads>(*fw, tools::calibrate(*fw, samples));
}

TEST_CASE("network 16x8 threads: an i16 network on 2 and 3 threads equals its serial run, no heap while running") {
  using net = net16_threads;
  std::mt19937 rng(16);
  std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
  std::vector<std::vector<float>> samples(2, std::vector<float>(net::input_shape.elements()));
  for (auto& sample : samples) std::generate(sample.begin(), sample.end(), [&] { return pixel(rng); });
  const auto w = random_weights(rng, samples);
  REQUIRE(w != nullptr);
  const auto p = std::make_unique<net::prepared>(net::prepare(*w));
  const std::vector<i16> q = tools::quantize_input<net>(*w, samples[1]);
  const auto in = tensor_view<const i16>(q.data(), net::input_shape);

  test::aligned_arena arena(net::arena_bytes);
  std::vector<i16> serial(net::output_shape.elements());
  net::run(*p, in, tensor_view<i16>(serial.data(), net::output_shape), arena.bytes);
  CHECK(std::set<i16>(serial.begin(), serial.end()).size() > 8);  // not a constant map
  for (const int threads : {2, 3}) {
    CAPTURE(threads);
    thread_pool pool(threads);
    for (int repeat = 0; repeat < 2; ++repeat) {
      std::vector<i16> got(serial.size(), i16{0x5A5A});
      const long before = test::heap_allocations();
      net::run(*p, in, tensor_view<i16>(got.data(), net::output_shape), arena.bytes, pool);
      CHECK(test::heap_allocations() == before);
      CHECK(got == serial);
    }
  }
}

}  // namespace
