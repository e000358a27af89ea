// mosaiq::conv2d16x8 and mosaiq::transpose_conv16x8 (the 16x8 pointwise GEMM behind im2col and depth-to-space; the
// compiled-for ISA's path and the scalar microkernel over the same packed weights) against reference::conv2d_16x8 and
// reference::transpose_conv_16x8, bit for bit: grids of windows (kernels 1-5, strides 1-3, dilation, SAME / VALID /
// explicit pads), output channel tails, input channels 1-8 (1-20 for the transposed convolution), odd sizes, batches,
// pixel strides and unaligned views, several row bands, the int32 bound and the int64 path beyond it, exact
// workspaces (a canary past their end), and misuse.
#include "mosaiq/ops/conv16x8.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "mosaiq/core.hpp"
#include "mosaiq/ops/transpose_conv16x8.hpp"
#include "mosaiq/reference/int16.hpp"
#include "support.hpp"
#include "support16x8.hpp"

namespace {

using namespace mosaiq;
using reference::conv_requant_16x8;
using test::canary;
using test::random_biases;
using test::random_ints;
using test::random_multiplier;
using test::random_requant;
using test::run_case;
using test::stored_tensor;
using i16 = std::int16_t;
constexpr std::byte workspace_canary{0xA5};

/// A workspace of exactly `bytes`, 2-byte aligned, followed by canary bytes that must survive the run.
struct exact_workspace {
  std::vector<std::byte> storage;
  std::size_t bytes;
  explicit exact_workspace(std::size_t size) : storage(size + 64, workspace_canary), bytes(size) {}
  std::span<std::byte> span() { return {storage.data(), bytes}; }
  bool tail_intact() const {
    return std::all_of(storage.begin() + static_cast<std::ptrdiff_t>(bytes), storage.end(),
                       [](std::byte b) { return b == workspace_canary; });
  }
};

/// Runs `layer` on one case three ways (the build's path, the scalar twin, `reference(in, out)`) and checks them
/// equal, that nothing outside the output view changed and that the workspace was enough.
template <class Layer, class Reference>
void check_layer(const Layer& layer, const run_case& rc, std::mt19937& rng, Reference reference, int lo = -32768,
                 int hi = 32767) {
  constexpr int out_c = Layer::output_channels();
  const int k = layer.input_channels();
  stored_tensor<i16> in(rc.in_shape, rc.batch, k + rc.in_stride_extra, canary);
  const auto values = random_ints<i16>(rng, in.buffer.size(), lo, hi);
  std::copy(values.begin(), values.end(), in.buffer.begin());  // in place: the view points into the buffer
  const shape out_shape = Layer::output_shape(rc.in_shape);
  stored_tensor<i16> expected(out_shape, rc.batch, out_c + rc.out_stride_extra, canary);
  stored_tensor<i16> simd(out_shape, rc.batch, out_c + rc.out_stride_extra, canary);
  stored_tensor<i16> twin(out_shape, rc.batch, out_c + rc.out_stride_extra, canary);
  const tensor_view<const i16> input(in.view);
  reference(input, expected.view);
  exact_workspace workspace(Layer::workspace_bytes(rc.in_shape));
  layer(input, simd.view, workspace.span());
  layer.run_scalar_twin(input, twin.view, workspace.span());
  INFO("Cin ", k, " Cout ", out_c, " shape ", rc.in_shape.height, "x", rc.in_shape.width, " batch ", rc.batch,
       " strides +", rc.in_stride_extra, " +", rc.out_stride_extra, " int32 path ", layer.uses_int32_path(),
       " workspace ", workspace.bytes);
  CHECK(simd.buffer == expected.buffer);  // canaries included: nothing outside the view written
  CHECK(twin.buffer == expected.buffer);
  CHECK(workspace.tail_intact());
  test::check_row_splits(expected, canary, [&](row_band band, const tensor_view<i16>& out) {
    layer.run_rows(input, out, workspace.span(), band);
  });
  CHECK(workspace.tail_intact());
}

// ---------------------------------------------------------------------------------------------------------------
// conv2d16x8

template <conv2d16x8_config Cfg>
struct conv_case {
  static constexpr conv2d16x8_config value = Cfg;
};

constexpr reference::conv2d_params params_of(const conv2d16x8_config& c) {
  return {.kernel = c.kernel, .stride = c.stride, .dilation = c.dilation, .pad = c.pad};
}

// The selfie stem (3x3 s2 SAME to 16) first; then kernels 1-5 (square and not), strides 1-3, dilation 2, the three
// paddings, output channels from one lane to three blocks with tails, two explicit pixel tiles.
using conv_configs = std::tuple<
    conv_case<conv2d16x8_config{.out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}}>,
    conv_case<conv2d16x8_config{.out_channels = 1, .kernel = {1, 1}, .pad = padding::valid()}>,
    conv_case<conv2d16x8_config{.out_channels = 3, .kernel = {2, 2}, .stride = {1, 1}}>,
    conv_case<conv2d16x8_config{.out_channels = 8, .kernel = {3, 3}, .stride = {1, 1}, .pad = padding::valid()}>,
    conv_case<conv2d16x8_config{.out_channels = 17, .kernel = {3, 3}, .stride = {1, 1}, .dilation = {2, 2}}>,
    conv_case<conv2d16x8_config{.out_channels = 9, .kernel = {5, 5}, .stride = {2, 2}, .pad = padding::valid()}>,
    conv_case<conv2d16x8_config{
        .out_channels = 24, .kernel = {4, 4}, .stride = {2, 2}, .pad = padding::explicit_pads(1, 2, 0, 3)}>,
    conv_case<conv2d16x8_config{.out_channels = 33, .kernel = {1, 3}, .stride = {1, 2}, .tile_pixels = 7}>,
    conv_case<conv2d16x8_config{.out_channels = 5, .kernel = {5, 2}, .stride = {3, 1}, .dilation = {1, 2}}>,
    conv_case<conv2d16x8_config{.out_channels = 40, .kernel = {3, 3}, .stride = {2, 2}, .tile_pixels = 16}>>;

