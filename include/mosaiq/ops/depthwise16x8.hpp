// Depthwise convolution in TFLite's 16x8 mode: int16 activations (zero point 0), int8 symmetric per-channel filters,
// int64 biases, depth multiplier 1, specialized at compile time for the window (kernel, stride, dilation, padding):
//
//   mosaiq::depthwise16x8<{.kernel = {5, 5}, .stride = {2, 2}}> dw(filter /*[KH][KW][C] int8*/,
//                                                                  bias /*C int64 or nullptr*/, channels,
//                                                                  requant /*reference::make_conv_requant_16x8*/);
//   dw(input, output);  // tensor_view<const i16> -> tensor_view<i16>; no workspace, no heap
//   dw.run_rows(input, output, {first, last});  // output rows [first, last) only: one task of a parallel run
//   dw.run_rows_window(rows, first_row, image_height, band_out, {first, last});  // the same from a window of rows
//
// Results equal reference::depthwise_conv_16x8 bit for bit.
//
// Design. As pointwise16x8 (docs/decisions.md, "The 16x8 pointwise kernel"): int32 accumulators where every
// channel's |bias| + 32768 sum_t |w_t| < 2^31 (checked at load: it bounds every partial sum, whatever taps the
// padding drops and in whatever order a path adds them), else the int64 reference on the layer's own copy of the
// operands (uses_int32_path() says which); the epilogue is reference::single_round_scale_16x8's single-rounding
// form of TFLite's Q15 requantization. The 8-bit depthwise's machinery (zero points folded into biases, taps in
// groups of 4 bytes, row rings) has nothing to do here, hence an op of its own (docs/decisions.md, "The 16x8
// depthwise kernel").
//
// A run walks output pixels; for each it points at its KH x KW input pixels (a null pointer for a tap in the
// padding) and the path's microkernel computes every block of 16 channels with the taps in registers: pairs of taps
// per vpmaddwd on x86, one tap per smlal on NEON (ops/depthwise16x8/<isa>.hpp). Pixels whose window lies inside the
// image take the microkernel without the padding checks. Weights are packed once at load (ops/depthwise16x8/pixel.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/ops/depthwise16x8/avx2.hpp"
#include "mosaiq/ops/depthwise16x8/avx512.hpp"
#include "mosaiq/ops/depthwise16x8/neon.hpp"
#include "mosaiq/ops/depthwise16x8/pixel.hpp"
#include "mosaiq/ops/depthwise16x8/scalar.hpp"
#include "mosaiq/ops/detail/kernel_16x8.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of one 16x8 depthwise layer (depth multiplier 1).
struct depthwise16x8_config {
  hw kernel{3, 3};
  hw stride{1, 1};
  hw dilation{1, 1};
  padding pad = padding::same();
  friend constexpr bool operator==(const depthwise16x8_config&, const depthwise16x8_config&) = default;
};

/// 16x8 depthwise convolution layer for one compile-time window. Construct once (checks and packs the weights),
/// then call on any input size; see the file comment for the design.
template <depthwise16x8_config Cfg>
class depthwise16x8 {
 public:
  /// The path this build runs (the scalar twin runs kernels::dw16::scalar_path on this path's layout).
  using path = simd::native_path_of<kernels::dw16::path_for>;

 private:
  static constexpr int taps = Cfg.kernel.h * Cfg.kernel.w;
  static constexpr int block = kernels::dw16::block;
  static constexpr int groups = (taps + path::group_taps - 1) / path::group_taps;
  static constexpr std::ptrdiff_t block_weights = static_cast<std::ptrdiff_t>(groups) * block * path::group_taps;

  static_assert(is_valid_window(Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad),
                "depthwise16x8: kernel, stride and dilation must be at least 1, explicit pads non-negative");
  static_assert(taps <= 64, "depthwise16x8: kernels up to 64 taps (8x8)");

 public:
  static constexpr depthwise16x8_config config = Cfg;
  using element_type = std::int16_t;

  /// `filter` [KH][KW][C] int8 (TFLite layout), `bias` C int64 entries or nullptr, `q` from
  /// reference::make_conv_requant_16x8 (one multiplier, or one per channel; its clamp is the fused activation).
  /// Misuse is reported through mosaiq::require and leaves the layer unusable (ready() false).
  depthwise16x8(const std::int8_t* filter, const std::int64_t* bias, int channels,
                const reference::conv_requant_16x8& q) {
    load(filter, bias, channels, q);
  }

