// reference/eltwise.hpp: add, mul and channel concat against hand-computed TFLite results, TFLite broadcasting
// against the element-wise op on tiled inputs, float twins, and agreement of the quantized ops with float math on
// random data.
#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <random>
#include <vector>

#include "mosaiq/core.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "support.hpp"

using namespace mosaiq;

using test::dequantized;
using test::q31_half;
using test::random_values;

TEST_CASE("add params are the multipliers TFLite's ADD Prepare derives") {
  // twice_max = 2 * max(0.25, 0.5) = 1. Input 1: 0.25 = 0.5 * 2^-1 -> (2^30, -1); input 2: 0.5 -> (2^30, 0).
  // Output: 1 / (2^20 * 0.5) = 2^-19 = 0.5 * 2^-18 -> (2^30, -18).
  const auto params = reference::make_add_params<u8>({0.25f, 100}, {0.5f, 50}, {0.5f, 10});
  CHECK(params.valid);
  CHECK(params.input1_offset == -100);
  CHECK(params.input2_offset == -50);
  CHECK(params.output_offset == 10);
  CHECK(params.input1_multiplier == quantized_multiplier{q31_half, -1});
  CHECK(params.input2_multiplier == quantized_multiplier{q31_half, 0});
  CHECK(params.output_multiplier == quantized_multiplier{q31_half, -18});
  CHECK(params.clamp == clamp_range{0, 255});
}

TEST_CASE("add uint8 with equal input scales, including both rounding modes on ties") {
  // a, b: scale 0.5, zp 128; out: scale 1, zp 128. Multipliers: inputs (2^30, 0) = 0.5, output (2^30, -19) = 2^-20.
  const quant_params in{0.5f, 128}, out_quant{1.0f, 128};
  const auto params = reference::make_add_params<u8>(in, in, out_quant);
  REQUIRE(params.valid);
  // Operands are one-channel slices of two-channel buffers to exercise strides; guards must stay untouched.
  std::array<u8, 6> a{130, 1, 129, 2, 127, 3};
  std::array<u8, 6> b{140, 4, 128, 5, 128, 6};
  std::array<u8, 6> result{9, 9, 9, 9, 9, 9};
  const shape two_channels{1, 3, 2};
  const auto a_view = tensor_view<u8>(a.data(), two_channels).channel_slice(0, 1);
  const auto b_view = tensor_view<u8>(b.data(), two_channels).channel_slice(0, 1);
  const auto out_view = tensor_view<u8>(result.data(), two_channels).channel_slice(1, 1);

  reference::add<rounding::tflite_reference>(a_view, b_view, out_view, params);
  // x0: (2 + 12) << 20 each halved: 2^20 + 6*2^20 = 7*2^20; * 2^30/2^31 = 7*2^19; RDBPOT(., 19) = 7 -> 135 (1 + 6 = 7).
  CHECK(result[1] == 135);
  // x1: 1 << 20 -> 2^19; output 2^18 / 2^19 = 0.5 rounds away from zero -> 1 -> 129 (real 0.5 / 1 = 0.5).
  CHECK(result[3] == 129);
  // x2: -1 << 20 -> -2^19; -0.5 rounds away from zero -> -1 -> 127.
  CHECK(result[5] == 127);
  CHECK(result[0] == 9);
  CHECK(result[2] == 9);
  CHECK(result[4] == 9);

  reference::add<rounding::single_round>(a_view, b_view, out_view, params);
  CHECK(result[1] == 135);
  CHECK(result[3] == 129);  // (2^19 * 2^30 + 2^49) >> 50 = 1
  CHECK(result[5] == 128);  // (-2^19 * 2^30 + 2^49) >> 50 = 0: a single rounding ties upward, not away from zero
}

