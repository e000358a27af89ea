// ops/resize.hpp against reference/resize.hpp, bit for bit: every mode, u8 and i8, channel counts around every
// vector width, odd sizes down to 1, batch 2, unaligned and strided views, with canaries around every output; the
// same grids with input and output quantization differing (requantizing resize).
#include "mosaiq/ops/resize.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "mosaiq/reference/resize.hpp"
#include "placed_tensor.hpp"
#include "support.hpp"

namespace {

using mosaiq::i8;
using mosaiq::resize_config;
using mosaiq::resize_mode;
using mosaiq::shape;
using mosaiq::tensor_view;
using mosaiq::u8;
namespace ref = mosaiq::reference;

using mosaiq::test::placed_tensor;

using mosaiq::test::layout;
constexpr layout layouts[] = {{1, 0, 0}, {2, 0, 1}, {1, 3, 1}, {2, 5, 0}};
constexpr int channel_counts[] = {1, 2, 3, 4, 8, 15, 16, 17, 64, 100};
constexpr shape sizes[] = {{1, 1, 0}, {1, 5, 0}, {3, 1, 0}, {5, 7, 0}, {2, 33, 0}, {4, 70, 0}};

/// Runs `kernel` and the reference on the same random input; checks equality and canaries.
template <class Kernel, class T, class Reference>
void check_against_reference(Reference reference, int max_channels = 1000, const Kernel& kernel = Kernel{}) {
  std::mt19937 rng(1234);
  for (const layout l : layouts) {
    for (const int channels : channel_counts) {
      if (channels > max_channels) continue;
      for (shape size : sizes) {
        if (channels >= 64 && size.width > 33) continue;  // keeps the reference's float loops short
        size.channels = channels;
        const shape out_dims = Kernel::output_shape(size);
        placed_tensor<T> in(size, l.batch, l.extra, l.misalign);
        placed_tensor<T> out(out_dims, l.batch, l.extra, l.misalign + 1);
        placed_tensor<T> expected(out_dims, l.batch, 0, 0);
        in.fill_random(rng);
        reference(tensor_view<const T>(in.view()), expected.view());
        kernel(in.view(), out.view());
        CAPTURE(channels);
        CAPTURE(size.height);
        CAPTURE(size.width);
        CAPTURE(l.batch);
        CAPTURE(l.extra);
        CAPTURE(l.misalign);
        CHECK(out.values() == expected.values());
        CHECK(out.first_damaged_canary() == -1);
        CHECK(in.first_damaged_canary() == -1);
      }
    }
  }
}

template <resize_mode Mode, int Scale, class T>
void check_bilinear() {
  using kernel = mosaiq::resize_bilinear<resize_config{.scale = Scale, .mode = Mode}, T>;
  check_against_reference<kernel, T>(
      [](tensor_view<const T> in, tensor_view<T> out) { ref::resize_bilinear<T>(in, out, Mode); },
      kernel::specialized ? 1000 : 17);
}

template <resize_mode Mode, int Scale, class T>
void check_nearest() {
  using kernel = mosaiq::resize_nearest<resize_config{.scale = Scale, .mode = Mode}, T>;
  check_against_reference<kernel, T>(
      [](tensor_view<const T> in, tensor_view<T> out) { ref::resize_nearest<T>(in, out, Mode); });
}

}  // namespace

TEST_CASE("i8 through x ^ 0x80: half-up closed forms commute with the +128 shift") {
  // Every closed form the 2x kernels use, on sums that cover every residue: floor((s + k*128*w + h) / w) ==
  // floor((s + h) / w) + 128 where the weights sum to w.
  for (int sum = -4 * 128; sum <= 4 * 127; ++sum) {
    CHECK(((sum + 256 + 1) >> 1) == ((sum + 1) >> 1) + 128);  // (a+b+1)>>1
    CHECK(((sum + 512 + 2) >> 2) == ((sum + 2) >> 2) + 128);  // (a+b+c+d+2)>>2
  }
  for (int sum = -16 * 128; sum <= 16 * 127; ++sum) CHECK(((sum + 16 * 128 + 8) >> 4) == ((sum + 8) >> 4) + 128);
}

