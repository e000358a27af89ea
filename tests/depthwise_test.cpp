// mosaiq::depthwise (the compiled-for ISA's path) against reference::depthwise_conv, bit for bit,
// over grids of compile-time configs and, inside each instantiation, runtime shapes, channel
// counts, zero points, scales, pixel strides and unaligned pointers. Plus guard tests: nothing
// outside the views is written, and nothing past the input view is read (PROT_NONE page).
#include "mosaiq/ops/depthwise.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "guard_page.hpp"
#include "mosaiq/core.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/reference/depthwise.hpp"
#include "mosaiq/tools/batchnorm.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;
using reference::conv_requant;
using test::random_requant;
using test::stored_tensor;

template <depthwise_config C>
struct config_case {
  static constexpr depthwise_config value = C;
};

// Compile-time grid: kernels 3x3, 5x5, 1x1, 3x1, 2x2, 1x5, 5x3, 2x3; strides 1, 2, 3; dilations 1..8
// (with strides too: the phase-by-phase order of dilated rows with 1, 2, 3, 5 and 8 phases, passes of
// several rows of one phase); SAME / VALID / explicit; multipliers 1 and 2; activations; both roundings.
using configs = std::tuple<
    config_case<depthwise_config{}>,
    config_case<depthwise_config{
        .kernel = {3, 3}, .stride = {2, 2}, .act = activation::relu6, .round = rounding::single_round}>,
    config_case<depthwise_config{.kernel = {3, 3}, .dilation = {2, 2}}>,
    config_case<depthwise_config{.kernel = {3, 3},
                                 .stride = {2, 2},
                                 .dilation = {2, 2},
                                 .pad = padding::valid(),
                                 .round = rounding::single_round}>,
    config_case<depthwise_config{
        .kernel = {3, 3}, .dilation = {4, 4}, .pad = padding::explicit_pads(1, 2, 0, 3), .act = activation::relu6}>,
    config_case<depthwise_config{.kernel = {3, 3},
                                 .stride = {3, 3},
                                 .dilation = {1, 2},
                                 .pad = padding::explicit_pads(2, 0, 1, 1),
                                 .round = rounding::single_round}>,
    config_case<depthwise_config{.kernel = {5, 5}, .round = rounding::single_round}>,
    config_case<depthwise_config{
        .kernel = {5, 5}, .stride = {2, 2}, .dilation = {2, 1}, .pad = padding::valid(), .act = activation::relu6}>,
    config_case<depthwise_config{.kernel = {1, 1}, .pad = padding::valid()}>,
    config_case<depthwise_config{
        .kernel = {1, 1}, .stride = {2, 2}, .depth_multiplier = 2, .round = rounding::single_round}>,
    config_case<depthwise_config{.kernel = {3, 1}, .depth_multiplier = 2, .act = activation::relu6}>,
    config_case<depthwise_config{.kernel = {2, 2}, .stride = {2, 2}, .round = rounding::single_round}>,
    config_case<depthwise_config{.kernel = {3, 3}, .depth_multiplier = 2, .round = rounding::single_round}>,
    config_case<depthwise_config{
        .kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}, .depth_multiplier = 2, .act = activation::relu6}>,
    config_case<depthwise_config{.kernel = {3, 3}, .pad = padding::explicit_pads(1, 1, 2, 0), .tile = {3, 5}}>,
    config_case<depthwise_config{
        .kernel = {1, 5}, .stride = {2, 1}, .dilation = {1, 3}, .tile = {2, 1}, .round = rounding::single_round}>,
    config_case<depthwise_config{.kernel = {3, 3}, .dilation = {8, 8}, .act = activation::relu6}>,
    config_case<depthwise_config{.kernel = {3, 3},
                                 .stride = {2, 2},
                                 .dilation = {3, 3},
                                 .pad = padding::explicit_pads(4, 1, 2, 3),
                                 .round = rounding::single_round}>,
    config_case<depthwise_config{.kernel = {5, 3}, .stride = {2, 1}, .dilation = {4, 2}, .tile = {3, 4}}>,
    config_case<depthwise_config{.kernel = {3, 3}, .dilation = {6, 7}, .depth_multiplier = 2, .tile = {2, 3}}>,
    config_case<depthwise_config{
        .kernel = {2, 3}, .stride = {2, 2}, .dilation = {5, 5}, .pad = padding::valid(), .tile = {3, 2}}>>;

struct run_case {
  int channels, height, width, batch;
  bool strided_views;  // pixel_stride > channels on input and output
};

