// Banded execution of a chain of layers (issue 21). For each band of output rows of the chain's last
// layer, every earlier layer of the chain computes only the rows the later ones read next; which rows
// those are follows from kernel, stride, dilation and padding (`row_map`). Every map made inside the
// chain lives in a sliding window of rows: a contiguous buffer holding image rows [first, last) that
// moves its overlap rows down before new rows are written after them, so that each window is a plain
// strided view and the kernels read it through their window entry points. Every row is computed once.
//
// The schedule (`band_schedule`) is the same constexpr code at compile time (window capacities, the
// overhead figure) and at run time (the rows of each band).
//
// Every network element joins: u8 and i8 maps through the 8-bit kernels' window entry points, i16 (16x8) maps
// through the 16x8 ones (depthwise16x8 and conv2d16x8 run_rows_window, resize_bilinear16x8_window at power-of-two
// scales, average_pool16x8 on a band's rows) and the pointwise, add and mul 16x8 executors on a band's rows. MEAN,
// the transposed convolution, hard swish and logistic end a chain for every element (see band_traits below).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/net/banding.hpp"
#include "mosaiq/net/executor.hpp"
#include "mosaiq/net/layers.hpp"
#include "mosaiq/ops/pool.hpp"
#include "mosaiq/ops/resize.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Which input rows a layer reads for a range of its output rows.
struct row_map {
  enum class kind { whole, pixel, window, upsample };
  kind how = kind::whole;  ///< whole: the layer needs its whole input (it cannot join a chain)
  int height = 0;          ///< input rows
  int extent = 1;          ///< window: (kernel - 1) * dilation + 1
  int stride = 1;          ///< window: input rows per output row; upsample: output rows per input row
  int pad_before = 0;

  static constexpr row_map pixels(int height) noexcept { return {kind::pixel, height}; }
  static constexpr row_map windowed(int height, int kernel, int stride, int dilation, int pad_before) noexcept {
    return {kind::window, height, (kernel - 1) * dilation + 1, stride, pad_before};
  }
  /// A resize by the integer factor `scale`: output row o reads rows near o / scale. The taps of every mode
  /// (legacy, half-pixel, align-corners; bilinear and nearest) lie in [floor(o / scale) - 1, floor(o / scale) + 1],
  /// a row more than some modes read: the schedule needs a bound, the kernel checks the exact rows.
  static constexpr row_map upsampled(int height, int scale) noexcept { return {kind::upsample, height, 3, scale, 1}; }

  /// Input rows output rows `out` read, clipped to the input (a broadcast input of one row: that row).
  constexpr row_band input_rows(row_band out) const noexcept {
    if (out.rows() <= 0) return {0, 0};
    if (how == kind::whole || height == 1) return {0, height};
    if (how == kind::pixel) return out;
    if (how == kind::upsample)
      return {std::clamp(out.first / stride - pad_before, 0, height),
              std::clamp((out.last - 1) / stride - pad_before + extent, 0, height)};
    return {std::clamp(out.first * stride - pad_before, 0, height),
            std::clamp((out.last - 1) * stride - pad_before + extent, 0, height)};
  }
};

/// How a layer kind joins a chain on maps of element T: `map(input, output)` of each input (kind::whole: it does not).
template <class Layer, network_element T>
struct band_traits {
  static constexpr row_map map(shape, shape) noexcept { return {}; }
};

