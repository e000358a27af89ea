// 16x8 pooling, the vector path of every SIMD target (AVX2, AVX-512, NEON): the int32 sums of blocks of 16 int16
// channels over a window's in-image taps (simd/lanes.hpp's widening loads), then average pool's rounded division by
// the tap count or MEAN's multiplier, clamped to int16 before the narrowing store. Scalar builds have no lanes:
// they run the int16 references (reference/int16.hpp) through ops/pool16x8/scalar.hpp.
//
// Exactness. Sums: at most 65535 taps (average pool) or 65536 pixels (MEAN) of |q| <= 32768 stay in int32, as in
// TFLite. The average's division: lanes::rounded_divide computes floor((|sum| + d/2) / d) from a float estimate
// corrected by the exact int32 remainder, which is exact whenever the estimate is within one of the quotient. Here
// the quotient is at most 32768 (an average of int16 values) and the estimate carries three float roundings
// (numerator, 1/d, product: relative error below 2^-22), so it is within 32768 * 2^-22 < 1/128 of the quotient,
// for numerators up to 2^31 (beyond the 2^24 that 8-bit windows need). The tests check the extremes.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_SIMD

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/simd/lanes.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pool16::vector {

using lanes::reg;
using reference::detail::pool_window;

/// The first channel of each block of 16: every full block, then, when channels is no multiple of 16 but at least
/// 16, one block ending at the last channel (it overlaps the one before and stores the same values again). Fewer
/// than 16 channels make one block at 0 that reads and stores through zero-padded copies.
inline int block_start(int c, int channels) noexcept {
  return c + lanes::block <= channels ? c : channels - lanes::block;
}

/// acc = the int32 sums over `window` of the 16 channels from `channel` of image n (or of all channels, fewer than
/// 16, through a zero-padded copy of each tap).
[[gnu::always_inline]] inline void window_sums(const tensor_view<const i16>& in, int n, const pool_window& window,
                                               int channel, reg* acc) noexcept {
  for (int j = 0; j < lanes::regs; ++j) acc[j] = reg(0);
  const bool narrow = in.channels() < lanes::block;
  std::array<std::int16_t, lanes::block> padded{};
  for (int y = window.y_begin; y < window.y_end; ++y) {
    const i16* tap = in.pixel(n, y, window.x_begin) + channel;
    for (int x = window.x_begin; x < window.x_end; ++x, tap += in.pixel_stride()) {
      reg v[lanes::regs];
      if (narrow) {
        std::copy_n(tap, in.channels(), padded.begin());
        lanes::widen_16(padded.data(), v);
      } else {
        lanes::widen_16(tap, v);
      }
      for (int j = 0; j < lanes::regs; ++j) acc[j] += v[j];
    }
  }
}

/// Stores the block of 16 values at `channel` of out (only the channels that exist when there are fewer than 16).
[[gnu::always_inline]] inline void store_block(i16* out, int channel, int channels, const reg* values) noexcept {
  if (channels >= lanes::block) {
    lanes::narrow_16(out + channel, values);
    return;
  }
  std::array<std::int16_t, lanes::block> padded;
  lanes::narrow_16(padded.data(), values);
  std::copy_n(padded.begin(), channels, out);
}

/// finish(acc) turns the sums of one block into int16-range values, for every block of every output pixel of a pool
/// whose windows `window_of(out_y, out_x)` gives.
template <class WindowOf, class Finish>
[[gnu::always_inline]] inline void pool_blocks(const tensor_view<const i16>& in, const tensor_view<i16>& out,
                                               WindowOf window_of, Finish finish) noexcept {
  const int channels = in.channels();
  for (int n = 0; n < out.batch(); ++n)
    for (int out_y = 0; out_y < out.height(); ++out_y)
      for (int out_x = 0; out_x < out.width(); ++out_x) {
        const pool_window window = window_of(out_y, out_x);
        for (int c = 0; c < channels; c += lanes::block) {
          const int channel = channels < lanes::block ? 0 : block_start(c, channels);
          reg acc[lanes::regs];
          window_sums(in, n, window, channel, acc);
          finish(acc, window);
          store_block(out.pixel(n, out_y, out_x), channel, channels, acc);
        }
      }
}

/// reference::average_pool_16 on checked views: the sums divided by the window's tap count rounded half away from
/// zero, clamped to the activation's range.
inline void average_pool(const tensor_view<const i16>& in, const tensor_view<i16>& out,
                         const reference::pool_params& params, const window_geometry& geometry,
                         clamp_range clamp) noexcept {
  const reg lo(clamp.min), hi(clamp.max);
  int divisor_taps = 0;
  lanes::divisor_regs divisor = lanes::divisor_regs::of(1);
  const auto window_of = [&](int out_y, int out_x) {
    return reference::detail::window_at(geometry, params, in.height(), in.width(), out_y, out_x);
  };
  pool_blocks(in, out, window_of, [&](reg* acc, const pool_window& window) {
    if (window.taps() != divisor_taps) {  // the divisor's registers change only at the padded edges
      divisor_taps = window.taps();
      divisor = lanes::divisor_regs::of(divisor_taps);
    }
    for (int j = 0; j < lanes::regs; ++j)
      acc[j] = xsimd::min(xsimd::max(lanes::rounded_divide(acc[j], divisor), lo), hi);
  });
}

/// reference::mean_16<R> on checked views and params: the sums of the whole image times the folded multiplier,
/// clamped to int16.
template <rounding R>
void mean(const tensor_view<const i16>& in, const tensor_view<i16>& out, const reference::mean_params_16& p) noexcept {
  const lanes::scale_regs scale = lanes::scale_regs::of(prepare_scale<R>(p.multiplier));
  const reg lo(-32768), hi(32767);
  const pool_window whole{0, in.height(), 0, in.width()};
  pool_blocks(
      in, out, [&](int, int) { return whole; },
      [&](reg* acc, const pool_window&) {
        for (int j = 0; j < lanes::regs; ++j)
          acc[j] = xsimd::min(
              xsimd::max(lanes::multiply<R>(acc[j], scale.multiplier, scale.left_shift, scale.right_shift), lo), hi);
      });
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pool16::vector

/// The entry points a SIMD target runs (scalar builds: ops/pool16x8/scalar.hpp): the references' checks, then the
/// vector kernels.
namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pool16::native {

[[gnu::always_inline]] inline void average_pool(const tensor_view<const i16>& in, const tensor_view<i16>& out,
                                                const reference::pool_params& params, float scale) {
  const std::optional<reference::detail::average_pool_16_plan> plan =
      reference::detail::resolve_average_pool_16(in, out, params, scale);
  if (!plan) return;
  vector::average_pool(in, out, params, plan->geometry, plan->clamp);
}

template <rounding R>
[[gnu::always_inline]] inline void mean(const tensor_view<const i16>& in, const tensor_view<i16>& out,
                                        const reference::mean_params_16& params) {
  if (!reference::detail::check_mean_16<R>(in, out, params)) return;
  vector::mean<R>(in, out, params);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pool16::native

#endif  // MOSAIQ_TARGET_SIMD
