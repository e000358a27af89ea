// How each layer of a 16x8 (i16) network runs: TFLite's 16x8 mode, int16 activations with zero point 0, int8
// per-channel filters, int64 biases. The pointwise, depthwise and conv2d layers and the kernel == stride transposed
// convolutions run SIMD 16x8 kernels (ops/pointwise16x8.hpp, ops/depthwise16x8.hpp, ops/conv16x8.hpp and
// ops/transpose_conv16x8.hpp: the last two on the pointwise GEMM), add, mul, hard swish, logistic and bilinear resize
// the SIMD 16x8 element-wise kernels (ops/eltwise16x8.hpp), average pool and MEAN the SIMD 16x8 pools
// (ops/pool16x8.hpp); every other executor still calls the int16 reference kernel of its op (reference/int16.hpp):
// exact, plain scalar loops, no speed. SIMD 16x8 kernels replace them op by
// op, each bit-exact with the reference it replaces. tools::reference_16x8<Net> runs the same references layer by
// layer and is the oracle these executors are tested against (tests/network_16x8_test.cpp).
//
// The executor contract is net/executor.hpp's. Every executor on a SIMD kernel has run_rows (output rows of a band,
// bit-identical to those rows of a whole run: the kernels' run_rows entry points, or the same op on the bands' rows
// for the pixel-wise ones, which are row_local), so a 16x8 network runs its layers in row bands on a thread pool,
// and its pixel-wise layers in row runs. Whole-layer, on one thread: the average pools and MEAN (int16 references),
// depth multipliers above 1 and the transposed convolutions with overlapping taps (references). In band chains
// (net/bands.hpp) the depthwise and conv2d layers read their input windows through their kernels' run_rows_window,
// the resize through resize_bilinear16x8_window, the average pool pools a band's rows, pointwise, add and mul run on
// a band's rows; MEAN, the transposed convolutions, hard swish and logistic end a chain. The requantization parameters
// are built once at prepare(); a run does not allocate (the GEMM layers' patches and sums, and the reference transposed
// convolution's int64 accumulators, are the layers' planned workspaces, a slice per thread).
//
// Layer kinds without a 16x8 executor (max pool, nearest resize, softmax, log-softmax, concat) are refused at
// compile time by the network (has_16x8_executor).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/net/executor.hpp"
#include "mosaiq/net/layers.hpp"
#include "mosaiq/net/reference_params.hpp"
#include "mosaiq/ops/conv16x8.hpp"
#include "mosaiq/ops/depthwise16x8.hpp"
#include "mosaiq/ops/eltwise16x8.hpp"
#include "mosaiq/ops/pointwise16x8.hpp"
#include "mosaiq/ops/pool16x8.hpp"
#include "mosaiq/ops/transpose_conv16x8.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace detail {

/// The 16x8 mode's one quantization rule the network checks at prepare(): every zero point 0. Reports through
/// mosaiq::require; a layer prepared from a non-zero zero point gets invalid params, which its kernel refuses.
template <std::size_t N>
bool zero_points_16x8(const std::array<quant_params, N>& inputs, quant_params output) {
  bool zero = output.zero_point == 0;
  for (const quant_params& q : inputs) zero = zero && q.zero_point == 0;
  return require(zero, errc::invalid_argument,
                 "mosaiq::network (i16): 16x8 tensors have zero point 0 (the input quantization or a layer's output)");
}

/// Conv-like 16x8 layers: pointers to the weights' int8 filter and int64 bias, the per-channel multipliers.
struct conv_state_16x8 {
  const i8* filter = nullptr;
  const std::int64_t* bias = nullptr;
  reference::conv_requant_16x8 requant;
  quant_params output{};
};

/// A conv-like layer's per-channel requantization; empty (invalid, refused by every kernel) unless every zero point
/// is 0.
template <class W>
reference::conv_requant_16x8 conv_requant_16x8_for(const W& w, const std::array<quant_params, 1>& in, activation act) {
  if (!zero_points_16x8(in, w.output)) return {};
  return reference::make_conv_requant_16x8(in[0].scale, std::span<const float>(w.filter_scales), w.output.scale, act);
}

template <activation Act>
struct conv_executor_16x8 : plain_executor {
  using state = conv_state_16x8;
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, 1>& in) {
    return {w.filter.data(), w.bias.data(), conv_requant_16x8_for(w, in, Act), w.output};
  }
};

/// A 16x8 kernel that needs a workspace (a patch or sum buffer) says how many bytes for an input shape.
template <class Kernel>
concept kernel_with_workspace_16x8 = requires(shape in) {
  { Kernel::workspace_bytes(in) } -> std::convertible_to<std::size_t>;
};