// Channel counts 1, 3, 8, 15, 16, 17, 31, 32, 64, 68, 72, 100; odd extents including 1; batch 2. Dense
// 8, 16 and 32 channels take the VNNI build's contiguous-run path at stride 1 and its strided-run
// path at stride 2 (breaking either fails the grid); 68 and 72 end in a VNNI job of at most 8 channels,
// which builds and computes two of its four blocks.
constexpr run_case run_cases[] = {
    {1, 7, 9, 1, false},   {3, 5, 5, 2, true},   {8, 1, 1, 1, false},   {15, 6, 11, 1, false}, {16, 9, 4, 1, true},
    {17, 1, 13, 1, false}, {31, 8, 1, 2, false}, {64, 11, 7, 1, false}, {100, 4, 19, 1, true}, {16, 20, 23, 1, false},
    {32, 6, 9, 1, false},  {8, 5, 37, 1, false}, {72, 7, 10, 1, false}, {68, 5, 9, 2, true},
};

template <class T>
T random_element(std::mt19937& rng, int lo = element_traits<T>::min, int hi = element_traits<T>::max) {
  return static_cast<T>(std::uniform_int_distribution<int>(lo, hi)(rng));
}

template <depthwise_config Cfg, class T>
void check_grid(std::uint32_t seed) {
  std::mt19937 rng(seed);
  for (const run_case& rc : run_cases) {
    CAPTURE(rc.channels);
    CAPTURE(rc.height);
    CAPTURE(rc.width);
    const shape in_shape{rc.height, rc.width, rc.channels};
    const shape out_shape = depthwise<Cfg, T>::output_shape(in_shape);
    const int oc = out_shape.channels;

    // uint8 weights alternate between a narrow spread around the zero point (w - zp fits int8) and
    // the full range with both ends (needs the split path on VNNI), whose zero point is 0 (the split's
    // negated form), 255 or random.
    const bool wide_weights = (rng() & 1) != 0;
    int filter_zp = 0;
    if constexpr (std::same_as<T, u8>) {
      const auto wide_zp = rng() % 4;
      filter_zp = !wide_weights  ? 100 + static_cast<int>(rng() % 56)
                  : wide_zp == 0 ? 0
                  : wide_zp == 1 ? 255
                                 : random_element<u8>(rng);
    }
    std::vector<T> filter(static_cast<std::size_t>(Cfg.kernel.h * Cfg.kernel.w * oc));
    for (T& w : filter) {
      if constexpr (std::same_as<T, u8>)
        w = wide_weights ? random_element<u8>(rng) : random_element<u8>(rng, filter_zp - 100, filter_zp + 100);
      else
        w = random_element<i8>(rng, -127, 127);
    }
    if constexpr (std::same_as<T, u8>)
      if (wide_weights) filter.front() = 255, filter.back() = 0;
    std::vector<std::int32_t> bias(static_cast<std::size_t>(oc));
    for (auto& b : bias) b = std::uniform_int_distribution<std::int32_t>(-20000, 20000)(rng);
    const conv_requant q = random_requant<Cfg.round, T>(
        rng, oc, {.input_zero_point = random_element<T>(rng), .filter_zero_point = filter_zp, .act = Cfg.act});
    REQUIRE(!q.scales.empty());

    const int in_stride = rc.channels + (rc.strided_views ? 5 : 0);
    const int out_stride = oc + (rc.strided_views ? 3 : 0);
    stored_tensor<T> input(in_shape, rc.batch, in_stride, T{0});
    for (T& x : input.buffer) x = random_element<T>(rng);
    stored_tensor<T> expected(out_shape, rc.batch, out_stride, T{7});
    stored_tensor<T> actual(out_shape, rc.batch, out_stride, T{7});

    const bool with_bias = (rng() % 4) != 0;
    reference::depthwise_conv<Cfg.round, T>(input.view, filter.data(), with_bias ? bias.data() : nullptr, expected.view,
                                            {.kernel = Cfg.kernel,
                                             .stride = Cfg.stride,
                                             .dilation = Cfg.dilation,
                                             .pad = Cfg.pad,
                                             .depth_multiplier = Cfg.depth_multiplier},
                                            q);
    const depthwise<Cfg, T> layer(filter.data(), with_bias ? bias.data() : nullptr, rc.channels, q);
    std::vector<std::byte> workspace(layer.workspace_bytes(in_shape) + 1);
    // Unaligned workspace too: the run aligns inside it.
    layer(input.view, actual.view, std::span(workspace).subspan(1));
    CHECK(actual.buffer == expected.buffer);

    // In bands of 3 output rows (each band restarts the ring and its phases), into a fresh output.
    stored_tensor<T> banded(out_shape, rc.batch, out_stride, T{7});
    for (int first = 0; first < out_shape.height; first += 3)
      layer.run_rows(tensor_view<const T>(input.view), banded.view, workspace,
                     {first, std::min(first + 3, out_shape.height)});
    CHECK(banded.buffer == expected.buffer);
  }
}