template <layers::conv2d_config C, network_element T>
struct band_traits<layers::conv2d<C>, T> {
  static constexpr row_map map(shape in, shape) noexcept {
    const window_geometry g = resolve_window(in.height, in.width, C.kernel, C.stride, C.dilation, C.pad);
    return row_map::windowed(in.height, C.kernel.h, C.stride.h, C.dilation.h, g.y.pad_before);
  }
};
template <layers::depthwise_config C, network_element T>
struct band_traits<layers::depthwise<C>, T> {
  static constexpr row_map map(shape in, shape) noexcept {
    const window_geometry g = resolve_window(in.height, in.width, C.kernel, C.stride, C.dilation, C.pad);
    return row_map::windowed(in.height, C.kernel.h, C.stride.h, C.dilation.h, g.y.pad_before);
  }
};
template <layers::pool_config C, network_element T>
struct band_traits<layers::average_pool<C>, T> {
  static constexpr row_map map(shape in, shape) noexcept {
    const window_geometry g = resolve_window(in.height, in.width, C.kernel, C.stride, hw{1, 1}, C.pad);
    return row_map::windowed(in.height, C.kernel.h, C.stride.h, 1, g.y.pad_before);
  }
};
template <layers::pool_config C, network_element T>
struct band_traits<layers::max_pool<C>, T> : band_traits<layers::average_pool<C>, T> {};
/// Resize layers join where their kernel has a window entry point (no reference fallback: see ops/resize.hpp).
template <class Kernel>
struct resize_band_traits {
  static constexpr row_map map(shape in, shape out) noexcept {
    if constexpr (requires(tensor_view<const u8> window, tensor_view<u8> band_out) {
                    Kernel::run_rows_window(window, 0, 0, band_out, row_band{});
                  })
      return out.height == Kernel::config.scale * in.height ? row_map::upsampled(in.height, Kernel::config.scale)
                                                            : row_map{};
    else
      return {};
  }
};
template <layers::resize_config C, quantized_element T>
struct band_traits<layers::resize_bilinear<C>, T> : resize_band_traits<mosaiq::resize_bilinear<C, u8>> {};
template <layers::resize_config C, quantized_element T>
struct band_traits<layers::resize_nearest<C>, T> : resize_band_traits<mosaiq::resize_nearest<C, u8>> {};
/// The 16x8 bilinear resize (resize_bilinear16x8_window) at power-of-two scales, whose Q10 taps are the exact
/// fractions row_map::upsampled bounds (other factors round their step, so far down an image a tap could leave the
/// bound): any mode.
template <layers::resize_config C>
struct band_traits<layers::resize_bilinear<C>, i16> {
  static constexpr row_map map(shape in, shape out) noexcept {
    const bool power_of_two = C.scale >= 1 && C.scale <= 1024 && (C.scale & (C.scale - 1)) == 0;
    return power_of_two && out.height == C.scale * in.height ? row_map::upsampled(in.height, C.scale) : row_map{};
  }
};

/// Layers where output pixel (y, x) reads pixel (y, x) of each input (or the one row of a broadcast one).
struct pixel_band_traits {
  static constexpr row_map map(shape in, shape out) noexcept {
    return row_map::pixels(in.height == 1 && out.height > 1 ? 1 : in.height);
  }
};
template <layers::pointwise_config C, network_element T>
struct band_traits<layers::pointwise<C>, T> : pixel_band_traits {};
template <fixed_string Tapped, activation Act, network_element T>
struct band_traits<layers::add<Tapped, Act>, T> : pixel_band_traits {};
template <fixed_string Tapped, activation Act, network_element T>
struct band_traits<layers::mul<Tapped, Act>, T> : pixel_band_traits {};
template <layers::softmax_config C, network_element T>
struct band_traits<layers::softmax<C>, T> : pixel_band_traits {};
template <int U, network_element T>
struct band_traits<layers::log_softmax<U>, T> : pixel_band_traits {};
template <network_element T, fixed_string... Tapped>
struct band_traits<layers::concat<Tapped...>, T> : pixel_band_traits {};
// hard_swish and logistic do not join yet, whatever the element (their executors would run a band's rows): on the
// selfie networks their longer joining runs take banding::automatic past GCC's constexpr operation limit
// (docs/decisions.md, "A cheaper `banding::automatic`" and "Band chains for i16 networks").

// ---------------------------------------------------------------------------------------------
// The schedule.

/// One layer of the network as the schedule sees it.
struct band_layer {
  bool op = false;
  int input_count = 0;
  std::array<int, 8> inputs{};
  std::array<row_map, 8> maps{};
  int output = 0;
  int height = 0;          ///< output rows
  bool kept_ring = false;  ///< keeps the rows it built from its first input between bands: its window omits them
};

/// Image rows [first, last) of a map held in its window (or computed in a band).
using row_range = row_band;

/// Where the schedule is between bands: rows made so far (a high-water mark) and each window.
template <std::size_t TensorCount>
struct band_cursor {
  std::array<int, TensorCount> made{};
  std::array<row_range, TensorCount> window{};
};

/// What one band computes: each layer's new output rows and each map's window afterwards.
template <std::size_t LayerCount, std::size_t TensorCount>
struct band_step {
  std::array<row_range, LayerCount> rows{};
  std::array<row_range, TensorCount> window{};
};

/// A chain of layers [first, last] of a network with LayerCount layers and TensorCount tensors, run in
/// bands of `band_rows` output rows of the last layer.
template <std::size_t LayerCount, std::size_t TensorCount>
struct band_schedule {
  std::array<band_layer, LayerCount> layers{};
  int first = 0, last = -1, band_rows = 0;
  std::array<bool, TensorCount> windowed{};    ///< made inside the chain and read only there
  std::array<bool, TensorCount> kept_whole{};  ///< made inside the chain (not its last map), read after it too

