// Random operands of 16x8 conv-like layers for the tests of their kernels (pointwise16x8, conv2d16x8,
// transpose_conv16x8): integers, multipliers over the mode's whole domain, per-channel requantizations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/reference/int16.hpp"
#include "support.hpp"

namespace mosaiq::test {

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

/// Biases within what keeps the layer on its int32 path for these weights: |bias| <= 2^31 - 1 - 32768 sum |w|,
/// the extremes included.
inline std::vector<std::int64_t> random_biases(std::mt19937& rng, const std::vector<std::int8_t>& filter, int k,
                                               int out_c) {
  std::vector<std::int64_t> bias(static_cast<std::size_t>(out_c));
  for (int c = 0; c < out_c; ++c) {
    std::int64_t sum = 0;
    for (int i = 0; i < k; ++i) sum += std::abs(int{filter[static_cast<std::size_t>(c) * k + i]});
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

}  // namespace mosaiq::test
