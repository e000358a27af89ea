// reference/pool.hpp: average, max and global average pooling against hand-computed TFLite results, float twins,
// and agreement of the quantized ops with float math on random data.
#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <random>
#include <vector>

#include "mosaiq/core.hpp"
#include "mosaiq/reference/pool.hpp"
#include "support.hpp"

using namespace mosaiq;

using test::dequantized;
using test::q31_half;
using test::random_values;

namespace {

const quant_params any_quant{0.1f, 0};  // only read for fused activations

}  // namespace

TEST_CASE("average pool with SAME padding divides by the in-image taps only") {
  // 3x3 input, 3x3 window, stride 1, SAME: out 3x3, pad 1 on every side.
  // clang-format off
  const std::array<u8, 9> in{1, 2, 3,
                             4, 5, 6,
                             7, 8, 9};
  // clang-format on
  std::array<u8, 9> out{};
  const reference::pool_params params{.kernel = {3, 3}, .stride = {1, 1}, .pad = padding::same()};
  reference::average_pool<u8>(tensor_view<const u8>(in.data(), shape{3, 3, 1}),
                              tensor_view<u8>(out.data(), shape{3, 3, 1}), params, any_quant);
  const std::array<u8, 9> expected{3, 4, 4,   // 12/4 = 3 (not 12/9 = 1); 21/6 = 3.5 -> (21+3)/6 = 4; 16/4 = 4
                                   5, 5, 6,   // 27/6 = 4.5 -> 5; 45/9 = 5; 33/6 = 5.5 -> 6
                                   6, 7, 7};  // 24/4 = 6; 39/6 = 6.5 -> 7; 28/4 = 7
  CHECK(out == expected);
}

TEST_CASE("average pool stride 2 on an odd image, two channels, two images") {
  // 5x5, 3x3 window, stride 2, SAME: out ceil(5/2) = 3, pad total (3-1)*2 + 3 - 5 = 2 -> 1 before, 1 after.
  // Channel 0 holds 10*y + x, channel 1 twice that; image 1 is image 0 plus 1 everywhere.
  std::vector<u8> in(2 * 5 * 5 * 2);
  for (int n = 0; n < 2; ++n)
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 5; ++x) {
        in[static_cast<std::size_t>(((n * 5 + y) * 5 + x) * 2)] = static_cast<u8>(10 * y + x + n);
        in[static_cast<std::size_t>(((n * 5 + y) * 5 + x) * 2 + 1)] = static_cast<u8>(2 * (10 * y + x) + n);
      }
  std::vector<u8> out(2 * 3 * 3 * 2);
  const reference::pool_params params{.kernel = {3, 3}, .stride = {2, 2}, .pad = padding::same()};
  reference::average_pool<u8>(tensor_view<const u8>(in.data(), shape{5, 5, 2}, 2),
                              tensor_view<u8>(out.data(), shape{3, 3, 2}, 2), params, any_quant);
  // Windows cover rows/cols {0,1}, {1,2,3}, {3,4}.
  const std::array<int, 9> channel0{6,  7,  9,    // 22/4 = 5.5 -> 6; 42/6 = 7; 34/4 = 8.5 -> 9
                                    21, 22, 24,   // 123/6 = 20.5 -> 21; 198/9 = 22; 141/6 = 23.5 -> 24
                                    36, 37, 39};  // 142/4 = 35.5 -> 36; 222/6 = 37; 154/4 = 38.5 -> 39
  const std::array<int, 9> channel1{11, 14, 17, 41, 44, 47, 71, 74, 77};  // doubled sums divide exactly
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 9; ++i) {
      CHECK(out[static_cast<std::size_t>((n * 9 + i) * 2)] == channel0[static_cast<std::size_t>(i)] + n);
      CHECK(out[static_cast<std::size_t>((n * 9 + i) * 2 + 1)] == channel1[static_cast<std::size_t>(i)] + n);
    }
}

