// Post-training quantization tools: hand-computed activation, weight and bias quantization, range
// calibration (min/max and percentile), the float twin of a network, batch-norm folding against
// the unfolded float computation, and a whole network calibrated, quantized (u8 and i8), run and
// compared with its float run.
#include "mosaiq/tools.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "mosaiq/net.hpp"
#include "mosaiq/reference.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;
using tools::float_range;

// ---------------------------------------------------------------------------------------------
// Activations, weights, biases.

TEST_CASE("tools: activation quantization nudges the zero point as TFLite does") {
  // [-1, 3]: scale 4/255, zero point from min 255/4 = 63.75, nudged to 64 (u8) and -64.25 -> -64 (i8).
  const quant_params u = tools::activation_quant<u8>({-1.0f, 3.0f});
  CHECK(u.scale == 4.0f / 255.0f);
  CHECK(u.zero_point == 64);
  const quant_params s = tools::activation_quant<i8>({-1.0f, 3.0f});
  CHECK(s.scale == 4.0f / 255.0f);
  CHECK(s.zero_point == -64);
  // relu6 output: zero at the minimum.
  CHECK(tools::activation_quant<u8>({0.0f, 6.0f}) == quant_params{6.0f / 255.0f, 0});
  CHECK(tools::activation_quant<i8>({0.0f, 6.0f}) == quant_params{6.0f / 255.0f, -128});
  // Ranges that exclude 0 are widened to contain it.
  CHECK(tools::activation_quant<u8>({0.5f, 2.0f}) == quant_params{2.0f / 255.0f, 0});
  CHECK(tools::activation_quant<u8>({-2.0f, -1.0f}) == quant_params{2.0f / 255.0f, 255});
  CHECK(tools::activation_quant<i8>({-2.0f, -1.0f}) == quant_params{2.0f / 255.0f, 127});
  // [-127.5, 127.5]: scale 1, the zero point 127.5 rounds away from zero to 128 (u8), -0.5 to -1 (i8).
  CHECK(tools::activation_quant<u8>({-127.5f, 127.5f}) == quant_params{1.0f, 128});
  CHECK(tools::activation_quant<i8>({-127.5f, 127.5f}) == quant_params{1.0f, -1});
  // [-1, 1] in float: 1 / (2/255) = 127.49999 rounds to 127.
  CHECK(tools::activation_quant<u8>({-1.0f, 1.0f}).zero_point == 127);
  // A tensor that was always 0 gets the range [0, 1] instead of a zero scale.
  CHECK(tools::activation_quant<u8>({0.0f, 0.0f}) == quant_params{1.0f / 255.0f, 0});
  // Zero is exact: it quantizes to the zero point and back to 0.
  for (const float_range r : {float_range{-0.37f, 5.1f}, float_range{-3.3f, 0.01f}, float_range{-1.0f, 3.0f}}) {
    const quant_params q8 = tools::activation_quant<u8>(r);
    const quant_params qs = tools::activation_quant<i8>(r);
    CHECK(dequantize_value(quantize_value<u8>(0.0f, q8), q8) == 0.0f);
    CHECK(dequantize_value(quantize_value<i8>(0.0f, qs), qs) == 0.0f);
  }
}

TEST_CASE("tools: per-tensor u8 weights") {
  // Range [-1, 3]: scale 4/255, zero point 64; -1 -> 64 + round(-63.75) = 0, 0.5 -> 64 + round(31.875) = 96,
  // 3 -> 64 + round(191.25) = 255.
  const std::vector<float> w{-1.0f, 0.0f, 0.5f, 3.0f};
  const tools::per_tensor_u8_weights q = tools::quantize_weights_per_tensor_u8(w);
  CHECK(q.scale == 4.0f / 255.0f);
  CHECK(q.zero_point == 64);
  CHECK(q.values == std::vector<u8>{0, 64, 96, 255});
  // All positive: the range starts at 0, zero point 0.
  const tools::per_tensor_u8_weights p = tools::quantize_weights_per_tensor_u8(std::vector<float>{0.5f, 2.0f});
  CHECK(p.zero_point == 0);
  CHECK(p.values == std::vector<u8>{64, 255});
  // All zero: scale 0, every value the zero point 0.
  const tools::per_tensor_u8_weights z = tools::quantize_weights_per_tensor_u8(std::vector<float>(5, 0.0f));
  CHECK(z.scale == 0.0f);
  CHECK(z.zero_point == 0);
  CHECK(z.values == std::vector<u8>(5, 0));
}

TEST_CASE("tools: per-channel i8 weights, channel axis first and last") {
  // Channel 0 {0.5, -1, 0.25}: scale 1/127, values round(127 w) = {64 (63.5), -127, 32 (31.75)}.
  // Channel 1 {2, 1, -0.5}: scale 2/127, values round(63.5 w) = {127, 64 (63.5), -32 (-31.75)}.
  // Channel 2 all zero: scale 0, values 0.
  const std::vector<float> first{0.5f, -1.0f, 0.25f, 2.0f, 1.0f, -0.5f, 0.0f, 0.0f, 0.0f};
  const tools::per_channel_i8_weights a = tools::quantize_weights_per_channel_i8(first, 3, tools::channel_axis::first);
  CHECK(a.scales == std::vector<float>{1.0f / 127.0f, 2.0f / 127.0f, 0.0f});
  CHECK(a.values == std::vector<i8>{64, -127, 32, 127, 64, -32, 0, 0, 0});
  // The same filter stored [K][C] (depthwise): channel = index % 3.
  std::vector<float> last(9);
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t k = 0; k < 3; ++k) last[k * 3 + c] = first[c * 3 + k];
  const tools::per_channel_i8_weights b = tools::quantize_weights_per_channel_i8(last, 3, tools::channel_axis::last);
  CHECK(b.scales == a.scales);
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t k = 0; k < 3; ++k) CHECK(b.values[k * 3 + c] == a.values[c * 3 + k]);

  test::recording_handler errors;
  const tools::per_channel_i8_weights bad =
      tools::quantize_weights_per_channel_i8(first, 4, tools::channel_axis::first);
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == errc::shape_mismatch);
  CHECK(bad.values.empty());
}

