// XNNPACK op by op: the baseline of the whole-network benchmarks. A small builder creates one
// XNNPACK operator per layer (operator API of the Debian snapshot 0.0~git20220216: create, then setup
// with the buffers; run on the calling thread, or on a pthreadpool) over NHWC buffers it owns, and
// run() runs them all in order — what an application that glues XNNPACK operators together by hand
// does, without a runtime graph or a memory plan (every tensor has its own buffer).
//
//   xnnpack::op_network<u8> x;
//   auto t = x.add_input({256, 256, 3}, input_q);
//   t = x.add_conv(t, {.out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}}, weights...);
//   ...
//   x.run();                                  // every operator, in order
//   x.profile(100, tags);                     // ms per operator group (from_network: per mosaiq layer)
//
// Or from a mosaiq static network and its weights, layer for layer (from_network<Net>): the same
// shapes, weights and quantization, so the two compute the same function up to XNNPACK's rounding.
//
// Element types: u8 runs the qu8 operators (per-tensor filters with a zero point); i8 runs qc8
// convolutions (per-channel filters), qs8 add and global average pooling, s8 resize. Concatenation
// is one x8 copy operator per input into its channel slice (inputs must share the output's
// quantization, as XNNPACK's subgraph concatenate requires). The snapshot has softmax only for qu8:
// an i8 softmax flips the sign bit of its input and output (x ^ 0x80 maps int8 with zero point z to
// uint8 with zero point z + 128) around the qu8 operator; those two byte loops are timed too.
// The selfie models' kinds: mul is multiply_nd (qu8/qs8, numpy broadcasting: a 1x1xC gate over a map),
// logistic the qu8/qs8 sigmoid, transpose_conv deconvolution2d (its qs8 operator takes one filter scale, so an
// i8 layer's per-channel scales must be equal: one output channel in the selfie models), an average_pool whose
// window is the whole map the global average pooling. The snapshot has no 8-bit hardswish: hard_swish is three
// operators, convert to f32, the f32 hardswish, convert back (what a model falls back to with this XNNPACK),
// with an f32 buffer counted in activation_bytes().
#pragma once

#include <xnnpack.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common.hpp"
#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/resize_mode.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/net/layers.hpp"
#include "mosaiq/net/network.hpp"
#include "mosaiq/reference/softmax.hpp"
#include "xnnpack_conv.hpp"

namespace mosaiq::bench::xnnpack {

/// Filter, bias and filter quantization of a convolution in TFLite's layouts (conv [Cout][KH][KW][Cin],
/// depthwise [KH][KW][C*M]); XNNPACK packs them at creation, so they need not outlive the call.
template <quantized_element T>
struct conv_weights_view {
  const T* filter = nullptr;
  const std::int32_t* bias = nullptr;
  std::span<const float> filter_scales;  ///< one (u8) or one per output channel (i8)
  std::int32_t filter_zero_point = 0;    ///< u8 only
};

struct conv_desc {
  int out_channels = 0;  ///< depthwise: channels * depth multiplier
  hw kernel{1, 1};
  hw stride{1, 1};
  hw dilation{1, 1};
  padding pad = padding::same();
  bool depthwise = false;
  activation act = activation::none;
};

template <quantized_element T>
class op_network {
  static constexpr bool is_u8 = std::same_as<T, u8>;

 public:
  /// A tensor of the builder: an index into its buffers.
  using tensor = int;

  op_network() { initialize(); }
  op_network(const op_network&) = delete;
  op_network& operator=(const op_network&) = delete;

  tensor add_input(shape dims, quant_params q) { return add_buffer(dims, q); }