TEST_CASE("resize_bilinear 2x equals the reference: u8") {
  check_bilinear<resize_mode::half_pixel, 2, u8>();
  check_bilinear<resize_mode::legacy, 2, u8>();
  check_bilinear<resize_mode::align_corners, 2, u8>();
}

TEST_CASE("resize_bilinear 2x equals the reference: i8") {
  check_bilinear<resize_mode::half_pixel, 2, i8>();
  check_bilinear<resize_mode::legacy, 2, i8>();
  check_bilinear<resize_mode::align_corners, 2, i8>();
}

TEST_CASE("resize_bilinear, scale 1, 3 and 4 through the config's scale, equals the reference") {
  check_bilinear<resize_mode::half_pixel, 3, u8>();
  check_bilinear<resize_mode::legacy, 3, i8>();
  check_bilinear<resize_mode::align_corners, 4, u8>();
  check_bilinear<resize_mode::half_pixel, 1, u8>();
  CHECK(mosaiq::resize_bilinear<resize_config{.scale = 2, .mode = resize_mode::legacy}, u8>::specialized);
  CHECK(mosaiq::resize_bilinear<resize_config{.scale = 3}, u8>::specialized ==
        (mosaiq::simd::native_isa != mosaiq::simd::isa::scalar));
}

namespace {

/// One input size and the output size it is resized to.
struct ratio_case {
  int in_height, in_width, out_height, out_width;
};

/// Integer ratios 3, 4, 8; non-integer up and down; one axis only; 1x1 outputs and 1xN inputs; exact 2x (the integer
/// kernels, or the float kernel for align_corners); rows long enough to be cut into several column chunks.
constexpr ratio_case ratio_cases[] = {
    {5, 7, 15, 21}, {4, 3, 16, 12}, {3, 2, 24, 16}, {6, 4, 9, 6}, {7, 7, 16, 16}, {3, 10, 7, 23}, {16, 16, 7, 7},
    {10, 10, 3, 3}, {5, 6, 1, 1},   {1, 9, 4, 20},  {9, 1, 2, 5}, {4, 5, 8, 10},  {3, 4, 3, 9},   {2, 1, 2, 1},
};
constexpr int ratio_channels[] = {1, 2, 3, 4, 8, 15, 16, 17, 64, 100};

/// The op with the output size taken from the view: one instantiation serves every ratio of the grid.
template <resize_mode Mode, class T>
using any_size = mosaiq::resize_bilinear<
    resize_config{.mode = Mode, .out_height = resize_config::from_output, .out_width = resize_config::from_output}, T>;

template <resize_mode Mode, class T>
int check_ratio(std::mt19937& rng, const ratio_case& r, int channels, const layout& l) {
  const shape in_dims{r.in_height, r.in_width, channels}, out_dims{r.out_height, r.out_width, channels};
  placed_tensor<T> in(in_dims, l.batch, l.extra, l.misalign);
  placed_tensor<T> out(out_dims, l.batch, l.extra + 1, l.misalign + 1);
  placed_tensor<T> expected(out_dims, l.batch, 0, 0);
  in.fill_random(rng);
  ref::resize_bilinear<T>(tensor_view<const T>(in.view()), expected.view(), Mode);
  any_size<Mode, T>{}(in.view(), out.view());
  const bool equal = out.values() == expected.values();
  const bool intact = out.first_damaged_canary() == -1 && in.first_damaged_canary() == -1;
  if (!equal || !intact) {
    CAPTURE(channels);
    CAPTURE(r.in_height);
    CAPTURE(r.in_width);
    CAPTURE(r.out_height);
    CAPTURE(r.out_width);
    CAPTURE(l.batch);
    CAPTURE(l.extra);
    CAPTURE(l.misalign);
    CHECK(equal);
    CHECK(intact);
  }
  return equal && intact ? 1 : 0;
}

template <resize_mode Mode, class T>
void check_ratio_grid() {
  std::mt19937 rng(99);
  int passed = 0, runs = 0;
  for (const layout l : layouts)
    for (const int channels : ratio_channels)
      for (const ratio_case& r : ratio_cases) {
        passed += check_ratio<Mode, T>(rng, r, channels, l);
        ++runs;
      }
  CHECK(passed == runs);
  // Long rows: several column chunks (flat path: 512 elements, channel path: 128 columns or 1024 floats), channel
  // blocks of 512 with a tail, and downscales whose output pixels read far-apart columns.
  constexpr ratio_case long_rows[] = {{2, 300, 3, 701}, {1, 2000, 2, 100}, {1, 5000, 1, 3}, {3, 40, 2, 333}};
  for (const ratio_case& r : long_rows)
    for (const int channels : {1, 3, 7, 17, 600}) CHECK(check_ratio<Mode, T>(rng, r, channels, layouts[2]) == 1);
}

}  // namespace

