// Quantized element-wise kernels, bit-exact with reference/eltwise.hpp:
//
//   mosaiq::add<mosaiq::u8> residual(a_quant, b_quant, out_quant, mosaiq::activation::relu6);  // load time
//   residual(a, b, out);          // out may be a or b (in place)
//   mosaiq::concat<mosaiq::i8>(std::span<const mosaiq::reference::concat_input<mosaiq::i8>>(parts), out, out_quant);
//
// add: TFLite's integer ADD pipeline vectorized as written, on blocks of 16 elements widened to int32
// (ops/detail/lanes.hpp): (q + offset) << 20, the two input multipliers, the sum, the output multiplier, the output
// zero point, the activation clamp. Each multiplier step is simd::<isa>::multiply_by_quantized_multiplier with the
// multiplier broadcast, in either rounding mode. Dense views run as one flat array; strided views pixel by pixel.
// A tail of fewer than 16 elements goes through the same vector code on a copy.
//
// concat: an input in the output's quantization is copied (memcpy per pixel, one memcpy when input and output are
// the same dense tensor, nothing when the input already is its destination slice); any other input is rescaled with
// the reference's float formula q * scale + bias, rounded half away from zero (trunc plus an exact fraction test),
// plus the output zero point, saturated. Without an ISA (scalar builds) both call the reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/lanes.hpp"
#include "mosaiq/reference/eltwise.hpp"

namespace mosaiq {

namespace detail::eltwise {

#if defined(MOSAIQ_LANES)
/// The add_params decoded into broadcast registers once per call.
template <rounding R>
struct add_regs {
  lanes::reg offset1, offset2, output_offset, clamp_min, clamp_max;
  lanes::scale_regs input1, input2, output;

  explicit add_regs(const reference::add_params& p) noexcept
      : offset1(lanes::isa::set1(p.input1_offset)),
        offset2(lanes::isa::set1(p.input2_offset)),
        output_offset(lanes::isa::set1(p.output_offset)),
        clamp_min(lanes::isa::set1(p.clamp.min)),
        clamp_max(lanes::isa::set1(p.clamp.max)),
        input1(lanes::scale_regs::of(prepare_scale<R>(p.input1_multiplier))),
        input2(lanes::scale_regs::of(prepare_scale<R>(p.input2_multiplier))),
        output(lanes::scale_regs::of(prepare_scale<R>(p.output_multiplier))) {}
};

/// 16 elements of reference::detail::add_element.
template <rounding R, quantized_element T>
[[gnu::always_inline]] inline void add_block(const T* a, const T* b, T* out, const add_regs<R>& k) noexcept {
  using isa = lanes::isa;
  lanes::reg va[isa::regs], vb[isa::regs];
  isa::widen(a, va);
  isa::widen(b, vb);
  for (int j = 0; j < isa::regs; ++j) {
    const lanes::reg shifted1 = isa::shift_left(isa::add(va[j], k.offset1), reference::add_params::left_shift);
    const lanes::reg shifted2 = isa::shift_left(isa::add(vb[j], k.offset2), reference::add_params::left_shift);
    const lanes::reg scaled1 =
        isa::template multiply<R>(shifted1, k.input1.multiplier, k.input1.left_shift, k.input1.right_shift);
    const lanes::reg scaled2 =
        isa::template multiply<R>(shifted2, k.input2.multiplier, k.input2.left_shift, k.input2.right_shift);
    const lanes::reg sum = isa::add(scaled1, scaled2);
    const lanes::reg raw =
        isa::add(isa::template multiply<R>(sum, k.output.multiplier, k.output.left_shift, k.output.right_shift),
                 k.output_offset);
    va[j] = isa::min(isa::max(raw, k.clamp_min), k.clamp_max);
  }
  isa::template narrow<T>(out, va);
}

template <rounding R, quantized_element T>
inline void add_span(const T* a, const T* b, T* out, std::size_t n, const add_regs<R>& k) noexcept {
  std::size_t i = 0;
  for (; i + lanes::block <= n; i += lanes::block) add_block<R, T>(a + i, b + i, out + i, k);
  if (i < n) {
    T ta[lanes::block] = {}, tb[lanes::block] = {}, to[lanes::block];
    std::memcpy(ta, a + i, (n - i) * sizeof(T));
    std::memcpy(tb, b + i, (n - i) * sizeof(T));
    add_block<R, T>(ta, tb, to, k);
    std::memcpy(out + i, to, (n - i) * sizeof(T));
  }
}

/// reference::detail::concat_rescale in broadcast registers.
struct rescale_regs {
  lanes::freg scale, bias;
  lanes::reg zero_point, lo, hi;
};

template <quantized_element T>
[[gnu::always_inline]] inline void rescale_block(const T* in, T* out, const rescale_regs& k) noexcept {
  using isa = lanes::isa;
  lanes::reg v[isa::regs];
  isa::widen(in, v);
  for (int j = 0; j < isa::regs; ++j) {
    // Two roundings, as the reference: the product, then the sum (no FMA; mosaiq builds with -ffp-contract=off).
    const lanes::freg product = isa::fmul(isa::to_float(v[j]), k.scale);
    const lanes::freg sum = isa::fadd(product, k.bias);
    const lanes::reg value = isa::add(lanes::round_half_away(sum), k.zero_point);
    v[j] = isa::min(isa::max(value, k.lo), k.hi);
  }
  isa::template narrow<T>(out, v);
}

template <quantized_element T>
inline void rescale_span(const T* in, T* out, std::size_t n, const rescale_regs& k) noexcept {
  std::size_t i = 0;
  for (; i + lanes::block <= n; i += lanes::block) rescale_block<T>(in + i, out + i, k);
  if (i < n) {
    T ti[lanes::block] = {}, to[lanes::block];
    std::memcpy(ti, in + i, (n - i) * sizeof(T));
    rescale_block<T>(ti, to, k);
    std::memcpy(out + i, to, (n - i) * sizeof(T));
  }
}
#endif

/// Whether a and b are the same elements laid out the same way.
template <class A, class B>
bool same_view(const A& a, const B& b) noexcept {
  return static_cast<const void*>(a.data()) == static_cast<const void*>(b.data()) && a.dims() == b.dims() &&
         a.batch() == b.batch() && a.pixel_stride() == b.pixel_stride();
}

}  // namespace detail::eltwise

/// Quantized residual add with TFLite's ADD requantization, equal bit for bit to reference::add<R, T>. Built once
/// (load time) from the three quantizations and the fused activation; operator() then only computes. Same shape
/// rules as the reference (no broadcasting): a, b and out have the same extents and batch, any pixel strides, and
/// out may be exactly a or b (every block is read before it is written).
template <quantized_element T, rounding R = rounding::tflite_reference>
class add {
 public:
  static constexpr rounding round = R;

