// General 2-D convolution (groups = 1) in TFLite's 16x8 mode: int16 activations (zero point 0), int8 symmetric
// per-channel filters, int64 biases; specialized at compile time for the output channels and the window:
//
//   mosaiq::conv2d16x8<{.out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}}> conv(
//       filter /*[Cout][KH][KW][Cin] int8*/, bias /*Cout int64 or nullptr*/, input_channels,
//       requant /*reference::make_conv_requant_16x8*/);                     // load time: checks and packs
//   std::vector<std::byte> scratch(conv.workspace_bytes(input.dims()));      // or a slice of an arena
//   conv(input, output, scratch);                                            // run: no heap
//   conv.run_rows(input, output, scratch, {first, last});  // output rows [first, last) only: a parallel run's task
//   conv.run_rows_window(rows, first_row, image_height, band_out, scratch, {first, last});  // from a window of rows
//
// Results equal reference::conv2d_16x8 bit for bit.
//
// Design: no microkernel of its own. The filter [Cout][KH][KW][Cin] is a pointwise filter [Cout][K] with
// K = KH * KW * Cin, and output pixel p is the dot product of its patch (the KH x KW x Cin input values under the
// window, in that order) with it. So the layer owns a mosaiq::pointwise16x8 loaded with K input channels (its packed
// weights, int32 bound check and int64 fallback, microkernels and requantization) and runs it on the patches of a
// band of output rows at a time, gathered into the workspace (im2col). Taps outside the image are 0 in the patch:
// the zero point is 0, so they add nothing, which is what the reference gets by skipping them. The int32 bound
// (|bias| + 32768 sum |w| < 2^31 per channel over all K taps) is pointwise16x8's, so exactly where it fails the
// layer runs reference::pointwise_conv_16x8 on the patches: int64 sums, the same values as the reference's.
// A patch takes K values rounded up to even (the pair step of the x86 tiles; the pad value is never read).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/ops/detail/kernel_16x8.hpp"
#include "mosaiq/ops/pointwise16x8.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of one 16x8 convolution layer.
struct conv2d16x8_config {
  int out_channels = 0;
  hw kernel{3, 3};
  hw stride{1, 1};
  hw dilation{1, 1};
  padding pad = padding::same();
  /// Output pixels per register tile of the GEMM (0: the path's default).
  int tile_pixels = 0;
  friend constexpr bool operator==(const conv2d16x8_config&, const conv2d16x8_config&) = default;
};

namespace detail::conv16 {

/// Output rows per band: the band's patches stay within pointwise16x8's L1 chunk (at least one row).
constexpr int band_rows(int out_width, std::size_t patch_bytes, int out_height) noexcept {
  const std::size_t row_bytes = static_cast<std::size_t>(out_width) * patch_bytes;
  const std::size_t rows = row_bytes == 0 ? 1 : std::max<std::size_t>(1, pw16::chunk_input_bytes / row_bytes);
  return static_cast<int>(std::min<std::size_t>(rows, static_cast<std::size_t>(std::max(out_height, 1))));
}

/// Copies `count` int16 values: fixed-size moves, since patch runs are a few values (a call to memmove per run
/// costs more than the copy).
[[gnu::always_inline]] inline void copy_run(std::int16_t* to, const std::int16_t* from, int count) noexcept {
  for (; count >= 4; count -= 4, to += 4, from += 4) std::memcpy(to, from, 4 * sizeof(std::int16_t));
  if (count & 2) std::memcpy(to, from, 2 * sizeof(std::int16_t)), to += 2, from += 2;
  if (count & 1) *to = *from;
}

/// What the layers built on the 16x8 pointwise GEMM (conv2d16x8, transpose_conv16x8) share: the GEMM, the calls and
/// the checks every run starts with. `Layer` provides output_shape(in), workspace_bytes(in) and
/// run_checked(in, out, workspace, band, gemm), which lays the data out for `gemm(gemm input view, gemm output view)`
/// and writes output rows `band` only.
template <class Layer, class Gemm>
class gemm_layer {
 public:
  bool ready() const noexcept { return gemm_.ready(); }
  int input_channels() const noexcept { return channels_; }
  /// Whether the SIMD int32 path runs (every accumulator provably fits int32), else the int64 reference.
  bool uses_int32_path() const noexcept { return gemm_.uses_int32_path(); }

