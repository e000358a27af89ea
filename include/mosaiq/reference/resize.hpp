// Reference resize ops (bilinear and nearest neighbour) for NHWC u8, i8 and float: plain scalar loops, the oracle
// the SIMD kernels are tested against; the output size is the output view's. TFLite requires input and output to
// share quantization ("input and outputs must all have same scale/zero_point") and rejects other models; here the
// overloads without quantization arguments are that case, and the overloads taking a `requantization` accept
// different ones:
//   out = requantize(resize(in))   per element, where resize(in) is the equal-quantization result (the interpolated
//   value rounded in the input's 8-bit domain, below) and requantize is TFLite's QUANTIZE (requantize) kernel:
//   clamp(zp_out + MultiplyByQuantizedMultiplier(q - zp_in, QuantizeMultiplier(s_in / s_out))), ties away from zero.
// So the result is TFLite RESIZE_* followed by TFLite QUANTIZE, bit for bit; equal parameters give resize(in) itself.
// Parameters that cannot be honoured (a non-finite or non-positive scale, a ratio s_in / s_out whose multiplier
// falls outside TFLite's range: shift above 30 or below -31) are errc::invalid_argument.
//
// Which 8-bit bilinear rounding is the default, and why:
// - u8: `resize_bilinear` is TFLite's current uint8 kernel (its reference and optimized versions are the same math):
//   float32 coordinates and weights, the four products summed, + 0.5f, truncated. That sum + 0.5f is never negative,
//   so the truncation is floor(sum + 0.5f): round half up.
// - i8: `resize_bilinear` is the same float32 arithmetic finished with floor(sum + 0.5f), so negative values round
//   half up too (TFLite's uint8 cast applied to int8 would truncate them toward zero). TFLite's own int8 kernel is a
//   different, integer algorithm (Q10 positions from a rounded scale); it is kept as `resize_bilinear_tflite_int8`.
//   Its default build rounds ties away from zero, one below half-up on negative ties (3% of 2x half-pixel outputs);
//   built with TFLITE_SINGLE_ROUNDING it rounds half up.
// - Why: at 2x (any power-of-two ratio) every float32 weight and product is exact, so both element types reduce to
//   round-half-up of the exact rationals, i.e. the closed forms
//     legacy: a, (a+b+1)>>1, (a+b+c+d+2)>>2;   half-pixel: (9n+3h+3v+d+8)>>4, edges replicated,
//   which are bit-identical to TFLite uint8, XNNPACK qu8 and qs8, and TFLite int8 with single rounding. One definition
//   for u8 and i8 lets one SIMD kernel serve both. At other ratios the float path stays within 1 LSB of the exact
//   value, while the Q10 path drifts by up to tens of LSB (its scale is rounded to 1/1024).
// - Every float32 operation is rounded on its own (no FMA), whatever the target: that is TFLite as x86-64 builds it.
//   A TFLite build that contracts (clang fuses within an expression on aarch64) can differ in rare near-ties.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/resize_mode.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

/// Element types the resize ops take: the quantized ones and float.
template <class T>
concept resize_element = quantized_element<T> || std::same_as<T, float>;

