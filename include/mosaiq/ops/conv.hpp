// Quantized general 2-D convolution (groups = 1), specialized at compile time for the output channel
// count, kernel, stride, dilation, padding, register tile, activation and rounding:
//
//   mosaiq::conv2d<mosaiq::conv2d_config{.out_channels = 32, .kernel = {3, 3}, .stride = {2, 2}}, mosaiq::u8> conv(
//       filter /*[Cout][KH][KW][Cin]*/, bias /*Cout or nullptr*/, input_channels, requant);  // load time: packs
//   std::vector<std::byte> scratch(conv.workspace_bytes(input.dims()));                    // or a slice of an arena
//   conv(input, output, scratch);                                                          // run: no heap
//
// Results equal reference::conv2d bit for bit (TFLite reference semantics: uint8 per-tensor weights
// with a zero point, int8 per-channel symmetric weights).
//
// Design. The filter [Cout][KH][KW][Cin] is exactly a pointwise filter [Cout][K] with
// K = KH * KW * Cin, and output pixel p is the dot product of row p of an im2col matrix with it. The
// layer owns a mosaiq::pointwise<Cout> loaded with K input channels (same packed weights, folded
// biases, split weights, microkernels, requantization) and runs its block loop with a row source
// that gathers each output pixel's patch on the fly, only for the block of pixels being computed:
// no im2col buffer exists. Taps outside the image are filled with the input zero point, so
// (x - input_zp) is 0 there and the zero-point algebra of the pointwise kernel holds unchanged; it
// is also what TFLite's reference gets by skipping them.
//
// Gathering. A block of rows is built in two passes: gather every patch of the block into byte
// staging in the workspace, then pack every row (x ^ flip, zero padding, split-weight sums) with
// the pointwise path's pack_row. (Gathering into the packed rows and packing in place, or packing
// each row right after gathering it, stalls every row on store forwarding; see patch_rows::pack.)
// On AVX-512 a patch of at most 64 bytes with contiguous kernel rows (the 3x3 stem over RGB) skips
// the staging: KH masked loads place its runs in one register (a ymm up to 32 bytes), one masked
// store writes the row, and the gathering pass skips such pixels a row run at a time. With VBMI, patches of at
// most 32 bytes over dense rows (the RGB stems) skip both passes: kernels::conv::pack_windows permutes every patch of
// the block, borders included, from 64-byte input windows, two pixels per vpermb (patch_rows::fits_windows).
// Interior pixels (every tap inside the image) copy one run of KW * Cin bytes per kernel row when
// the kernel row is contiguous in the input (dilation_x == 1 over a dense view, or KW == 1), Cin
// bytes per tap otherwise; a patch that is one contiguous run (1x1 and 1xN kernels) is packed from
// the input directly. Border pixels check every tap. Row r of the GEMM is output pixel r (images one
// after another), written at out.pixel(0, 0, 0) + r * pixel_stride: views space pixels equally, so
// a block's output is contiguous in output-pixel order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/conv/avx512.hpp"
#include "mosaiq/ops/conv/path.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace kernels::conv {
/// The path this target runs.
using native_path = simd::native_path_of<path_for>;
}  // namespace kernels::conv

/// Compile-time description of one general convolution layer.
struct conv2d_config {
  int out_channels = 0;
  hw kernel{3, 3};
  hw stride{1, 1};
  hw dilation{1, 1};
  padding pad = padding::same();
  /// Register tile of the GEMM microkernel (pixels x channels); {0, 0} picks the ISA default.
  pointwise_tile tile{};
  /// Fused activation used by the constructor that derives the requantization from scales.
  activation act = activation::none;
  rounding round = rounding::tflite_reference;
  /// Bound on the GEMM's packed pixel block (pointwise_config::block_bytes; 0: the speed default).
  std::size_t block_bytes = 0;
  friend constexpr bool operator==(const conv2d_config&, const conv2d_config&) = default;
};

