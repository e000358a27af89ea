// Reference resize ops: hand-computed cases for every mode, the 2x closed forms on random data, TFLite's own test
// case, and agreement with an independent double-precision bilinear at non-integer ratios.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mosaiq/reference/resize.hpp"
#include "support.hpp"

namespace {

using mosaiq::i8;
using mosaiq::resize_mode;
using mosaiq::rounding;
using mosaiq::shape;
using mosaiq::tensor_view;
using mosaiq::u8;
namespace ref = mosaiq::reference;

/// An NHWC buffer whose pixels may be `extra` elements further apart than the channel count, so the ops are also
/// exercised on strided views. The gap is filled with a sentinel the ops must not overwrite.
template <class T>
struct image {
  shape dims;
  int batch = 1;
  std::ptrdiff_t pixel_stride = 0;
  std::vector<T> storage;

  image(shape d, int b = 1, int extra = 0, T fill = T{})
      : dims(d),
        batch(b),
        pixel_stride(d.channels + extra),
        storage(static_cast<std::size_t>(b) * d.pixels() * static_cast<std::size_t>(pixel_stride), fill) {}

  tensor_view<T> view() { return tensor_view<T>(storage.data(), dims, batch, pixel_stride); }
  tensor_view<const T> cview() const { return tensor_view<const T>(storage.data(), dims, batch, pixel_stride); }
  T& at(int n, int y, int x, int c) { return view()(n, y, x, c); }
  T at(int n, int y, int x, int c) const { return cview()(n, y, x, c); }

  /// Dense images from a list, batch-major then row-major.
  static image from(shape d, const std::vector<int>& values, int b = 1) {
    image result(d, b);
    REQUIRE(values.size() == result.storage.size());
    std::transform(values.begin(), values.end(), result.storage.begin(), [](int v) { return static_cast<T>(v); });
    return result;
  }
  std::vector<int> values() const { return {storage.begin(), storage.end()}; }
};

template <class T>
void fill_random(image<T>& img, std::mt19937& rng) {
  std::uniform_int_distribution<int> value(mosaiq::element_traits<T>::min, mosaiq::element_traits<T>::max);
  for (int n = 0; n < img.batch; ++n)
    for (int y = 0; y < img.dims.height; ++y)
      for (int x = 0; x < img.dims.width; ++x)
        for (int c = 0; c < img.dims.channels; ++c) img.at(n, y, x, c) = static_cast<T>(value(rng));
}

/// Whether the gap between strided pixels still holds the sentinel.
template <class T>
bool gaps_untouched(const image<T>& img, T sentinel) {
  for (std::size_t i = 0; i < img.storage.size(); ++i)
    if (static_cast<std::ptrdiff_t>(i % static_cast<std::size_t>(img.pixel_stride)) >= img.dims.channels &&
        img.storage[i] != sentinel)
      return false;
  return true;
}

template <class T>
std::vector<int> resized_bilinear(const std::vector<int>& input, shape in_dims, int out_h, int out_w, resize_mode mode,
                                  int batch = 1) {
  const auto in = image<T>::from(in_dims, input, batch);
  image<T> out({out_h, out_w, in_dims.channels}, batch);
  ref::resize_bilinear<T>(in.cview(), out.view(), mode);
  return out.values();
}

template <rounding Mode>
std::vector<int> resized_tflite_int8(const std::vector<int>& input, shape in_dims, int out_h, int out_w,
                                     resize_mode mode) {
  const auto in = image<i8>::from(in_dims, input);
  image<i8> out({out_h, out_w, in_dims.channels});
  ref::resize_bilinear_tflite_int8<Mode>(in.cview(), out.view(), mode);
  return out.values();
}

template <class T>
std::vector<int> resized_nearest(const std::vector<int>& input, shape in_dims, int out_h, int out_w, resize_mode mode,
                                 int batch = 1) {
  const auto in = image<T>::from(in_dims, input, batch);
  image<T> out({out_h, out_w, in_dims.channels}, batch);
  ref::resize_nearest<T>(in.cview(), out.view(), mode);
  return out.values();
}

std::vector<int> negated(std::vector<int> values) {
  for (int& v : values) v = -v;
  return values;
}

constexpr int floor_div(int num, int den) { return num / den - ((num % den != 0) && ((num < 0) != (den < 0))); }
/// num / den (den > 0) rounded half up, and half away from zero.
constexpr int round_half_up(int num, int den) { return floor_div(2 * num + den, 2 * den); }
constexpr int round_half_away(int num, int den) {
  return num >= 0 ? round_half_up(num, den) : -round_half_up(-num, den);
}
static_assert(round_half_up(-41, 2) == -20 && round_half_away(-41, 2) == -21 && round_half_up(41, 2) == 21);
static_assert(round_half_up(-5, 4) == -1 && round_half_away(-6, 4) == -2 && round_half_up(-6, 4) == -1);

}  // namespace