TEST_CASE("tools: int32 bias quantization rounds and saturates") {
  CHECK(tools::quantize_bias(1.0f, 0.5f, 0.01f) == 200);
  CHECK(tools::quantize_bias(-1.0f, 0.5f, 0.01f) == -200);
  CHECK(tools::quantize_bias(0.0126f, 0.5f, 0.01f) == 3);    // 2.52
  CHECK(tools::quantize_bias(-0.0124f, 0.5f, 0.01f) == -2);  // -2.48
  CHECK(tools::quantize_bias(1e10f, 1e-3f, 1e-3f) == 2147483647);
  CHECK(tools::quantize_bias(-1e10f, 1e-3f, 1e-3f) == -2147483647);
  CHECK(tools::quantize_bias(0.5f, 0.1f, 0.0f) == 0);
}

// ---------------------------------------------------------------------------------------------
// Calibration.

// y = 2x - 1 on a 2x2x1 image.
using affine_net = network<input<u8, 2, 2, 1>, layers::pointwise<layers::pointwise_config{.out_channels = 1}>>;

TEST_CASE("tools: min/max calibration over samples; ranges contain 0") {
  tools::float_weights<affine_net> fw;
  fw.layer<0>().filter = {2.0f};
  fw.layer<0>().bias = {-1.0f};
  const std::vector<std::vector<float>> samples{{0.0f, 1.0f, 2.0f, 3.0f}, {-1.0f, 0.5f, 0.25f, 0.0f}};
  const auto ranges = tools::calibrate(fw, samples);
  // Input: [-1, 3]; output: sample 1 gives [-1, 5], sample 2 [-3, 0].
  CHECK(ranges[0] == float_range{-1.0f, 3.0f});
  CHECK(ranges[1] == float_range{-3.0f, 5.0f});

  tools::range_observer positive;
  positive.observe(std::vector<float>{1.0f, 2.0f, 3.0f});
  CHECK(positive.range() == float_range{0.0f, 3.0f});
  tools::range_observer negative;
  negative.observe(std::vector<float>{-1.0f, -2.0f, std::nanf(""), -INFINITY});
  CHECK(negative.count() == 2);  // non-finite values are ignored
  CHECK(negative.range() == float_range{-2.0f, 0.0f});
  CHECK(tools::range_observer{}.range() == float_range{});
}

TEST_CASE("tools: percentile calibration clips each tail to within one histogram bin") {
  const tools::calibration_options p99{.method = tools::range_method::percentile, .percentile = 99.0, .bins = 2048};
  // 0.01, 0.02, ..., 100: the largest 1% (100 values) lie above 99.00. The histogram spans
  // [0, 128), bins of 1/16.
  tools::range_observer ramp(p99);
  for (int i = 1; i <= 10000; ++i) ramp.observe(static_cast<float>(i) / 100.0f);
  const float_range r = ramp.range();
  CHECK(r.min == 0.0f);
  CHECK(r.max >= 99.0f - 1.0f / 16.0f);
  CHECK(r.max <= 99.0f + 1.0f / 16.0f);

  // 9998 values evenly in [-2, 6] plus outliers -50 and 100: at 99.99% one value may fall
  // outside on each side, which removes exactly the outliers; min/max keeps them.
  tools::range_observer with_outliers({.method = tools::range_method::percentile, .percentile = 99.99});
  tools::range_observer plain;
  std::vector<float> values;
  for (int i = 0; i < 9998; ++i) values.push_back(-2.0f + 8.0f * static_cast<float>(i) / 9997.0f);
  values.push_back(-50.0f);
  values.push_back(100.0f);
  with_outliers.observe(values);
  plain.observe(values);
  CHECK(plain.range() == float_range{-50.0f, 100.0f});
  const float_range clipped = with_outliers.range();
  // Negative side spans [0, 64) (bins of 1/32), positive [0, 128) (bins of 1/16).
  CHECK(clipped.min <= -2.0f);
  CHECK(clipped.min >= -2.0f - 1.0f / 32.0f);
  CHECK(clipped.max >= 6.0f);
  CHECK(clipped.max <= 6.0f + 1.0f / 16.0f);

  // percentile 100 is min/max.
  tools::range_observer all({.method = tools::range_method::percentile, .percentile = 100.0});
  all.observe(values);
  CHECK(all.range() == float_range{-50.0f, 100.0f});
}

// ---------------------------------------------------------------------------------------------
// The network every remaining test uses: every layer kind, taps, three branches, an extra output.

// Tensors: t1 conv 4x4x8 (relu6), t2 depthwise (relu6), t3 pointwise, t4 add (tap "a"); branches
// from "a": t5 average pool 2x2x8 -> t6 bilinear 4x4x8 ("b"), t7 global mean 1x1x8 -> t8 nearest
// 4x4x8 ("c"), t9 max pool 3x3 stride 1 ("d"); t10 concat 4x4x24, t11 logits 4x4x4 (extra output),
// t12 softmax.
constexpr layers::conv2d_config ptq_conv{.out_channels = 8, .stride = {2, 2}, .act = activation::relu6};
constexpr layers::pool_config ptq_max_pool{.kernel = {3, 3}, .stride = {1, 1}, .pad = padding::same()};

template <class T>
using ptq_net = network<input<T, 8, 8, 3>,                                                      //
                        layers::conv2d<ptq_conv>,                                               // 0
                        layers::tap<"skip">,                                                    // 1
                        layers::depthwise<layers::depthwise_config{.act = activation::relu6}>,  // 2
                        layers::pointwise<layers::pointwise_config{.out_channels = 8}>,         // 3
                        layers::add<"skip">,                                                    // 4
                        layers::tap<"a">,                                                       // 5
                        layers::average_pool<layers::pool_config{}>,                            // 6
                        layers::resize_bilinear<layers::resize_config{.scale = 2}>,             // 7
                        layers::tap<"b">,                                                       // 8
                        layers::from<"a">,                                                      // 9
                        layers::global_average_pool<>,                                          // 10
                        layers::resize_nearest<layers::resize_config{.scale = 4}>,              // 11
                        layers::tap<"c">,                                                       // 12
                        layers::from<"a">,                                                      // 13
                        layers::max_pool<ptq_max_pool>,                                         // 14
                        layers::tap<"d">,                                                       // 15
                        layers::concat<"b", "c", "d">,                                          // 16
                        layers::pointwise<layers::pointwise_config{.out_channels = 4}>,         // 17
                        layers::output<"logits">,                                               // 18
                        layers::softmax<>>;                                                     // 19