template <class Case>
void check_case() {
  constexpr depthwise_config cfg = Case::value;
  SUBCASE("uint8") { check_grid<cfg, u8>(17); }
  SUBCASE("int8") { check_grid<cfg, i8>(29); }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("depthwise equals the reference bit for bit", Case, depthwise_grid_id) { check_case<Case>(); }
TEST_CASE_TEMPLATE_APPLY(depthwise_grid_id, configs);

// A dilated layer's workspace holds KH expanded rows of one phase, not the (KH-1)*dilation+1 rows its
// window spans: at stride 1 it equals the undilated layer's (16x16x128: the portrait ASPP head's layer), or
// is smaller where the map has fewer rows per phase than the ring (dilation 8: two rows and the padding row).
template <int D, class T = u8>
constexpr std::size_t dilated_workspace(int stride = 1) {
  constexpr shape aspp{16, 16, 128};
  if (stride == 1) return depthwise<depthwise_config{.kernel = {3, 3}, .dilation = {D, D}}, T>::workspace_bytes(aspp);
  return depthwise<depthwise_config{.kernel = {3, 3}, .stride = {2, 2}, .dilation = {D, D}}, T>::workspace_bytes(aspp);
}
static_assert(dilated_workspace<2>() == dilated_workspace<1>());
static_assert(dilated_workspace<4, i8>() == dilated_workspace<1, i8>());
static_assert(dilated_workspace<8>() <= dilated_workspace<1>());
static_assert(dilated_workspace<8>(2) <= dilated_workspace<1>(2));
static_assert(dilated_workspace<3>(2) <= dilated_workspace<1>(2));

TEST_CASE("depthwise: strided atrous seed case through the fast path") {
  // in(y, x) = 8y + x on 1x8x8x1, w(fy, fx) = 3fy + fx + 1, stride 2, dilation 2, pads of 2: the
  // int32 accumulators are (0,0) = 302, (0,1) = 470 (see reference_conv_test.cpp). Scales 1 / 1 / 16
  // expose them as round(acc / 16) + zero point.
  const std::vector<double> accumulators{302,  470,  548,  362,  756, 1110, 1200, 762,
                                         1284, 1830, 1920, 1194, 706, 962,  1004, 590};
  std::vector<u8> input(64), filter(9);
  for (int i = 0; i < 64; ++i) input[static_cast<std::size_t>(i)] = static_cast<u8>(i + 100);
  for (int i = 0; i < 9; ++i) filter[static_cast<std::size_t>(i)] = static_cast<u8>(i + 1 + 10);
  const float one = 1.0f;
  const conv_requant q = reference::make_conv_requant<rounding::tflite_reference, u8>({1.0f, 100}, {&one, 1}, 10,
                                                                                      {16.0f, 3}, activation::none);
  const depthwise<
      depthwise_config{
          .kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}, .pad = padding::explicit_pads(2, 2, 2, 2)},
      u8>
      layer(filter.data(), nullptr, 1, q);
  std::vector<u8> out(16, 0);
  std::vector<std::byte> workspace(layer.workspace_bytes({8, 8, 1}));
  layer(tensor_view<const u8>(input.data(), shape{8, 8, 1}), tensor_view(out.data(), shape{4, 4, 1}), workspace);
  CHECK(out[0] == 22);  // 302 / 16 = 18.875 -> 19, + 3
  CHECK(out[1] == 32);  // 470 / 16 = 29.375 -> 29, + 3
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == std::lround(accumulators[i] / 16.0) + 3);
}