TEST_CASE("resize_bilinear legacy: hand-computed 2x2 -> 3x3 and 2x2 -> 4x4") {
  CHECK(resized_bilinear<u8>({0, 30, 60, 90}, {2, 2, 1}, 3, 3, resize_mode::legacy) ==
        std::vector<int>{0, 20, 30, 40, 60, 70, 60, 80, 90});

  // Sources 0, 0.5, 1, 1.5 (edge): ties 20.5 and 25.5 round up.
  const std::vector<int> legacy_4x4{0, 5, 10, 10, 10, 15, 21, 21, 20, 26, 31, 31, 20, 26, 31, 31};
  CHECK(resized_bilinear<u8>({0, 10, 20, 31}, {2, 2, 1}, 4, 4, resize_mode::legacy) == legacy_4x4);

  // int8: negative ties round half up (-20.5 -> -20, -25.5 -> -25, -15.25 -> -15).
  const std::vector<int> negative_4x4{0, -5, -10, -10, -10, -15, -20, -20, -20, -25, -31, -31, -20, -25, -31, -31};
  CHECK(resized_bilinear<i8>({0, -10, -20, -31}, {2, 2, 1}, 4, 4, resize_mode::legacy) == negative_4x4);
  CHECK(resized_tflite_int8<rounding::single_round>({0, -10, -20, -31}, {2, 2, 1}, 4, 4, resize_mode::legacy) ==
        negative_4x4);
  // TFLite's default int8 build rounds those ties away from zero.
  CHECK(resized_tflite_int8<rounding::tflite_reference>({0, -10, -20, -31}, {2, 2, 1}, 4, 4, resize_mode::legacy) ==
        std::vector<int>{0, -5, -10, -10, -10, -15, -21, -21, -20, -26, -31, -31, -20, -26, -31, -31});
  CHECK(resized_tflite_int8<rounding::tflite_reference>({0, 10, 20, 31}, {2, 2, 1}, 4, 4, resize_mode::legacy) ==
        legacy_4x4);
}

TEST_CASE("resize_bilinear half_pixel: hand-computed 2x2 -> 4x4 and 1x2 -> 1x4 ties") {
  // Weights 3/4 and 1/4, edges replicated.
  const std::vector<int> expected{0, 4, 12, 16, 8, 13, 23, 28, 24, 31, 45, 52, 32, 40, 56, 64};
  CHECK(resized_bilinear<u8>({0, 16, 32, 64}, {2, 2, 1}, 4, 4, resize_mode::half_pixel) == expected);
  CHECK(resized_bilinear<i8>(negated({0, 16, 32, 64}), {2, 2, 1}, 4, 4, resize_mode::half_pixel) == negated(expected));

  // 0.5 -> 1 and 1.5 -> 2; for int8, -0.5 -> 0 and -1.5 -> -1 (half up) but -1 and -2 with TFLite's default int8.
  CHECK(resized_bilinear<u8>({0, 2}, {1, 2, 1}, 1, 4, resize_mode::half_pixel) == std::vector<int>{0, 1, 2, 2});
  CHECK(resized_bilinear<i8>({0, -2}, {1, 2, 1}, 1, 4, resize_mode::half_pixel) == std::vector<int>{0, 0, -1, -2});
  CHECK(resized_tflite_int8<rounding::single_round>({0, -2}, {1, 2, 1}, 1, 4, resize_mode::half_pixel) ==
        std::vector<int>{0, 0, -1, -2});
  CHECK(resized_tflite_int8<rounding::tflite_reference>({0, -2}, {1, 2, 1}, 1, 4, resize_mode::half_pixel) ==
        std::vector<int>{0, -1, -2, -2});
}

TEST_CASE("resize_bilinear align_corners: hand-computed 3x3 -> 5x5") {
  // Sources 0, 0.5, 1, 1.5, 2 on both axes; corners are copied exactly.
  const std::vector<int> input{0, 10, 20, 30, 40, 50, 60, 70, 81};
  const std::vector<int> expected{0,  5,  10, 15, 20,  //
                                  15, 20, 25, 30, 35,  //
                                  30, 35, 40, 45, 50,  //
                                  45, 50, 55, 60, 66,  // (40+50+70+81)/4 = 60.25, (50+81)/2 = 65.5
                                  60, 65, 70, 76, 81};
  CHECK(resized_bilinear<u8>(input, {3, 3, 1}, 5, 5, resize_mode::align_corners) == expected);
  CHECK(resized_tflite_int8<rounding::single_round>(input, {3, 3, 1}, 5, 5, resize_mode::align_corners) == expected);

  // 2 -> 3: the middle output sits exactly between the two inputs.
  CHECK(resized_bilinear<u8>({10, 21}, {1, 2, 1}, 1, 3, resize_mode::align_corners) == std::vector<int>{10, 16, 21});
  CHECK(resized_bilinear<i8>({-10, -21}, {1, 2, 1}, 1, 3, resize_mode::align_corners) ==
        std::vector<int>{-10, -15, -21});
}