static_assert(ptq_net<u8>::tensor_count == 13);
static_assert(ptq_net<u8>::output_shape == shape{4, 4, 4});

/// Deterministic random float weights, uniform in +-1.5/sqrt(fan-in) (activations stay of order 1).
template <class Net>
tools::float_weights<Net> random_float_weights(std::uint32_t seed) {
  std::mt19937 rng(seed);
  tools::float_weights<Net> fw;
  const auto fill = [&](auto& lw, std::size_t fan_in, float gain = 1.5f) {
    std::uniform_real_distribution<float> w(-gain / std::sqrt(float(fan_in)), gain / std::sqrt(float(fan_in)));
    std::uniform_real_distribution<float> b(-0.2f, 0.2f);
    for (float& v : lw.filter) v = w(rng);
    for (float& v : lw.bias) v = b(rng);
  };
  fill(fw.template layer<0>(), 27);
  fill(fw.template layer<2>(), 9);
  fill(fw.template layer<3>(), 8);
  fill(fw.template layer<17>(), 24, 6.0f);  // logits of a few units: the softmax output is not flat
  return fw;
}

std::vector<std::vector<float>> random_inputs(std::uint32_t seed, std::size_t count, std::size_t size) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<std::vector<float>> inputs(count, std::vector<float>(size));
  for (auto& input : inputs)
    for (float& v : input) v = value(rng);
  return inputs;
}

TEST_CASE("tools: the float runner follows taps, branches, add and concat") {
  using net = ptq_net<u8>;
  const auto fw = random_float_weights<net>(7);
  const auto input = random_inputs(8, 1, net::input_shape.elements())[0];
  tools::float_runner<net> runner;
  REQUIRE(runner.run(fw, std::span<const float>(input)));

  // Tensor 0 is the input; the conv output matches the reference float conv.
  CHECK(std::equal(input.begin(), input.end(), runner.values(0).begin()));
  std::vector<float> conv(net::topology.tensors[1].dims.elements());
  reference::conv2d(tensor_view<const float>(input.data(), net::input_shape), fw.layer<0>().filter.data(),
                    fw.layer<0>().bias.data(), tensor_view<float>(conv.data(), shape{4, 4, 8}),
                    {.kernel = {3, 3}, .stride = {2, 2}}, activation::relu6);
  CHECK(std::equal(conv.begin(), conv.end(), runner.values(1).begin()));
  CHECK(std::all_of(conv.begin(), conv.end(), [](float v) { return v >= 0.0f && v <= 6.0f; }));
  // add = pointwise output + the tapped conv output.
  const auto sum = runner.tensor<"a">();
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 8; ++c) CHECK(sum(y, x, c) == runner.tensor(3)(y, x, c) + runner.tensor<"skip">()(y, x, c));
  // concat = b | c | d channel ranges; c is the global mean broadcast.
  const auto cat = runner.tensor(10);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 8; ++c) {
        CHECK(cat(y, x, c) == runner.tensor<"b">()(y, x, c));
        CHECK(cat(y, x, 8 + c) == runner.tensor<"c">()(y, x, c));
        CHECK(cat(y, x, 16 + c) == runner.tensor<"d">()(y, x, c));
        CHECK(runner.tensor<"c">()(y, x, c) == runner.tensor(7)(0, 0, c));
      }
  // The output is a softmax over the logits.
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) {
      float total = 0.0f;
      for (int c = 0; c < 4; ++c) total += runner.output()(y, x, c);
      CHECK(total == doctest::Approx(1.0f).epsilon(1e-6));
    }
}

TEST_CASE("tools: the float runner's tensor hook sees each tensor once, in order, before its readers") {
  using net = ptq_net<u8>;
  const auto fw = random_float_weights<net>(7);
  const auto input = random_inputs(8, 1, net::input_shape.elements())[0];
  tools::float_runner<net> plain, hooked;
  REQUIRE(plain.run(fw, std::span<const float>(input)));

  // Every tensor is seen exactly once, the input first, each before any layer that reads it.
  std::vector<std::size_t> seen;
  REQUIRE(hooked.run(fw, std::span<const float>(input), [&](std::size_t t, std::span<float> values) {
    CHECK(values.size() == net::topology.tensors[t].dims.elements());
    seen.push_back(t);
  }));
  REQUIRE(seen.size() == net::tensor_count);
  CHECK(seen.front() == 0);
  for (std::size_t t = 0; t < net::tensor_count; ++t) CHECK(std::count(seen.begin(), seen.end(), t) == 1);
  for (std::size_t t = 0; t < net::tensor_count; ++t)
    CHECK(std::equal(plain.values(t).begin(), plain.values(t).end(), hooked.values(t).begin()));

  // Changes made in the hook are what later layers read: the conv output (tensor 1) zeroed makes the add its
  // pointwise branch alone.
  REQUIRE(hooked.run(fw, std::span<const float>(input), [](std::size_t t, std::span<float> values) {
    if (t == 1) std::fill(values.begin(), values.end(), 0.0f);
  }));
  CHECK(std::all_of(hooked.values(1).begin(), hooked.values(1).end(), [](float v) { return v == 0.0f; }));
  const auto sum = hooked.tensor<"a">();
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 8; ++c) CHECK(sum(y, x, c) == hooked.tensor(3)(y, x, c));
  CHECK_FALSE(std::equal(plain.values(3).begin(), plain.values(3).end(), hooked.values(3).begin()));
}

// ---------------------------------------------------------------------------------------------
// End to end.

/// A 64-byte aligned arena of Net::arena_bytes (which may be 0), one per network type.
template <class Net>
std::span<std::byte> arena_for() {
  alignas(64) static std::byte bytes[Net::arena_bytes > 0 ? Net::arena_bytes : 1];
  return {bytes, Net::arena_bytes};
}

struct error_report {
  float logits_steps = 0.0f;  ///< max |dequantized - float| of the logits, in logits quantization steps
  float probability = 0.0f;   ///< max |dequantized - float| of the softmax output
  float logits_scale = 0.0f;
};

