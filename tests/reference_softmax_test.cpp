// Reference softmax and logistic: hand cases, exhaustive two-class accuracy and structure, random depths against
// double precision, and the logistic table against an independent double computation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "mosaiq/reference/softmax.hpp"
#include "support.hpp"

namespace {

using mosaiq::i8;
using mosaiq::quant_params;
using mosaiq::shape;
using mosaiq::tensor_view;
using mosaiq::u8;
namespace ref = mosaiq::reference;

constexpr float tested_scales[] = {0.004f, 0.02f, 0.05f, 0.1f, 0.5f};

/// round(256 * p) to nearest, clamped to 255: the ideal 8-bit probability (before the i8 zero point).
int ideal_probability_q8(double p) { return std::min(255, static_cast<int>(std::lround(256.0 * p))); }

/// Double-precision softmax of one row of quantized values.
std::vector<double> exact_softmax(const std::vector<int>& row, double scaled_beta) {
  const int max = *std::max_element(row.begin(), row.end());
  std::vector<double> result(row.size());
  double sum = 0;
  for (std::size_t c = 0; c < row.size(); ++c) sum += result[c] = std::exp(scaled_beta * (row[c] - max));
  for (double& p : result) p /= sum;
  return result;
}

template <class T>
constexpr int zero_point = mosaiq::element_traits<T>::min;

template <class T>
std::vector<int> softmax_of(const std::vector<int>& values, shape dims, const ref::softmax_table& table,
                            int batch = 1) {
  std::vector<T> in(values.begin(), values.end()), out(values.size(), T{1});
  ref::softmax<T>(table, tensor_view<const T>(in.data(), dims, batch), tensor_view<T>(out.data(), dims, batch));
  return {out.begin(), out.end()};
}

}  // namespace

TEST_CASE("softmax_table: entries are lrint(2^23 * exp(beta * scale * (i - 255)))") {
  const ref::softmax_table table({0.1f, 17}, 1.0f);
  REQUIRE(table.valid());
  CHECK(table.entries()[255] == ref::softmax_table::one);
  CHECK(table.entries()[254] == 7590326u);  // 2^23 * e^-0.1000000015 = 7590326.39
  CHECK(table.entries()[245] == 3085996u);  // 2^23 * e^-1.0000000149 = 3085996.38
  CHECK(table.entries()[0] == 0u);          // 2^23 * e^-25.5 = 0.00007
  CHECK(std::is_sorted(table.entries().begin(), table.entries().end()));
  // beta multiplies the input scale.
  const ref::softmax_table doubled_beta({0.05f, 0}, 2.0f);
  CHECK(doubled_beta.entries()[245] == table.entries()[245]);
}

TEST_CASE_TEMPLATE("softmax: hand cases (uniform rows, one class, saturation)", T, u8, i8) {
  const ref::softmax_table table({0.1f, 0}, 1.0f);
  const int zp = zero_point<T>;
  // Uniform rows give round(256 / depth): 1 class -> 256 saturates to 255, 2 -> 128, 3 -> 85.3, 4 -> 64, 1000 -> 0.256.
  CHECK(softmax_of<T>({7}, {1, 1, 1}, table) == std::vector<int>{255 + zp});
  CHECK(softmax_of<T>({7, 7}, {1, 1, 2}, table) == std::vector<int>{128 + zp, 128 + zp});
  CHECK(softmax_of<T>({-3, -3, -3}, {1, 1, 3}, table) == std::vector<int>{85 + zp, 85 + zp, 85 + zp});
  CHECK(softmax_of<T>({9, 9, 9, 9}, {1, 1, 4}, table) == std::vector<int>{64 + zp, 64 + zp, 64 + zp, 64 + zp});
  const std::vector<int> thousand = softmax_of<T>(std::vector<int>(1000, 5), {1, 1, 1000}, table);
  CHECK(std::all_of(thousand.begin(), thousand.end(), [](int v) { return v == zero_point<T>; }));
  // A difference of 100 at scale 0.1 is e^-10: the maximum saturates to 255, the rest round to 0.
  CHECK(softmax_of<T>({100, 0, 0}, {1, 1, 3}, table) == std::vector<int>{255 + zp, zp, zp});
  // Two classes, d = 10 at scale 0.1: sigma(1) = 0.7310586 -> 187.15 and 68.85.
  CHECK(softmax_of<T>({20, 10}, {1, 1, 2}, table) == std::vector<int>{187 + zp, 69 + zp});
  // Each pixel of a 2x2 image and each batch is its own row.
  CHECK(softmax_of<T>({1, 1, 20, 10, 10, 20, 3, 3, 0, 10, 4, 4, 6, 6, 8, 8}, {2, 2, 2}, table, 2) ==
        std::vector<int>{128 + zp, 128 + zp, 187 + zp, 69 + zp, 69 + zp, 187 + zp, 128 + zp, 128 + zp, 69 + zp,
                         187 + zp, 128 + zp, 128 + zp, 128 + zp, 128 + zp, 128 + zp, 128 + zp});
}

