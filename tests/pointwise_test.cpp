// mosaiq::pointwise (the compiled-for ISA's path) against reference::pointwise_conv, bit for bit,
// over a grid of compile-time configs (output channels, register tiles, roundings, activations)
// and, inside each instantiation, input channel counts, pixel counts that are not multiples of the
// tile, zero points at the ends of their ranges, weights that do and do not fit int8 after the
// filter zero point, pixel strides and unaligned pointers; pixel blocks bounded by .block_bytes
// (down to one register tile) give the same bytes with a smaller workspace. Plus guard tests: nothing outside the
// output view is written, nothing past the input view is read (PROT_NONE page).
#include "mosaiq/ops/pointwise.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <tuple>
#include <vector>

#include "guard_page.hpp"
#include "mosaiq/core.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/reference/pointwise.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;
using reference::conv_requant;
using test::random_requant;
using test::stored_tensor;

template <pointwise_config C>
struct config_case {
  static constexpr pointwise_config value = C;
};

// Output channels 1, 3, 7, 8, 17, 24, 64, 100, 255 (one block, partial blocks: on AVX2 the last block of 17 and 24
// computes one and two of its four quads, whole tiles plus a narrower tail tile); the ISA default tile and two
// explicit ones (5 x 32, 2 x 64); both roundings.
using configs =
    std::tuple<config_case<pointwise_config{.out_channels = 1}>,
               config_case<pointwise_config{.out_channels = 2, .act = activation::relu}>,
               config_case<pointwise_config{.out_channels = 3, .round = rounding::single_round}>,
               config_case<pointwise_config{.out_channels = 4, .act = activation::relu6}>,
               config_case<pointwise_config{.out_channels = 7, .tile = {5, 32}, .act = activation::relu6}>,
               config_case<pointwise_config{.out_channels = 8, .tile = {2, 64}, .round = rounding::single_round}>,
               config_case<pointwise_config{.out_channels = 11, .act = activation::relu}>,
               config_case<pointwise_config{.out_channels = 17}>,
               config_case<pointwise_config{.out_channels = 24, .act = activation::relu}>,
               config_case<pointwise_config{.out_channels = 17, .tile = {5, 32}, .round = rounding::single_round}>,
               config_case<pointwise_config{.out_channels = 64}>,
               config_case<pointwise_config{.out_channels = 64, .tile = {5, 32}, .round = rounding::single_round}>,
               config_case<pointwise_config{.out_channels = 100, .tile = {2, 64}, .act = activation::relu}>,
               config_case<pointwise_config{.out_channels = 100, .tile = {5, 32}, .round = rounding::single_round}>,
               config_case<pointwise_config{.out_channels = 255, .round = rounding::single_round}>,
               config_case<pointwise_config{.out_channels = 255, .tile = {2, 64}}>,
               // Pixel blocks bounded by .block_bytes: one register tile per block (1 byte: the floor),
               // one 5-pixel tile, and a few tiles that leave a partial last block.
               config_case<pointwise_config{.out_channels = 17, .block_bytes = 1}>,
               config_case<pointwise_config{.out_channels = 64, .tile = {5, 32}, .block_bytes = 1}>,
               config_case<pointwise_config{.out_channels = 3, .round = rounding::single_round, .block_bytes = 2000}>,
               config_case<pointwise_config{.out_channels = 100, .act = activation::relu, .block_bytes = 9000}>>;

struct run_case {
  int input_channels, height, width, batch;
  bool strided_views;  // pixel_stride > channels on input and output
};

// Every input channel count with pixel counts 1, 6, 21, 50 (batch 2), 117, 323 (more than one
// pixel block of the packed input for the wide rows) and 7: none a multiple of 8 or 5 throughout.
// 16 channels (the VNNI path's dense 16-byte row sums when split: the even variants 12, 14 and 16
// with 35, 26 and 35 pixels, tails off the 16-row step; 12's zero points clamp most outputs;
// strided in 11), dense 32 (13) and dense 24 (15). Variants alternate split and fitting u8
// filters (see check_grid).
constexpr run_case run_cases[] = {
    {1, 3, 7, 1, false},  {3, 1, 1, 1, true},     {7, 5, 5, 2, false},   {8, 9, 13, 1, true},
    {17, 2, 3, 1, false}, {64, 17, 19, 1, false}, {100, 9, 13, 1, true}, {255, 17, 19, 1, false},
    {255, 1, 7, 1, true}, {100, 5, 5, 2, false},  {16, 3, 5, 1, true},   {16, 5, 7, 1, false},
    {32, 3, 3, 1, false}, {16, 1, 13, 2, false},  {24, 2, 5, 1, false},  {16, 7, 5, 1, false},
};