TEST_CASE("depthwise: hand-built scales (left shifts, negative multipliers, extreme biases) equal the reference") {
  // make_conv_requant only yields normalized multipliers with small shifts; a conv_requant may hold
  // any scale in the domain. Each variant takes a different requantization in the VNNI tile.
  using layer_type = depthwise<depthwise_config{.kernel = {3, 3}}, i8>;
  std::mt19937 rng(5);
  const shape in_shape{5, 9, 70};
  const int oc = in_shape.channels;
  std::vector<i8> input(static_cast<std::size_t>(in_shape.pixels() * oc)), filter(static_cast<std::size_t>(9 * oc));
  for (i8& x : input) x = random_element<i8>(rng);
  for (i8& w : filter) w = random_element<i8>(rng, -127, 127);
  std::vector<std::int32_t> bias(static_cast<std::size_t>(oc));
  for (auto& b : bias) b = std::uniform_int_distribution<std::int32_t>(-2'000'000'000, 2'000'000'000)(rng);
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    conv_requant q{.input_zero_point = -3, .output_zero_point = 5, .clamp = {-128, 127}, .scales = {}};
    for (int c = 0; c < oc; ++c) {
      const std::int32_t m = std::uniform_int_distribution<std::int32_t>(0, INT32_MAX)(rng);
      const int shift = c % 5 == 0 ? 31 : c % 7;
      if (variant == 0) q.scales.push_back({m, 0, shift});                               // right shifts only
      if (variant == 1) q.scales.push_back({m, c % 3 == 0 ? shift : 0, c % 2 * shift});  // left shifts too
      if (variant == 2) q.scales.push_back({c % 2 == 0 ? -m : m, c % 3, shift});         // negative multipliers
    }
    const tensor_view<const i8> in(input.data(), in_shape);
    std::vector<i8> expected(static_cast<std::size_t>(in_shape.pixels() * oc)), actual(expected.size());
    reference::depthwise_conv<rounding::tflite_reference, i8>(
        in, filter.data(), bias.data(), tensor_view<i8>(expected.data(), in_shape), {.kernel = {3, 3}}, q);
    const layer_type layer(filter.data(), bias.data(), oc, q);
    std::vector<std::byte> workspace(layer.workspace_bytes(in_shape));
    layer(in, tensor_view<i8>(actual.data(), in_shape), workspace);
    CHECK(actual == expected);
  }
}

TEST_CASE("depthwise: static-extent views") {
  constexpr shape in_shape{7, 9, 17};
  constexpr depthwise_config cfg{.kernel = {3, 3}, .stride = {2, 2}};
  using layer_type = depthwise<cfg, i8>;
  constexpr shape out_shape = layer_type::output_shape(in_shape);
  static_assert(out_shape == shape{4, 5, 17});
  std::mt19937 rng(5);
  std::vector<i8> input(in_shape.elements()), filter(9 * 17), expected(out_shape.elements()),
      actual(out_shape.elements());
  for (auto& v : input) v = random_element<i8>(rng);
  for (auto& v : filter) v = random_element<i8>(rng, -127, 127);
  const conv_requant q =
      random_requant<rounding::tflite_reference, i8>(rng, 17, {.input_zero_point = random_element<i8>(rng)});
  const layer_type layer(filter.data(), nullptr, 17, q);
  std::vector<std::byte> workspace(layer_type::workspace_bytes(in_shape));
  layer(tensor_view<const i8, static_extents<in_shape>>(input.data()),
        tensor_view<i8, static_extents<out_shape>>(actual.data()), workspace);
  reference::depthwise_conv<rounding::tflite_reference, i8>(
      tensor_view<const i8>(input.data(), in_shape), filter.data(), nullptr, tensor_view(expected.data(), out_shape),
      {.kernel = cfg.kernel, .stride = cfg.stride}, q);
  CHECK(actual == expected);
}

namespace {
struct recorded_error {
  static inline int count = 0;
  static void handler(errc, const char*, source_location) { ++count; }
};
}  // namespace

TEST_CASE("depthwise: misuse is reported and leaves the output untouched") {
  std::mt19937 rng(9);
  std::vector<u8> filter(9 * 4, 128), input(5 * 5 * 4, 1), out(5 * 5 * 4, 42);
  const conv_requant q = random_requant<rounding::tflite_reference, u8>(
      rng, 4, {.input_zero_point = random_element<u8>(rng), .filter_zero_point = 128});
  const depthwise<depthwise_config{}, u8> layer(filter.data(), nullptr, 4, q);
  std::vector<std::byte> workspace(layer.workspace_bytes({5, 5, 4}));
  const error_handler previous = set_error_handler(&recorded_error::handler);
  recorded_error::count = 0;
  // Wrong output extents, too-small workspace, channel mismatch.
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 4}), tensor_view(out.data(), shape{4, 5, 4}), workspace);
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 4}), tensor_view(out.data(), shape{5, 5, 4}),
        std::span(workspace).first(workspace.size() - 1));
  layer(tensor_view<const u8>(input.data(), shape{5, 5, 2}), tensor_view(out.data(), shape{5, 5, 2}), workspace);
  set_error_handler(previous);
  CHECK(recorded_error::count == 3);
  CHECK(std::count(out.begin(), out.end(), u8{42}) == static_cast<long>(out.size()));
}