  /// Runs on every image of the batch with `workspace` of at least workspace_bytes(in.dims()) bytes (2-byte
  /// aligned). The output extents must be output_shape(input); views may have any pixel strides. Misuse is reported
  /// and leaves `out` untouched.
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const std::int16_t, InExtents> in, tensor_view<std::int16_t, OutExtents> out,
                  std::span<std::byte> workspace) const {
    run(tensor_view<const std::int16_t>(in), tensor_view<std::int16_t>(out), workspace, {0, out.height()},
        [this](auto from, auto to) { gemm_(from, to); });
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<std::int16_t, InExtents> in, tensor_view<std::int16_t, OutExtents> out,
                  std::span<std::byte> workspace) const {
    (*this)(tensor_view<const std::int16_t>(in), tensor_view<std::int16_t>(out), workspace);
  }

  /// Output rows [band.first, band.last) of every image, nothing else, bit-identical to those rows of a whole run:
  /// one task of a parallel run, each with its own workspace of workspace_bytes(in.dims()).
  void run_rows(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out, std::span<std::byte> workspace,
                row_band band) const {
    run(in, out, workspace, band, [this](auto from, auto to) { gemm_(from, to); });
  }

  /// The same layer on the scalar microkernel over this path's packed weights: the twin the tests compare with.
  void run_scalar_twin(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out,
                       std::span<std::byte> workspace) const {
    run(in, out, workspace, {0, out.height()}, [this](auto from, auto to) { gemm_.run_scalar_twin(from, to); });
  }

 protected:
  gemm_layer(int input_channels, Gemm gemm) : channels_(input_channels), gemm_(std::move(gemm)) {}
  const Gemm& gemm() const noexcept { return gemm_; }

 private:
  template <class Run>
  void run(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out, std::span<std::byte> workspace,
           row_band band, Run gemm) const {
    if (!require(ready(), errc::invalid_argument, "16x8 conv layer: not loaded (construction reported an error)") ||
        !check_view(in, "16x8 conv layer: invalid input view") ||
        !check_view(out, "16x8 conv layer: invalid output view") ||
        !require(in.channels() == channels_, errc::shape_mismatch,
                 "16x8 conv layer: input channels differ from the weights") ||
        !require(out.dims() == Layer::output_shape(in.dims()), errc::shape_mismatch,
                 "16x8 conv layer: output extents differ from output_shape(input)") ||
        !require(out.batch() == in.batch(), errc::shape_mismatch, "16x8 conv layer: input and output batch differ") ||
        !require(workspace.size() >= Layer::workspace_bytes(in.dims()) &&
                     reinterpret_cast<std::uintptr_t>(workspace.data()) % alignof(std::int16_t) == 0,
                 errc::invalid_argument,
                 "16x8 conv layer: workspace smaller than workspace_bytes(input) or misaligned") ||
        !require(band.first >= 0 && band.first <= band.last && band.last <= out.height(), errc::invalid_argument,
                 "16x8 conv layer: row band outside the output"))
      return;
    static_cast<const Layer&>(*this).run_checked(in, out, reinterpret_cast<std::int16_t*>(workspace.data()), band,
                                                 gemm);
  }

  int channels_ = 0;
  Gemm gemm_;
};

}  // namespace detail::conv16