/// Conv-like layers on a SIMD 16x8 kernel (ops/pointwise16x8.hpp, ops/depthwise16x8.hpp, ops/conv16x8.hpp,
/// ops/transpose_conv16x8.hpp) built once at prepare() from (filter, bias, input channels, requant): its packed
/// weights live in the state, a patch or sum buffer in the layer's workspace, so a run neither packs nor allocates.
/// Bit-exact with the layer's int64 reference whatever the network's rounding (the kernels' single-rounding epilogue
/// is the 16x8 mode's Q15 one); a layer whose accumulators could leave int32 runs that reference inside the kernel.
template <class Kernel, int InputChannels, activation Act>
struct kernel_executor_16x8 : plain_executor {
  using kernel = Kernel;
  using state = kernel_state<Kernel>;
  static constexpr std::size_t scratch_bytes(shape in, shape) noexcept {
    if constexpr (kernel_with_workspace_16x8<Kernel>)
      return Kernel::workspace_bytes(in);
    else
      return 0;
  }
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, 1>& in) {
    return {Kernel(w.filter.data(), w.bias.data(), InputChannels, conv_requant_16x8_for(w, in, Act)), w.output};
  }
  static void run(const state& s, const input_views<i16, 1>& in, tensor_view<i16> out, std::span<std::byte> scratch) {
    if constexpr (kernel_with_workspace_16x8<Kernel>)
      s.kernel(in[0], out, scratch);
    else
      s.kernel(in[0], out);
  }
  static void run_rows(const state& s, const input_views<i16, 1>& in, tensor_view<i16> out,
                       std::span<std::byte> scratch, row_band band) {
    if constexpr (kernel_with_workspace_16x8<Kernel>)
      s.kernel.run_rows(in[0], out, scratch, band);
    else
      s.kernel.run_rows(in[0], out, band);
  }
};

/// A layer whose params are built from its input and output scales, run by an element-wise reference.
template <class Params>
struct params_state_16x8 {
  Params params{};
  quant_params output{};
};

/// A one-input layer's state: params from `make(input scale, output scale)`; left invalid (its reference refuses
/// them) unless every zero point is 0.
template <class Params, class W, class Make>
params_state_16x8<Params> params_from_scales_16x8(const W& w, const std::array<quant_params, 1>& in, Make make) {
  if (!zero_points_16x8(in, w.output)) return {{}, w.output};
  return {make(in[0].scale, w.output.scale), w.output};
}

/// Element-wise layers whose references allow the output to be an input (reference/int16.hpp: "out may be in"). A
/// band is the same op on the band's rows of every input (detail::rows_of: an input of one row whole).
struct in_place_executor_16x8 : plain_executor {
  static constexpr bool in_place = true;
  static constexpr bool row_local = true;
};

/// A one-input element-wise layer on its kernel object: the whole map, or a band's rows.
template <class Kernel>
struct unary_executor_16x8 : in_place_executor_16x8 {
  using kernel = Kernel;
  using state = kernel_state<Kernel>;
  static void run(const state& s, const input_views<i16, 1>& in, tensor_view<i16> out, std::span<std::byte>) {
    s.kernel(in[0], out);
  }
  static void run_rows(const state& s, const input_views<i16, 1>& in, tensor_view<i16> out, std::span<std::byte>,
                       row_band band) {
    s.kernel(rows_of(in, band)[0], out.row_slice(band.first, band.rows()));
  }
};

}  // namespace detail

/// On ops/conv16x8.hpp (im2col bands into the workspace, the 16x8 pointwise GEMM).
template <layers::conv2d_config C, rounding R, shape In, shape Out>
struct executor<layers::conv2d<C>, i16, R, In, Out>
    : detail::kernel_executor_16x8<conv2d16x8<conv2d16x8_config{.out_channels = C.out_channels,
                                                                .kernel = C.kernel,
                                                                .stride = C.stride,
                                                                .dilation = C.dilation,
                                                                .pad = C.pad}>,
                                   In.channels, C.act> {};

/// On the SIMD 16x8 kernel (ops/depthwise16x8.hpp), built once at prepare() (detail::kernel_executor_16x8).
template <layers::depthwise_config C, rounding R, shape In, shape Out>
requires(C.depth_multiplier == 1) struct executor<layers::depthwise<C>, i16, R, In, Out>
    : detail::kernel_executor_16x8<depthwise16x8<depthwise16x8_config{
                                       .kernel = C.kernel, .stride = C.stride, .dilation = C.dilation, .pad = C.pad}>,
                                   In.channels, C.act> {
};