TEST_CASE("add uint8 with different input scales") {
  // a: 0.25 zp 100, b: 0.5 zp 50, out: 0.5 zp 10 (multipliers checked in the params test above).
  const auto params = reference::make_add_params<u8>({0.25f, 100}, {0.5f, 50}, {0.5f, 10});
  const std::array<u8, 2> a{110, 101};
  const std::array<u8, 2> b{60, 50};
  std::array<u8, 2> result{};
  const shape dims{1, 1, 2};
  reference::add<rounding::tflite_reference>(tensor_view<const u8>(a.data(), dims),
                                             tensor_view<const u8>(b.data(), dims),
                                             tensor_view<u8>(result.data(), dims), params);
  // c0: 2.5 + 5.0 = 7.5 -> 15 -> 25. a: 10<<20 -> 5*2^20 -> /2 = 5*2^19; b: 10<<20 -> 5*2^20 = 10*2^19;
  //     sum 15*2^19 -> 15*2^18 -> RDBPOT(., 18) = 15 -> +10 = 25.
  CHECK(result[0] == 25);
  // c1: 0.25 + 0 = 0.25 -> 0.5 output steps -> rounds away -> 1 -> 11. a: 1<<20 -> 2^19 -> 2^18; out 2^17 / 2^18.
  CHECK(result[1] == 11);
}

TEST_CASE("add int8 with a relu6 clamp") {
  // a: 0.125 zp -10, b: 0.125 zp 0, out: 1/16 zp -128. relu6 -> [-128, -128 + round(6 * 16) = -32].
  // Multipliers: inputs 0.5 -> (2^30, 0); output 0.25 / (2^20 / 16) = 2^-18 -> (2^30, -17).
  const auto params = reference::make_add_params<i8>({0.125f, -10}, {0.125f, 0}, {0.0625f, -128}, activation::relu6);
  REQUIRE(params.valid);
  CHECK(params.clamp == clamp_range{-128, -32});
  CHECK(params.output_multiplier == quantized_multiplier{q31_half, -17});
  const std::array<i8, 3> a{54, 14, -20};
  const std::array<i8, 3> b{0, 8, 0};
  std::array<i8, 3> result{};
  const shape dims{1, 3, 1};
  reference::add<rounding::tflite_reference>(tensor_view<const i8>(a.data(), dims),
                                             tensor_view<const i8>(b.data(), dims),
                                             tensor_view<i8>(result.data(), dims), params);
  CHECK(result[0] == -32);   // 64 * 0.125 = 8.0 -> 128 steps -> 0, above relu6 (6.0) -> -32
  CHECK(result[1] == -64);   // 3.0 + 1.0 = 4.0 -> 64 steps -> -64
  CHECK(result[2] == -128);  // -1.25 -> -20 steps -> -148, relu floor -> -128
}

TEST_CASE("add saturates at both ends of the element range") {
  // Scales 1, zero points 0: real sums are the integer sums; the output saturates.
  const quant_params unit{1.0f, 0};
  {
    const auto params = reference::make_add_params<u8>(unit, unit, unit);
    const std::array<u8, 3> a{200, 0, 255};
    const std::array<u8, 3> b{100, 0, 1};
    std::array<u8, 3> result{};
    const shape dims{1, 1, 3};
    reference::add<rounding::tflite_reference>(tensor_view<const u8>(a.data(), dims),
                                               tensor_view<const u8>(b.data(), dims),
                                               tensor_view<u8>(result.data(), dims), params);
    CHECK(result[0] == 255);  // 300
    CHECK(result[1] == 0);
    CHECK(result[2] == 255);  // 256
  }
  {
    const auto params = reference::make_add_params<i8>(unit, unit, unit);
    const std::array<i8, 3> a{-128, 127, -100};
    const std::array<i8, 3> b{-128, 127, 99};
    std::array<i8, 3> result{};
    const shape dims{1, 1, 3};
    reference::add<rounding::single_round>(tensor_view<const i8>(a.data(), dims), tensor_view<const i8>(b.data(), dims),
                                           tensor_view<i8>(result.data(), dims), params);
    CHECK(result[0] == -128);  // -256
    CHECK(result[1] == 127);   // 254
    CHECK(result[2] == -1);
  }
}

