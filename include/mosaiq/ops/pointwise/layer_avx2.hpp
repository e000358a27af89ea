// Pointwise, the AVX2 layer's member: the folded per-lane requantization constants its tile reads
// (choose_lanes8). A member of pointwise defined out of class: ops/pointwise.hpp declares it and
// includes this file after the class.
#pragma once

#include <concepts>

#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX2

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// The AVX2 tile requantizes with per-lane folded constants (simd::avx2::requant_lanes8: one 64-bit product per
/// lane instead of the two roundings) under reference rounding when every multiplier allows it and the layer has
/// at most 128 input channels: with 16-24 the requantization, not the multiplies, is most of a layer's time; with
/// 256 and 1024 the paired A/B found the folded form (ten constant vectors per 8 lanes) no faster.
template <pointwise_config Cfg, quantized_element T>
inline void pointwise<Cfg, T>::choose_lanes8(int input_channels) {
  lanes8_.clear();
  if (input_channels > 128) return;
  if constexpr (std::same_as<path, kernels::pw::avx2_path> && R == rounding::tflite_reference) {
    for (int c = 0; c < padded_channels; ++c)
      if (!simd::avx2::requant_lanes8::supports({mult_[c], left_[c], right_[c]})) return;
    lanes8_.assign(static_cast<std::size_t>(padded_channels / 8), {});
    for (int c = 0; c < padded_channels; ++c) lanes8_[c / 8].set_lane(c % 8, {mult_[c], left_[c], right_[c]});
  }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX2