/// Depth multipliers above 1 (not in the selfie models) on the int64 reference.
template <layers::depthwise_config C, rounding R, shape In, shape Out>
requires(C.depth_multiplier != 1) struct executor<layers::depthwise<C>, i16, R, In, Out>
    : detail::conv_executor_16x8<C.act> {
  static void run(const detail::conv_state_16x8& s, const input_views<i16, 1>& in, tensor_view<i16> out,
                  std::span<std::byte>) {
    reference::depthwise_conv_16x8(in[0], s.filter, s.bias, out, detail::depthwise_params_of(C), s.requant);
  }
};

/// On the SIMD 16x8 kernel (ops/pointwise16x8.hpp), built once at prepare() (detail::kernel_executor_16x8).
template <layers::pointwise_config C, rounding R, shape In, shape Out>
struct executor<layers::pointwise<C>, i16, R, In, Out>
    : detail::kernel_executor_16x8<pointwise16x8<pointwise16x8_config{.out_channels = C.out_channels}>, In.channels,
                                   C.act> {
  // A 1x1 window without stride: output pixel (y, x) reads input pixel (y, x) only.
  static constexpr bool row_local = true;
};

namespace detail {

/// reference::transpose_conv_16x8 with its int64 accumulators in the layer's workspace, so a run does not allocate.
template <layers::transpose_conv_config C, shape Out>
struct transpose_conv_reference_executor_16x8 : conv_executor_16x8<C.act> {
  static constexpr std::size_t scratch_bytes(shape, shape out) noexcept {
    return out.elements() * sizeof(std::int64_t);
  }
  static void run(const conv_state_16x8& s, const input_views<i16, 1>& in, tensor_view<i16> out,
                  std::span<std::byte> scratch) {
    // The arena and its workspace slices are 64-byte aligned (network.hpp): int64 storage.
    const std::span<std::int64_t> accumulators(reinterpret_cast<std::int64_t*>(scratch.data()), Out.elements());
    reference::transpose_conv_16x8(in[0], s.filter, s.bias, out, transpose_conv_params_of(C), s.requant, accumulators);
  }
};

}  // namespace detail

/// kernel == stride (the upsampling form) on ops/transpose_conv16x8.hpp (the 16x8 pointwise GEMM to KH * KW * Cout
/// columns, then depth-to-space); overlapping taps on the reference.
template <layers::transpose_conv_config C, rounding R, shape In, shape Out>
struct executor<layers::transpose_conv<C>, i16, R, In, Out>
    : std::conditional_t<
          transpose_conv16x8_supports(C.kernel, C.stride),
          detail::kernel_executor_16x8<transpose_conv16x8<transpose_conv16x8_config{
                                           .out_channels = C.out_channels, .kernel = C.kernel, .stride = C.stride}>,
                                       In.channels, C.act>,
          detail::transpose_conv_reference_executor_16x8<C, Out>> {};

/// Average pools keep the input quantization (TFLite requires it); the scale only sets a fused activation's clamp.
/// On the SIMD 16x8 pool (ops/pool16x8.hpp).
template <layers::pool_config C, rounding R, shape In, shape Out>
struct executor<layers::average_pool<C>, i16, R, In, Out> : detail::same_quantization_executor {
  static constexpr pool_params params = detail::pool_params_of(C);
  static void run(const state& s, const input_views<i16, 1>& in, tensor_view<i16> out, std::span<std::byte>) {
    pool(s, in[0], out, params);
  }
  /// The pool with params `p`: the layer's, or a band's (net/bands.hpp: explicit pads at the band's edges).
  static void pool(const state& s, tensor_view<const i16> in, tensor_view<i16> out, const pool_params& p) {
    average_pool16x8(in, out, p, s.output.scale);
  }
};

/// MEAN over height and width (TFLite's int16 MEAN): an output scale of its own (the converter does not tie it to the
/// input's), the 1 / pixel count folded into the multiplier once at prepare(). On the SIMD 16x8 MEAN
/// (ops/pool16x8.hpp).
template <int U, rounding R, shape In, shape Out>
struct executor<layers::global_average_pool<U>, i16, R, In, Out> : detail::plain_executor {
  using state = detail::params_state_16x8<reference::mean_params_16>;
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, 1>& in) {
    return detail::params_from_scales_16x8<reference::mean_params_16>(w, in, [](float in_scale, float out_scale) {
      return reference::make_mean_params_16<R>(in_scale, out_scale, In.height * In.width);
    });
  }
  static void run(const state& s, const input_views<i16, 1>& in, tensor_view<i16> out, std::span<std::byte>) {
    mean16x8<R>(in[0], out, s.params);
  }
};

