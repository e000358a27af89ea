// Output-size and padding formulas (TFLite padding.h) for SAME, VALID and explicit padding, with
// stride and dilation together.
#pragma once

#include "mosaiq/core/error.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// A pair of extents (height, width) for kernels, strides, dilations and tiles:
/// `.kernel = {3, 3}`.
struct hw {
  int h = 1;
  int w = 1;
  friend constexpr bool operator==(const hw&, const hw&) = default;
};

enum class padding_mode { same, valid, explicit_pads };

/// Padding as a compile-time config value: `padding::same()`, `padding::valid()`,
/// `padding::explicit_pads(top, bottom, left, right)`.
struct padding {
  padding_mode mode = padding_mode::same;
  int top = 0, bottom = 0, left = 0, right = 0;

  static constexpr padding same() noexcept { return {padding_mode::same}; }
  static constexpr padding valid() noexcept { return {padding_mode::valid}; }
  static constexpr padding explicit_pads(int top, int bottom, int left, int right) noexcept {
    return {padding_mode::explicit_pads, top, bottom, left, right};
  }
  friend constexpr bool operator==(const padding&, const padding&) = default;
};

constexpr int effective_kernel_extent(int kernel, int dilation) noexcept { return (kernel - 1) * dilation + 1; }

/// One spatial axis after padding is resolved.
struct axis_geometry {
  int output = 0;      ///< output extent (0 when the window does not fit)
  int pad_before = 0;  ///< leading pad the kernel sees
  int pad_after = 0;   ///< trailing pad (SAME puts the odd pixel here, as TensorFlow does)
  friend constexpr bool operator==(const axis_geometry&, const axis_geometry&) = default;
};

/// VALID: ceil((in - eff_k + 1) / s); SAME: ceil(in / s) with pad_total = max((out-1)*s + eff_k - in, 0),
/// pad_before = pad_total / 2; explicit: floor((in + before + after - eff_k) / s) + 1.
constexpr axis_geometry resolve_axis(int in, int kernel, int stride, int dilation, padding_mode mode,
                                     int explicit_before = 0, int explicit_after = 0) noexcept {
  const int eff = effective_kernel_extent(kernel, dilation);
  switch (mode) {
    case padding_mode::valid: {
      const int out = in >= eff ? (in - eff + stride) / stride : 0;
      return {out, 0, 0};
    }
    case padding_mode::same: {
      const int out = (in + stride - 1) / stride;
      const int needed = (out - 1) * stride + eff - in;
      const int total = needed > 0 ? needed : 0;
      return {out, total / 2, total - total / 2};
    }
    case padding_mode::explicit_pads: {
      const int span = in + explicit_before + explicit_after;
      const int out = span >= eff ? (span - eff) / stride + 1 : 0;
      return {out, explicit_before, explicit_after};
    }
  }
  return {};
}

/// Both spatial axes of a windowed op (conv, depthwise, pooling).
struct window_geometry {
  axis_geometry y, x;
  friend constexpr bool operator==(const window_geometry&, const window_geometry&) = default;
};

constexpr window_geometry resolve_window(int in_h, int in_w, hw kernel, hw stride, hw dilation, padding pad) noexcept {
  return {resolve_axis(in_h, kernel.h, stride.h, dilation.h, pad.mode, pad.top, pad.bottom),
          resolve_axis(in_w, kernel.w, stride.w, dilation.w, pad.mode, pad.left, pad.right)};
}

/// Config validity shared by every windowed op; used in static_asserts and runtime checks.
constexpr bool is_valid_window(hw kernel, hw stride, hw dilation, padding pad) noexcept {
  return kernel.h >= 1 && kernel.w >= 1 && stride.h >= 1 && stride.w >= 1 && dilation.h >= 1 && dilation.w >= 1 &&
         pad.top >= 0 && pad.bottom >= 0 && pad.left >= 0 && pad.right >= 0;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