  /// Convolution (dense, or depthwise with desc.depthwise) with TFLite SAME/VALID/explicit padding.
  tensor add_conv(tensor in, const conv_desc& d, const conv_weights_view<T>& w, quant_params out_q) {
    const buffer& x = buffers_[std::size_t(in)];
    const shape is = x.dims;
    const window_geometry g = resolve_window(is.height, is.width, d.kernel, d.stride, d.dilation, d.pad);
    const tensor out = add_buffer({g.y.output, g.x.output, d.out_channels}, out_q);
    buffer& y = buffers_[std::size_t(out)];
    std::uint32_t flags = d.depthwise ? XNN_FLAG_DEPTHWISE_CONVOLUTION : 0u;
    std::uint32_t top = 0, right = 0, bottom = 0, left = 0;
    if (d.pad.mode == padding_mode::same)
      flags |= XNN_FLAG_TENSORFLOW_SAME_PADDING;  // XNNPACK derives TensorFlow's pads itself
    else if (d.pad.mode == padding_mode::explicit_pads)
      top = std::uint32_t(d.pad.top), right = std::uint32_t(d.pad.right), bottom = std::uint32_t(d.pad.bottom),
      left = std::uint32_t(d.pad.left);
    const auto groups = std::uint32_t(d.depthwise ? is.channels : 1);
    const std::size_t group_in = d.depthwise ? 1 : std::size_t(is.channels);
    const std::size_t group_out = d.depthwise ? std::size_t(d.out_channels / is.channels) : std::size_t(d.out_channels);
    const clamp_range clamp = activation_range<T>(d.act, out_q);
    xnn_operator_t op = nullptr;
    if constexpr (is_u8) {
      check(xnn_create_convolution2d_nhwc_qu8(
                top, right, bottom, left, std::uint32_t(d.kernel.h), std::uint32_t(d.kernel.w),
                std::uint32_t(d.stride.h), std::uint32_t(d.stride.w), std::uint32_t(d.dilation.h),
                std::uint32_t(d.dilation.w), groups, group_in, group_out, std::size_t(is.channels),
                std::size_t(d.out_channels), std::uint8_t(x.quant.zero_point), x.quant.scale,
                std::uint8_t(w.filter_zero_point), w.filter_scales[0], w.filter, w.bias, std::uint8_t(out_q.zero_point),
                out_q.scale, std::uint8_t(clamp.min), std::uint8_t(clamp.max), flags, &op),
            "xnn_create_convolution2d_nhwc_qu8");
      adopt(op);
      check(xnn_setup_convolution2d_nhwc_qu8(op, 1, std::size_t(is.height), std::size_t(is.width), x.data.data(),
                                             y.data.data(), nullptr),
            "xnn_setup_convolution2d_nhwc_qu8");
    } else {
      // A channel whose filter is all zeros may carry scale 0 (tools::quantize_network); XNNPACK
      // rejects it, and any positive scale gives that channel the same result.
      std::vector<float> kernel_scales(w.filter_scales.begin(), w.filter_scales.end());
      for (float& s : kernel_scales)
        if (!(s > 0.0f)) s = 1.0f;
      check(
          xnn_create_convolution2d_nhwc_qc8(
              top, right, bottom, left, std::uint32_t(d.kernel.h), std::uint32_t(d.kernel.w), std::uint32_t(d.stride.h),
              std::uint32_t(d.stride.w), std::uint32_t(d.dilation.h), std::uint32_t(d.dilation.w), groups, group_in,
              group_out, std::size_t(is.channels), std::size_t(d.out_channels), std::int8_t(x.quant.zero_point),
              x.quant.scale, kernel_scales.data(), w.filter, w.bias, std::int8_t(out_q.zero_point), out_q.scale,
              std::int8_t(clamp.min), std::int8_t(clamp.max), flags, &op),
          "xnn_create_convolution2d_nhwc_qc8");
      adopt(op);
      check(xnn_setup_convolution2d_nhwc_qc8(op, 1, std::size_t(is.height), std::size_t(is.width), x.data.data(),
                                             y.data.data(), nullptr),
            "xnn_setup_convolution2d_nhwc_qc8");
    }
    return out;
  }

  tensor add_depthwise(tensor in, hw kernel, hw stride, hw dilation, int multiplier, const conv_weights_view<T>& w,
                       quant_params out_q, activation act = activation::none, padding pad = padding::same()) {
    const int channels = buffers_[std::size_t(in)].dims.channels * multiplier;
    return add_conv(in, {channels, kernel, stride, dilation, pad, true, act}, w, out_q);
  }

  tensor add_pointwise(tensor in, int out_channels, const conv_weights_view<T>& w, quant_params out_q,
                       activation act = activation::none) {
    return add_conv(in, {out_channels, {1, 1}, {1, 1}, {1, 1}, padding::valid(), false, act}, w, out_q);
  }

  /// Mean over height and width: 1 x 1 x C (XNNPACK's NWC global average pooling over H*W pixels).
  tensor add_global_average_pool(tensor in, quant_params out_q) {
    const buffer& x = buffers_[std::size_t(in)];
    const auto c = std::size_t(x.dims.channels);
    const tensor out = add_buffer({1, 1, x.dims.channels}, out_q);
    buffer& y = buffers_[std::size_t(out)];
    xnn_operator_t op = nullptr;
    if constexpr (is_u8) {
      check(xnn_create_global_average_pooling_nwc_qu8(c, c, c, std::uint8_t(x.quant.zero_point), x.quant.scale,
                                                      std::uint8_t(out_q.zero_point), out_q.scale, 0, 255, 0, &op),
            "xnn_create_global_average_pooling_nwc_qu8");
      adopt(op);
      check(xnn_setup_global_average_pooling_nwc_qu8(op, 1, x.dims.pixels(), x.data.data(), y.data.data(), nullptr),
            "xnn_setup_global_average_pooling_nwc_qu8");
    } else {
      check(xnn_create_global_average_pooling_nwc_qs8(c, c, c, std::int8_t(x.quant.zero_point), x.quant.scale,
                                                      std::int8_t(out_q.zero_point), out_q.scale, -128, 127, 0, &op),
            "xnn_create_global_average_pooling_nwc_qs8");
      adopt(op);
      check(xnn_setup_global_average_pooling_nwc_qs8(op, 1, x.dims.pixels(), x.data.data(), y.data.data(), nullptr),
            "xnn_setup_global_average_pooling_nwc_qs8");
    }
    return out;
  }