/// Calibrates ptq_net<T> on `samples`, quantizes it, runs it on the same samples and compares the
/// logits (an extra output) and the softmax output with the float run.
template <class T>
error_report quantize_and_compare(const std::vector<std::vector<float>>& samples,
                                  const tools::calibration_options& options) {
  using net = ptq_net<T>;
  const auto fw = random_float_weights<net>(2024);
  const auto ranges = tools::calibrate(fw, samples, options);
  for (const float_range& r : ranges) {
    CHECK(r.min <= 0.0f);
    CHECK(r.max >= 0.0f);
  }
  // relu6 outputs stay within [0, 6].
  CHECK(ranges[1].min == 0.0f);
  CHECK(ranges[1].max <= 6.0f);

  const auto w = tools::quantize_network<net>(fw, ranges);
  REQUIRE(w != nullptr);
  const auto quant = tools::tensor_quant<net>(*w);
  // Pooling and resize keep their input's quantization, softmax has the fixed one, the others
  // their own range's.
  CHECK(quant[5] == quant[4]);
  CHECK(quant[6] == quant[4]);
  CHECK(quant[8] == quant[7]);
  CHECK(quant[9] == quant[4]);
  CHECK(quant[12] == reference::probability_output_params<T>);
  for (const std::size_t t : {0, 1, 2, 3, 4, 7, 10, 11}) CHECK(quant[t] == tools::activation_quant<T>(ranges[t]));

  const typename net::prepared p = net::prepare(*w);
  for (std::size_t t = 0; t < net::tensor_count; ++t) CHECK(p.tensor_quant(t) == quant[t]);
  CHECK(tools::output_quant<net>(*w) == p.tensor_quant(12));
  const std::span<std::byte> arena = arena_for<net>();
  tools::float_runner<net> runner;
  error_report report;
  report.logits_scale = quant[11].scale;
  for (const auto& sample : samples) {
    REQUIRE(runner.run(fw, std::span<const float>(sample)));
    const std::vector<T> input = tools::quantize_input<net>(*w, sample);
    std::vector<T> output(net::output_shape.elements());
    net::run(p, tensor_view<const T>(input.data(), net::input_shape), tensor_view<T>(output.data(), net::output_shape),
             arena);
    const auto logits_q = net::template output_view<"logits">(arena);
    std::vector<float> logits(logits_q.dims().elements());
    tools::dequantize(logits_q, tensor_view<float>(logits.data(), logits_q.dims()),
                      net::template output_quant<"logits">(p));
    const std::vector<float> probabilities = tools::dequantize_output<net>(*w, output);
    const auto float_logits = runner.values(11);
    const auto float_probabilities = runner.values(12);
    for (std::size_t i = 0; i < logits.size(); ++i)
      report.logits_steps = std::max(report.logits_steps, std::fabs(logits[i] - float_logits[i]) / quant[11].scale);
    for (std::size_t i = 0; i < probabilities.size(); ++i)
      report.probability = std::max(report.probability, std::fabs(probabilities[i] - float_probabilities[i]));
  }
  return report;
}

// Why these bounds. The logits are five quantized layers deep (conv, depthwise, pointwise + add,
// pool/resize/mean/max branches + concat, pointwise); each rounds its output to half a step of its
// own scale and uses 8-bit weights (relative error up to 1/254 per weight), and the errors of
// earlier tensors reach the logits scaled by the weights after them. On the calibration samples
// (min/max: nothing is clipped) that stays within a few steps of the logits' scale: 4 steps is
// the bound (1.6% of the logits' range; measured: 2 to 3). The softmax output then follows from
// it: each probability moves by at most half the largest logit error (|dp_i| =
// p_i |dz_i - sum_j p_j dz_j| <= 2 p_i (1 - p_i) max|dz| <= max|dz| / 2), plus the 8-bit
// softmax's own error, within 1 LSB of round(256 p), i.e. 1.5 / 256.
constexpr float logits_bound_steps = 4.0f;

template <class T>
void check_end_to_end() {
  const auto samples = random_inputs(99, 4, ptq_net<T>::input_shape.elements());
  const error_report r = quantize_and_compare<T>(samples, {});
  INFO("logits error: " << r.logits_steps << " steps of " << r.logits_scale
                        << "; probability error: " << r.probability);
  CHECK(r.logits_steps <= logits_bound_steps);
  CHECK(r.probability <= 0.5f * logits_bound_steps * r.logits_scale + 1.5f / 256.0f);
}

TEST_CASE("tools: end to end, u8 network calibrated min/max, quantized, run, against the float run") {
  check_end_to_end<u8>();
}

TEST_CASE("tools: end to end, i8 network calibrated min/max, quantized, run, against the float run") {
  check_end_to_end<i8>();
}

template <class T>
void check_percentile_end_to_end() {
  using net = ptq_net<T>;
  const auto samples = random_inputs(31, 16, net::input_shape.elements());
  const tools::calibration_options percentile{.method = tools::range_method::percentile, .percentile = 99.9};
  const auto fw = random_float_weights<net>(2024);
  const auto narrow = tools::calibrate(fw, samples, percentile);
  const auto wide = tools::calibrate(fw, samples);
  // Each percentile range lies inside the min/max one, and some are strictly narrower.
  bool narrower = false;
  for (std::size_t t = 0; t < net::tensor_count; ++t) {
    CHECK(narrow[t].min >= wide[t].min);
    CHECK(narrow[t].max <= wide[t].max);
    narrower = narrower || narrow[t].min > wide[t].min || narrow[t].max < wide[t].max;
  }
  CHECK(narrower);
  // Clipping the tails adds the clipped amounts to the error, which the bound above does not
  // cover: this only checks that the network stays usable.
  const error_report r = quantize_and_compare<T>(samples, percentile);
  INFO("logits error: " << r.logits_steps << " steps of " << r.logits_scale
                        << "; probability error: " << r.probability);
  CHECK(r.probability <= 0.05f);
}

TEST_CASE("tools: end to end with percentile calibration") {
  check_percentile_end_to_end<u8>();
  check_percentile_end_to_end<i8>();
}