TEST_CASE("resize_bilinear at any ratio equals the reference bit for bit: u8") {
  check_ratio_grid<resize_mode::half_pixel, u8>();
  check_ratio_grid<resize_mode::legacy, u8>();
  check_ratio_grid<resize_mode::align_corners, u8>();
}

TEST_CASE("resize_bilinear at any ratio equals the reference bit for bit: i8") {
  check_ratio_grid<resize_mode::half_pixel, i8>();
  check_ratio_grid<resize_mode::legacy, i8>();
  check_ratio_grid<resize_mode::align_corners, i8>();
}

TEST_CASE("resize_bilinear with a fixed output size: output_shape, run and misuse") {
  using up = mosaiq::resize_bilinear<resize_config{.mode = resize_mode::legacy, .out_height = 16, .out_width = 23}, u8>;
  static_assert(up::output_shape(shape{7, 10, 5}) == shape{16, 23, 5});
  static_assert(mosaiq::resize_nearest<resize_config{.out_height = 3, .out_width = 4}, u8>::output_shape(
                    shape{9, 9, 2}) == shape{3, 4, 2});
  std::mt19937 rng(5);
  placed_tensor<u8> in(shape{7, 10, 5}, 1, 2, 1), out(up::output_shape(shape{7, 10, 5}), 1, 0, 3),
      expected(up::output_shape(shape{7, 10, 5}), 1, 0, 0);
  in.fill_random(rng);
  ref::resize_bilinear<u8>(tensor_view<const u8>(in.view()), expected.view(), resize_mode::legacy);
  up{}(in.view(), out.view());
  CHECK(out.values() == expected.values());
  CHECK(out.first_damaged_canary() == -1);

  mosaiq::test::recording_handler errors;
  std::vector<u8> wrong(16 * 22 * 5, 1);
  up{}(tensor_view<const u8>(in.view()), tensor_view<u8>(wrong.data(), shape{16, 22, 5}));
  CHECK(errors.calls() == 1);
  CHECK(std::count(wrong.begin(), wrong.end(), u8{1}) == static_cast<long>(wrong.size()));
  // from_output: any size, but the channels must match and a non-empty output needs a non-empty input.
  any_size<resize_mode::half_pixel, u8>{}(tensor_view<const u8>(in.view()),
                                          tensor_view<u8>(wrong.data(), shape{16, 22, 4}));
  CHECK(errors.calls() == 2);
  std::vector<u8> none;
  any_size<resize_mode::half_pixel, u8>{}(tensor_view<const u8>(none.data(), shape{0, 3, 5}),
                                          tensor_view<u8>(wrong.data(), shape{16, 22, 5}));
  CHECK(errors.calls() == 3);
  CHECK(std::count(wrong.begin(), wrong.end(), u8{1}) == static_cast<long>(wrong.size()));
}