namespace detail {

/// Rounds a float32 result to storage. TFLite's uint8 result depends on every float32 rounding, and GCC fuses a
/// multiply with the add that uses it into an FMA (by default in C++, at -O2, on FMA targets, even across
/// statements), which would make the reference differ between -mfma / aarch64 builds and plain x86-64.
inline float unfused(float value) noexcept {
  volatile float stored = value;
  return stored;
}

template <class T>
bool check_resize_views(const tensor_view<const T>& in, const tensor_view<T>& out) {
  if (!check_view(in, "resize: invalid input view") || !check_view(out, "resize: invalid output view")) return false;
  if (!require(in.batch() == out.batch() && in.channels() == out.channels(), errc::shape_mismatch,
               "resize: input and output must have the same batch and channel count"))
    return false;
  return require(out.height() == 0 || out.width() == 0 || (in.height() > 0 && in.width() > 0), errc::invalid_argument,
                 "resize: a non-empty output needs a non-empty input");
}

/// TFLite's float32 scale of one axis: in/out, or (in-1)/(out-1) for align corners with more than one output.
inline float float_axis_scale(int in_size, int out_size, resize_mode mode) noexcept {
  if (mode == resize_mode::align_corners && out_size > 1)
    return static_cast<float>(in_size - 1) / static_cast<float>(out_size - 1);
  return static_cast<float>(in_size) / static_cast<float>(out_size);
}

/// The two input pixels one output index reads along an axis, with their float32 weights.
struct float_tap {
  int lower = 0;
  int upper = 0;
  float lower_weight = 1.0f;
  float upper_weight = 0.0f;
};

/// TFLite's ComputeInterpolationValues. The weight `position - lower` is not clamped: at a half-pixel border it is
/// negative, but there lower == upper and the weights still sum to one. Clamping `lower` to in-1 changes nothing
/// TFLite computes in bounds; it only keeps absurd ratios (out > 2^23) from reading past the edge.
inline float_tap float_axis_tap(int o, float scale, resize_mode mode, int in_size) noexcept {
  const float position = mode == resize_mode::half_pixel ? unfused((static_cast<float>(o) + 0.5f) * scale) - 0.5f
                                                         : unfused(static_cast<float>(o) * scale);
  const int lower = std::min(std::max(static_cast<int>(std::floor(position)), 0), in_size - 1);
  const int upper = std::min(static_cast<int>(std::ceil(position)), in_size - 1);
  const float upper_weight = position - static_cast<float>(lower);
  return {lower, upper, 1.0f - upper_weight, upper_weight};
}

/// TFLite's float interpolation: each product in TFLite's order (value * y weight * x weight), rounded to float32,
/// then summed left to right.
inline float float_interpolate(float top_left, float bottom_left, float top_right, float bottom_right,
                               const float_tap& y, const float_tap& x) noexcept {
  const float p00 = unfused(top_left * y.lower_weight * x.lower_weight);
  const float p10 = unfused(bottom_left * y.upper_weight * x.lower_weight);
  const float p01 = unfused(top_right * y.lower_weight * x.upper_weight);
  const float p11 = unfused(bottom_right * y.upper_weight * x.upper_weight);
  return p00 + p10 + p01 + p11;
}

/// float: the sum as is. 8-bit: floor(sum + 0.5f), which for u8 equals TFLite's static_cast(sum + 0.5f) because the
/// sum is never below -0.5 there. The clamp never binds for in-range inputs; it keeps the cast defined.
template <resize_element T>
T finish_float_sum(float sum) noexcept {
  if constexpr (std::same_as<T, float>) {
    return sum;
  } else {
    const float rounded = std::floor(sum + 0.5f);
    const float clamped =
        std::clamp(rounded, static_cast<float>(element_traits<T>::min), static_cast<float>(element_traits<T>::max));
    return static_cast<T>(static_cast<std::int32_t>(clamped));
  }
}

template <resize_element T>
void resize_bilinear_float_path(const tensor_view<const T>& in, const tensor_view<T>& out, resize_mode mode) {
  if (!check_resize_views(in, out)) return;
  const float scale_y = float_axis_scale(in.height(), out.height(), mode);
  const float scale_x = float_axis_scale(in.width(), out.width(), mode);
  for (int n = 0; n < out.batch(); ++n) {
    for (int y = 0; y < out.height(); ++y) {
      const float_tap tap_y = float_axis_tap(y, scale_y, mode, in.height());
      for (int x = 0; x < out.width(); ++x) {
        const float_tap tap_x = float_axis_tap(x, scale_x, mode, in.width());
        const T* top_left = in.pixel(n, tap_y.lower, tap_x.lower);
        const T* bottom_left = in.pixel(n, tap_y.upper, tap_x.lower);
        const T* top_right = in.pixel(n, tap_y.lower, tap_x.upper);
        const T* bottom_right = in.pixel(n, tap_y.upper, tap_x.upper);
        T* result = out.pixel(n, y, x);
        for (int c = 0; c < out.channels(); ++c) {
          const float sum =
              float_interpolate(static_cast<float>(top_left[c]), static_cast<float>(bottom_left[c]),
                                static_cast<float>(top_right[c]), static_cast<float>(bottom_right[c]), tap_y, tap_x);
          result[c] = finish_float_sum<T>(sum);
        }
      }
    }
  }
}

/// TFLite's Q10 scale (ResizeBilinearInteger): 1024 * in / out rounded to nearest, or 1024 * (in-1) / (out-1).
inline std::int64_t q10_axis_scale(int in_size, int out_size, resize_mode mode) noexcept {
  if (mode == resize_mode::align_corners && out_size > 1)
    return (std::int64_t{1024} * (in_size - 1) + (out_size - 1) / 2) / (out_size - 1);
  return (std::int64_t{1024} * in_size + out_size / 2) / out_size;
}

/// The two input pixels one output index reads, and the weight of the upper one in 1/1024 (the lower one's is
/// 1024 - upper_weight).
struct q10_tap {
  int lower = 0;
  int upper = 0;
  std::int64_t upper_weight = 0;
};

/// TFLite's ComputeInterpolationValuesInteger: C division (toward zero) for the lower index. Clamping `lower` to in-1
/// is ours: TFLite reads past the edge when the rounded scale pushes a position beyond the last pixel (e.g. 1 -> 95);
/// here that pixel is replicated, since lower == upper then and the weights sum to 1024.
inline q10_tap q10_axis_tap(int o, std::int64_t scale10, resize_mode mode, int in_size) noexcept {
  const std::int64_t position = mode == resize_mode::half_pixel ? o * scale10 + scale10 / 2 - 512 : o * scale10;
  const int lower = static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(position / 1024, 0), in_size - 1));
  const int upper = static_cast<int>(std::min<std::int64_t>((position + 1023) / 1024, in_size - 1));
  return {lower, upper, position - 1024 * std::int64_t{lower}};
}