/// 16x8 convolution for one compile-time config; see the file comment.
template <conv2d16x8_config Cfg>
class conv2d16x8
    : public detail::conv16::gemm_layer<
          conv2d16x8<Cfg>,
          pointwise16x8<pointwise16x8_config{.out_channels = Cfg.out_channels, .tile_pixels = Cfg.tile_pixels}>> {
  static_assert(Cfg.out_channels >= 1, "conv2d16x8: set .out_channels (at least 1)");
  static_assert(is_valid_window(Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad),
                "conv2d16x8: kernel, stride and dilation must be >= 1 and explicit pads >= 0");

  using gemm_type =
      pointwise16x8<pointwise16x8_config{.out_channels = Cfg.out_channels, .tile_pixels = Cfg.tile_pixels}>;
  using base = detail::conv16::gemm_layer<conv2d16x8<Cfg>, gemm_type>;
  friend base;
  static constexpr int taps = Cfg.kernel.h * Cfg.kernel.w;

 public:
  static constexpr conv2d16x8_config config = Cfg;
  using element_type = std::int16_t;
  using path = typename gemm_type::path;

  /// `filter` [Cout][KH][KW][Cin] int8 (TFLite layout), `bias` Cout int64 entries or nullptr, `q` from
  /// reference::make_conv_requant_16x8. Misuse is reported through mosaiq::require (ready() false).
  conv2d16x8(const std::int8_t* filter, const std::int64_t* bias, int input_channels,
             const reference::conv_requant_16x8& q)
      : base(input_channels, load(filter, bias, input_channels, q)) {}

  static constexpr int output_channels() noexcept { return Cfg.out_channels; }

  static constexpr shape output_shape(shape in) noexcept {
    const window_geometry g = geometry(in);
    return {g.y.output, g.x.output, Cfg.out_channels};
  }

  /// Bytes of the patch buffer for an input of extents `in` (its channels are the layer's input channels).
  static constexpr std::size_t workspace_bytes(shape in) noexcept {
    const shape out = output_shape(in);
    const std::size_t patch_bytes = patch_stride(in.channels) * sizeof(std::int16_t);
    return static_cast<std::size_t>(detail::conv16::band_rows(out.width, patch_bytes, out.height)) * out.width *
           patch_bytes;
  }

  /// Bytes of the patch buffer run_rows_window needs for bands of at most `rows` output rows of an image `in`.
  static constexpr std::size_t band_workspace_bytes(shape in, int rows) noexcept {
    const shape out = output_shape(in);
    const std::size_t patch_bytes = patch_stride(in.channels) * sizeof(std::int16_t);
    const int band = std::clamp(rows, 0, out.height);
    return static_cast<std::size_t>(detail::conv16::band_rows(out.width, patch_bytes, band)) * out.width * patch_bytes;
  }

  /// Output rows `band` of an image of `image_height` rows whose input is given as a window of rows: `in` holds
  /// image rows [in_first_row, in_first_row + in.height()), which must cover every row the band's windows read, and
  /// `band_out` holds exactly the band's rows; bit-identical to those rows of a whole run. One step of a banded
  /// network (net/bands.hpp); workspace: band_workspace_bytes(image, band rows). Misuse is reported through
  /// mosaiq::require and leaves `band_out` untouched.
  void run_rows_window(tensor_view<const std::int16_t> in, int in_first_row, int image_height,
                       tensor_view<std::int16_t> band_out, std::span<std::byte> workspace, row_band band) const {
    const shape image{image_height, in.width(), in.channels()};
    const shape o = output_shape(image);
    const detail::kernel_16x8::image_rows frame{in_first_row, image_height, band.first};
    if (!require(this->ready(), errc::invalid_argument, "conv2d16x8: not loaded (construction reported an error)") ||
        !check_view(in, "conv2d16x8: invalid input view") || !check_view(band_out, "conv2d16x8: invalid output view") ||
        !require(in.channels() == this->input_channels(), errc::shape_mismatch,
                 "conv2d16x8: input channels differ from the weights") ||
        !require(band.first >= 0 && band.first <= band.last && band.last <= o.height, errc::invalid_argument,
                 "conv2d16x8: row band outside the output") ||
        !require(band_out.dims() == shape{band.rows(), o.width, o.channels} && band_out.batch() == in.batch(),
                 errc::shape_mismatch, "conv2d16x8: output extents differ from the band of output_shape(input)") ||
        !require(detail::kernel_16x8::window_covers(frame, in.height(), band,
                                                    effective_kernel_extent(Cfg.kernel.h, Cfg.dilation.h), Cfg.stride.h,
                                                    geometry(image).y.pad_before),
                 errc::shape_mismatch, "conv2d16x8: the input window misses rows the band reads") ||
        !require(workspace.size() >= band_workspace_bytes(image, band.rows()) &&
                     reinterpret_cast<std::uintptr_t>(workspace.data()) % alignof(std::int16_t) == 0,
                 errc::invalid_argument,
                 "conv2d16x8: workspace smaller than band_workspace_bytes(input, band rows) or misaligned"))
      return;
    run_framed(in, band_out, reinterpret_cast<std::int16_t*>(workspace.data()), frame, band,
               [this](auto from, auto to) { this->gemm()(from, to); });
  }

 private:
  static constexpr window_geometry geometry(shape in) noexcept {
    return resolve_window(in.height, in.width, Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
  }
  /// The GEMM over K = KH * KW * Cin input channels (the filter as it is).
  static gemm_type load(const std::int8_t* filter, const std::int64_t* bias, int input_channels,
                        const reference::conv_requant_16x8& q) {
    if (!require(input_channels >= 1, errc::invalid_argument, "conv2d16x8: input_channels must be at least 1"))
      return gemm_type();
    return gemm_type(filter, bias, input_channels * taps, q);
  }
  static constexpr std::ptrdiff_t patch_stride(int input_channels) noexcept {
    const std::ptrdiff_t k = static_cast<std::ptrdiff_t>(taps) * input_channels;
    return k + k % 2;
  }

  /// Per image, chunks of the band's output rows: their patches into the workspace, then the GEMM from them to the
  /// rows.
  template <class Gemm>
  void run_checked(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out, std::int16_t* patches,
                   row_band rows_to_run, Gemm gemm) const {
    run_framed(in, out, patches, {0, in.height(), 0}, rows_to_run, gemm);
  }

  /// run_checked on views placed in the image by `frame` (the output's chunks: at most its rows).
  template <class Gemm>
  void run_framed(const tensor_view<const std::int16_t>& in, const tensor_view<std::int16_t>& out,
                  std::int16_t* patches, detail::kernel_16x8::image_rows frame, row_band rows_to_run, Gemm gemm) const {
    const shape out_dims = out.dims();
    if (rows_to_run.rows() == 0 || out_dims.width == 0) return;
    const int channels = this->input_channels();
    const std::ptrdiff_t stride = patch_stride(channels);
    const int band = detail::conv16::band_rows(out_dims.width, stride * sizeof(std::int16_t), out_dims.height);
    const window_geometry g = geometry({frame.in_height, in.width(), in.channels()});
    for (int n = 0; n < in.batch(); ++n)
      for (int oy0 = rows_to_run.first; oy0 < rows_to_run.last; oy0 += band) {
        const int rows = std::min(band, rows_to_run.last - oy0);
        for (int oy = oy0; oy < oy0 + rows; ++oy)
          gather_row(in, frame, n, oy * Cfg.stride.h - g.y.pad_before, g.x.pad_before, out_dims.width, stride,
                     patches + static_cast<std::ptrdiff_t>(oy - oy0) * out_dims.width * stride);
        const shape band_dims{rows, out_dims.width, taps * channels};
        gemm(tensor_view<const std::int16_t>(patches, band_dims, 1, stride),
             out.image(n).row_slice(oy0 - frame.out_first, rows));
      }
  }

  /// The patches of one output row, whose windows start at input row y0, `stride` values apart. Interior windows
  /// (every column inside the image, dense pixels, no column dilation) take one run of KW * Cin values per kernel
  /// row, row by row; the others go tap by tap.
  void gather_row(const tensor_view<const std::int16_t>& in, detail::kernel_16x8::image_rows frame, int n, int y0,
                  int pad_left, int out_width, std::ptrdiff_t stride, std::int16_t* patches) const {
    const int c = this->input_channels(), run = Cfg.kernel.w * c;
    int first = 0, last = 0;  // the interior output columns [first, last)
    if (Cfg.dilation.w == 1 && in.pixel_stride() == c && in.width() - Cfg.kernel.w + pad_left >= 0) {
      first = std::min(out_width, (pad_left + Cfg.stride.w - 1) / Cfg.stride.w);
      last = std::clamp((in.width() - Cfg.kernel.w + pad_left) / Cfg.stride.w + 1, first, out_width);
    }
    const auto border = [&](int ox) {
      gather_patch(in, frame, n, y0, ox * Cfg.stride.w - pad_left, patches + ox * stride);
    };
    for (int ox = 0; ox < first; ++ox) border(ox);
    for (int ox = last; ox < out_width; ++ox) border(ox);
    for (int ky = 0; ky < Cfg.kernel.h; ++ky) {
      const int y = y0 + ky * Cfg.dilation.h;
      std::int16_t* to = patches + first * stride + ky * run;
      if (y < 0 || y >= frame.in_height) {
        for (int ox = first; ox < last; ++ox, to += stride) std::fill_n(to, run, std::int16_t{0});
        continue;
      }
      const std::int16_t* from =
          first < last ? in.pixel(n, y - frame.in_first, first * Cfg.stride.w - pad_left) : nullptr;
      for (int ox = first; ox < last; ++ox, to += stride, from += Cfg.stride.w * c)
        detail::conv16::copy_run(to, from, run);
    }
  }

  /// The KH x KW x Cin window whose top-left tap is input pixel (y0, x0) of image n, 0 outside the image.
  void gather_patch(const tensor_view<const std::int16_t>& in, detail::kernel_16x8::image_rows frame, int n, int y0,
                    int x0, std::int16_t* patch) const {
    const int c = this->input_channels();
    for (int ky = 0; ky < Cfg.kernel.h; ++ky) {
      const int y = y0 + ky * Cfg.dilation.h;
      const bool row_inside = y >= 0 && y < frame.in_height;
      for (int kx = 0; kx < Cfg.kernel.w; ++kx, patch += c) {
        const int x = x0 + kx * Cfg.dilation.w;
        if (row_inside && x >= 0 && x < in.width())
          detail::conv16::copy_run(patch, in.pixel(n, y - frame.in_first, x), c);
        else
          std::fill_n(patch, c, std::int16_t{0});
      }
    }
  }
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