namespace detail::conv {

/// Copies n bytes touching only [src, src + n) and [dst, dst + n): a few (overlapping) fixed-size
/// moves for the short runs patches are made of, memcpy for long ones.
[[gnu::always_inline]] inline void copy_bytes(std::uint8_t* dst, const std::uint8_t* src, int n) noexcept {
  if (n > 64) {
    std::memcpy(dst, src, static_cast<std::size_t>(n));
  } else if (n >= 16) {
    int i = 0;
    for (; i + 16 <= n; i += 16) std::memcpy(dst + i, src + i, 16);
    if (i < n) std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::uint64_t head, tail;
    std::memcpy(&head, src, 8);
    std::memcpy(&tail, src + n - 8, 8);
    std::memcpy(dst, &head, 8);
    std::memcpy(dst + n - 8, &tail, 8);
  } else if (n >= 4) {
    std::uint32_t head, tail;
    std::memcpy(&head, src, 4);
    std::memcpy(&tail, src + n - 4, 4);
    std::memcpy(dst, &head, 4);
    std::memcpy(dst + n - 4, &tail, 4);
  } else {
    for (int i = 0; i < n; ++i) dst[i] = src[i];
  }
}

/// First and one-past-last output index along one axis whose taps are all inside [0, in).
struct interior_range {
  int lo = 0, hi = 0;
};

constexpr interior_range interior(int in, int out, int kernel, int stride, int dilation, int pad_before) noexcept {
  // Tap 0 at o * stride - pad_before >= 0; the last tap at o * stride - pad_before + (kernel - 1) * dilation < in.
  const int lo = (pad_before + stride - 1) / stride;
  const int last = in - 1 - (kernel - 1) * dilation + pad_before;
  const int hi = last < 0 ? 0 : std::min(out, last / stride + 1);
  return {std::min(lo, out), std::max(hi, std::min(lo, out))};
}

/// The row source of ops/pointwise.hpp's block loop for a convolution: row r is the patch of output
/// pixel r (images one after another), [KH][KW][Cin] like the filter, taps outside the image filled
/// with the input zero point.
template <conv2d_config Cfg>
struct patch_rows {
  static constexpr int kh = Cfg.kernel.h, kw = Cfg.kernel.w;
  static constexpr int sh = Cfg.stride.h, sw = Cfg.stride.w;
  static constexpr int dh = Cfg.dilation.h, dw = Cfg.dilation.w;

  const std::uint8_t* input;                              // pixel (0, 0, 0)
  std::ptrdiff_t pixel_stride, row_stride, image_stride;  // bytes
  int in_h, in_w, channels;
  int out_h, out_w;
  int pad_top, pad_left;
  interior_range y, x;
  bool rows_contiguous;     // a kernel row's KW taps are KW * Cin consecutive bytes of the input
  std::uint8_t zero_point;  // the input zero point's byte
  std::uint8_t* staging;    // block_pixels * K bytes: the block's gathered patches

  // A patch that is one contiguous run of the input (1xN kernels over a dense view, 1x1) is packed
  // from the input directly.
  static constexpr bool may_be_direct = kh == 1 && (kw == 1 || dw == 1);

  /// Output pixel (oy, ox) of `image`: its patch in the input when it is one contiguous run there,
  /// else nullptr.
  [[gnu::always_inline]] const std::uint8_t* direct(const std::uint8_t* image, int oy, int ox) const noexcept {
    if constexpr (may_be_direct) {
      if ((kw == 1 || rows_contiguous) && is_interior(oy, ox))
        return image + (oy * sh - pad_top) * row_stride + (ox * sw - pad_left) * pixel_stride;
    }
    return nullptr;
  }

  /// Whether pack_windows builds this run's patches (paths that packs_windows): dense input rows, patches of at most
  /// 32 bytes, and two neighbouring pixels' taps within 64 bytes of an input row.
  bool fits_windows(int padded) const noexcept {
    return kh > 1 && pixel_stride == channels && padded <= 32 && (sw + (kw - 1) * dw + 1) * channels <= 64;
  }

  [[gnu::always_inline]] bool is_interior(int oy, int ox) const noexcept {
    return oy >= y.lo && oy < y.hi && ox >= x.lo && ox < x.hi;
  }