  /// Bilinear resize to height x width; keeps the quantization.
  tensor add_resize_bilinear(tensor in, int height, int width, resize_mode mode) {
    const buffer& x = buffers_[std::size_t(in)];
    const auto c = std::size_t(x.dims.channels);
    const tensor out = add_buffer({height, width, x.dims.channels}, x.quant);
    buffer& y = buffers_[std::size_t(out)];
    const std::uint32_t flags = mode == resize_mode::legacy          ? XNN_FLAG_TENSORFLOW_LEGACY_MODE
                                : mode == resize_mode::align_corners ? XNN_FLAG_ALIGN_CORNERS
                                                                     : 0u;
    xnn_operator_t op = nullptr;
    if constexpr (is_u8) {
      check(xnn_create_resize_bilinear2d_nhwc_u8(c, c, c, flags, &op), "xnn_create_resize_bilinear2d_nhwc_u8");
      adopt(op);
      check(xnn_setup_resize_bilinear2d_nhwc_u8(op, 1, std::size_t(x.dims.height), std::size_t(x.dims.width),
                                                std::size_t(height), std::size_t(width), x.data.data(), y.data.data(),
                                                nullptr),
            "xnn_setup_resize_bilinear2d_nhwc_u8");
    } else {
      check(xnn_create_resize_bilinear2d_nhwc_s8(c, c, c, flags, &op), "xnn_create_resize_bilinear2d_nhwc_s8");
      adopt(op);
      check(xnn_setup_resize_bilinear2d_nhwc_s8(op, 1, std::size_t(x.dims.height), std::size_t(x.dims.width),
                                                std::size_t(height), std::size_t(width), x.data.data(), y.data.data(),
                                                nullptr),
            "xnn_setup_resize_bilinear2d_nhwc_s8");
    }
    return out;
  }

  /// a + b (same shape), requantized to out_q, clamped by the activation.
  tensor add_add(tensor a, tensor b, quant_params out_q, activation act = activation::none) {
    const buffer& x = buffers_[std::size_t(a)];
    const buffer& z = buffers_[std::size_t(b)];
    if (!(x.dims == z.dims)) throw std::invalid_argument("xnnpack::op_network::add_add: shapes differ");
    const tensor out = add_buffer(x.dims, out_q);
    buffer& y = buffers_[std::size_t(out)];
    const clamp_range clamp = activation_range<T>(act, out_q);
    const std::size_t dims[4] = {1, std::size_t(x.dims.height), std::size_t(x.dims.width),
                                 std::size_t(x.dims.channels)};
    xnn_operator_t op = nullptr;
    if constexpr (is_u8) {
      check(xnn_create_add_nd_qu8(std::uint8_t(x.quant.zero_point), x.quant.scale, std::uint8_t(z.quant.zero_point),
                                  z.quant.scale, std::uint8_t(out_q.zero_point), out_q.scale, std::uint8_t(clamp.min),
                                  std::uint8_t(clamp.max), 0, &op),
            "xnn_create_add_nd_qu8");
      adopt(op);
      check(xnn_setup_add_nd_qu8(op, 4, dims, 4, dims, x.data.data(), z.data.data(), y.data.data(), nullptr),
            "xnn_setup_add_nd_qu8");
    } else {
      check(xnn_create_add_nd_qs8(std::int8_t(x.quant.zero_point), x.quant.scale, std::int8_t(z.quant.zero_point),
                                  z.quant.scale, std::int8_t(out_q.zero_point), out_q.scale, std::int8_t(clamp.min),
                                  std::int8_t(clamp.max), 0, &op),
            "xnn_create_add_nd_qs8");
      adopt(op);
      check(xnn_setup_add_nd_qs8(op, 4, dims, 4, dims, x.data.data(), z.data.data(), y.data.data(), nullptr),
            "xnn_setup_add_nd_qs8");
    }
    return out;
  }