  add() = default;
  /// Reports errc::invalid_argument (through make_add_params) and builds an object that refuses to run when the
  /// quantizations are unusable.
  add(quant_params a, quant_params b, quant_params out, activation act = activation::none)
      : params_(reference::make_add_params<T>(a, b, out, act)) {}
  explicit add(const reference::add_params& params) : params_(params) {}

  bool valid() const noexcept { return params_.valid; }
  const reference::add_params& params() const noexcept { return params_; }

  void operator()(tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> out) const {
    if (!check_view(a, "add: input a") || !check_view(b, "add: input b") || !check_view(out, "add: output")) return;
    if (!require(reference::detail::same_extents(a, out) && reference::detail::same_extents(b, out),
                 errc::shape_mismatch, "add: a, b and out must have the same shape and batch (no broadcasting)"))
      return;
    if (!require(params_.valid, errc::invalid_argument, "add: params were not built by a successful make_add_params"))
      return;
#if defined(MOSAIQ_LANES)
    const detail::eltwise::add_regs<R> k(params_);
    if (a.is_dense() && b.is_dense() && out.is_dense()) {
      detail::eltwise::add_span<R, T>(a.data(), b.data(), out.data(),
                                      out.dims().elements() * static_cast<std::size_t>(out.batch()), k);
      return;
    }
    const auto channels = static_cast<std::size_t>(out.channels());
    for (int n = 0; n < out.batch(); ++n)
      for (int y = 0; y < out.height(); ++y)
        for (int x = 0; x < out.width(); ++x)
          detail::eltwise::add_span<R, T>(a.pixel(n, y, x), b.pixel(n, y, x), out.pixel(n, y, x), channels, k);
#else
    reference::add<R, T>(a, b, out, params_);
#endif
  }

