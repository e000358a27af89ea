// How each network layer runs: one small executor per layer kind, the only place that names a
// kernel. Every layer runs a kernel of ops/ (conv2d, depthwise, pointwise, pooling, resize,
// softmax, hard-swish, transpose conv, add, concat), each bit-exact with its reference op.
// Pointing a layer at another kernel means changing its executor only: the network and its memory
// plan follow.
//
// An executor for Layer, element T, rounding R, input shape In (the first input's) and output
// shape Out provides
//   state                      what prepare() derives at load time (requant bundles, tables,
//                              pointers to the weights, kernel objects owning packed filters)
//                              plus the output quantization, `state::output`;
//   prepare(weights, inputs_q) builds the state (may allocate: load time);
//   run(state, inputs, out, scratch)  computes the layer (must not allocate);
//   in_place                   whether `out` may be the same memory as an input that dies there;
//   scratch_bytes(in, out)     workspace the memory plan reserves for this layer alone
//                              (constexpr: the plan is computed at compile time);
//   run_rows(state, inputs, out, scratch, band)  (optional) output rows `band` only, with
//                              `scratch` of scratch_bytes: one task of a parallel run. Layers
//                              without it run whole on one thread.
//   row_local                  (optional, with run_rows) true when output row r reads row r of
//                              every input only (an input of height 1: its one row), so one
//                              thread may run a band through several such layers in a row
//                              without waiting for the other bands (network.hpp, row runs).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/net/layers.hpp"
#include "mosaiq/ops/conv.hpp"
#include "mosaiq/ops/depthwise.hpp"
#include "mosaiq/ops/eltwise.hpp"
#include "mosaiq/ops/hard_swish.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/ops/pool.hpp"
#include "mosaiq/ops/resize.hpp"
#include "mosaiq/ops/softmax.hpp"
#include "mosaiq/ops/transpose_conv.hpp"
#include "mosaiq/reference/conv.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

template <class Layer, network_element T, rounding R, shape In, shape Out>
struct executor;

template <class T, std::size_t N>
using input_views = std::array<tensor_view<const T>, N>;

namespace detail {

/// Executors without workspace and without in-place support.
struct plain_executor {
  static constexpr bool in_place = false;
  static constexpr std::size_t scratch_bytes(shape, shape) noexcept { return 0; }
};

/// Layers whose output keeps the input's quantization (pooling, resizing).
struct same_quantization_executor : plain_executor {
  struct state {
    quant_params output{};
  };
  template <class W>
  static state prepare(const W&, const std::array<quant_params, 1>& in) {
    return {in[0]};
  }
};

template <rounding R, quantized_element T, class Weights>
reference::conv_requant conv_requant_for(const Weights& w, quant_params input, activation act) {
  return reference::make_conv_requant<R, T>(input, std::span<const float>(w.filter_scales), w.filter_zero_point,
                                            w.output, act);
}

/// Layers on a generated kernel: the kernel object (packed weights, tables), built at load time.
template <class Kernel>
struct kernel_state {
  Kernel kernel;
  quant_params output{};
};

/// Conv layers on a generated kernel built from (filter, bias, input channels, conv_requant).
template <class Kernel, quantized_element T, rounding R, int InputChannels, activation Act>
struct conv_kernel_executor {
  using kernel = Kernel;
  static constexpr std::size_t scratch_bytes(shape in, shape) noexcept { return kernel::workspace_bytes(in); }
  using state = kernel_state<kernel>;
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, 1>& in) {
    return {kernel(w.filter.data(), w.bias.data(), InputChannels, conv_requant_for<R, T>(w, in[0], Act)), w.output};
  }
  static void run(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte> scratch) {
    s.kernel(in[0], out, scratch);
  }
  static void run_rows(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte> scratch,
                       row_band band) {
    s.kernel.run_rows(in[0], out, scratch, band);
  }
};

/// Layers where output pixel (y, x) reads input pixel (y, x) of every input only: a band is the same
/// op on the band's rows of every view. An input of height 1 is broadcast along H (add, mul): every
/// band reads its one row.
template <class T, std::size_t N>
input_views<T, N> rows_of(const input_views<T, N>& in, row_band band) noexcept {
  input_views<T, N> rows{};
  for (std::size_t i = 0; i < N; ++i) rows[i] = in[i].height() == 1 ? in[i] : in[i].row_slice(band.first, band.rows());
  return rows;
}