  /// a * b with numpy broadcasting (a squeeze-and-excitation gate 1 x 1 x C times a map), requantized to out_q.
  tensor add_mul(tensor a, tensor b, quant_params out_q, activation act = activation::none) {
    const buffer& x = buffers_[std::size_t(a)];
    const buffer& z = buffers_[std::size_t(b)];
    const auto extent = [](int p, int q) { return p == q || q == 1 ? p : p == 1 ? q : -1; };
    const shape dims{extent(x.dims.height, z.dims.height), extent(x.dims.width, z.dims.width),
                     extent(x.dims.channels, z.dims.channels)};
    if (dims.height < 0 || dims.width < 0 || dims.channels < 0)
      throw std::invalid_argument("xnnpack::op_network::add_mul: shapes do not broadcast");
    const tensor out = add_buffer(dims, out_q);
    buffer& y = buffers_[std::size_t(out)];
    const clamp_range clamp = activation_range<T>(act, out_q);
    const std::size_t a_dims[4] = {1, std::size_t(x.dims.height), std::size_t(x.dims.width),
                                   std::size_t(x.dims.channels)};
    const std::size_t b_dims[4] = {1, std::size_t(z.dims.height), std::size_t(z.dims.width),
                                   std::size_t(z.dims.channels)};
    xnn_operator_t op = nullptr;
    if constexpr (is_u8) {
      check(xnn_create_multiply_nd_qu8(std::uint8_t(x.quant.zero_point), x.quant.scale,
                                       std::uint8_t(z.quant.zero_point), z.quant.scale, std::uint8_t(out_q.zero_point),
                                       out_q.scale, std::uint8_t(clamp.min), std::uint8_t(clamp.max), 0, &op),
            "xnn_create_multiply_nd_qu8");
      adopt(op);
      check(xnn_setup_multiply_nd_qu8(op, 4, a_dims, 4, b_dims, x.data.data(), z.data.data(), y.data.data(), nullptr),
            "xnn_setup_multiply_nd_qu8");
    } else {
      check(xnn_create_multiply_nd_qs8(std::int8_t(x.quant.zero_point), x.quant.scale, std::int8_t(z.quant.zero_point),
                                       z.quant.scale, std::int8_t(out_q.zero_point), out_q.scale,
                                       std::int8_t(clamp.min), std::int8_t(clamp.max), 0, &op),
            "xnn_create_multiply_nd_qs8");
      adopt(op);
      check(xnn_setup_multiply_nd_qs8(op, 4, a_dims, 4, b_dims, x.data.data(), z.data.data(), y.data.data(), nullptr),
            "xnn_setup_multiply_nd_qs8");
    }
    return out;
  }

  /// Logistic of every element; out_q is TFLite's fixed output quantization (1/256, the type's minimum).
  tensor add_logistic(tensor in, quant_params out_q) {
    const buffer& x = buffers_[std::size_t(in)];
    const auto c = std::size_t(x.dims.channels);
    const tensor out = add_buffer(x.dims, out_q);
    buffer& y = buffers_[std::size_t(out)];
    xnn_operator_t op = nullptr;
    if constexpr (is_u8) {
      check(xnn_create_sigmoid_nc_qu8(c, c, c, std::uint8_t(x.quant.zero_point), x.quant.scale,
                                      std::uint8_t(out_q.zero_point), out_q.scale, 0, 255, 0, &op),
            "xnn_create_sigmoid_nc_qu8");
      adopt(op);
      check(xnn_setup_sigmoid_nc_qu8(op, x.dims.pixels(), x.data.data(), y.data.data(), nullptr),
            "xnn_setup_sigmoid_nc_qu8");
    } else {
      check(xnn_create_sigmoid_nc_qs8(c, c, c, std::int8_t(x.quant.zero_point), x.quant.scale,
                                      std::int8_t(out_q.zero_point), out_q.scale, -128, 127, 0, &op),
            "xnn_create_sigmoid_nc_qs8");
      adopt(op);
      check(xnn_setup_sigmoid_nc_qs8(op, x.dims.pixels(), x.data.data(), y.data.data(), nullptr),
            "xnn_setup_sigmoid_nc_qs8");
    }
    return out;
  }

