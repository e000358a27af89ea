// Scalar lane functions: the portable path and the twin every SIMD path is tested against.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd {

/// Per-lane requantization parameters as structure-of-arrays, the layout kernels keep
/// per output channel after load (one entry per lane; per-tensor layers repeat one value).
struct requant_scales_view {
  const std::int32_t* multiplier;
  const std::int32_t* left_shift;
  const std::int32_t* right_shift;

  constexpr requant_scale at(std::size_t i) const noexcept { return {multiplier[i], left_shift[i], right_shift[i]}; }
};

namespace scalar {

template <rounding Mode>
inline void multiply_by_quantized_multiplier(const std::int32_t* x, requant_scales_view s, std::int32_t* out,
                                             std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = mosaiq::multiply_by_quantized_multiplier<Mode>(x[i], s.at(i));
}

template <rounding Mode, quantized_element T>
inline void requantize(const std::int32_t* acc, requant_scales_view s, std::int32_t output_zero_point,
                       std::int32_t clamp_min, std::int32_t clamp_max, T* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = mosaiq::requantize<Mode, T>(acc[i], s.at(i), output_zero_point, clamp_min, clamp_max);
}

}  // namespace scalar
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::simd
