// mosaiq::conv2d (the compiled-for ISA's GEMM path with on-the-fly patch gathering) against
// reference::conv2d, bit for bit, over a grid of compile-time configs (kernels 1x1, 3x3, 5x5, 3x5,
// 7x7 and a few anisotropic ones; strides 1, 2, 3; dilations 1, 2; SAME / VALID / explicit pads;
// both roundings; register tiles) and, inside each instantiation, runtime input channel counts, odd
// extents including 1, batch 2, zero points at the ends of their ranges, weights that do and do not
// fit int8 after the filter zero point, fused activations (they are runtime clamps), pixel strides,
// unaligned pointers and canaries around and between the output pixels; GEMM pixel blocks bounded by
// .block_bytes. Plus the MobileNet stem, a deep 3x3 s2 layer, static extents, misuse, channel slices
// and a PROT_NONE guard page.
#include "mosaiq/ops/conv.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <tuple>
#include <type_traits>
#include <vector>

#include "guard_page.hpp"
#include "mosaiq/core.hpp"
#include "mosaiq/reference/conv.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;
using reference::conv_requant;
using test::random_requant;
using test::stored_tensor;

template <conv2d_config C>
struct config_case {
  static constexpr conv2d_config value = C;
};

constexpr rounding single = rounding::single_round;

#if !MOSAIQ_TEST_PATH_GRIDS
// Each kernel with each stride, dilation and padding mode somewhere; output channels 1, 3, 8, 17,
// 64, 100 (partial blocks, whole tiles plus a narrower tail tile); default and explicit tiles. The
// activation is part of the runtime requantization (a clamp), so it varies per run instead.
using configs = std::tuple<
    // 1x1: the patch is the pixel itself (packed from the input directly); strided and padded.
    config_case<conv2d_config{.out_channels = 3, .kernel = {1, 1}}>,
    config_case<conv2d_config{
        .out_channels = 17, .kernel = {1, 1}, .stride = {2, 2}, .pad = padding::valid(), .round = single}>,
    config_case<conv2d_config{
        .out_channels = 8, .kernel = {1, 1}, .stride = {3, 3}, .pad = padding::explicit_pads(1, 0, 2, 1)}>,
    // 3x3
    config_case<conv2d_config{.out_channels = 8, .kernel = {3, 3}}>,
    config_case<conv2d_config{.out_channels = 64, .kernel = {3, 3}, .stride = {2, 2}, .round = single}>,
    config_case<conv2d_config{.out_channels = 17, .kernel = {3, 3}, .dilation = {2, 2}, .pad = padding::valid()}>,
    config_case<conv2d_config{.out_channels = 1,
                              .kernel = {3, 3},
                              .stride = {3, 3},
                              .pad = padding::explicit_pads(1, 2, 0, 1),
                              .round = single}>,
    config_case<conv2d_config{
        .out_channels = 100, .kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}, .tile = {5, 32}}>,
    // 5x5
    config_case<conv2d_config{.out_channels = 64, .kernel = {5, 5}, .tile = {2, 64}, .round = single}>,
    config_case<conv2d_config{.out_channels = 3, .kernel = {5, 5}, .stride = {2, 2}, .pad = padding::valid()}>,
    config_case<conv2d_config{.out_channels = 17,
                              .kernel = {5, 5},
                              .stride = {3, 3},
                              .dilation = {2, 2},
                              .pad = padding::explicit_pads(2, 2, 2, 2)}>,
    // 3x5
    config_case<conv2d_config{.out_channels = 100, .kernel = {3, 5}, .round = single}>,
    config_case<conv2d_config{
        .out_channels = 8, .kernel = {3, 5}, .stride = {2, 2}, .dilation = {2, 2}, .pad = padding::valid()}>,
    config_case<conv2d_config{
        .out_channels = 1, .kernel = {3, 5}, .stride = {3, 3}, .pad = padding::explicit_pads(0, 1, 2, 0)}>,
    // 7x7
    config_case<conv2d_config{.out_channels = 64, .kernel = {7, 7}, .stride = {2, 2}}>,
    config_case<conv2d_config{.out_channels = 3,
                              .kernel = {7, 7},
                              .dilation = {2, 2},
                              .pad = padding::explicit_pads(3, 3, 3, 3),
                              .round = single}>,
    config_case<conv2d_config{
        .out_channels = 17, .kernel = {7, 7}, .stride = {3, 3}, .pad = padding::valid(), .tile = {5, 32}}>,
    // Anisotropic kernels, strides and dilations; 1xN (contiguous patch) and Nx1.
    config_case<conv2d_config{
        .out_channels = 8, .kernel = {5, 3}, .stride = {1, 2}, .dilation = {2, 1}, .round = single}>,
    config_case<conv2d_config{.out_channels = 100, .kernel = {1, 3}, .stride = {2, 1}, .tile = {2, 64}}>,
    config_case<conv2d_config{.out_channels = 3,
                              .kernel = {3, 1},
                              .stride = {2, 3},
                              .dilation = {1, 2},
                              .pad = padding::explicit_pads(2, 0, 0, 1),
                              .round = single}>,
    // GEMM pixel blocks bounded by .block_bytes: one register tile per block, and a few tiles.
    config_case<conv2d_config{.out_channels = 17, .kernel = {3, 3}, .stride = {2, 2}, .block_bytes = 1}>,
    config_case<conv2d_config{.out_channels = 64, .kernel = {3, 3}, .tile = {5, 32}, .block_bytes = 1500}>>;
