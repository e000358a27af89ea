// Quantized pooling kernels, bit-exact with reference/pool.hpp:
//
//   mosaiq::max_pool<mosaiq::u8>(in, out, {.kernel = {2, 2}, .stride = {2, 2}}, quant);
//   mosaiq::average_pool<mosaiq::i8>(in, out, {.kernel = {3, 3}, .pad = mosaiq::padding::same()}, quant);
//   mosaiq::global_average_pool<mosaiq::rounding::tflite_reference, mosaiq::u8>(in, out, in_quant, out_quant);
//
// Same signatures and contracts as the reference ops. Channels run in vectors over each output pixel's in-image
// taps; average and global pool widen blocks of 16 to int32 (simd/lanes.hpp), a tail on a copy of the taps:
//   max      on the bytes themselves (64 channels per zmm, 32 per ymm, 16 per q register; partial vectors masked
//            or copied): the whole window's max in one register, then the activation clamp; the full 2x2 and 3x3
//            windows are unrolled at compile time;
//   average  the int32 sum of the taps, then reference::detail::rounded_divide by the tap count (exact: a float
//            quotient corrected by its remainder, for windows up to 4096 taps; a larger window, e.g. a whole-map
//            pool, divides its 16 sums in scalar code, one division per channel against thousands of taps summed),
//            then the activation clamp;
//   global   per 64 channels (one pass over the image, four blocks of int32 sums) the sum over all pixels of
//            (q - input offset), then per channel the reference's MEAN recipe (multiplier, rounded division, output
//            offset) in scalar code: C values per image.
// Without an ISA (scalar builds) every op calls the reference.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
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

/// Average pool: channels [c, c + 16) of one output pixel from the window's taps (summed in int32, divided exactly);
/// `in` points at channel c of pixel (y_begin, x_begin), `channels` = 16 or fewer (then the taps are copied into a
/// zero-padded block first).
template <quantized_element T>
[[gnu::always_inline]] inline void window_block(const T* in, std::ptrdiff_t pixel, std::ptrdiff_t row, int rows,
                                                int cols, T* out, int channels, const window_divisor& divisor,
                                                lanes::reg lo, lanes::reg hi) noexcept {
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
  if (divisor.vector()) {
    for (int j = 0; j < lanes::regs; ++j) acc[j] = lanes::rounded_divide(acc[j], divisor.regs);
  } else {
    alignas(64) std::int32_t sums[lanes::block];
    lanes::store(sums, acc);
    for (std::int32_t& v : sums) v = reference::detail::rounded_divide(v, divisor.taps);
    lanes::load(sums, acc);
  }
  for (int j = 0; j < lanes::regs; ++j) acc[j] = xsimd::min(xsimd::max(acc[j], lo), hi);
  if (partial) {
    T result[lanes::block];
    lanes::narrow<T>(result, acc);
    std::memcpy(out, result, static_cast<std::size_t>(channels) * sizeof(T));
  } else {
    lanes::narrow<T>(out, acc);
  }
}

template <quantized_element T>
void average_windowed(const tensor_view<const T>& in, const tensor_view<T>& out, const pool_params& params,
                      const window_geometry& geometry, clamp_range clamp) noexcept {
  const lanes::reg lo(clamp.min), hi(clamp.max);
  const int channels = out.channels();
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
        int c = 0;
        for (; c + lanes::block <= channels; c += lanes::block)
          window_block<T>(first + c, in.pixel_stride(), in.row_stride(), rows, cols, target + c, lanes::block, divisor,
                          lo, hi);
        if (c < channels)
          window_block<T>(first + c, in.pixel_stride(), in.row_stride(), rows, cols, target + c, channels - c, divisor,
                          lo, hi);
      }
}