TEST_CASE_TEMPLATE("softmax, two classes, all 65,536 pairs: within 1 LSB of exact, a function of x0 - x1", T, u8, i8) {
  for (const float scale : tested_scales) {
    CAPTURE(scale);
    const ref::softmax_table table({scale, 3}, 1.0f);
    // Pixel (x0, x1) of a 256x256x2 image holds the pair.
    std::vector<T> in(2 * 65536), out(2 * 65536);
    for (int a = 0; a < 256; ++a)
      for (int b = 0; b < 256; ++b) {
        in[static_cast<std::size_t>(2 * (256 * a + b))] = static_cast<T>(a + zero_point<T>);
        in[static_cast<std::size_t>(2 * (256 * a + b) + 1)] = static_cast<T>(b + zero_point<T>);
      }
    ref::softmax<T>(table, tensor_view<const T>(in.data(), {256, 256, 2}), tensor_view<T>(out.data(), {256, 256, 2}));

    // out0 as a function of d = x0 - x1, taken from the first pair with that difference.
    std::vector<int> by_difference(511, -1);
    int inaccurate = 0, not_a_function_of_d = 0;
    for (int a = 0; a < 256; ++a)
      for (int b = 0; b < 256; ++b) {
        const int out0 = out[static_cast<std::size_t>(2 * (256 * a + b))] - zero_point<T>;
        const int out1 = out[static_cast<std::size_t>(2 * (256 * a + b) + 1)] - zero_point<T>;
        const double p0 = 1.0 / (1.0 + std::exp(-double(scale) * (a - b)));
        inaccurate += std::abs(out0 - ideal_probability_q8(p0)) > 1;
        inaccurate += std::abs(out1 - ideal_probability_q8(1.0 - p0)) > 1;
        int& seen = by_difference[static_cast<std::size_t>(a - b + 255)];
        if (seen < 0) seen = out0;
        not_a_function_of_d += seen != out0;
      }
    CHECK(inaccurate == 0);
    CHECK(not_a_function_of_d == 0);
    // out1(d) == out0(-d): pair (a, b) has d = a - b; its out1 must equal out0 of the pair (b, a).
    int asymmetric = 0;
    for (int a = 0; a < 256; ++a)
      for (int b = 0; b < 256; ++b)
        asymmetric +=
            out[static_cast<std::size_t>(2 * (256 * a + b) + 1)] != out[static_cast<std::size_t>(2 * (256 * b + a))];
    CHECK(asymmetric == 0);
    CHECK(by_difference[255] == 128);  // d = 0
  }
}

TEST_CASE_TEMPLATE("softmax, random depths 3..1001: every output within 1 LSB of exact", T, u8, i8) {
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> depth_of(3, 1001), byte(0, 255);
  const int spreads[] = {1, 4, 16, 64, 255};
  const float betas[] = {1.0f, 0.5f, 2.0f};
  for (const float scale : tested_scales)
    for (const float beta : betas) {
      CAPTURE(scale);
      CAPTURE(beta);
      const ref::softmax_table table({scale, -7}, beta);
      int inaccurate = 0, worst_depth = 0;
      for (int row = 0; row < 12; ++row) {
        const int depth = depth_of(rng);
        // Values clustered near a random centre so that many classes are far from 0 and 255.
        const int spread = spreads[row % 5], centre = byte(rng);
        std::uniform_int_distribution<int> offset(-spread, spread);
        std::vector<int> values(static_cast<std::size_t>(depth));
        for (int& v : values) v = std::clamp(centre + offset(rng), 0, 255) + zero_point<T>;
        const auto result = softmax_of<T>(values, {1, 1, depth}, table);
        const auto exact = exact_softmax(values, double(beta) * double(scale));
        for (std::size_t c = 0; c < values.size(); ++c)
          if (std::abs(result[c] - zero_point<T> - ideal_probability_q8(exact[c])) > 1)
            ++inaccurate, worst_depth = depth;
      }
      CAPTURE(worst_depth);
      CHECK(inaccurate == 0);
    }
}