  /// Hard-swish, requantized to out_q. The snapshot has no 8-bit hardswish, so this is what a model falls back
  /// to with it: dequantize to f32, the f32 hardswish operator, quantize back (three operators, one f32 buffer).
  tensor add_hard_swish(tensor in, quant_params out_q) {
    const buffer& x = buffers_[std::size_t(in)];
    const auto c = std::size_t(x.dims.channels);
    const std::size_t pixels = x.dims.pixels();
    const tensor out = add_buffer(x.dims, out_q);
    buffer& y = buffers_[std::size_t(out)];
    float* wide = float_buffers_.emplace_back(x.dims.elements()).data();
    xnn_operator_t op = nullptr;
    if constexpr (is_u8) {
      check(xnn_create_convert_nc_qu8_f32(c, c, c, x.quant.scale, std::uint8_t(x.quant.zero_point), 0, &op),
            "xnn_create_convert_nc_qu8_f32");
      adopt(op);
      check(xnn_setup_convert_nc_qu8_f32(op, pixels, x.data.data(), wide, nullptr), "xnn_setup_convert_nc_qu8_f32");
    } else {
      check(xnn_create_convert_nc_qs8_f32(c, c, c, x.quant.scale, std::int8_t(x.quant.zero_point), 0, &op),
            "xnn_create_convert_nc_qs8_f32");
      adopt(op);
      check(xnn_setup_convert_nc_qs8_f32(op, pixels, x.data.data(), wide, nullptr), "xnn_setup_convert_nc_qs8_f32");
    }
    check(xnn_create_hardswish_nc_f32(c, c, c, 0, &op), "xnn_create_hardswish_nc_f32");
    adopt(op);
    check(xnn_setup_hardswish_nc_f32(op, pixels, wide, wide, nullptr), "xnn_setup_hardswish_nc_f32");
    if constexpr (is_u8) {
      check(xnn_create_convert_nc_f32_qu8(c, c, c, out_q.scale, std::uint8_t(out_q.zero_point), 0, 255, 0, &op),
            "xnn_create_convert_nc_f32_qu8");
      adopt(op);
      check(xnn_setup_convert_nc_f32_qu8(op, pixels, wide, y.data.data(), nullptr), "xnn_setup_convert_nc_f32_qu8");
    } else {
      check(xnn_create_convert_nc_f32_qs8(c, c, c, out_q.scale, std::int8_t(out_q.zero_point), -128, 127, 0, &op),
            "xnn_create_convert_nc_f32_qs8");
      adopt(op);
      check(xnn_setup_convert_nc_f32_qs8(op, pixels, wide, y.data.data(), nullptr), "xnn_setup_convert_nc_f32_qs8");
    }
    return out;
  }

  /// Transposed convolution (TFLite TRANSPOSE_CONV, filter [Cout][KH][KW][Cin], the layout XNNPACK's
  /// deconvolution packs) with TensorFlow's SAME/VALID output extents: XNNPACK's output is
  /// stride * (in - 1) + kernel, cropped by the SAME padding or extended by an adjustment where the kernel is
  /// shorter than the stride. XNNPACK's qs8 deconvolution takes one filter scale: i8 per-channel filters must
  /// share theirs (the selfie models' last layer has one output channel).
  tensor add_transpose_conv(tensor in, const conv_desc& d, const conv_weights_view<T>& w, quant_params out_q) {
    const buffer& x = buffers_[std::size_t(in)];
    const shape is = x.dims;
    if (d.pad.mode == padding_mode::explicit_pads)
      throw std::invalid_argument("xnnpack::op_network::add_transpose_conv: SAME or VALID only");
    const auto axis = [&](int input, int k, int s) {
      const int full = s * (input - 1) + k;
      const int want = d.pad.mode == padding_mode::valid ? input * s + std::max(k - s, 0) : input * s;
      const int crop = std::max(full - want, 0);
      return std::array<int, 4>{want, crop / 2, crop - crop / 2, std::max(want - full, 0)};
    };
    const auto [out_h, top, bottom, adjust_h] = axis(is.height, d.kernel.h, d.stride.h);
    const auto [out_w, left, right, adjust_w] = axis(is.width, d.kernel.w, d.stride.w);
    const tensor out = add_buffer({out_h, out_w, d.out_channels}, out_q);
    buffer& y = buffers_[std::size_t(out)];
    const clamp_range clamp = activation_range<T>(d.act, out_q);
    const auto u = [](int v) { return std::uint32_t(v); };
    const auto in_c = std::size_t(is.channels), out_c = std::size_t(d.out_channels);
    xnn_operator_t op = nullptr;
    if constexpr (is_u8) {
      check(xnn_create_deconvolution2d_nhwc_qu8(
                u(top), u(right), u(bottom), u(left), u(d.kernel.h), u(d.kernel.w), u(d.stride.h), u(d.stride.w), 1, 1,
                1, in_c, out_c, in_c, out_c, std::uint8_t(x.quant.zero_point), x.quant.scale,
                std::uint8_t(w.filter_zero_point), w.filter_scales[0], w.filter, w.bias, std::uint8_t(out_q.zero_point),
                out_q.scale, std::uint8_t(clamp.min), std::uint8_t(clamp.max), 0, &op),
            "xnn_create_deconvolution2d_nhwc_qu8");
      adopt(op);
      check(xnn_setup_deconvolution2d_nhwc_qu8(op, 1, std::size_t(is.height), std::size_t(is.width), u(adjust_h),
                                               u(adjust_w), x.data.data(), y.data.data(), nullptr),
            "xnn_setup_deconvolution2d_nhwc_qu8");
    } else {
      for (const float s : w.filter_scales)
        if (s != w.filter_scales[0])
          throw std::invalid_argument(
              "xnnpack::op_network::add_transpose_conv: XNNPACK's qs8 deconvolution has one filter scale");
      check(xnn_create_deconvolution2d_nhwc_qs8(u(top), u(right), u(bottom), u(left), u(d.kernel.h), u(d.kernel.w),
                                                u(d.stride.h), u(d.stride.w), 1, 1, 1, in_c, out_c, in_c, out_c,
                                                std::int8_t(x.quant.zero_point), x.quant.scale, w.filter_scales[0],
                                                w.filter, w.bias, std::int8_t(out_q.zero_point), out_q.scale,
                                                std::int8_t(clamp.min), std::int8_t(clamp.max), 0, &op),
            "xnn_create_deconvolution2d_nhwc_qs8");
      adopt(op);
      check(xnn_setup_deconvolution2d_nhwc_qs8(op, 1, std::size_t(is.height), std::size_t(is.width), u(adjust_h),
                                               u(adjust_w), x.data.data(), y.data.data(), nullptr),
            "xnn_setup_deconvolution2d_nhwc_qs8");
    }
    return out;
  }