 private:
  reference::add_params params_{};
};

namespace detail::eltwise {

/// A function object rather than a function template: see ops/pool.hpp (argument-dependent lookup).
template <quantized_element T>
struct concat_fn {
  void operator()(std::span<const reference::concat_input<T>> inputs, tensor_view<T> out,
                  quant_params out_quant) const {
    if (!check_view(out, "concat: output")) return;
    int channel_total = 0;
    bool needs_rescale = false;
    for (const reference::concat_input<T>& input : inputs) {
      if (!check_view(input.view, "concat: input")) return;
      if (!require(input.view.height() == out.height() && input.view.width() == out.width() &&
                       input.view.batch() == out.batch(),
                   errc::shape_mismatch, "concat: every input must have the output's height, width and batch"))
        return;
      channel_total += input.view.channels();
      needs_rescale = needs_rescale || !(input.quant == out_quant);
      if (!require(
              input.quant == out_quant || (reference::detail::is_usable_scale(input.quant.scale) &&
                                           reference::detail::is_representable_zero_point<T>(input.quant.zero_point)),
              errc::invalid_argument, "concat: an input's scale or zero point is unusable"))
        return;
    }
    if (!require(channel_total == out.channels(), errc::shape_mismatch,
                 "concat: the inputs' channel counts must add up to the output's"))
      return;
    if (!require(!needs_rescale || (reference::detail::is_usable_scale(out_quant.scale) &&
                                    reference::detail::is_representable_zero_point<T>(out_quant.zero_point)),
                 errc::invalid_argument, "concat: the output's scale or zero point is unusable"))
      return;

    int first_channel = 0;
    for (const reference::concat_input<T>& input : inputs) {
      const tensor_view<T> slice = out.channel_slice(first_channel, input.view.channels());
      first_channel += input.view.channels();
      if (slice.dims().elements() == 0) continue;
      const auto channels = static_cast<std::size_t>(slice.channels());
      const bool flat = input.view.is_dense() && slice.is_dense();
      const std::size_t flat_count = slice.dims().elements() * static_cast<std::size_t>(slice.batch());
      if (input.quant == out_quant) {
        if (same_view(input.view, slice)) continue;  // already in place
        if (flat) {
          std::memcpy(slice.data(), input.view.data(), flat_count * sizeof(T));
          continue;
        }
        for (int n = 0; n < slice.batch(); ++n)
          for (int y = 0; y < slice.height(); ++y)
            for (int x = 0; x < slice.width(); ++x)
              std::memcpy(slice.pixel(n, y, x), input.view.pixel(n, y, x), channels * sizeof(T));
        continue;
      }
      const reference::detail::concat_rescale rescale(input.quant, out_quant);
#if defined(MOSAIQ_LANES)
      if (std::isfinite(rescale.scale) && std::isfinite(rescale.bias)) {
        using isa = lanes::isa;
        const rescale_regs k{isa::fset1(rescale.scale), isa::fset1(rescale.bias), isa::set1(rescale.output_zero_point),
                             isa::set1(element_traits<T>::min), isa::set1(element_traits<T>::max)};
        if (flat) {
          rescale_span<T>(input.view.data(), slice.data(), flat_count, k);
          continue;
        }
        for (int n = 0; n < slice.batch(); ++n)
          for (int y = 0; y < slice.height(); ++y)
            for (int x = 0; x < slice.width(); ++x)
              rescale_span<T>(input.view.pixel(n, y, x), slice.pixel(n, y, x), channels, k);
        continue;
      }
#endif
      // Scalar builds, and scales whose float ratio overflows: the reference's element loop.
      for (int n = 0; n < slice.batch(); ++n)
        for (int y = 0; y < slice.height(); ++y)
          for (int x = 0; x < slice.width(); ++x) {
            const T* source = input.view.pixel(n, y, x);
            T* destination = slice.pixel(n, y, x);
            for (std::size_t c = 0; c < channels; ++c) destination[c] = rescale(source[c]);
          }
    }
  }
};

}  // namespace detail::eltwise

/// Channel concat, equal bit for bit to reference::concat<T> (same contract: inputs in order fill consecutive
/// channel ranges of out; out may be a channel slice of a wider tensor; an input may be exactly its destination
/// slice, other overlaps are not allowed). On misuse nothing is written.
template <quantized_element T>
inline constexpr detail::eltwise::concat_fn<T> concat{};

}  // namespace mosaiq