#else
// One config per distinct path of the level (MOSAIQ_TEST_PATH_GRIDS; the geometry grid above is the same gather
// code on every level and runs in full in the binaries without it): patches read directly (1x1, 1xN), gathered
// by kernel rows and tap by tap (dilation), built in registers (AVX-512: interior patches of at most 64 bytes),
// borders and explicit pads; output channels 1, 3, 8, 17, 64, 100, the default and explicit tiles, both
// roundings, and bounded GEMM blocks.
using configs = std::tuple<
    config_case<conv2d_config{.out_channels = 3, .kernel = {1, 1}}>,
    config_case<conv2d_config{
        .out_channels = 17, .kernel = {1, 1}, .stride = {2, 2}, .pad = padding::valid(), .round = single}>,
    config_case<conv2d_config{.out_channels = 8, .kernel = {3, 3}}>,
    config_case<conv2d_config{.out_channels = 64, .kernel = {3, 3}, .stride = {2, 2}, .round = single}>,
    config_case<conv2d_config{.out_channels = 17, .kernel = {3, 3}, .dilation = {2, 2}, .pad = padding::valid()}>,
    config_case<conv2d_config{
        .out_channels = 100, .kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}, .tile = {5, 32}}>,
    config_case<conv2d_config{.out_channels = 64, .kernel = {5, 5}, .tile = {2, 64}, .round = single}>,
    config_case<conv2d_config{
        .out_channels = 1, .kernel = {3, 5}, .stride = {3, 3}, .pad = padding::explicit_pads(0, 1, 2, 0)}>,
    config_case<conv2d_config{.out_channels = 100, .kernel = {1, 3}, .stride = {2, 1}, .tile = {2, 64}}>,
    config_case<conv2d_config{.out_channels = 17, .kernel = {3, 3}, .stride = {2, 2}, .block_bytes = 1}>,
    config_case<conv2d_config{.out_channels = 64, .kernel = {3, 3}, .tile = {5, 32}, .block_bytes = 1500}>>;
#endif

struct run_case {
  int input_channels, height, width, batch;
  bool strided_views;  // pixel_stride > channels on input and output (non-contiguous kernel rows)
};

// Input channels 1, 3, 7, 8, 17, 64; odd extents including 1 (VALID windows that do not fit give an
// empty output, which must be a no-op); batch 2.
constexpr run_case run_cases[] = {
    {1, 1, 1, 1, false},    {3, 9, 7, 1, true},  {7, 5, 11, 2, false}, {8, 13, 1, 1, false},  {17, 7, 9, 1, true},
    {64, 11, 13, 1, false}, {3, 1, 9, 1, false}, {64, 3, 5, 2, true},  {1, 15, 17, 1, false}, {8, 17, 15, 1, true},
};