template <pointwise_config Cfg, class T>
void check_grid(std::uint32_t seed) {
  std::mt19937 rng(seed);
  constexpr int oc = Cfg.out_channels;
  int variant = 0;
  for (const run_case& rc : run_cases) {
    ++variant;
    CAPTURE(rc.input_channels);
    CAPTURE(rc.height);
    CAPTURE(rc.width);
    CAPTURE(variant);
    const int ic = rc.input_channels;
    const shape in_shape{rc.height, rc.width, ic};
    const shape out_shape = pointwise<Cfg, T>::output_shape(in_shape);

    // uint8 filters alternate between the full range (w - zp leaves int8: split weights on VNNI
    // and NEON) and a spread around the zero point that fits int8; zero points cycle through
    // 0, 255 and random. int8 filters use the full range including -128.
    const bool wide_weights = variant % 2 == 0;
    const int filter_zp = std::same_as<T, u8> ? (wide_weights ? test::extreme_zero_point<u8>(rng, variant / 2)
                                                              : 100 + static_cast<int>(rng() % 56))
                                              : 0;
    const int input_zp = test::extreme_zero_point<T>(rng, variant + 1);
    CAPTURE(filter_zp);
    CAPTURE(input_zp);
    std::vector<T> filter =
        std::same_as<T, u8> && !wide_weights
            ? test::random_values<T>(rng, static_cast<std::size_t>(oc) * ic, filter_zp - 100, filter_zp + 100)
            : test::random_values<T>(rng, static_cast<std::size_t>(oc) * ic);
    std::vector<std::int32_t> bias(static_cast<std::size_t>(oc));
    for (auto& b : bias) b = std::uniform_int_distribution<std::int32_t>(-20000, 20000)(rng);
    // Every fifth case has multipliers above one; the activation decides whether the epilogue may
    // fold the zero point (none) or must clamp.
    const float amplify = variant % 5 == 3 ? 3000.0f : 1.0f;
    const bool zero_point_at_min = variant % 3 == 0;
    CAPTURE(amplify);
    CAPTURE(zero_point_at_min);
    const conv_requant q = random_requant<Cfg.round, T>(rng, oc,
                                                        {.input_zero_point = input_zp,
                                                         .filter_zero_point = filter_zp,
                                                         .act = Cfg.act,
                                                         .amplify = amplify,
                                                         .output_zero_point_at_min = zero_point_at_min});
    REQUIRE(!q.scales.empty());

    const int in_stride = ic + (rc.strided_views ? 5 : 0);
    const int out_stride = oc + (rc.strided_views ? 3 : 0);
    stored_tensor<T> input(in_shape, rc.batch, in_stride, T{0});
    for (T& x : input.buffer) x = test::random_values<T>(rng, 1)[0];
    stored_tensor<T> expected(out_shape, rc.batch, out_stride, T{7});
    stored_tensor<T> actual(out_shape, rc.batch, out_stride, T{7});

    const bool with_bias = (rng() % 4) != 0;
    reference::pointwise_conv<Cfg.round, T>(input.view, filter.data(), with_bias ? bias.data() : nullptr, expected.view,
                                            q);
    const pointwise<Cfg, T> layer(filter.data(), with_bias ? bias.data() : nullptr, ic, q);
    std::vector<std::byte> workspace(layer.workspace_bytes(in_shape) + 1);
    // Unaligned workspace too: the run aligns inside it.
    layer(input.view, actual.view, std::span(workspace).subspan(1));
    // Whole buffers: the canaries between and around the output pixels are compared too.
    CHECK(actual.buffer == expected.buffer);
  }
}

