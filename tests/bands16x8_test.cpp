// Band chains of i16 (16x8) networks (net/bands.hpp, issue 21): the 16x8 kernels' window entry points against their
// whole-map runs (depthwise16x8 and conv2d16x8 run_rows_window, resize_bilinear16x8_window) over odd band heights,
// strides 2, padding at the top and bottom, dilation, channel tails, batches, both int32 and int64 paths, and windows
// holding just the rows a band reads; then i16 networks banded against layer by layer byte for byte: a chain through
// every 16x8 layer kind that joins (a tap inside the chain, a broadcast gate from before it) at band heights 1 to 3,
// the automatic plan, rows split over 1-3 threads without heap, and the selfie-like network of
// tests/network_16x8_test.cpp planned automatically. MOSAIQ_TEST_BANDED_NETWORKS=0 leaves the networks out, as in
// tests/bands_test.cpp (the plan and its plumbing do not depend on the ISA level; the window entry points stay).
#ifndef MOSAIQ_TEST_BANDED_NETWORKS
#define MOSAIQ_TEST_BANDED_NETWORKS 1
#endif
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "allocation_counter.hpp"
#include "band_layers.hpp"
#include "mosaiq/net.hpp"
#include "mosaiq/ops/conv16x8.hpp"
#include "mosaiq/ops/depthwise16x8.hpp"
#include "mosaiq/ops/eltwise16x8.hpp"
#include "mosaiq/tools/quantize.hpp"
#include "network16x8_support.hpp"
#include "support.hpp"
#include "support16x8.hpp"