/// A band of a pooling window op as a pooling of its own: the input rows its windows touch, and
/// explicit pads (the rows of the windows above and below the image) in place of the config's.
struct pool_band {
  row_band input;
  pool_params params;
};
inline pool_band pool_band_for(shape in, const pool_params& p, row_band band) noexcept {
  const window_geometry g = resolve_window(in.height, in.width, p.kernel, p.stride, hw{1, 1}, p.pad);
  const int top = band.first * p.stride.h - g.y.pad_before;                       // first window's first row
  const int bottom = (band.last - 1) * p.stride.h - g.y.pad_before + p.kernel.h;  // last window's end
  const int first = std::max(0, top), last = std::min(in.height, bottom);
  pool_params params = p;
  params.pad = padding::explicit_pads(first - top, bottom - last, g.x.pad_before, g.x.pad_after);
  return {{first, last}, params};
}

/// A layer's op config with the network's rounding (layers leave `.round` unset).
template <class Config>
constexpr Config with_rounding(Config config, rounding round) noexcept {
  config.round = round;
  return config;
}

template <class Pool, class T>
void run_pool_rows(Pool pool, const tensor_view<const T>& in, const tensor_view<T>& out, const pool_params& p,
                   quant_params q, row_band band) {
  const pool_band b = pool_band_for(in.dims(), p, band);
  pool(in.row_slice(b.input.first, b.input.rows()), out.row_slice(band.first, band.rows()), b.params, q);
}

}  // namespace detail

template <layers::conv2d_config C, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::conv2d<C>, T, R, In, Out>
    : detail::conv_kernel_executor<mosaiq::conv2d<detail::with_rounding(C, R), T>, T, R, In.channels, C.act> {
  // A window reads input pixels around the output pixel it writes.
  static constexpr bool in_place = false;
};

template <layers::depthwise_config C, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::depthwise<C>, T, R, In, Out>
    : detail::conv_kernel_executor<mosaiq::depthwise<detail::with_rounding(C, R), T>, T, R, In.channels, C.act> {
  // A window reads input rows around the output row it writes.
  static constexpr bool in_place = false;
};

template <layers::pointwise_config C, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::pointwise<C>, T, R, In, Out>
    : detail::conv_kernel_executor<mosaiq::pointwise<detail::with_rounding(C, R), T>, T, R, In.channels, C.act> {
  // A 1x1 window without stride: output pixel (y, x) reads input pixel (y, x) only.
  static constexpr bool row_local = true;
  // Not claimed: equal shapes would run in place only because the kernel copies a block of pixels
  // into its workspace before writing them, a detail of ops/pointwise.hpp rather than its contract.
  static constexpr bool in_place = false;
};

template <layers::transpose_conv_config C, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::transpose_conv<C>, T, R, In, Out> {
  using kernel = mosaiq::transpose_conv<mosaiq::transpose_conv_config{.out_channels = C.out_channels,
                                                                      .kernel = C.kernel,
                                                                      .stride = C.stride,
                                                                      .padding = C.padding,
                                                                      .act = C.act,
                                                                      .round = R},
                                        T>;
  // Every input pixel writes a block of output pixels: never in place. Runs whole (no row bands).
  static constexpr bool in_place = false;
  static constexpr std::size_t scratch_bytes(shape in, shape) noexcept { return kernel::workspace_bytes(in); }
  using state = detail::kernel_state<kernel>;
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, 1>& in) {
    return {kernel(w.filter.data(), w.bias.data(), In.channels, detail::conv_requant_for<R, T>(w, in[0], C.act)),
            w.output};
  }
  static void run(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte> scratch) {
    s.kernel(in[0], out, scratch);
  }
};

/// Pooling keeps the input quantization (the fused activation clamps in it).
template <layers::pool_config C, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::average_pool<C>, T, R, In, Out> : detail::same_quantization_executor {
  static constexpr pool_params params{.kernel = C.kernel, .stride = C.stride, .pad = C.pad, .act = C.act};
  static void run(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>) {
    mosaiq::average_pool<T>(in[0], out, params, s.output);
  }
  static void run_rows(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>,
                       row_band band) {
    detail::run_pool_rows(mosaiq::average_pool<T>, in[0], out, params, s.output, band);
  }
};

