// Reference general 2-D convolution (groups = 1): uint8 per-tensor, int8 per-channel and float,
// TFLite reference semantics, any kernel, stride, dilation and padding. Filter [Cout][KH][KW][Cin];
// Cin comes from the input view, Cout from the output view.
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

struct conv2d_params {
  hw kernel{3, 3};
  hw stride{1, 1};
  hw dilation{1, 1};
  padding pad = padding::same();
};

namespace detail {
// One group reading every input channel; [Cout][KH][KW][Cin] puts tap (oc, fy, fx, ic) at
// ((oc * KH + fy) * KW + fx) * Cin + ic.
inline grouped_conv conv2d_as_grouped(const conv2d_params& p, int input_channels, int output_channels) noexcept {
  const std::ptrdiff_t cin = input_channels, row = p.kernel.w * cin;
  return {.kernel = p.kernel,
          .stride = p.stride,
          .dilation = p.dilation,
          .pad = p.pad,
          .input_channels_per_group = input_channels,
          .output_channels_per_group = output_channels,
          .filter = {.out_channel = p.kernel.h * row, .row = row, .column = cin, .in_channel = 1}};
}
}  // namespace detail

/// Quantized convolution: acc = sum over in-image taps and input channels of
/// (w - filter_zp) * (x - input_zp) in int32, + bias, requantize<R>, + output zero point, clamp.
/// `bias` has Cout entries or is nullptr. Misuse is reported and leaves `output` untouched.
/// `output` must not overlap `input`.
template <rounding R, quantized_element T>
void conv2d(tensor_view<const std::type_identity_t<T>> input, const T* filter, const std::int32_t* bias,
            tensor_view<std::type_identity_t<T>> output, const conv2d_params& p, const conv_requant& q) {
  detail::convolve_quantized<R, T>(input, filter, bias, output,
                                   detail::conv2d_as_grouped(p, input.channels(), output.channels()), q);
}

/// Float convolution: sum of x * w in (fy, fx, ic) order, + bias, activation.
inline void conv2d(tensor_view<const float> input, const float* filter, const float* bias, tensor_view<float> output,
                   const conv2d_params& p, activation act) {
  detail::convolve_float(input, filter, bias, output, detail::conv2d_as_grouped(p, input.channels(), output.channels()),
                         act);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
