// Scales at the edges of float (1e30, 1e-45, +infinity, NaN) at every entry point that derives a multiplier, a rescale
// or a table from float scales: the ones whose derived value is not finite, or outside what requantization can
// represent, are refused with errc::invalid_argument and write nothing; the others behave as TFLite defines them
// (multipliers below 2^-32 flush to zero, single-round multipliers above 2^30 saturate). Built per ISA level, so the
// SIMD entry points (ops/) are checked next to the references; the sanitizer build (float-cast-overflow) runs the same
// cases.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "mosaiq/ops/depthwise.hpp"
#include "mosaiq/ops/eltwise.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/ops/pool.hpp"
#include "mosaiq/ops/softmax.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/reference/softmax.hpp"
#include "support.hpp"

namespace {

using mosaiq::activation;
using mosaiq::errc;
using mosaiq::i8;
using mosaiq::quant_params;
using mosaiq::quantized_multiplier;
using mosaiq::rounding;
using mosaiq::shape;
using mosaiq::tensor_view;
using mosaiq::u8;

constexpr float huge = 1e30f;
constexpr float tiny = 1e-45f;  // the smallest denormal
constexpr float infinity = std::numeric_limits<float>::infinity();
constexpr float not_a_number = std::numeric_limits<float>::quiet_NaN();
constexpr rounding reference_mode = rounding::tflite_reference;
constexpr rounding single_mode = rounding::single_round;
constexpr quantized_multiplier saturated{std::numeric_limits<std::int32_t>::max(), 30};

/// Expects exactly one invalid_argument report since the last check, and clears the record.
void expect_refused(mosaiq::test::recording_handler& errors) {
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
}
void expect_accepted(mosaiq::test::recording_handler& errors) {
  CHECK(errors.calls() == 0);
  errors.reset();
}

/// The single multiplier make_conv_requant built, as a (Q31, shift) pair; nothing when it refused.
template <rounding R, class T>
std::vector<quantized_multiplier> conv_multipliers(quant_params input, float filter_scale, quant_params output) {
  const auto q = mosaiq::reference::make_conv_requant<R, T>(input, {&filter_scale, 1}, 0, output, activation::relu6);
  std::vector<quantized_multiplier> result;
  for (const auto& s : q.scales)
    result.push_back({s.multiplier, R == reference_mode ? s.left_shift - s.right_shift : 31 - s.right_shift});
  return result;
}

}  // namespace

TEST_CASE("quantize_multiplier: NaN, infinities and negatives are unusable in both modes") {
  for (const double real : {static_cast<double>(not_a_number), static_cast<double>(infinity),
                            -static_cast<double>(infinity), -1.0, -std::numeric_limits<double>::denorm_min()}) {
    CAPTURE(real);
    CHECK_FALSE(mosaiq::is_usable_real_multiplier(real));
    CHECK(mosaiq::quantize_multiplier<reference_mode>(real) == mosaiq::unusable_multiplier);
    CHECK(mosaiq::quantize_multiplier<single_mode>(real) == mosaiq::unusable_multiplier);
  }
  CHECK_FALSE(mosaiq::is_valid_multiplier(mosaiq::unusable_multiplier));
  // Finite values keep TFLite's meaning: the largest double keeps its exponent (refused by is_valid_multiplier in
  // reference mode) or saturates (single round); the smallest flush to zero.
  const double largest = std::numeric_limits<double>::max();
  CHECK_FALSE(mosaiq::is_valid_multiplier(mosaiq::quantize_multiplier<reference_mode>(largest)));
  CHECK(mosaiq::quantize_multiplier<single_mode>(largest) == saturated);
  CHECK(mosaiq::quantize_multiplier(std::numeric_limits<double>::denorm_min()) == quantized_multiplier{0, 0});
  CHECK(mosaiq::quantize_multiplier(static_cast<double>(tiny)) == quantized_multiplier{0, 0});
}