/// A Q20 accumulator to an integer: TFLite's default build rounds half away from zero, TFLITE_SINGLE_ROUNDING half up.
template <rounding Mode>
constexpr std::int64_t round_q20(std::int64_t acc) noexcept {
  constexpr std::int64_t half = std::int64_t{1} << 19;
  if constexpr (Mode == rounding::tflite_reference)
    return (acc + (acc > 0 ? half : -half)) / (std::int64_t{1} << 20);
  else
    return (acc + half) >> 20;
}

}  // namespace detail

/// Requantization of 8-bit values from one quantization to another: TFLite's QUANTIZE kernel (Requantize) with the
/// multiplier QuantizeMultiplier(input scale / output scale). Built at load time.
template <quantized_element T>
class requantization {
 public:
  /// Equal parameters: the identity.
  requantization() = default;
  /// errc::invalid_argument (and valid() is false) unless both scales are finite and positive and the ratio's
  /// multiplier is inside TFLite's range.
  requantization(quant_params input, quant_params output) : input_(input), output_(output) {
    const double ratio = static_cast<double>(input.scale) / static_cast<double>(output.scale);
    const bool finite = std::isfinite(input.scale) && std::isfinite(output.scale) && input.scale > 0.0f &&
                        output.scale > 0.0f && std::isfinite(ratio);
    const quantized_multiplier multiplier = finite ? quantize_multiplier(ratio) : quantized_multiplier{};
    valid_ = require(finite && multiplier.multiplier != 0 && is_valid_multiplier(multiplier), errc::invalid_argument,
                     "requantization: scales must be finite and positive, and input / output scale a multiplier "
                     "TFLite can represent");
    if (valid_) scale_ = prepare_scale<rounding::tflite_reference>(multiplier);
  }

  bool valid() const noexcept { return valid_; }
  /// Equal parameters: the resize's own result is kept (no requantization step runs).
  bool identity() const noexcept { return input_ == output_; }
  quant_params input() const noexcept { return input_; }
  quant_params output() const noexcept { return output_; }

  T operator()(T q) const noexcept {
    if (identity()) return q;
    return requantize<rounding::tflite_reference, T>(static_cast<std::int32_t>(q) - input_.zero_point, scale_,
                                                     output_.zero_point, element_traits<T>::min,
                                                     element_traits<T>::max);
  }

 private:
  quant_params input_{}, output_{};
  requant_scale scale_{};
  bool valid_ = true;
};

namespace detail {

/// Applies `requant` to every element of `out` after `resize` wrote it; misuse leaves `out` untouched.
template <quantized_element T, class Resize>
void resize_then_requantize(const tensor_view<const T>& in, const tensor_view<T>& out, const requantization<T>& requant,
                            Resize resize) {
  if (!require(requant.valid(), errc::invalid_argument, "resize: the requantization was built from invalid params"))
    return;
  if (!check_resize_views(in, out)) return;
  resize();
  if (requant.identity()) return;
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x) {
        T* result = out.pixel(n, y, x);
        for (int c = 0; c < out.channels(); ++c) result[c] = requant(result[c]);
      }
}

}  // namespace detail

/// Bilinear resize of u8 or i8 (rounding: see the top of this file), output size from `out`.
/// u8 is bit-exact with TFLite's uint8 RESIZE_BILINEAR computed without FMA contraction.
template <quantized_element T>
void resize_bilinear(std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out, resize_mode mode) {
  detail::resize_bilinear_float_path<T>(in, out, mode);
}

/// Bilinear resize from `requant.input()` to `requant.output()` quantization: resize_bilinear, then requantized
/// (see the top of this file).
template <quantized_element T>
void resize_bilinear(std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out, resize_mode mode,
                     const requantization<T>& requant) {
  detail::resize_then_requantize<T>(in, out, requant, [&] { resize_bilinear<T>(in, out, mode); });
}