TEST_CASE("softmax: strided views, untouched gaps, and misuse is reported") {
  const ref::softmax_table table({0.1f, 0}, 1.0f);
  // Pixels 4 elements apart, 2 channels each: the gap must survive.
  std::vector<u8> in{20, 10, 99, 99, 0, 0, 99, 99}, out(8, 77);
  ref::softmax<u8>(table, tensor_view<const u8>(in.data(), {1, 2, 2}, 1, 4),
                   tensor_view<u8>(out.data(), {1, 2, 2}, 1, 4));
  CHECK(out == std::vector<u8>{187, 69, 77, 77, 128, 128, 77, 77});

  const mosaiq::test::recording_handler errors;
  const ref::softmax_table bad_scale({0.0f, 0}, 1.0f);
  CHECK(errors.calls() == 1);
  CHECK(!bad_scale.valid());
  const ref::softmax_table bad_beta({0.1f, 0}, -1.0f);
  CHECK(errors.calls() == 2);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  std::vector<u8> dense_out(4, 77);
  ref::softmax<u8>(bad_beta, tensor_view<const u8>(in.data(), {1, 2, 2}), tensor_view<u8>(dense_out.data(), {1, 2, 2}));
  CHECK(errors.calls() == 3);
  ref::softmax<u8>(table, tensor_view<const u8>(in.data(), {1, 2, 2}), tensor_view<u8>(dense_out.data(), {2, 1, 2}));
  CHECK(errors.calls() == 4);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  CHECK(dense_out == std::vector<u8>(4, 77));
}

TEST_CASE("softmax float: matches double precision and sums to one") {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> value(-20.0f, 20.0f);
  for (const float beta : {1.0f, 0.3f}) {
    std::vector<float> in(3 * 37), out(in.size());
    for (float& v : in) v = value(rng);
    ref::softmax(tensor_view<const float>(in.data(), {1, 3, 37}), tensor_view<float>(out.data(), {1, 3, 37}), beta);
    for (int pixel = 0; pixel < 3; ++pixel) {
      double max = -1e30, sum = 0, total = 0;
      for (int c = 0; c < 37; ++c) max = std::max<double>(max, in[static_cast<std::size_t>(37 * pixel + c)]);
      for (int c = 0; c < 37; ++c) sum += std::exp(beta * (in[static_cast<std::size_t>(37 * pixel + c)] - max));
      for (int c = 0; c < 37; ++c) {
        const std::size_t i = static_cast<std::size_t>(37 * pixel + c);
        CHECK(out[i] == doctest::Approx(std::exp(beta * (in[i] - max)) / sum).epsilon(1e-6));
        total += out[i];
      }
      CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
    }
  }
  std::vector<float> pair{2.0f, 0.0f}, result(2);
  ref::softmax(tensor_view<const float>(pair.data(), {1, 1, 2}), tensor_view<float>(result.data(), {1, 1, 2}), 1.0f);
  CHECK(result[0] == doctest::Approx(0.8807970779778823));
  CHECK(result[1] == doctest::Approx(0.11920292202211755));
}

namespace {
/// sigmoid(scale * (q - zp)) * 256 rounded half away from zero, plus the output zero point, clamped: in double.
template <class T>
int exact_logistic(int q, quant_params input) {
  const double p = 1.0 / (1.0 + std::exp(-double(input.scale) * (q - input.zero_point)));
  const double rounded = std::round(256.0 * p);
  return std::clamp(static_cast<int>(rounded) + zero_point<T>, mosaiq::element_traits<T>::min,
                    mosaiq::element_traits<T>::max);
}
}  // namespace