// The output is channels [5, 5 + 17) of a 40-channel tensor inside a canary-filled buffer; the
// input is a channel slice too, with canaries around it that would change results if read.
template <depthwise_config Cfg>
void check_channel_slice_guards(std::uint32_t seed) {
  constexpr u8 canary = 0xA5;
  std::mt19937 rng(seed);
  const shape in_shape{9, 10, 17};
  std::vector<u8> in_buffer(64 + 9 * 10 * 40 + 64, canary);
  const tensor_view<u8> wide_in(in_buffer.data() + 64, shape{9, 10, 40});
  const tensor_view<u8> in = wide_in.channel_slice(3, 17);
  for (int y = 0; y < 9; ++y)
    for (int x = 0; x < 10; ++x)
      for (int c = 0; c < 17; ++c) in(y, x, c) = random_element<u8>(rng);
  std::vector<u8> filter(static_cast<std::size_t>(Cfg.kernel.h * Cfg.kernel.w) * 17);
  for (auto& w : filter) w = random_element<u8>(rng);
  const conv_requant q = random_requant<rounding::tflite_reference, u8>(
      rng, 17, {.input_zero_point = random_element<u8>(rng), .filter_zero_point = 77, .act = activation::relu6});
  using layer_type = depthwise<Cfg, u8>;
  const layer_type layer(filter.data(), nullptr, 17, q);
  const shape out_shape = layer_type::output_shape(in_shape);
  std::vector<u8> out_buffer(64 + out_shape.pixels() * 40 + 64, canary);
  const tensor_view<u8> out =
      tensor_view<u8>(out_buffer.data() + 64, shape{out_shape.height, out_shape.width, 40}).channel_slice(5, 17);
  std::vector<std::byte> workspace(layer.workspace_bytes(in_shape));
  layer(tensor_view<const u8>(in), out, workspace);

  std::vector<u8> expected(out_shape.elements());
  reference::depthwise_conv<rounding::tflite_reference, u8>(
      in, filter.data(), nullptr, tensor_view(expected.data(), out_shape),
      {.kernel = Cfg.kernel, .stride = Cfg.stride, .dilation = Cfg.dilation, .pad = Cfg.pad}, q);
  const auto [mismatches, clobbered] = test::check_channel_slice(
      out_buffer, 64, 40, 5, 17, static_cast<std::ptrdiff_t>(out_shape.pixels()), expected, canary);
  CHECK(mismatches == 0);
  CHECK(clobbered == 0);
}

TEST_CASE("depthwise: writes stay inside a channel-slice output view") {
  check_channel_slice_guards<depthwise_config{.kernel = {5, 5}, .dilation = {2, 1}}>(11);
  // Two output rows per VNNI register tile (rows shared at stride 1 and 2), with an odd last row.
  check_channel_slice_guards<depthwise_config{.kernel = {3, 3}}>(12);
  check_channel_slice_guards<depthwise_config{.kernel = {3, 3}, .stride = {2, 2}, .tile = {3, 2}}>(13);
}