TEST_CASE("add float applies the activation, and in place works") {
  std::array<float, 4> a{1.0f, -3.0f, 2.5f, 4.0f};
  const std::array<float, 4> b{2.0f, 1.0f, 4.0f, -0.5f};
  const shape dims{2, 2, 1};
  const tensor_view<float> a_view(a.data(), dims);
  reference::add(a_view, tensor_view<const float>(b.data(), dims), a_view, activation::relu6);
  CHECK(a[0] == 3.0f);
  CHECK(a[1] == 0.0f);  // -2 -> relu
  CHECK(a[2] == 6.0f);  // 6.5 -> 6
  CHECK(a[3] == 3.5f);
}

TEST_CASE("mul params are the multiplier TFLite's MUL Prepare derives") {
  // 0.5 * 0.25 / 0.125 = 1 = 0.5 * 2^1 -> (2^30, 1): a multiplier of 1 and above keeps its left shift.
  const auto unit = reference::make_mul_params<u8>({0.5f, 128}, {0.25f, 100}, {0.125f, 10});
  CHECK(unit.valid);
  CHECK(unit.input1_offset == -128);
  CHECK(unit.input2_offset == -100);
  CHECK(unit.output_offset == 10);
  CHECK(unit.output_multiplier == quantized_multiplier{q31_half, 1});
  CHECK(unit.clamp == clamp_range{0, 255});
  // 0.5 * 0.25 / 0.5 = 0.25 -> (2^30, -1); relu6 with scale 0.5, zp -128 clamps to [-128, -116].
  const auto quarter = reference::make_mul_params<i8>({0.5f, 0}, {0.25f, 0}, {0.5f, -128}, activation::relu6);
  CHECK(quarter.output_multiplier == quantized_multiplier{q31_half, -1});
  CHECK(quarter.clamp == clamp_range{-128, -116});
  // The product s_a * s_b is a float, as mul.cc writes it: 0.1f * 0.3f / 0.7f in float, then widened.
  const auto product = reference::make_mul_params<u8>({0.1f, 0}, {0.3f, 0}, {0.7f, 0});
  CHECK(product.output_multiplier == quantize_multiplier(static_cast<double>(0.1f * 0.3f / 0.7f)));
}

TEST_CASE("mul uint8: (a - zp_a) (b - zp_b) rescaled, both rounding modes on ties, saturation") {
  // Multiplier 1: out = 10 + (a - 128)(b - 100), clamped to [0, 255].
  const auto unit = reference::make_mul_params<u8>({0.5f, 128}, {0.25f, 100}, {0.125f, 10});
  const std::array<u8, 5> a{130, 126, 140, 200, 120}, b{103, 105, 110, 110, 110};
  std::array<u8, 5> out{};
  const shape dims{1, 5, 1};
  reference::mul<rounding::tflite_reference, u8>(tensor_view<const u8>(a.data(), dims),
                                                 tensor_view<const u8>(b.data(), dims),
                                                 tensor_view<u8>(out.data(), dims), unit);
  CHECK(out == std::array<u8, 5>{16, 0, 130, 255, 0});  // 10+6, 10-10, 10+120, 10+720 -> 255, 10-80 -> 0

  // Multiplier 0.25: products -2, 2, 3, -3, -1 are -0.5, 0.5, 0.75, -0.75, -0.25. TFLite's double rounding takes -0.5
  // away from zero (-1); single rounding rounds it up (0).
  const std::array<u8, 5> c{126, 130, 131, 125, 127}, one{101, 101, 101, 101, 101};
  const auto c_view = tensor_view<const u8>(c.data(), dims), one_view = tensor_view<const u8>(one.data(), dims);
  reference::mul<rounding::tflite_reference, u8>(c_view, one_view, tensor_view<u8>(out.data(), dims),
                                                 reference::make_mul_params<u8>({0.5f, 128}, {0.25f, 100}, {0.5f, 10}));
  CHECK(out == std::array<u8, 5>{9, 11, 11, 9, 10});
  reference::mul<rounding::single_round, u8>(
      c_view, one_view, tensor_view<u8>(out.data(), dims),
      reference::make_mul_params<u8, rounding::single_round>({0.5f, 128}, {0.25f, 100}, {0.5f, 10}));
  CHECK(out == std::array<u8, 5>{10, 11, 11, 9, 10});
}