  /// Whether the chain makes map t before its last layer: its readers in the chain wait for its rows.
  constexpr bool inner(std::size_t t) const noexcept { return windowed[t] || kept_whole[t]; }

  constexpr int final_tensor() const noexcept { return layers[std::size_t(last)].output; }
  constexpr int final_height() const noexcept { return layers[std::size_t(last)].height; }
  constexpr int band_count() const noexcept { return (final_height() + band_rows - 1) / band_rows; }
  using step_type = band_step<LayerCount, TensorCount>;

  /// Band `band`'s rows and windows, from the cursor after the previous band (advanced here).
  ///
  /// In band b the last layer makes its rows up to (b + 1) * band_rows, and every earlier layer the
  /// rows its readers read for theirs. The first band would make the whole receptive field of the
  /// first output rows at once (the lead of each layer over its share of rows); instead each layer
  /// goes at a pace of its rows plus that lead spread over all bands, so every band makes about the
  /// same rows of each layer. A layer makes fewer rows where its inputs do not have them yet.
  constexpr band_step<LayerCount, TensorCount> advance(band_cursor<TensorCount>& cursor, int band) const noexcept {
    return advance(cursor, band, leads());
  }
  /// The same with the layers' leads (leads()) computed once for all bands.
  constexpr band_step<LayerCount, TensorCount> advance(band_cursor<TensorCount>& cursor, int band,
                                                       const std::array<int, LayerCount>& lead) const noexcept {
    band_step<LayerCount, TensorCount> step;
    const band_cursor<TensorCount> before = cursor;
    const std::array<int, LayerCount> target = targets(band, lead);
    for (int l = first; l <= last; ++l) {
      const band_layer& layer = layers[std::size_t(l)];
      if (!layer.op) continue;
      const auto out = std::size_t(layer.output);
      int made = target[std::size_t(l)];
      for (int k = 0; k < layer.input_count; ++k) {
        const auto in = std::size_t(layer.inputs[std::size_t(k)]);
        if (inner(in)) made = std::min(made, rows_computable(layer.maps[std::size_t(k)], cursor.made[in]));
      }
      made = std::max(made, before.made[out]);
      step.rows[std::size_t(l)] = {before.made[out], made};
      cursor.made[out] = made;
    }
    // A window keeps the rows its readers still need this band: from what they make next. Windows are
    // maps the chain's layers make, so the loops go over those layers, not over every map of the network.
    std::array<int, TensorCount> lowest{};
    for (int l = first; l < last; ++l)
      if (layers[std::size_t(l)].op)
        lowest[std::size_t(layers[std::size_t(l)].output)] = std::numeric_limits<int>::max();
    for (int l = first; l <= last; ++l) {
      const band_layer& layer = layers[std::size_t(l)];
      const int next = before.made[std::size_t(layer.output)];
      if (!layer.op || next >= layer.height) continue;
      for (int k = 0; k < layer.input_count; ++k) {
        const auto in = std::size_t(layer.inputs[std::size_t(k)]);
        if (!windowed[in]) continue;
        const row_map& map = layer.maps[std::size_t(k)];
        // A layer keeping its ring holds the rows its earlier output rows read (the last pass's among them).
        const int built = k == 0 && layer.kept_ring ? map.input_rows({0, next}).last : 0;
        lowest[in] = std::min(lowest[in], std::max(map.input_rows({next, next + 1}).first, built));
      }
    }
    for (int l = first; l < last; ++l) {
      const auto t = std::size_t(layers[std::size_t(l)].output);
      if (!layers[std::size_t(l)].op || !windowed[t]) continue;
      step.window[t] = {std::min(lowest[t], cursor.made[t]), cursor.made[t]};
      cursor.window[t] = step.window[t];
    }
    return step;
  }

  /// Each layer's lead: the rows the first band makes beyond its share of the layer's rows (see advance()).
  constexpr std::array<int, LayerCount> leads() const noexcept {
    const std::array<int, LayerCount> first_band = demanded(band_rows, nullptr);
    std::array<int, LayerCount> lead{};
    for (int l = first; l <= last; ++l) {
      const int share = (layers[std::size_t(l)].height + band_count() - 1) / band_count();
      lead[std::size_t(l)] = std::max(0, first_band[std::size_t(l)] - share);
    }
    return lead;
  }