TEST_CASE("resize_nearest with a fixed output size equals the reference") {
  using down =
      mosaiq::resize_nearest<resize_config{.mode = resize_mode::half_pixel, .out_height = 5, .out_width = 3}, i8>;
  std::mt19937 rng(6);
  for (const shape in_dims : {shape{7, 10, 3}, shape{5, 3, 3}, shape{2, 1, 3}}) {
    placed_tensor<i8> in(in_dims, 2, 1, 1), out(down::output_shape(in_dims), 2, 2, 0),
        expected(down::output_shape(in_dims), 2, 0, 0);
    in.fill_random(rng);
    ref::resize_nearest<i8>(tensor_view<const i8>(in.view()), expected.view(), resize_mode::half_pixel);
    down{}(in.view(), out.view());
    CHECK(out.values() == expected.values());
    CHECK(out.first_damaged_canary() == -1);
  }
}

TEST_CASE("resize_nearest equals the reference") {
  check_nearest<resize_mode::half_pixel, 2, u8>();
  check_nearest<resize_mode::legacy, 2, i8>();
  check_nearest<resize_mode::legacy, 3, u8>();
  check_nearest<resize_mode::half_pixel, 4, i8>();
  check_nearest<resize_mode::align_corners, 2, u8>();
}

TEST_CASE("resize_nearest: integer source index o / scale matches the float32 formula on long axes") {
  int mismatches = 0;
  for (const int scale : {2, 3, 4, 5, 7})
    for (const resize_mode mode : {resize_mode::legacy, resize_mode::half_pixel})
      for (int in = 1; in <= 1200; in += 13)
        for (int o = 0; o < in * scale; ++o)
          mismatches += ref::nearest_source_index(o, in, in * scale, mode) != o / scale;
  CHECK(mismatches == 0);
}

TEST_CASE("resize: misuse is reported and leaves the output untouched") {
  mosaiq::test::recording_handler errors;
  std::vector<u8> in(4 * 4 * 2, 7), out(8 * 8 * 2, 1);
  using kernel = mosaiq::resize_bilinear<resize_config{}, u8>;
  kernel{}(tensor_view<const u8>(in.data(), shape{4, 4, 2}), tensor_view<u8>(out.data(), shape{8, 7, 2}));
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  kernel{}(tensor_view<const u8>(nullptr, shape{4, 4, 2}), tensor_view<u8>(out.data(), shape{8, 8, 2}));
  CHECK(errors.calls() == 2);
  CHECK(std::count(out.begin(), out.end(), u8{1}) == static_cast<long>(out.size()));
  static_assert(kernel::output_shape(shape{80, 80, 16}) == shape{160, 160, 16});
}

// ---------------------------------------------------------------------------------------------------------------
// Requantizing resize: input and output quantization differ.

namespace {

using mosaiq::quant_params;

/// Input -> output quantizations: finer, coarser, shifted zero point only, a ratio near the top of the range.
struct requant_case {
  quant_params input, output;
};
constexpr requant_case requant_cases[] = {
    {{0.5f, 10}, {0.125f, -3}}, {{0.05f, 3}, {0.17f, 40}}, {{0.1f, 0}, {0.1f, 25}}, {{3.0f, -9}, {0.0031f, 7}}};

template <resize_mode Mode, int Scale, class T>
void check_requantized_bilinear() {
  using kernel = mosaiq::resize_bilinear<resize_config{.scale = Scale, .mode = Mode}, T>;
  for (const requant_case& r : requant_cases) {
    CAPTURE(r.input.scale);
    CAPTURE(r.output.scale);
    const kernel up(r.input, r.output);
    REQUIRE(up.valid());
    const ref::requantization<T> requant(r.input, r.output);
    check_against_reference<kernel, T>(
        [&](tensor_view<const T> in, tensor_view<T> out) { ref::resize_bilinear<T>(in, out, Mode, requant); },
        kernel::specialized ? 1000 : 17, up);
  }
}

template <resize_mode Mode, int Scale, class T>
void check_requantized_nearest() {
  using kernel = mosaiq::resize_nearest<resize_config{.scale = Scale, .mode = Mode}, T>;
  for (const requant_case& r : requant_cases) {
    const kernel up(r.input, r.output);
    REQUIRE(up.valid());
    const ref::requantization<T> requant(r.input, r.output);
    check_against_reference<kernel, T>(
        [&](tensor_view<const T> in, tensor_view<T> out) { ref::resize_nearest<T>(in, out, Mode, requant); }, 1000, up);
  }
}

}  // namespace

