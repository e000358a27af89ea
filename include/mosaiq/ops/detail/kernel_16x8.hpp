// What the 16x8 kernels' front ends (ops/pointwise16x8.hpp, ops/depthwise16x8.hpp) share: the load-time bound that
// lets them accumulate in int32, and the checks of the requantization bundle they take.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "mosaiq/core/error.hpp"
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

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel_16x8