/// Max pool on the 8-bit values themselves (max is exact in any width): a vector of channels per step (64 on
/// AVX-512, 32 on AVX2 and for 32-channel chunks on AVX-512, 16 on NEON), the whole window's max kept in one register,
/// then the activation clamp. Each ops struct gives full-width load/store, partial (n < width) ones, max and min.
#if MOSAIQ_TARGET_AVX2
struct bytes256 {
  using vec = __m256i;
  static constexpr int width = 32;
  static vec load(const void* p) noexcept { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store(void* p, vec v) noexcept { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  template <class T>
  static vec max(vec a, vec b) noexcept {
    return element_traits<T>::is_signed ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
  }
  template <class T>
  static vec min(vec a, vec b) noexcept {
    return element_traits<T>::is_signed ? _mm256_min_epi8(a, b) : _mm256_min_epu8(a, b);
  }
  static vec set1(std::int32_t v) noexcept { return _mm256_set1_epi8(static_cast<char>(v)); }
};
#endif
#if MOSAIQ_TARGET_AVX512
struct bytes512 {
  using vec = __m512i;
  static constexpr int width = 64;
  static vec load(const void* p) noexcept { return _mm512_loadu_si512(p); }
  static void store(void* p, vec v) noexcept { _mm512_storeu_si512(p, v); }
  static vec load(const void* p, int n) noexcept { return _mm512_maskz_loadu_epi8(~std::uint64_t{0} >> (64 - n), p); }
  static void store(void* p, vec v, int n) noexcept { _mm512_mask_storeu_epi8(p, ~std::uint64_t{0} >> (64 - n), v); }
  template <class T>
  static vec max(vec a, vec b) noexcept {
    return element_traits<T>::is_signed ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
  }
  template <class T>
  static vec min(vec a, vec b) noexcept {
    return element_traits<T>::is_signed ? _mm512_min_epi8(a, b) : _mm512_min_epu8(a, b);
  }
  static vec set1(std::int32_t v) noexcept { return _mm512_set1_epi8(static_cast<char>(v)); }
};
using bytes_wide = bytes512;
#elif MOSAIQ_TARGET_AVX2
/// Partial vectors through a zero-padded copy.
struct bytes_wide : bytes256 {
  using bytes256::load;
  using bytes256::store;
  static vec load(const void* p, int n) noexcept {
    alignas(32) std::uint8_t copy[width] = {};
    std::memcpy(copy, p, static_cast<std::size_t>(n));
    return load(copy);
  }
  static void store(void* p, vec v, int n) noexcept {
    alignas(32) std::uint8_t copy[width];
    store(copy, v);
    std::memcpy(p, copy, static_cast<std::size_t>(n));
  }
};
#else
/// NEON (aarch64 and armv7): bytes held unsigned, reinterpreted as signed for i8; partial vectors through a copy.
struct bytes_wide {
  using vec = uint8x16_t;
  static constexpr int width = 16;
  static vec load(const void* p) noexcept { return vld1q_u8(static_cast<const std::uint8_t*>(p)); }
  static void store(void* p, vec v) noexcept { vst1q_u8(static_cast<std::uint8_t*>(p), v); }
  static vec load(const void* p, int n) noexcept {
    std::uint8_t copy[width] = {};
    std::memcpy(copy, p, static_cast<std::size_t>(n));
    return load(copy);
  }
  static void store(void* p, vec v, int n) noexcept {
    std::uint8_t copy[width];
    store(copy, v);
    std::memcpy(p, copy, static_cast<std::size_t>(n));
  }
  template <class T>
  static vec max(vec a, vec b) noexcept {
    if constexpr (element_traits<T>::is_signed)
      return vreinterpretq_u8_s8(vmaxq_s8(vreinterpretq_s8_u8(a), vreinterpretq_s8_u8(b)));
    else
      return vmaxq_u8(a, b);
  }
  template <class T>
  static vec min(vec a, vec b) noexcept {
    if constexpr (element_traits<T>::is_signed)
      return vreinterpretq_u8_s8(vminq_s8(vreinterpretq_s8_u8(a), vreinterpretq_s8_u8(b)));
    else
      return vminq_u8(a, b);
  }
  static vec set1(std::int32_t v) noexcept { return vdupq_n_u8(static_cast<std::uint8_t>(v)); }
};
#endif

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

template <int Rows, int Cols, quantized_element T>
inline void max_pixel(const T* first, std::ptrdiff_t pixel, std::ptrdiff_t row, int rows, int cols, T* target,
                      int channels, clamp_range clamp) noexcept {
  int c = 0;
  for (; c + bytes_wide::width <= channels; c += bytes_wide::width)
    max_window<bytes_wide, true, Rows, Cols, T>(first + c, pixel, row, rows, cols, target + c, 0, clamp.min, clamp.max);
#if MOSAIQ_TARGET_AVX512
  if (c + bytes256::width <= channels) {  // 32 channels: a full ymm rather than a masked zmm
    max_window<bytes256, true, Rows, Cols, T>(first + c, pixel, row, rows, cols, target + c, 0, clamp.min, clamp.max);
    c += bytes256::width;
  }
#endif
  if (c < channels)
    max_window<bytes_wide, false, Rows, Cols, T>(first + c, pixel, row, rows, cols, target + c, channels - c, clamp.min,
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
/// [c, c + channels), 1 <= channels <= sum_blocks * lanes::block; a partial last block goes through a copy.
template <quantized_element T>
inline void channel_sums(const tensor_view<const T>& in, int n, int c, int channels, std::int32_t* sums) noexcept {
  const int full = channels / lanes::block, rest = channels % lanes::block;
  lanes::reg acc[sum_blocks][lanes::regs], tap[lanes::regs];
  for (int b = 0; b < sum_blocks; ++b)
    for (int j = 0; j < lanes::regs; ++j) acc[b][j] = lanes::reg(0);
  for (int y = 0; y < in.height(); ++y)
    for (int x = 0; x < in.width(); ++x) {
      const T* p = in.pixel(n, y, x) + c;
      for (int b = 0; b < sum_blocks; ++b) {
        if (b < full) {
          lanes::widen<T>(p + b * lanes::block, tap);
        } else if (b == full && rest > 0) {
          T copy[lanes::block] = {};
          std::memcpy(copy, p + b * lanes::block, static_cast<std::size_t>(rest) * sizeof(T));
          lanes::widen<T>(copy, tap);
        } else {
          break;
        }
        for (int j = 0; j < lanes::regs; ++j) acc[b][j] += tap[j];
      }
    }
  alignas(64) std::int32_t all[sum_blocks * lanes::block];
  for (int b = 0; b < sum_blocks; ++b) lanes::store(all + b * lanes::block, acc[b]);
  std::memcpy(sums, all, static_cast<std::size_t>(channels) * sizeof(std::int32_t));
}
#endif

}  // namespace detail::pooling

namespace detail::pooling {

// The ops are function objects (variable templates), not function templates: a function mosaiq::max_pool would be
// found by argument-dependent lookup (tensor_view lives in mosaiq) next to reference::max_pool in unqualified calls
// and make them ambiguous; lookup ignores objects there. Call them as the reference ops: mosaiq::max_pool<T>(...).

template <quantized_element T>
struct max_pool_fn {
  void operator()(tensor_view<const T> in, tensor_view<T> out, const pool_params& params, quant_params quant) const {
#if MOSAIQ_TARGET_SIMD
    const std::optional<window_geometry> geometry = reference::detail::resolve_pool(in, out, params);
    if (!geometry) return;
    const std::optional<clamp_range> clamp = reference::detail::pool_clamp<T>(params.act, quant);
    if (!clamp) return;
    if (out.dims().elements() == 0) return;
    max_windowed<T>(in, out, params, *geometry, *clamp);
#else
    reference::max_pool<T>(in, out, params, quant);
#endif
  }
};

template <quantized_element T>
struct average_pool_fn {
  void operator()(tensor_view<const T> in, tensor_view<T> out, const pool_params& params, quant_params quant) const {
#if MOSAIQ_TARGET_SIMD
    if (std::int64_t{params.kernel.h} * params.kernel.w <= detail::pooling::max_summed_average_taps) {
      const std::optional<window_geometry> geometry = reference::detail::resolve_pool(in, out, params);
      if (!geometry) return;
      const std::optional<clamp_range> clamp = reference::detail::pool_clamp<T>(params.act, quant);
      if (!clamp) return;
      if (out.dims().elements() == 0) return;
      average_windowed<T>(in, out, params, *geometry, *clamp);
      return;
    }
#endif
    reference::average_pool<T>(in, out, params, quant);
  }
};

template <rounding R, quantized_element T>
struct global_average_pool_fn {
#if MOSAIQ_TARGET_SIMD
  /// The MEAN recipe on up to 16 channel sums (entries past `count` are ignored): the multiplier in vectors, then the
  /// rounded division in vectors while every |scaled| + divisor/2 < 2^24 (lanes::rounded_divide's exact range),
  /// else per channel as the reference does.
  static void finish_block(const std::int32_t* sums, int count, std::int32_t offset_total, requant_scale scale,
                           const global_pool_params& params, T* target) noexcept {
    constexpr int block = lanes::block;
    const lanes::scale_regs multiplier = lanes::scale_regs::of(scale);
    lanes::reg v[lanes::regs];
    lanes::load(sums, v);
    bool small = true;
    for (int j = 0; j < lanes::regs; ++j)
      v[j] = lanes::multiply<R>(v[j] - lanes::reg(offset_total), multiplier.multiplier, multiplier.left_shift,
                                multiplier.right_shift);
    alignas(64) std::int32_t scaled[block];
    lanes::store(scaled, v);
    const std::int64_t limit = (std::int64_t{1} << 24) - params.divisor / 2;
    for (int j = 0; j < count; ++j) small = small && std::abs(std::int64_t{scaled[j]}) < limit;
    if (!small) {
      for (int j = 0; j < count; ++j)
        target[j] =
            saturate_cast<T>(reference::detail::rounded_divide(scaled[j], params.divisor) + params.output_offset);
      return;
    }
    const lanes::divisor_regs divisor = lanes::divisor_regs::of(params.divisor);
    const lanes::reg lo(element_traits<T>::min), hi(element_traits<T>::max), output_offset(params.output_offset);
    for (int j = 0; j < lanes::regs; ++j)
      v[j] = xsimd::min(xsimd::max(lanes::rounded_divide(v[j], divisor) + output_offset, lo), hi);
    if (count == block) {
      lanes::narrow<T>(target, v);
    } else {
      T result[block];
      lanes::narrow<T>(result, v);
      std::memcpy(target, result, static_cast<std::size_t>(count) * sizeof(T));
    }
  }
#endif

  /// `params` come from reference::make_global_average_pool_params<R, T> for the input's height * width.
  void operator()(tensor_view<const T> in, tensor_view<T> out, const global_pool_params& params) const {
    if (!check_view(in, "global_average_pool: input") || !check_view(out, "global_average_pool: output")) return;
    if (!require(out.dims() == shape{1, 1, in.channels()} && out.batch() == in.batch(), errc::shape_mismatch,
                 "global_average_pool: output must be 1 x 1 x channels with the input's batch"))
      return;
    if (!require(params.valid && std::int64_t{in.height()} * in.width() == params.pixel_count, errc::invalid_argument,
                 "global_average_pool: params must be valid and built for the input's height * width"))
      return;

    const requant_scale scale = prepare_scale<R>(params.multiplier);
    const std::int32_t offset_total = params.input_offset * params.pixel_count;  // fits: pixel_count < 2^31 / 256
    const auto finish = [&](std::int32_t raw_sum) {
      const std::int32_t scaled = multiply_by_quantized_multiplier<R>(raw_sum - offset_total, scale);
      return saturate_cast<T>(reference::detail::rounded_divide(scaled, params.divisor) + params.output_offset);
    };
    for (int n = 0; n < in.batch(); ++n) {
      T* target = out.pixel(n, 0, 0);
      int c = 0;
#if MOSAIQ_TARGET_SIMD
      constexpr int group = detail::pooling::sum_blocks * lanes::block;
      for (; c < in.channels(); c += group) {
        const int count = std::min(group, in.channels() - c);
        alignas(64) std::int32_t sums[group];
        channel_sums<T>(in, n, c, count, sums);
        for (int j = 0; j < count; j += lanes::block)
          finish_block(sums + j, std::min(lanes::block, count - j), offset_total, scale, params, target + c + j);
      }
#endif
      for (; c < in.channels(); ++c) {
        std::int32_t sum = 0;
        for (int y = 0; y < in.height(); ++y)
          for (int x = 0; x < in.width(); ++x) sum += static_cast<std::int32_t>(in(n, y, x, c));
        target[c] = finish(sum);
      }
    }
  }

  /// Builds the params from the quantizations on every call, as the reference op does.
  void operator()(tensor_view<const T> in, tensor_view<T> out, quant_params in_quant, quant_params out_quant) const {
    if (!check_view(in, "global_average_pool: input") || !check_view(out, "global_average_pool: output")) return;
    const std::int64_t pixels = std::int64_t{in.height()} * in.width();
    if (!require(pixels >= 1 && pixels <= reference::max_global_pool_pixels, errc::invalid_argument,
                 "global_average_pool: height * width must be in [1, max_global_pool_pixels]"))
      return;
    const global_pool_params params =
        reference::make_global_average_pool_params<R, T>(in_quant, out_quant, static_cast<int>(pixels));
    if (!params.valid) return;  // the builder has reported why
    (*this)(in, out, params);
  }
  /// Input and output share `quant`.
  void operator()(tensor_view<const T> in, tensor_view<T> out, quant_params quant) const {
    (*this)(in, out, quant, quant);
  }
};

}  // namespace detail::pooling

/// Max pool, equal bit for bit to reference::max_pool<T> (same arguments and contract).
template <quantized_element T>
inline constexpr detail::pooling::max_pool_fn<T> max_pool{};

/// Average pool, equal bit for bit to reference::average_pool<T> (same arguments and contract).
template <quantized_element T>
inline constexpr detail::pooling::average_pool_fn<T> average_pool{};

/// Global average pool (TFLite MEAN over height and width), equal bit for bit to reference::global_average_pool<R, T>:
/// (in, out, in_quant, out_quant), (in, out, quant), or (in, out, params) with params prepared once by
/// reference::make_global_average_pool_params<R, T> for the input's height * width (what the network executor does).
template <rounding R, quantized_element T>
inline constexpr detail::pooling::global_average_pool_fn<R, T> global_average_pool{};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