constexpr activation activations[] = {activation::none, activation::relu, activation::relu6};

template <conv2d_config Cfg>
constexpr reference::conv2d_params params_of() {
  return {.kernel = Cfg.kernel, .stride = Cfg.stride, .dilation = Cfg.dilation, .pad = Cfg.pad};
}

/// Runs layer and reference on one problem and compares the whole output buffers (canaries too).
/// uint8 filters alternate between the full range (w - zp leaves int8: split weights on VNNI and
/// NEON) and a spread around the zero point that fits int8.
template <conv2d_config Cfg, class T>
void check_problem(std::mt19937& rng, shape in_shape, int batch, int in_stride, int out_stride, int variant,
                   activation act, bool with_bias) {
  constexpr int oc = Cfg.out_channels;
  const int ic = in_shape.channels;
  const int taps = Cfg.kernel.h * Cfg.kernel.w * ic;
  const shape out_shape = conv2d<Cfg, T>::output_shape(in_shape);
  const bool wide_weights = variant % 2 == 0;
  const int filter_zp = std::same_as<T, u8> ? (wide_weights ? test::extreme_zero_point<u8>(rng, variant / 2)
                                                            : 100 + static_cast<int>(rng() % 56))
                                            : 0;
  const int input_zp = test::extreme_zero_point<T>(rng, variant + 1);
  CAPTURE(filter_zp);
  CAPTURE(input_zp);
  CAPTURE(static_cast<int>(act));
  const std::size_t filter_elements = static_cast<std::size_t>(oc) * static_cast<std::size_t>(taps);
  const std::vector<T> filter = std::same_as<T, u8> && !wide_weights
                                    ? test::random_values<T>(rng, filter_elements, filter_zp - 100, filter_zp + 100)
                                    : test::random_values<T>(rng, filter_elements);
  std::vector<std::int32_t> bias(static_cast<std::size_t>(oc));
  for (auto& b : bias) b = std::uniform_int_distribution<std::int32_t>(-20000, 20000)(rng);
  const conv_requant q = random_requant<Cfg.round, T>(
      rng, oc,
      {.input_zero_point = input_zp, .filter_zero_point = filter_zp, .act = act, .output_scale = 0.01f, .taps = taps});
  REQUIRE(!q.scales.empty());

  stored_tensor<T> input(in_shape, batch, in_stride, T{0});
  for (T& x : input.buffer) x = test::random_values<T>(rng, 1)[0];
  stored_tensor<T> expected(out_shape, batch, out_stride, T{7});
  stored_tensor<T> actual(out_shape, batch, out_stride, T{7});

  reference::conv2d<Cfg.round, T>(input.view, filter.data(), with_bias ? bias.data() : nullptr, expected.view,
                                  params_of<Cfg>(), q);
  const conv2d<Cfg, T> layer(filter.data(), with_bias ? bias.data() : nullptr, ic, q);
  std::vector<std::byte> workspace(layer.workspace_bytes(in_shape) + 1);
  // Unaligned workspace too: the run aligns inside it.
  layer(input.view, actual.view, std::span(workspace).subspan(1));
  CHECK(actual.buffer == expected.buffer);
}

template <conv2d_config Cfg, class T>
void check_grid(std::uint32_t seed, std::span<const run_case> runs) {
  std::mt19937 rng(seed);
  int variant = 0;
  for (const run_case& rc : runs) {
    ++variant;
    CAPTURE(rc.input_channels);
    CAPTURE(rc.height);
    CAPTURE(rc.width);
    CAPTURE(variant);
    const int in_stride = rc.input_channels + (rc.strided_views ? 5 : 0);
    const int out_stride = Cfg.out_channels + (rc.strided_views ? 3 : 0);
    check_problem<Cfg, T>(rng, {rc.height, rc.width, rc.input_channels}, rc.batch, in_stride, out_stride, variant,
                          activations[variant % 3], rng() % 4 != 0);
  }
}