TEST_CASE("mul int8 broadcasts a per-channel vector over a map (squeeze-and-excitation) and a scalar") {
  // Multiplier 1 (0.5 * 0.25 / 0.125), zero points 0 / -100 / 10: out = 10 + a (b + 100), clamped to int8.
  const auto params = reference::make_mul_params<i8>({0.5f, 0}, {0.25f, -100}, {0.125f, 10});
  const std::array<i8, 6> map{1, 2, 3, -4, -5, 6};  // 1x2x3
  const std::array<i8, 3> scale{-99, -98, -100};    // 1x1x3: factors 1, 2, 0
  std::array<i8, 6> out{};
  reference::mul<rounding::tflite_reference, i8>(tensor_view<const i8>(map.data(), shape{1, 2, 3}),
                                                 tensor_view<const i8>(scale.data(), shape{1, 1, 3}),
                                                 tensor_view<i8>(out.data(), shape{1, 2, 3}), params);
  CHECK(out == std::array<i8, 6>{11, 14, 10, 6, 0, 10});
  // The vector first (TFLite accepts either order): a = vector, b = map, the offsets follow the operands.
  const auto swapped = reference::make_mul_params<i8>({0.25f, -100}, {0.5f, 0}, {0.125f, 10});
  reference::mul<rounding::tflite_reference, i8>(tensor_view<const i8>(scale.data(), shape{1, 1, 3}),
                                                 tensor_view<const i8>(map.data(), shape{1, 2, 3}),
                                                 tensor_view<i8>(out.data(), shape{1, 2, 3}), swapped);
  CHECK(out == std::array<i8, 6>{11, 14, 10, 6, 0, 10});
  // A scalar 1x1x1 of factor 30: 10 + 30 a, saturating at both ends.
  const std::array<i8, 1> thirty{-70};
  reference::mul<rounding::tflite_reference, i8>(tensor_view<const i8>(map.data(), shape{1, 2, 3}),
                                                 tensor_view<const i8>(thirty.data(), shape{1, 1, 1}),
                                                 tensor_view<i8>(out.data(), shape{1, 2, 3}), params);
  CHECK(out == std::array<i8, 6>{40, 70, 100, -110, -128, 127});
}