TEST_CASE("resize_bilinear: one-pixel inputs and outputs") {
  for (const auto mode : {resize_mode::legacy, resize_mode::half_pixel, resize_mode::align_corners}) {
    CAPTURE(static_cast<int>(mode));
    // 1x1 -> 3x4: every output is the input pixel, in every channel.
    CHECK(resized_bilinear<u8>({7, 200, 255}, {1, 1, 3}, 3, 4, mode) ==
          std::vector<int>{7, 200, 255, 7, 200, 255, 7, 200, 255, 7, 200, 255, 7, 200, 255, 7, 200, 255,
                           7, 200, 255, 7, 200, 255, 7, 200, 255, 7, 200, 255, 7, 200, 255, 7, 200, 255});
    CHECK(resized_bilinear<i8>({-128, 127}, {1, 1, 2}, 2, 1, mode) == std::vector<int>{-128, 127, -128, 127});
  }
  // 4x4 -> 1x1: legacy and align corners (out == 1 takes the legacy scale) sample (0, 0); half-pixel samples
  // (1.5, 1.5).
  std::vector<int> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[static_cast<std::size_t>(i)] = 10 * i;
  CHECK(resized_bilinear<u8>(ramp, {4, 4, 1}, 1, 1, resize_mode::legacy) == std::vector<int>{0});
  CHECK(resized_bilinear<u8>(ramp, {4, 4, 1}, 1, 1, resize_mode::align_corners) == std::vector<int>{0});
  CHECK(resized_bilinear<u8>(ramp, {4, 4, 1}, 1, 1, resize_mode::half_pixel) == std::vector<int>{75});
  // Downscale 4 -> 2 legacy: sources 0 and 2, so a plain subsample.
  CHECK(resized_bilinear<u8>(ramp, {4, 4, 1}, 2, 2, resize_mode::legacy) == std::vector<int>{0, 20, 80, 100});
}

TEST_CASE("resize_bilinear: TFLite TwoDimensionalResizeWithTwoBatchesUInt8_HalfPixelCenters") {
  const std::vector<int> input{3, 6, 9, 12, 4, 10, 12, 16};
  const auto result = resized_bilinear<u8>(input, {2, 2, 1}, 3, 3, resize_mode::half_pixel, 2);
  // The current TFLite reference (float, + 0.5f). The corner is 2.9999998 (negative extrapolation weight) + 0.5.
  CHECK(result == std::vector<int>{3, 5, 6, 6, 8, 9, 9, 11, 12, 4, 7, 10, 8, 11, 13, 12, 14, 16});
  // TFLite's test still expects the truncation-era values, with max_abs_error = 1.
  const std::vector<int> tflite_test_expectation{2, 4, 6, 6, 7, 9, 9, 10, 12, 4, 7, 10, 8, 10, 13, 12, 14, 16};
  for (std::size_t i = 0; i < result.size(); ++i) CHECK(std::abs(result[i] - tflite_test_expectation[i]) <= 1);
}

TEST_CASE("resize_bilinear u8 is TFLite's float32 arithmetic, not exact rounding") {
  // Exact ties (102.5, 33.5, 102.5) that float32 weights put just below .5, so TFLite (and this reference) round
  // down where exact arithmetic rounds up. Expected values from a literal transcription of TFLite's
  // reference_ops::ResizeBilinear, compiled without FMA.
  CHECK(resized_bilinear<u8>({165, 90}, {1, 2, 1}, 1, 13, resize_mode::align_corners) ==
        std::vector<int>{165, 159, 153, 146, 140, 134, 128, 121, 115, 109, 102, 96, 90});
  CHECK(resized_bilinear<u8>({148, 176, 176, 206, 11, 107}, {1, 6, 1}, 1, 13, resize_mode::half_pixel) ==
        std::vector<int>{148, 153, 166, 176, 176, 177, 191, 205, 124, 33, 44, 89, 107});
  CHECK(resized_bilinear<u8>({234, 68, 85, 30, 154, 70, 109}, {7, 1, 1}, 12, 1, resize_mode::legacy) ==
        std::vector<int>{234, 137, 71, 81, 67, 35, 92, 147, 98, 80, 102, 109});
}

