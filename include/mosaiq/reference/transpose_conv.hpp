// Reference transposed convolution (TFLite TRANSPOSE_CONV with bias): uint8 per-tensor, int8 per-channel and float.
// Filter [Cout][KH][KW][Cin] as TFLite stores it; Cin comes from the input view, Cout and the output extents from the
// output view (TFLite's output_shape tensor). The definition is the scatter-add of TFLite's reference kernel: input
// pixel (iy, ix) adds x * w[oc][fy][fx] into output pixel (iy * sh - pad_h + fy, ix * sw - pad_w + fx) where that is
// inside the output, all in int32; then bias, requantization, zero point and clamp per output element. The pads are
// TFLite's: its ComputePaddingHeightWidth run on the OUTPUT extents, i.e. the pads of the forward convolution that
// would map the output back to the input (SAME: max((in - 1) * s + k - out, 0) / 2 before; VALID: 0). Plain loops and
// a heap accumulator: this is the oracle of ops/transpose_conv.hpp, clarity wins over speed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

struct transpose_conv_params {
  hw kernel{2, 2};
  hw stride{2, 2};
  mosaiq::padding padding = mosaiq::padding::same();
};

/// The output extent TensorFlow's conv2d_transpose (and Keras) gives TRANSPOSE_CONV's output_shape: SAME in * s,
/// VALID in * s + max(k - s, 0).
constexpr int transpose_conv_output_extent(int in, int kernel, int stride, padding_mode mode) noexcept {
  return mode == padding_mode::valid ? in * stride + std::max(kernel - stride, 0) : in * stride;
}

/// The leading pads TFLite's TRANSPOSE_CONV uses for an output of `out` extents (see the file comment).
constexpr hw transpose_conv_pads(shape out, const transpose_conv_params& p) noexcept {
  const window_geometry g = resolve_window(out.height, out.width, p.kernel, p.stride, hw{1, 1}, p.padding);
  return {g.y.pad_before, g.x.pad_before};
}

namespace detail::transpose_conv {

/// The views, filter and parameters a transposed convolution can run on; reports the first problem.
template <class T, class U>
bool check(const tensor_view<const T>& input, const void* filter, const tensor_view<U>& output,
           const transpose_conv_params& p) {
  return check_view(input, "transpose_conv: input") && check_view(output, "transpose_conv: output") &&
         require(filter != nullptr, errc::invalid_argument, "transpose_conv: filter is null") &&
         require(input.batch() == output.batch(), errc::shape_mismatch,
                 "transpose_conv: input and output batch differ") &&
         require(
             is_valid_window(p.kernel, p.stride, hw{1, 1}, p.padding) && p.padding.mode != padding_mode::explicit_pads,
             errc::invalid_argument, "transpose_conv: kernel and stride must be positive, padding SAME or VALID");
}

/// Calls add(n, oy, ox, oc, x, w) for every (input element, filter tap) pair that lands inside the output: TFLite's
/// scatter order (input pixel, then filter row, column, output channel).
template <class T, class W, class U, class Add>
void scatter(const tensor_view<const T>& input, const W* filter, const tensor_view<U>& output,
             const transpose_conv_params& p, Add add) {
  const hw pad = transpose_conv_pads(output.dims(), p);
  const int cin = input.channels(), kh = p.kernel.h, kw = p.kernel.w;
  for (int n = 0; n < input.batch(); ++n)
    for (int iy = 0; iy < input.height(); ++iy)
      for (int ix = 0; ix < input.width(); ++ix)
        for (int ic = 0; ic < cin; ++ic) {
          const T x = input.pixel(n, iy, ix)[ic];
          for (int fy = 0; fy < kh; ++fy)
            for (int fx = 0; fx < kw; ++fx) {
              const int oy = iy * p.stride.h - pad.h + fy, ox = ix * p.stride.w - pad.w + fx;
              if (oy < 0 || oy >= output.height() || ox < 0 || ox >= output.width()) continue;
              for (int oc = 0; oc < output.channels(); ++oc)
                add(n, oy, ox, oc, x, filter[((static_cast<std::ptrdiff_t>(oc) * kh + fy) * kw + fx) * cin + ic]);
            }
        }
}

/// One int32 (or float) accumulator per output element, NHWC over the output's extents.
template <class A, class U>
struct accumulators {
  const tensor_view<U>& output;
  std::vector<A> values;
  explicit accumulators(const tensor_view<U>& out)
      : output(out), values(static_cast<std::size_t>(out.batch()) * out.dims().elements(), A{}) {}
  A& operator()(int n, int y, int x, int c) {
    const std::size_t pixel = (static_cast<std::size_t>(n) * output.height() + y) * output.width() + x;
    return values[pixel * static_cast<std::size_t>(output.channels()) + c];
  }
};

}  // namespace detail::transpose_conv

/// Quantized transposed convolution: acc = sum of (x - input_zp) * (w - filter_zp) over the (input, tap) pairs that
/// land on an output element, in int32, + bias[oc], requantize<R> with the output channel's scale, + output zero
/// point, clamp (q's activation range). `bias` has Cout entries or is nullptr. Misuse is reported and leaves `output`
/// untouched; `output` must not overlap `input`.
template <rounding R, quantized_element T>
void transpose_conv(tensor_view<const std::type_identity_t<T>> input, const T* filter, const std::int32_t* bias,
                    tensor_view<std::type_identity_t<T>> output, const transpose_conv_params& p,
                    const conv_requant& q) {
  if (!detail::transpose_conv::check(input, filter, output, p) || !check_conv_requant<R, T>(q, output.channels()))
    return;
  detail::transpose_conv::accumulators<std::int32_t, T> acc(output);
  detail::transpose_conv::scatter(input, filter, output, p, [&](int n, int y, int x, int c, T v, T w) {
    acc(n, y, x, c) += (std::int32_t{v} - q.input_zero_point) * (std::int32_t{w} - q.filter_zero_point);
  });
  for (int n = 0; n < output.batch(); ++n)
    for (int y = 0; y < output.height(); ++y)
      for (int x = 0; x < output.width(); ++x)
        for (int c = 0; c < output.channels(); ++c)
          output.pixel(n, y, x)[c] = requantize<R, T>(acc(n, y, x, c) + (bias != nullptr ? bias[c] : 0), q.scale_for(c),
                                                      q.output_zero_point, q.clamp.min, q.clamp.max);
}

/// Float transposed convolution: the same scatter of x * w, + bias, activation.
inline void transpose_conv(tensor_view<const float> input, const float* filter, const float* bias,
                           tensor_view<float> output, const transpose_conv_params& p, activation act) {
  if (!detail::transpose_conv::check(input, filter, output, p)) return;
  detail::transpose_conv::accumulators<float, float> acc(output);
  detail::transpose_conv::scatter(input, filter, output, p,
                                  [&](int n, int y, int x, int c, float v, float w) { acc(n, y, x, c) += v * w; });
  for (int n = 0; n < output.batch(); ++n)
    for (int y = 0; y < output.height(); ++y)
      for (int x = 0; x < output.width(); ++x)
        for (int c = 0; c < output.channels(); ++c)
          output.pixel(n, y, x)[c] = apply_activation(act, acc(n, y, x, c) + (bias != nullptr ? bias[c] : 0.0f));
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