TEST_CASE_TEMPLATE("logistic_table: hand values, agreement with double, monotonic, symmetric", T, u8, i8) {
  constexpr int zp = zero_point<T>;
  // Input zero point in the middle of the range (128 for u8, 0 for i8), scale 0.1.
  const quant_params centred{0.1f, 128 + zp};
  const ref::logistic_table<T> table(centred);
  REQUIRE(table.valid());
  const auto at = [&](int q) { return static_cast<int>(table(static_cast<T>(q + zp))); };
  CHECK(at(128) == 128 + zp);  // sigmoid(0) = 0.5
  CHECK(at(138) == 187 + zp);  // sigmoid(1) * 256 = 187.15
  CHECK(at(118) == 69 + zp);   // sigmoid(-1) * 256 = 68.85
  CHECK(at(255) == 255 + zp);  // 256 * sigmoid(12.7) rounds to 256, saturates
  CHECK(at(0) == zp);          // 256 * sigmoid(-12.8) = 0.0007
  CHECK(at(148) == 225 + zp);  // sigmoid(2) * 256 = 225.48

  // TFLite computes in float32; against double it may differ only where 256 * sigmoid is within float error of a
  // tie, which none of these 5120 entries is (a margin of 2 for other libms' expf).
  int not_exact = 0;
  for (const float scale : {0.004f, 0.02f, 0.0625f, 0.1f, 0.5f})
    for (const int input_zp : {0, 37, 128, 255}) {
      CAPTURE(scale);
      CAPTURE(input_zp);
      const quant_params input{scale, input_zp + zp};
      const ref::logistic_table<T> lut(input);
      int off_by_more_than_one = 0, not_monotonic = 0;
      for (int q = mosaiq::element_traits<T>::min; q <= mosaiq::element_traits<T>::max; ++q) {
        const int value = lut(static_cast<T>(q)), exact = exact_logistic<T>(q, input);
        off_by_more_than_one += std::abs(value - exact) > 1;
        not_exact += value != exact;
        if (q > mosaiq::element_traits<T>::min) not_monotonic += value < lut(static_cast<T>(q - 1));
      }
      CHECK(off_by_more_than_one == 0);
      CHECK(not_monotonic == 0);
    }
  CHECK(not_exact <= 2);

  // TfLiteRound rounds ties away from zero: at this scale 256 * sigmoid(scale) is exactly 130.5 in float32 (with
  // glibc's expf), which must become 131, not the 130 of round-half-even.
  const float tie_scale = 0x1.400a1cp-5f;
  const ref::logistic_table<T> tie_table({tie_scale, zp});
  if ((1.0f / (1.0f + std::exp(-tie_scale))) * 256.0f == 130.5f)
    CHECK(static_cast<int>(tie_table(static_cast<T>(zp + 1))) == 131 + zp);
  else
    MESSAGE("this platform's expf does not produce the float32 tie 130.5; the tie-rounding check is skipped");

  // sigmoid(-x) = 1 - sigmoid(x): mirrored entries sum to 256 up to one tie / rounding step, below saturation.
  int asymmetric = 0;
  for (int k = 0; k <= 127; ++k) {
    const int high = at(128 + k) - zp, low = at(128 - k) - zp;
    if (high < 255) asymmetric += std::abs(high + low - 256) > 1;
  }
  CHECK(asymmetric == 0);
}

TEST_CASE("logistic: applies the table to every element of strided views; float version") {
  const ref::logistic_table<i8> table({0.1f, 0});
  std::vector<i8> in{0, 10, -10, 0, 127, -128, 20, 0}, out(8, i8{55});
  ref::logistic(table, tensor_view<const i8>(in.data(), {2, 1, 3}, 1, 4), tensor_view<i8>(out.data(), {2, 1, 3}, 1, 4));
  CHECK(out == std::vector<i8>{0, 59, -59, 55, 127, -128, 97, 55});  // sigmoid(2) * 256 = 225.48 -> 225 - 128

  std::vector<float> values{0.0f, 1.0f, -1.0f, 30.0f, -30.0f}, result(5);
  ref::logistic(tensor_view<const float>(values.data(), {1, 5, 1}), tensor_view<float>(result.data(), {1, 5, 1}));
  CHECK(result[0] == 0.5f);
  CHECK(result[1] == doctest::Approx(0.7310585786300049));
  CHECK(result[2] == doctest::Approx(0.2689414213699951));
  CHECK(result[3] == doctest::Approx(1.0));
  CHECK(std::abs(result[4] / 9.357622968839299e-14 - 1.0) < 1e-6);
}