namespace {

struct two_x_case {
  int height, width, channels;
};
constexpr two_x_case two_x_cases[] = {{1, 1, 1}, {1, 3, 2}, {3, 1, 3}, {5, 7, 16}, {7, 5, 17},
                                      {9, 3, 1}, {3, 9, 2}, {5, 5, 3}, {1, 7, 17}, {11, 13, 16}};

/// The two taps along one axis at 2x: legacy reads i and (odd outputs) i+1; half-pixel reads the nearest input i
/// and its neighbour on the side the output lies (i-1 for even outputs, i+1 for odd), both clamped.
struct two_x_taps {
  int near, far;
};
two_x_taps legacy_taps(int o, int in_size) {
  const int i = o / 2;
  return {i, o % 2 == 1 ? std::min(i + 1, in_size - 1) : i};
}
two_x_taps half_pixel_taps(int o, int in_size) {
  const int i = o / 2;
  return {i, std::clamp(o % 2 == 0 ? i - 1 : i + 1, 0, in_size - 1)};
}

/// The closed forms with round half up: a, (a+b+1)>>1, (a+b+c+d+2)>>2 and (9n+3h+3v+d+8)>>4.
template <class T>
int legacy_closed_form(const image<T>& in, int n, int oy, int ox, int c) {
  const auto ty = legacy_taps(oy, in.dims.height), tx = legacy_taps(ox, in.dims.width);
  const int a = in.at(n, ty.near, tx.near, c), b = in.at(n, ty.near, tx.far, c);
  const int v = in.at(n, ty.far, tx.near, c), d = in.at(n, ty.far, tx.far, c);
  const bool odd_y = oy % 2 == 1, odd_x = ox % 2 == 1;
  if (!odd_y && !odd_x) return a;
  if (!odd_y) return (a + b + 1) >> 1;
  if (!odd_x) return (a + v + 1) >> 1;
  return (a + b + v + d + 2) >> 2;
}

/// The exact half-pixel 2x value as a numerator over 16: 9n + 3h + 3v + d.
template <class T>
int half_pixel_numerator(const image<T>& in, int n, int oy, int ox, int c) {
  const auto ty = half_pixel_taps(oy, in.dims.height), tx = half_pixel_taps(ox, in.dims.width);
  return 9 * in.at(n, ty.near, tx.near, c) + 3 * in.at(n, ty.near, tx.far, c) + 3 * in.at(n, ty.far, tx.near, c) +
         in.at(n, ty.far, tx.far, c);
}

/// The exact legacy 2x value as a numerator over 4.
template <class T>
int legacy_numerator(const image<T>& in, int n, int oy, int ox, int c) {
  const auto ty = legacy_taps(oy, in.dims.height), tx = legacy_taps(ox, in.dims.width);
  return in.at(n, ty.near, tx.near, c) + in.at(n, ty.near, tx.far, c) + in.at(n, ty.far, tx.near, c) +
         in.at(n, ty.far, tx.far, c);
}

/// Runs `resize` on random 2x cases (two batches, strided views) and counts outputs that differ from `expected`.
template <class T, class Resize, class Expected>
void check_two_x(Resize resize, Expected expected, std::uint32_t seed) {
  std::mt19937 rng(seed);
  constexpr T sentinel = static_cast<T>(0x5A);
  for (const auto& tc : two_x_cases) {
    CAPTURE(tc.height);
    CAPTURE(tc.width);
    CAPTURE(tc.channels);
    image<T> in({tc.height, tc.width, tc.channels}, 2, 3);
    fill_random(in, rng);
    image<T> out({2 * tc.height, 2 * tc.width, tc.channels}, 2, 5, sentinel);
    resize(in.cview(), out.view());
    int mismatches = 0, first_got = 0, first_expected = 0;
    for (int n = 0; n < 2; ++n)
      for (int y = 0; y < out.dims.height; ++y)
        for (int x = 0; x < out.dims.width; ++x)
          for (int c = 0; c < tc.channels; ++c) {
            const int want = expected(in, n, y, x, c), got = out.at(n, y, x, c);
            if (want != got && mismatches++ == 0) first_got = got, first_expected = want;
          }
    CAPTURE(first_got);
    CAPTURE(first_expected);
    CHECK(mismatches == 0);
    CHECK(gaps_untouched(out, sentinel));
  }
}

}  // namespace

TEST_CASE_TEMPLATE("resize_bilinear 2x: closed forms hold on random data", T, u8, i8) {
  SUBCASE("legacy: a, (a+b+1)>>1, (a+b+c+d+2)>>2") {
    check_two_x<T>([](auto in, auto out) { ref::resize_bilinear<T>(in, out, resize_mode::legacy); },
                   legacy_closed_form<T>, 11);
  }
  SUBCASE("half_pixel: (9n+3h+3v+d+8)>>4") {
    check_two_x<T>(
        [](auto in, auto out) { ref::resize_bilinear<T>(in, out, resize_mode::half_pixel); },
        [](const image<T>& in, int n, int y, int x, int c) { return (half_pixel_numerator(in, n, y, x, c) + 8) >> 4; },
        12);
  }
}

