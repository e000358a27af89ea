// Runtime quantization bundle shared by the reference convolutions (depthwise, pointwise, conv2d)
// and the builder that derives it from scales and zero points exactly as TFLite's Prepare() does.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <span>
#include <vector>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

/// Everything a quantized conv-like layer needs besides its weights: the zero points, the fused
/// activation clamp and the requantization scales (one per output channel, or one for all).
struct conv_requant {
  std::int32_t input_zero_point = 0;
  std::int32_t filter_zero_point = 0;  ///< uint8 only; int8 filters are symmetric (0)
  std::int32_t output_zero_point = 0;
  clamp_range clamp{};
  std::vector<requant_scale> scales;  ///< size 1 = per-tensor, else one per output channel
  /// The rounding `scales` were prepared for: the shifts mean different things in the two modes,
  /// so kernels refuse a bundle prepared for the other one.
  rounding mode = rounding::tflite_reference;

  const requant_scale& scale_for(int output_channel) const noexcept {
    return scales.size() == 1 ? scales.front() : scales[static_cast<std::size_t>(output_channel)];
  }
};

namespace detail {

// Shift ranges in which multiply_by_quantized_multiplier is defined for each mode (see prepare_scale).
constexpr bool shifts_fit(requant_scale s, rounding mode) noexcept {
  if (mode == rounding::tflite_reference)
    return s.left_shift >= 0 && s.left_shift <= 31 && s.right_shift >= 0 && s.right_shift <= 31;
  return s.left_shift == 0 && s.right_shift >= 1 && s.right_shift <= 62;
}

template <quantized_element T>
constexpr bool in_element_range(std::int32_t v) noexcept {
  return v >= element_traits<T>::min && v <= element_traits<T>::max;
}

inline bool is_positive_scale(float s) noexcept { return std::isfinite(s) && s > 0.0f; }

}  // namespace detail

/// Builds the bundle as TFLite does: uint8 is per-tensor with the legacy multiplier
/// (input * filter scale multiplied in float first); int8 uses the per-channel formula in double
/// (a single filter scale is broadcast to every channel, as TFLite does for per-tensor int8);
/// multipliers go through quantize_multiplier<R>, the clamp through activation_range<T>.
/// On misuse the error is reported through mosaiq::require and an empty bundle (no scales) is
/// returned, which every kernel rejects in turn.
template <rounding R, quantized_element T>
conv_requant make_conv_requant(quant_params input, std::span<const float> filter_scales, std::int32_t filter_zero_point,
                               quant_params output, activation act) {
  constexpr bool is_uint8 = std::same_as<T, u8>;
  if (!require(!filter_scales.empty(), errc::invalid_argument, "conv requant: at least one filter scale is needed"))
    return {};
  if constexpr (is_uint8) {
    if (!require(filter_scales.size() == 1, errc::invalid_argument,
                 "conv requant: uint8 convolutions are per-tensor, give exactly one filter scale") ||
        !require(detail::in_element_range<u8>(filter_zero_point), errc::invalid_argument,
                 "conv requant: uint8 filter zero point must be in [0, 255]"))
      return {};
  } else {
    if (!require(filter_zero_point == 0, errc::invalid_argument,
                 "conv requant: int8 filters are symmetric, the filter zero point must be 0"))
      return {};
  }
  if (!require(detail::in_element_range<T>(input.zero_point) && detail::in_element_range<T>(output.zero_point),
               errc::invalid_argument, "conv requant: input/output zero point outside the element range") ||
      !require(detail::is_positive_scale(input.scale) && detail::is_positive_scale(output.scale),
               errc::invalid_argument, "conv requant: input and output scales must be finite and positive"))
    return {};

  conv_requant q{.input_zero_point = input.zero_point,
                 .filter_zero_point = filter_zero_point,
                 .output_zero_point = output.zero_point,
                 .clamp = activation_range<T>(act, output),
                 .scales = {},
                 .mode = R};
  q.scales.reserve(filter_scales.size());
  for (const float filter_scale : filter_scales) {
    // Zero is allowed: TFLite gives all-zero channels a zero scale, which flushes to multiplier 0.
    if (!require(std::isfinite(filter_scale) && filter_scale >= 0.0f, errc::invalid_argument,
                 "conv requant: filter scales must be finite and non-negative"))
      return {};
    const double real = is_uint8 ? conv_real_multiplier_per_tensor(input.scale, filter_scale, output.scale)
                                 : conv_real_multiplier_per_channel(input.scale, filter_scale, output.scale);
    const quantized_multiplier m = quantize_multiplier<R>(real);
    if (!require(is_valid_multiplier(m), errc::invalid_argument,
                 "conv requant: input_scale * filter_scale / output_scale is not finite or too large to requantize"))
      return {};
    q.scales.push_back(prepare_scale<R>(m));
  }
  return q;
}

/// Checks a bundle against the kernel about to use it: the rounding it was prepared for, the
/// number of scales, zero points and clamp inside the element range, shifts in their domain.
template <rounding R, quantized_element T>
bool check_conv_requant(const conv_requant& q, int output_channels) {
  const std::size_t count = q.scales.size();
  if (!require(q.mode == R, errc::invalid_argument, "conv requant: scales were prepared for the other rounding mode") ||
      !require(count == 1 || (output_channels >= 0 && count == static_cast<std::size_t>(output_channels)),
               errc::invalid_argument, "conv requant: need one scale, or one per output channel"))
    return false;
  if constexpr (std::same_as<T, i8>) {
    if (!require(q.filter_zero_point == 0, errc::invalid_argument, "conv requant: int8 filter zero point must be 0"))
      return false;
  } else {
    if (!require(detail::in_element_range<u8>(q.filter_zero_point), errc::invalid_argument,
                 "conv requant: uint8 filter zero point must be in [0, 255]"))
      return false;
  }
  if (!require(detail::in_element_range<T>(q.input_zero_point) && detail::in_element_range<T>(q.output_zero_point),
               errc::invalid_argument, "conv requant: input/output zero point outside the element range") ||
      !require(detail::in_element_range<T>(q.clamp.min) && detail::in_element_range<T>(q.clamp.max) &&
                   q.clamp.min <= q.clamp.max,
               errc::invalid_argument, "conv requant: clamp must be a non-empty range inside the element range"))
    return false;
  for (const requant_scale& s : q.scales)
    if (!require(detail::shifts_fit(s, R), errc::invalid_argument, "conv requant: scale shift outside its domain"))
      return false;
  return true;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
