// What the 16x8 element-wise kernels of every path read: each op's multipliers decoded once at load for rounding R
// (add's are reference::add_scales_16), logistic's table packed for the lanes, bilinear resize's weights and taps.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16 {

struct mul_scales_16 {
  requant_scale output{};
  clamp_range clamp{};
};

/// reference::hard_swish_16_element's four multiplier steps as requant scales: the input to the [-3, 3] Q15 factor,
/// the input to the output scale, the product with the [0, 1] factor (its per-element multiplier is reluish << 16;
/// only the shifts are fixed), and the output exponent: a multiply by 2^31 - 1 with left shift for an exponent above
/// 0, else a rounding right shift by -exponent (`exponent_shift`).
struct hard_swish_scales_16 {
  requant_scale reluish{}, to_output{}, product{}, exponent{};
  bool exponent_multiplies = false;
  std::int32_t exponent_shift = 0;
};

template <rounding R>
constexpr hard_swish_scales_16 hard_swish_scales_16_of(const reference::hard_swish_params_16& p) noexcept {
  const auto q31 = [](std::int16_t q15) { return static_cast<std::int32_t>(q15) * (1 << 16); };
  return {.reluish = prepare_scale<R>({q31(p.reluish_multiplier), p.reluish_exponent}),
          .to_output = prepare_scale<R>({q31(p.output_multiplier), 0}),
          .product = prepare_scale<R>({0, 0}),
          .exponent = prepare_scale<R>({std::numeric_limits<std::int32_t>::max(), p.output_exponent}),
          .exponent_multiplies = p.output_exponent > 0,
          .exponent_shift = p.output_exponent > 0 ? 0 : -p.output_exponent};
}

/// reference::logistic_16_element's input step and sigmoid table as the lanes read them: entry i packs table[i] (low
/// 16 bits) and the step to table[i + 1] (high 16 bits, >= 0: the table rises); entry 255 is the saturated value 65534
/// with step 0 (65534 << 9 == 0x7FFF << 10), so an index clamped to 255 needs no branch.
struct logistic_table_16 {
  std::array<std::uint32_t, 256> entries{};
  std::int32_t input_multiplier = 0, input_left_shift = 0, rounding_term = 0;
};

inline logistic_table_16 logistic_table_16_of(const reference::logistic_params_16& p) noexcept {
  logistic_table_16 t{.entries = {},
                      .input_multiplier = p.input_multiplier,
                      .input_left_shift = p.input_left_shift,
                      .rounding_term = p.input_left_shift > 0 ? 1 << (p.input_left_shift - 1) : 0};
  const auto& q16 = reference::detail::sigmoid_table_q16;
  for (std::size_t i = 0; i < 255; ++i) t.entries[i] = q16[i] | (std::uint32_t{q16[i + 1]} - q16[i]) << 16;
  t.entries[255] = 65534;
  return t;
}

/// One output pixel's Q10 weights of reference::detail::resize_bilinear_q10: rows (top, bottom) and columns (left,
/// right); each pair sums to 1024, a weight may be negative or above 1024 at a half-pixel edge.
struct bilinear_weights {
  std::int32_t top = 0, bottom = 0, left = 0, right = 0;
};

/// The four taps of one output pixel, each a run of the pixel's channels.
struct bilinear_taps {
  const std::int16_t *top_left = nullptr, *bottom_left = nullptr, *top_right = nullptr, *bottom_right = nullptr;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16