namespace {

using namespace mosaiq;
using reference::conv_requant_16x8;
using test::stored_tensor;
namespace L = mosaiq::layers;
constexpr i16 canary16 = 0x5A5A;

// ---------------------------------------------------------------------------------------------
// Window entry points.

/// A copy of image rows `rows` of `in` (every image of the batch) into a buffer of their own, canaries around;
/// `extra_stride` elements after each pixel (0: dense pixels, which the stem's interior patches need).
stored_tensor<i16> window_of(const tensor_view<i16>& in, row_band rows, int extra_stride) {
  stored_tensor<i16> window({rows.rows(), in.width(), in.channels()}, in.batch(), in.channels() + extra_stride,
                            canary16);
  for (int n = 0; n < in.batch(); ++n)
    for (int y = rows.first; y < rows.last; ++y)
      for (int x = 0; x < in.width(); ++x)
        std::copy_n(in.pixel(n, y, x), in.channels(), window.view.pixel(n, y - rows.first, x));
  return window;
}

/// Every band of `band_height` output rows of `expected` (the whole run's output) from `run(window, first row,
/// band_out, band)`, the window holding the rows `rows_read(band)` says the band reads and `margin` more on each side
/// inside the image (and `margin` elements after each pixel): the band's rows equal, nothing around them written.
template <class RowsRead, class Run>
void check_bands(const stored_tensor<i16>& in, const stored_tensor<i16>& expected, int band_height, int margin,
                 RowsRead rows_read, Run run) {
  const tensor_view<i16>& out = expected.view;
  for (int first = 0; first < out.height(); first += band_height) {
    const row_band band{first, std::min(out.height(), first + band_height)};
    const row_band read = rows_read(band);
    const row_band rows{std::max(0, read.first - margin), std::min(in.view.height(), read.last + margin)};
    const stored_tensor<i16> window = window_of(in.view, rows, margin);
    const shape band_shape{band.rows(), out.width(), out.channels()};
    stored_tensor<i16> got(band_shape, out.batch(), out.channels() + 2, canary16);
    stored_tensor<i16> want(band_shape, out.batch(), out.channels() + 2, canary16);
    for (int n = 0; n < out.batch(); ++n)
      for (int y = band.first; y < band.last; ++y)
        for (int x = 0; x < out.width(); ++x)
          std::copy_n(out.pixel(n, y, x), out.channels(), want.view.pixel(n, y - band.first, x));
    run(tensor_view<const i16>(window.view), rows.first, got.view, band);
    INFO("band ", band.first, "..", band.last, " of ", out.height(), ", window rows ", rows.first, "..", rows.last,
         ", margin ", margin);
    CHECK(got.buffer == want.buffer);
  }
}

/// Input rows a window of the given extent, stride and top padding reads for output rows `band`, clipped.
row_band window_rows(row_band band, int in_height, int extent, int stride, int pad_before) {
  return {std::clamp(band.first * stride - pad_before, 0, in_height),
          std::clamp((band.last - 1) * stride - pad_before + extent, 0, in_height)};
}

stored_tensor<i16> random_input(std::mt19937& rng, shape dims, int batch, int extra_stride) {
  stored_tensor<i16> in(dims, batch, dims.channels + extra_stride, canary16);
  const auto values = test::random_ints<i16>(rng, in.buffer.size());
  std::copy(values.begin(), values.end(), in.buffer.begin());
  return in;
}

/// A kernel's window runs (Run: kernel, window, first row, image height, band_out, band) against its whole run
/// (Whole: kernel, input, output) at band heights 1, 2, 3 and 5, windows of just the rows read and of one more each
/// side.
template <class Kernel, class Whole, class Run>
void check_windowed_kernel(const Kernel& kernel, std::mt19937& rng, shape in_shape, int batch, Whole whole, Run run) {
  const stored_tensor<i16> in = random_input(rng, in_shape, batch, 3);
  const shape out_shape = Kernel::output_shape(in_shape);
  stored_tensor<i16> expected(out_shape, batch, out_shape.channels + 2, canary16);
  whole(kernel, tensor_view<const i16>(in.view), expected.view);
  constexpr auto cfg = Kernel::config;
  const window_geometry g =
      resolve_window(in_shape.height, in_shape.width, cfg.kernel, cfg.stride, cfg.dilation, cfg.pad);
  const auto read = [&](row_band band) {
    return window_rows(band, in_shape.height, effective_kernel_extent(cfg.kernel.h, cfg.dilation.h), cfg.stride.h,
                       g.y.pad_before);
  };
  INFO("input ", in_shape.height, "x", in_shape.width, "x", in_shape.channels, " batch ", batch);
  for (const int height : {1, 2, 3, 5})
    for (const int margin : {0, 1})
      check_bands(in, expected, height, margin, read,
                  [&](tensor_view<const i16> window, int first, tensor_view<i16> band_out, row_band band) {
                    run(kernel, window, first, in_shape.height, band_out, band);
                  });
}

template <depthwise16x8_config Cfg>
void check_depthwise_windows(std::mt19937& rng, int channels, shape in_shape, int batch, bool int64_path = false) {
  constexpr int taps = Cfg.kernel.h * Cfg.kernel.w;
  const auto filter = test::random_ints<std::int8_t>(rng, std::size_t(taps) * std::size_t(channels));
  auto bias = test::random_biases(rng, filter, taps, channels, test::filter_layout::tap_major);
  if (int64_path) bias[std::size_t(channels - 1)] = std::int64_t{1} << 40;
  const depthwise16x8<Cfg> layer(filter.data(), bias.data(), channels, test::random_requant(rng, channels, channels));
  REQUIRE(layer.ready());
  REQUIRE(layer.uses_int32_path() == !int64_path);
  check_windowed_kernel(
      layer, rng, {in_shape.height, in_shape.width, channels}, batch,
      [](const auto& k, tensor_view<const i16> in, tensor_view<i16> out) { k(in, out); },
      [](const auto& k, tensor_view<const i16> window, int first, int height, tensor_view<i16> out, row_band band) {
        k.run_rows_window(window, first, height, out, band);
      });
}

template <conv2d16x8_config Cfg>
void check_conv_windows(std::mt19937& rng, int channels, shape in_shape, int batch, bool int64_path = false) {
  using layer_type = conv2d16x8<Cfg>;
  const int k = Cfg.kernel.h * Cfg.kernel.w * channels;
  const auto filter = test::random_ints<std::int8_t>(rng, std::size_t(k) * std::size_t(Cfg.out_channels));
  auto bias = test::random_biases(rng, filter, k, Cfg.out_channels);
  if (int64_path) bias[0] = std::int64_t{1} << 40;
  const layer_type layer(filter.data(), bias.data(), channels, test::random_requant(rng, Cfg.out_channels, channels));
  REQUIRE(layer.ready());
  REQUIRE(layer.uses_int32_path() == !int64_path);
  const shape image{in_shape.height, in_shape.width, channels};
  check_windowed_kernel(
      layer, rng, image, batch,
      [&](const auto& kernel, tensor_view<const i16> in, tensor_view<i16> out) {
        std::vector<std::byte> workspace(layer_type::workspace_bytes(image));
        kernel(in, out, workspace);
      },
      [&](const auto& kernel, tensor_view<const i16> window, int first, int height, tensor_view<i16> out,
          row_band band) {
        // Exactly the bytes the band asks for: a workspace one byte short is refused (the misuse test).
        std::vector<std::byte> workspace(layer_type::band_workspace_bytes(image, band.rows()));
        kernel.run_rows_window(window, first, height, out, workspace, band);
      });
}

TEST_CASE("bands 16x8: depthwise16x8 windows give the whole run's rows (strides, dilation, pads, tails, int64)") {
  std::mt19937 rng(161);
  check_depthwise_windows<depthwise16x8_config{.kernel = {3, 3}}>(rng, 5, {13, 9, 0}, 1);
  check_depthwise_windows<depthwise16x8_config{.kernel = {3, 3}, .stride = {2, 2}}>(rng, 37, {13, 7, 0}, 2);
  check_depthwise_windows<depthwise16x8_config{.kernel = {5, 5}, .stride = {2, 2}}>(rng, 16, {12, 9, 0}, 1);
  check_depthwise_windows<depthwise16x8_config{.kernel = {5, 5}}>(rng, 21, {11, 6, 0}, 1);
  check_depthwise_windows<depthwise16x8_config{.kernel = {3, 3}, .dilation = {2, 2}}>(rng, 17, {11, 10, 0}, 1);
  check_depthwise_windows<depthwise16x8_config{.kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}}>(rng, 3,
                                                                                                        {14, 9, 0}, 1);
  check_depthwise_windows<depthwise16x8_config{.kernel = {5, 3}, .pad = padding::explicit_pads(2, 1, 1, 1)}>(
      rng, 24, {9, 7, 0}, 1);
  check_depthwise_windows<depthwise16x8_config{.kernel = {3, 3}, .pad = padding::valid()}>(rng, 9, {10, 6, 0}, 1);
  // The int64 reference path on a window.
  check_depthwise_windows<depthwise16x8_config{.kernel = {5, 5}, .stride = {2, 2}}>(rng, 19, {11, 8, 0}, 2, true);
}