template <class Case>
void check_case() {
  constexpr pointwise_config cfg = Case::value;
  SUBCASE("uint8") { check_grid<cfg, u8>(17 + cfg.out_channels); }
  SUBCASE("int8") { check_grid<cfg, i8>(29 + cfg.out_channels); }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("pointwise equals the reference bit for bit", Case, pointwise_grid_id) { check_case<Case>(); }
TEST_CASE_TEMPLATE_APPLY(pointwise_grid_id, configs);

TEST_CASE("pointwise: .block_bytes bounds the workspace to one block of packed rows") {
  // 16x16x128 -> 64, the portrait ASPP branch: by default one block packs the whole map; bounded to
  // 8 KiB, a block packs at most 64 rows of 128 or more bytes, plus their pixel offsets and alignment.
  constexpr shape in{16, 16, 128};
  constexpr pointwise_config speed{.out_channels = 64}, small{.out_channels = 64, .block_bytes = 8192};
  static_assert(pointwise<small, u8>::workspace_bytes(in) <= 8192 + 64 * 4 + 64);
  static_assert(pointwise<small, i8>::workspace_bytes(in) <= 8192 + 64 * 4 + 64);
  static_assert(pointwise<small, i8>::workspace_bytes(in) * 3 < pointwise<speed, i8>::workspace_bytes(in));
  // The floor is one register tile of pixels, whatever the bound.
  constexpr pointwise_config tiny{.out_channels = 64, .block_bytes = 1};
  static_assert(pointwise<tiny, u8>::workspace_bytes(in) > 0);
  static_assert(pointwise<tiny, u8>::workspace_bytes(in) <= pointwise<small, u8>::workspace_bytes(in));
}

TEST_CASE("pointwise: static-extent views and the scale constructor") {
  constexpr shape in_shape{7, 9, 19};
  constexpr pointwise_config cfg{.out_channels = 33, .act = activation::relu6};
  using layer_type = pointwise<cfg, i8>;
  constexpr shape out_shape = layer_type::output_shape(in_shape);
  static_assert(out_shape == shape{7, 9, 33});
  std::mt19937 rng(5);
  const std::vector<i8> input = test::random_values<i8>(rng, in_shape.elements());
  const std::vector<i8> filter = test::random_values<i8>(rng, 33 * 19, -127, 127);
  std::vector<i8> expected(out_shape.elements()), actual(out_shape.elements());
  std::vector<float> filter_scales(33);
  for (auto& s : filter_scales) s = std::uniform_real_distribution<float>(0.005f, 0.02f)(rng);
  const quant_params in_q{0.03f, -7}, out_q{0.1f, 4};
  const layer_type layer(filter.data(), nullptr, 19, in_q, filter_scales, 0, out_q);
  std::vector<std::byte> workspace(layer_type::workspace_bytes(in_shape));
  layer(tensor_view<const i8, static_extents<in_shape>>(input.data()),
        tensor_view<i8, static_extents<out_shape>>(actual.data()), workspace);
  const conv_requant q =
      reference::make_conv_requant<rounding::tflite_reference, i8>(in_q, filter_scales, 0, out_q, activation::relu6);
  reference::pointwise_conv<rounding::tflite_reference, i8>(tensor_view<const i8>(input.data(), in_shape),
                                                            filter.data(), nullptr,
                                                            tensor_view(expected.data(), out_shape), q);
  CHECK(actual == expected);
}

TEST_CASE("pointwise: run_rows on a batch of two (row bands of images that do not follow each other)") {
  std::mt19937 rng(41);
  constexpr shape in_shape{7, 5, 13};
  constexpr int out_c = 20;
  constexpr shape out_shape{7, 5, out_c};
  const std::vector<u8> input = test::random_values<u8>(rng, 2 * in_shape.elements());
  const std::vector<u8> filter = test::random_values<u8>(rng, out_c * 13);
  const conv_requant q = random_requant<rounding::tflite_reference, u8>(
      rng, out_c, {.input_zero_point = 120, .filter_zero_point = 128, .taps = 13});
  const pointwise<pointwise_config{.out_channels = out_c}, u8> layer(filter.data(), nullptr, 13, q);
  std::vector<u8> expected(2 * out_shape.elements()), got(expected.size(), 0);
  const tensor_view<const u8> in(input.data(), in_shape, 2);
  reference::pointwise_conv<rounding::tflite_reference, u8>(in, filter.data(), nullptr,
                                                            tensor_view<u8>(expected.data(), out_shape, 2), q);
  std::vector<std::byte> workspace(layer.workspace_bytes(in_shape));
  for (const row_band band : {row_band{0, 3}, row_band{3, 7}})
    layer.run_rows(in, tensor_view<u8>(got.data(), out_shape, 2), workspace, band);
  CHECK(got == expected);
}

TEST_CASE("pointwise: a hand-computed 1x1 convolution") {
  // Two pixels, three input channels, two output channels, uint8 with zero points 10 (input), 3
  // (filter), 5 (output) and scales giving real multiplier 1/4.
  const std::vector<u8> input{11, 12, 13, 20, 10, 0};
  const std::vector<u8> filter{4, 5, 6, 3, 3, 1};  // w - 3: {1, 2, 3} and {0, 0, -2}
  const std::vector<std::int32_t> bias{8, -4};
  const float filter_scale = 0.25f;
  const conv_requant q = reference::make_conv_requant<rounding::tflite_reference, u8>({1.0f, 10}, {&filter_scale, 1}, 3,
                                                                                      {1.0f, 5}, activation::none);
  const pointwise<pointwise_config{.out_channels = 2}, u8> layer(filter.data(), bias.data(), 3, q);
  std::vector<u8> out(4, 0);
  std::vector<std::byte> workspace(layer.workspace_bytes({1, 2, 3}));
  layer(tensor_view<const u8>(input.data(), shape{1, 2, 3}), tensor_view(out.data(), shape{1, 2, 2}), workspace);
  // Pixel 0: x - 10 = {1, 2, 3}: 1 + 4 + 9 + 8 = 22 -> 5.5 -> 6 (ties away), + 5; -6 - 4 = -10 -> -2.5 -> -3, + 5.
  // Pixel 1: x - 10 = {10, 0, -10}: 10 - 30 + 8 = -12 -> -3, + 5; 20 - 4 = 16 -> 4, + 5.
  CHECK(out == std::vector<u8>{11, 2, 2, 9});
}

TEST_CASE("pointwise: misuse is reported and leaves the output untouched") {
  std::mt19937 rng(9);
  std::vector<u8> filter(4 * 6, 128), input(5 * 5 * 6, 1), out(5 * 5 * 4, 42);
  const conv_requant q =
      random_requant<rounding::tflite_reference, u8>(rng, 4, {.input_zero_point = 128, .filter_zero_point = 128});
  const pointwise<pointwise_config{.out_channels = 4}, u8> layer(filter.data(), nullptr, 6, q);
  std::vector<std::byte> workspace(layer.workspace_bytes({5, 5, 6}));
  test::recording_handler errors;
  // Wrong output extents, too-small workspace, channel mismatch, requant for the other rounding.
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 6}), tensor_view(out.data(), shape{4, 5, 4}), workspace);
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 6}), tensor_view(out.data(), shape{5, 5, 4}),
        std::span(workspace).first(workspace.size() - 1));
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 3}), tensor_view(out.data(), shape{5, 5, 4}), workspace);
  CHECK(errors.calls() == 3);
  using single_round_layer = pointwise<pointwise_config{.out_channels = 4, .round = rounding::single_round}, u8>;
  const single_round_layer wrong(filter.data(), nullptr, 6, q);
  CHECK(errors.calls() == 4);
  wrong(tensor_view<const u8>(input.data(), shape{5, 5, 6}), tensor_view(out.data(), shape{5, 5, 4}), workspace);
  CHECK(errors.calls() == 5);
  CHECK(std::count(out.begin(), out.end(), u8{42}) == static_cast<long>(out.size()));
}