/// TFLite's float reference RESIZE_BILINEAR (float32 weights, no FMA contraction).
inline void resize_bilinear(tensor_view<const float> in, tensor_view<float> out, resize_mode mode) {
  detail::resize_bilinear_float_path<float>(in, out, mode);
}

namespace detail {

/// TFLite's reference_ops::ResizeBilinearInteger<T> for T = int8 or int16: Q10 positions from a rounded scale, the
/// four taps weighted in Q20 in int64, rounded by `Mode` (round_q20). The result is a convex combination of the taps,
/// so it always fits T. The views by value: an 8-bit store may alias any object.
template <rounding Mode, class T>
void resize_bilinear_q10(tensor_view<const T> in, tensor_view<T> out, resize_mode mode) {
  if (!check_resize_views(in, out)) return;
  const std::int64_t scale_y = q10_axis_scale(in.height(), out.height(), mode);
  const std::int64_t scale_x = q10_axis_scale(in.width(), out.width(), mode);
  for (int n = 0; n < out.batch(); ++n) {
    for (int y = 0; y < out.height(); ++y) {
      const q10_tap tap_y = q10_axis_tap(y, scale_y, mode, in.height());
      const std::int64_t wy1 = tap_y.upper_weight, wy0 = 1024 - wy1;
      for (int x = 0; x < out.width(); ++x) {
        const q10_tap tap_x = q10_axis_tap(x, scale_x, mode, in.width());
        const std::int64_t wx1 = tap_x.upper_weight, wx0 = 1024 - wx1;
        const T* top_left = in.pixel(n, tap_y.lower, tap_x.lower);
        const T* bottom_left = in.pixel(n, tap_y.upper, tap_x.lower);
        const T* top_right = in.pixel(n, tap_y.lower, tap_x.upper);
        const T* bottom_right = in.pixel(n, tap_y.upper, tap_x.upper);
        T* result = out.pixel(n, y, x);
        for (int c = 0; c < out.channels(); ++c) {
          const std::int64_t acc = top_left[c] * wy0 * wx0 + bottom_left[c] * wy1 * wx0 + top_right[c] * wy0 * wx1 +
                                   bottom_right[c] * wy1 * wx1;
          result[c] = static_cast<T>(round_q20<Mode>(acc));
        }
      }
    }
  }
}

}  // namespace detail

/// TFLite's int8 RESIZE_BILINEAR (reference_ops::ResizeBilinearInteger, also what its optimized int8 kernel runs):
/// Q10 positions from a rounded scale, Q20 accumulation. `rounding::tflite_reference` is TFLite's default build (ties
/// away from zero); `rounding::single_round` is TFLITE_SINGLE_ROUNDING (ties up, identical to XNNPACK qs8 at 2x).
template <rounding Mode = rounding::tflite_reference>
void resize_bilinear_tflite_int8(tensor_view<const i8> in, tensor_view<i8> out, resize_mode mode) {
  detail::resize_bilinear_q10<Mode, i8>(in, out, mode);
}

/// TFLite's GetNearestNeighbor: float32 scale, floor((o + offset) * scale) with offset 0.5 for half-pixel, or
/// round half away from zero (TfLiteRound) of o * scale for align corners; then at most in-1 and at least 0.
inline int nearest_source_index(int o, int in_size, int out_size, resize_mode mode) noexcept {
  const float scale = detail::float_axis_scale(in_size, out_size, mode);
  const float offset = mode == resize_mode::half_pixel ? 0.5f : 0.0f;
  const float position = (static_cast<float>(o) + offset) * scale;
  const float index = mode == resize_mode::align_corners ? std::round(position) : std::floor(position);
  return std::max(std::min(static_cast<int>(index), in_size - 1), 0);
}

/// Nearest-neighbour resize (TFLite RESIZE_NEAREST_NEIGHBOR semantics), output size from `out`.
template <resize_element T>
void resize_nearest(std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out, resize_mode mode) {
  if (!detail::check_resize_views(in, out)) return;
  for (int n = 0; n < out.batch(); ++n) {
    for (int y = 0; y < out.height(); ++y) {
      const int source_y = nearest_source_index(y, in.height(), out.height(), mode);
      for (int x = 0; x < out.width(); ++x) {
        const T* source = in.pixel(n, source_y, nearest_source_index(x, in.width(), out.width(), mode));
        std::copy(source, source + out.channels(), out.pixel(n, y, x));
      }
    }
  }
}

/// Nearest-neighbour resize from `requant.input()` to `requant.output()` quantization: each output is the requantized
/// input pixel it replicates.
template <quantized_element T>
void resize_nearest(std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out, resize_mode mode,
                    const requantization<T>& requant) {
  detail::resize_then_requantize<T>(in, out, requant, [&] { resize_nearest<T>(in, out, mode); });
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