TEST_CASE("bands 16x8: conv2d16x8 windows give the whole run's rows (the stem, dilation, pads, tails, int64)") {
  std::mt19937 rng(162);
  check_conv_windows<conv2d16x8_config{.out_channels = 8, .kernel = {3, 3}, .stride = {2, 2}}>(rng, 3, {13, 11, 0}, 1);
  check_conv_windows<conv2d16x8_config{.out_channels = 19, .kernel = {3, 3}}>(rng, 5, {9, 7, 0}, 2);
  check_conv_windows<conv2d16x8_config{.out_channels = 7, .kernel = {3, 3}, .dilation = {2, 2}}>(rng, 4, {12, 9, 0}, 1);
  check_conv_windows<conv2d16x8_config{
      .out_channels = 6, .kernel = {5, 3}, .stride = {2, 1}, .pad = padding::explicit_pads(2, 1, 1, 0)}>(rng, 3,
                                                                                                         {11, 8, 0}, 1);
  check_conv_windows<conv2d16x8_config{.out_channels = 5, .kernel = {3, 3}, .pad = padding::valid()}>(rng, 2, {8, 6, 0},
                                                                                                      1);
  check_conv_windows<conv2d16x8_config{.out_channels = 9, .kernel = {3, 3}, .stride = {2, 2}}>(rng, 3, {10, 9, 0}, 1,
                                                                                               true);
}

