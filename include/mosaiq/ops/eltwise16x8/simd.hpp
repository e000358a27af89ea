// 16x8 element-wise kernels, the vector path of every SIMD target (AVX2, AVX-512, NEON): blocks of 16 int16 elements
// widened to int32 lanes (simd/lanes.hpp), each multiplier step the lane form of MultiplyByQuantizedMultiplier for
// rounding R (simd/x86.hpp, simd/neon.hpp, proven equal to core/quant.hpp by tests/quant_test.cpp), clamped to int16
// before the narrowing store. A run's last partial block goes through zero-padded copies. Scalar builds have no
// lanes: they run ops/eltwise16x8/scalar.hpp, which names itself `native` there.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_SIMD

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/eltwise16x8/scales.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/lanes.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16::vector {

using lanes::reg;
inline constexpr std::size_t block = lanes::block;

/// block_fn(a, b, out) on every block of 16 elements of a run of n; the tail through zero-padded copies. Each block
/// is read before it is written, so out may be a or b.
template <class BlockFn>
[[gnu::always_inline]] inline void binary_blocks(const std::int16_t* a, const std::int16_t* b, std::int16_t* out,
                                                 std::size_t n, BlockFn block_fn) noexcept {
  std::size_t i = 0;
  for (; i + block <= n; i += block) block_fn(a + i, b + i, out + i);
  if (i == n) return;
  std::array<std::int16_t, block> a_tail{}, b_tail{}, out_tail{};
  std::copy_n(a + i, n - i, a_tail.begin());
  std::copy_n(b + i, n - i, b_tail.begin());
  block_fn(a_tail.data(), b_tail.data(), out_tail.data());
  std::copy_n(out_tail.begin(), n - i, out + i);
}

template <class BlockFn>
[[gnu::always_inline]] inline void unary_blocks(const std::int16_t* in, std::int16_t* out, std::size_t n,
                                                BlockFn block_fn) noexcept {
  std::size_t i = 0;
  for (; i + block <= n; i += block) block_fn(in + i, out + i);
  if (i == n) return;
  std::array<std::int16_t, block> in_tail{}, out_tail{};
  std::copy_n(in + i, n - i, in_tail.begin());
  block_fn(in_tail.data(), out_tail.data());
  std::copy_n(out_tail.begin(), n - i, out + i);
}

[[gnu::always_inline]] inline reg clamp(reg v, reg lo, reg hi) noexcept { return xsimd::min(xsimd::max(v, lo), hi); }

template <rounding R>
[[gnu::always_inline]] inline reg multiply(reg x, const lanes::scale_regs& s) noexcept {
  return lanes::multiply<R>(x, s.multiplier, s.left_shift, s.right_shift);
}

/// lanes::multiply_folded by a folded_scale.
template <rounding R>
[[gnu::always_inline]] inline reg multiply(reg x, const folded_scale& f) noexcept {
  return lanes::multiply_folded<R>(x, f.multiplier, f.exponent, f.offset_nonnegative, f.offset_negative);
}

/// add_input_16 broadcast once per run.
struct add_input_regs {
  reg high, low, low_offset, offset, negative_step;
  int exponent;
  static add_input_regs of(const add_input_16& f) noexcept {
    return {reg(f.high), reg(f.low), reg(f.low_offset), reg(f.offset), reg(f.negative_step), f.exponent};
  }
};

/// scalar add_input_step on lanes.
[[gnu::always_inline]] inline reg add_input_step(reg a, const add_input_regs& f) noexcept {
  const reg t = a * f.high + ((a * f.low + f.low_offset) >> 16);
  return (t + f.offset + ((t >> 31) & f.negative_step)) >> f.exponent;
}

/// out[i] = element(a[i], b[i]) on int32 lanes, 16 elements per block (binary_blocks).
template <class Element>
[[gnu::always_inline]] inline void binary_lanes(const std::int16_t* a, const std::int16_t* b, std::int16_t* out,
                                                std::size_t n, Element element) noexcept {
  binary_blocks(
      a, b, out,
      n, [&](const std::int16_t* pa, const std::int16_t* pb, std::int16_t* po) __attribute__((always_inline)) {
        reg va[lanes::regs], vb[lanes::regs];
        lanes::widen_16(pa, va);
        lanes::widen_16(pb, vb);
        for (int j = 0; j < lanes::regs; ++j) va[j] = element(va[j], vb[j]);
        lanes::narrow_16(po, va);
      });
}

template <rounding R>
void add_span(const std::int16_t* a, const std::int16_t* b, std::int16_t* out, std::size_t n,
              const add_scales_16x8& scales) noexcept {
  const reg lo(scales.general.clamp.min), hi(scales.general.clamp.max);
  if (scales.folded) {
    const add_input_regs in1 = add_input_regs::of(scales.input1), in2 = add_input_regs::of(scales.input2);
    const folded_scale so = scales.output;
    const auto folded_lanes = [&](auto step1, auto step2) __attribute__((always_inline)) {
      binary_lanes(
          a, b, out, n, [&](reg va, reg vb) __attribute__((always_inline)) {
            return clamp(multiply<R>(step1(va) + step2(vb), so), lo, hi);
          });
    };
    const auto shifted = [](reg v) __attribute__((always_inline)) { return v << 14; };
    const auto step_of = [](const add_input_regs& f) __attribute__((always_inline)) {
      return [&f](reg v) __attribute__((always_inline)) { return add_input_step(v, f); };
    };
    if (scales.shifted_input == 1)
      folded_lanes(shifted, step_of(in2));
    else if (scales.shifted_input == 2)
      folded_lanes(step_of(in1), shifted);
    else
      folded_lanes(step_of(in1), step_of(in2));
    return;
  }
  const auto s1 = lanes::scale_regs::of(scales.general.input1), s2 = lanes::scale_regs::of(scales.general.input2),
             so = lanes::scale_regs::of(scales.general.output);
  binary_lanes(
      a, b, out, n, [&](reg va, reg vb) __attribute__((always_inline)) {
        const reg sum = multiply<R>(va << reference::add_params_16::left_shift, s1) +
                        multiply<R>(vb << reference::add_params_16::left_shift, s2);
        return clamp(multiply<R>(sum, so), lo, hi);
      });
}

template <rounding R>
void mul_span(const std::int16_t* a, const std::int16_t* b, std::int16_t* out, std::size_t n,
              const mul_scales_16& scales) noexcept {
  const reg lo(scales.clamp.min), hi(scales.clamp.max);
  const auto mul_lanes = [&](auto scale) __attribute__((always_inline)) {
    binary_lanes(
        a, b, out, n, [&](reg va, reg vb) __attribute__((always_inline)) {
          return clamp(multiply<R>(va * vb, scale), lo, hi);  // |a b| <= 2^30
        });
  };
  if (scales.output_folds)
    mul_lanes(scales.folded);
  else
    mul_lanes(lanes::scale_regs::of(scales.output));
}

/// scalar::hard_swish_folded_element on lanes.
inline void hard_swish_folded_span(const std::int16_t* in, std::int16_t* out, std::size_t n,
                                   const hard_swish_folded_16& f) noexcept {
  const reg reluish_multiplier(f.reluish_multiplier), reluish_offset(f.reluish_offset),
      reluish_negative_step(f.reluish_negative_step), output_multiplier(f.output_multiplier), q14(1 << 14),
      exponent_offset(f.exponent_offset), exponent_negative_step(f.exponent_negative_step), lo(-32768), hi(32767),
      half(1 << 15);
  const int reluish_shift = f.reluish_shift, exponent_left = f.exponent_left, exponent_right = f.exponent_right;
  unary_blocks(
      in, out, n, [&](const std::int16_t* pi, std::int16_t* po) __attribute__((always_inline)) {
        reg x[lanes::regs];
        lanes::widen_16(pi, x);
        for (int j = 0; j < lanes::regs; ++j) {
          const reg sign = x[j] >> 31;
          const reg reluish_wide =
              (x[j] * reluish_multiplier + reluish_offset + (sign & reluish_negative_step)) >> reluish_shift;
          const reg reluish = (clamp(reluish_wide, lo, hi) + half) >> 1;
          const reg on_output = (x[j] * output_multiplier + q14) >> 15;
          const reg product = (on_output * reluish + q14) >> 15;
          const reg output =
              ((product << exponent_left) + exponent_offset + ((product >> 31) & exponent_negative_step)) >>
              exponent_right;
          x[j] = clamp(output, lo, hi);
        }
        lanes::narrow_16(po, x);
      });
}

/// scalar::hard_swish_element on lanes; ExponentMultiplies picks the output exponent's form once per run.
template <rounding R, bool ExponentMultiplies>
void hard_swish_blocks(const std::int16_t* in, std::int16_t* out, std::size_t n,
                       const hard_swish_scales_16& scales) noexcept {
  const auto reluish = lanes::scale_regs::of(scales.reluish), to_output = lanes::scale_regs::of(scales.to_output),
             exponent = lanes::scale_regs::of(scales.exponent);
  const reg product_left(scales.product.left_shift), product_right(scales.product.right_shift);
  const reg exponent_shift(scales.exponent_shift), lo(-32768), hi(32767), half(1 << 15);
  unary_blocks(in, out, n, [&](const std::int16_t* pi, std::int16_t* po) {
    reg x[lanes::regs];
    lanes::widen_16(pi, x);
    for (int j = 0; j < lanes::regs; ++j) {
      const reg factor = (clamp(multiply<R>(x[j], reluish), lo, hi) + half) >> 1;  // [0, 32767]
      reg v = lanes::multiply<R>(multiply<R>(x[j], to_output), factor << 16, product_left, product_right);
      if constexpr (ExponentMultiplies)
        v = multiply<R>(v, exponent);
      else
        v = lanes::rounding_divide_by_pot(v, exponent_shift);
      x[j] = clamp(v, lo, hi);
    }
    lanes::narrow_16(po, x);
  });
}

template <rounding R>
void hard_swish_span(const std::int16_t* in, std::int16_t* out, std::size_t n,
                     const hard_swish_scales_16& scales) noexcept {
  if (scales.folds)
    hard_swish_folded_span(in, out, n, scales.folded);
  else if (scales.exponent_multiplies)
    hard_swish_blocks<R, true>(in, out, n, scales);
  else
    hard_swish_blocks<R, false>(in, out, n, scales);
}

/// scalar::logistic_element on lanes: the table entry gathered, the sign applied without a branch.
inline void logistic_span(const std::int16_t* in, std::int16_t* out, std::size_t n,
                          const logistic_table_16& t) noexcept {
  const reg multiplier(t.input_multiplier), rounding_term(t.rounding_term), last_index(255), low16(0xFFFF),
      fraction_mask(0x1FF), positive_offset(1 << 9), negative_offset((1 << 25) + (1 << 9) - 1);
  const int shift = t.input_left_shift;
  unary_blocks(in, out, n, [&](const std::int16_t* pi, std::int16_t* po) {
    reg x[lanes::regs];
    lanes::widen_16(pi, x);
    for (int j = 0; j < lanes::regs; ++j) {
      const reg input = (x[j] * multiplier + rounding_term) >> shift;
      const reg magnitude = xsimd::abs(input);
      const reg entry = lanes::gather(t.entries.data(), xsimd::min(magnitude >> 9, last_index));
      const reg q25 = ((entry & low16) << 9) + (magnitude & fraction_mask) * (entry >> 16);
      const reg positive = q25 + positive_offset, negative = negative_offset - q25;
      x[j] = (positive ^ ((positive ^ negative) & (input >> 31))) >> 10;
    }
    lanes::narrow_16(po, x);
  });
}

/// scalar::bilinear_element on lanes, 16 channels of one output pixel per step; the tail through padded copies.
template <rounding R>
void bilinear_span(const bilinear_taps& taps, const bilinear_weights& w, std::int16_t* out, std::size_t n) noexcept {
  const reg top(w.top), bottom(w.bottom), left_weight(w.left), right_weight(w.right), fraction(1023), offset(1 << 19),
      one(1);
  const auto block_fn = [&](const bilinear_taps& t, std::int16_t* po) {
    reg tl[lanes::regs], bl[lanes::regs], tr[lanes::regs], br[lanes::regs];
    lanes::widen_16(t.top_left, tl);
    lanes::widen_16(t.bottom_left, bl);
    lanes::widen_16(t.top_right, tr);
    lanes::widen_16(t.bottom_right, br);
    for (int j = 0; j < lanes::regs; ++j) {
      const reg left = tl[j] * top + bl[j] * bottom, right = tr[j] * top + br[j] * bottom;
      const reg high = (left >> 10) * left_weight + (right >> 10) * right_weight;
      const reg low = (left & fraction) * left_weight + (right & fraction) * right_weight;
      reg r = offset;
      if constexpr (R == rounding::tflite_reference) r += (high + ((low - one) >> 10)) >> 31;  // -1 where sum <= 0
      tl[j] = (high + ((low + r) >> 10)) >> 10;
    }
    lanes::narrow_16(po, tl);
  };
  std::size_t i = 0;
  for (; i + block <= n; i += block)
    block_fn({taps.top_left + i, taps.bottom_left + i, taps.top_right + i, taps.bottom_right + i}, out + i);
  if (i == n) return;
  std::array<std::array<std::int16_t, block>, 5> tail{};
  std::copy_n(taps.top_left + i, n - i, tail[0].begin());
  std::copy_n(taps.bottom_left + i, n - i, tail[1].begin());
  std::copy_n(taps.top_right + i, n - i, tail[2].begin());
  std::copy_n(taps.bottom_right + i, n - i, tail[3].begin());
  block_fn({tail[0].data(), tail[1].data(), tail[2].data(), tail[3].data()}, tail[4].data());
  std::copy_n(tail[4].begin(), n - i, out + i);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16::vector

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16 {
/// The spans a SIMD target runs.
namespace native = vector;
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::eltwise16

#endif  // MOSAIQ_TARGET_SIMD