  /// Gathers the K bytes of interior output pixel (oy, ox) of `image` into `patch`.
  [[gnu::always_inline]] void gather_interior(const std::uint8_t* image, int oy, int ox,
                                              std::uint8_t* patch) const noexcept {
    const int c = channels;
    const std::uint8_t* p = image + (oy * sh - pad_top) * row_stride + (ox * sw - pad_left) * pixel_stride;
    if (rows_contiguous) {
#pragma GCC unroll 8
      for (int ky = 0; ky < kh; ++ky) copy_bytes(patch + ky * kw * c, p + ky * dh * row_stride, kw * c);
    } else {
      for (int ky = 0; ky < kh; ++ky)
        for (int kx = 0; kx < kw; ++kx)
          copy_bytes(patch + (ky * kw + kx) * c, p + ky * dh * row_stride + kx * dw * pixel_stride, c);
    }
  }

  /// The same for a pixel with taps outside the image (they read the input zero point).
  [[gnu::noinline]] void gather_border(const std::uint8_t* image, int oy, int ox, std::uint8_t* patch) const noexcept {
    const int iy0 = oy * sh - pad_top, ix0 = ox * sw - pad_left;
    const int c = channels;
    for (int ky = 0; ky < kh; ++ky) {
      const int iy = iy0 + ky * dh;
      std::uint8_t* dst = patch + ky * kw * c;
      if (iy < 0 || iy >= in_h) {
        std::memset(dst, zero_point, static_cast<std::size_t>(kw) * static_cast<std::size_t>(c));
        continue;
      }
      const std::uint8_t* src_row = image + iy * row_stride;
      // Taps kx_lo..kx_hi-1 are inside the row: one run when the kernel row is contiguous.
      const int kx_lo = std::clamp((-ix0 + dw - 1) / dw, 0, kw);
      const int last = in_w - 1 - ix0;  // the last tap inside is at kx * dw <= last
      const int kx_hi = last < 0 ? kx_lo : std::clamp(last / dw + 1, kx_lo, kw);
      if (kx_lo > 0) std::memset(dst, zero_point, static_cast<std::size_t>(kx_lo) * static_cast<std::size_t>(c));
      if (rows_contiguous) {
        copy_bytes(dst + kx_lo * c, src_row + (ix0 + kx_lo * dw) * pixel_stride, (kx_hi - kx_lo) * c);
      } else {
        for (int kx = kx_lo; kx < kx_hi; ++kx) copy_bytes(dst + kx * c, src_row + (ix0 + kx * dw) * pixel_stride, c);
      }
      if (kx_hi < kw)
        std::memset(dst + kx_hi * c, zero_point, static_cast<std::size_t>(kw - kx_hi) * static_cast<std::size_t>(c));
    }
  }

  /// Output pixels in order from row `first`: image, oy, ox.
  struct cursor {
    const std::uint8_t* image;
    int oy, ox;
  };
  cursor start(std::ptrdiff_t first) const noexcept {
    const std::ptrdiff_t image_pixels = static_cast<std::ptrdiff_t>(out_h) * out_w;
    const std::ptrdiff_t n = first / image_pixels;
    const int rest = static_cast<int>(first - n * image_pixels);
    return {input + n * image_stride, rest / out_w, rest % out_w};
  }
  [[gnu::always_inline]] void advance(cursor& at) const noexcept {
    if (++at.ox == out_w) {
      at.ox = 0;
      if (++at.oy == out_h) {
        at.oy = 0;
        at.image += image_stride;
      }
    }
  }