TEST_CASE_TEMPLATE("broadcasting equals the element-wise op on inputs tiled to the output's shape", T, u8, i8) {
  // TFLite's rule: an axis of extent 1 is read at index 0 for every output index. Each pattern of a (N, H, W, C in
  // {full, 1}) against a full b, and b against a full a, through the broadcast op and through explicit tiling.
  std::mt19937 rng(21);
  const int batch = 2;
  const shape full{3, 4, 5};
  const int zp = std::is_same_v<T, u8> ? 128 : 0;
  const auto add_params = reference::make_add_params<T>({0.03f, zp + 5}, {0.05f, zp - 7}, {0.06f, zp + 3});
  const auto mul_params = reference::make_mul_params<T>({0.03f, zp + 5}, {0.05f, zp - 7}, {0.01f, zp + 3});
  const std::vector<T> dense = random_values<T>(rng, static_cast<std::size_t>(batch) * full.elements());
  for (unsigned pattern = 0; pattern < 16; ++pattern) {
    const auto keep = [pattern](unsigned bit, int extent) { return (pattern >> bit & 1u) != 0 ? extent : 1; };
    const int small_batch = keep(0, batch);
    const shape small{keep(1, full.height), keep(2, full.width), keep(3, full.channels)};
    const std::vector<T> values = random_values<T>(rng, static_cast<std::size_t>(small_batch) * small.elements());
    std::vector<T> tiled(dense.size());
    const tensor_view<const T> small_view(values.data(), small, small_batch);
    const tensor_view<T> tiled_view(tiled.data(), full, batch);
    for (int n = 0; n < batch; ++n)
      for (int y = 0; y < full.height; ++y)
        for (int x = 0; x < full.width; ++x)
          for (int c = 0; c < full.channels; ++c)
            tiled_view(n, y, x, c) = small_view(small_batch == 1 ? 0 : n, small.height == 1 ? 0 : y,
                                                small.width == 1 ? 0 : x, small.channels == 1 ? 0 : c);
    const tensor_view<const T> dense_view(dense.data(), full, batch);
    std::vector<T> broadcast(dense.size()), elementwise(dense.size());
    const tensor_view<T> broadcast_view(broadcast.data(), full, batch),
        elementwise_view(elementwise.data(), full, batch);
    CAPTURE(pattern);
    reference::add<rounding::tflite_reference, T>(dense_view, small_view, broadcast_view, add_params);
    reference::add<rounding::tflite_reference, T>(dense_view, tiled_view, elementwise_view, add_params);
    CHECK(broadcast == elementwise);
    reference::mul<rounding::tflite_reference, T>(small_view, dense_view, broadcast_view, mul_params);
    reference::mul<rounding::tflite_reference, T>(tiled_view, dense_view, elementwise_view, mul_params);
    CHECK(broadcast == elementwise);
  }
}

TEST_CASE("float add and mul broadcast a per-channel vector and apply the activation") {
  const std::array<float, 4> map{1.0f, -3.0f, 2.5f, 4.0f};  // 1x2x2
  const std::array<float, 2> vector{2.0f, 0.5f};            // 1x1x2
  std::array<float, 4> out{};
  const tensor_view<const float> map_view(map.data(), shape{1, 2, 2}), vector_view(vector.data(), shape{1, 1, 2});
  reference::mul(map_view, vector_view, tensor_view<float>(out.data(), shape{1, 2, 2}), activation::relu);
  CHECK(out == std::array<float, 4>{2.0f, 0.0f, 5.0f, 2.0f});
  reference::add(vector_view, map_view, tensor_view<float>(out.data(), shape{1, 2, 2}), activation::relu6);
  CHECK(out == std::array<float, 4>{3.0f, 0.0f, 4.5f, 4.5f});
}

TEST_CASE("concat of three uint8 inputs with mixed params into a channel slice") {
  // out: scale 0.5, zp 100; written into channels [1, 6) of a 7-channel buffer whose channels 0 and 6 are guards.
  const quant_params out_quant{0.5f, 100};
  const shape dims_in0{1, 2, 2}, dims_in2{1, 2, 2};
  // in0 has the output's params: copied bit for bit.
  const std::array<u8, 4> in0{7, 250, 0, 255};
  // in1 (scale 0.25, zp 0) is the middle channel of a 3-channel buffer: scale = 0.25 * (1 / 0.5) = 0.5, bias 0.
  const std::array<u8, 6> in1_storage{1, 3, 2, 3, 255, 4};
  // in2 (scale 1, zp 128): scale = 2, bias = -128 * 2 = -256.
  const std::array<u8, 4> in2{200, 250, 0, 127};
  std::array<u8, 14> buffer{};
  buffer.fill(77);
  const auto out = tensor_view<u8>(buffer.data(), shape{1, 2, 7}).channel_slice(1, 5);
  const std::array<reference::concat_input<u8>, 3> inputs{{
      {tensor_view<const u8>(in0.data(), dims_in0), out_quant},
      {tensor_view<const u8>(in1_storage.data(), shape{1, 2, 3}).channel_slice(1, 1), {0.25f, 0}},
      {tensor_view<const u8>(in2.data(), dims_in2), {1.0f, 128}},
  }};
  reference::concat<u8>(inputs, out, out_quant);
  const std::array<u8, 14> expected{77,  7,   250,
                                    102,       // in1: 3 * 0.5 = 1.5 rounds away -> 2, + 100
                                    244, 255,  // in2: 400 - 256 = 144 -> 244; 500 - 256 = 244 -> 344 saturates at 255
                                    77,  77,  0,   255,
                                    228,      // in1: 255 * 0.5 = 127.5 -> 128 -> 228
                                    0,   98,  // in2: -256 + 100 saturates at 0; 254 - 256 = -2 -> 98
                                    77};
  CHECK(buffer == expected);
}