template <layers::pool_config C, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::max_pool<C>, T, R, In, Out> : detail::same_quantization_executor {
  static constexpr pool_params params{.kernel = C.kernel, .stride = C.stride, .pad = C.pad, .act = C.act};
  static void run(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>) {
    mosaiq::max_pool<T>(in[0], out, params, s.output);
  }
  static void run_rows(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>,
                       row_band band) {
    detail::run_pool_rows(mosaiq::max_pool<T>, in[0], out, params, s.output, band);
  }
};

template <int U, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::global_average_pool<U>, T, R, In, Out> : detail::plain_executor {
  // The MEAN recipe (folded multiplier, offsets) depends on the input's pixel count only: built at load time.
  struct state {
    reference::global_pool_params params;
    quant_params output{};
  };
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, 1>& in) {
    return {reference::make_global_average_pool_params<R, T>(in[0], w.output, In.height * In.width), w.output};
  }
  static void run(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>) {
    mosaiq::global_average_pool<R, T>(in[0], out, s.params);
  }
};

/// Resize kernels keep the input quantization and need no workspace. Configs they do not specialize
/// (bilinear other than 2x, align_corners) run the reference inside the kernel.
template <layers::resize_config C, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::resize_bilinear<C>, T, R, In, Out> : detail::same_quantization_executor {
  using kernel = mosaiq::resize_bilinear<C, T>;
  static void run(const state&, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>) {
    kernel::run(in[0], out);
  }
  static void run_rows(const state&, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>,
                       row_band band) requires kernel::specialized {
    kernel::run_rows(in[0], out, band);
  }
};

template <layers::resize_config C, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::resize_nearest<C>, T, R, In, Out> : detail::same_quantization_executor {
  using kernel = mosaiq::resize_nearest<C, T>;
  static void run(const state&, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>) {
    kernel::run(in[0], out);
  }
  // Integer factor S: input row y makes output rows S*y .. S*y + S - 1 alone, so bands go over input rows.
  static constexpr bool replicates_rows = kernel::specialized && Out.height == C.scale * In.height;
  static constexpr int split_rows = In.height;
  static void run_rows(const state&, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>,
                       row_band band) requires replicates_rows {
    kernel::run(in[0].row_slice(band.first, band.rows()), out.row_slice(C.scale * band.first, C.scale * band.rows()));
  }
};

/// The kernel is specialized on the channel count (two classes: difference table; others: the
/// reference inside the kernel), which only the input shape knows.
template <layers::softmax_config C, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::softmax<C>, T, R, In, Out> {
  using kernel = mosaiq::softmax<mosaiq::softmax_config{.channels = In.channels}, T>;
  // Every path reads a pixel's channels before writing that pixel (vector paths: a whole block of
  // pixels is loaded before it is stored; the reference fallback: max and sum first, and output
  // channel c then reads only input channel c), so it may run in place.
  static constexpr bool in_place = true;
  static constexpr std::size_t scratch_bytes(shape, shape) noexcept { return 0; }
  using state = detail::kernel_state<kernel>;
  template <class W>
  static state prepare(const W&, const std::array<quant_params, 1>& in) {
    return {kernel(in[0], C.beta), kernel::output_params};
  }
  static void run(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>) {
    s.kernel(in[0], out);
  }
  // Pixels are independent.
  static constexpr bool row_local = true;
  static void run_rows(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>,
                       row_band band) {
    s.kernel(detail::rows_of(in, band)[0], out.row_slice(band.first, band.rows()));
  }
};

namespace detail {

/// A table-driven unary op built from its input quantization, with a fixed output quantization.
template <class Kernel, quantized_element T>
struct table_executor {
  using kernel = Kernel;
  static constexpr bool in_place = true;
  static constexpr std::size_t scratch_bytes(shape, shape) noexcept { return 0; }
  using state = kernel_state<kernel>;
  template <class W>
  static state prepare(const W&, const std::array<quant_params, 1>& in) {
    return {kernel(in[0]), kernel::output_params};
  }
  static void run(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>) {
    s.kernel(in[0], out);
  }
};

}  // namespace detail

/// Specialized on the channel count like softmax; in place for the same reasons (every path reads a pixel's channels,
/// or a whole block of pixels, before writing them; output channel c then reads only input channel c).
template <int U, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::log_softmax<U>, T, R, In, Out>
    : detail::table_executor<mosaiq::log_softmax<mosaiq::softmax_config{.channels = In.channels}, T>, T> {};

