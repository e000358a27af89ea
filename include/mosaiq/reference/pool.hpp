// Reference pooling: average and max pooling over windows (TFLite AVERAGE_POOL_2D / MAX_POOL_2D reference kernels)
// and global average pooling (TFLite MEAN over height and width with keep_dims, as ASPP image pooling exports it),
// with float twins. Plain scalar loops: these are the oracles the SIMD kernels in ops/ are proven equal to.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

/// Window, stride, padding and fused activation of a pooling op (dilation is always 1, as in TFLite).
struct pool_params {
  hw kernel;
  hw stride{1, 1};
  padding pad = padding::valid();
  activation act = activation::none;
  friend constexpr bool operator==(const pool_params&, const pool_params&) = default;
};

namespace detail {

inline bool is_usable_pool_scale(float scale) noexcept { return std::isfinite(scale) && scale > 0.0f; }

/// The taps of one output pixel that lie inside the image, as half-open input ranges. Taps in the padding are not
/// part of the window at all: they add nothing and are not counted (TFLite's filter_x_start/filter_x_end clipping).
struct pool_window {
  int y_begin = 0, y_end = 0, x_begin = 0, x_end = 0;
  constexpr int taps() const noexcept { return (y_end - y_begin) * (x_end - x_begin); }
};

constexpr pool_window window_at(const window_geometry& geometry, const pool_params& params, int in_height, int in_width,
                                int out_y, int out_x) noexcept {
  const int origin_y = out_y * params.stride.h - geometry.y.pad_before;
  const int origin_x = out_x * params.stride.w - geometry.x.pad_before;
  return {std::max(origin_y, 0), std::min(origin_y + params.kernel.h, in_height), std::max(origin_x, 0),
          std::min(origin_x + params.kernel.w, in_width)};
}

/// Whether the first and the last window of an axis overlap the image; the ones between then do too. SAME and
/// VALID always satisfy this; explicit pads as large as the kernel do not.
constexpr bool every_window_touches_image(int in, int kernel, int stride, axis_geometry axis) noexcept {
  if (axis.output == 0) return true;
  const int first_origin = -axis.pad_before;
  const int last_origin = (axis.output - 1) * stride - axis.pad_before;
  return first_origin + kernel > 0 && last_origin < in;
}

/// Validates the views and the config of a windowed pool; returns the resolved geometry, or nothing after reporting.
template <class In, class Out>
std::optional<window_geometry> resolve_pool(const In& in, const Out& out, const pool_params& params) {
  if (!check_view(in, "pool: input") || !check_view(out, "pool: output")) return std::nullopt;
  if (!require(is_valid_window(params.kernel, params.stride, hw{1, 1}, params.pad), errc::invalid_argument,
               "pool: kernel and stride must be positive and pads non-negative"))
    return std::nullopt;
  const window_geometry geometry =
      resolve_window(in.height(), in.width(), params.kernel, params.stride, hw{1, 1}, params.pad);
  if (!require(out.dims() == shape{geometry.y.output, geometry.x.output, in.channels()} && out.batch() == in.batch(),
               errc::shape_mismatch, "pool: output shape differs from the one the window, stride and padding give"))
    return std::nullopt;
  if (!require(every_window_touches_image(in.height(), params.kernel.h, params.stride.h, geometry.y) &&
                   every_window_touches_image(in.width(), params.kernel.w, params.stride.w, geometry.x),
               errc::invalid_argument, "pool: explicit padding leaves a window with no input pixel"))
    return std::nullopt;
  return geometry;
}

/// The quantized clamp of the fused activation; the scale only matters when there is an activation.
template <quantized_element T>
std::optional<clamp_range> pool_clamp(activation act, quant_params quant) {
  if (!require(act == activation::none || is_usable_pool_scale(quant.scale), errc::invalid_argument,
               "pool: a fused activation needs a finite positive scale"))
    return std::nullopt;
  return activation_range<T>(act, quant);
}

/// Integer division rounded half away from zero, as TFLite's average pools write it:
/// (sum + count / 2) / count for positive sums, (sum - count / 2) / count otherwise (C++ division truncates).
constexpr std::int32_t rounded_divide(std::int32_t sum, std::int32_t count) noexcept {
  return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

/// The average pool's loop for an integer element type T (8 or 16 bits): the in-image taps of each window summed in
/// int32, divided by their count rounded half away from zero, clamped to `clamp`. Everything by value: an 8-bit
/// store may alias any object, so views held by reference would be reloaded after each one.
template <class T>
void average_windows(tensor_view<const T> in, tensor_view<T> out, window_geometry geometry, pool_params params,
                     clamp_range clamp) {
  for (int n = 0; n < out.batch(); ++n)
    for (int out_y = 0; out_y < out.height(); ++out_y)
      for (int out_x = 0; out_x < out.width(); ++out_x) {
        const pool_window window = window_at(geometry, params, in.height(), in.width(), out_y, out_x);
        for (int c = 0; c < out.channels(); ++c) {
          std::int32_t sum = 0;
          for (int y = window.y_begin; y < window.y_end; ++y)
            for (int x = window.x_begin; x < window.x_end; ++x) sum += static_cast<std::int32_t>(in(n, y, x, c));
          const std::int32_t average = rounded_divide(sum, window.taps());
          out(n, out_y, out_x, c) = static_cast<T>(std::clamp(average, clamp.min, clamp.max));
        }
      }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------------------------
// Average and max pooling
// ---------------------------------------------------------------------------------------------------------------

/// Average pool as TFLite's reference kernels (reference_ops::AveragePool for uint8,
/// reference_integer_ops::AveragePool for int8): the raw quantized values of the in-image taps are summed and divided
/// by the number of those taps, rounded half away from zero (uint8 sums are never negative, so its
/// (sum + n/2) / n is the same formula), then clamped by the fused activation. Input and output share `quant`
/// (TFLite requires equal quantization); it is only used for the activation's clamp. The output shape must be what
/// resolve_window gives for the config. On misuse nothing is written.
template <quantized_element T>
void average_pool(std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out, const pool_params& params,
                  quant_params quant) {
  const std::optional<window_geometry> geometry = detail::resolve_pool(in, out, params);
  if (!geometry) return;
  const std::optional<clamp_range> clamp = detail::pool_clamp<T>(params.act, quant);
  if (!clamp) return;
  detail::average_windows<T>(in, out, *geometry, params, *clamp);
}

/// Max pool as TFLite's reference kernels: the largest in-image tap, then the fused activation's clamp. Same
/// conventions as average_pool.
template <quantized_element T>
void max_pool(std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out, const pool_params& params,
              quant_params quant) {
  const std::optional<window_geometry> geometry = detail::resolve_pool(in, out, params);
  if (!geometry) return;
  const std::optional<clamp_range> clamp = detail::pool_clamp<T>(params.act, quant);
  if (!clamp) return;

  for (int n = 0; n < out.batch(); ++n)
    for (int out_y = 0; out_y < out.height(); ++out_y)
      for (int out_x = 0; out_x < out.width(); ++out_x) {
        const detail::pool_window window = detail::window_at(*geometry, params, in.height(), in.width(), out_y, out_x);
        for (int c = 0; c < out.channels(); ++c) {
          std::int32_t largest = element_traits<T>::min;
          for (int y = window.y_begin; y < window.y_end; ++y)
            for (int x = window.x_begin; x < window.x_end; ++x)
              largest = std::max(largest, static_cast<std::int32_t>(in(n, y, x, c)));
          out(n, out_y, out_x, c) = static_cast<T>(std::clamp(largest, clamp->min, clamp->max));
        }
      }
}

/// Float twin of average_pool: the float sum of the in-image taps divided by their count, then the activation.
inline void average_pool(tensor_view<const float> in, tensor_view<float> out, const pool_params& params) {
  const std::optional<window_geometry> geometry = detail::resolve_pool(in, out, params);
  if (!geometry) return;
  for (int n = 0; n < out.batch(); ++n)
    for (int out_y = 0; out_y < out.height(); ++out_y)
      for (int out_x = 0; out_x < out.width(); ++out_x) {
        const detail::pool_window window = detail::window_at(*geometry, params, in.height(), in.width(), out_y, out_x);
        for (int c = 0; c < out.channels(); ++c) {
          float total = 0.0f;
          for (int y = window.y_begin; y < window.y_end; ++y)
            for (int x = window.x_begin; x < window.x_end; ++x) total += in(n, y, x, c);
          out(n, out_y, out_x, c) = apply_activation(params.act, total / static_cast<float>(window.taps()));
        }
      }
}

/// Float twin of max_pool.
inline void max_pool(tensor_view<const float> in, tensor_view<float> out, const pool_params& params) {
  const std::optional<window_geometry> geometry = detail::resolve_pool(in, out, params);
  if (!geometry) return;
  for (int n = 0; n < out.batch(); ++n)
    for (int out_y = 0; out_y < out.height(); ++out_y)
      for (int out_x = 0; out_x < out.width(); ++out_x) {
        const detail::pool_window window = detail::window_at(*geometry, params, in.height(), in.width(), out_y, out_x);
        for (int c = 0; c < out.channels(); ++c) {
          float largest = std::numeric_limits<float>::lowest();
          for (int y = window.y_begin; y < window.y_end; ++y)
            for (int x = window.x_begin; x < window.x_end; ++x) largest = std::max(largest, in(n, y, x, c));
          out(n, out_y, out_x, c) = apply_activation(params.act, largest);
        }
      }
}

// ---------------------------------------------------------------------------------------------------------------
// Global average pooling (MEAN over height and width)
// ---------------------------------------------------------------------------------------------------------------

/// The integer recipe of TFLite's quantized MEAN (reduce.cc `PrepareMeanOrSum` + `reference_ops::QuantizedMeanOrSum`,
/// the path today's reference kernels take for int8, uint8 and int16 whatever the axes), one form for both types:
///   out = clamp(MultiplyByQuantizedMultiplier(sum(q) - zp_in * pixels, multiplier) + zp_out)
/// where multiplier = QuantizeMultiplier(double(s_in) / double(s_out)) with 1 / pixels folded in
/// (detail::fold_mean_count). Older TFLite releases used other forms for 4-D means over {1, 2} (see
/// docs/decisions.md, "8-bit MEAN against TFLite's QuantizedMeanOrSum"); they differ on some inputs.
struct global_pool_params {
  quantized_multiplier multiplier{};
  std::int32_t input_offset = 0;
  std::int32_t output_offset = 0;
  int pixel_count = 0;
  /// Only make_global_average_pool_params sets this, and only when every check passed.
  bool valid = false;
  friend constexpr bool operator==(const global_pool_params&, const global_pool_params&) = default;
};

/// Largest height * width whose uint8 sum (255 per pixel) still fits the int32 accumulator TFLite uses.
inline constexpr int max_global_pool_pixels = std::numeric_limits<std::int32_t>::max() / 256;

namespace detail {

/// QuantizedMeanOrSum's fold of 1 / count into (multiplier, shift): k = floor(log2(count)), capped at 32 and at
/// 31 + shift (the result's shift stays >= -31; the ratio's shift must be >= -31 already); multiplier (M << k) / count
/// truncated, shift - k. The result is not renormalized: for a count that is not a power of two the multiplier lies in
/// (M / 2, M).
constexpr quantized_multiplier fold_mean_count(quantized_multiplier ratio, int count) noexcept {
  const int k = std::min({static_cast<int>(std::bit_width(static_cast<unsigned>(count))) - 1, 32, 31 + ratio.shift});
  return {static_cast<std::int32_t>((std::int64_t{ratio.multiplier} << k) / count), ratio.shift - k};
}

}  // namespace detail

/// Builds the MEAN recipe above for `pixel_count` = height * width of the input. R matters because TFLite's
/// QuantizeMultiplier saturates large shifts in a TFLITE_SINGLE_ROUNDING build. Reports invalid_argument and
/// returns invalid params for unusable scales or zero points, a pixel count outside [1, max_global_pool_pixels], or
/// s_in / s_out outside the multiplier domain both rounding modes define.
template <rounding R, quantized_element T>
global_pool_params make_global_average_pool_params(quant_params in, quant_params out, int pixel_count) {
  if (!require(detail::is_usable_pool_scale(in.scale) && detail::is_usable_pool_scale(out.scale),
               errc::invalid_argument, "global_average_pool: scales must be finite and positive"))
    return {};
  if (!require(in.zero_point >= element_traits<T>::min && in.zero_point <= element_traits<T>::max &&
                   out.zero_point >= element_traits<T>::min && out.zero_point <= element_traits<T>::max,
               errc::invalid_argument, "global_average_pool: a zero point does not fit the element type"))
    return {};
  if (!require(pixel_count >= 1 && pixel_count <= max_global_pool_pixels, errc::invalid_argument,
               "global_average_pool: height * width must be in [1, max_global_pool_pixels]"))
    return {};
  const quantized_multiplier ratio =
      quantize_multiplier<R>(static_cast<double>(in.scale) / static_cast<double>(out.scale));
  if (!require(is_valid_multiplier(ratio), errc::invalid_argument,
               "global_average_pool: scale ratio outside the multiplier domain"))
    return {};
  return {.multiplier = detail::fold_mean_count(ratio, pixel_count),
          .input_offset = in.zero_point,
          .output_offset = out.zero_point,
          .pixel_count = pixel_count,
          .valid = true};
}

/// Mean over height and width of every channel: out has shape {1, 1, C} and in's batch. Follows TFLite's MEAN with
/// keep_dims over axes {1, 2} as today's reference kernels compute it, see global_pool_params; in_quant and
/// out_quant may differ (the op then requantizes). R chooses the MultiplyByQuantizedMultiplier rounding
/// (tflite_reference: double rounding; single_round: a TFLITE_SINGLE_ROUNDING build). No fused activation (MEAN has
/// none). On misuse nothing is written.
template <rounding R, quantized_element T>
void global_average_pool(std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out, quant_params in_quant,
                         quant_params out_quant) {
  if (!check_view(in, "global_average_pool: input") || !check_view(out, "global_average_pool: output")) return;
  if (!require(out.dims() == shape{1, 1, in.channels()} && out.batch() == in.batch(), errc::shape_mismatch,
               "global_average_pool: output must be 1 x 1 x channels with the input's batch"))
    return;
  const std::int64_t pixels = std::int64_t{in.height()} * in.width();
  if (!require(pixels >= 1 && pixels <= max_global_pool_pixels, errc::invalid_argument,
               "global_average_pool: height * width must be in [1, max_global_pool_pixels]"))
    return;
  const global_pool_params params =
      make_global_average_pool_params<R, T>(in_quant, out_quant, static_cast<int>(pixels));
  if (!params.valid) return;  // the builder has reported why

  const requant_scale scale = prepare_scale<R>(params.multiplier);
  for (int n = 0; n < in.batch(); ++n)
    for (int c = 0; c < in.channels(); ++c) {
      std::int32_t sum = 0;
      for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x) sum += static_cast<std::int32_t>(in(n, y, x, c)) - params.input_offset;
      out(n, 0, 0, c) =
          requantize<R, T>(sum, scale, params.output_offset, element_traits<T>::min, element_traits<T>::max);
    }
}

/// Same-quantization form: input and output share `quant`.
template <rounding R, quantized_element T>
void global_average_pool(std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out, quant_params quant) {
  global_average_pool<R, T>(in, out, quant, quant);
}

/// Float twin, as TFLite's float Mean4D: the float sum over rows then columns, divided by height * width.
inline void global_average_pool(tensor_view<const float> in, tensor_view<float> out) {
  if (!check_view(in, "global_average_pool: input") || !check_view(out, "global_average_pool: output")) return;
  if (!require(out.dims() == shape{1, 1, in.channels()} && out.batch() == in.batch(), errc::shape_mismatch,
               "global_average_pool: output must be 1 x 1 x channels with the input's batch"))
    return;
  if (!require(in.height() >= 1 && in.width() >= 1, errc::invalid_argument,
               "global_average_pool: the input has no pixel"))
    return;
  for (int n = 0; n < in.batch(); ++n)
    for (int c = 0; c < in.channels(); ++c) {
      float total = 0.0f;
      for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x) total += in(n, y, x, c);
      out(n, 0, 0, c) = total / static_cast<float>(in.width() * in.height());
    }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