template <class Case>
void check_case(std::span<const run_case> runs = run_cases) {
  constexpr conv2d_config cfg = Case::value;
  const std::uint32_t seed = static_cast<std::uint32_t>(cfg.out_channels * 131 + cfg.kernel.h * 17 + cfg.kernel.w * 7 +
                                                        cfg.stride.h * 3 + cfg.dilation.w);
  SUBCASE("uint8") { check_grid<cfg, u8>(seed, runs); }
  SUBCASE("int8") { check_grid<cfg, i8>(seed + 1, runs); }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("conv2d equals the reference bit for bit", Case, conv2d_grid_id) { check_case<Case>(); }
TEST_CASE_TEMPLATE_APPLY(conv2d_grid_id, configs);

// Few input channels (1-4): patches of at most 32 bytes over dense rows, which AVX-512 with VBMI permutes from
// 64-byte input windows, two pixels at a time, borders included (ops/conv/avx512.hpp, pack_windows); strided views
// and patches over 32 bytes take the gather. Strides 1-3, dilation, SAME / VALID / explicit pads (the window
// starting left of the image, ending right of it, rows above and below), odd widths (a last lone pixel per row),
// rows of several windows, channel tails, bounded blocks (blocks starting and ending inside a row), batch 2.
using all_small_channel_configs =
    std::tuple<config_case<conv2d_config{.out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}}>,
               config_case<conv2d_config{
                   .out_channels = 32, .kernel = {3, 3}, .stride = {2, 2}, .pad = padding::valid(), .round = single}>,
               config_case<conv2d_config{.out_channels = 17, .kernel = {3, 3}}>,
               config_case<conv2d_config{.out_channels = 8, .kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}}>,
               config_case<conv2d_config{.out_channels = 16, .kernel = {5, 5}, .stride = {2, 2}, .round = single}>,
               config_case<conv2d_config{
                   .out_channels = 3, .kernel = {2, 2}, .stride = {2, 2}, .pad = padding::explicit_pads(1, 0, 1, 2)}>,
               config_case<conv2d_config{.out_channels = 24,
                                         .kernel = {3, 3},
                                         .stride = {1, 3},
                                         .dilation = {2, 1},
                                         .pad = padding::explicit_pads(2, 1, 3, 0)}>,
               config_case<conv2d_config{.out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}, .block_bytes = 1}>,
               config_case<conv2d_config{.out_channels = 40, .kernel = {3, 3}, .stride = {2, 2}, .block_bytes = 1500}>>;

// With path grids (MOSAIQ_TEST_PATH_GRIDS) on a level that gathers every patch (no pack_runs or pack_windows: scalar,
// AVX2, NEON), one config per gather path of these shapes: the stem (kernel rows copied whole over dense rows, tap by
// tap over the strided runs, SAME borders), stride (1, 3) with dilation (2, 1) and explicit pads on every side, and
// bounded blocks with a channel tail. The other configs vary the same gather's geometry, which the binaries without
// path grids run whole on the same code (docs/decisions.md, "The test suite, part 8"); levels that build patches in
// registers or from windows keep every config.
using small_channel_gather_configs =
    std::tuple<config_case<conv2d_config{.out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}}>,
               config_case<conv2d_config{.out_channels = 24,
                                         .kernel = {3, 3},
                                         .stride = {1, 3},
                                         .dilation = {2, 1},
                                         .pad = padding::explicit_pads(2, 1, 3, 0)}>,
               config_case<conv2d_config{.out_channels = 40, .kernel = {3, 3}, .stride = {2, 2}, .block_bytes = 1500}>>;

using small_channel_configs = std::conditional_t<MOSAIQ_TEST_PATH_GRIDS && !kernels::conv::native_path::packs_runs,
                                                 small_channel_gather_configs, all_small_channel_configs>;

constexpr run_case small_channel_runs[] = {
    {3, 1, 1, 1, false},   {3, 9, 37, 1, false},  {1, 17, 23, 2, false}, {2, 6, 65, 1, false},
    {4, 11, 9, 1, false},  {3, 16, 16, 1, false}, {2, 5, 3, 1, true},    {1, 2, 41, 1, false},
    {3, 13, 30, 2, false}, {4, 4, 27, 1, true},   {3, 7, 64, 1, false},  {1, 31, 7, 1, false},
};