/// resize_bilinear16x8_window against resize_bilinear16x8, windows of exactly the rows the reference's taps read.
template <rounding R>
void check_resize_windows(std::mt19937& rng, shape in_shape, int scale, resize_mode mode, int batch) {
  const stored_tensor<i16> in = random_input(rng, in_shape, batch, 1);
  const shape out_shape{in_shape.height * scale, in_shape.width * scale, in_shape.channels};
  stored_tensor<i16> expected(out_shape, batch, out_shape.channels + 2, canary16);
  resize_bilinear16x8<R>(tensor_view<const i16>(in.view), expected.view, mode);
  namespace ref = reference::detail;
  const std::int64_t scale_y = ref::q10_axis_scale(in_shape.height, out_shape.height, mode);
  const auto read = [&](row_band band) {
    return row_band{ref::q10_axis_tap(band.first, scale_y, mode, in_shape.height).lower,
                    ref::q10_axis_tap(band.last - 1, scale_y, mode, in_shape.height).upper + 1};
  };
  INFO("input ", in_shape.height, "x", in_shape.width, "x", in_shape.channels, " scale ", scale, " mode ", int(mode));
  for (const int height : {1, 2, 3, 5})
    for (const int margin : {0, 1})
      check_bands(in, expected, height, margin, read,
                  [&](tensor_view<const i16> window, int first, tensor_view<i16> band_out, row_band band) {
                    resize_bilinear16x8_window<R>(window, first, in_shape.height, band_out, out_shape.height, mode,
                                                  band);
                  });
}

TEST_CASE("bands 16x8: resize_bilinear16x8_window gives the whole resize's rows (every mode, scales 2 and 4)") {
  std::mt19937 rng(163);
  for (const resize_mode mode : {resize_mode::half_pixel, resize_mode::align_corners, resize_mode::legacy}) {
    check_resize_windows<rounding::tflite_reference>(rng, {7, 5, 16}, 2, mode, 1);
    check_resize_windows<rounding::single_round>(rng, {5, 3, 21}, 2, mode, 2);
    check_resize_windows<rounding::tflite_reference>(rng, {4, 3, 3}, 4, mode, 1);
  }
}