  /// Rows each layer should have made after band `band` (see advance()), from the layers' leads().
  constexpr std::array<int, LayerCount> targets(int band, const std::array<int, LayerCount>& lead) const noexcept {
    std::array<int, LayerCount> pace{};
    for (int l = first; l <= last; ++l) {
      const std::int64_t height = layers[std::size_t(l)].height;
      pace[std::size_t(l)] = int(((height + lead[std::size_t(l)]) * (band + 1) + band_count() - 1) / band_count());
    }
    return demanded((band + 1) * band_rows, &pace);
  }

  /// Rows each layer must have made for the last layer's first `rows` rows, at most `pace` (if given).
  constexpr std::array<int, LayerCount> demanded(int rows, const std::array<int, LayerCount>* pace) const noexcept {
    std::array<int, LayerCount> target{};
    std::array<int, TensorCount> demand{};
    for (int l = last; l >= first; --l) {
      const band_layer& layer = layers[std::size_t(l)];
      if (!layer.op) continue;
      int made = l == last ? rows : demand[std::size_t(layer.output)];
      if (pace != nullptr) made = std::min(made, (*pace)[std::size_t(l)]);
      target[std::size_t(l)] = std::min(layer.height, made);
      for (int k = 0; k < layer.input_count; ++k) {
        const auto in = std::size_t(layer.inputs[std::size_t(k)]);
        if (inner(in))
          demand[in] = std::max(demand[in], layer.maps[std::size_t(k)].input_rows({0, target[std::size_t(l)]}).last);
      }
      // A map read after the chain is made as far as its inputs allow (its readers there need all of it),
      // without pulling its inputs ahead.
      if (l != last && kept_whole[std::size_t(layer.output)])
        target[std::size_t(l)] = pace != nullptr ? std::min(layer.height, (*pace)[std::size_t(l)]) : layer.height;
    }
    return target;
  }

  /// Rows of a layer's output that can be made from `made` rows of an input read through `map`.
  static constexpr int rows_computable(const row_map& map, int made) noexcept {
    if (made >= map.height) return std::numeric_limits<int>::max();
    if (map.how == row_map::kind::pixel)
      return map.height == 1 ? (made >= 1 ? std::numeric_limits<int>::max() : 0) : made;
    if (map.how == row_map::kind::upsample) {
      // Output row o reads up to floor(o / scale) - pad_before + extent rows (exclusive).
      const int reach = made + map.pad_before - map.extent;
      return reach < 0 ? 0 : (reach + 1) * map.stride;
    }
    // Output row y reads up to (y * stride - pad_before + extent) rows (exclusive).
    const int reach = made + map.pad_before - map.extent;
    return reach < 0 ? 0 : reach / map.stride + 1;
  }

  /// Figures of the whole run: the most rows each window holds at once, and the rows moved down.
  struct totals {
    std::array<int, TensorCount> capacity{};
    std::uint64_t moved_rows = 0;  ///< summed over maps (rows, not bytes)
    std::array<std::uint64_t, TensorCount> moved{};
    std::uint64_t layer_steps = 0;           ///< layer calls with rows to compute
    std::array<int, LayerCount> max_rows{};  ///< most rows a layer computes in one band
  };
  constexpr totals measure() const noexcept {
    totals t;
    band_cursor<TensorCount> cursor{};
    const std::array<int, LayerCount> lead = leads();
    for (int b = 0; b < band_count(); ++b) {
      const band_cursor<TensorCount> before = cursor;
      const band_step<LayerCount, TensorCount> s = advance(cursor, b, lead);
      for (int l = first; l < last; ++l) {
        const auto m = std::size_t(layers[std::size_t(l)].output);
        if (!layers[std::size_t(l)].op || !windowed[m]) continue;
        t.capacity[m] = std::max(t.capacity[m], s.window[m].rows());
        t.moved[m] += std::uint64_t(kept_rows(before.window[m], s.window[m]));
      }
      for (int l = first; l <= last; ++l) {
        const int rows = s.rows[std::size_t(l)].rows();
        t.layer_steps += rows > 0 ? 1 : 0;
        t.max_rows[std::size_t(l)] = std::max(t.max_rows[std::size_t(l)], rows);
      }
    }
    return t;
  }

  /// Rows a window keeps when it moves from `before` to `after` (they move down unless it did not move).
  static constexpr int kept_rows(row_range before, row_range after) noexcept {
    if (after.first == before.first) return 0;
    return std::max(0, before.last - after.first);
  }
};

