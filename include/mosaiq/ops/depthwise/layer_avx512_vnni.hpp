// Depthwise, the AVX-512 VNNI layer's members: the lane epilogue chosen at load, the narrow layers'
// tap-group rows and the register-tile loops. Members of depthwise defined out of class:
// ops/depthwise.hpp declares them on every target and includes this file after the class.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/depthwise.hpp"
#include "mosaiq/simd/epilogue.hpp"
#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_AVX512_VNNI

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

template <depthwise_config Cfg, quantized_element T>
inline void depthwise<Cfg, T>::choose_lane_epilogue(const reference::conv_requant& q, int padded) {
  // The zero point goes into the offsets (the tile adds none); the bytes are clamped after packing.
  lanes_.requant_lanes_.assign(static_cast<std::size_t>(padded / detail::dw::block), {});
  requant_ = kernels::choose_requant_epilogue<R>(
      lanes_.requant_lanes_, mult_.data(), left_.data(), right_.data(), q.output_zero_point, q.clamp,
      {element_traits<T>::min, element_traits<T>::max},
      {.unfolded = false, .folded_under_clamp = true, .folded_left_shift = true});
}

/// A narrow layer's tap-group row (pixels_per_job(oc) > 1 pixels per 64-channel job column).
template <depthwise_config Cfg, quantized_element T>
inline void depthwise<Cfg, T>::build_narrow_row(const tensor_view<const T>& in, const std::uint8_t* source,
                                                std::ptrdiff_t source_stride, int oc, int pixels, std::uint8_t* row,
                                                std::ptrdiff_t column_bytes, const std::uint8_t* pad_pixel,
                                                const layout& l, int pad_left, std::uint8_t flip) const {
  const int out_width = output_shape(in.dims()).width;
  // Stride 1 or 2 over densely packed pixels: a job column's sources per tap are one 64-byte
  // run (stride 1) or every other pixel of a 128-byte one (stride 2).
  constexpr int sw = Cfg.stride.w;
  const bool runs = (sw == 1 || sw == 2) && source_stride == oc && oc * pixels == job_channels;
  for (int ox = 0; ox < l.out_w; ++ox)
    for (int g = 0; g < groups; ++g) {
      if (runs && (ox + 1) * pixels <= out_width) {
        const std::uint8_t* starts[detail::dw::group_taps];
        bool inside = true;
        for (int t = 0; t < detail::dw::group_taps; ++t) {
          const int tap = g * detail::dw::group_taps + t;
          const int ix = ox * pixels * sw - pad_left + tap * Cfg.dilation.w;
          const bool in_image = ix >= 0 && ix + (pixels - 1) * sw < in.width();
          starts[t] = tap < kw && in_image ? source + ix * source_stride : nullptr;
          inside = inside && (tap >= kw || in_image);
        }
        if (inside) {
          if constexpr (sw == 1)
            path::interleave_runs(starts, row + (ox * groups + g) * column_bytes, flip);
          else
            path::interleave_strided_runs(starts, pixels, row + (ox * groups + g) * column_bytes, flip);
          continue;
        }
      }
      const std::uint8_t* taps[detail::dw::max_pixels_per_job][detail::dw::group_taps];
      for (int k = 0; k < pixels; ++k)
        for (int t = 0; t < detail::dw::group_taps; ++t) {
          const int x = ox * pixels + k, tap = g * detail::dw::group_taps + t;
          const int ix = x * Cfg.stride.w - pad_left + tap * Cfg.dilation.w;
          taps[k][t] =
              x < out_width && tap < kw && ix >= 0 && ix < in.width() ? source + ix * source_stride : pad_pixel;
        }
      path::interleave_pixels(taps, pixels, job_channels / pixels, row + (ox * groups + g) * column_bytes, oc, flip);
    }
}

template <depthwise_config Cfg, quantized_element T>
template <int TH, int TW>
inline void depthwise<Cfg, T>::run_tile_loop(const kernels::dw::row_job& job, int& ox, int out_w, bool split) noexcept {
  const auto loop = [&]<bool Split>() __attribute__((always_inline)) {
    for (; ox + TW <= out_w; ox += TW)
      path::template tile<kh, groups, TH, TW, pass_row_shift, Cfg.dilation.h, R, T, Split>(job, ox);
  };
  // Only uint8 weights split.
  if constexpr (!is_int8)
    if (split) return loop.template operator()<true>();
  loop.template operator()<false>();
}

template <depthwise_config Cfg, quantized_element T>
template <int TH, int TW>
inline void depthwise<Cfg, T>::run_row_tiles(const kernels::dw::row_job& job, int out_w, bool split, int ox) noexcept {
  if constexpr (TH > 1) {
    run_tile_loop<TH, TW>(job, ox, out_w, split);
    if constexpr (TW > 1) run_row_tiles<TH, TW / 2>(job, out_w, split, ox);
  }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX512_VNNI
