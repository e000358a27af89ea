// Transposed convolution in TFLite's 16x8 mode (int16 TRANSPOSE_CONV: int16 activations with zero point 0, int8
// per-channel filters, int64 biases) for kernel == stride, the upsampling form (the selfie model's last layer, 2x2
// stride 2):
//
//   mosaiq::transpose_conv16x8<{.out_channels = 1, .kernel = {2, 2}, .stride = {2, 2}}> up(
//       filter /*[Cout][KH][KW][Cin] int8*/, bias /*Cout int64 or nullptr*/, input_channels, requant);  // load
//   std::vector<std::byte> scratch(up.workspace_bytes(input.dims()));                  // or a slice of an arena
//   up(input, output, scratch);                                                        // run: no heap
//   up.run_rows(input, output, scratch, {first, last});  // output rows [first, last) only: a parallel run's task
//
// Results equal reference::transpose_conv_16x8 bit for bit. Other kernels and strides (overlapping taps) are refused
// at compile time: they run that reference.
//
// Design: no microkernel of its own. With kernel == stride the output extents are input * stride, both paddings have
// no pad, and output pixel (iy * sh + fy, ix * sw + fx) receives exactly one sum, input pixel (iy, ix) against taps
// (fy, fx): sum_ic x[ic] w[oc][fy][fx][ic] + bias[oc]. That is a 1x1 convolution from Cin to KH * KW * Cout channels
// (column (fy * KW + fx) * Cout + oc, its bias and multiplier those of oc) followed by depth-to-space. The layer owns
// a mosaiq::pointwise16x8 loaded with the filter reordered that way (its packed weights, int32 bound check and int64
// fallback, microkernels and requantization), runs it on a band of input rows at a time into the workspace, and
// copies each pixel's KW * Cout values of a kernel row to their output row. Each output value is requantized once,
// from the same sum as the reference's int64 scatter: exact, on the int32 path where pointwise16x8's bound holds
// (per column: |bias| + 32768 sum |w| < 2^31) and on its int64 reference otherwise.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/ops/conv16x8.hpp"
#include "mosaiq/ops/pointwise16x8.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of one 16x8 transposed convolution with kernel == stride.
struct transpose_conv16x8_config {
  int out_channels = 0;
  hw kernel{2, 2};
  hw stride{2, 2};
  /// SAME and VALID give the same layer when kernel == stride (output input * stride, no pads); kept for the
  /// network's layer descriptor.
  padding pad = padding::same();
  /// Input pixels per register tile of the GEMM (0: the path's default).
  int tile_pixels = 0;
  friend constexpr bool operator==(const transpose_conv16x8_config&, const transpose_conv16x8_config&) = default;
};

/// Whether transpose_conv16x8 takes a layer of this kernel and stride (else reference::transpose_conv_16x8 runs it).
constexpr bool transpose_conv16x8_supports(hw kernel, hw stride) noexcept {
  return kernel == stride && kernel.h >= 1 && kernel.w >= 1;
}