  /// Channel concatenation: one x8 copy per input into its channel slice of the output.
  tensor add_concat(std::span<const tensor> inputs, quant_params out_q) {
    if (inputs.empty()) throw std::invalid_argument("xnnpack::op_network::add_concat: no inputs");
    shape dims = buffers_[std::size_t(inputs[0])].dims;
    dims.channels = 0;
    for (const tensor t : inputs) {
      const buffer& x = buffers_[std::size_t(t)];
      if (x.dims.height != dims.height || x.dims.width != dims.width)
        throw std::invalid_argument("xnnpack::op_network::add_concat: inputs differ in height or width");
      if (!(x.quant == out_q))
        throw std::invalid_argument(
            "xnnpack::op_network::add_concat: every input must have the output's quantization (XNNPACK copies)");
      dims.channels += x.dims.channels;
    }
    const tensor out = add_buffer(dims, out_q);
    int first = 0;
    for (const tensor t : inputs) {
      const buffer& x = buffers_[std::size_t(t)];
      xnn_operator_t op = nullptr;
      check(xnn_create_copy_nc_x8(std::size_t(x.dims.channels), std::size_t(x.dims.channels),
                                  std::size_t(dims.channels), 0, &op),
            "xnn_create_copy_nc_x8");
      adopt(op);
      check(xnn_setup_copy_nc_x8(op, x.dims.pixels(), x.data.data(), buffers_[std::size_t(out)].data.data() + first,
                                 nullptr),
            "xnn_setup_copy_nc_x8");
      first += x.dims.channels;
    }
    return out;
  }

  /// Softmax over channels (beta 1); output scale 1/256, zero point at the type's minimum.
  tensor add_softmax(tensor in) {
    const buffer& x = buffers_[std::size_t(in)];
    const auto c = std::size_t(x.dims.channels);
    const tensor out = add_buffer(x.dims, reference::probability_output_params<T>);
    xnn_operator_t op = nullptr;
    check(xnn_create_softmax_nc_qu8(c, c, c, x.quant.scale, 0, 1.0f / 256.0f, 0, &op), "xnn_create_softmax_nc_qu8");
    ops_.emplace_back(op);
    auto* target = reinterpret_cast<std::uint8_t*>(buffers_[std::size_t(out)].data.data());
    if constexpr (is_u8) {
      steps_.push_back({op, nullptr, tag_});
      check(xnn_setup_softmax_nc_qu8(op, x.dims.pixels(), x.data.data(), target, nullptr), "xnn_setup_softmax_nc_qu8");
    } else {
      // No qs8 softmax in this snapshot: flip to uint8 (same real values), qu8 softmax, flip back.
      const auto* source = reinterpret_cast<const std::uint8_t*>(x.data.data());
      auto* flipped = reinterpret_cast<std::uint8_t*>(buffers_[std::size_t(add_buffer(x.dims, x.quant))].data.data());
      const std::size_t n = x.dims.elements();
      steps_.push_back({nullptr, [source, flipped, n] { flip_sign_bits(source, flipped, n); }, tag_});
      steps_.push_back({op, nullptr, tag_});
      steps_.push_back({nullptr, [target, n] { flip_sign_bits(target, target, n); }, tag_});
      check(xnn_setup_softmax_nc_qu8(op, x.dims.pixels(), flipped, target, nullptr), "xnn_setup_softmax_nc_qu8");
    }
    return out;
  }