TEST_CASE("average pool int8 rounds negative averages half away from zero") {
  // 1x2 input, 1x2 window, VALID: one output, the average of two taps per channel.
  // clang-format off
  const std::array<i8, 10> in{-3, -3, 3, -2, -128,
                              -4, -2, 4, 1, -128};
  // clang-format on
  std::array<i8, 5> out{};
  const reference::pool_params params{.kernel = {1, 2}};
  reference::average_pool<i8>(tensor_view<const i8>(in.data(), shape{1, 2, 5}),
                              tensor_view<i8>(out.data(), shape{1, 1, 5}), params, any_quant);
  CHECK(out[0] == -4);  // -7/2 = -3.5 -> (-7 - 1)/2 = -4 (truncation would give -3)
  CHECK(out[1] == -3);  // -5/2 = -2.5 -> -3
  CHECK(out[2] == 4);   // 7/2 = 3.5 -> 4
  CHECK(out[3] == -1);  // -1/2 = -0.5 -> -1
  CHECK(out[4] == -128);
  // Three taps: (-1 - 1 + 0)/3 = -0.67 -> (-2 - 1)/3 = -1.
  const std::array<i8, 3> row{-1, -1, 0};
  i8 single = 0;
  reference::average_pool<i8>(tensor_view<const i8>(row.data(), shape{1, 3, 1}),
                              tensor_view<i8>(&single, shape{1, 1, 1}), reference::pool_params{.kernel = {1, 3}},
                              any_quant);
  CHECK(single == -1);
}

TEST_CASE("average pool applies the fused activation in the quantized domain") {
  // scale 1/16, zp 10: relu6 -> [10, 10 + 96 = 106].
  const std::array<u8, 6> in{200, 4, 100,   // pixel 0, channels 0..2
                             200, 6, 200};  // pixel 1
  std::array<u8, 3> out{};
  const reference::pool_params params{.kernel = {1, 2}, .act = activation::relu6};
  reference::average_pool<u8>(tensor_view<const u8>(in.data(), shape{1, 2, 3}),
                              tensor_view<u8>(out.data(), shape{1, 1, 3}), params, quant_params{0.0625f, 10});
  CHECK(out[0] == 106);  // 200 -> clamped to 106
  CHECK(out[1] == 10);   // (4 + 6)/2 = 5 -> below zero point -> 10
  CHECK(out[2] == 106);  // 150
}

TEST_CASE("max pool with SAME padding and stride 2") {
  // 3x3, 3x3 window, stride 2, SAME: out 2x2, pad total 2 -> 1 before; windows rows/cols {0,1} and {1,2}.
  // clang-format off
  const std::array<u8, 9> in{5, 1, 9,
                             2, 8, 3,
                             7, 4, 6};
  // clang-format on
  std::array<u8, 4> out{};
  const reference::pool_params params{.kernel = {3, 3}, .stride = {2, 2}, .pad = padding::same()};
  reference::max_pool<u8>(tensor_view<const u8>(in.data(), shape{3, 3, 1}), tensor_view<u8>(out.data(), shape{2, 2, 1}),
                          params, any_quant);
  CHECK(out == std::array<u8, 4>{8, 9, 8, 8});

  // int8 with relu at zero point -5: the max of two negatives is lifted to -5.
  const std::array<i8, 4> pair{-20, 7, -30, -1};
  std::array<i8, 2> pooled{};
  reference::max_pool<i8>(tensor_view<const i8>(pair.data(), shape{1, 2, 2}),
                          tensor_view<i8>(pooled.data(), shape{1, 1, 2}),
                          reference::pool_params{.kernel = {1, 2}, .act = activation::relu}, quant_params{0.5f, -5});
  CHECK(pooled == std::array<i8, 2>{-5, 7});
}

