// What the 16x8 kernels' front ends (ops/pointwise16x8.hpp, ops/depthwise16x8.hpp, ops/conv16x8.hpp) share: the
// load-time bound that lets them accumulate in int32, the checks of the requantization bundle they take, and where
// a window entry point's views sit in the image.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel_16x8 {

/// Whether int32 accumulators are exact for one output channel of `count` int8 weights `step` elements apart:
/// |bias| + 32768 sum |w| < 2^31 bounds every partial sum, whatever order a path adds the products in and whatever
/// products (padding) it leaves out.
inline bool accumulates_in_int32(const std::int8_t* weights, int count, std::ptrdiff_t step,
                                 std::int64_t bias) noexcept {
  constexpr std::int64_t limit = std::int64_t{1} << 31;
  if (bias <= -limit || bias >= limit) return false;
  std::int64_t bound = bias < 0 ? -bias : bias;
  for (int i = 0; i < count; ++i) bound += std::int64_t{32768} * std::abs(std::int32_t{weights[i * step]});
  return bound < limit;
}

/// The bundle's count and clamp (reference::detail::check_conv_requant_16x8), and multipliers in the domain of the
/// single-rounding epilogue (reference::single_round_scale_16x8): `message` names the op.
inline bool check_requant(const reference::conv_requant_16x8& q, int output_channels, const char* message) {
  if (!reference::detail::check_conv_requant_16x8(q, output_channels)) return false;
  for (const quantized_multiplier& m : q.multipliers)
    if (!require(m.multiplier >= 0 && m.shift >= -31 && m.shift <= 7, errc::invalid_argument, message)) return false;
  return true;
}

/// Where a windowed layer's views sit in the image: the input view holds image rows [in_first, in_first + its
/// height) of an image of `in_height` rows, the output view output rows from `out_first` on. A whole-map run is
/// {0, input height, 0}; a window entry point (net/bands.hpp) gives a band's rows of both.
struct image_rows {
  int in_first = 0;
  int in_height = 0;
  int out_first = 0;
};

/// Whether output rows `band` of a window of `window` (kernel extent (k - 1) * dilation + 1, stride, rows of
/// padding above the image) read only image rows an input view of `rows` rows from `frame.in_first` holds.
inline bool window_covers(image_rows frame, int rows, row_band band, int extent, int stride, int pad_before) noexcept {
  if (frame.in_first < 0 || frame.in_first + rows > frame.in_height) return false;
  if (band.rows() == 0) return true;
  const int top = std::clamp(band.first * stride - pad_before, 0, frame.in_height);
  const int bottom = std::clamp((band.last - 1) * stride - pad_before + extent, top, frame.in_height);
  return top >= frame.in_first && bottom <= frame.in_first + rows;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel_16x8