/// Bilinear resize keeps the input quantization; the network's rounding picks the tie rule. On the SIMD 16x8 kernel
/// (ops/eltwise16x8.hpp).
template <layers::resize_config C, rounding R, shape In, shape Out>
struct executor<layers::resize_bilinear<C>, i16, R, In, Out> : detail::same_quantization_executor {
  static void run(const state&, const input_views<i16, 1>& in, tensor_view<i16> out, std::span<std::byte>) {
    resize_bilinear16x8<R>(in[0], out, C.mode);
  }
  static void run_rows(const state&, const input_views<i16, 1>& in, tensor_view<i16> out, std::span<std::byte>,
                       row_band band) {
    resize_bilinear16x8_rows<R>(in[0], out, C.mode, band);
  }
  /// Output rows `band` from a window of input rows (net/bands.hpp; resize_bilinear16x8_window).
  static void run_rows_window(const state&, tensor_view<const i16> in, int in_first_row, int image_height,
                              tensor_view<i16> band_out, row_band band) {
    resize_bilinear16x8_window<R>(in, in_first_row, image_height, band_out, Out.height, C.mode, band);
  }
};

/// Output at the fixed 1/32768 scale (TFLite's int16 LOGISTIC), on the SIMD 16x8 kernel (ops/eltwise16x8.hpp).
template <int U, rounding R, shape In, shape Out>
struct executor<layers::logistic<U>, i16, R, In, Out> : detail::unary_executor_16x8<logistic16x8> {
  using kernel = logistic16x8;
  using state = detail::kernel_state<kernel>;
  template <class W>
  static state prepare(const W&, const std::array<quant_params, 1>& in) {
    constexpr quant_params output = reference::logistic_output_quant_16;
    if (!detail::zero_points_16x8(in, output)) return {kernel{}, output};
    return {kernel(in[0].scale), output};
  }
};

/// On the SIMD 16x8 kernel (ops/eltwise16x8.hpp), built once at prepare().
template <int U, rounding R, shape In, shape Out>
struct executor<layers::hard_swish<U>, i16, R, In, Out> : detail::unary_executor_16x8<hard_swish16x8<R>> {
  using kernel = hard_swish16x8<R>;
  using state = detail::kernel_state<kernel>;
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, 1>& in) {
    if (!detail::zero_points_16x8(in, w.output)) return {kernel{}, w.output};
    return {kernel(in[0].scale, w.output.scale), w.output};
  }
};

namespace detail {

/// Add and mul on their SIMD 16x8 kernels (ops/eltwise16x8.hpp), built once at prepare() from both input scales, the
/// output scale and the fused activation; the kernels allow the output to be either input.
template <class Kernel, activation Act>
struct binary_executor_16x8 : in_place_executor_16x8 {
  using state = kernel_state<Kernel>;
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, 2>& in) {
    if (!zero_points_16x8(in, w.output)) return {Kernel{}, w.output};
    return {Kernel(in[0].scale, in[1].scale, w.output.scale, Act), w.output};
  }
  static void run(const state& s, const input_views<i16, 2>& in, tensor_view<i16> out, std::span<std::byte>) {
    s.kernel(in[0], in[1], out);
  }
  static void run_rows(const state& s, const input_views<i16, 2>& in, tensor_view<i16> out, std::span<std::byte>,
                       row_band band) {
    const input_views<i16, 2> rows = rows_of(in, band);
    s.kernel(rows[0], rows[1], out.row_slice(band.first, band.rows()));
  }
};

}  // namespace detail

template <fixed_string Tapped, activation Act, rounding R, shape In, shape Out>
struct executor<layers::add<Tapped, Act>, i16, R, In, Out> : detail::binary_executor_16x8<add16x8<R>, Act> {};

template <fixed_string Tapped, activation Act, rounding R, shape In, shape Out>
struct executor<layers::mul<Tapped, Act>, i16, R, In, Out> : detail::binary_executor_16x8<mul16x8<R>, Act> {};

/// Whether layer descriptor L has a 16x8 executor above (the layer kinds of the MediaPipe selfie model): the
/// executor's primary template is declared only, so a kind without one is an incomplete type.
template <class L>
concept has_16x8_executor = requires {
  typename executor<L, i16, rounding::tflite_reference, shape{1, 1, 1}, shape{1, 1, 1}>::state;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