TEST_CASE_TEMPLATE_DEFINE("conv2d over 1-4 input channels equals the reference bit for bit", Case, conv2d_small_id) {
  check_case<Case>(small_channel_runs);
}
TEST_CASE_TEMPLATE_APPLY(conv2d_small_id, small_channel_configs);

TEST_CASE("conv2d: MobileNet stem, 3x3 stride 2 SAME, 224x224x3 -> 32") {
  constexpr conv2d_config stem{.out_channels = 32, .kernel = {3, 3}, .stride = {2, 2}, .act = activation::relu6};
  static_assert(conv2d<stem, u8>::output_shape({224, 224, 3}) == shape{112, 112, 32});
  std::mt19937 rng(224);
  // uint8 with weights over the whole range (split weights on VNNI and NEON) and around the zero
  // point; int8. The small image has a bottom/right border like the big one (odd size: top/left too).
  for (const shape in_shape : {shape{224, 224, 3}, shape{15, 17, 3}}) {
    CAPTURE(in_shape.height);
    check_problem<stem, u8>(rng, in_shape, 1, 3, 32, 2, activation::relu6, true);
    check_problem<stem, u8>(rng, in_shape, 1, 3, 32, 1, activation::relu6, true);
    check_problem<stem, i8>(rng, in_shape, 1, 3, 32, 3, activation::relu6, true);
  }
}

TEST_CASE("conv2d: 3x3 stride 2 SAME, 16x16x256 -> 512") {
  constexpr conv2d_config deep{.out_channels = 512, .kernel = {3, 3}, .stride = {2, 2}};
  std::mt19937 rng(512);
  // Variant 2: uint8 weights over the whole range (split weights on VNNI and NEON); variant 1: not.
  SUBCASE("uint8, split weights") {
    check_problem<deep, u8>(rng, {16, 16, 256}, 1, 256, 512, 2, activation::none, true);
  }
  SUBCASE("uint8") { check_problem<deep, u8>(rng, {16, 16, 256}, 1, 256, 512, 1, activation::relu, true); }
  SUBCASE("int8") { check_problem<deep, i8>(rng, {16, 16, 256}, 1, 256, 512, 3, activation::none, true); }
}

TEST_CASE("conv2d: static-extent views and the scale constructor") {
  constexpr shape in_shape{9, 7, 5};
  constexpr conv2d_config cfg{.out_channels = 33, .kernel = {3, 3}, .stride = {2, 1}, .act = activation::relu6};
  using layer_type = conv2d<cfg, i8>;
  constexpr shape out_shape = layer_type::output_shape(in_shape);
  static_assert(out_shape == shape{5, 7, 33});
  std::mt19937 rng(5);
  const std::vector<i8> input = test::random_values<i8>(rng, in_shape.elements());
  const std::vector<i8> filter = test::random_values<i8>(rng, 33 * 9 * 5, -127, 127);
  std::vector<i8> expected(out_shape.elements()), actual(out_shape.elements());
  std::vector<float> filter_scales(33);
  for (auto& s : filter_scales) s = std::uniform_real_distribution<float>(0.005f, 0.02f)(rng);
  const quant_params in_q{0.03f, -7}, out_q{0.1f, 4};
  const layer_type layer(filter.data(), nullptr, 5, in_q, filter_scales, 0, out_q);
  CHECK(layer.input_channels() == 5);
  CHECK(layer_type::output_channels() == 33);
  std::vector<std::byte> workspace(layer_type::workspace_bytes(in_shape));
  layer(tensor_view<const i8, static_extents<in_shape>>(input.data()),
        tensor_view<i8, static_extents<out_shape>>(actual.data()), workspace);
  const conv_requant q =
      reference::make_conv_requant<rounding::tflite_reference, i8>(in_q, filter_scales, 0, out_q, activation::relu6);
  reference::conv2d<rounding::tflite_reference, i8>(tensor_view<const i8>(input.data(), in_shape), filter.data(),
                                                    nullptr, tensor_view(expected.data(), out_shape), params_of<cfg>(),
                                                    q);
  CHECK(actual == expected);
}