TEST_CASE("tools: a filter with zero weights keeps its bias (the filter scale is widened as TFLite does)") {
  // u8: an all-zero filter; i8: one all-zero channel next to a normal one.
  using u8_net = network<input<u8, 2, 2, 2>, layers::pointwise<layers::pointwise_config{.out_channels = 1}>>;
  using i8_net = network<input<i8, 2, 2, 2>, layers::pointwise<layers::pointwise_config{.out_channels = 2}>>;
  const std::vector<float> image{0.1f, -0.4f, 0.9f, 0.3f, -1.0f, 1.0f, 0.0f, 0.5f};

  tools::float_weights<u8_net> fu;
  fu.layer<0>().filter = {0.0f, 0.0f};
  fu.layer<0>().bias = {0.5f};
  const std::array<float_range, 2> ranges_u{float_range{-1.0f, 1.0f}, float_range{0.0f, 1.0f}};
  const auto wu = tools::quantize_network<u8_net>(fu, ranges_u);
  REQUIRE(wu != nullptr);
  CHECK(wu->layer<0>().filter_scales[0] > 0.0f);
  // The widened scale puts the bias at half of int32: 2^30, up to float rounding of the scale.
  CHECK(std::abs(wu->layer<0>().bias[0] - 1073741824) <= 256);
  const auto pu = u8_net::prepare(*wu);
  std::vector<u8> out_u(4);
  const auto in_u = tools::quantize_input<u8_net>(*wu, image);
  u8_net::run(pu, tensor_view<const u8>(in_u.data(), u8_net::input_shape),
              tensor_view<u8>(out_u.data(), u8_net::output_shape), arena_for<u8_net>());
  for (const float v : tools::dequantize_output<u8_net>(*wu, out_u)) CHECK(std::fabs(v - 0.5f) <= 1.0f / 255.0f);

  tools::float_weights<i8_net> fs;
  fs.layer<0>().filter = {0.0f, 0.0f, 1.0f, -1.0f};
  fs.layer<0>().bias = {0.5f, 0.0f};
  const std::array<float_range, 2> ranges_s{float_range{-1.0f, 1.0f}, float_range{-2.0f, 2.0f}};
  const auto ws = tools::quantize_network<i8_net>(fs, ranges_s);
  REQUIRE(ws != nullptr);
  CHECK(ws->layer<0>().filter_scales[0] > 0.0f);
  CHECK(ws->layer<0>().filter_scales[1] == 1.0f / 127.0f);
  const auto ps = i8_net::prepare(*ws);
  std::vector<i8> out_s(8);
  const auto in_s = tools::quantize_input<i8_net>(*ws, image);
  i8_net::run(ps, tensor_view<const i8>(in_s.data(), i8_net::input_shape),
              tensor_view<i8>(out_s.data(), i8_net::output_shape), arena_for<i8_net>());
  const std::vector<float> result = tools::dequantize_output<i8_net>(*ws, out_s);
  const float step = tools::output_quant<i8_net>(*ws).scale;
  for (std::size_t px = 0; px < 4; ++px) {
    CHECK(std::fabs(result[2 * px] - 0.5f) <= step);
    CHECK(std::fabs(result[2 * px + 1] - (image[2 * px] - image[2 * px + 1])) <= 2.0f * step);
  }
}

TEST_CASE("tools: quantize_network and float_runner report float weights of the wrong size") {
  tools::float_weights<affine_net> fw;
  fw.layer<0>().filter = {1.0f, 2.0f};
  affine_net::weights w;
  test::recording_handler errors;
  CHECK_FALSE(tools::quantize_network<affine_net>(fw, {float_range{0.0f, 1.0f}, float_range{0.0f, 1.0f}}, w));
  CHECK(errors.last() == errc::shape_mismatch);
  errors.reset();
  tools::float_runner<affine_net> runner;
  CHECK_FALSE(runner.run(fw, std::vector<float>(4, 1.0f)));
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == errc::shape_mismatch);
  CHECK_FALSE(runner.run(tools::float_weights<affine_net>{}, std::vector<float>(3, 1.0f)));
  CHECK(errors.calls() == 2);
}

// ---------------------------------------------------------------------------------------------
// Batch-norm folding.

template <activation Act>
using bn_net = network<input<u8, 7, 6, 2>,
                       layers::depthwise<layers::depthwise_config{
                           .stride = {2, 2}, .dilation = {1, 2}, .depth_multiplier = 2, .act = Act}>,  // 4x3x4
                       layers::pointwise<layers::pointwise_config{.out_channels = 3, .act = activation::relu}>>;

TEST_CASE("tools: a float network with batch norm folded equals conv, batch norm, activation unfolded") {
  using plain = bn_net<activation::none>;  // the depthwise without activation: its output is x
  using folded = bn_net<activation::relu6>;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  tools::float_weights<plain> fw;
  for (float& v : fw.layer<0>().filter) v = u(rng);
  for (float& v : fw.layer<0>().bias) v = 0.3f * u(rng);
  for (float& v : fw.layer<1>().filter) v = u(rng);
  for (float& v : fw.layer<1>().bias) v = 0.1f * u(rng);
  const std::vector<float> gamma{1.5f, -0.7f, 0.2f, 3.0f}, beta{0.1f, 2.0f, -0.5f, 0.0f},
      mean{0.3f, -0.2f, 1.0f, 0.05f}, variance{0.5f, 2.0f, 0.01f, 1.0f};
  const float epsilon = 1e-3f;

  tools::float_weights<folded> ff;
  ff.layer<0>() = fw.layer<0>();
  ff.layer<1>() = fw.layer<1>();
  REQUIRE(tools::fold_batchnorm_into_depthwise(ff.layer<0>().filter, ff.layer<0>().bias,
                                               {gamma, beta, mean, variance, epsilon}));

  std::vector<float> image(plain::input_shape.elements());
  for (float& v : image) v = 2.0f * u(rng);
  tools::float_runner<plain> unfolded_run;
  tools::float_runner<folded> folded_run;
  REQUIRE(unfolded_run.run(fw, std::span<const float>(image)));
  REQUIRE(folded_run.run(ff, std::span<const float>(image)));

  // By hand: relu6(gamma (x - mean) / sqrt(var + eps) + beta) on the depthwise output, then the pointwise.
  const auto x = unfolded_run.tensor(1);
  std::vector<float> normalized(x.dims().elements());
  const tensor_view<float> y(normalized.data(), x.dims());
  for (int r = 0; r < x.height(); ++r)
    for (int c = 0; c < x.width(); ++c)
      for (int k = 0; k < x.channels(); ++k) {
        const std::size_t ch = std::size_t(k);
        const double bn =
            gamma[ch] * (double(x(r, c, k)) - mean[ch]) / std::sqrt(double(variance[ch]) + epsilon) + beta[ch];
        y(r, c, k) = static_cast<float>(std::clamp(bn, 0.0, 6.0));
      }
  std::vector<float> expected(plain::output_shape.elements());
  reference::pointwise_conv(tensor_view<const float>(y), fw.layer<1>().filter.data(), fw.layer<1>().bias.data(),
                            tensor_view<float>(expected.data(), plain::output_shape), activation::relu);

  bool some_clamped = false;
  for (std::size_t i = 0; i < normalized.size(); ++i) {
    CHECK(folded_run.values(1)[i] == doctest::Approx(normalized[i]).epsilon(1e-5).scale(1.0));
    some_clamped = some_clamped || normalized[i] == 0.0f || normalized[i] == 6.0f;
  }
  CHECK(some_clamped);  // the activation is exercised on both sides of the fold
  for (std::size_t i = 0; i < expected.size(); ++i)
    CHECK(folded_run.values(2)[i] == doctest::Approx(expected[i]).epsilon(1e-5).scale(1.0));
}