// ---------------------------------------------------------------------------------------------
// Running one layer on some of its output rows.

/// A map of `height` rows as a band sees it: a view holding image rows [first, first + view.height()).
template <class T>
struct row_window {
  tensor_view<T> view;
  int first = 0;
  int height = 0;
  constexpr tensor_view<T> rows(row_range r) const noexcept { return view.row_slice(r.first - first, r.rows()); }
};

/// Workspace of one call of a layer (executor Exec) on at most `rows` output rows of a band: windowed
/// convolutions size theirs by the band (conv2d) or by the width alone (depthwise, pools); pixel-wise
/// layers run as the layer on a map of `rows` rows.
template <class Exec, shape In, shape Out>
constexpr std::size_t band_scratch_bytes(int rows, bool windowed) noexcept {
  if constexpr (requires { Exec::kernel::band_workspace_bytes(In, rows); })
    return Exec::kernel::band_workspace_bytes(In, rows);
  else if (windowed)
    return Exec::scratch_bytes(In, Out);
  else
    return Exec::scratch_bytes({rows, In.width, In.channels}, {rows, Out.width, Out.channels});
}

/// Whether a layer (executor Exec) can keep its workspace's ring of built rows from one band's call to the
/// next (a depthwise layer's resume_rows_window), so that the rows two bands share are built once.
template <class Exec>
constexpr bool band_resumes_ring() noexcept {
  if constexpr (requires { Exec::kernel::resumes_ring; })
    return Exec::kernel::resumes_ring;
  else
    return false;
}

/// Output rows `rows` of a layer (executor Exec, first input shape In, output shape Out) from its
/// inputs' windows into its output's window. `resume`: the workspace holds this layer's ring from its
/// call on the previous band of the same image (band_resumes_ring()).
template <class Layer, class Exec, network_element T, shape In, shape Out, std::size_t Arity>
void run_band_rows(const typename Exec::state& state, const std::array<row_window<const T>, Arity>& in,
                   const row_window<T>& out, std::span<std::byte> scratch, row_range rows, bool resume = false) {
  if constexpr (band_resumes_ring<Exec>()) {
    if (resume)
      return state.kernel.resume_rows_window(in[0].view, in[0].first, In.height, out.rows(rows), scratch, rows);
  }
  (void)resume;
  if constexpr (requires { state.kernel.run_rows_window(in[0].view, 0, 0, out.view, scratch, rows); }) {
    // Windowed convolutions read the input window through their window entry point.
    state.kernel.run_rows_window(in[0].view, in[0].first, In.height, out.rows(rows), scratch, rows);
  } else if constexpr (requires { state.kernel.run_rows_window(in[0].view, 0, 0, out.view, rows); }) {
    // The same without workspace (the 16x8 depthwise).
    state.kernel.run_rows_window(in[0].view, in[0].first, In.height, out.rows(rows), rows);
  } else if constexpr (requires { Exec::kernel::run_rows_window(in[0].view, 0, 0, out.view, rows); }) {
    // Resizes: the same, without workspace.
    Exec::kernel::run_rows_window(in[0].view, in[0].first, In.height, out.rows(rows), rows);
  } else if constexpr (requires { Exec::run_rows_window(state, in[0].view, 0, 0, out.view, rows); }) {
    // The 16x8 resize: its executor's window entry point.
    Exec::run_rows_window(state, in[0].view, in[0].first, In.height, out.rows(rows), rows);
  } else if constexpr (requires { Exec::params; }) {
    // Pooling: the band as a pooling of its own, its edges padded explicitly.
    const detail::pool_band b = detail::pool_band_for(In, Exec::params, rows);
    if constexpr (requires { Exec::pool(state, in[0].view, out.view, b.params); })
      Exec::pool(state, in[0].rows(b.input), out.rows(rows), b.params);
    else if constexpr (Layer::kind == layers::max_pool_kind)
      mosaiq::max_pool<T>(in[0].rows(b.input), out.rows(rows), b.params, state.output);
    else
      mosaiq::average_pool<T>(in[0].rows(b.input), out.rows(rows), b.params, state.output);
  } else {
    // Pixel-wise layers: the same op on the band's rows of every input (a broadcast input whole).
    input_views<T, Arity> views{};
    for (std::size_t k = 0; k < Arity; ++k)
      views[k] = in[k].height == 1 && Out.height > 1 ? in[k].view : in[k].rows(rows);
    Exec::run(state, views, out.rows(rows), scratch);
  }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