TEST_CASE("resize_bilinear_tflite_int8 2x: single rounding is half up, the default is half away from zero") {
  const auto legacy_half_up = [](const image<i8>& in, int n, int y, int x, int c) {
    return legacy_closed_form(in, n, y, x, c);
  };
  // The legacy numerator over 4 covers all three cases: a = 4a/4 and (a+b)/2 = 2(a+b)/4 since far == near there.
  const auto legacy_away = [](const image<i8>& in, int n, int y, int x, int c) {
    return round_half_away(legacy_numerator(in, n, y, x, c), 4);
  };
  const auto half_pixel_up = [](const image<i8>& in, int n, int y, int x, int c) {
    return round_half_up(half_pixel_numerator(in, n, y, x, c), 16);
  };
  const auto half_pixel_away = [](const image<i8>& in, int n, int y, int x, int c) {
    return round_half_away(half_pixel_numerator(in, n, y, x, c), 16);
  };
  const auto run = [](resize_mode mode, auto rounding_tag) {
    return
        [mode](auto in, auto out) { ref::resize_bilinear_tflite_int8<decltype(rounding_tag)::value>(in, out, mode); };
  };
  using single = std::integral_constant<rounding, rounding::single_round>;
  using reference = std::integral_constant<rounding, rounding::tflite_reference>;
  check_two_x<i8>(run(resize_mode::legacy, single{}), legacy_half_up, 21);
  check_two_x<i8>(run(resize_mode::legacy, reference{}), legacy_away, 22);
  check_two_x<i8>(run(resize_mode::half_pixel, single{}), half_pixel_up, 23);
  check_two_x<i8>(run(resize_mode::half_pixel, reference{}), half_pixel_away, 24);
}

namespace {

/// Independent bilinear in double: the source coordinate is clamped to [0, in-1] first (XNNPACK's formulation,
/// equal in exact arithmetic to TFLite's unclamped weights with replicated edges).
struct double_tap {
  int lower, upper;
  double weight;
};
double_tap exact_tap(int o, int in_size, int out_size, resize_mode mode) {
  const bool corners = mode == resize_mode::align_corners && out_size > 1;
  const double scale = corners ? double(in_size - 1) / (out_size - 1) : double(in_size) / out_size;
  double position = mode == resize_mode::half_pixel ? (o + 0.5) * scale - 0.5 : o * scale;
  position = std::clamp(position, 0.0, double(in_size - 1));
  const int lower = static_cast<int>(position);
  return {lower, std::min(lower + 1, in_size - 1), position - lower};
}

template <class T>
double exact_bilinear(const image<T>& in, int n, int oy, int ox, int c, int out_h, int out_w, resize_mode mode) {
  const auto ty = exact_tap(oy, in.dims.height, out_h, mode), tx = exact_tap(ox, in.dims.width, out_w, mode);
  const double top = in.at(n, ty.lower, tx.lower, c) * (1 - tx.weight) + in.at(n, ty.lower, tx.upper, c) * tx.weight;
  const double bottom = in.at(n, ty.upper, tx.lower, c) * (1 - tx.weight) + in.at(n, ty.upper, tx.upper, c) * tx.weight;
  return top * (1 - ty.weight) + bottom * ty.weight;
}

}  // namespace

TEST_CASE_TEMPLATE("resize_bilinear at non-integer ratios: within 1 LSB of exact double bilinear", T, u8, i8) {
  struct ratio_case {
    int in_h, in_w, out_h, out_w, channels;
  };
  const ratio_case cases[] = {{80, 20, 257, 61, 2}, {20, 80, 240, 33, 3}, {257, 31, 80, 12, 1}, {7, 9, 10, 23, 17}};
  std::mt19937 rng(31);
  for (const auto& rc : cases) {
    image<T> in({rc.in_h, rc.in_w, rc.channels}, 1, 1);
    fill_random(in, rng);
    for (const auto mode : {resize_mode::legacy, resize_mode::half_pixel, resize_mode::align_corners}) {
      CAPTURE(rc.in_h);
      CAPTURE(rc.out_h);
      CAPTURE(static_cast<int>(mode));
      image<T> out({rc.out_h, rc.out_w, rc.channels});
      ref::resize_bilinear<T>(in.cview(), out.view(), mode);
      int worst = 0, off_by_one = 0, total = 0;
      for (int y = 0; y < rc.out_h; ++y)
        for (int x = 0; x < rc.out_w; ++x)
          for (int c = 0; c < rc.channels; ++c) {
            const double exact = exact_bilinear(in, 0, y, x, c, rc.out_h, rc.out_w, mode);
            const int difference = std::abs(out.at(0, y, x, c) - static_cast<int>(std::floor(exact + 0.5)));
            worst = std::max(worst, difference);
            off_by_one += difference != 0;
            ++total;
          }
      CHECK(worst <= 1);
      // Off-by-one only near ties, where float32 weights land on the other side: a small share of outputs.
      CHECK(off_by_one * 50 < total);
    }
  }
}