  bool ready() const noexcept { return ready_; }
  int channels() const noexcept { return channels_; }
  /// Whether the SIMD int32 path runs (every channel's accumulator provably fits int32), else the int64 reference.
  bool uses_int32_path() const noexcept { return int32_path_; }

  static constexpr window_geometry geometry(shape in) noexcept {
    return resolve_window(in.height, in.width, Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
  }
  static constexpr shape output_shape(shape in) noexcept {
    const window_geometry g = geometry(in);
    return {g.y.output, g.x.output, in.channels};
  }

  /// Runs on every image of the batch. Views may have any extents (static ones convert), strides and element
  /// offsets; `out` must not overlap `in`. Misuse is reported through mosaiq::require and leaves `out` untouched.
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const std::int16_t, InExtents> in, tensor_view<std::int16_t, OutExtents> out) const {
    run(tensor_view<const std::int16_t>(in), tensor_view<std::int16_t>(out), {0, out.height()});
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<std::int16_t, InExtents> in, tensor_view<std::int16_t, OutExtents> out) const {
    run(tensor_view<const std::int16_t>(in), tensor_view<std::int16_t>(out), {0, out.height()});
  }

  /// Output rows [band.first, band.last) of every image, nothing else, bit-identical to those rows of a whole run:
  /// one task of a parallel run (each output row reads the whole input's rows its window covers).
  void run_rows(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out, row_band band) const {
    run(in, out, band);
  }

  /// Output rows `band` of an image of `image_height` rows whose input is given as a window of rows: `in` holds
  /// image rows [in_first_row, in_first_row + in.height()), which must cover every row the band's windows read, and
  /// `band_out` holds exactly the band's rows; bit-identical to those rows of a whole run. One step of a banded
  /// network (net/bands.hpp). Misuse is reported through mosaiq::require and leaves `band_out` untouched.
  void run_rows_window(tensor_view<const std::int16_t> in, int in_first_row, int image_height,
                       tensor_view<std::int16_t> band_out, row_band band) const {
    const shape image{image_height, in.width(), in.channels()};
    const shape o = output_shape(image);
    const detail::kernel_16x8::image_rows frame{in_first_row, image_height, band.first};
    if (!check_ready(in, band_out) ||
        !require(band.first >= 0 && band.first <= band.last && band.last <= o.height, errc::invalid_argument,
                 "depthwise16x8: row band outside the output") ||
        !require(band_out.dims() == shape{band.rows(), o.width, o.channels} && band_out.batch() == in.batch(),
                 errc::shape_mismatch, "depthwise16x8: output extents differ from the band of output_shape(input)") ||
        !require(detail::kernel_16x8::window_covers(frame, in.height(), band,
                                                    effective_kernel_extent(Cfg.kernel.h, Cfg.dilation.h), Cfg.stride.h,
                                                    geometry(image).y.pad_before),
                 errc::shape_mismatch, "depthwise16x8: the input window misses rows the band reads"))
      return;
    run_checked<path>(in, band_out, frame, band);
  }

  /// The same layer on the scalar microkernel over this path's packed weights: the twin the tests compare with.
  void run_scalar_twin(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out) const {
    run<kernels::dw16::scalar_path<path::group_taps, path::order>>(in, out, {0, out.height()});
  }

 private:
  void load(const std::int8_t* filter, const std::int64_t* bias, int channels, const reference::conv_requant_16x8& q) {
    if (!require(channels >= 1, errc::invalid_argument, "depthwise16x8: channels must be at least 1") ||
        !require(filter != nullptr, errc::null_pointer, "depthwise16x8: filter is null") ||
        !detail::kernel_16x8::check_requant(
            q, channels,
            "depthwise16x8: multipliers must be non-negative with shift in [-31, 7] (make_conv_requant_16x8)"))
      return;
    channels_ = channels;
    clamp_ = q.clamp;
    const int blocks = (channels + block - 1) / block;
    weights_.assign(static_cast<std::size_t>(blocks) * block_weights, 0);
    bias_.assign(static_cast<std::size_t>(blocks) * block, 0);
    multiplier_.assign(bias_.size(), 0);
    right_shift_.assign(bias_.size(), 31);
    int32_path_ = true;
    for (int b = 0; b < blocks; ++b)
      for (int slot = 0; slot < block; ++slot) {
        const int c = b * block + path::order[static_cast<std::size_t>(slot)];
        if (c >= channels) continue;
        const std::int64_t channel_bias = bias ? bias[c] : 0;
        int32_path_ =
            int32_path_ && detail::kernel_16x8::accumulates_in_int32(filter + c, taps, channels, channel_bias);
        pack_slot(filter, b, slot, c);
        const std::size_t at = static_cast<std::size_t>(b) * block + slot;
        bias_[at] = static_cast<std::int32_t>(channel_bias);  // used only where int32_path_ proves it fits
        const requant_scale s = reference::single_round_scale_16x8(q.multiplier_for(c));
        multiplier_[at] = s.multiplier, right_shift_[at] = s.right_shift;
      }
    if (!int32_path_) keep_reference_operands(filter, bias, q);
    ready_ = true;
  }