TEST_CASE("bands 16x8: a window that misses rows its band reads is reported and nothing is written") {
  std::mt19937 rng(164);
  test::recording_handler errors;
  const stored_tensor<i16> in = random_input(rng, {9, 6, 4}, 1, 0);
  const auto filter = test::random_ints<std::int8_t>(rng, 9 * 8);
  const conv_requant_16x8 q{.clamp = {-32768, 32767}, .multipliers = {{1 << 30, -3}}};
  stored_tensor<i16> band_out({2, 6, 4}, 1, 4, canary16);
  const std::vector<i16> untouched = band_out.buffer;
  const auto rows = [&](int first, int count) { return tensor_view<const i16>(in.view).row_slice(first, count); };
  const auto reported = [&](errc expected) {
    CHECK(errors.last() == expected);
    CHECK(errors.calls() == 1);
    CHECK(band_out.buffer == untouched);
    errors.reset();
  };
  // Output rows 4..5 of a 3x3 SAME depthwise read input rows 3..6.
  const depthwise16x8<depthwise16x8_config{}> dw(filter.data(), nullptr, 4, q);
  dw.run_rows_window(rows(4, 3), 4, 9, band_out.view, {4, 6});  // row 3 missing
  reported(errc::shape_mismatch);
  dw.run_rows_window(rows(3, 3), 3, 9, band_out.view, {4, 6});  // row 6 missing
  reported(errc::shape_mismatch);
  dw.run_rows_window(rows(3, 4), 3, 9, band_out.view, {4, 7});  // band_out holds 2 rows, not 3
  reported(errc::shape_mismatch);
  dw.run_rows_window(rows(3, 4), 3, 6, band_out.view, {4, 6});  // the window reaches past the image
  reported(errc::shape_mismatch);
  dw.run_rows_window(rows(3, 4), 3, 9, band_out.view, {8, 10});  // the band past the output
  reported(errc::invalid_argument);
  dw.run_rows_window(rows(3, 4), 3, 9, band_out.view, {4, 6});
  CHECK(errors.calls() == 0);
  CHECK(band_out.buffer != untouched);

  // A 3x3 stride-2 stem: output rows 2..3 of 5 read input rows 3..7.
  using stem = conv2d16x8<conv2d16x8_config{.out_channels = 4, .kernel = {3, 3}, .stride = {2, 2}}>;
  const auto stem_filter = test::random_ints<std::int8_t>(rng, 9 * 4 * 4);
  const stem conv(stem_filter.data(), nullptr, 4, q);
  stored_tensor<i16> stem_out({2, 3, 4}, 1, 4, canary16);
  const std::vector<i16> stem_untouched = stem_out.buffer;
  std::vector<std::byte> workspace(stem::band_workspace_bytes({9, 6, 4}, 2));
  conv.run_rows_window(rows(4, 4), 4, 9, stem_out.view, workspace, {2, 4});  // row 3 missing
  CHECK(errors.last() == errc::shape_mismatch);
  conv.run_rows_window(rows(3, 5), 3, 9, stem_out.view, std::span(workspace).first(workspace.size() - 1), {2, 4});
  CHECK(errors.last() == errc::invalid_argument);
  CHECK(errors.calls() == 2);
  CHECK(stem_out.buffer == stem_untouched);
  errors.reset();
  conv.run_rows_window(rows(3, 5), 3, 9, stem_out.view, workspace, {2, 4});
  CHECK(errors.calls() == 0);

  // A 2x half-pixel resize: output rows 5..6 of 18 read input rows 2..3.
  stored_tensor<i16> up_out({2, 12, 4}, 1, 4, canary16);
  const std::vector<i16> up_untouched = up_out.buffer;
  resize_bilinear16x8_window(rows(3, 2), 3, 9, up_out.view, 18, resize_mode::half_pixel, {5, 7});  // row 2 missing
  CHECK(errors.last() == errc::shape_mismatch);
  resize_bilinear16x8_window(rows(2, 1), 2, 9, up_out.view, 18, resize_mode::half_pixel, {5, 7});  // row 3 missing
  CHECK(errors.calls() == 2);
  CHECK(up_out.buffer == up_untouched);
  errors.reset();
  resize_bilinear16x8_window(rows(2, 2), 2, 9, up_out.view, 18, resize_mode::half_pixel, {5, 7});
  CHECK(errors.calls() == 0);
  CHECK(up_out.buffer != up_untouched);
}

// ---------------------------------------------------------------------------------------------
// Banded i16 networks against layer by layer.
#if MOSAIQ_TEST_BANDED_NETWORKS

using band_layers::conv3x3;
template <int Stride, int Dilation = 1, hw Kernel = hw{3, 3}>
using dw = L::depthwise<L::depthwise_config{
    .kernel = Kernel, .stride = {Stride, Stride}, .dilation = {Dilation, Dilation}, .act = activation::relu}>;
template <int Channels>
using pw = L::pointwise<L::pointwise_config{.out_channels = Channels}>;

/// Every 16x8 layer kind that joins a chain, from layer 6 on: a broadcast gate made before the chain, a tap inside
/// it, strides 2, dilations, SAME, explicit pads at top and bottom, the resize in two modes, odd heights. The last
/// layer, a hard swish, does not join (net/bands.hpp).
template <int MaxThreads, banding B>
using chain_net16 =
    network<typename input<i16, 37, 29, 5>::template with_max_threads<MaxThreads>::template with_banding<B>,
            L::tap<"in">,              // 0
            L::global_average_pool<>,  // 1: 1x1x5 (MEAN: never in a chain)
            pw<16>,                    // 2: 1x1x16
            L::logistic<>,             // 3
            L::tap<"gate">,            // 4
            L::from<"in">,             // 5
            conv3x3<16, 2>,            // 6: 19x15x16, the stem's window
            dw<1, 2>,                  // 7: dilation 2
            L::tap<"a">,               // 8
            pw<24>,                    // 9
            conv3x3<16, 1, 2>,         // 10: dilated conv
            L::add<"a">,               // 11: a tap inside the chain
            L::mul<"gate">,            // 12: the broadcast gate
            L::average_pool<L::pool_config{.kernel = {3, 3}, .stride = {1, 1}, .pad = padding::same()}>,   // 13
            L::resize_bilinear<L::resize_config{.scale = 2, .mode = resize_mode::half_pixel}>,             // 14: 38x30
            dw<2, 1, hw{5, 5}>,                                                                            // 15: 19x15
            L::average_pool<L::pool_config{.kernel = {3, 2}, .stride = {2, 2}, .pad = padding::valid()}>,  // 16: 9x7
            conv3x3<12, 2>,                                                                                // 17: 5x4x12
            L::resize_bilinear<L::resize_config{.scale = 2, .mode = resize_mode::align_corners}>,          // 18: 10x8
            L::depthwise<L::depthwise_config{.kernel = {5, 3}, .pad = padding::explicit_pads(2, 1, 1, 1)}>,  // 19
            L::hard_swish<>>;                                                                                // 20