  /// Two passes over the block: gather every patch into staging, then pack every row from there.
  /// Packing right after gathering, or in place, loads each row with a wide (masked) load that
  /// overlaps stores still in flight (the row's narrow stores, or the previous row's 64-byte masked
  /// store): the load then waits for them to reach the cache (224x224x3 stem on VNNI: 333 us with
  /// it, 208 us without). From a block-sized staging area the stores have long landed.
  template <class Path, bool Sum>
  void pack(std::ptrdiff_t first, int count, typename Path::input_type* rows, int padded, std::uint8_t flip,
            std::int32_t* sums, std::int32_t factor) const noexcept {
    // A local copy the loops read: the gather's byte stores may alias *this, and the compiler would
    // reload every field after each of them.
    const patch_rows g = *this;
    if constexpr (kernels::conv::native_path::packs_windows && sizeof(typename Path::input_type) == 1) {
      if (g.fits_windows(padded)) {
        kernels::conv::pack_windows<Path, Sum>(g, g.start(first), count, rows, padded, flip, sums, factor);
        return;
      }
    }
    const int k = kh * kw * g.channels;
    const auto patch_of = [&](int i) { return g.staging + static_cast<std::ptrdiff_t>(i) * k; };
    const cursor begin = g.start(first);
    bool in_register = false;  // interior patches built in one register by pack_runs (paths that packs_runs)
    if constexpr (kernels::conv::native_path::packs_runs && sizeof(typename Path::input_type) == 1 && !may_be_direct)
      in_register = g.rows_contiguous && k <= 64 && padded <= 64;
    cursor at = begin;
    for (int i = 0; i < count;) {
      if (in_register && g.is_interior(at.oy, at.ox)) {
        // pack_runs builds these in registers: skip the run of interior pixels along the row.
        const int n = std::min(g.x.hi - at.ox, count - i);
        i += n;
        at.ox += n - 1;
        g.advance(at);
        continue;
      }
      if (g.direct(at.image, at.oy, at.ox) == nullptr) {
        if (g.is_interior(at.oy, at.ox))
          g.gather_interior(at.image, at.oy, at.ox, patch_of(i));
        else
          gather_border(at.image, at.oy, at.ox, patch_of(i));
      }
      ++i;
      g.advance(at);
    }
    if constexpr (kernels::conv::native_path::packs_runs && sizeof(typename Path::input_type) == 1 && !may_be_direct) {
      if (in_register) {
        kernels::conv::pack_runs<Path, Sum>(g, begin, count, rows, padded, flip, sums, factor);
        return;
      }
    }
    at = begin;
    for (int i = 0; i < count; ++i, g.advance(at)) {
      const std::uint8_t* src = g.direct(at.image, at.oy, at.ox);
      const std::int32_t sum = Path::template pack_row<Sum>(
          src != nullptr ? src : patch_of(i), k, rows + static_cast<std::ptrdiff_t>(i) * padded, padded, flip);
      if constexpr (Sum) sums[i] = factor * sum;
    }
  }
};

}  // namespace detail::conv

/// General convolution layer (groups = 1) for one compile-time config and element type. Construct
/// once (packs the weights), then call on any input size; see the file comment for the design.
template <conv2d_config Cfg, quantized_element T>
class conv2d {
  static_assert(Cfg.out_channels >= 1, "conv2d: set .out_channels (at least 1)");
  static_assert(Cfg.out_channels <= (1 << 20), "conv2d: out_channels above 2^20 is not supported");
  static_assert(Cfg.kernel.h >= 1 && Cfg.kernel.w >= 1, "conv2d: kernel extents must be at least 1");
  static_assert(Cfg.kernel.h * Cfg.kernel.w <= 1024, "conv2d: kernel larger than 1024 taps is not supported");
  static_assert(Cfg.stride.h >= 1 && Cfg.stride.w >= 1, "conv2d: stride must be at least 1");
  static_assert(Cfg.dilation.h >= 1 && Cfg.dilation.w >= 1, "conv2d: dilation must be at least 1");
  static_assert(Cfg.pad.top >= 0 && Cfg.pad.bottom >= 0 && Cfg.pad.left >= 0 && Cfg.pad.right >= 0,
                "conv2d: explicit pads must be non-negative");
  static_assert(Cfg.pad.mode == padding_mode::explicit_pads ||
                    (Cfg.pad.top == 0 && Cfg.pad.bottom == 0 && Cfg.pad.left == 0 && Cfg.pad.right == 0),
                "conv2d: pad amounts are only meaningful with padding::explicit_pads(...)");
  static_assert(Cfg.tile.pixels >= 0 && Cfg.tile.pixels <= 16, "conv2d: tile.pixels must be 0 (default) or 1..16");
  static_assert(Cfg.tile.channels >= 0 && Cfg.tile.channels % 16 == 0 && Cfg.tile.channels <= 128,
                "conv2d: tile.channels must be 0 (default) or a multiple of 16 up to 128");