TEST_CASE("requantizing resize_bilinear equals the reference: every mode, 2x and 3x, u8 and i8") {
  check_requantized_bilinear<resize_mode::half_pixel, 2, u8>();
  check_requantized_bilinear<resize_mode::legacy, 2, i8>();
  check_requantized_bilinear<resize_mode::align_corners, 2, u8>();
  check_requantized_bilinear<resize_mode::half_pixel, 3, i8>();
}

TEST_CASE("requantizing resize_bilinear at any ratio and resize_nearest equal the reference") {
  using any = any_size<resize_mode::half_pixel, u8>;
  const any up(quant_params{0.05f, 3}, quant_params{0.17f, 40});
  const ref::requantization<u8> requant(quant_params{0.05f, 3}, quant_params{0.17f, 40});
  std::mt19937 rng(7);
  for (const ratio_case& r : ratio_cases)
    for (const int channels : {1, 3, 16, 17}) {
      const shape in_dims{r.in_height, r.in_width, channels}, out_dims{r.out_height, r.out_width, channels};
      placed_tensor<u8> in(in_dims, 2, 1, 1), out(out_dims, 2, 0, 0), expected(out_dims, 2, 0, 0);
      in.fill_random(rng);
      ref::resize_bilinear<u8>(tensor_view<const u8>(in.view()), expected.view(), resize_mode::half_pixel, requant);
      up(in.view(), out.view());
      CHECK(out.values() == expected.values());
      CHECK(out.first_damaged_canary() == -1);
    }
  check_requantized_nearest<resize_mode::half_pixel, 2, u8>();
  check_requantized_nearest<resize_mode::align_corners, 2, i8>();
}

TEST_CASE("requantizing resize: equal parameters are the plain op; misuse is reported") {
  std::mt19937 rng(8);
  placed_tensor<i8> in(shape{5, 7, 16}, 1, 0, 0), out(shape{10, 14, 16}, 1, 0, 0), plain(shape{10, 14, 16}, 1, 0, 0);
  in.fill_random(rng);
  using kernel = mosaiq::resize_bilinear<resize_config{}, i8>;
  const kernel same(quant_params{0.1f, 4}, quant_params{0.1f, 4});
  CHECK(same.requantization().identity());
  same(in.view(), out.view());
  kernel::run(tensor_view<const i8>(in.view()), plain.view());
  CHECK(out.values() == plain.values());

  mosaiq::test::recording_handler errors;
  const kernel invalid(quant_params{1.0f, 0}, quant_params{1e-12f, 0});  // ratio 1e12: shift above 30
  CHECK(errors.calls() == 1);
  CHECK(!invalid.valid());
  std::vector<i8> untouched(10 * 14 * 16, 1);
  invalid(tensor_view<const i8>(in.view()), tensor_view<i8>(untouched.data(), shape{10, 14, 16}));
  CHECK(errors.calls() == 2);
  const kernel requantizing(quant_params{0.1f, 4}, quant_params{0.2f, 4});
  requantizing(tensor_view<const i8>(in.view()), tensor_view<i8>(untouched.data(), shape{10, 13, 16}));
  CHECK(errors.calls() == 3);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  CHECK(std::count(untouched.begin(), untouched.end(), i8{1}) == static_cast<long>(untouched.size()));
}