  /// Channel c's taps, sign-extended, into slot `slot` of block b: [T / group][16][group].
  void pack_slot(const std::int8_t* filter, int b, int slot, int c) {
    std::int16_t* w = weights_.data() + b * block_weights;
    for (int t = 0; t < taps; ++t)
      w[(static_cast<std::ptrdiff_t>(t / path::group_taps) * block + slot) * path::group_taps + t % path::group_taps] =
          filter[static_cast<std::size_t>(t) * channels_ + c];
  }

  /// A layer whose accumulators could leave int32 runs the int64 reference on its own operands.
  void keep_reference_operands(const std::int8_t* filter, const std::int64_t* bias,
                               const reference::conv_requant_16x8& q) {
    filter_.assign(filter, filter + static_cast<std::size_t>(taps) * channels_);
    bias64_.assign(static_cast<std::size_t>(channels_), 0);
    if (bias) std::copy_n(bias, channels_, bias64_.begin());
    requant_ = q;
  }

  static constexpr reference::depthwise_params reference_params() noexcept {
    return {.kernel = Cfg.kernel, .stride = Cfg.stride, .dilation = Cfg.dilation, .pad = Cfg.pad};
  }

  /// The checks every run starts with: a loaded layer, valid views, the weights' channels.
  bool check_ready(const tensor_view<const std::int16_t>& in, const tensor_view<std::int16_t>& out) const {
    return require(ready_, errc::invalid_argument,
                   "depthwise16x8: layer was not loaded (construction reported an error)") &&
           check_view(in, "depthwise16x8: invalid input view") &&
           check_view(out, "depthwise16x8: invalid output view") &&
           require(in.channels() == channels_, errc::shape_mismatch,
                   "depthwise16x8: input channels differ from the weights");
  }

  template <class Path = path>
  void run(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out, row_band band) const {
    if (!check_ready(in, out) ||
        !require(out.dims() == output_shape(in.dims()), errc::shape_mismatch,
                 "depthwise16x8: output extents differ from output_shape(input)") ||
        !require(out.batch() == in.batch(), errc::shape_mismatch, "depthwise16x8: input and output batch differ") ||
        !require(band.first >= 0 && band.first <= band.last && band.last <= out.height(), errc::invalid_argument,
                 "depthwise16x8: row band outside the output"))
      return;
    run_checked<Path>(in, out, {0, in.height(), 0}, band);
  }

  /// Output rows `band` from views placed in the image by `frame` (checked). Inlined into its callers, as the row loop
  /// was before the window entry point shared it: a call in between costs the pixel loop registers.
  template <class Path>
  [[gnu::always_inline]] inline void run_checked(const tensor_view<const std::int16_t>& in,
                                                 const tensor_view<std::int16_t>& out,
                                                 detail::kernel_16x8::image_rows frame, row_band band) const {
    if (!int32_path_) return run_reference_rows(in, out, frame, band);
    kernels::dw16::pixel_job job{};
    job.channels = channels_;
    job.weights = weights_.data(), job.block_weights = block_weights;
    job.bias = bias_.data(), job.multiplier = multiplier_.data(), job.right_shift = right_shift_.data();
    job.clamp_min = clamp_.min, job.clamp_max = clamp_.max;
    const window_geometry g = geometry({frame.in_height, in.width(), in.channels()});
    for (int n = 0; n < in.batch(); ++n)
      for (int oy = band.first; oy < band.last; ++oy) run_row<Path>(in, out, g, frame, n, oy, job);
  }