TEST_CASE("pointwise: writes stay inside a channel-slice output view") {
  // The output is channels [5, 5 + 21) of a 40-channel tensor inside a canary-filled buffer; the
  // input is a channel slice too, with canaries around it that would change results if read.
  constexpr u8 canary = 0xA5;
  std::mt19937 rng(11);
  const shape in_shape{9, 10, 17};
  std::vector<u8> in_buffer(64 + 9 * 10 * 40 + 64, canary);
  const tensor_view<u8> in = tensor_view<u8>(in_buffer.data() + 64, shape{9, 10, 40}).channel_slice(3, 17);
  for (int y = 0; y < 9; ++y)
    for (int x = 0; x < 10; ++x)
      for (int c = 0; c < 17; ++c) in(y, x, c) = test::random_values<u8>(rng, 1)[0];
  const std::vector<u8> filter = test::random_values<u8>(rng, 21 * 17);
  const conv_requant q = random_requant<rounding::tflite_reference, u8>(
      rng, 21, {.input_zero_point = 77, .filter_zero_point = 200, .act = activation::relu6});
  using layer_type = pointwise<pointwise_config{.out_channels = 21}, u8>;
  const layer_type layer(filter.data(), nullptr, 17, q);
  std::vector<u8> out_buffer(64 + 90 * 40 + 64, canary);
  const tensor_view<u8> out = tensor_view<u8>(out_buffer.data() + 64, shape{9, 10, 40}).channel_slice(5, 21);
  std::vector<std::byte> workspace(layer.workspace_bytes(in_shape));
  layer(tensor_view<const u8>(in), out, workspace);

  std::vector<u8> expected(90 * 21);
  reference::pointwise_conv<rounding::tflite_reference, u8>(in, filter.data(), nullptr,
                                                            tensor_view(expected.data(), shape{9, 10, 21}), q);
  const auto [mismatches, clobbered] = test::check_channel_slice(out_buffer, 64, 40, 5, 21, 90, expected, canary);
  CHECK(mismatches == 0);
  CHECK(clobbered == 0);
}