// ---------------------------------------------------------------------------------------------------------------
// Log-softmax (TFLite's quantized reference kernel).

namespace {

namespace fixed = mosaiq::reference::detail::fixed_point;

/// TFLite's test quantization of a float: round(zero_point + x / scale) in float, clamped (SingleOpModel::Quantize).
template <class T>
T tflite_test_quantize(float x, quant_params p) {
  const float q = std::round(static_cast<float>(p.zero_point) + x / p.scale);
  return static_cast<T>(std::clamp(q, float(mosaiq::element_traits<T>::min), float(mosaiq::element_traits<T>::max)));
}

template <class T>
std::vector<int> log_softmax_of(const std::vector<T>& in, shape dims, const ref::log_softmax_params& params) {
  std::vector<T> out(in.size(), T{1});
  ref::log_softmax<T>(params, tensor_view<const T>(in.data(), dims), tensor_view<T>(out.data(), dims));
  return {out.begin(), out.end()};
}

/// Double-precision log-softmax of one row of quantized values at `scale`.
std::vector<double> exact_log_softmax(const std::vector<int>& row, double scale) {
  const int max = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (const int x : row) sum += std::exp(scale * (x - max));
  std::vector<double> result;
  for (const int x : row) result.push_back(scale * (x - max) - std::log(sum));
  return result;
}

}  // namespace

#if __has_include(<gemmlowp/fixedpoint/fixedpoint.h>)
#include <gemmlowp/fixedpoint/fixedpoint.h>

TEST_CASE("log-softmax fixed point: exp, 1/(1+x) and rescaling equal gemmlowp's fixedpoint header") {
  std::mt19937 rng(41);
  std::uniform_int_distribution<std::int32_t> any(std::numeric_limits<std::int32_t>::min(), 0);
  std::uniform_int_distribution<std::int32_t> unit(0, std::numeric_limits<std::int32_t>::max());
  using F5 = gemmlowp::FixedPoint<std::int32_t, 5>;
  using F0 = gemmlowp::FixedPoint<std::int32_t, 0>;
  using F12 = gemmlowp::FixedPoint<std::int32_t, 12>;
  std::vector<std::int32_t> negatives{0, -1, -2, std::numeric_limits<std::int32_t>::min(), -(1 << 24), -(1 << 26)};
  for (int i = 0; i < 200000; ++i) negatives.push_back(any(rng) >> (rng() % 31));
  for (const std::int32_t a : negatives) {
    const std::int32_t expected = gemmlowp::exp_on_negative_values(F5::FromRaw(a)).raw();
    if (fixed::exp_on_negative_values<5>(a) != expected) {
      CAPTURE(a);
      REQUIRE(fixed::exp_on_negative_values<5>(a) == expected);
    }
    const std::int32_t term = fixed::exp_on_negative_values<5>(a);
    REQUIRE(fixed::rescale(term, 0, 12) == gemmlowp::Rescale<12>(F0::FromRaw(term)).raw());
  }
  for (int i = 0; i < 200000; ++i) {
    const std::int32_t a = unit(rng) >> (rng() % 31);
    REQUIRE(fixed::one_over_one_plus_x(a) == gemmlowp::one_over_one_plus_x_for_x_in_0_1(F0::FromRaw(a)).raw());
    const std::int32_t sum = a | (1 << 19);
    REQUIRE(fixed::rescale(sum, 12, 5) == gemmlowp::Rescale<5>(F12::FromRaw(sum)).raw());
  }
}
#endif

TEST_CASE("log-softmax fixed point: log of sums of exponentials within 2^-20 of log in double") {
  // Sums are in Q12.19 between exp(0) = 2^19 and 4095 * 2^19; the log is in Q5.26.
  std::mt19937 rng(43);
  std::uniform_int_distribution<std::int32_t> sums(1 << 19, 4095 << 19);
  double worst = 0;
  for (int i = 0; i < 300000; ++i) {
    const std::int32_t sum = i < 4095 ? (i + 1) << 19 : sums(rng);
    const double got = fixed::log_of_at_least_one<5, 12>(sum) / double(1 << 26);
    worst = std::max(worst, std::abs(got - std::log(sum / double(1 << 19))));
  }
  CAPTURE(worst);
  CHECK(worst < 1.0 / (1 << 20));
  CHECK(fixed::log_of_at_least_one<5, 12>(1 << 19) == 0);
}