TEST_CASE("conv2d: explicit pads around an empty input give bias-only outputs") {
  // Every tap of every output pixel is padding: the layer must not touch the (null) input.
  constexpr conv2d_config cfg{.out_channels = 17, .kernel = {3, 3}, .pad = padding::explicit_pads(2, 2, 1, 1)};
  const shape in_shape{0, 3, 5};
  const shape out_shape = conv2d<cfg, u8>::output_shape(in_shape);
  REQUIRE(out_shape == shape{2, 3, 17});
  std::mt19937 rng(3);
  const std::vector<u8> filter = test::random_values<u8>(rng, 17 * 9 * 5);
  std::vector<std::int32_t> bias(17);
  for (auto& b : bias) b = std::uniform_int_distribution<std::int32_t>(-3000, 3000)(rng);
  const conv_requant q = random_requant<rounding::tflite_reference, u8>(
      rng, 17, {.input_zero_point = 255, .output_scale = 0.01f, .taps = 45});
  const conv2d<cfg, u8> layer(filter.data(), bias.data(), 5, q);
  std::vector<u8> actual(out_shape.elements(), 1), expected(out_shape.elements(), 2);
  std::vector<std::byte> workspace(layer.workspace_bytes(in_shape));
  layer(tensor_view<const u8>(nullptr, in_shape), tensor_view(actual.data(), out_shape), workspace);
  reference::conv2d<rounding::tflite_reference, u8>(tensor_view<const u8>(nullptr, in_shape), filter.data(),
                                                    bias.data(), tensor_view(expected.data(), out_shape),
                                                    params_of<cfg>(), q);
  CHECK(actual == expected);
}

TEST_CASE("conv2d: misuse is reported and leaves the output untouched") {
  std::mt19937 rng(9);
  using layer_type = conv2d<conv2d_config{.out_channels = 4, .kernel = {3, 3}}, u8>;
  std::vector<u8> filter(4 * 9 * 6, 128), input(5 * 5 * 6, 1), out(5 * 5 * 4, 42);
  const conv_requant q = random_requant<rounding::tflite_reference, u8>(
      rng, 4, {.input_zero_point = 128, .filter_zero_point = 128, .output_scale = 0.01f, .taps = 54});
  const layer_type layer(filter.data(), nullptr, 6, q);
  std::vector<std::byte> workspace(layer.workspace_bytes({5, 5, 6}));
  test::recording_handler errors;
  // Wrong output extents, too-small workspace, channel mismatch, batch mismatch.
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 6}), tensor_view(out.data(), shape{4, 5, 4}), workspace);
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 6}), tensor_view(out.data(), shape{5, 5, 4}),
        std::span(workspace).first(workspace.size() - 1));
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 3}), tensor_view(out.data(), shape{5, 5, 4}), workspace);
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 6}, 2), tensor_view(out.data(), shape{5, 5, 4}), workspace);
  CHECK(errors.calls() == 4);
  // Bad construction: no input channels, null filter, requant for the other rounding. Such a layer
  // reports again when run.
  const layer_type no_channels(filter.data(), nullptr, 0, q);
  const layer_type no_filter(nullptr, nullptr, 6, q);
  using single_round_layer =
      conv2d<conv2d_config{.out_channels = 4, .kernel = {3, 3}, .round = rounding::single_round}, u8>;
  const single_round_layer wrong(filter.data(), nullptr, 6, q);
  CHECK(errors.calls() == 7);
  wrong(tensor_view<const u8>(input.data(), shape{5, 5, 6}), tensor_view(out.data(), shape{5, 5, 4}), workspace);
  no_filter(tensor_view<const u8>(input.data(), shape{5, 5, 6}), tensor_view(out.data(), shape{5, 5, 4}), workspace);
  CHECK(errors.calls() == 9);
  CHECK(std::count(out.begin(), out.end(), u8{42}) == static_cast<long>(out.size()));
}