TEST_CASE("concat int8 requantization rounds half away from zero and saturates") {
  // out: 0.25 zp 3. in0 (0.125, 0): scale 0.5, bias 0. in1 (0.5, -1): scale 2, bias 2. in2 has out's params.
  const quant_params out_quant{0.25f, 3};
  const std::array<i8, 6> in0{-3, 3, -1, 1, -128, 127};
  const std::array<i8, 5> in1{10, -100, 60, 61, 62};
  const std::array<i8, 2> in2{-128, 127};
  std::array<i8, 13> result{};
  const std::array<reference::concat_input<i8>, 3> inputs{{
      {tensor_view<const i8>(in0.data(), shape{1, 1, 6}), {0.125f, 0}},
      {tensor_view<const i8>(in1.data(), shape{1, 1, 5}), {0.5f, -1}},
      {tensor_view<const i8>(in2.data(), shape{1, 1, 2}), out_quant},
  }};
  reference::concat<i8>(inputs, tensor_view<i8>(result.data(), shape{1, 1, 13}), out_quant);
  const std::array<i8, 13> expected{1,    5,    2,   4,  // -1.5 -> -2, 1.5 -> 2, -0.5 -> -1, 0.5 -> 1; each + 3
                                    -61,  67,            // -64 + 3; 63.5 -> 64, + 3
                                    25,   -128,          // 20 + 2 + 3; -200 + 2 + 3 = -195 saturates
                                    125,  127,  127,     // 122 + 3; 124 + 3; 126 + 3 = 129 saturates
                                    -128, 127};          // copied
  CHECK(result == expected);
}

TEST_CASE("concat float copies channel ranges") {
  const std::array<float, 2> in0{1.0f, 2.0f};
  const std::array<float, 4> in1{3.0f, 4.0f, 5.0f, 6.0f};
  std::array<float, 6> result{};
  const std::array<tensor_view<const float>, 2> inputs{tensor_view<const float>(in0.data(), shape{1, 2, 1}),
                                                       tensor_view<const float>(in1.data(), shape{1, 2, 2})};
  reference::concat(inputs, tensor_view<float>(result.data(), shape{1, 2, 3}));
  CHECK(result == std::array<float, 6>{1.0f, 3.0f, 4.0f, 2.0f, 5.0f, 6.0f});
}