// ---------------------------------------------------------------------------------------------
// The selfie model's layer kinds through the float twin and quantization; float weights files;
// photos as network inputs (what the generated calibrator of a float TFLite model runs).

/// The selfie graph's shapes in miniature: 1x1 conv, hard-swish, a gate (whole-map mean, logistic,
/// broadcast multiply into the tapped map), then the 2x2 stride-2 transposed convolution.
template <class T>
using gate_net = network<input<T, 2, 2, 1>,                                                          //
                         layers::pointwise<layers::pointwise_config{.out_channels = 1}>,             // 0
                         layers::hard_swish<>,                                                       // 1
                         layers::tap<"h">,                                                           // 2
                         layers::global_average_pool<>,                                              // 3
                         layers::logistic<>,                                                         // 4
                         layers::mul<"h">,                                                           // 5
                         layers::transpose_conv<layers::transpose_conv_config{.out_channels = 1}>>;  // 6

template <class T>
tools::float_weights<gate_net<T>> gate_weights() {
  tools::float_weights<gate_net<T>> fw;
  fw.template layer<0>().filter = {2.0f};
  fw.template layer<0>().bias = {-1.0f};
  fw.template layer<6>().filter = {1.0f, 1.0f, 1.0f, 1.0f};
  fw.template layer<6>().bias = {0.0f};
  return fw;
}

TEST_CASE("tools: the float runner computes hard-swish, mean, logistic, broadcast mul and transposed conv") {
  using net = gate_net<u8>;
  const auto fw = gate_weights<u8>();
  tools::float_runner<net> runner;
  REQUIRE(runner.run(fw, std::vector<float>{0.0f, 1.0f, 2.0f, 3.0f}));
  // 2x - 1 = -1, 1, 3, 5; hard-swish x * relu6(x + 3) / 6 = -1/3, 2/3, 3, 5; their mean 25/12.
  const std::vector<float> swished{-1.0f / 3.0f, 2.0f / 3.0f, 3.0f, 5.0f};
  for (std::size_t i = 0; i < 4; ++i) CHECK(runner.values(2)[i] == doctest::Approx(swished[i]));
  const float gate = 1.0f / (1.0f + std::exp(-25.0f / 12.0f));
  CHECK(runner.values(3)[0] == doctest::Approx(25.0f / 12.0f));
  CHECK(runner.values(4)[0] == doctest::Approx(gate));
  // Each gated value fills its own 2x2 block of the 4x4 output (all-ones kernel, stride 2).
  const auto out = runner.output();
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) CHECK(out(y, x, 0) == doctest::Approx(swished[std::size_t(y / 2 * 2 + x / 2)] * gate));
}

template <class T>
void check_gate_quantization() {
  using net = gate_net<T>;
  const auto fw = gate_weights<T>();
  const std::vector<std::vector<float>> samples{{0.0f, 1.0f, 2.0f, 3.0f}, {3.0f, 2.0f, 0.5f, 0.0f}};
  const auto ranges = tools::calibrate(fw, samples);
  const auto w = tools::quantize_network<net>(fw, ranges);
  REQUIRE(w != nullptr);
  const auto quant = tools::tensor_quant<net>(*w);
  // Hard-swish, mean, mul and the transposed convolution get their calibrated ranges; logistic
  // TFLite's fixed 1/256 output.
  for (const std::size_t t : {1, 2, 3, 5, 6}) CHECK(quant[t] == tools::activation_quant<T>(ranges[t]));
  CHECK(quant[4] == reference::probability_output_params<T>);
  // Run quantized: every output within a few steps of the float run.
  const typename net::prepared p = net::prepare(*w);
  tools::float_runner<net> runner;
  for (const auto& sample : samples) {
    REQUIRE(runner.run(fw, std::span<const float>(sample)));
    const std::vector<T> input = tools::quantize_input<net>(*w, sample);
    std::vector<T> output(net::output_shape.elements());
    net::run(p, tensor_view<const T>(input.data(), net::input_shape), tensor_view<T>(output.data(), net::output_shape),
             arena_for<net>());
    const std::vector<float> result = tools::dequantize_output<net>(*w, output);
    for (std::size_t i = 0; i < result.size(); ++i)
      CHECK(std::fabs(result[i] - runner.values(6)[i]) <= 4.0f * quant[6].scale);
  }
}

