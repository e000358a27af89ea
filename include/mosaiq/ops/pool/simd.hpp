// Pooling, the vector path of every SIMD target: average and global pool on the lanes of simd/lanes.hpp (int32
// blocks of 16 channels), max pool on the target's byte vectors (ops/pool/x86.hpp, ops/pool/neon.hpp: bytes_wide,
// and a narrower `half` step where the target has one). Scalar builds run the reference ops (ops/pool.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/pool/dense_sums.hpp"
#include "mosaiq/ops/pool/neon.hpp"
#include "mosaiq/ops/pool/x86.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/simd/lanes.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

using reference::global_pool_params;
using reference::pool_params;

namespace detail::pooling {

/// Largest window the vector division takes: 4096 * 255 + 2048 stays below 2^24 (exact float numerators).
inline constexpr int max_vector_average_taps = 4096;
/// Largest window the vector sum takes: |q| <= 255 over this many taps stays below 2^31.
inline constexpr std::int64_t max_summed_average_taps = (std::int64_t{1} << 31) / 256;

// The vector path's entry points, declared for every target so that the branches of ops/pool.hpp that scalar builds
// discard name declared functions; defined below where MOSAIQ_TARGET_SIMD.
template <quantized_element T>
void max_windowed(const tensor_view<const T>& in, const tensor_view<T>& out, const pool_params& params,
                  const window_geometry& geometry, clamp_range clamp) noexcept;
template <quantized_element T>
void average_windowed(const tensor_view<const T>& in, const tensor_view<T>& out, const pool_params& params,
                      const window_geometry& geometry, clamp_range clamp) noexcept;
template <quantized_element T>
bool whole_map_average(const tensor_view<const T>& in, const tensor_view<T>& out, const pool_params& params,
                       const window_geometry& geometry, clamp_range clamp) noexcept;
template <rounding R, quantized_element T>
[[gnu::always_inline]] inline int global_average_channels(const tensor_view<const T>& in, int n,
                                                          std::int32_t offset_total, requant_scale scale,
                                                          const global_pool_params& params, T* target) noexcept;

#if MOSAIQ_TARGET_SIMD
/// The divisor of one window: in vector form up to max_vector_average_taps, otherwise the tap count for scalar
/// rounded divisions.
struct window_divisor {
  int taps = 1;
  lanes::divisor_regs regs = lanes::divisor_regs::of(1);
  bool vector() const noexcept { return taps <= max_vector_average_taps; }
  static window_divisor of(int taps) noexcept {
    return {taps, lanes::divisor_regs::of(std::min(taps, max_vector_average_taps))};
  }
};

/// Average pool's last steps on the int32 sums of one block of 16 channels: the rounded division by the tap count (in
/// vectors when VectorOnly or up to max_vector_average_taps, else per lane), the activation clamp, and the store of
/// `channels` (16 or fewer) values.
template <bool VectorOnly, quantized_element T>
[[gnu::always_inline]] inline void finish_average(lanes::reg* acc, T* out, int channels, const window_divisor& divisor,
                                                  lanes::reg lo, lanes::reg hi) noexcept {
  if (VectorOnly || divisor.vector()) {
    for (int j = 0; j < lanes::regs; ++j) acc[j] = lanes::rounded_divide(acc[j], divisor.regs);
  } else {
    alignas(64) std::int32_t sums[lanes::block];
    lanes::store(sums, acc);
    for (std::int32_t& v : sums) v = reference::detail::rounded_divide(v, divisor.taps);
    lanes::load(sums, acc);
  }
  for (int j = 0; j < lanes::regs; ++j) acc[j] = xsimd::min(xsimd::max(acc[j], lo), hi);
  if (channels < lanes::block) {
    T result[lanes::block];
    lanes::narrow<T>(result, acc);
    std::memcpy(out, result, static_cast<std::size_t>(channels) * sizeof(T));
  } else {
    lanes::narrow<T>(out, acc);
  }
}

/// Average pool: channels [c, c + 16) of one output pixel from the window's taps (summed in int32, divided exactly);
/// `in` points at channel c of pixel (y_begin, x_begin), `channels` = 16 or fewer (then the taps are copied into a
/// zero-padded block first). Rows and Cols > 0 fix the window at compile time (the full 2x2 and 3x3 windows: the taps
/// unrolled, the vector division only); 0 reads them at run time.
template <int Rows, int Cols, quantized_element T>
[[gnu::always_inline]] inline void window_block(const T* in, std::ptrdiff_t pixel, std::ptrdiff_t row, int rows,
                                                int cols, T* out, int channels, const window_divisor& divisor,
                                                lanes::reg lo, lanes::reg hi) noexcept {
  if constexpr (Rows > 0) {
    rows = Rows;
    cols = Cols;
  }
  lanes::reg acc[lanes::regs], tap[lanes::regs];
  const bool partial = channels < lanes::block;
  const auto load = [&](const T* p, lanes::reg* r) {
    if (partial) {
      T copy[lanes::block] = {};
      std::memcpy(copy, p, static_cast<std::size_t>(channels) * sizeof(T));
      lanes::widen<T>(copy, r);
    } else {
      lanes::widen<T>(p, r);
    }
  };
  load(in, acc);
  for (int y = 0; y < rows; ++y)
    for (int x = y == 0 ? 1 : 0; x < cols; ++x) {
      load(in + y * row + x * pixel, tap);
      for (int j = 0; j < lanes::regs; ++j) acc[j] += tap[j];
    }
  finish_average<(Rows > 0), T>(acc, out, channels, divisor, lo, hi);
}

/// Average pool: every channel of one output pixel, in blocks of 16 (window_block<Rows, Cols>).
template <int Rows, int Cols, quantized_element T>
[[gnu::always_inline]] inline void average_pixel(const T* first, std::ptrdiff_t pixel, std::ptrdiff_t row, int rows,
                                                 int cols, T* target, int channels, const window_divisor& divisor,
                                                 lanes::reg lo, lanes::reg hi) noexcept {
  int c = 0;
  for (; c + lanes::block <= channels; c += lanes::block)
    window_block<Rows, Cols, T>(first + c, pixel, row, rows, cols, target + c, lanes::block, divisor, lo, hi);
  if (c < channels) {
    // A partial last block after a full one runs as the block that ends at the last channel: it makes the channels
    // it overlaps again, the same values (pools never run in place), with no per-tap copy.
    const int last = channels >= lanes::block ? channels - lanes::block : c;
    window_block<Rows, Cols, T>(first + last, pixel, row, rows, cols, target + last, channels - last, divisor, lo, hi);
  }
}

template <quantized_element T>
void average_windowed(const tensor_view<const T>& in, const tensor_view<T>& out, const pool_params& params,
                      const window_geometry& geometry, clamp_range clamp) noexcept {
  const lanes::reg lo(clamp.min), hi(clamp.max);
  const int channels = out.channels();
  const std::ptrdiff_t pixel = in.pixel_stride(), row = in.row_stride();
  window_divisor divisor = window_divisor::of(1);
  for (int n = 0; n < out.batch(); ++n)
    for (int out_y = 0; out_y < out.height(); ++out_y)
      for (int out_x = 0; out_x < out.width(); ++out_x) {
        const reference::detail::pool_window w =
            reference::detail::window_at(geometry, params, in.height(), in.width(), out_y, out_x);
        if (w.taps() != divisor.taps) divisor = window_divisor::of(w.taps());  // only border windows change it
        const T* first = in.pixel(n, w.y_begin, w.x_begin);
        T* target = out.pixel(n, out_y, out_x);
        const int rows = w.y_end - w.y_begin, cols = w.x_end - w.x_begin;
        if (rows == 2 && cols == 2)
          average_pixel<2, 2, T>(first, pixel, row, rows, cols, target, channels, divisor, lo, hi);
        else if (rows == 3 && cols == 3)
          average_pixel<3, 3, T>(first, pixel, row, rows, cols, target, channels, divisor, lo, hi);
        else
          average_pixel<0, 0, T>(first, pixel, row, rows, cols, target, channels, divisor, lo, hi);
      }
}

/// Average pool whose one window is the whole map (the selfie models' squeeze pools: AVERAGE_POOL_2D with the map's
/// size as kernel): per image the channel sums of dense_sums, then finish_average by the pixel count. False, with
/// nothing written, where that does not apply (more than one output pixel, a window short of the map, a view that
/// is not dense, a channel count without a dense step): the caller runs average_windowed.
template <quantized_element T>
bool whole_map_average(const tensor_view<const T>& in, const tensor_view<T>& out, const pool_params& params,
                       const window_geometry& geometry, clamp_range clamp) noexcept {
  if (out.height() != 1 || out.width() != 1 || !dense_sums::applies(in)) return false;
  const reference::detail::pool_window w =
      reference::detail::window_at(geometry, params, in.height(), in.width(), 0, 0);
  if (w.y_begin != 0 || w.x_begin != 0 || w.y_end != in.height() || w.x_end != in.width()) return false;
  const window_divisor divisor = window_divisor::of(w.taps());
  const lanes::reg lo(clamp.min), hi(clamp.max);
  const int channels = in.channels();
  alignas(64) std::int32_t sums[dense_sums::max_step_bytes + lanes::block];
  std::fill_n(sums + channels, lanes::block, 0);  // the last block's lanes past the channels
  for (int n = 0; n < in.batch(); ++n) {
    dense_sums::image_channel_sums<T>(in, n, sums);
    T* target = out.pixel(n, 0, 0);
    for (int c = 0; c < channels; c += lanes::block) {
      lanes::reg acc[lanes::regs];
      lanes::load(sums + c, acc);
      finish_average<false, T>(acc, target + c, std::min(lanes::block, channels - c), divisor, lo, hi);
    }
  }
  return true;
}

/// Max pool on the 8-bit values themselves (max is exact in any width): a vector of channels per step (64 on
/// AVX-512, 32 on AVX2 and for 32-channel chunks on AVX-512, 16 on NEON), the whole window's max kept in one register,
/// then the activation clamp. Each ops struct gives full-width load/store, partial (n < width) ones, max and min.
/// One ops' vector of channels of one output pixel: the max over a rows x cols window whose first tap is `in`, then
/// the clamp; a full vector, or (Full = false) the first n channels. Rows and Cols > 0 fix the window at compile time
/// (the full 2x2 and 3x3 windows); 0 reads them at run time.
template <class Ops, bool Full, int Rows, int Cols, quantized_element T>
[[gnu::always_inline]] inline void max_window(const T* in, std::ptrdiff_t pixel, std::ptrdiff_t row, int rows, int cols,
                                              T* out, int n, std::int32_t lo, std::int32_t hi) noexcept {
  if constexpr (Rows > 0) {
    rows = Rows;
    cols = Cols;
  }
  const auto load = [n](const T* p) {
    if constexpr (Full) {
      static_cast<void>(n);  // captured for the partial form only (clang warns on an unused capture)
      return Ops::load(p);
    } else {
      return Ops::load(p, n);
    }
  };
  typename Ops::vec acc = load(in);
  for (int y = 0; y < rows; ++y)
    for (int x = y == 0 ? 1 : 0; x < cols; ++x) acc = Ops::template max<T>(acc, load(in + y * row + x * pixel));
  acc = Ops::template min<T>(Ops::template max<T>(acc, Ops::set1(lo)), Ops::set1(hi));
  if constexpr (Full)
    Ops::store(out, acc);
  else
    Ops::store(out, acc, n);
}

template <int Rows, int Cols, quantized_element T, class Wide = bytes_wide>
inline void max_pixel(const T* first, std::ptrdiff_t pixel, std::ptrdiff_t row, int rows, int cols, T* target,
                      int channels, clamp_range clamp) noexcept {
  int c = 0;
  for (; c + Wide::width <= channels; c += Wide::width)
    max_window<Wide, true, Rows, Cols, T>(first + c, pixel, row, rows, cols, target + c, 0, clamp.min, clamp.max);
  if constexpr (requires { typename Wide::half; }) {
    using half = typename Wide::half;
    if (c + half::width <= channels) {  // e.g. 32 channels: a full ymm rather than a masked zmm
      max_window<half, true, Rows, Cols, T>(first + c, pixel, row, rows, cols, target + c, 0, clamp.min, clamp.max);
      c += half::width;
    }
  }
  if (c < channels)
    max_window<Wide, false, Rows, Cols, T>(first + c, pixel, row, rows, cols, target + c, channels - c, clamp.min,
                                           clamp.max);
}

template <quantized_element T>
void max_windowed(const tensor_view<const T>& in, const tensor_view<T>& out, const pool_params& params,
                  const window_geometry& geometry, clamp_range clamp) noexcept {
  const int channels = out.channels();
  const std::ptrdiff_t pixel = in.pixel_stride(), row = in.row_stride();
  for (int n = 0; n < out.batch(); ++n)
    for (int out_y = 0; out_y < out.height(); ++out_y)
      for (int out_x = 0; out_x < out.width(); ++out_x) {
        const reference::detail::pool_window w =
            reference::detail::window_at(geometry, params, in.height(), in.width(), out_y, out_x);
        const T* first = in.pixel(n, w.y_begin, w.x_begin);
        T* target = out.pixel(n, out_y, out_x);
        const int rows = w.y_end - w.y_begin, cols = w.x_end - w.x_begin;
        if (rows == 2 && cols == 2)
          max_pixel<2, 2, T>(first, pixel, row, rows, cols, target, channels, clamp);
        else if (rows == 3 && cols == 3)
          max_pixel<3, 3, T>(first, pixel, row, rows, cols, target, channels, clamp);
        else
          max_pixel<0, 0, T>(first, pixel, row, rows, cols, target, channels, clamp);
      }
}

/// Lane blocks summed per pass over the image: 64 channels, a whole cache line of each pixel per pass.
inline constexpr int sum_blocks = 4;

/// Per channel, the sum over every pixel of image n (raw values; the offset is applied by the caller), for channels
/// [c, c + channels), 1 <= channels <= sum_blocks * lanes::block. A partial last block goes through a zero-padded
/// copy of each pixel's channels, or, with OverlapLast (a full block before it), is read as the block that ends at
/// the last channel: it overlaps the block before it, and the lanes it repeats are dropped at the end.
template <quantized_element T, bool OverlapLast>
inline void channel_block_sums(const tensor_view<const T>& in, int n, int c, int channels,
                               std::int32_t* sums) noexcept {
  constexpr int block = lanes::block;
  const int full = channels / block, rest = channels % block;
  lanes::reg acc[sum_blocks][lanes::regs], tap[lanes::regs];
  for (int b = 0; b < sum_blocks; ++b)
    for (int j = 0; j < lanes::regs; ++j) acc[b][j] = lanes::reg(0);
  for (int y = 0; y < in.height(); ++y)
    for (int x = 0; x < in.width(); ++x) {
      const T* p = in.pixel(n, y, x) + c;
      for (int b = 0; b < sum_blocks; ++b) {
        if (b < full) {
          lanes::widen<T>(p + b * block, tap);
        } else if (b == full && rest > 0) {
          if constexpr (OverlapLast) {
            lanes::widen<T>(p + channels - block, tap);
          } else {
            T copy[block] = {};
            std::memcpy(copy, p + b * block, static_cast<std::size_t>(rest) * sizeof(T));
            lanes::widen<T>(copy, tap);
          }
        } else {
          break;
        }
        for (int j = 0; j < lanes::regs; ++j) acc[b][j] += tap[j];
      }
    }
  alignas(64) std::int32_t all[sum_blocks * block];
  for (int b = 0; b < sum_blocks; ++b) lanes::store(all + b * block, acc[b]);
  if constexpr (OverlapLast) {
    std::memcpy(sums, all, static_cast<std::size_t>(full) * block * sizeof(std::int32_t));
    std::memcpy(sums + full * block, all + full * block + (block - rest),
                static_cast<std::size_t>(rest) * sizeof(std::int32_t));
  } else {
    std::memcpy(sums, all, static_cast<std::size_t>(channels) * sizeof(std::int32_t));
  }
}

/// channel_block_sums, with the overlapping read wherever a partial block follows a full one.
template <quantized_element T>
inline void channel_sums(const tensor_view<const T>& in, int n, int c, int channels, std::int32_t* sums) noexcept {
  if (channels > lanes::block && channels % lanes::block != 0)
    channel_block_sums<T, true>(in, n, c, channels, sums);
  else
    channel_block_sums<T, false>(in, n, c, channels, sums);
}

/// The MEAN recipe on up to 16 channel sums (entries past `count` are ignored), all in vectors: the input offset, the
/// multiplier (1 / pixels folded in), the output offset, the element type's clamp.
template <rounding R, quantized_element T>
inline void finish_block(const std::int32_t* sums, int count, std::int32_t offset_total, requant_scale scale,
                         const global_pool_params& params, T* target) noexcept {
  const lanes::scale_regs multiplier = lanes::scale_regs::of(scale);
  const lanes::reg lo(element_traits<T>::min), hi(element_traits<T>::max), output_offset(params.output_offset);
  lanes::reg v[lanes::regs];
  lanes::load(sums, v);
  for (int j = 0; j < lanes::regs; ++j) {
    v[j] = lanes::multiply<R>(v[j] - lanes::reg(offset_total), multiplier.multiplier, multiplier.left_shift,
                              multiplier.right_shift);
    v[j] = xsimd::min(xsimd::max(v[j] + output_offset, lo), hi);
  }
  if (count == lanes::block) {
    lanes::narrow<T>(target, v);
  } else {
    T result[lanes::block];
    lanes::narrow<T>(result, v);
    std::memcpy(target, result, static_cast<std::size_t>(count) * sizeof(T));
  }
}

/// Global average pool of image n: the channel sums of dense_sums where they apply, else channels in groups of
/// sum_blocks * lanes::block (one pass over the image each), finished by finish_block; returns the channels done (all
/// of them).
template <rounding R, quantized_element T>
[[gnu::always_inline]] inline int global_average_channels(const tensor_view<const T>& in, int n,
                                                          std::int32_t offset_total, requant_scale scale,
                                                          const global_pool_params& params, T* target) noexcept {
  if (dense_sums::applies(in)) {
    alignas(64) std::int32_t sums[dense_sums::max_step_bytes];
    dense_sums::image_channel_sums<T>(in, n, sums);
    for (int j = 0; j < in.channels(); j += lanes::block)
      finish_block<R>(sums + j, std::min(lanes::block, in.channels() - j), offset_total, scale, params, target + j);
    return in.channels();
  }
  int c = 0;
  constexpr int group = detail::pooling::sum_blocks * lanes::block;
  for (; c < in.channels(); c += group) {
    const int count = std::min(group, in.channels() - c);
    alignas(64) std::int32_t sums[group];
    channel_sums<T>(in, n, c, count, sums);
    for (int j = 0; j < count; j += lanes::block)
      finish_block<R>(sums + j, std::min(lanes::block, count - j), offset_total, scale, params, target + c + j);
  }
  return c;
}
#endif  // MOSAIQ_TARGET_SIMD

}  // namespace detail::pooling
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