TEST_CASE("conv requant (conv2d, depthwise, pointwise): extreme scales") {
  mosaiq::test::recording_handler errors;
  // uint8 multiplies input * filter in float: 1e30 * 1e30 is +infinity, refused in both modes (it used to give M = 0).
  CHECK(conv_multipliers<reference_mode, u8>({huge, 128}, huge, {1.0f, 10}).empty());
  expect_refused(errors);
  CHECK(conv_multipliers<single_mode, u8>({huge, 128}, huge, {1.0f, 10}).empty());
  expect_refused(errors);
  // int8 multiplies in double: 1e60 is finite, out of the reference domain, saturated in single-round as TFLite does.
  CHECK(conv_multipliers<reference_mode, i8>({huge, 0}, huge, {1.0f, 0}).empty());
  expect_refused(errors);
  CHECK(conv_multipliers<single_mode, i8>({huge, 0}, huge, {1.0f, 0}) == std::vector{saturated});
  expect_accepted(errors);
  // A denormal output scale: the multiplier is out of range, and relu6's 6 / 1e-45 (+infinity in float) no longer goes
  // through an undefined int conversion while the clamp is built.
  CHECK(conv_multipliers<reference_mode, u8>({1.0f, 0}, 1.0f, {tiny, 0}).empty());
  expect_refused(errors);
  CHECK(conv_multipliers<single_mode, u8>({1.0f, 0}, 1.0f, {tiny, 0}) == std::vector{saturated});
  expect_accepted(errors);
  CHECK(mosaiq::activation_range<u8>(activation::relu6, {tiny, 3}) == mosaiq::clamp_range{3, 255});
  // A denormal input scale: the multiplier flushes to zero (TFLite), every output is the zero point.
  CHECK(conv_multipliers<reference_mode, u8>({tiny, 0}, 1.0f, {1.0f, 0}) == std::vector{quantized_multiplier{0, 0}});
  expect_accepted(errors);
  // Non-finite scales anywhere.
  for (const float bad : {infinity, not_a_number}) {
    CAPTURE(bad);
    CHECK(conv_multipliers<reference_mode, u8>({bad, 0}, 1.0f, {1.0f, 0}).empty());
    expect_refused(errors);
    CHECK(conv_multipliers<single_mode, i8>({1.0f, 0}, bad, {1.0f, 0}).empty());
    expect_refused(errors);
    CHECK(conv_multipliers<reference_mode, i8>({1.0f, 0}, 1.0f, {bad, 0}).empty());
    expect_refused(errors);
  }
}

TEST_CASE("depthwise and pointwise layers built from scales report a refused multiplier and do not run") {
  mosaiq::test::recording_handler errors;
  const std::vector<u8> filter(3 * 3 * 4, 1), input(5 * 5 * 4, 7);
  std::vector<u8> out(5 * 5 * 4, 0xAB);
  const float filter_scale = huge;
  // Building reports the refused multiplier; running reports that the layer holds no weights, and writes nothing.
  const auto check_refused = [&](const auto& layer) {
    CHECK(errors.calls() >= 1);
    CHECK(errors.last() == errc::invalid_argument);
    errors.reset();
    std::vector<std::byte> workspace(std::decay_t<decltype(layer)>::workspace_bytes(shape{5, 5, 4}));
    layer(tensor_view<const u8>(input.data(), shape{5, 5, 4}), tensor_view<u8>(out.data(), shape{5, 5, 4}), workspace);
    CHECK(errors.calls() >= 1);
    errors.reset();
    CHECK(out == std::vector<u8>(5 * 5 * 4, 0xAB));
  };
  check_refused(mosaiq::depthwise<mosaiq::depthwise_config{}, u8>(filter.data(), nullptr, 4, {huge, 0},
                                                                  {&filter_scale, 1}, 0, {1.0f, 0}));
  check_refused(mosaiq::pointwise<mosaiq::pointwise_config{.out_channels = 4}, u8>(filter.data(), nullptr, 4, {huge, 0},
                                                                                   {&filter_scale, 1}, 0, {1.0f, 0}));
}

