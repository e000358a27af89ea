// Reference depthwise convolution: TFLite's reference DepthwiseConv (uint8 per-tensor with filter
// zero point, int8 per-channel) and the float one, for any kernel, stride, dilation, padding and
// depth multiplier. The oracle the SIMD depthwise kernels are tested against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/accumulate.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

struct depthwise_params {
  hw kernel{3, 3};
  hw stride{1, 1};
  hw dilation{1, 1};
  padding pad = padding::same();
  int depth_multiplier = 1;
};

namespace detail {
// Depthwise is C groups of one input channel and M outputs each; the filter is [KH][KW][C*M],
// so output channel oc's tap (fy, fx) is at (fy * KW + fx) * C*M + oc.
inline grouped_conv depthwise_as_grouped(const depthwise_params& p, int input_channels) noexcept {
  const std::ptrdiff_t filter_channels = static_cast<std::ptrdiff_t>(input_channels) * p.depth_multiplier;
  return {
      .kernel = p.kernel,
      .stride = p.stride,
      .dilation = p.dilation,
      .pad = p.pad,
      .input_channels_per_group = 1,
      .output_channels_per_group = p.depth_multiplier,
      .filter = {.out_channel = 1, .row = p.kernel.w * filter_channels, .column = filter_channels, .in_channel = 0}};
}
}  // namespace detail

/// Quantized depthwise convolution, TFLite reference semantics:
/// output channel m + ic * M; in_x = out_x * stride - pad_before + dilation * fx; out-of-image taps
/// skipped; acc = sum (w - filter_zp) * (x - input_zp) in int32 (+ bias), then
/// multiply_by_quantized_multiplier<R>, + output zero point, clamp.
/// `filter` is [KH][KW][C*M]; `bias` has C*M entries or is nullptr. T is deduced from `filter`, so
/// views of T or const T with any extents convert. Misuse is reported through mosaiq::require and
/// leaves `output` untouched. `output` must not overlap `input`.
template <rounding R, quantized_element T>
void depthwise_conv(tensor_view<const std::type_identity_t<T>> input, const T* filter, const std::int32_t* bias,
                    tensor_view<std::type_identity_t<T>> output, const depthwise_params& p, const conv_requant& q) {
  detail::convolve_quantized<R, T>(input, filter, bias, output, detail::depthwise_as_grouped(p, input.channels()), q);
}

/// Float depthwise convolution (TFLite float reference): sum of x * w, + bias, activation.
inline void depthwise_conv(tensor_view<const float> input, const float* filter, const float* bias,
                           tensor_view<float> output, const depthwise_params& p, activation act) {
  detail::convolve_float(input, filter, bias, output, detail::depthwise_as_grouped(p, input.channels()), act);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