TEST_CASE("conv2d: channel slices in and out, nothing outside the output slice written") {
  // The input is channels [3, 3 + 17) of a 40-channel tensor whose other channels hold canaries
  // that would change results if read; the output is channels [5, 5 + 21) of a 40-channel tensor.
  constexpr u8 canary = 0xA5;
  std::mt19937 rng(11);
  const shape in_shape{9, 10, 17};
  std::vector<u8> in_buffer(64 + 9 * 10 * 40 + 64, canary);
  const tensor_view<u8> in = tensor_view<u8>(in_buffer.data() + 64, shape{9, 10, 40}).channel_slice(3, 17);
  for (int y = 0; y < 9; ++y)
    for (int x = 0; x < 10; ++x)
      for (int c = 0; c < 17; ++c) in(y, x, c) = test::random_values<u8>(rng, 1)[0];
  using layer_type = conv2d<conv2d_config{.out_channels = 21, .kernel = {3, 3}, .stride = {2, 2}}, u8>;
  const shape out_shape = layer_type::output_shape(in_shape);
  REQUIRE(out_shape == shape{5, 5, 21});
  const std::vector<u8> filter = test::random_values<u8>(rng, 21 * 9 * 17);
  const conv_requant q = random_requant<rounding::tflite_reference, u8>(
      rng, 21,
      {.input_zero_point = 77, .filter_zero_point = 200, .act = activation::relu6, .output_scale = 0.01f, .taps = 153});
  const layer_type layer(filter.data(), nullptr, 17, q);
  std::vector<u8> out_buffer(64 + 25 * 40 + 64, canary);
  const tensor_view<u8> out = tensor_view<u8>(out_buffer.data() + 64, shape{5, 5, 40}).channel_slice(5, 21);
  std::vector<std::byte> workspace(layer.workspace_bytes(in_shape));
  layer(tensor_view<const u8>(in), out, workspace);

  std::vector<u8> expected(out_shape.elements());
  reference::conv2d<rounding::tflite_reference, u8>(in, filter.data(), nullptr, tensor_view(expected.data(), out_shape),
                                                    {.kernel = {3, 3}, .stride = {2, 2}}, q);
  const auto [mismatches, clobbered] = test::check_channel_slice(out_buffer, 64, 40, 5, 21, 25, expected, canary);
  CHECK(mismatches == 0);
  CHECK(clobbered == 0);
}

#if defined(__linux__)
TEST_CASE("conv2d: no read past the input view (PROT_NONE guard page)") {
  for (const int channels : {1, 3, 17, 63}) {
    CAPTURE(channels);
    const shape in_shape{5, 7, channels};
    const std::size_t bytes = in_shape.elements();
    const test::guarded_bytes guarded(bytes);  // the input ends exactly at a PROT_NONE page
    REQUIRE(guarded.ok());
    i8* input = reinterpret_cast<i8*>(guarded.data());
    std::mt19937 rng(static_cast<std::uint32_t>(channels));
    const std::vector<i8> values = test::random_values<i8>(rng, bytes);
    std::copy(values.begin(), values.end(), input);
    // VALID 3x3 (the last pixel's patch is interior and ends at the last input byte) and 1x3 (its
    // patch is read from the input directly).
    const std::vector<i8> filter = test::random_values<i8>(rng, 20 * 9 * static_cast<std::size_t>(channels));
    const conv_requant q = random_requant<rounding::tflite_reference, i8>(
        rng, 20, {.input_zero_point = 3, .output_scale = 0.01f, .taps = 9 * channels});
    const auto check = [&]<conv2d_config Cfg>() {
      using layer_type = conv2d<Cfg, i8>;
      const layer_type layer(filter.data(), nullptr, channels, q);
      const shape out_shape = layer_type::output_shape(in_shape);
      std::vector<i8> actual(out_shape.elements()), expected(out_shape.elements());
      std::vector<std::byte> workspace(layer.workspace_bytes(in_shape));
      layer(tensor_view<const i8>(input, in_shape), tensor_view(actual.data(), out_shape), workspace);
      reference::conv2d<rounding::tflite_reference, i8>(tensor_view<const i8>(input, in_shape), filter.data(), nullptr,
                                                        tensor_view(expected.data(), out_shape), params_of<Cfg>(), q);
      CHECK(actual == expected);
    };
    check.template operator()<conv2d_config{.out_channels = 20, .kernel = {3, 3}, .pad = padding::valid()}>();
    check.template operator()<conv2d_config{.out_channels = 20, .kernel = {1, 3}, .pad = padding::valid()}>();
  }
}
#endif