TEST_CASE_TEMPLATE("quantized add and concat agree with float math within 1 LSB on random data", T, u8, i8) {
  std::mt19937 rng(20240611);
  test::random_quant<T> random_quant(rng);
  const shape dims{5, 7, 3};
  const int batch = 2;
  const std::size_t count = dims.elements() * batch;

  for (int trial = 0; trial < 20; ++trial) {
    const quant_params qa = random_quant(), qb = random_quant(), qo = random_quant();
    const activation act = trial % 2 == 0 ? activation::none : activation::relu6;
    const std::vector<T> a = random_values<T>(rng, count), b = random_values<T>(rng, count);
    const std::vector<float> real_a = dequantized(a, qa), real_b = dequantized(b, qb);
    std::vector<float> real_sum(count);
    reference::add(tensor_view<const float>(real_a.data(), dims, batch),
                   tensor_view<const float>(real_b.data(), dims, batch),
                   tensor_view<float>(real_sum.data(), dims, batch), act);
    const auto params = reference::make_add_params<T>(qa, qb, qo, act);
    REQUIRE(params.valid);
    std::vector<T> sum_double(count), sum_single(count);
    reference::add<rounding::tflite_reference>(tensor_view<const T>(a.data(), dims, batch),
                                               tensor_view<const T>(b.data(), dims, batch),
                                               tensor_view<T>(sum_double.data(), dims, batch), params);
    reference::add<rounding::single_round>(tensor_view<const T>(a.data(), dims, batch),
                                           tensor_view<const T>(b.data(), dims, batch),
                                           tensor_view<T>(sum_single.data(), dims, batch), params);
    int worst = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const int expected = quantize_value<T>(real_sum[i], qo);
      worst = std::max({worst, std::abs(sum_double[i] - expected), std::abs(sum_single[i] - expected)});
    }
    CHECK(worst <= 1);

    // concat: a and b side by side, requantized to qo, against quantizing the float concat.
    std::vector<T> joined(count * 2);
    const std::array<reference::concat_input<T>, 2> inputs{
        {{tensor_view<const T>(a.data(), dims, batch), qa}, {tensor_view<const T>(b.data(), dims, batch), qb}}};
    const shape joined_dims{dims.height, dims.width, dims.channels * 2};
    reference::concat<T>(inputs, tensor_view<T>(joined.data(), joined_dims, batch), qo);
    std::vector<float> real_joined(count * 2);
    const std::array<tensor_view<const float>, 2> real_inputs{tensor_view<const float>(real_a.data(), dims, batch),
                                                              tensor_view<const float>(real_b.data(), dims, batch)};
    reference::concat(real_inputs, tensor_view<float>(real_joined.data(), joined_dims, batch));
    worst = 0;
    for (std::size_t i = 0; i < joined.size(); ++i)
      worst = std::max(worst, std::abs(joined[i] - quantize_value<T>(real_joined[i], qo)));
    CHECK(worst <= 1);
  }
}