template <conv2d16x8_config Cfg>
void check_conv(const conv2d16x8<Cfg>& layer, const std::vector<std::int8_t>& filter,
                const std::vector<std::int64_t>& bias, const conv_requant_16x8& q, const run_case& rc,
                std::mt19937& rng, int lo = -32768, int hi = 32767) {
  check_layer(
      layer, rc, rng,
      [&](tensor_view<const i16> in, tensor_view<i16> out) {
        reference::conv2d_16x8(in, filter.data(), bias.data(), out, params_of(Cfg), q);
      },
      lo, hi);
}

TEST_CASE_TEMPLATE_DEFINE("conv2d16x8: SIMD path == scalar twin == reference", C, conv2d16x8_grid) {
  constexpr conv2d16x8_config cfg = C::value;
  constexpr int out_c = cfg.out_channels, taps = cfg.kernel.h * cfg.kernel.w;
  std::mt19937 rng(static_cast<unsigned>(16 * out_c + 7 * taps + cfg.stride.h));
  MESSAGE("target ", std::string(target_name));
  for (int cin = 1; cin <= 8; ++cin) {
    const int k = taps * cin;
    const auto filter = random_ints<std::int8_t>(rng, static_cast<std::size_t>(out_c) * k);
    const auto bias = random_biases(rng, filter, k, out_c);
    const conv_requant_16x8 q = random_requant(rng, out_c, cin);
    const conv2d16x8<cfg> layer(filter.data(), bias.data(), cin, q);
    REQUIRE(layer.ready());
    REQUIRE(layer.uses_int32_path());
    check_conv(layer, filter, bias, q, {{7, 9, cin}, 1, 0, 0}, rng);
    check_conv(layer, filter, bias, q, {{6, 5, cin}, 2, 3, 5}, rng);
    if (cin == 1 || cin == 3 || cin == 8) {
      check_conv(layer, filter, bias, q, {{1, 1, cin}, 1, 0, 0}, rng);
      check_conv(layer, filter, bias, q, {{13, 11, cin}, 1, 1, 0}, rng);
      check_conv(layer, filter, bias, q, {{2, 3, cin}, 1, 0, 2}, rng);
      // Several bands of output rows and a shorter last band.
      check_conv(layer, filter, bias, q, {{75, 83, cin}, 1, cin == 3 ? 0 : 1, 0}, rng);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(conv2d16x8_grid, conv_configs);

TEST_CASE("conv2d16x8: a VALID window larger than the image leaves no output") {
  std::mt19937 rng(5);
  using layer_type = conv2d16x8<conv2d16x8_config{.out_channels = 4, .kernel = {5, 5}, .pad = padding::valid()}>;
  static_assert(layer_type::output_shape({4, 9, 2}) == shape{0, 5, 4});
  const auto filter = random_ints<std::int8_t>(rng, 4 * 25 * 2);
  const conv_requant_16x8 q = random_requant(rng, 4, 0);
  const layer_type layer(filter.data(), nullptr, 2, q);
  std::vector<i16> in(4 * 9 * 2, 1), out(4, canary);
  std::vector<std::byte> workspace(layer_type::workspace_bytes({4, 9, 2}) + 2);
  layer(tensor_view<const i16>(in.data(), {4, 9, 2}), tensor_view<i16>(out.data(), {0, 5, 4}), workspace);
  CHECK(out == std::vector<i16>(4, canary));
}

TEST_CASE("conv2d16x8: accumulators at the int32 bound, and the int64 path beyond it") {
  std::mt19937 rng(2);
  constexpr conv2d16x8_config cfg{.out_channels = 20, .kernel = {3, 3}, .stride = {2, 2}};
  constexpr int out_c = cfg.out_channels;
  // Weights -128 and inputs -32768: every product is +2^22; the even channels' bias makes the interior pixels' sums
  // exactly 2^31 - 1 (the odd channels': the far end, negative).
  for (const int cin : {1, 3, 56}) {
    const int k = 9 * cin;
    std::vector<std::int8_t> filter(static_cast<std::size_t>(out_c) * k, -128);
    std::vector<std::int64_t> bias(out_c);
    for (int c = 0; c < out_c; ++c)
      bias[static_cast<std::size_t>(c)] =
          (c % 2 ? -1 : 1) * ((std::int64_t{1} << 31) - 1 - (std::int64_t{1} << 22) * k);
    conv_requant_16x8 q{.clamp = {-32768, 32767}, .multipliers = {}};
    for (int c = 0; c < out_c; ++c) q.multipliers.push_back(random_multiplier(rng));
    const conv2d16x8<cfg> layer(filter.data(), bias.data(), cin, q);
    REQUIRE(layer.uses_int32_path());
    check_conv(layer, filter, bias, q, {{7, 8, cin}, 1, 0, 0}, rng, -32768, -32768);
  }
  // One step beyond: the bias one larger for channel 0, or weights alone past 2^31 (K = 9 * 57 = 513), take the
  // int64 reference; with every input -32768 int32 sums would wrap there.
  for (const int cin : {3, 57, 64}) {
    const int k = 9 * cin;
    auto filter = random_ints<std::int8_t>(rng, static_cast<std::size_t>(out_c) * k);
    std::fill_n(filter.begin(), k, std::int8_t{-128});
    std::vector<std::int64_t> bias(out_c, 5);
    bias[0] = (std::int64_t{1} << 31) - (std::int64_t{1} << 22) * k;
    if (cin == 64) bias[1] = std::int64_t{1} << 40;
    const conv_requant_16x8 q = random_requant(rng, out_c, cin);
    const conv2d16x8<cfg> layer(filter.data(), bias.data(), cin, q);
    CHECK_FALSE(layer.uses_int32_path());
    check_conv(layer, filter, bias, q, {{9, 7, cin}, 1, 2, 3}, rng);
    check_conv(layer, filter, bias, q, {{7, 8, cin}, 1, 0, 0}, rng, -32768, -32768);
  }
}

TEST_CASE("conv2d16x8: misuse is reported and leaves the output untouched") {
  using layer_type = conv2d16x8<conv2d16x8_config{.out_channels = 8, .kernel = {3, 3}, .stride = {2, 2}}>;
  static_assert(layer_type::output_shape({6, 6, 3}) == shape{3, 3, 8});
  test::check_layer_misuse<layer_type>(std::vector<std::int8_t>(8 * 9 * 3, 1), 8, {6, 6, 3}, {3, 2, 8});
}

// ---------------------------------------------------------------------------------------------------------------
// transpose_conv16x8

template <transpose_conv16x8_config Cfg>
struct transpose_case {
  static constexpr transpose_conv16x8_config value = Cfg;
};

// The selfie layer (2x2 s2 to one channel) first; kernels 1x1 to 3x3 and non-square, VALID, output channels whose
// KH * KW * Cout columns have tails of every kind (4, 9, 8, 20, 68, 6), an explicit pixel tile.
using transpose_configs =
    std::tuple<transpose_case<transpose_conv16x8_config{.out_channels = 1}>,
               transpose_case<transpose_conv16x8_config{.out_channels = 9, .kernel = {1, 1}, .stride = {1, 1}}>,
               transpose_case<transpose_conv16x8_config{.out_channels = 2, .pad = padding::valid()}>,
               transpose_case<transpose_conv16x8_config{.out_channels = 5}>,
               transpose_case<transpose_conv16x8_config{.out_channels = 17, .tile_pixels = 3}>,
               transpose_case<transpose_conv16x8_config{.out_channels = 1, .kernel = {3, 2}, .stride = {3, 2}}>,
               transpose_case<transpose_conv16x8_config{.out_channels = 3, .kernel = {2, 1}, .stride = {2, 1}}>>;

template <transpose_conv16x8_config Cfg>
void check_transpose(const transpose_conv16x8<Cfg>& layer, const std::vector<std::int8_t>& filter,
                     const std::vector<std::int64_t>& bias, const conv_requant_16x8& q, const run_case& rc,
                     std::mt19937& rng, int lo = -32768, int hi = 32767) {
  const reference::transpose_conv_params p{.kernel = Cfg.kernel, .stride = Cfg.stride, .padding = Cfg.pad};
  check_layer(
      layer, rc, rng,
      [&](tensor_view<const i16> in, tensor_view<i16> out) {
        reference::transpose_conv_16x8(in, filter.data(), bias.data(), out, p, q);
      },
      lo, hi);
}

/// |bias| + 32768 sum |w| over each (oc, fy, fx)'s Cin taps: biases up to the tightest of oc's KH * KW sums.
std::vector<std::int64_t> transpose_biases(std::mt19937& rng, const std::vector<std::int8_t>& filter, int cin,
                                           int out_c) {
  const int taps = static_cast<int>(filter.size()) / (out_c * cin);
  return random_biases(rng, filter, taps * cin, out_c);  // the sum over all of oc's taps bounds each one
}

TEST_CASE_TEMPLATE_DEFINE("transpose_conv16x8: SIMD path == scalar twin == reference", C, transpose_conv16x8_grid) {
  constexpr transpose_conv16x8_config cfg = C::value;
  constexpr int out_c = cfg.out_channels, taps = cfg.kernel.h * cfg.kernel.w;
  std::mt19937 rng(static_cast<unsigned>(300 + 16 * out_c + taps));
  for (int cin = 1; cin <= 20; ++cin) {
    const auto filter = random_ints<std::int8_t>(rng, static_cast<std::size_t>(out_c) * taps * cin);
    const auto bias = transpose_biases(rng, filter, cin, out_c);
    const conv_requant_16x8 q = random_requant(rng, out_c, cin);
    const transpose_conv16x8<cfg> layer(filter.data(), bias.data(), cin, q);
    REQUIRE(layer.ready());
    REQUIRE(layer.uses_int32_path());
    check_transpose(layer, filter, bias, q, {{5, 7, cin}, 1, 0, 0}, rng);
    if (cin % 4 == 1 || cin == 16) {
      check_transpose(layer, filter, bias, q, {{1, 1, cin}, 1, 0, 0}, rng);
      check_transpose(layer, filter, bias, q, {{4, 3, cin}, 2, 3, 5}, rng);
      check_transpose(layer, filter, bias, q, {{9, 11, cin}, 1, 1, 0}, rng);
      check_transpose(layer, filter, bias, q, {{0, 4, cin}, 1, 0, 0}, rng);  // no pixels: nothing written
      // Several bands of input rows and a shorter last band.
      check_transpose(layer, filter, bias, q, {{70, 67, cin}, 1, 0, cin == 16 ? 0 : 1}, rng);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(transpose_conv16x8_grid, transpose_configs);

TEST_CASE("transpose_conv16x8: sums at the int32 bound, and the int64 path beyond it") {
  std::mt19937 rng(4);
  constexpr transpose_conv16x8_config cfg{.out_channels = 3};
  constexpr int out_c = cfg.out_channels, taps = 4;
  // Weights -128, inputs -32768: each output's sum is Cin * 2^22 + bias, exactly 2^31 - 1 for channel 0 (its far end
  // for channel 1).
  for (const int cin : {1, 16, 511}) {
    std::vector<std::int8_t> filter(static_cast<std::size_t>(out_c) * taps * cin, -128);
    std::vector<std::int64_t> bias(out_c, 0);
    bias[0] = (std::int64_t{1} << 31) - 1 - (std::int64_t{1} << 22) * cin;
    bias[1] = -bias[0];
    conv_requant_16x8 q{.clamp = {-32768, 32767}, .multipliers = {}};
    for (int c = 0; c < out_c; ++c) q.multipliers.push_back(random_multiplier(rng));
    const transpose_conv16x8<cfg> layer(filter.data(), bias.data(), cin, q);
    REQUIRE(layer.uses_int32_path());
    check_transpose(layer, filter, bias, q, {{3, 4, cin}, 1, 0, 0}, rng, -32768, -32768);
  }
  // One beyond (channel 0's bias one larger), and weights alone past 2^31 (Cin 512): the int64 reference.
  for (const int cin : {16, 512}) {
    std::vector<std::int8_t> filter(static_cast<std::size_t>(out_c) * taps * cin, -128);
    std::vector<std::int64_t> bias(out_c, 7);
    bias[0] = (std::int64_t{1} << 31) - (std::int64_t{1} << 22) * cin;
    const conv_requant_16x8 q = random_requant(rng, out_c, cin);
    const transpose_conv16x8<cfg> layer(filter.data(), bias.data(), cin, q);
    CHECK_FALSE(layer.uses_int32_path());
    check_transpose(layer, filter, bias, q, {{3, 4, cin}, 1, 0, 0}, rng, -32768, -32768);
    check_transpose(layer, filter, bias, q, {{5, 2, cin}, 2, 1, 2}, rng);
  }
}

TEST_CASE("transpose_conv16x8: misuse is reported and leaves the output untouched") {
  using layer_type = transpose_conv16x8<transpose_conv16x8_config{.out_channels = 2}>;
  static_assert(layer_type::output_shape({3, 4, 5}) == shape{6, 8, 2});
  test::check_layer_misuse<layer_type>(std::vector<std::int8_t>(2 * 4 * 5, 1), 2, {3, 4, 5},
                                       {7, 8, 2});  // not input * stride
}

}  // namespace