TEST_CASE("global average pool: extreme scales") {
  mosaiq::test::recording_handler errors;
  const auto valid = [](auto params) { return params.valid; };
  using mosaiq::reference::make_global_average_pool_params;
  // Both types divide in double (PrepareMeanOrSum): 1 / 1e-45 is finite, out of the reference domain, saturated in
  // single-round as TFLite does, then 1 / 4 folded in: (2^31 - 1, 30 - 2).
  for (const bool is_u8 : {true, false}) {
    CHECK_FALSE(valid(is_u8 ? make_global_average_pool_params<reference_mode, u8>({1.0f, 0}, {tiny, 0}, 4)
                            : make_global_average_pool_params<reference_mode, i8>({1.0f, 0}, {tiny, 0}, 4)));
    expect_refused(errors);
    const auto saturating = is_u8 ? make_global_average_pool_params<single_mode, u8>({1.0f, 0}, {tiny, 0}, 4)
                                  : make_global_average_pool_params<single_mode, i8>({1.0f, 0}, {tiny, 0}, 4);
    CHECK(saturating.multiplier == quantized_multiplier{saturated.multiplier, saturated.shift - 2});
    expect_accepted(errors);
  }
  CHECK_FALSE(valid(make_global_average_pool_params<reference_mode, u8>({huge, 0}, {1.0f, 0}, 4)));
  expect_refused(errors);
  // 1e-45 flushes to (0, 0), a valid pair; the fold keeps the multiplier 0: every mean is the output zero point.
  CHECK(make_global_average_pool_params<reference_mode, u8>({tiny, 0}, {1.0f, 0}, 4).multiplier ==
        quantized_multiplier{0, -2});
  expect_accepted(errors);
  for (const float bad : {infinity, not_a_number}) {
    CHECK_FALSE(valid(make_global_average_pool_params<reference_mode, i8>({bad, 0}, {1.0f, 0}, 4)));
    expect_refused(errors);
    CHECK_FALSE(valid(make_global_average_pool_params<single_mode, u8>({1.0f, 0}, {bad, 0}, 4)));
    expect_refused(errors);
  }
  // The SIMD op refuses the same quantizations and writes nothing.
  const std::vector<u8> input(2 * 2 * 3, 9);
  std::vector<u8> out(3, 0xAB);
  mosaiq::global_average_pool<reference_mode, u8>(tensor_view<const u8>(input.data(), shape{2, 2, 3}),
                                                  tensor_view<u8>(out.data(), shape{1, 1, 3}), {1.0f, 0}, {tiny, 0});
  expect_refused(errors);
  CHECK(out == std::vector<u8>(3, 0xAB));
}

TEST_CASE("max and average pool: a fused activation with extreme scales") {
  mosaiq::test::recording_handler errors;
  const std::vector<u8> input{1, 2, 3, 200};
  const tensor_view<const u8> in(input.data(), shape{2, 2, 1});
  const mosaiq::reference::pool_params params{.kernel = {2, 2}, .act = activation::relu6};
  std::array<u8, 1> expected{0xAB}, actual{0xAB};
  // relu6 at scale 1e-45: 6 / scale is +infinity, so the clamp is [zero point, 255] and the pools run.
  mosaiq::reference::max_pool<u8>(in, tensor_view<u8>(expected.data(), shape{1, 1, 1}), params, {tiny, 2});
  mosaiq::max_pool<u8>(in, tensor_view<u8>(actual.data(), shape{1, 1, 1}), params, {tiny, 2});
  expect_accepted(errors);
  CHECK(expected[0] == 200);
  CHECK(actual == expected);
  // relu6 at scale 1e30: 6 / scale rounds to 0, the clamp is [zero point, zero point].
  mosaiq::reference::average_pool<u8>(in, tensor_view<u8>(expected.data(), shape{1, 1, 1}), params, {huge, 2});
  mosaiq::average_pool<u8>(in, tensor_view<u8>(actual.data(), shape{1, 1, 1}), params, {huge, 2});
  expect_accepted(errors);
  CHECK(expected[0] == 2);
  CHECK(actual == expected);
  for (const float bad : {infinity, not_a_number}) {
    mosaiq::max_pool<u8>(in, tensor_view<u8>(actual.data(), shape{1, 1, 1}), params, {bad, 2});
    expect_refused(errors);
  }
}

TEST_CASE("add: extreme scales") {
  mosaiq::test::recording_handler errors;
  // 2 * max(input scales) / (2^20 * output scale) must be below 1: 1e30 inputs and a 1e-45 output are refused.
  struct add_case {
    quant_params a, b, out;
  };
  for (const auto& [a, b, out] :
       {add_case{{huge, 0}, {1.0f, 0}, {1.0f, 0}}, add_case{{1.0f, 0}, {1.0f, 0}, {tiny, 0}},
        add_case{{infinity, 0}, {1.0f, 0}, {1.0f, 0}}, add_case{{1.0f, 0}, {not_a_number, 0}, {1.0f, 0}},
        add_case{{1.0f, 0}, {1.0f, 0}, {infinity, 0}}}) {
    CHECK_FALSE(mosaiq::reference::make_add_params<u8>(a, b, out).valid);
    expect_refused(errors);
    CHECK_FALSE(mosaiq::add<i8, single_mode>(a, b, out).valid());
    expect_refused(errors);
  }
  // Denormal inputs against a unit output: the output multiplier flushes to zero, every sum is the zero point.
  const mosaiq::add<u8> tiny_inputs({tiny, 0}, {tiny, 0}, {1.0f, 7});
  expect_accepted(errors);
  CHECK(tiny_inputs.params().output_multiplier == quantized_multiplier{0, 0});
  const std::array<u8, 2> a{0, 255}, b{255, 255};
  std::array<u8, 2> sum{};
  tiny_inputs(tensor_view<const u8>(a.data(), shape{1, 2, 1}), tensor_view<const u8>(b.data(), shape{1, 2, 1}),
              tensor_view<u8>(sum.data(), shape{1, 2, 1}));
  CHECK(sum == std::array<u8, 2>{7, 7});
}