/// One table lookup per element: in place and split into row bands.
template <int U, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::logistic<U>, T, R, In, Out> : detail::table_executor<mosaiq::logistic<T>, T> {
  static constexpr bool row_local = true;
  static void run_rows(const typename executor::state& s, const input_views<T, 1>& in, tensor_view<T> out,
                       std::span<std::byte>, row_band band) {
    s.kernel(detail::rows_of(in, band)[0], out.row_slice(band.first, band.rows()));
  }
};

/// A table lookup per element: in place, and any band of rows is the same op on those rows.
template <int U, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::hard_swish<U>, T, R, In, Out> {
  static constexpr bool in_place = true;
  static constexpr bool row_local = true;
  static constexpr std::size_t scratch_bytes(shape, shape) noexcept { return 0; }
  using state = detail::kernel_state<mosaiq::hard_swish<T>>;
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, 1>& in) {
    return {mosaiq::hard_swish<T>(in[0], w.output), w.output};
  }
  static void run(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>) {
    s.kernel(in[0], out);
  }
  static void run_rows(const state& s, const input_views<T, 1>& in, tensor_view<T> out, std::span<std::byte>,
                       row_band band) {
    s.kernel(detail::rows_of(in, band)[0], out.row_slice(band.first, band.rows()));
  }
};

namespace detail {

/// An element-wise layer (add, mul) on its op: out may be exactly a or b (the ops' contract: every block is read
/// before it is written), and the plan only runs a layer in place on an input of the output's shape.
template <class Op, quantized_element T>
struct binary_executor {
  static constexpr bool in_place = true;
  static constexpr bool row_local = true;  // rows_of: the band's rows, or an input's one row
  static constexpr std::size_t scratch_bytes(shape, shape) noexcept { return 0; }
  using state = kernel_state<Op>;
  static void run(const state& s, const input_views<T, 2>& in, tensor_view<T> out, std::span<std::byte>) {
    s.kernel(in[0], in[1], out);
  }
  static void run_rows(const state& s, const input_views<T, 2>& in, tensor_view<T> out, std::span<std::byte>,
                       row_band band) {
    const input_views<T, 2> rows = detail::rows_of(in, band);
    s.kernel(rows[0], rows[1], out.row_slice(band.first, band.rows()));
  }
};

}  // namespace detail

template <fixed_string Tapped, activation Act, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::add<Tapped, Act>, T, R, In, Out> : detail::binary_executor<mosaiq::add<T, R>, T> {
  template <class W>
  static typename executor::state prepare(const W& w, const std::array<quant_params, 2>& in) {
    return {mosaiq::add<T, R>(in[0], in[1], w.output, Act), w.output};
  }
};

template <fixed_string Tapped, activation Act, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::mul<Tapped, Act>, T, R, In, Out> : detail::binary_executor<mosaiq::mul<T, R>, T> {
  template <class W>
  static typename executor::state prepare(const W& w, const std::array<quant_params, 2>& in) {
    return {mosaiq::mul<T, R>(in[0], in[1], w.output, Act), w.output};
  }
};

template <fixed_string... Tapped, quantized_element T, rounding R, shape In, shape Out>
struct executor<layers::concat<Tapped...>, T, R, In, Out> : detail::plain_executor {
  static constexpr std::size_t arity = sizeof...(Tapped);
  static constexpr bool row_local = true;  // every input has the output's height and width
  struct state {
    std::array<quant_params, arity> inputs{};
    quant_params output{};
  };
  template <class W>
  static state prepare(const W& w, const std::array<quant_params, arity>& in) {
    return {in, w.output};
  }
  static void run(const state& s, const input_views<T, arity>& in, tensor_view<T> out, std::span<std::byte>) {
    std::array<reference::concat_input<T>, arity> parts{};
    for (std::size_t i = 0; i < arity; ++i) parts[i] = {in[i], s.inputs[i]};
    mosaiq::concat<T>(std::span<const reference::concat_input<T>>(parts), out, s.output);
  }
  static void run_rows(const state& s, const input_views<T, arity>& in, tensor_view<T> out, std::span<std::byte> none,
                       row_band band) {
    run(s, detail::rows_of(in, band), out.row_slice(band.first, band.rows()), none);
  }
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