  using gemm_type = pointwise<pointwise_config{.out_channels = Cfg.out_channels,
                                               .tile = Cfg.tile,
                                               .act = Cfg.act,
                                               .round = Cfg.round,
                                               .block_bytes = Cfg.block_bytes},
                              T>;
  using access = detail::pw::rows_access;
  static constexpr int taps = Cfg.kernel.h * Cfg.kernel.w;
  // K = taps * Cin stays an int with room to spare.
  static constexpr int max_input_channels = (1 << 24) / taps;

 public:
  static constexpr conv2d_config config = Cfg;
  using element_type = T;

  /// `filter` [Cout][KH][KW][Cin] (TFLite layout), `bias` Cout entries or nullptr, `q` built by
  /// reference::make_conv_requant for the same rounding and element type (its clamp is used).
  conv2d(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    load(filter, bias, input_channels, q);
  }

  /// Derives the requantization from scales as TFLite does, with the config's activation.
  conv2d(const T* filter, const std::int32_t* bias, int input_channels, quant_params input,
         std::span<const float> filter_scales, std::int32_t filter_zero_point, quant_params output) {
    load(filter, bias, input_channels,
         reference::make_conv_requant<Cfg.round, T>(input, filter_scales, filter_zero_point, output, Cfg.act));
  }

  int input_channels() const noexcept { return channels_; }
  static constexpr int output_channels() noexcept { return Cfg.out_channels; }

  /// The register tile this instantiation runs (the config's, or the ISA default).
  static constexpr pointwise_tile tile() noexcept { return gemm_type::tile(); }

  static constexpr shape output_shape(shape in) noexcept {
    const window_geometry g = resolve_window(in.height, in.width, Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
    return {g.y.output, g.x.output, Cfg.out_channels};
  }

  /// Scratch bytes a run on `in` needs (any alignment; the run aligns inside it): one block of
  /// output pixels' patches as bytes plus the GEMM's packed rows for them.
  static constexpr std::size_t workspace_bytes(shape in) noexcept {
    const shape o = output_shape(in);
    const int k = taps * std::max(in.channels, 1);
    return staging_bytes(k, o.pixels()) + gemm_type::workspace_bytes({o.height, o.width, k});
  }

  /// Scratch bytes run_rows_window needs for bands of at most `rows` output rows of an image `in`.
  static constexpr std::size_t band_workspace_bytes(shape in, int rows) noexcept {
    const shape o = output_shape(in);
    const int k = taps * std::max(in.channels, 1);
    const int band_rows = std::clamp(rows, 0, o.height);
    return staging_bytes(k, std::size_t(band_rows) * std::size_t(o.width)) +
           gemm_type::workspace_bytes({band_rows, o.width, k});
  }

  /// Runs on every image of the batch. Views may have any extents (static ones convert) and
  /// pixel strides; misuse is reported through mosaiq::require and leaves `out` untouched.
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out,
                  std::span<std::byte> workspace) const {
    run(tensor_view<const T>(in), tensor_view<T>(out), workspace);
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out, std::span<std::byte> workspace) const {
    run(tensor_view<const T>(in), tensor_view<T>(out), workspace);
  }

  /// Output rows [band.first, band.last) of every image, nothing else: one task of a parallel run
  /// (see mosaiq::parallel_rows), each with its own workspace of workspace_bytes(input).
  void run_rows(tensor_view<const T> in, tensor_view<T> out, std::span<std::byte> workspace, row_band band) const {
    if (!check_run(in, out, workspace) ||
        !require(band.first >= 0 && band.first <= band.last && band.last <= out.height(), errc::invalid_argument,
                 "conv2d: row band outside the output"))
      return;
    if (band.rows() == 0 || out.width() == 0) return;
    // A band is a convolution of its own: output rows start at band.first, so the top padding
    // shrinks by band.first strides (negative: the band starts below the image's first row).
    for (int n = 0; n < in.batch(); ++n)
      run_image_rows(in, 0, in.height(), out.row_slice(band.first, band.rows()), workspace, n, band);
  }

