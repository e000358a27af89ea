// Random operands of 16x8 conv-like layers for the tests of their kernels (pointwise16x8, depthwise16x8, conv2d16x8,
// transpose_conv16x8): integers, multipliers over the mode's whole domain, per-channel requantizations; and the
// misuse every one of those layers reports; the canary and run cases every 16x8 test shares.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/reference/int16.hpp"
#include "support.hpp"

namespace mosaiq::test {

/// What fills every 16x8 test tensor around and between its values: a run that writes outside its output view, or
/// leaves part of it unwritten, shows as this value where the reference has another.
inline constexpr std::int16_t canary = 0x5A5A;

/// One run of a 16x8 layer test: the input extents (channels: the layer's input channels), the batch, and each
/// pixel's stride beyond its channels (an input and an output view with gaps).
struct run_case {
  shape in_shape;
  int batch;
  int in_stride_extra, out_stride_extra;
};

template <class T>
std::vector<T> random_ints(std::mt19937& rng, std::size_t count, int lo = std::numeric_limits<T>::min(),
                           int hi = std::numeric_limits<T>::max()) {
  std::uniform_int_distribution<int> value(lo, hi);
  std::vector<T> values(count);
  for (T& v : values) v = static_cast<T>(value(rng));
  return values;
}

/// A multiplier anywhere in the 16x8 domain: Q31 mantissa (0, the saturating top, or random), shift in [-31, 7].
inline quantized_multiplier random_multiplier(std::mt19937& rng) {
  const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
  const std::int32_t m = kind == 0   ? 0
                         : kind == 1 ? std::numeric_limits<std::int32_t>::max()
                         : kind == 2 ? 0x7FFF0000 - std::uniform_int_distribution<int>(0, 1)(rng)
                                     : std::uniform_int_distribution<std::int32_t>(1 << 30, 0x7FFFFFFF)(rng);
  return {m, std::uniform_int_distribution<int>(-31, 7)(rng)};
}

/// Requantization of a layer's outputs: random per-channel multipliers (mostly ones that keep outputs inside int16
/// for these inputs, some anywhere), and a clamp.
inline reference::conv_requant_16x8 random_requant(std::mt19937& rng, int out_channels, int variant) {
  reference::conv_requant_16x8 q;
  q.clamp = variant % 3 == 0   ? clamp_range{-32768, 32767}
            : variant % 3 == 1 ? clamp_range{0, 32767}
                               : clamp_range{-1000, 6000};
  const int count = variant % 4 == 3 ? 1 : out_channels;
  for (int c = 0; c < count; ++c)
    q.multipliers.push_back(
        c % 5 == 4 ? random_multiplier(rng)
                   : quantized_multiplier{std::uniform_int_distribution<std::int32_t>(1 << 30, 0x7FFFFFFF)(rng),
                                          std::uniform_int_distribution<int>(-16, -6)(rng)});
  return q;
}

/// Where a filter keeps channel c's k weights: [channel][k] (pointwise, conv2d, transposed convolution) or
/// [tap][channel] (depthwise).
enum class filter_layout { channel_major, tap_major };

/// Biases within what keeps the layer on its int32 path for these weights: |bias| <= 2^31 - 1 - 32768 sum |w| over
/// each channel's k weights, the extremes included.
inline std::vector<std::int64_t> random_biases(std::mt19937& rng, const std::vector<std::int8_t>& filter, int k,
                                               int out_c, filter_layout layout = filter_layout::channel_major) {
  const auto weight = [&](int c, int i) {
    const int index = layout == filter_layout::channel_major ? c * k + i : i * out_c + c;
    return std::abs(int{filter[static_cast<std::size_t>(index)]});
  };
  std::vector<std::int64_t> bias(static_cast<std::size_t>(out_c));
  for (int c = 0; c < out_c; ++c) {
    std::int64_t sum = 0;
    for (int i = 0; i < k; ++i) sum += weight(c, i);
    const std::int64_t room = (std::int64_t{1} << 31) - 1 - 32768 * sum;
    const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
    bias[static_cast<std::size_t>(c)] = kind == 0 ? room
                                        : kind == 1
                                            ? -room
                                            : std::uniform_int_distribution<std::int64_t>(-(1 << 22), 1 << 22)(rng);
  }
  return bias;
}

/// A layer's output rows in bands, as the tasks of a parallel run: for 2, 3 and one band per row (row_bands::split),
/// `run_band(band, out)` on every band into a fresh output of `expected`'s layout filled with `fill` (which `expected`
/// started from). Each must equal `expected`, the whole run's bytes, gaps and canaries included.
template <class RunBand>
void check_row_splits(const stored_tensor<std::int16_t>& expected, std::int16_t fill, RunBand run_band) {
  const tensor_view<std::int16_t>& layout = expected.view;
  for (const int count : {2, 3, layout.height()}) {
    const row_bands bands = row_bands::split(layout.height(), count);
    stored_tensor<std::int16_t> got(layout.dims(), layout.batch(), layout.pixel_stride(), fill);
    for (int b = 0; b < bands.count; ++b) run_band(bands[b], got.view);
    INFO("bands ", bands.count);
    CHECK(got.buffer == expected.buffer);
  }
}

/// The misuse every 16x8 conv-like layer reports, built as Layer(filter, bias, in_shape.channels, requant) with
/// `out_channels` outputs (`filter` holds enough weights): at construction a null filter, no input channels, a
/// multiplier count that is neither 1 nor out_channels, a shift past 7 (each reported once, leaving the layer not
/// ready); at run time a workspace one byte short or misaligned (layers that take one), other input channels, other
/// output extents (`wrong_out`), a null input, the unloaded layer, a row band outside the output rows; none writes
/// the output.
template <class Layer>
void check_layer_misuse(const std::vector<std::int8_t>& filter, int out_channels, shape in_shape, shape wrong_out) {
  test::recording_handler errors;
  const auto reported = [&](errc expected) {
    CHECK(errors.last() == expected);
    CHECK(errors.calls() == 1);
    errors.reset();
  };
  const int channels = in_shape.channels;
  const reference::conv_requant_16x8 q{.clamp = {-32768, 32767}, .multipliers = {{1 << 30, -3}}};
  const Layer unloaded(nullptr, nullptr, channels, q);
  reported(errc::null_pointer);
  CHECK_FALSE(unloaded.ready());
  const Layer no_channels(filter.data(), nullptr, 0, q);
  reported(errc::invalid_argument);
  CHECK_FALSE(no_channels.ready());
  reference::conv_requant_16x8 wrong_count = q;
  wrong_count.multipliers.assign(static_cast<std::size_t>(out_channels) + 1, {1 << 30, -3});
  const Layer wrong_count_layer(filter.data(), nullptr, channels, wrong_count);
  reported(errc::invalid_argument);
  CHECK_FALSE(wrong_count_layer.ready());
  const Layer shift_too_large(filter.data(), nullptr, channels,
                              reference::conv_requant_16x8{.clamp = q.clamp, .multipliers = {{1 << 30, 8}}});
  reported(errc::invalid_argument);
  CHECK_FALSE(shift_too_large.ready());

  const Layer layer(filter.data(), nullptr, channels, q);
  REQUIRE(errors.calls() == 0);
  const shape out_shape = Layer::output_shape(in_shape);
  std::vector<std::int16_t> in(in_shape.elements(), 1), out(out_shape.elements() + 16, canary);
  const std::vector<std::int16_t> untouched = out;
  const tensor_view<const std::int16_t> input(in.data(), in_shape);
  const tensor_view<std::int16_t> output(out.data(), out_shape);
  constexpr bool has_workspace = requires { Layer::workspace_bytes(in_shape); };
  std::size_t workspace_bytes = 0;
  if constexpr (has_workspace) workspace_bytes = Layer::workspace_bytes(in_shape);
  std::vector<std::byte> storage(workspace_bytes + 2);
  const std::span<std::byte> workspace(storage.data(), workspace_bytes);
  const auto run = [&](const Layer& l, tensor_view<const std::int16_t> i, tensor_view<std::int16_t> o,
                       std::span<std::byte> w) {
    if constexpr (has_workspace)
      l(i, o, w);
    else
      l(i, o);
  };
  if constexpr (has_workspace) {
    run(layer, input, output, workspace.first(workspace.size() - 1));
    reported(errc::invalid_argument);
    run(layer, input, output, std::span<std::byte>(storage.data() + 1, workspace.size()));  // misaligned
    reported(errc::invalid_argument);
  }
  // One input channel fewer, the output that input's extents give: only the channel check can catch it.
  const shape fewer{in_shape.height, in_shape.width, channels - 1};
  run(layer, tensor_view<const std::int16_t>(in.data(), fewer),
      tensor_view<std::int16_t>(out.data(), Layer::output_shape(fewer)), workspace);
  reported(errc::shape_mismatch);
  run(layer, input, tensor_view<std::int16_t>(out.data(), wrong_out), workspace);
  reported(errc::shape_mismatch);
  run(layer, tensor_view<const std::int16_t>(nullptr, in_shape), output, workspace);
  reported(errc::null_pointer);
  run(unloaded, input, output, workspace);
  reported(errc::invalid_argument);
  for (const row_band band : {row_band{-1, 1}, row_band{1, 0}, row_band{0, out_shape.height + 1}}) {
    if constexpr (has_workspace)  // outside the output rows
      layer.run_rows(input, output, workspace, band);
    else
      layer.run_rows(input, output, band);
    reported(errc::invalid_argument);
  }
  CHECK(out == untouched);
}

}  // namespace mosaiq::test