TEST_CASE("concat: rescales that overflow float are refused") {
  mosaiq::test::recording_handler errors;
  const std::vector<u8> first{10, 11, 12, 13}, second{5, 6, 7, 8};
  const auto run = [&](quant_params first_quant, quant_params out_quant) {
    std::vector<u8> expected(8, 0xAB), actual(8, 0xAB);
    const std::array<mosaiq::reference::concat_input<u8>, 2> inputs{
        {{tensor_view<const u8>(first.data(), shape{2, 2, 1}), first_quant},
         {tensor_view<const u8>(second.data(), shape{2, 2, 1}), out_quant}}};
    mosaiq::reference::concat<u8>(inputs, tensor_view<u8>(expected.data(), shape{2, 2, 2}), out_quant);
    mosaiq::concat<u8>(inputs, tensor_view<u8>(actual.data(), shape{2, 2, 2}), out_quant);
    CHECK(actual == expected);
    return actual;
  };
  const std::vector<u8> untouched(8, 0xAB);
  // 1e30 * (1 / 1e-30) and 1 * (1 / 1e-45) are +infinity; 3e38 is finite but its bias -255 * 3e38 is not.
  struct concat_case {
    quant_params in, out;
  };
  for (const auto& [in, out] :
       {concat_case{{huge, 0}, {1e-30f, 0}}, concat_case{{1.0f, 0}, {tiny, 0}}, concat_case{{3e38f, 255}, {1.0f, 0}},
        concat_case{{not_a_number, 0}, {1.0f, 0}}, concat_case{{1.0f, 0}, {infinity, 0}}}) {
    CHECK(run(in, out) == untouched);
    CHECK(errors.calls() == 2);  // the reference and the SIMD op
    CHECK(errors.last() == errc::invalid_argument);
    errors.reset();
  }
  // A finite rescale by 1e30 around zero point 10 saturates every value but the zero point itself.
  CHECK(run({huge, 10}, {1.0f, 0}) == std::vector<u8>{0, 5, 255, 6, 255, 7, 255, 8});
  expect_accepted(errors);
}

TEST_CASE("softmax and logistic tables: extreme scales") {
  mosaiq::test::recording_handler errors;
  const std::vector<u8> input{0, 255, 128, 128};
  std::vector<u8> expected(4), actual(4);
  // 1e30 and 1e-45 input scales give finite tables (a hard max, a uniform split); +infinity and NaN are refused.
  for (const float scale : {huge, tiny}) {
    CAPTURE(scale);
    const mosaiq::softmax<mosaiq::softmax_config{.channels = 2}, u8> softmax({scale, 0}, 1.0f);
    const mosaiq::logistic<u8> logistic({scale, 128});
    expect_accepted(errors);
    softmax(tensor_view<const u8>(input.data(), shape{1, 2, 2}), tensor_view<u8>(actual.data(), shape{1, 2, 2}));
    mosaiq::reference::softmax<u8>(softmax.exp_table(), tensor_view<const u8>(input.data(), shape{1, 2, 2}),
                                   tensor_view<u8>(expected.data(), shape{1, 2, 2}));
    CHECK(actual == expected);
    CHECK(expected == (scale == huge ? std::vector<u8>{0, 255, 128, 128} : std::vector<u8>{128, 128, 128, 128}));
    logistic(tensor_view<const u8>(input.data(), shape{1, 2, 2}), tensor_view<u8>(actual.data(), shape{1, 2, 2}));
    CHECK(actual == (scale == huge ? std::vector<u8>{0, 255, 128, 128} : std::vector<u8>{128, 128, 128, 128}));
  }
  // beta * scale = 1e60 is finite in double: a hard max too.
  CHECK(mosaiq::reference::softmax_table({huge, 0}, huge).valid());
  expect_accepted(errors);
  for (const float bad : {infinity, not_a_number}) {
    CHECK_FALSE(mosaiq::reference::softmax_table({bad, 0}, 1.0f).valid());
    expect_refused(errors);
    CHECK_FALSE(mosaiq::reference::softmax_table({1.0f, 0}, bad).valid());
    expect_refused(errors);
    CHECK_FALSE(mosaiq::logistic<i8>({bad, 0}).valid());
    expect_refused(errors);
  }
}