TEST_CASE("float average and max pool") {
  const std::array<float, 9> in{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::array<float, 9> out{};
  const reference::pool_params params{.kernel = {3, 3}, .pad = padding::same()};
  const tensor_view<const float> in_view(in.data(), shape{3, 3, 1});
  const tensor_view<float> out_view(out.data(), shape{3, 3, 1});
  reference::average_pool(in_view, out_view, params);
  CHECK(out[0] == 3.0f);  // 12 / 4
  CHECK(out[1] == 3.5f);  // 21 / 6
  CHECK(out[4] == 5.0f);  // 45 / 9
  reference::max_pool(in_view, out_view,
                      reference::pool_params{.kernel = {3, 3}, .pad = padding::same(), .act = activation::relu6});
  CHECK(out[0] == 5.0f);
  CHECK(out[4] == 6.0f);  // 9 -> relu6
}

TEST_CASE("global average pool params follow TFLite's MEAN (PrepareMeanOrSum, QuantizedMeanOrSum's fold)") {
  // Both types: QuantizeMultiplier(double(s_in) / double(s_out)), then 1 / pixels folded in: k = floor(log2(pixels))
  // capped at 32 and 31 + shift, multiplier (M << k) / pixels truncated, shift - k.
  // 3x3, equal scales: (2^30, 1) -> k = 3, 2^33 / 9 = 954437176.9 -> (954437176, -2).
  const auto u8_params =
      reference::make_global_average_pool_params<rounding::tflite_reference, u8>({0.5f, 128}, {0.5f, 120}, 9);
  CHECK(u8_params.valid);
  CHECK(u8_params.multiplier == quantized_multiplier{954437176, -2});
  CHECK(u8_params.input_offset == 128);
  CHECK(u8_params.output_offset == 120);
  const auto i8_params =
      reference::make_global_average_pool_params<rounding::tflite_reference, i8>({0.1f, -5}, {0.1f, -5}, 9);
  CHECK(i8_params.multiplier == quantized_multiplier{954437176, -2});
  CHECK(i8_params.input_offset == -5);
  CHECK(i8_params.output_offset == -5);
  // 2x2: (2^30, 1) -> k = 2, exactly (2^30, -1). 1x3 with s_in / s_out = 2: (2^30, 2) -> k = 1, 2^31 / 3 ->
  // (715827882, 1), below 2^30: the fold does not renormalize.
  CHECK(
      reference::make_global_average_pool_params<rounding::tflite_reference, u8>({0.5f, 0}, {0.5f, 0}, 4).multiplier ==
      quantized_multiplier{q31_half, -1});
  CHECK(reference::make_global_average_pool_params<rounding::single_round, i8>({1.0f, 0}, {0.5f, 0}, 3).multiplier ==
        quantized_multiplier{715827882, 1});
  // A small ratio caps k at 31 + shift: s_in / s_out = 2^-30 is (2^30, -29), so 64 pixels fold k = 2, not 6:
  // (2^32 / 64, -31) = (2^26, -31).
  CHECK(reference::make_global_average_pool_params<rounding::tflite_reference, i8>({0x1p-30f, 0}, {1.0f, 0}, 64)
            .multiplier == quantized_multiplier{1 << 26, -31});
}

TEST_CASE("global average pool: the folded multiplier rounds where the older TFLite forms did otherwise") {
  // Each expected value is worked by hand below; the older forms (uint8: real scale s_in / (pixels s_out) on the raw
  // sum plus zp_out - int(zp_in s_in / s_out); int8: s_in / s_out, then a division by the pixel count rounded half
  // away from zero) give the values in brackets.
  std::array<i8, 8> i8_means{};
  // int8 1x4, (0.5, 0) both: multiplier (2^30, -1). Channel sums 5 and -6.
  //   reference rounding: SRDHM(5, 2^30) = 3 (2.5 away from zero), RDBPOT(3, 1) = 2 (1.5 -> 2)     [old: 5 / 4 -> 1]
  //                       SRDHM(-6, 2^30) = -3, RDBPOT(-3, 1) = -2 (-1.5 -> -2)                      [old: -2]
  //   single rounding:    (5 * 2^30 + 2^31) >> 32 = floor(7 / 4) = 1                                [old: 1]
  //                       (-6 * 2^30 + 2^31) >> 32 = floor(-4 / 4) = -1: ties round up               [old: -2]
  const std::array<i8, 8> row{5, -6, 0, 0, 0, 0, 0, 0};
  const tensor_view<const i8> row_view(row.data(), shape{1, 4, 2});
  reference::global_average_pool<rounding::tflite_reference, i8>(
      row_view, tensor_view<i8>(i8_means.data(), shape{1, 1, 2}), quant_params{0.5f, 0});
  CHECK(i8_means[0] == 2);
  CHECK(i8_means[1] == -2);
  reference::global_average_pool<rounding::single_round, i8>(row_view, tensor_view<i8>(i8_means.data(), shape{1, 1, 2}),
                                                             quant_params{0.5f, 0});
  CHECK(i8_means[0] == 1);
  CHECK(i8_means[1] == -1);

  // uint8 1x2, in (1.0, 3), out (2.0, 0): the zero point leaves the sum before scaling: 6 - 3 * 2 = 0 -> 0.
  //   [old: the raw sum 6 * 0.25 = 1.5 -> 2, plus zp_out - int(3 * 1 / 2) = -1: 1; the exact mean is 0]
  const std::array<u8, 2> pair{3, 3};
  u8 mean = 0;
  reference::global_average_pool<rounding::tflite_reference, u8>(
      tensor_view<const u8>(pair.data(), shape{1, 2, 1}), tensor_view<u8>(&mean, shape{1, 1, 1}), {1.0f, 3}, {2.0f, 0});
  CHECK(mean == 0);

  // uint8 3x3, (0.5, 128) both: multiplier (954437176, -2) (4/9, just below). Channel sums 900 and 904, less 9 * 128:
  //   -252: SRDHM = -111.99999995 -> -112, RDBPOT(-112, 2) = -28 -> 100                            [old: 100]
  //   -248: SRDHM = -110.2 -> -110, RDBPOT(-110, 2) = -27.5 -> -28 (half away from zero) -> 100
  //   [old: the raw sum 904 * 4/9 = 401.8 -> 402, RDBPOT(402, 2) = 100.5 -> 101]; the exact mean is 100.44.
  //   single rounding: floor(-252 * 4/9 / 4 + 0.5) = -28 and floor(-27.06) = -28: 100 and 100 as well.
  std::array<u8, 18> odd{};
  odd.fill(100);
  odd[17] = 104;
  std::array<u8, 2> means{};
  const tensor_view<const u8> odd_view(odd.data(), shape{3, 3, 2});
  reference::global_average_pool<rounding::tflite_reference, u8>(
      odd_view, tensor_view<u8>(means.data(), shape{1, 1, 2}), quant_params{0.5f, 128});
  CHECK(means == std::array<u8, 2>{100, 100});
  reference::global_average_pool<rounding::single_round, u8>(odd_view, tensor_view<u8>(means.data(), shape{1, 1, 2}),
                                                             quant_params{0.5f, 128});
  CHECK(means == std::array<u8, 2>{100, 100});
}

TEST_CASE("global average pool: forms both generations share") {
  // uint8 2x2, (0.5, 128) both: multiplier (2^30, -1). Sum 513 - 512 = 1 (exact mean 128.25).
  //   tflite_reference: SRDHM(1, 2^30) = 1 (0.5 away from zero), RDBPOT(1, 1) = 0.5 -> 1: 129 (double rounding).
  //   single_round: (2^30 + 2^31) >> 32 = 0: 128.
  const quant_params quant{0.5f, 128};
  const std::array<u8, 4> square{128, 128, 128, 129};
  u8 mean = 0;
  reference::global_average_pool<rounding::tflite_reference, u8>(tensor_view<const u8>(square.data(), shape{2, 2, 1}),
                                                                 tensor_view<u8>(&mean, shape{1, 1, 1}), quant);
  CHECK(mean == 129);
  reference::global_average_pool<rounding::single_round, u8>(tensor_view<const u8>(square.data(), shape{2, 2, 1}),
                                                             tensor_view<u8>(&mean, shape{1, 1, 1}), quant);
  CHECK(mean == 128);

  // uint8 3x1, in (1.0, 10), out (0.5, 20): (2^30, 2) folded by 3 -> (715827882, 1). Sum 34 - 30 = 4:
  // SRDHM(8, 715827882) = round(2.6667) = 3 -> 23 (exact 22.67).
  const std::array<u8, 3> column{10, 11, 13};
  reference::global_average_pool<rounding::tflite_reference, u8>(tensor_view<const u8>(column.data(), shape{3, 1, 1}),
                                                                 tensor_view<u8>(&mean, shape{1, 1, 1}), {1.0f, 10},
                                                                 {0.5f, 20});
  CHECK(mean == 23);

  // int8 3x3, (0.1, -5) both: multiplier (954437176, -2). Sums of q + 5: -5 and 14.
  //   -5: SRDHM = -2.2 -> -2, RDBPOT(-2, 2) = -0.5 -> -1 (remainder 2, threshold 2: no increment): -6.
  //   14: SRDHM = 6.2 -> 6, RDBPOT(6, 2) = 1.5 -> 2: -3.
  std::array<i8, 18> in{};
  in.fill(-5);
  in[0] = -10;
  in[1] = 9;
  std::array<i8, 2> means{};
  reference::global_average_pool<rounding::tflite_reference, i8>(tensor_view<const i8>(in.data(), shape{3, 3, 2}),
                                                                 tensor_view<i8>(means.data(), shape{1, 1, 2}),
                                                                 quant_params{0.1f, -5});
  CHECK(means == std::array<i8, 2>{-6, -3});

  // Requantizing, in (0.5, 0), out (0.25, 1): (2^30, 2) folded by 9 -> (954437176, -1). Sums 10 and -13:
  // SRDHM(10) = 4.4 -> 4, RDBPOT(4, 1) = 2 -> 3; SRDHM(-13) = -5.8 -> -6, RDBPOT(-6, 1) = -3 -> -2.
  std::array<i8, 18> requant{};
  requant[0] = 10;
  requant[1] = -13;
  reference::global_average_pool<rounding::tflite_reference, i8>(tensor_view<const i8>(requant.data(), shape{3, 3, 2}),
                                                                 tensor_view<i8>(means.data(), shape{1, 1, 2}),
                                                                 {0.5f, 0}, {0.25f, 1});
  CHECK(means == std::array<i8, 2>{3, -2});
}

TEST_CASE("global average pool float") {
  const std::array<float, 6> in{1, 2, 3, 4, 5, 7};
  float mean = 0.0f;
  reference::global_average_pool(tensor_view<const float>(in.data(), shape{2, 3, 1}),
                                 tensor_view<float>(&mean, shape{1, 1, 1}));
  CHECK(mean == 22.0f / 6.0f);
}

TEST_CASE_TEMPLATE("quantized pools agree with float math on random data", T, u8, i8) {
  std::mt19937 rng(7321);
  test::random_quant<T> random_quant(rng);
  const shape in_dims{7, 9, 5};
  const int batch = 2;
  const std::size_t count = in_dims.elements() * batch;

  for (int trial = 0; trial < 10; ++trial) {
    const quant_params quant = random_quant();
    const std::vector<T> in = random_values<T>(rng, count);
    const std::vector<float> real_in = dequantized(in, quant);
    const tensor_view<const T> in_view(in.data(), in_dims, batch);
    const tensor_view<const float> real_in_view(real_in.data(), in_dims, batch);

    // Windowed pools: 3x3, stride 2, SAME -> 4x5; relu6 on odd trials.
    const reference::pool_params params{.kernel = {3, 3},
                                        .stride = {2, 2},
                                        .pad = padding::same(),
                                        .act = trial % 2 == 0 ? activation::none : activation::relu6};
    const shape out_dims{4, 5, 5};
    const std::size_t out_count = out_dims.elements() * batch;
    std::vector<T> pooled(out_count);
    std::vector<float> real_pooled(out_count);
    reference::average_pool<T>(in_view, tensor_view<T>(pooled.data(), out_dims, batch), params, quant);
    reference::average_pool(real_in_view, tensor_view<float>(real_pooled.data(), out_dims, batch), params);
    int worst = 0;
    for (std::size_t i = 0; i < out_count; ++i)
      worst = std::max(worst, std::abs(pooled[i] - quantize_value<T>(real_pooled[i], quant)));
    CHECK(worst <= 1);

    reference::max_pool<T>(in_view, tensor_view<T>(pooled.data(), out_dims, batch), params, quant);
    reference::max_pool(real_in_view, tensor_view<float>(real_pooled.data(), out_dims, batch), params);
    worst = 0;
    for (std::size_t i = 0; i < out_count; ++i)
      worst = std::max(worst, std::abs(pooled[i] - quantize_value<T>(real_pooled[i], quant)));
    CHECK(worst == 0);  // max commutes with the monotonic dequantization

    // Global pool, same quantization and requantizing, both rounding modes.
    const quant_params out_quant = random_quant();
    std::vector<float> real_means(static_cast<std::size_t>(in_dims.channels * batch));
    reference::global_average_pool(real_in_view, tensor_view<float>(real_means.data(), shape{1, 1, 5}, batch));
    for (const quant_params target : {quant, out_quant}) {
      std::vector<T> means_double(real_means.size()), means_single(real_means.size());
      reference::global_average_pool<rounding::tflite_reference, T>(
          in_view, tensor_view<T>(means_double.data(), shape{1, 1, 5}, batch), quant, target);
      reference::global_average_pool<rounding::single_round, T>(
          in_view, tensor_view<T>(means_single.data(), shape{1, 1, 5}, batch), quant, target);
      worst = 0;
      for (std::size_t i = 0; i < real_means.size(); ++i) {
        const int expected = quantize_value<T>(real_means[i], target);
        worst = std::max({worst, std::abs(means_double[i] - expected), std::abs(means_single[i] - expected)});
      }
      CHECK(worst <= 1);
    }
  }
}

TEST_CASE("pool misuse is reported and writes nothing") {
  const test::recording_handler errors;
  std::array<u8, 9> in{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::array<u8, 9> out{};
  out.fill(42);
  const std::array<u8, 9> untouched = out;
  const tensor_view<const u8> in_view(in.data(), shape{3, 3, 1});

  SUBCASE("output shape that the config does not give") {
    // 3x3 window, stride 1, VALID on 3x3 gives 1x1, not 3x3.
    reference::average_pool<u8>(in_view, tensor_view<u8>(out.data(), shape{3, 3, 1}),
                                reference::pool_params{.kernel = {3, 3}}, any_quant);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::shape_mismatch);
  }
  SUBCASE("zero stride") {
    reference::max_pool<u8>(in_view, tensor_view<u8>(out.data(), shape{3, 3, 1}),
                            reference::pool_params{.kernel = {1, 1}, .stride = {0, 1}}, any_quant);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::invalid_argument);
  }
  SUBCASE("explicit padding that leaves a window outside the image") {
    // 1x1 window with one pixel of padding: the corner outputs see no input pixel.
    reference::average_pool<u8>(in_view, tensor_view<u8>(out.data(), shape{5, 5, 1}),
                                reference::pool_params{.kernel = {1, 1}, .pad = padding::explicit_pads(1, 1, 1, 1)},
                                any_quant);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::invalid_argument);
  }
  SUBCASE("fused activation with a zero scale") {
    reference::average_pool<u8>(in_view, tensor_view<u8>(out.data(), shape{3, 3, 1}),
                                reference::pool_params{.kernel = {1, 1}, .act = activation::relu}, {0.0f, 0});
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::invalid_argument);
  }
  SUBCASE("null input") {
    reference::max_pool<u8>(tensor_view<const u8>(nullptr, shape{3, 3, 1}), tensor_view<u8>(out.data(), shape{3, 3, 1}),
                            reference::pool_params{.kernel = {1, 1}}, any_quant);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::null_pointer);
  }
  SUBCASE("global pool output that is not 1x1") {
    reference::global_average_pool<rounding::tflite_reference, u8>(in_view, tensor_view<u8>(out.data(), shape{1, 3, 1}),
                                                                   any_quant);
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::shape_mismatch);
  }
  SUBCASE("global pool with a zero output scale") {
    reference::global_average_pool<rounding::tflite_reference, u8>(in_view, tensor_view<u8>(out.data(), shape{1, 1, 1}),
                                                                   any_quant, {0.0f, 0});
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::invalid_argument);
  }
  CHECK(out == untouched);
}