TEST_CASE("tools: ranges are clipped to the values their readers tell apart (logistic, hard swish)") {
  using net = gate_net<u8>;
  constexpr float unbounded = std::numeric_limits<float>::infinity();
  constexpr tools::float_range everything{-unbounded, unbounded};
  // Tensor 1 (the pointwise output) is read by hard swish alone, 3 (the whole-map mean) by the logistic alone; 2 by
  // the mean and the mul, 4 and 5 by the mul and the transpose conv, 6 is the output, 0 the input.
  CHECK(tools::distinguished_values<net>(1) == tools::float_range{tools::hard_swish_floor, unbounded});
  CHECK(tools::distinguished_values<net>(3) ==
        tools::float_range{-tools::logistic_saturation, tools::logistic_saturation});
  for (const int t : {0, 2, 4, 5, 6}) CHECK(tools::distinguished_values<net>(t) == everything);
  std::array<tools::float_range, net::tensor_count> ranges{};
  for (auto& r : ranges) r = {-100.0f, 50.0f};
  tools::clip_to_readers<net>(ranges);
  CHECK(ranges[1] == tools::float_range{tools::hard_swish_floor, 50.0f});
  CHECK(ranges[3] == tools::float_range{-tools::logistic_saturation, tools::logistic_saturation});
  for (const std::size_t t : {0, 2, 4, 5, 6}) CHECK(ranges[t] == tools::float_range{-100.0f, 50.0f});
  // A tensor whose values all lie beyond the window keeps one value for them: the window's edge.
  ranges[1] = {-90.0f, -20.0f};
  tools::clip_to_readers<net>(ranges);
  CHECK(ranges[1] == tools::float_range{tools::hard_swish_floor, tools::hard_swish_floor});
  // The clips lose nothing: beyond +-6.25 the sigmoid is within half of the fixed 1/256 step of 0 or 1, and hard
  // swish is 0 at and below -3.
  CHECK(256.0 / (1.0 + std::exp(-double(tools::logistic_saturation))) >= 255.5);
  const auto hard_swish = [](double x) { return x * std::clamp(x + 3.0, 0.0, 6.0) / 6.0; };
  CHECK(hard_swish(double(tools::hard_swish_floor)) == 0.0);
  CHECK(hard_swish(double(tools::hard_swish_floor) - 40.0) == 0.0);
  // A tensor that is also a named output keeps its range; one read by a logistic and a hard swish gets the hull of
  // both windows, and one read by hard swish and another op everything.
  using named_logits = network<input<u8, 2, 2, 1>, layers::pointwise<layers::pointwise_config{.out_channels = 1}>,
                               layers::output<"logits">, layers::logistic<>>;
  CHECK(tools::distinguished_values<named_logits>(1) == everything);
  using shared =
      network<input<u8, 2, 2, 1>, layers::pointwise<layers::pointwise_config{.out_channels = 1}>, layers::tap<"x">,
              layers::logistic<>, layers::from<"x">, layers::hard_swish<>, layers::add<"x">>;
  CHECK(tools::distinguished_values<shared>(1) == everything);
  using gated =
      network<input<u8, 2, 2, 1>, layers::pointwise<layers::pointwise_config{.out_channels = 1}>, layers::tap<"x">,
              layers::logistic<>, layers::tap<"g">, layers::from<"x">, layers::hard_swish<>, layers::mul<"g">>;
  CHECK(tools::distinguished_values<gated>(1) == tools::float_range{-tools::logistic_saturation, unbounded});
}

TEST_CASE("tools: the selfie layer kinds quantize with TFLite's fixed logistic output, u8 and i8") {
  check_gate_quantization<u8>();
  check_gate_quantization<i8>();
}

TEST_CASE("tools: float weights files round-trip and are refused for another network") {
  using net = gate_net<i8>;
  const auto fw = gate_weights<i8>();
  const std::vector<std::byte> blob = tools::save_float_weights<net>(fw);
  // Header: magic, version, byte order, 7 layers, input shape; per layer kind, shape, two counts;
  // then 1 + 1 + 4 + 1 floats.
  std::size_t header = 8 + 3 * 4 + 3 * 4;
  for (const std::string_view kind :
       {"pointwise", "hard_swish", "tap", "global_average_pool", "logistic", "mul", "transpose_conv"})
    header += 4 + kind.size() + 3 * 4 + 2 * 8;
  CHECK(blob.size() == header + 7 * sizeof(float));
  CHECK(std::memcmp(blob.data(), "MOSAIQFW", 8) == 0);

  tools::float_weights<net> loaded;
  REQUIRE(tools::load_float_weights<net>(blob, loaded));
  CHECK(loaded.layer<0>().filter == fw.layer<0>().filter);
  CHECK(loaded.layer<0>().bias == fw.layer<0>().bias);
  CHECK(loaded.layer<6>().filter == fw.layer<6>().filter);

  test::recording_handler errors;
  // The u8 network's file is the same (the float weights do not depend on the element type)...
  tools::float_weights<gate_net<u8>> other_type;
  CHECK(tools::load_float_weights<gate_net<u8>>(blob, other_type));
  // ...another layer list, a truncated file and a wrong count are not.
  tools::float_weights<affine_net> other;
  CHECK_FALSE(tools::load_float_weights<affine_net>(blob, other));
  CHECK(errors.last() == errc::blob_mismatch);
  errors.reset();
  CHECK_FALSE(tools::load_float_weights<net>(std::span(blob).first(blob.size() - 4), loaded));
  CHECK(errors.last() == errc::blob_mismatch);
  std::vector<std::byte> wrong_count = blob;
  wrong_count[8 + 3 * 4 + 3 * 4 + 4 + 9 + 3 * 4] = std::byte{2};  // the pointwise filter's count
  errors.reset();
  CHECK_FALSE(tools::load_float_weights<net>(wrong_count, loaded));
  CHECK(errors.last() == errc::blob_mismatch);
}