  /// Output rows `band` of an image of `image_height` rows whose input is given as a window of rows:
  /// `in` holds image rows [in_first_row, in_first_row + in.height()), which must cover every row the
  /// band's windows read, and `band_out` holds exactly the band's rows. One step of a banded network
  /// (net/bands.hpp); workspace: band_workspace_bytes(image, band rows).
  void run_rows_window(tensor_view<const T> in, int in_first_row, int image_height, tensor_view<T> band_out,
                       std::span<std::byte> workspace, row_band band) const {
    const shape image{image_height, in.width(), in.channels()};
    const shape o = output_shape(image);
    const window_geometry g = resolve_window(image.height, image.width, Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
    const int top = std::max(0, band.first * Cfg.stride.h - g.y.pad_before);
    const int bottom = std::min(
        image.height, (band.last - 1) * Cfg.stride.h - g.y.pad_before + (Cfg.kernel.h - 1) * Cfg.dilation.h + 1);
    if (!require(gemm_.has_value(), errc::invalid_argument,
                 "conv2d: layer was not loaded (construction reported an error)") ||
        !check_view(in, "conv2d: invalid input view") || !check_view(band_out, "conv2d: invalid output view") ||
        !require(in.channels() == channels_, errc::shape_mismatch, "conv2d: input channels differ from the weights") ||
        !require(band.first >= 0 && band.first <= band.last && band.last <= o.height, errc::invalid_argument,
                 "conv2d: row band outside the output") ||
        !require(band_out.dims() == shape{band.rows(), o.width, o.channels} && band_out.batch() == in.batch(),
                 errc::shape_mismatch, "conv2d: output extents differ from the band of output_shape(input)") ||
        !require(band.rows() == 0 || (in_first_row <= top && bottom <= in_first_row + in.height()),
                 errc::shape_mismatch, "conv2d: the input window misses rows the band reads") ||
        !require(workspace.size() >= band_workspace_bytes(image, band.rows()), errc::invalid_argument,
                 "conv2d: workspace smaller than band_workspace_bytes(input, band rows)"))
      return;
    if (band.rows() == 0 || o.width == 0) return;
    for (int n = 0; n < in.batch(); ++n) run_image_rows(in, in_first_row, image_height, band_out, workspace, n, band);
  }

 private:
  // The block's gathered patches, K bytes each.
  static constexpr std::size_t staging_bytes(int k, std::size_t image_pixels) noexcept {
    const auto block = static_cast<std::size_t>(access::block_pixels<gemm_type>(k, image_pixels));
    return detail::kernel::round_up(block * static_cast<std::size_t>(k), detail::kernel::align);
  }

  void load(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    if (!require(input_channels >= 1, errc::invalid_argument, "conv2d: input_channels must be at least 1") ||
        !require(input_channels <= max_input_channels, errc::invalid_argument,
                 "conv2d: KH * KW * input_channels above 2^24 is not supported") ||
        !require(filter != nullptr, errc::null_pointer, "conv2d: filter is null"))
      return;
    // [Cout][KH][KW][Cin] is [Cout][K]: the pointwise layer packs it as is.
    gemm_.emplace(filter, bias, taps * input_channels, q);
    if (!access::ready(*gemm_)) {
      gemm_.reset();
      return;
    }
    channels_ = input_channels;
    zero_point_ = static_cast<std::uint8_t>(q.input_zero_point);
  }

  bool check_run(const tensor_view<const T>& in, const tensor_view<T>& out, std::span<std::byte> workspace) const {
    if (!require(gemm_.has_value(), errc::invalid_argument,
                 "conv2d: layer was not loaded (construction reported an error)") ||
        !check_view(in, "conv2d: invalid input view") || !check_view(out, "conv2d: invalid output view"))
      return false;
    return require(in.channels() == channels_, errc::shape_mismatch,
                   "conv2d: input channels differ from the weights") &&
           require(out.dims() == output_shape(in.dims()), errc::shape_mismatch,
                   "conv2d: output extents differ from output_shape(input)") &&
           require(out.batch() == in.batch(), errc::shape_mismatch, "conv2d: input and output batch differ") &&
           require(workspace.size() >= workspace_bytes(in.dims()), errc::invalid_argument,
                   "conv2d: workspace smaller than workspace_bytes(input)");
  }

  void run(tensor_view<const T> in, tensor_view<T> out, std::span<std::byte> workspace) const {
    if (!check_run(in, out, workspace)) return;
    const shape o = out.dims();
    const std::ptrdiff_t pixels = static_cast<std::ptrdiff_t>(out.batch()) * o.height * o.width;
    if (pixels == 0) return;
    const window_geometry g = resolve_window(in.height(), in.width(), Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
    run_patches(in, out, workspace, patch_geometry{o.height, g.y.pad_before, g.x.pad_before}, in.data(),
                out.pixel(0, 0, 0), pixels);
  }

  /// Output rows `band` of image n (of image_height rows) as a convolution of their own (batch 1,
  /// out_h = the band's rows) on an input window whose first row is image row `in_first_row` (the
  /// window's end acts as the image's: the band reads no row below it); `band_out` holds the band's rows.
  void run_image_rows(const tensor_view<const T>& in, int in_first_row, int image_height,
                      const tensor_view<T>& band_out, std::span<std::byte> workspace, int n, row_band band) const {
    const window_geometry g = resolve_window(image_height, in.width(), Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
    const patch_geometry band_geometry{band.rows(), g.y.pad_before - band.first * Cfg.stride.h + in_first_row,
                                       g.x.pad_before};
    run_patches(in, band_out, workspace, band_geometry, in.pixel(n, 0, 0), band_out.pixel(n, 0, 0),
                static_cast<std::ptrdiff_t>(band.rows()) * band_out.width());
  }

  /// Output rows of the patches: how many, and the padding before the first row and column.
  struct patch_geometry {
    int out_h, pad_top, pad_left;
  };

  void run_patches(const tensor_view<const T>& in, const tensor_view<T>& out, std::span<std::byte> workspace,
                   patch_geometry p, const T* image, T* destination, std::ptrdiff_t pixels) const {
    const int k = taps * channels_;
    const int out_w = out.width();
    const auto image_pixels = static_cast<std::size_t>(p.out_h) * static_cast<std::size_t>(out_w);
    std::uint8_t* const base = detail::kernel::aligned_workspace(workspace);
    const detail::conv::patch_rows<Cfg> rows{
        .input = reinterpret_cast<const std::uint8_t*>(image),
        .pixel_stride = in.pixel_stride(),
        .row_stride = in.row_stride(),
        .image_stride = in.batch_stride(),
        .in_h = in.height(),
        .in_w = in.width(),
        .channels = channels_,
        .out_h = p.out_h,
        .out_w = out_w,
        .pad_top = p.pad_top,
        .pad_left = p.pad_left,
        .y = detail::conv::interior(in.height(), p.out_h, Cfg.kernel.h, Cfg.stride.h, Cfg.dilation.h, p.pad_top),
        .x = detail::conv::interior(in.width(), out_w, Cfg.kernel.w, Cfg.stride.w, Cfg.dilation.w, p.pad_left),
        .rows_contiguous = Cfg.kernel.w == 1 || (Cfg.dilation.w == 1 && in.pixel_stride() == channels_),
        .zero_point = zero_point_,
        .staging = base};
    access::run(*gemm_, rows, pixels, image_pixels, destination, out.pixel_stride(),
                base + staging_bytes(k, image_pixels));
  }

  int channels_ = 0;
  std::uint8_t zero_point_ = 0;
  std::optional<gemm_type> gemm_;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