using whole16 = chain_net16<1, banding::off()>;
static_assert(whole16::output_shape == shape{9, 8, 12});
static_assert(whole16::valid_chain(6, 19) && !whole16::valid_chain(1, 6) && !whole16::valid_chain(6, 20));
static_assert(chain_net16<1, banding::chain(6, 11, 2)>::banded &&
              chain_net16<1, banding::chain(6, 11, 2)>::band_saved_bytes > 0);
static_assert(chain_net16<1, banding::chain(14, 19, 1)>::band_count == 9);

/// Weights quantized from random float weights (network16x8_support.hpp) and one quantized input.
template <class Net>
struct quantized_case {
  std::unique_ptr<typename Net::weights> weights;
  std::vector<i16> input;
  explicit quantized_case(std::uint32_t seed) {
    test::random_16x8_network<Net> network = test::random_16x8_weights<Net>(seed);
    input = tools::quantize_input<Net>(*network.weights, network.samples[1]);
    weights = std::move(network.weights);
  }
};

template <class To, class From>
std::unique_ptr<typename To::weights> same_weights(const typename From::weights& w) {
  std::vector<std::byte> blob(From::blob_bytes);
  REQUIRE(From::save(w, blob) == blob.size());
  auto out = std::make_unique<typename To::weights>();
  REQUIRE(To::load(blob, *out));
  return out;
}

/// Net's output on `input` (its weights loaded from From's blob), on `threads` threads (1: serial).
template <class Net, class From>
std::vector<i16> run_net(const typename From::weights& w, const std::vector<i16>& input, int threads = 1) {
  const auto nw = same_weights<Net, From>(w);
  const auto p = std::make_unique<typename Net::prepared>(Net::prepare(*nw));
  test::aligned_arena arena(Net::arena_bytes);
  std::vector<i16> out(Net::output_shape.elements(), canary16);
  const auto in = tensor_view<const i16>(input.data(), Net::input_shape);
  const auto view = tensor_view<i16>(out.data(), Net::output_shape);
  if (threads == 1) {
    Net::run(*p, in, view, arena.bytes);
  } else {
    thread_pool pool(threads);
    const long before = test::heap_allocations();
    Net::run(*p, in, view, arena.bytes, pool);
    CHECK(test::heap_allocations() == before);
  }
  return out;
}

TEST_CASE("bands 16x8: a chain through every joining 16x8 kind at band heights 1 to 3 gives the layer-by-layer bytes") {
  const quantized_case<whole16> c(31);
  const std::vector<i16> expected = run_net<whole16, whole16>(*c.weights, c.input);
  CHECK(std::set<i16>(expected.begin(), expected.end()).size() > 16);
  CHECK(run_net<chain_net16<1, banding::chain(6, 19, 1)>, whole16>(*c.weights, c.input) == expected);
  CHECK(run_net<chain_net16<1, banding::chain(6, 19, 2)>, whole16>(*c.weights, c.input) == expected);
  CHECK(run_net<chain_net16<1, banding::chain(6, 19, 3)>, whole16>(*c.weights, c.input) == expected);
  // Two chains, the second starting at the resize.
  CHECK(run_net<chain_net16<1, banding::chain(6, 11, 2).and_chain(14, 19, 1)>, whole16>(*c.weights, c.input) ==
        expected);
}