#if defined(__linux__)
// Runs layer Cfg (int8) on an input that ends exactly at a PROT_NONE page: any read past the
// view faults. Checks the result against the reference too.
template <depthwise_config Cfg>
void check_input_guard_page(shape in_shape) {
  CAPTURE(in_shape.channels);
  CAPTURE(in_shape.width);
  const int channels = in_shape.channels;
  const std::size_t bytes = in_shape.elements();
  const test::guarded_bytes guarded(bytes);
  REQUIRE(guarded.ok());
  i8* input = reinterpret_cast<i8*>(guarded.data());
  std::mt19937 rng(static_cast<std::uint32_t>(channels));
  for (std::size_t i = 0; i < bytes; ++i) input[i] = random_element<i8>(rng);
  std::vector<i8> filter(static_cast<std::size_t>(Cfg.kernel.h * Cfg.kernel.w * channels));
  for (auto& w : filter) w = random_element<i8>(rng, -127, 127);
  const conv_requant q =
      random_requant<rounding::tflite_reference, i8>(rng, channels, {.input_zero_point = random_element<i8>(rng)});
  using layer_type = depthwise<Cfg, i8>;
  const layer_type layer(filter.data(), nullptr, channels, q);
  const shape out_shape = layer_type::output_shape(in_shape);
  std::vector<i8> actual(out_shape.elements()), expected(out_shape.elements());
  std::vector<std::byte> workspace(layer.workspace_bytes(in_shape));
  layer(tensor_view<const i8>(input, in_shape), tensor_view(actual.data(), out_shape), workspace);
  reference::depthwise_conv<rounding::tflite_reference, i8>(
      tensor_view<const i8>(input, in_shape), filter.data(), nullptr, tensor_view(expected.data(), out_shape),
      {.kernel = Cfg.kernel, .stride = Cfg.stride, .dilation = Cfg.dilation, .pad = Cfg.pad}, q);
  CHECK(actual == expected);
}

TEST_CASE("depthwise: no read past the input view (PROT_NONE guard page)") {
  for (const int channels : {1, 8, 15, 17, 100})
    check_input_guard_page<depthwise_config{.kernel = {3, 3}, .pad = padding::explicit_pads(1, 3, 1, 3)}>(
        shape{6, 7, channels});
  // Narrow dense layers at stride 2 (VNNI: 8 x 8, 4 x 16 or 2 x 32 channels per job, strided runs):
  // the last job column's last tap is the input's last pixel, so reading a whole 128-byte run faults.
  constexpr depthwise_config strided{.kernel = {3, 3}, .stride = {2, 2}, .pad = padding::valid()};
  check_input_guard_page<strided>(shape{3, 33, 8});
  check_input_guard_page<strided>(shape{3, 17, 16});
  check_input_guard_page<strided>(shape{3, 9, 32});
}
#endif

TEST_CASE("batch-norm folded into a (dilated, strided, multiplier 2) depthwise equals depthwise then batch-norm") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const shape in_shape{9, 8, 5};
  constexpr int multiplier = 2, oc = 10;
  const reference::depthwise_params params{
      .kernel = {3, 3}, .stride = {2, 1}, .dilation = {2, 2}, .pad = padding::same(), .depth_multiplier = multiplier};
  std::vector<float> input(in_shape.elements()), filter(9 * oc), bias(oc);
  for (auto& v : input) v = uniform(rng);
  for (auto& v : filter) v = uniform(rng);
  for (auto& v : bias) v = uniform(rng);
  std::vector<float> gamma(oc), beta(oc), mean(oc), variance(oc);
  for (int c = 0; c < oc; ++c) {
    gamma[c] = 0.5f + uniform(rng) * 0.4f, beta[c] = uniform(rng), mean[c] = uniform(rng) * 0.3f;
    variance[c] = 0.2f + uniform(rng) * 0.15f;
  }
  const tools::batchnorm_params bn{gamma, beta, mean, variance, 1e-3f};
  const shape out_shape{5, 8, oc};

  std::vector<float> conv_then_bn(out_shape.elements());
  reference::depthwise_conv(tensor_view<const float>(input.data(), in_shape), filter.data(), bias.data(),
                            tensor_view(conv_then_bn.data(), out_shape), params, activation::none);
  for (std::size_t i = 0; i < conv_then_bn.size(); ++i) {
    const std::size_t c = i % oc;
    conv_then_bn[i] = (conv_then_bn[i] - mean[c]) * gamma[c] / std::sqrt(variance[c] + bn.epsilon) + beta[c];
  }

  REQUIRE(tools::fold_batchnorm_into_depthwise(filter, bias, bn));
  std::vector<float> folded(out_shape.elements());
  reference::depthwise_conv(tensor_view<const float>(input.data(), in_shape), filter.data(), bias.data(),
                            tensor_view(folded.data(), out_shape), params, activation::none);
  double worst = 0.0;
  for (std::size_t i = 0; i < folded.size(); ++i)
    worst = std::max(worst, std::fabs(double(folded[i]) - conv_then_bn[i]));
  CHECK(worst <= 1e-4);
  // Not vacuous: the batch norm changes the outputs substantially.
  CHECK(std::fabs(conv_then_bn[0] - folded[0]) <= 1e-4);
  CHECK(std::fabs(double(gamma[0]) / std::sqrt(variance[0] + bn.epsilon) - 1.0) > 0.05);
}