TEST_CASE("eltwise misuse is reported and writes nothing") {
  const test::recording_handler errors;
  const quant_params unit{1.0f, 0};
  std::array<u8, 4> a{1, 2, 3, 4}, b{5, 6, 7, 8}, result{};
  result.fill(42);
  const std::array<u8, 4> untouched = result;

  SUBCASE("add with mismatched shapes") {
    const auto params = reference::make_add_params<u8>(unit, unit, unit);
    reference::add<rounding::tflite_reference>(tensor_view<const u8>(a.data(), shape{1, 4, 1}),
                                               tensor_view<const u8>(b.data(), shape{1, 2, 2}),
                                               tensor_view<u8>(result.data(), shape{1, 4, 1}), params);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::shape_mismatch);
  }
  SUBCASE("add with a null operand") {
    const auto params = reference::make_add_params<u8>(unit, unit, unit);
    reference::add<rounding::tflite_reference>(tensor_view<const u8>(nullptr, shape{1, 4, 1}),
                                               tensor_view<const u8>(b.data(), shape{1, 4, 1}),
                                               tensor_view<u8>(result.data(), shape{1, 4, 1}), params);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::null_pointer);
  }
  SUBCASE("add with params that were never built") {
    reference::add<rounding::tflite_reference>(tensor_view<const u8>(a.data(), shape{1, 4, 1}),
                                               tensor_view<const u8>(b.data(), shape{1, 4, 1}),
                                               tensor_view<u8>(result.data(), shape{1, 4, 1}), reference::add_params{});
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::invalid_argument);
  }
  SUBCASE("add params with a zero scale") {
    const auto params = reference::make_add_params<u8>({0.0f, 0}, unit, unit);
    CHECK_FALSE(params.valid);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::invalid_argument);
  }
  SUBCASE("add params whose output multiplier is not below 1") {
    // 2 * 1 / (2^20 * 2^-20) = 2: TFLite's QuantizeMultiplierSmallerThanOneExp would abort.
    const auto params = reference::make_add_params<u8>(unit, unit, {1.0f / 1048576.0f, 0});
    CHECK_FALSE(params.valid);
    CHECK(errors.last() == errc::invalid_argument);
  }
  SUBCASE("add params with a zero point outside int8") {
    const auto params = reference::make_add_params<i8>({1.0f, 128}, unit, unit);
    CHECK_FALSE(params.valid);
    CHECK(errors.last() == errc::invalid_argument);
  }
  SUBCASE("add whose output is larger than the broadcast shape") {
    const auto params = reference::make_add_params<u8>(unit, unit, unit);
    reference::add<rounding::tflite_reference>(tensor_view<const u8>(a.data(), shape{1, 1, 1}),
                                               tensor_view<const u8>(b.data(), shape{1, 1, 1}),
                                               tensor_view<u8>(result.data(), shape{1, 4, 1}), params);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::shape_mismatch);
  }
  SUBCASE("mul with mismatched shapes") {
    const auto params = reference::make_mul_params<u8>(unit, unit, unit);
    reference::mul<rounding::tflite_reference>(tensor_view<const u8>(a.data(), shape{1, 4, 1}),
                                               tensor_view<const u8>(b.data(), shape{1, 2, 1}),
                                               tensor_view<u8>(result.data(), shape{1, 4, 1}), params);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::shape_mismatch);
  }
  SUBCASE("mul with params for the other rounding mode") {
    const auto params = reference::make_mul_params<u8, rounding::single_round>(unit, unit, unit);
    reference::mul<rounding::tflite_reference>(tensor_view<const u8>(a.data(), shape{1, 4, 1}),
                                               tensor_view<const u8>(b.data(), shape{1, 4, 1}),
                                               tensor_view<u8>(result.data(), shape{1, 4, 1}), params);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::invalid_argument);
  }
  SUBCASE("mul params: a zero scale, a zero point outside int8, a multiplier of 2^30") {
    CHECK_FALSE(reference::make_mul_params<u8>(unit, {0.0f, 0}, unit).valid);
    CHECK_FALSE(reference::make_mul_params<i8>(unit, {1.0f, -129}, unit).valid);
    CHECK_FALSE(reference::make_mul_params<u8>(unit, unit, {1.0f / 1073741824.0f, 0}).valid);
    CHECK(errors.calls() == 3);
    CHECK(errors.last() == errc::invalid_argument);
    // Single rounding saturates such a shift as TFLite's TFLITE_SINGLE_ROUNDING build does.
    const auto saturated =
        reference::make_mul_params<u8, rounding::single_round>(unit, unit, {1.0f / 1073741824.0f, 0});
    CHECK(saturated.valid);
    CHECK(saturated.output_multiplier == quantized_multiplier{2147483647, 30});
  }
  SUBCASE("concat whose channel counts do not add up") {
    const std::array<reference::concat_input<u8>, 2> inputs{{{tensor_view<const u8>(a.data(), shape{1, 2, 2}), unit},
                                                             {tensor_view<const u8>(b.data(), shape{1, 2, 1}), unit}}};
    reference::concat<u8>(inputs, tensor_view<u8>(result.data(), shape{1, 2, 2}), unit);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::shape_mismatch);
  }
  SUBCASE("concat of an input with another height") {
    const std::array<reference::concat_input<u8>, 2> inputs{{{tensor_view<const u8>(a.data(), shape{1, 2, 1}), unit},
                                                             {tensor_view<const u8>(b.data(), shape{2, 1, 1}), unit}}};
    reference::concat<u8>(inputs, tensor_view<u8>(result.data(), shape{1, 2, 2}), unit);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::shape_mismatch);
  }
  SUBCASE("concat requantizing into an output with a zero scale") {
    const std::array<reference::concat_input<u8>, 1> inputs{{{tensor_view<const u8>(a.data(), shape{1, 4, 1}), unit}}};
    reference::concat<u8>(inputs, tensor_view<u8>(result.data(), shape{1, 4, 1}), {0.0f, 0});
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::invalid_argument);
  }
  CHECK(result == untouched);
}