  /// Output rows `band` on the int64 reference: the band as a convolution of its own, on the input rows its windows
  /// read, with explicit pads for the window rows above and below the image (so the same taps are skipped).
  void run_reference_rows(const tensor_view<const std::int16_t>& in, const tensor_view<std::int16_t>& out,
                          detail::kernel_16x8::image_rows frame, row_band band) const {
    if (band.rows() == 0) return;
    const window_geometry g = geometry({frame.in_height, in.width(), in.channels()});
    const int top = band.first * Cfg.stride.h - g.y.pad_before;
    const int bottom = top + (band.rows() - 1) * Cfg.stride.h + effective_kernel_extent(Cfg.kernel.h, Cfg.dilation.h);
    const int first = std::clamp(top, 0, frame.in_height), last = std::clamp(bottom, first, frame.in_height);
    reference::depthwise_params p = reference_params();
    p.pad = padding::explicit_pads(first - top, bottom - last, g.x.pad_before, g.x.pad_after);
    reference::depthwise_conv_16x8(in.row_slice(first - frame.in_first, last - first), filter_.data(), bias64_.data(),
                                   out.row_slice(band.first - frame.out_first, band.rows()), p, requant_);
  }

  /// One output row: the window's input rows (null in the padding), then its pixels, those with the whole window
  /// inside the image without the microkernel's padding checks.
  template <class Path>
  void run_row(const tensor_view<const std::int16_t>& in, const tensor_view<std::int16_t>& out,
               const window_geometry& g, detail::kernel_16x8::image_rows frame, int n, int oy,
               const kernels::dw16::pixel_job& row_template) const {
    constexpr int kh = Cfg.kernel.h, kw = Cfg.kernel.w;
    std::array<const std::int16_t*, kh> rows{};
    bool rows_inside = true;
    for (int ky = 0; ky < kh; ++ky) {
      const int iy = oy * Cfg.stride.h - g.y.pad_before + ky * Cfg.dilation.h;
      const bool inside = iy >= 0 && iy < frame.in_height;
      rows[static_cast<std::size_t>(ky)] = inside ? in.pixel(n, iy - frame.in_first, 0) : nullptr;
      rows_inside = rows_inside && inside;
    }
    const std::ptrdiff_t stride = in.pixel_stride();
    // Where the window's taps are for an input column 0 (when every row is inside): an inside pixel adds its column.
    std::array<const std::int16_t*, taps> at_column_0{};
    if (rows_inside)
      for (int t = 0; t < taps; ++t)
        at_column_0[static_cast<std::size_t>(t)] =
            rows[static_cast<std::size_t>(t / kw)] + static_cast<std::ptrdiff_t>(t % kw) * Cfg.dilation.w * stride;
    std::array<const std::int16_t*, taps> window;
    kernels::dw16::pixel_job job = row_template;  // a local copy: its tap pointers point into this frame
    job.taps = window.data();
    for (int ox = 0; ox < g.x.output; ++ox) {
      const int ix0 = ox * Cfg.stride.w - g.x.pad_before;
      job.out = out.pixel(n, oy - frame.out_first, ox);
      if (rows_inside && ix0 >= 0 && ix0 + (kw - 1) * Cfg.dilation.w < in.width()) {
        for (int t = 0; t < taps; ++t)
          window[static_cast<std::size_t>(t)] = at_column_0[static_cast<std::size_t>(t)] + ix0 * stride;
        run_pixel<Path, false>(job);
        continue;
      }
      for (int ky = 0; ky < kh; ++ky)
        for (int kx = 0; kx < kw; ++kx) {
          const int ix = ix0 + kx * Cfg.dilation.w;
          const std::int16_t* row = rows[static_cast<std::size_t>(ky)];
          window[static_cast<std::size_t>(ky * kw + kx)] =
              row != nullptr && ix >= 0 && ix < in.width() ? row + ix * stride : nullptr;
        }
      run_pixel<Path, true>(job);
    }
  }

  /// A pixel's whole blocks of 16 channels, then its tail. Edge: some taps may be in the padding (null).
  template <class Path, bool Edge>
  static void run_pixel(const kernels::dw16::pixel_job& job) noexcept {
    const int whole = job.channels / block;
    for (int b = 0; b < whole; ++b) Path::template channel_block<taps, Edge, true>(job, b, block);
    if (whole * block < job.channels)
      Path::template channel_block<taps, Edge, false>(job, whole, job.channels - whole * block);
  }

  int channels_ = 0;
  bool ready_ = false;
  bool int32_path_ = true;
  clamp_range clamp_{};
  detail::vector<std::int16_t> weights_;                          // per block: [T / group][16][group]
  detail::vector<std::int32_t> bias_, multiplier_, right_shift_;  // per padded channel, in the path's slot order
  // The int64 reference's operands, kept only by layers that cannot accumulate in int32.
  std::vector<std::int8_t> filter_;
  std::vector<std::int64_t> bias64_;
  reference::conv_requant_16x8 requant_;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