TEST_CASE("log_softmax_params: TFLite's Prepare for beta 1") {
  // Input scale 20/255: 20/255 * 2^26 = 5263360.25... -> multiplier 0.627... * 2^31, left shift 23; the radius
  // 31 * 2^26 / 2^23 = 248 input steps.
  const ref::log_softmax_params params({20.0f / 255.0f, 128});
  REQUIRE(params.valid());
  CHECK(params.diff_min() == -248);
  CHECK(params.exp_term(0) == (1 << 19));
  CHECK(params.exp_term(-249) == 0);
  CHECK(params.scaled_diff(-1) == static_cast<std::int32_t>(std::lround(-20.0 / 255.0 * (1 << 26))));
  CHECK(ref::log_softmax_output_params<u8> == quant_params{0.0625f, 255});
  CHECK(ref::log_softmax_output_params<i8> == quant_params{0.0625f, 127});
  mosaiq::test::recording_handler errors;
  for (const float scale : {0.0f, -1.0f, 1e-9f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
    CAPTURE(scale);
    CHECK(!ref::log_softmax_params({scale, 0}).valid());
  }
  CHECK(errors.calls() == 5);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
}

TEST_CASE("log-softmax: TFLite's kernel test cases (inputs in [-10, 10], 2 rows of 4)") {
  const std::vector<float> values{0, -6, 2, 4, 3, -2, 10, 1};
  // TFLite's test quantization of [-10, 10]: scale 20/255 and zero point round(qmin + 10 / scale) in float, which is
  // 127 (u8) and -1 (i8) because float(20/255) is just above 20/255.
  const float scale = 20.0f / 255.0f;
  const auto zero_point = [&](int qmin) { return static_cast<std::int32_t>(std::round(float(qmin) + 10.0f / scale)); };
  REQUIRE(zero_point(0) == 127);
  SUBCASE("u8") {
    const quant_params input{scale, zero_point(0)};
    std::vector<u8> in;
    for (const float v : values) in.push_back(tflite_test_quantize<u8>(v, input));
    CHECK(log_softmax_of<u8>(in, shape{1, 2, 4}, ref::log_softmax_params(input)) ==
          std::vector<int>{189, 93, 221, 253, 142, 63, 255, 111});
  }
  SUBCASE("i8") {
    const quant_params input{scale, zero_point(-128)};
    std::vector<i8> in;
    for (const float v : values) in.push_back(tflite_test_quantize<i8>(v, input));
    CHECK(log_softmax_of<i8>(in, shape{1, 2, 4}, ref::log_softmax_params(input)) ==
          std::vector<int>{61, -36, 93, 125, 15, -65, 127, -16});
  }
  SUBCASE("i8, one channel: log(1) = 0 at the zero point") {
    const std::vector<i8> in{0, -128, 127};
    CHECK(log_softmax_of<i8>(in, shape{1, 3, 1}, ref::log_softmax_params({2.0f / 255.0f, 0})) ==
          std::vector<int>{127, 127, 127});
  }
}

TEST_CASE_TEMPLATE("log-softmax: hand cases (uniform rows, far-below-max elements, large scales)", T, u8, i8) {
  constexpr int top = mosaiq::element_traits<T>::max, bottom = mosaiq::element_traits<T>::min;
  // Four equal values: log(1/4) = -1.386 = -22.18 steps of 1/16 -> top - 22.
  CHECK(log_softmax_of<T>(std::vector<T>(4, T{5}), shape{1, 1, 4}, ref::log_softmax_params({0.1f, 0})) ==
        std::vector<int>(4, top - 22));
  // An element 200 steps of 0.1 below the max: log-softmax -20 is below -255/16, the lowest output.
  const std::vector<T> far{static_cast<T>(bottom), static_cast<T>(bottom + 200)};
  CHECK(log_softmax_of<T>(far, shape{1, 1, 2}, ref::log_softmax_params({0.1f, 0})) == std::vector<int>{bottom, top});
  // Input scale 40 (multiplier capped at 2^31 - 1): any difference is below the range.
  const std::vector<T> steep{static_cast<T>(7), static_cast<T>(8), static_cast<T>(8)};
  CHECK(log_softmax_of<T>(steep, shape{1, 1, 3}, ref::log_softmax_params({40.0f, 0})) ==
        std::vector<int>{bottom, top - 11, top - 11});  // log(1/2) = -0.693 = -11.09 steps
}

TEST_CASE_TEMPLATE("log-softmax, random depths 1..4095: within TFLite's tolerance (16/256) of double", T, u8, i8) {
  std::mt19937 rng(47);
  double worst = 0;
  for (const float scale : {0.004f, 0.02f, 0.05f, 20.0f / 255.0f, 0.1f, 0.5f, 3.0f}) {
    const ref::log_softmax_params params({scale, 0});
    REQUIRE(params.valid());
    for (const int depth : {1, 2, 3, 7, 16, 33, 100, 1001, 4095}) {
      for (const int spread : {255, 40, 3}) {
        std::uniform_int_distribution<int> value(mosaiq::element_traits<T>::max - spread,
                                                 mosaiq::element_traits<T>::max);
        std::vector<T> in(static_cast<std::size_t>(depth));
        std::vector<int> row;
        for (T& v : in) row.push_back(v = static_cast<T>(value(rng)));
        const std::vector<int> out = log_softmax_of<T>(in, shape{1, 1, depth}, params);
        const std::vector<double> exact = exact_log_softmax(row, scale);
        for (std::size_t c = 0; c < in.size(); ++c) {
          const double got = 0.0625 * (out[c] - mosaiq::element_traits<T>::max);
          const double error = std::abs(got - std::max(exact[c], -255.0 / 16));
          worst = std::max(worst, error);
          if (error > 0.0625) {
            CAPTURE(scale);
            CAPTURE(depth);
            CAPTURE(exact[c]);
            CHECK(got == doctest::Approx(exact[c]).epsilon(0.0625));
          }
        }
      }
    }
  }
  CAPTURE(worst);
  CHECK(worst <= 0.0625);
}

TEST_CASE("log-softmax: strided views, untouched gaps, misuse, and the float version") {
  const ref::log_softmax_params params({0.1f, 0});
  std::vector<u8> in{10, 20, 0, 0, 30, 40, 0, 0}, out(8, 9);
  // Two pixels of two channels, pixel stride 4.
  ref::log_softmax<u8>(params, tensor_view<const u8>(in.data(), shape{1, 2, 2}, 1, 4),
                       tensor_view<u8>(out.data(), shape{1, 2, 2}, 1, 4));
  const std::vector<int> dense = log_softmax_of<u8>({10, 20, 30, 40}, shape{1, 2, 2}, params);
  CHECK(std::vector<int>{out[0], out[1], out[4], out[5]} == dense);
  CHECK(std::vector<int>{out[2], out[3], out[6], out[7]} == std::vector<int>{9, 9, 9, 9});

  mosaiq::test::recording_handler errors;
  std::vector<u8> many(4096, 1), many_out(4096, 2);
  ref::log_softmax<u8>(params, tensor_view<const u8>(many.data(), shape{1, 1, 4096}),
                       tensor_view<u8>(many_out.data(), shape{1, 1, 4096}));
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  CHECK(std::count(many_out.begin(), many_out.end(), u8{2}) == 4096);
  ref::log_softmax<u8>(params, tensor_view<const u8>(in.data(), shape{1, 2, 2}),
                       tensor_view<u8>(out.data(), shape{1, 1, 4}));
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);

  const std::vector<float> values{0, -6, 2, 4, 3, -2, 10, 1};
  std::vector<float> result(8);
  ref::log_softmax(tensor_view<const float>(values.data(), shape{1, 2, 4}),
                   tensor_view<float>(result.data(), shape{1, 2, 4}));
  const std::vector<double> tflite{-4.14297, -10.14297, -2.14297, -.142971, -7.00104, -12.00104, -.00104087, -9.00104};
  for (std::size_t i = 0; i < 8; ++i) CHECK(result[i] == doctest::Approx(tflite[i]).epsilon(1e-5));
}
