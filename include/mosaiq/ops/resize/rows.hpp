// What every target's resize rows share (ops/resize.hpp, ops/resize/simd.hpp): where the views sit in their images,
// one output row of a 2x bilinear upsample, and the 2x kernels' scalar twin.
#pragma once

#include <algorithm>
#include <cstddef>

#include "mosaiq/core/resize_mode.hpp"
#include "mosaiq/ops/resize/widths.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace detail::upsample {

/// Where the views sit in their images: `in` holds input rows [in_first, in_first + in.height()) of an image of
/// `in_height` rows, `out` output rows [out_first, out_first + out.height()) of an image of `out_height` rows. Whole
/// maps start at row 0; a band of a banded network reads a window of rows (run_rows_window).
struct row_frame {
  int in_first = 0, in_height = 0, out_first = 0, out_height = 0;
  template <class In, class Out>
  static row_frame whole(const In& in, const Out& out) noexcept {
    return {0, in.height(), 0, out.height()};
  }
};

/// One output row of a 2x bilinear upsample: the input row it is nearest to, the row it blends with (the same row
/// for legacy even rows and at clamped edges), and where it goes.
struct row_pass {
  const byte* near;
  const byte* far;
  byte* out;
  int width;  // input pixels
  int channels;
  std::ptrdiff_t in_pixel;   // bytes between input pixels
  std::ptrdiff_t out_pixel;  // bytes between output pixels
};

/// The scalar twin: output pixels 2x, 2x+1 for input pixels [x_begin, x_end), channels [c_begin, c_end).
template <resize_mode Mode, byte Flip>
inline void scalar_pixels(const row_pass& r, int x_begin, int x_end, int c_begin, int c_end) noexcept {
  for (int x = x_begin; x < x_end; ++x) {
    const std::ptrdiff_t left = std::max(x - 1, 0) * r.in_pixel, center = x * r.in_pixel;
    const std::ptrdiff_t right = std::min(x + 1, r.width - 1) * r.in_pixel;
    byte* even = r.out + 2 * x * r.out_pixel;
    byte* odd = even + r.out_pixel;
    const auto near = [&](std::ptrdiff_t at, int c) -> int { return r.near[at + c] ^ Flip; };
    const auto far = [&](std::ptrdiff_t at, int c) -> int { return r.far[at + c] ^ Flip; };
    for (int c = c_begin; c < c_end; ++c) {
      if constexpr (Mode == resize_mode::half_pixel) {
        const int v_left = 3 * near(left, c) + far(left, c);
        const int v_center = 3 * near(center, c) + far(center, c);
        const int v_right = 3 * near(right, c) + far(right, c);
        even[c] = static_cast<byte>(((3 * v_center + v_left + 8) >> 4) ^ Flip);
        odd[c] = static_cast<byte>(((3 * v_center + v_right + 8) >> 4) ^ Flip);
      } else {
        const int a = near(center, c), b = near(right, c), below = far(center, c), diagonal = far(right, c);
        even[c] = static_cast<byte>(((a + below + 1) >> 1) ^ Flip);
        odd[c] = static_cast<byte>(((a + b + below + diagonal + 2) >> 2) ^ Flip);
      }
    }
  }
}

}  // namespace detail::upsample
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