#if defined(__linux__)
// Runs a layer of OutChannels on an input and into an output that both end exactly at a PROT_NONE
// page (any access past either view faults) and compares with the reference. u8 with wide_weights:
// full-range weights with filter zero point 7 (split weights); else a spread that fits int8.
template <int OutChannels, class T>
void check_guarded(shape in_shape, std::uint32_t seed, bool wide_weights) {
  CAPTURE(OutChannels);
  CAPTURE(in_shape.channels);
  CAPTURE(in_shape.pixels());
  CAPTURE(wide_weights);
  const int channels = in_shape.channels;
  const shape out_shape{in_shape.height, in_shape.width, OutChannels};
  const test::guarded_bytes guarded_in(in_shape.elements());
  const test::guarded_bytes guarded_out(out_shape.elements());
  REQUIRE(guarded_in.ok());
  REQUIRE(guarded_out.ok());
  T* input = reinterpret_cast<T*>(guarded_in.data());
  T* actual = reinterpret_cast<T*>(guarded_out.data());
  std::mt19937 rng(seed);
  const std::vector<T> values = test::random_values<T>(rng, in_shape.elements());
  std::copy(values.begin(), values.end(), input);
  const int filter_zp = std::same_as<T, u8> ? (wide_weights ? 7 : 128) : 0;
  const std::vector<T> filter =
      std::same_as<T, u8> && !wide_weights
          ? test::random_values<T>(rng, static_cast<std::size_t>(OutChannels) * channels, 28, 228)
          : test::random_values<T>(rng, static_cast<std::size_t>(OutChannels) * channels);
  const conv_requant q = random_requant<rounding::tflite_reference, T>(
      rng, OutChannels, {.input_zero_point = 3, .filter_zero_point = filter_zp});
  using layer_type = pointwise<pointwise_config{.out_channels = OutChannels}, T>;
  const layer_type layer(filter.data(), nullptr, channels, q);
  std::vector<std::byte> workspace(layer.workspace_bytes(in_shape));
  layer(tensor_view<const T>(input, in_shape), tensor_view<T>(actual, out_shape), workspace);
  std::vector<T> expected(out_shape.elements());
  reference::pointwise_conv<rounding::tflite_reference, T>(tensor_view<const T>(input, in_shape), filter.data(),
                                                           nullptr, tensor_view(expected.data(), out_shape), q);
  CHECK(std::equal(expected.begin(), expected.end(), actual));
}

TEST_CASE("pointwise: no read past the input view (PROT_NONE guard page)") {
  for (const int channels : {1, 3, 17, 63, 100})
    check_guarded<20, i8>(shape{3, 7, channels}, static_cast<std::uint32_t>(channels), false);
}

// Split uint8 weights on dense 16-channel rows (the VNNI path's dense16_row_sums): the last block's
// masked loads must stop at the input's end.
TEST_CASE("pointwise, split uint8 weights on 16 channels: no read past the input (PROT_NONE guard page)") {
  for (const int pixels : {1, 4, 16, 23, 35})
    check_guarded<20, u8>(shape{1, pixels, 16}, static_cast<std::uint32_t>(pixels), true);
}

// Layers of at most 4 output channels read the input in place, 16 pixels at a time (the VNNI
// narrow kernel): neither the last pixel's row nor a pixel tail may read past the input, and the
// output's tail is written with masks that must stop at its end.
TEST_CASE("pointwise, at most 4 output channels: no access past the input or output (PROT_NONE guard pages)") {
  for (const int channels : {1, 4, 13, 16, 32, 35})
    for (const int pixels : {1, 16, 23}) {
      const shape in_shape{1, pixels, channels};
      const auto seed = static_cast<std::uint32_t>(channels * 131 + pixels);
      check_guarded<1, u8>(in_shape, seed, pixels == 16);
      check_guarded<2, u8>(in_shape, seed, pixels != 16);
      check_guarded<3, i8>(in_shape, seed, false);
      check_guarded<4, i8>(in_shape, seed, false);
      check_guarded<4, u8>(in_shape, seed, true);
    }
}
#endif
