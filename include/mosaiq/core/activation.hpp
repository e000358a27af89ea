// Fused activations are a clamp in the quantized domain, computed as TFLite's
// CalculateActivationRangeQuantized does.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

enum class activation { none, relu, relu6, relu_n1_to_1 };

struct clamp_range {
  std::int32_t min = 0;
  std::int32_t max = 0;
  friend constexpr bool operator==(const clamp_range&, const clamp_range&) = default;
};

namespace detail {
// TFLite's Quantize(): float division, std::round, then the zero point; int conversion. A tiny scale sends
// 6 / scale past the int32 range (to infinity below ~1e-38): such values clamp to +-2^24 first, which keeps the
// conversion defined and changes no result, since the caller clamps every bound to the element range.
inline std::int32_t quantize_for_range(float real, quant_params p) noexcept {
  const float tmp = std::round(real / p.scale);
  return static_cast<std::int32_t>(std::clamp(static_cast<float>(p.zero_point) + tmp, -16777216.0f, 16777216.0f));
}
}  // namespace detail

template <quantized_element T>
inline clamp_range activation_range(activation act, quant_params output) noexcept {
  constexpr std::int32_t qmin = element_traits<T>::min, qmax = element_traits<T>::max;
  switch (act) {
    case activation::none:
      return {qmin, qmax};
    case activation::relu:
      return {std::max(qmin, detail::quantize_for_range(0.0f, output)), qmax};
    case activation::relu6:
      return {std::max(qmin, detail::quantize_for_range(0.0f, output)),
              std::min(qmax, detail::quantize_for_range(6.0f, output))};
    case activation::relu_n1_to_1:
      return {std::max(qmin, detail::quantize_for_range(-1.0f, output)),
              std::min(qmax, detail::quantize_for_range(1.0f, output))};
  }
  return {qmin, qmax};
}

/// Float counterpart used by float reference ops.
inline float apply_activation(activation act, float v) noexcept {
  switch (act) {
    case activation::none:
      return v;
    case activation::relu:
      return std::max(v, 0.0f);
    case activation::relu6:
      return std::clamp(v, 0.0f, 6.0f);
    case activation::relu_n1_to_1:
      return std::clamp(v, -1.0f, 1.0f);
  }
  return v;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