TEST_CASE("tools: a photo becomes the network input resized and divided by 255") {
  using net = gate_net<u8>;  // one input channel: refused
  test::recording_handler errors;
  CHECK(tools::input_from_rgb<net>(tools::rgb_image{1, 1, {1, 2, 3}}).empty());
  CHECK(errors.last() == errc::shape_mismatch);
  using rgb_net = network<input<u8, 3, 4, 3>, layers::pointwise<layers::pointwise_config{.out_channels = 1}>>;
  // A uniform 5x2 photo: every input pixel is its color / 255, whatever the resize.
  tools::rgb_image photo{5, 2, {}};
  for (int i = 0; i < 10; ++i) photo.pixels.insert(photo.pixels.end(), {255, 0, 51});
  const std::vector<float> values = tools::input_from_rgb<rgb_net>(photo);
  REQUIRE(values.size() == 3 * 4 * 3);
  for (std::size_t i = 0; i < values.size(); i += 3) {
    CHECK(values[i] == 1.0f);
    CHECK(values[i + 1] == 0.0f);
    CHECK(values[i + 2] == 0.2f);
  }
  // Half-pixel bilinear: a 1x2 photo black | white stretched to width 4 gives 0, 1/4, 3/4, 1 (in 8 bits).
  using row_net = network<input<u8, 1, 4, 3>, layers::pointwise<layers::pointwise_config{.out_channels = 1}>>;
  const std::vector<float> row = tools::input_from_rgb<row_net>(tools::rgb_image{2, 1, {0, 0, 0, 255, 255, 255}});
  REQUIRE(row.size() == 12);
  CHECK(row[0] == 0.0f);
  CHECK(row[3] == std::round(255.0f / 4.0f) / 255.0f);
  CHECK(row[6] == std::round(255.0f * 3.0f / 4.0f) / 255.0f);
  CHECK(row[9] == 1.0f);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The 16x8 reference runner (tools/reference_16x8.hpp): the selfie model's layer kinds in miniature.

/// conv2d, hard swish, a gate (whole-map average pool, 1x1, logistic, broadcast mul), depthwise, a residual add, 2x
/// bilinear upsampling, the 2x2 stride-2 transposed convolution: tensors 1 to 10 in that order.
using net16x8 =
    network<input<i8, 4, 4, 1>,                                                                            //
            layers::conv2d<layers::conv2d_config{.out_channels = 2, .kernel = {3, 3}, .stride = {2, 2}}>,  // 1
            layers::hard_swish<>,                                                                          // 2
            layers::tap<"h">,                                                                              //
            layers::average_pool<layers::pool_config{.kernel = {2, 2}, .stride = {2, 2}}>,                 // 3
            layers::pointwise<layers::pointwise_config{.out_channels = 2}>,                                // 4
            layers::logistic<>,                                                                            // 5
            layers::mul<"h">,                                                                              // 6
            layers::tap<"g">,                                                                              //
            layers::depthwise<layers::depthwise_config{.kernel = {3, 3}}>,                                 // 7
            layers::add<"g">,                                                                              // 8
            layers::resize_bilinear<layers::resize_config{.scale = 2}>,                                    // 9
            layers::transpose_conv<layers::transpose_conv_config{.out_channels = 1}>>;                     // 10

/// Float weights that int8 per-channel quantization keeps exactly: integers k in [-127, 127] times 1/100 with 127
/// in every output channel, so the 16x8 run differs from the float run only by its activations' rounding.
tools::float_weights<net16x8> exact_int8_weights() {
  tools::float_weights<net16x8> fw;
  std::mt19937 rng(16);
  std::uniform_int_distribution<int> step(-127, 127);
  const auto fill = [&](auto& layer, std::size_t channels, bool channel_last) {
    for (auto& w : layer.filter) w = 0.01f * static_cast<float>(step(rng));
    for (std::size_t c = 0; c < channels; ++c)
      layer.filter[channel_last ? c : c * (layer.filter.size() / channels)] = 1.27f;
    for (auto& b : layer.bias) b = 0.1f * static_cast<float>(step(rng)) / 127.0f;
  };
  fill(fw.layer<0>(), 2, false);   // conv2d
  fill(fw.layer<4>(), 2, false);   // pointwise
  fill(fw.layer<8>(), 2, true);    // depthwise
  fill(fw.layer<11>(), 1, false);  // transpose_conv
  return fw;
}

TEST_CASE("tools: the 16x8 reference runner: TFLite's 16x8 scales, and outputs within int16 steps of the float run") {
  static_assert(net16x8::tensor_count == 11);
  const auto fw = exact_int8_weights();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<std::vector<float>> samples(3, std::vector<float>(16));
  for (auto& sample : samples) std::generate(sample.begin(), sample.end(), [&] { return pixel(rng); });
  const auto ranges = tools::calibrate(fw, samples);
  tools::reference_16x8<net16x8> net16;
  REQUIRE(net16.quantize(fw, ranges));
  // Symmetric min/max scales; logistic at 1/32768; the pool and the resize keep their input's scale.
  for (const std::size_t t : {0, 1, 2, 4, 6, 7, 8, 10})
    CHECK(net16.scale(t) == tools::int16_activation_scale(ranges[t]));
  CHECK(net16.scale(5) == 1.0f / 32768.0f);
  CHECK(net16.scale(3) == net16.scale(2));
  CHECK(net16.scale(9) == net16.scale(8));
  tools::float_runner<net16x8> runner;
  for (const auto& sample : samples) {
    REQUIRE(runner.run(fw, std::span<const float>(sample)));
    REQUIRE(net16.run(sample));
    for (std::size_t t = 1; t < net16x8::tensor_count; ++t) {
      const std::vector<float> real = net16.dequantized(t);
      float worst = 0.0f;
      for (std::size_t i = 0; i < real.size(); ++i) worst = std::max(worst, std::fabs(real[i] - runner.values(t)[i]));
      INFO("tensor ", t);
      CHECK(worst <= 8.0f * net16.scale(t));
    }
  }
  CHECK(net16.output().size() == 64);
}

TEST_CASE("tools: the 16x8 reference runner refuses to run unquantized, and float weights of the wrong size") {
  test::recording_handler errors;
  tools::reference_16x8<net16x8> net16;
  CHECK_FALSE(net16.run(std::vector<float>(16, 0.5f)));
  CHECK(errors.last() == errc::invalid_argument);
  auto fw = exact_int8_weights();
  fw.layer<8>().bias.pop_back();
  std::array<float_range, net16x8::tensor_count> ranges{};
  ranges.fill({-1.0f, 1.0f});
  errors.reset();
  CHECK_FALSE(net16.quantize(fw, ranges));
  CHECK(errors.last() == errc::shape_mismatch);
  CHECK_FALSE(net16.run(std::vector<float>(16, 0.5f)));
}