TEST_CASE("resize_bilinear float: TFLite's float reference on hand cases and against double") {
  const std::vector<float> input{0.0f, 1.0f, 2.0f, 4.0f};
  std::vector<float> output(16, -1.0f);
  ref::resize_bilinear(tensor_view<const float>(input.data(), {2, 2, 1}), tensor_view<float>(output.data(), {4, 4, 1}),
                       resize_mode::half_pixel);
  const std::vector<float> expected{0.0f, 0.25f,   0.75f,   1.0f,  0.5f, 0.8125f, 1.4375f, 1.75f,
                                    1.5f, 1.9375f, 2.8125f, 3.25f, 2.0f, 2.5f,    3.5f,    4.0f};
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(output[i] == doctest::Approx(expected[i]).epsilon(1e-6));

  // 13 -> 29 on random floats: within float rounding of the double computation.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  image<float> in({13, 13, 2});
  for (float& v : in.storage) v = value(rng);
  for (const auto mode : {resize_mode::legacy, resize_mode::half_pixel, resize_mode::align_corners}) {
    image<float> out({29, 29, 2});
    ref::resize_bilinear(in.cview(), out.view(), mode);
    double worst = 0;
    for (int y = 0; y < 29; ++y)
      for (int x = 0; x < 29; ++x)
        for (int c = 0; c < 2; ++c)
          worst = std::max(worst, std::abs(out.at(0, y, x, c) - exact_bilinear(in, 0, y, x, c, 29, 29, mode)));
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("resize_nearest: TFLite index rule on hand cases") {
  // 2 -> 3: legacy floor(o * 2/3) = 0, 0, 1; align corners round(o * 0.5) = 0, 1 (0.5 away from zero), 1;
  // half-pixel floor((o + 0.5) * 2/3) = 0, 1, 1.
  CHECK(resized_nearest<u8>({3, 6}, {1, 2, 1}, 1, 3, resize_mode::legacy) == std::vector<int>{3, 3, 6});
  CHECK(resized_nearest<u8>({3, 6}, {1, 2, 1}, 1, 3, resize_mode::align_corners) == std::vector<int>{3, 6, 6});
  CHECK(resized_nearest<u8>({3, 6}, {1, 2, 1}, 1, 3, resize_mode::half_pixel) == std::vector<int>{3, 6, 6});
  // 5 -> 2: legacy 0, 2; half-pixel floor(1.25) = 1, floor(3.75) = 3; align corners 0, 4.
  const std::vector<int> five{10, 11, 12, 13, 14};
  CHECK(resized_nearest<i8>(five, {1, 5, 1}, 1, 2, resize_mode::legacy) == std::vector<int>{10, 12});
  CHECK(resized_nearest<i8>(five, {1, 5, 1}, 1, 2, resize_mode::half_pixel) == std::vector<int>{11, 13});
  CHECK(resized_nearest<i8>(five, {1, 5, 1}, 1, 2, resize_mode::align_corners) == std::vector<int>{10, 14});
  // 3 -> 4 align corners: round(0, 2/3, 4/3, 2) = 0, 1, 1, 2. 2 -> 5 half-pixel: floor(0.2, 0.6, 1.0, 1.4, 1.8).
  CHECK(resized_nearest<u8>({1, 2, 3}, {1, 3, 1}, 1, 4, resize_mode::align_corners) == std::vector<int>{1, 2, 2, 3});
  CHECK(resized_nearest<u8>({1, 2}, {1, 2, 1}, 1, 5, resize_mode::half_pixel) == std::vector<int>{1, 1, 2, 2, 2});
  // 4 -> 1: legacy and align corners take pixel 0, half-pixel floor(0.5 * 4) = 2.
  CHECK(resized_nearest<u8>({1, 2, 3, 4}, {1, 4, 1}, 1, 1, resize_mode::align_corners) == std::vector<int>{1});
  CHECK(resized_nearest<u8>({1, 2, 3, 4}, {1, 4, 1}, 1, 1, resize_mode::half_pixel) == std::vector<int>{3});

  // 2D, two channels, two batches: 2x2 -> 3x3 legacy reads rows and columns 0, 0, 1.
  const std::vector<int> input{1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8};
  CHECK(resized_nearest<i8>(input, {2, 2, 2}, 3, 3, resize_mode::legacy, 2) ==
        std::vector<int>{1, -1, 1, -1, 2, -2, 1, -1, 1, -1, 2, -2, 3, -3, 3, -3, 4, -4,
                         5, -5, 5, -5, 6, -6, 5, -5, 5, -5, 6, -6, 7, -7, 7, -7, 8, -8});

  const std::vector<float> floats{0.5f, -1.5f, 2.25f};
  std::vector<float> out(6, 0.0f);
  ref::resize_nearest<float>(tensor_view<const float>(floats.data(), {1, 3, 1}),
                             tensor_view<float>(out.data(), {1, 6, 1}), resize_mode::half_pixel);
  CHECK(out == std::vector<float>{0.5f, 0.5f, -1.5f, -1.5f, 2.25f, 2.25f});
}

TEST_CASE("resize_nearest: integer upscale factors repeat each pixel k times in every mode but align_corners") {
  std::mt19937 rng(41);
  for (int factor = 2; factor <= 4; ++factor)
    for (const auto mode : {resize_mode::legacy, resize_mode::half_pixel}) {
      CAPTURE(factor);
      image<u8> in({5, 3, 3}, 2, 1);
      fill_random(in, rng);
      image<u8> out({5 * factor, 3 * factor, 3}, 2, 2, u8{0xA5});
      ref::resize_nearest<u8>(in.cview(), out.view(), mode);
      int mismatches = 0;
      for (int n = 0; n < 2; ++n)
        for (int y = 0; y < out.dims.height; ++y)
          for (int x = 0; x < out.dims.width; ++x)
            for (int c = 0; c < 3; ++c) mismatches += out.at(n, y, x, c) != in.at(n, y / factor, x / factor, c);
      CHECK(mismatches == 0);
      CHECK(gaps_untouched(out, u8{0xA5}));
    }
}

TEST_CASE("resize ops report mismatched views and leave the output untouched") {
  const mosaiq::test::recording_handler errors;
  const image<u8> in({2, 2, 3});
  image<u8> wrong_channels({4, 4, 2}, 1, 0, u8{9});
  ref::resize_bilinear<u8>(in.cview(), wrong_channels.view(), resize_mode::legacy);
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  ref::resize_nearest<u8>(in.cview(), wrong_channels.view(), resize_mode::legacy);
  CHECK(errors.calls() == 2);
  CHECK(std::all_of(wrong_channels.storage.begin(), wrong_channels.storage.end(), [](u8 v) { return v == 9; }));

  image<i8> out({4, 4, 3}, 2, 0, i8{9});
  const image<i8> in_i8({2, 2, 3});
  ref::resize_bilinear_tflite_int8(in_i8.cview(), out.view(), resize_mode::half_pixel);  // batch 1 vs 2
  CHECK(errors.calls() == 3);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);

  ref::resize_bilinear<i8>(tensor_view<const i8>(nullptr, {2, 2, 3}), out.view(), resize_mode::legacy);
  CHECK(errors.calls() == 4);
  CHECK(errors.last() == mosaiq::errc::null_pointer);

  ref::resize_bilinear<i8>(tensor_view<const i8>(nullptr, {0, 0, 3}, 2), out.view(), resize_mode::legacy);
  CHECK(errors.calls() == 5);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  CHECK(std::all_of(out.storage.begin(), out.storage.end(), [](i8 v) { return v == 9; }));
}

// ---------------------------------------------------------------------------------------------------------------
// Requantizing resize: input and output quantization differ (TFLite rejects such models; mosaiq requantizes the
// equal-quantization result with TFLite's QUANTIZE arithmetic).

TEST_CASE("requantization: hand-computed TFLite requantize cases") {
  using mosaiq::quant_params;
  // Scale ratio 2 (multiplier 2^30, shift 2 -> exact doubling), zero points 10 -> 0, clamped at 0 and 255.
  const ref::requantization<u8> doubling({0.5f, 10}, {0.25f, 0});
  REQUIRE(doubling.valid());
  CHECK(doubling(20) == 20);
  CHECK(doubling(10) == 0);
  CHECK(doubling(0) == 0);      // -20 clamped
  CHECK(doubling(255) == 255);  // 490 clamped
  // Ratio 1/2 (multiplier 2^30, shift 0): SaturatingRoundingDoublingHighMul rounds the tie 1.5 up to 2, and -1.5 up
  // to -1 (gemmlowp's nudge), -2.5 to -2.
  const ref::requantization<i8> halving({1.0f, 0}, {2.0f, 0});
  CHECK(halving(3) == 2);
  CHECK(halving(5) == 3);
  CHECK(halving(-3) == -1);
  CHECK(halving(-5) == -2);
  CHECK(halving(-128) == -64);
  // Only the zero point changes: a shift of every value, clamped.
  const ref::requantization<u8> shifted({0.1f, 0}, {0.1f, 25});
  CHECK(shifted(0) == 25);
  CHECK(shifted(230) == 255);
  CHECK(!shifted.identity());
  CHECK(ref::requantization<u8>({0.1f, 7}, {0.1f, 7}).identity());
}

// The multiplier's double rounding (rounded high product, then a rounding shift by r) allows half a step plus half of
// 2^-r; the multiplier itself is within 2^-31 relative.
TEST_CASE_TEMPLATE("requantization: within TFLite's double-rounding bound of the real value at random scales", T, u8,
                   i8) {
  std::mt19937 rng(61);
  std::uniform_real_distribution<float> log_scale(-7.0f, 1.0f);
  std::uniform_int_distribution<int> zero_point(mosaiq::element_traits<T>::min, mosaiq::element_traits<T>::max);
  for (int trial = 0; trial < 300; ++trial) {
    const mosaiq::quant_params input{std::exp2(log_scale(rng)), zero_point(rng)};
    const mosaiq::quant_params output{std::exp2(log_scale(rng)), zero_point(rng)};
    const ref::requantization<T> requant(input, output);
    REQUIRE(requant.valid());
    const int right_shift = std::max(0, -mosaiq::quantize_multiplier(double(input.scale) / output.scale).shift);
    const double bound = 0.5 + 0.5 / std::ldexp(1.0, right_shift) + 1e-6;
    for (int q = mosaiq::element_traits<T>::min; q <= mosaiq::element_traits<T>::max; ++q) {
      const double exact = output.zero_point + (q - input.zero_point) * (double(input.scale) / output.scale);
      const double clamped = std::clamp<double>(exact, mosaiq::element_traits<T>::min, mosaiq::element_traits<T>::max);
      const int got = requant(static_cast<T>(q));
      if (std::abs(got - clamped) > bound) {
        CAPTURE(q);
        CAPTURE(input.scale);
        CAPTURE(output.scale);
        CHECK(got == doctest::Approx(clamped));
      }
    }
  }
}

TEST_CASE("requantization: parameters that cannot be honoured are reported") {
  mosaiq::test::recording_handler errors;
  const mosaiq::quant_params fine{0.1f, 0};
  for (const mosaiq::quant_params bad :
       {mosaiq::quant_params{0.0f, 0}, mosaiq::quant_params{-0.1f, 0}, mosaiq::quant_params{std::nanf(""), 0},
        mosaiq::quant_params{std::numeric_limits<float>::infinity(), 0}}) {
    CHECK(!ref::requantization<u8>(bad, fine).valid());
    CHECK(!ref::requantization<u8>(fine, bad).valid());
  }
  CHECK(!ref::requantization<u8>({1.0f, 0}, {1e-12f, 0}).valid());  // ratio 1e12: shift 40 > 30
  CHECK(!ref::requantization<u8>({1e-12f, 0}, {1.0f, 0}).valid());  // ratio 1e-12: flushed to zero
  CHECK(ref::requantization<u8>({1.0f, 0}, {1e-9f, 0}).valid());    // ratio 1e9: shift 30, the largest
  CHECK(errors.calls() == 10);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  // An invalid requantization makes the resize refuse to run.
  std::vector<u8> in(4, 9), out(16, 1);
  ref::resize_bilinear<u8>(tensor_view<const u8>(in.data(), shape{2, 2, 1}),
                           tensor_view<u8>(out.data(), shape{4, 4, 1}), resize_mode::legacy,
                           ref::requantization<u8>({1.0f, 0}, {1e-12f, 0}));
  CHECK(errors.calls() == 12);
  CHECK(std::count(out.begin(), out.end(), u8{1}) == 16);
}

TEST_CASE("requantizing resize: hand-computed legacy 2x and nearest rows, equal parameters unchanged") {
  const std::vector<u8> row{10, 20};
  std::vector<u8> out(4, 1);
  const ref::requantization<u8> doubling({0.5f, 10}, {0.25f, 0});
  // Equal-quantization legacy 2x of [10, 20]: 10, (10+20+1)>>1 = 15, 20, 20 -> requantized 2 (q - 10): 0, 10, 20, 20.
  ref::resize_bilinear<u8>(tensor_view<const u8>(row.data(), shape{1, 2, 1}),
                           tensor_view<u8>(out.data(), shape{1, 4, 1}), resize_mode::legacy, doubling);
  CHECK(out == std::vector<u8>{0, 10, 20, 20});
  ref::resize_nearest<u8>(tensor_view<const u8>(row.data(), shape{1, 2, 1}),
                          tensor_view<u8>(out.data(), shape{1, 4, 1}), resize_mode::legacy, doubling);
  CHECK(out == std::vector<u8>{0, 0, 20, 20});
  ref::resize_bilinear<u8>(tensor_view<const u8>(row.data(), shape{1, 2, 1}),
                           tensor_view<u8>(out.data(), shape{1, 4, 1}), resize_mode::legacy,
                           ref::requantization<u8>({0.5f, 10}, {0.5f, 10}));
  CHECK(out == std::vector<u8>{10, 15, 20, 20});
}
