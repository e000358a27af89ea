// Pointwise, the AVX-512 VNNI layer's members: the lane epilogue chosen at load (also the AMX
// path's) and the narrow kernel's loops (layers of at most 4 output channels). Members of pointwise
// defined out of class: ops/pointwise.hpp declares them and includes this file after the class.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/simd/epilogue.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX512_VNNI

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// The AMX and VNNI epilogues requantize with one 64-bit product per lane where the scales allow
/// it (simd::avx512::requant_lanes; equal to requantize_epi32, fewer instructions): with small K
/// the epilogue, not the multiplies, is what a layer spends its time on. Their tiles fold the zero
/// point only where no activation clamps (saturating narrowing is the clamp), never with left shifts.
template <pointwise_config Cfg, quantized_element T>
inline void pointwise<Cfg, T>::choose_lane_epilogue(const reference::conv_requant& q) {
  lanes_.assign(static_cast<std::size_t>(blocks), {});
  requant_ =
      kernels::choose_requant_epilogue<R>(lanes_, mult_.data(), left_.data(), right_.data(), q.output_zero_point,
                                          q.clamp, {element_traits<T>::min, element_traits<T>::max},
                                          {.unfolded = true, .folded_under_clamp = false, .folded_left_shift = false});
  if (narrow && !amx_) {
    // The same constants with one channel in every lane (valid for the kind chosen above: the
    // lanes are the channel's).
    channel_lanes_.assign(static_cast<std::size_t>(out_channels), {});
    for (int c = 0; c < out_channels; ++c) {
      for (int lane = 0; lane < kernels::pw::block; ++lane)
        channel_lanes_[c].template set_lane<R>(lane, requant_scale{mult_[c], left_[c], right_[c]});
      if (kernels::folds_zero_point(requant_)) channel_lanes_[c].fold_zero_point(q.output_zero_point);
    }
  }
}

/// The narrow kernel's job: rows from `input`, `input_stride` bytes apart, packed (flipped, whole
/// k groups, pixel offsets in `pixel_offsets` with split weights) or the input in place.
template <pointwise_config Cfg, quantized_element T>
inline kernels::pw::narrow_job pointwise<Cfg, T>::narrow_job_for(const std::uint8_t* input, std::ptrdiff_t input_stride,
                                                                 bool in_place, const std::int32_t* pixel_offsets,
                                                                 T* out, std::ptrdiff_t out_stride) const {
  return {.input = input,
          .input_stride = input_stride,
          .row_bytes = in_place ? channels_ : layout_for(channels_, 1).k_groups * kernels::pw::group,
          .flip = in_place ? flip : std::uint8_t{0},
          .weights = weights_.data(),
          .bias = bias_.data(),
          .multiplier = mult_.data(),
          .left_shift = left_.data(),
          .right_shift = right_.data(),
          .pixel_offset = pixel_offsets,
          .split = split_weights_,
          .in_place = in_place,
          .split_factor = split_factor_,
          .lanes = channel_lanes_.data(),
          .output_zero_point = output_zero_point_,
          .clamp_min = clamp_.min,
          .clamp_max = clamp_.max,
          .out = out,
          .out_stride = out_stride};
}

/// A narrow layer's rows read in place from the input (no packed copy, no workspace); a template
/// like run_narrow, so that only narrow layers instantiate it.
template <pointwise_config Cfg, quantized_element T>
template <class Rows>
inline void pointwise<Cfg, T>::run_narrow_in_place(const Rows& rows, std::ptrdiff_t pixels, T* destination,
                                                   std::ptrdiff_t out_stride) const noexcept {
  const kernels::pw::narrow_job job = narrow_job_for(rows.base, rows.stride, true, nullptr, destination, out_stride);
  switch (requant_) {
    case lane_requant::lanes_folded:
      return run_narrow<lane_requant::lanes_folded>(job, pixels);
    case lane_requant::lanes_folded_sign_free:
      return run_narrow<lane_requant::lanes_folded_sign_free>(job, pixels);
    case lane_requant::lanes:
      return run_narrow<lane_requant::lanes>(job, pixels);
    case lane_requant::lanes_left:
      return run_narrow<lane_requant::lanes_left>(job, pixels);
    default:
      return run_narrow<lane_requant::general>(job, pixels);
  }
}

/// `pixels` rows of a narrow layer, 16 at a time.
template <pointwise_config Cfg, quantized_element T>
template <kernels::requant_epilogue Q>
inline void pointwise<Cfg, T>::run_narrow(kernels::pw::narrow_job job, std::ptrdiff_t pixels) noexcept {
  constexpr int pixels_per_tile = kernels::pw::block;
  for (std::ptrdiff_t p = 0; p < pixels; p += pixels_per_tile) {
    if (pixels - p >= pixels_per_tile)
      kernels::pw::narrow_tile<out_channels, R, T, Q, true>(job, pixels_per_tile);
    else
      kernels::pw::narrow_tile<out_channels, R, T, Q, false>(job, static_cast<int>(pixels - p));
    job.input += pixels_per_tile * job.input_stride;
    if (job.pixel_offset != nullptr) job.pixel_offset += pixels_per_tile;
    job.out = static_cast<T*>(job.out) + pixels_per_tile * job.out_stride;
  }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX512_VNNI