TEST_CASE("bands 16x8: the automatic plan saves memory and keeps the bytes; rows split over 1-3 threads") {
  using automatic = chain_net16<1, banding::automatic(1000)>;
  static_assert(automatic::banded);
  static_assert(automatic::peak_live_bytes < whole16::peak_live_bytes);
  static_assert(!chain_net16<1, banding::automatic(0)>::banded);
  const quantized_case<whole16> c(32);
  const std::vector<i16> expected = run_net<whole16, whole16>(*c.weights, c.input);
  CHECK(run_net<automatic, whole16>(*c.weights, c.input) == expected);
  using threaded = chain_net16<3, banding::chain(6, 19, 3)>;
  for (const int threads : {1, 2, 3, 4}) {
    CAPTURE(threads);
    CHECK(run_net<threaded, whole16>(*c.weights, c.input, threads) == expected);
  }
}

/// The selfie layer kinds of tests/network_16x8_test.cpp (stem, hard swish, squeeze-and-excitation gate, expansion,
/// 5x5 depthwise, residual add, 2x resize, attention gate, 2x2 transposed convolution, logistic) on a larger map.
template <class Input>
using selfie_kinds16 =
    network<Input,  //
            L::conv2d<L::conv2d_config{.out_channels = 8, .kernel = {3, 3}, .stride = {2, 2}, .pad = padding::same()}>,
            L::hard_swish<>,                                                                                          //
            L::tap<"h">,                                                                                              //
            L::global_average_pool<>, L::pointwise<L::pointwise_config{.out_channels = 4, .act = activation::relu}>,  //
            L::pointwise<L::pointwise_config{.out_channels = 8}>,                                                     //
            L::logistic<>,                                                                                            //
            L::mul<"h">,                                                                                              //
            L::pointwise<L::pointwise_config{.out_channels = 12}>,                                                    //
            L::tap<"e">,                                                                                              //
            L::depthwise<L::depthwise_config{.kernel = {5, 5}, .pad = padding::same(), .act = activation::relu}>,
            L::add<"e">,                                                                        //
            L::resize_bilinear<L::resize_config{.scale = 2, .mode = resize_mode::half_pixel}>,  //
            L::tap<"u">,                                                                        //
            L::global_average_pool<>, L::pointwise<L::pointwise_config{.out_channels = 12}>,    //
            L::logistic<>,                                                                      //
            L::mul<"u">,                                                                        //
            L::transpose_conv<L::transpose_conv_config{.out_channels = 1, .kernel = {2, 2}}>,   //
            L::logistic<>>;

TEST_CASE("bands 16x8: the selfie-like i16 network banded (a chain from the gate to the resize; automatic)") {
  using plain = selfie_kinds16<input<i16, 64, 46, 3>>;
  // Layers 7..12: the SE gate's mul (reading the tapped stem map and the broadcast gate), the expansion, the 5x5
  // depthwise, the residual add of a tap inside the chain and the resize.
  using chain1 = selfie_kinds16<input<i16, 64, 46, 3>::with_banding<banding::chain(7, 12, 1)>>;
  using chain3 = selfie_kinds16<input<i16, 64, 46, 3>::with_banding<banding::chain(7, 12, 3)>>;
  static_assert(chain3::banded && chain3::band_count == 22);  // the resize's 64 rows in bands of 3
  // As for the 8-bit selfie networks, no chain the automatic search tries lowers the peak: the maps live across the
  // whole-map MEAN hold it.
  using automatic = selfie_kinds16<input<i16, 64, 46, 3>::with_banding<banding::automatic(1000)>>;
  static_assert(automatic::peak_live_bytes == plain::peak_live_bytes);
  const quantized_case<plain> c(33);
  const std::vector<i16> expected = run_net<plain, plain>(*c.weights, c.input);
  CHECK(std::set<i16>(expected.begin(), expected.end()).size() > 16);
  CHECK(run_net<chain1, plain>(*c.weights, c.input) == expected);
  CHECK(run_net<chain3, plain>(*c.weights, c.input) == expected);
  CHECK(run_net<automatic, plain>(*c.weights, c.input) == expected);
}

#endif  // MOSAIQ_TEST_BANDED_NETWORKS

}  // namespace
