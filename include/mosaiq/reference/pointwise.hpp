// Reference pointwise (1x1, stride 1) convolution: uint8 per-tensor, int8 per-channel and float,
// TFLite reference semantics. Filter [Cout][Cin]; Cin comes from the input view, Cout from the
// output view.
#pragma once

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

namespace detail {
// One group reading every input channel; output channel oc's weights are row oc of [Cout][Cin].
inline grouped_conv pointwise_as_grouped(int input_channels, int output_channels) noexcept {
  return {.kernel = {1, 1},
          .stride = {1, 1},
          .dilation = {1, 1},
          .pad = padding::valid(),
          .input_channels_per_group = input_channels,
          .output_channels_per_group = output_channels,
          .filter = {.out_channel = input_channels, .row = 0, .column = 0, .in_channel = 1}};
}
}  // namespace detail

/// Quantized 1x1 convolution: acc = sum over ic of (w[oc][ic] - filter_zp) * (x[ic] - input_zp),
/// + bias, requantize<R>, + output zero point, clamp. Input and output have the same height, width
/// and batch. `bias` has Cout entries or is nullptr. Misuse leaves `output` untouched.
template <rounding R, quantized_element T>
void pointwise_conv(tensor_view<const std::type_identity_t<T>> input, const T* filter, const std::int32_t* bias,
                    tensor_view<std::type_identity_t<T>> output, const conv_requant& q) {
  detail::convolve_quantized<R, T>(input, filter, bias, output,
                                   detail::pointwise_as_grouped(input.channels(), output.channels()), q);
}

/// Float 1x1 convolution: sum of x * w, + bias, activation.
inline void pointwise_conv(tensor_view<const float> input, const float* filter, const float* bias,
                           tensor_view<float> output, activation act) {
  detail::convolve_float(input, filter, bias, output, detail::pointwise_as_grouped(input.channels(), output.channels()),
                         act);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