  /// Runs every operator in the order they were added.
  /// Every operator in order; with `threads` (pthreadpool) each operator splits its work over it.
  void run(pthreadpool_t threads = nullptr) const {
    for (const step& s : steps_) run_step(s, threads);
  }

  /// Operators added from now on carry `tag` (from_network: the mosaiq layer index), for profile().
  void set_tag(int tag) noexcept { tag_ = tag; }

  /// Average milliseconds per run of every tag's operators over `runs` runs (after one warm-up),
  /// indexed by tag (untagged steps are not reported); `clock_ms` reads the clock in milliseconds
  /// (default: the steady clock).
  std::vector<double> profile(int runs, std::size_t tags, double (*clock_ms)() = steady_ms) const {
    std::vector<double> ms(tags, 0.0);
    run();
    for (int r = 0; r < runs; ++r)
      for (const step& s : steps_) {
        const double start = clock_ms();
        run_step(s);
        if (s.tag >= 0 && std::size_t(s.tag) < tags) ms[std::size_t(s.tag)] += clock_ms() - start;
      }
    for (double& v : ms) v /= runs;
    return ms;
  }

  shape dims(tensor t) const { return buffers_[std::size_t(t)].dims; }
  quant_params quant(tensor t) const { return buffers_[std::size_t(t)].quant; }
  std::span<T> values(tensor t) { return buffers_[std::size_t(t)].data.span(); }
  std::span<const T> values(tensor t) const { return buffers_[std::size_t(t)].data.span(); }
  /// XNNPACK operators run per frame (an i8 softmax adds two sign-flip loops, not counted).
  std::size_t operator_count() const noexcept { return ops_.size(); }
  /// Bytes of every activation buffer, input included (hard-swish's f32 buffers too): memory an op-by-op graph
  /// without a plan uses.
  std::size_t activation_bytes() const noexcept {
    std::size_t total = 0;
    for (const buffer& b : buffers_) total += b.dims.elements() * sizeof(T);
    for (const aligned_buffer<float>& b : float_buffers_) total += b.size() * sizeof(float);
    return total;
  }

 private:
  struct buffer {
    shape dims;
    quant_params quant;
    aligned_buffer<T> data;
  };
  struct step {
    xnn_operator_t op = nullptr;
    std::function<void()> fn;
    int tag = -1;
  };

  static void run_step(const step& s, pthreadpool_t threads = nullptr) {
    if (s.op != nullptr) {
      // Each operator was set up when it was added; a failure here is a bug.
      if (xnn_run_operator(s.op, threads) != xnn_status_success) throw std::runtime_error("xnn_run_operator failed");
    } else {
      s.fn();
    }
  }

  static double steady_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  static void flip_sign_bits(const std::uint8_t* in, std::uint8_t* out, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(in[i] ^ 0x80u);
  }

  tensor add_buffer(shape dims, quant_params q) {
    buffers_.push_back({dims, q, aligned_buffer<T>(dims.elements())});
    return static_cast<tensor>(buffers_.size() - 1);
  }

  void adopt(xnn_operator_t op) {
    ops_.emplace_back(op);
    steps_.push_back({op, nullptr, tag_});
  }

  std::deque<buffer> buffers_;                       // a deque: buffers never move, operators hold their addresses
  std::deque<aligned_buffer<float>> float_buffers_;  // hard-swish's f32 detour
  std::vector<operator_ptr> ops_;
  std::vector<step> steps_;
  int tag_ = -1;
};

namespace detail {

/// A layer's layers::conv_weights as the builder takes them.
template <quantized_element T, class W>
conv_weights_view<T> weights_view(const W& w) {
  return {w.filter.data(), w.bias.data(), std::span<const float>(w.filter_scales), w.filter_zero_point};
}

}  // namespace detail

/// The XNNPACK twin of a mosaiq static network: one builder call per layer, the same weights and the
/// quantization Net::prepare derives. `tensors[t]` is the builder tensor of Net's tensor t (the
/// input is tensors[0], the output tensors.back()). Throws for layers XNNPACK has no operator for.
template <class Net>
struct network_twin {
  using T = typename Net::element_type;
  std::unique_ptr<op_network<T>> ops = std::make_unique<op_network<T>>();
  std::array<typename op_network<T>::tensor, Net::tensor_count> tensors{};

