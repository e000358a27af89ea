// The one accumulation loop every reference convolution shares. Depthwise, pointwise and conv2d
// are all grouped convolutions that differ only in how many channels a group reads and writes and
// in the filter's memory layout, so each describes itself as a `grouped_conv` and runs this loop:
// the TFLite index arithmetic (tap positions, skipped out-of-image taps, channel mapping) lives in
// one place.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference::detail {

/// Element distance between neighbouring filter values along each filter axis. Describes both
/// TFLite layouts without repacking: depthwise [KH][KW][C*M] and conv [Cout][KH][KW][Cin].
struct filter_strides {
  std::ptrdiff_t out_channel = 0;
  std::ptrdiff_t row = 0;
  std::ptrdiff_t column = 0;
  std::ptrdiff_t in_channel = 0;
};

/// A convolution split into independent groups: output channel `oc` belongs to group
/// `oc / output_channels_per_group` and reads that group's `input_channels_per_group` consecutive
/// input channels. TFLite depthwise is groups = C, 1 input and M outputs per group, which gives
/// its `oc = ic * M + m`; conv2d is a single group.
struct grouped_conv {
  hw kernel{1, 1};
  hw stride{1, 1};
  hw dilation{1, 1};
  padding pad = padding::valid();
  int input_channels_per_group = 1;
  int output_channels_per_group = 1;
  filter_strides filter{};
};

/// Validates views, window and channel counts before anything is touched.
template <class In, class W, class Out>
bool check_grouped_conv(const tensor_view<const In>& input, const W* filter, const tensor_view<Out>& output,
                        const grouped_conv& conv) {
  if (!check_view(input, "conv: invalid input view") || !check_view(output, "conv: invalid output view") ||
      !require(filter != nullptr, errc::null_pointer, "conv: filter is null") ||
      !require(is_valid_window(conv.kernel, conv.stride, conv.dilation, conv.pad), errc::invalid_argument,
               "conv: kernel, stride and dilation must be >= 1 and pads >= 0") ||
      !require(conv.input_channels_per_group >= 1 && conv.output_channels_per_group >= 1, errc::invalid_argument,
               "conv: need at least one input channel and one output channel (depth multiplier >= 1)") ||
      !require(output.batch() == input.batch(), errc::shape_mismatch, "conv: input and output batch differ"))
    return false;
  const int groups = input.channels() / conv.input_channels_per_group;
  if (!require(input.channels() % conv.input_channels_per_group == 0 &&
                   output.channels() == groups * conv.output_channels_per_group,
               errc::shape_mismatch,
               "conv: output channels must be input channels * depth multiplier (depthwise) and match the filter"))
    return false;
  const window_geometry g =
      resolve_window(input.height(), input.width(), conv.kernel, conv.stride, conv.dilation, conv.pad);
  return require(output.height() == g.y.output && output.width() == g.x.output, errc::shape_mismatch,
                 "conv: output height/width differ from what input, kernel, stride, dilation and padding give");
}

/// For every output element: sum over the in-image taps of its window of
/// (filter + filter_offset) * (input + input_offset), then store finish(output_channel, sum).
/// Offsets are TFLite's (minus the zero points; 0 for float). Taps outside the image are skipped,
/// as TFLite's reference kernels do, which equals padding with the input zero point.
/// Each sum runs over (fy, fx, k) in that order; a pixel's output channels are summed `lanes` at a
/// time, so their independent chains overlap instead of each waiting on its own additions (a float
/// sum gets the same bits as alone, one channel after another).
template <class Acc, class In, class W, class Out, class Finish>
void convolve(const tensor_view<const In>& input, const W* filter, const tensor_view<Out>& output,
              const grouped_conv& conv, Acc input_offset, Acc filter_offset, Finish finish) {
  const window_geometry g =
      resolve_window(input.height(), input.width(), conv.kernel, conv.stride, conv.dilation, conv.pad);
  const int taps_per_group = conv.input_channels_per_group;
  constexpr int lanes = 8;
  for (int n = 0; n < output.batch(); ++n) {
    for (int out_y = 0; out_y < output.height(); ++out_y) {
      for (int out_x = 0; out_x < output.width(); ++out_x) {
        Out* out_pixel = output.pixel(n, out_y, out_x);
        for (int first_c = 0; first_c < output.channels(); first_c += lanes) {
          const int count = std::min(lanes, output.channels() - first_c);
          Acc acc[lanes]{};
          int group_first_in[lanes]{};  // first input channel of each channel's group
          for (int b = 0; b < count; ++b)
            group_first_in[b] = ((first_c + b) / conv.output_channels_per_group) * taps_per_group;
          for (int fy = 0; fy < conv.kernel.h; ++fy) {
            const int in_y = out_y * conv.stride.h - g.y.pad_before + conv.dilation.h * fy;
            if (in_y < 0 || in_y >= input.height()) continue;
            for (int fx = 0; fx < conv.kernel.w; ++fx) {
              const int in_x = out_x * conv.stride.w - g.x.pad_before + conv.dilation.w * fx;
              if (in_x < 0 || in_x >= input.width()) continue;
              const In* in_pixel = input.pixel(n, in_y, in_x);
              const W* taps = filter + fy * conv.filter.row + fx * conv.filter.column;
              for (int k = 0; k < taps_per_group; ++k) {
                const W* taps_k = taps + k * conv.filter.in_channel;
                for (int b = 0; b < count; ++b) {
                  const Acc w = static_cast<Acc>(taps_k[(first_c + b) * conv.filter.out_channel]) + filter_offset;
                  const Acc x = static_cast<Acc>(in_pixel[group_first_in[b] + k]) + input_offset;
                  acc[b] += w * x;
                }
              }
            }
          }
          for (int b = 0; b < count; ++b) out_pixel[first_c + b] = finish(first_c + b, acc[b]);
        }
      }
    }
  }
}

/// Quantized grouped convolution: int32 accumulation, + bias, requantize<R>, + zero point, clamp.
template <rounding R, quantized_element T>
void convolve_quantized(const tensor_view<const T>& input, const T* filter, const std::int32_t* bias,
                        const tensor_view<T>& output, const grouped_conv& conv, const conv_requant& q) {
  if (!check_grouped_conv(input, filter, output, conv) || !check_conv_requant<R, T>(q, output.channels())) return;
  convolve<std::int32_t>(
      input, filter, output, conv, -q.input_zero_point, -q.filter_zero_point, [&](int out_c, std::int32_t acc) {
        if (bias != nullptr) acc += bias[out_c];
        return requantize<R, T>(acc, q.scale_for(out_c), q.output_zero_point, q.clamp.min, q.clamp.max);
      });
}

/// Float grouped convolution: float accumulation in tap order (fy, fx, channel), + bias, activation.
inline void convolve_float(const tensor_view<const float>& input, const float* filter, const float* bias,
                           const tensor_view<float>& output, const grouped_conv& conv, activation act) {
  if (!check_grouped_conv(input, filter, output, conv)) return;
  convolve<float>(input, filter, output, conv, 0.0f, 0.0f, [&](int out_c, float acc) {
    return apply_activation(act, bias != nullptr ? acc + bias[out_c] : acc);
  });
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference::detail