/// 16x8 transposed convolution for one compile-time config; see the file comment.
template <transpose_conv16x8_config Cfg>
class transpose_conv16x8
    : public detail::conv16::gemm_layer<
          transpose_conv16x8<Cfg>,
          pointwise16x8<pointwise16x8_config{.out_channels = Cfg.kernel.h * Cfg.kernel.w * Cfg.out_channels,
                                             .tile_pixels = Cfg.tile_pixels}>> {
  static_assert(Cfg.out_channels >= 1, "transpose_conv16x8: set .out_channels (at least 1)");
  static_assert(transpose_conv16x8_supports(Cfg.kernel, Cfg.stride),
                "transpose_conv16x8: kernel must equal stride (other transposed convolutions run "
                "reference::transpose_conv_16x8)");
  static_assert(Cfg.pad.mode != padding_mode::explicit_pads, "transpose_conv16x8: padding SAME or VALID");

  static constexpr int kh = Cfg.kernel.h, kw = Cfg.kernel.w, cout = Cfg.out_channels;
  static constexpr int columns = kh * kw * cout;  // the GEMM's output channels
  using gemm_type = pointwise16x8<pointwise16x8_config{.out_channels = columns, .tile_pixels = Cfg.tile_pixels}>;
  using base = detail::conv16::gemm_layer<transpose_conv16x8<Cfg>, gemm_type>;
  friend base;

 public:
  static constexpr transpose_conv16x8_config config = Cfg;
  using element_type = std::int16_t;
  using path = typename gemm_type::path;

  /// `filter` [Cout][KH][KW][Cin] int8 (TFLite layout), `bias` Cout int64 entries or nullptr, `q` from
  /// reference::make_conv_requant_16x8 (one multiplier, or one per output channel). Misuse is reported through
  /// mosaiq::require (ready() false).
  transpose_conv16x8(const std::int8_t* filter, const std::int64_t* bias, int input_channels,
                     const reference::conv_requant_16x8& q)
      : base(input_channels, load(filter, bias, input_channels, q)) {}

  static constexpr int output_channels() noexcept { return cout; }

  /// Input * stride (TensorFlow's output extents for SAME and VALID when kernel == stride).
  static constexpr shape output_shape(shape in) noexcept { return {in.height * kh, in.width * kw, cout}; }

  /// Bytes of the GEMM's output for a band of input rows of an input of extents `in`.
  static constexpr std::size_t workspace_bytes(shape in) noexcept {
    constexpr std::size_t pixel_bytes = columns * sizeof(std::int16_t);
    return static_cast<std::size_t>(detail::conv16::band_rows(in.width, pixel_bytes, in.height)) * in.width *
           pixel_bytes;
  }

 private:
  /// The GEMM over the reordered filter: column (fy * KW + fx) * Cout + oc is w[oc][fy][fx][:], with oc's bias and
  /// multiplier. A load-time copy; pointwise16x8 packs it and keeps nothing of it but its int64 fallback's operands.
  static gemm_type load(const std::int8_t* filter, const std::int64_t* bias, int input_channels,
                        const reference::conv_requant_16x8& q) {
    if (!require(input_channels >= 1, errc::invalid_argument,
                 "transpose_conv16x8: input_channels must be at least 1") ||
        !require(filter != nullptr, errc::null_pointer, "transpose_conv16x8: filter is null") ||
        !reference::detail::check_conv_requant_16x8(q, cout))
      return gemm_type();
    const std::size_t cin = static_cast<std::size_t>(input_channels);
    std::vector<std::int8_t> columns_filter(columns * cin);
    std::vector<std::int64_t> columns_bias(columns, 0);
    reference::conv_requant_16x8 columns_q{.clamp = q.clamp, .multipliers = {}};
    for (int tap = 0; tap < kh * kw; ++tap)
      for (int oc = 0; oc < cout; ++oc) {
        const int column = tap * cout + oc;
        std::copy_n(filter + (static_cast<std::size_t>(oc) * kh * kw + tap) * cin, cin,
                    columns_filter.begin() + column * cin);
        if (bias) columns_bias[column] = bias[oc];
        if (q.multipliers.size() != 1) columns_q.multipliers.push_back(q.multiplier_for(oc));
      }
    if (q.multipliers.size() == 1) columns_q.multipliers = q.multipliers;
    return gemm_type(columns_filter.data(), columns_bias.data(), input_channels, columns_q);
  }

  /// Per image, chunks of the input rows that make output rows `band`: the GEMM into the workspace, then
  /// depth-to-space of the band's rows into the output.
  template <class Gemm>
  void run_checked(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out, std::int16_t* sums, row_band band,
                   Gemm gemm) const {
    if (band.rows() == 0 || in.width() == 0) return;
    const int chunk = detail::conv16::band_rows(in.width(), columns * sizeof(std::int16_t), in.height());
    const int first = band.first / kh, last = (band.last + kh - 1) / kh;  // input row iy makes rows iy * KH + fy
    for (int n = 0; n < in.batch(); ++n)
      for (int iy0 = first; iy0 < last; iy0 += chunk) {
        const int rows = std::min(chunk, last - iy0);
        gemm(in.image(n).row_slice(iy0, rows), tensor_view<std::int16_t>(sums, shape{rows, in.width(), columns}));
        depth_to_space(sums, out, n, iy0, rows, band);
      }
  }

  /// Input pixel (iy, ix)'s sums, (fy, fx, oc) in order, to output pixels (iy * KH + fy, ix * KW + fx) of `band`.
  static void depth_to_space(const std::int16_t* sums, const tensor_view<std::int16_t>& out, int n, int iy0, int rows,
                             row_band band) noexcept {
    const int width = out.width() / kw;
    for (int r = 0; r < rows; ++r)
      for (int fy = 0; fy < kh; ++fy) {
        const int oy = (iy0 + r) * kh + fy;
        if (oy < band.first || oy >= band.last) continue;
        const std::int16_t* from = sums + static_cast<std::ptrdiff_t>(r) * width * columns + fy * kw * cout;
        if (out.pixel_stride() == cout) {  // a kernel row's KW pixels are one run of the output row
          std::int16_t* to = out.pixel(n, oy, 0);
          for (int ix = 0; ix < width; ++ix, from += columns, to += kw * cout) std::copy_n(from, kw * cout, to);
        } else {
          for (int ix = 0; ix < width; ++ix, from += columns)
            for (int fx = 0; fx < kw; ++fx) std::copy_n(from + fx * cout, cout, out.pixel(n, oy, ix * kw + fx));
        }
      }
  }
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