  typename op_network<T>::tensor input() const { return tensors.front(); }
  typename op_network<T>::tensor output() const { return tensors.back(); }
};

template <class Net>
network_twin<Net> from_network(const typename Net::weights& w) {
  using T = typename Net::element_type;
  network_twin<Net> twin;
  const typename Net::prepared prepared = Net::prepare(w);
  op_network<T>& x = *twin.ops;
  twin.tensors[0] = x.add_input(Net::input_shape, w.input);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          using Layer = typename Net::template layer<I>;
          if constexpr (Layer::role == layer_role::op) {
            constexpr layer_node node = Net::topology.layers[I];
            constexpr std::string_view kind = Layer::kind;
            const auto& lw = w.template layer<I>();
            const auto in = [&](std::size_t k) { return twin.tensors[std::size_t(node.inputs[k])]; };
            const quant_params out_q = prepared.tensor_quant(std::size_t(node.output));
            x.set_tag(int(I));
            typename op_network<T>::tensor out = -1;
            if constexpr (kind == "conv2d") {
              constexpr auto c = Layer::config;
              out = x.add_conv(in(0), {c.out_channels, c.kernel, c.stride, c.dilation, c.pad, false, c.act},
                               detail::weights_view<T>(lw), out_q);
            } else if constexpr (kind == "depthwise") {
              constexpr auto c = Layer::config;
              out = x.add_depthwise(in(0), c.kernel, c.stride, c.dilation, c.depth_multiplier,
                                    detail::weights_view<T>(lw), out_q, c.act, c.pad);
            } else if constexpr (kind == "pointwise") {
              out = x.add_pointwise(in(0), Layer::config.out_channels, detail::weights_view<T>(lw), out_q,
                                    Layer::config.act);
            } else if constexpr (kind == "global_average_pool") {
              out = x.add_global_average_pool(in(0), out_q);
            } else if constexpr (kind == "average_pool") {
              // A window over the whole map (the selfie models' squeeze-and-excitation) is a global average.
              constexpr auto c = Layer::config;
              const shape is = x.dims(in(0));
              if (!(c.kernel.h == is.height && c.kernel.w == is.width && c.pad.mode == padding_mode::valid &&
                    c.act == activation::none))
                throw std::invalid_argument("xnnpack::from_network: average_pool only over the whole map");
              out = x.add_global_average_pool(in(0), out_q);
            } else if constexpr (kind == "transpose_conv") {
              constexpr auto c = Layer::config;
              out = x.add_transpose_conv(in(0), {c.out_channels, c.kernel, c.stride, {1, 1}, c.padding, false, c.act},
                                         detail::weights_view<T>(lw), out_q);
            } else if constexpr (kind == "hard_swish") {
              out = x.add_hard_swish(in(0), out_q);
            } else if constexpr (kind == "logistic") {
              out = x.add_logistic(in(0), out_q);
            } else if constexpr (kind == "mul") {
              out = x.add_mul(in(0), in(1), out_q, Layer::act);
            } else if constexpr (kind == "resize_bilinear") {
              out = x.add_resize_bilinear(in(0), node.dims.height, node.dims.width, Layer::config.mode);
            } else if constexpr (kind == "resize_nearest") {
              // XNNPACK has no nearest resize; from one pixel bilinear is the same broadcast.
              if (!(x.dims(in(0)).height == 1 && x.dims(in(0)).width == 1))
                throw std::invalid_argument("xnnpack::from_network: resize_nearest only from a 1x1 input");
              out = x.add_resize_bilinear(in(0), node.dims.height, node.dims.width, resize_mode::half_pixel);
            } else if constexpr (kind == "add") {
              out = x.add_add(in(0), in(1), out_q, Layer::act);
            } else if constexpr (kind == "concat") {
              std::array<typename op_network<T>::tensor, Layer::inputs.size()> parts{};
              for (std::size_t k = 0; k < parts.size(); ++k) parts[k] = in(k);
              out = x.add_concat(parts, out_q);
            } else if constexpr (kind == "softmax") {
              if (Layer::config.beta != 1.0f)
                throw std::invalid_argument("xnnpack::from_network: XNNPACK's softmax has no beta");
              out = x.add_softmax(in(0));
            } else {
              throw std::invalid_argument("xnnpack::from_network: no XNNPACK operator for layer kind " +
                                          std::string(kind));
            }
            twin.tensors[std::size_t(node.output)] = out;
          }
        }(),
        ...);
  }
  (std::make_index_sequence<Net::layer_count>{});
  return twin;
}

}  // namespace mosaiq::bench::xnnpack
