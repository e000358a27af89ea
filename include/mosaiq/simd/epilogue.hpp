// The one requantization epilogue chooser of the convolution family (depthwise, pointwise, conv2d
// through pointwise, and the AMX tiles): which form a tile's epilogue takes, decided once at load
// time from the layer's scales and clamp.
//
// `general` is requantize_epi32 (every ISA; the only form outside AVX-512). The lane forms use
// simd::avx512::requant_lanes: one 64-bit product per lane, equal bit for bit, fewer instructions.
//   lanes / lanes_left                    the zero point added and the clamp applied after the product
//   lanes_folded[_left]                   the output zero point folded into the 64-bit rounding offsets
//   lanes_folded_sign_free[_left]         folded, and without the sign blend: where the clamp starts at
//                                         the zero point or the rounding has no sign (requant_lanes::
//                                         sign_free: ReLU / ReLU6 outputs quantized as TFLite does)
// `_left`: some channel has a left shift (the constants then carry one).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace kernels {

enum class requant_epilogue : std::uint8_t {
  general,
  lanes,
  lanes_left,
  lanes_folded,
  lanes_folded_left,
  lanes_folded_sign_free,
  lanes_folded_sign_free_left,
};

/// Whether epilogue q has the output zero point in its lane constants' offsets.
constexpr bool folds_zero_point(requant_epilogue q) noexcept {
  return q == requant_epilogue::lanes_folded || q == requant_epilogue::lanes_folded_left ||
         q == requant_epilogue::lanes_folded_sign_free || q == requant_epilogue::lanes_folded_sign_free_left;
}

/// Whether epilogue q reads left shifts.
constexpr bool shifts_left(requant_epilogue q) noexcept {
  return q == requant_epilogue::lanes_left || q == requant_epilogue::lanes_folded_left ||
         q == requant_epilogue::lanes_folded_sign_free_left;
}

/// Whether epilogue q blends by the sign of the product (all lane forms but the sign-free ones).
constexpr bool blends_sign(requant_epilogue q) noexcept {
  return q != requant_epilogue::lanes_folded_sign_free && q != requant_epilogue::lanes_folded_sign_free_left;
}

/// The lane forms an op's tile implements besides `general`.
struct epilogue_forms {
  /// Lanes without the zero point folded in (else a layer that cannot fold runs `general`).
  bool unfolded = true;
  /// Folded lanes under an activation clamp (the tile clamps after narrowing); else folded only
  /// over the type's whole range, where saturating narrowing is the clamp.
  bool folded_under_clamp = false;
  /// Folded lanes with left shifts.
  bool folded_left_shift = false;
};

#if MOSAIQ_TARGET_AVX512
/// Fills `lanes` (one per 16 channels of `multiplier`/`left_shift`/`right_shift`, `lanes.size() * 16`
/// entries each) for the form it returns: the best of `forms` the scales allow, `general` if none.
/// Folded forms have the output zero point added to the lanes' offsets.
template <rounding R>
requant_epilogue choose_requant_epilogue(std::span<simd::avx512::requant_lanes> lanes, const std::int32_t* multiplier,
                                         const std::int32_t* left_shift, const std::int32_t* right_shift,
                                         std::int32_t output_zero_point, clamp_range clamp, clamp_range full_range,
                                         epilogue_forms forms) noexcept {
  constexpr int width = 16;
  bool supported = true, left = false;
  for (std::size_t at = 0; at < lanes.size() * width; ++at) {
    const requant_scale s{multiplier[at], left_shift[at], right_shift[at]};
    supported = supported && simd::avx512::requant_lanes::supports<R>(s);
    left = left || s.left_shift != 0;
    lanes[at / width].template set_lane<R>(static_cast<int>(at % width), s);
  }
  if (!supported) return requant_epilogue::general;
  const bool clamped = clamp.min != full_range.min || clamp.max != full_range.max;
  const bool can_fold = (forms.folded_under_clamp || !clamped) && (forms.folded_left_shift || !left) &&
                        std::ranges::all_of(lanes, [](const auto& l) { return l.folds_zero_point(); });
  if (!can_fold) {
    if (!forms.unfolded) return requant_epilogue::general;
    return left ? requant_epilogue::lanes_left : requant_epilogue::lanes;
  }
  for (auto& l : lanes) l.fold_zero_point(output_zero_point);
  const bool clamp_hides_negative = clamp.min >= output_zero_point;
  const bool sign_free = std::ranges::all_of(lanes, [&](const auto& l) { return l.sign_free(clamp_hides_negative); });
  if (sign_free) return left ? requant_epilogue::lanes_folded_sign_free_left : requant_epilogue::lanes_folded_sign_free;
  return left ? requant_epilogue::lanes_folded_left : requant_epilogue::lanes_folded;
}

/// The constants epilogue q reads (multiply_by_nonnegative_multiplier), loaded from one requant_lanes.
template <requant_epilogue Q>
using lane_vectors = simd::avx512::requant_lane_vectors<shifts_left(Q), blends_sign(Q)>;
#endif

}  // namespace kernels
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
