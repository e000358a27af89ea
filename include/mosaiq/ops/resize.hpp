// Quantized NHWC bilinear and nearest resize, output size fixed at compile time or taken from the output view:
//
//   mosaiq::resize_bilinear<mosaiq::resize_config{.scale = 2, .mode = mosaiq::resize_mode::half_pixel}, mosaiq::u8> up;
//   up(input, output);   // output extents: resize_bilinear<...>::output_shape(input.dims())
//   mosaiq::resize_bilinear<{.mode = mosaiq::resize_mode::align_corners, .out_height = 129, .out_width = 129}, u8>{}(
//       input, output);  // any ratio on each axis, up or down
//   mosaiq::resize_bilinear<{.out_height = resize_config::from_output, .out_width = resize_config::from_output}, u8>{}(
//       input, output);  // the output view's size, whatever it is (no output_shape())
//   mosaiq::resize_nearest<mosaiq::resize_config{.scale = 2}, mosaiq::i8>{}(input, output);
//
// Results equal reference::resize_bilinear / reference::resize_nearest bit for bit. The network layers
// (net/layers.hpp) use `.scale`.
//
// Bilinear, dispatched on the views' sizes at run time: ratio 1 on both axes is a copy; exactly 2x on both axes in
// legacy or half-pixel mode runs the integer 2x kernels below when they vectorize (16+ channels, or dense rows of 1, 2,
// 4 or 8 channels); everything else (any ratio, align_corners at any ratio including 2x, 2x with 3, 5..7 or 9..15
// channels, where the 2x kernels would run their scalar twin) runs the float32 any-ratio kernel.
//
// Bilinear 2x, legacy and half-pixel: every weight is dyadic, so the reference's float32 result rounded half up is
// the exact closed form (notes resize_softmax_anchors §1.8, docs/decisions.md "Reference resize"), computed here in
// 16-bit integers with clamped neighbour indices (clamping reproduces the replicated edges exactly):
//   legacy      out(2i, 2j) = a, (a+b+1)>>1 across, (a+c+1)>>1 down, (a+b+c+d+2)>>2 diagonal
//               (the averages of two are pavgb / vrhadd; the sum of four is widened: avg(avg, avg) rounds twice);
//   half-pixel  vertical v = 3*near_row + far_row per input pixel, then (3*v + v_neighbour + 8)>>4 per output column
//               (dense 16-channel rows: one vertical pass per vector, the neighbours shifted in from the previous one;
//               other dense rows take 3*v as 9*near + 3*far in the centre's own multiply-add, so nothing is tripled).
// The rounding shifts are one pmulhrsw on x86 ((x * 2^(15-s) + 2^14) >> 15), vrshrn on NEON.
// int8 runs the same arithmetic on x ^ 0x80 = x + 128: the weights sum to one, so floor(s + 128 + 1/2) =
// floor(s + 1/2) + 128, and rounding half up commutes with the shift (tested on every closed form).
// Rows: dense rows with 1, 2, 4, 8 or 16 channels are processed as W*C contiguous bytes and the even/odd output
// pixels are interleaved with unpack/zip of that granularity; other channel counts and strided views go pixel by
// pixel in channel blocks of 64/32/16 bytes with a scalar channel tail. Rows too short for the widest vector continue
// with narrower ones.
//
// Bilinear at any ratio (detail::any_ratio): TFLite's uint8 float32 arithmetic, operation for operation, so no
// fixed-point shortcut can equal it (docs/decisions.md "Resize at any ratio"). Taps come from the reference's own
// float_axis_scale / float_axis_tap. Per output row the two input rows are converted once to floats already
// multiplied by their y weight (the reference's first products, same rounding); per output element
//   p00 = A[lx]*wx0, p10 = B[lx]*wx0, p01 = A[ux]*wx1, p11 = B[ux]*wx1, floor(((p00 + p10) + p01) + p11 + 0.5f),
// saturated to u8/i8. Each product passes an empty asm barrier so no compiler can contract it into an FMA.
//   - 8 channels or more: vectors along the channels of each output pixel (16 floats on AVX-512, 8 on AVX2, 4 on
//     NEON) with one masked/partial tail;
//   - 1..7 channels: vectors along the flattened output row x*C + c through per-chunk index tables; where a
//     vector's inputs fit one vector of floats (upsampling) two loads and permutes replace four gathers.
//   Memory: no allocation and no workspace argument: about 20 KiB of stack (two rows of 1024 floats, tap and index
//   tables) and the columns of a row in chunks (<= 128 pixels, <= 512 flattened elements, <= 1024 floats per input
//   row segment, channels in blocks of 512), so any size runs with the network executor's workspace-free call.
//   Builds without AVX2 or NEON (and MOSAIQ_FORCE_SCALAR) call reference::resize_bilinear.
// Nothing outside the views is read or written; strided views work on every path.
//
// Nearest: pixel replication when the output is config.scale times the input (legacy, half-pixel); align_corners and
// other sizes call reference::resize_nearest.
//
// Requantization (TFLite requires equal input and output quantization; mosaiq accepts both): an object built with
// `resize_bilinear<cfg, T> up(input_quant, output_quant)` runs the equal-quantization kernel above (the static run(),
// unchanged, which is also what equal parameters and default-constructed objects call) and then requantizes the
// output in place through a 256-entry byte table of reference::requantization (TFLite's QUANTIZE kernel), looked up
// with vpermi2b / pshufb / vqtbx4q (ops/detail/byte_table.hpp). Parameters it cannot honour are
// errc::invalid_argument at construction; the object then refuses to run.
//
// Files: this front end (configs, checks, row and band loops, the choice of kernel) names no ISA; the vector kernels
// are ops/resize/simd.hpp (their names declared on every target, scalar builds discard the branches that use them),
// the scalar twin and row passes ops/resize/rows.hpp, each ISA's vector operations and byte widths
// ops/resize/{x86,neon}.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/resize_mode.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/byte_table.hpp"
#include "mosaiq/ops/resize/rows.hpp"
#include "mosaiq/ops/resize/simd.hpp"
#include "mosaiq/reference/resize.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of one resize layer: the output size and the coordinate convention.
/// - `.scale` (default): the output is the input times an integer factor on both axes;
/// - `.out_height`, `.out_width` > 0: a fixed output size, any ratio on each axis, up or down (`.scale` is ignored);
/// - both `resize_config::from_output`: the output size is the output view's, fixed only at run time (the op then
///   has no output_shape()).
struct resize_config {
  static constexpr int from_output = -1;
  int scale = 2;
  resize_mode mode = resize_mode::half_pixel;
  int out_height = 0;
  int out_width = 0;
  friend constexpr bool operator==(const resize_config&, const resize_config&) = default;
};

namespace detail::upsample {

/// One output row in channel blocks (every channel count and stride the dense kernels below do not take).
template <resize_mode Mode, byte Flip>
inline void run_row(const row_pass& r) noexcept {
  if constexpr (has_vectors) {
    const int widths_done = across_widths<Mode, Flip>(
        native_widths{}, 0, [&r]<class Kernels>(Kernels, int first) { return Kernels::pixel_blocks(r, first); });
    scalar_pixels<Mode, Flip>(r, 0, r.width, overlapped_tail<Mode, Flip>(r, widths_done), r.channels);
  } else {
    scalar_pixels<Mode, Flip>(r, 0, r.width, 0, r.channels);
  }
}

/// Output rows `rows`, each through `row(row_pass)`.
template <resize_mode Mode, quantized_element T, class Row>
[[gnu::always_inline]] inline void rows_2x(const tensor_view<const T>& in, const tensor_view<T>& out, row_band rows,
                                           row_frame frame, Row row) noexcept {
  const int height = frame.in_height;
  for (int n = 0; n < in.batch(); ++n) {
    for (int oy = rows.first; oy < rows.last; ++oy) {
      const int y = oy / 2;
      int far_y;
      if constexpr (Mode == resize_mode::half_pixel)
        far_y = oy % 2 == 0 ? std::max(y - 1, 0) : std::min(y + 1, height - 1);
      else
        far_y = oy % 2 == 0 ? y : std::min(y + 1, height - 1);
      row(row_pass{reinterpret_cast<const byte*>(in.pixel(n, y - frame.in_first, 0)),
                   reinterpret_cast<const byte*>(in.pixel(n, far_y - frame.in_first, 0)),
                   reinterpret_cast<byte*>(out.pixel(n, oy - frame.out_first, 0)), in.width(), in.channels(),
                   in.pixel_stride(), out.pixel_stride()});
    }
  }
}

/// Dense views of 1, 2, 4, 8 or 16 channels choose their kernel once, outside the row loop (each row is then its
/// pointers and one dense_row_with_edges); other views go row by row in channel blocks.
template <resize_mode Mode, quantized_element T>
void bilinear_2x(const tensor_view<const T>& in, const tensor_view<T>& out, row_band rows, row_frame frame) noexcept {
  constexpr byte flip = std::same_as<T, i8> ? 0x80 : 0x00;
  if constexpr (has_vectors) {
    const auto dense = [&]<int G>(std::integral_constant<int, G>) {
      rows_2x<Mode>(in, out, rows, frame, [](const row_pass& r) { dense_row_with_edges<Mode, flip, G>(r); });
    };
    if (in.is_dense() && out.is_dense()) {
      switch (in.channels()) {
        case 1:
          return dense(std::integral_constant<int, 1>{});
        case 2:
          return dense(std::integral_constant<int, 2>{});
        case 4:
          return dense(std::integral_constant<int, 4>{});
        case 8:
          return dense(std::integral_constant<int, 8>{});
        case 16:
          return dense(std::integral_constant<int, 16>{});
        default:
          break;
      }
    }
  }
  rows_2x<Mode>(in, out, rows, frame, [](const row_pass& r) { run_row<Mode, flip>(r); });
}

/// Nearest, integer factor S, legacy or half-pixel: source index o / S on both axes (floor(o/S) and
/// floor((o + 1/2)/S) coincide for integer S; the tests compare with the reference's float32 formula).
/// Output rows `rows`: per input row, the first of its output rows in `rows` is made, the others copy it (at 2x on
/// byte vectors the kernel stores both rows of the group).
template <int S, quantized_element T>
void nearest_integer(const tensor_view<const T>& in, const tensor_view<T>& out, row_band rows,
                     row_frame frame) noexcept {
  const int channels = in.channels();
  const std::size_t pixel_bytes = static_cast<std::size_t>(channels) * sizeof(T);
  const bool dense = in.is_dense() && out.is_dense();
  if (rows.rows() <= 0) return;
  for (int n = 0; n < in.batch(); ++n) {
    for (int image_y = rows.first / S; image_y <= (rows.last - 1) / S; ++image_y) {
      const int y = image_y - frame.in_first;
      const int made = std::max(S * image_y, rows.first) - frame.out_first;  // the row made; the group's others copy it
      const int copies = std::min(S * image_y + S, rows.last) - frame.out_first - made - 1;
      T* first = out.pixel(n, made, 0);
      if (channels == 0) continue;
      int done = 0, written = 0;  // pixels the vector kernel made; rows after `made` it wrote too
      if constexpr (has_vectors && S == 2) {
        // Replicating each pixel is interleaving the row with itself; the kernel stores the group's second row too.
        if (dense) {
          const auto* source = reinterpret_cast<const byte*>(in.pixel(n, y, 0));
          auto* target = reinterpret_cast<byte*>(first);
          auto* below = copies > 0 ? reinterpret_cast<byte*>(out.pixel(n, made + 1, 0)) : nullptr;
          using kernels = typename replication<T>::kernels;
          const auto replicate = [&]<int G>(std::integral_constant<int, G>) {
            return kernels::template replicate_row<G>(source, target, below, in.width());
          };
          switch (channels) {
            case 1:
              done = replicate(std::integral_constant<int, 1>{});
              break;
            case 2:
              done = replicate(std::integral_constant<int, 2>{});
              break;
            case 4:
              done = replicate(std::integral_constant<int, 4>{});
              break;
            case 8:
              done = replicate(std::integral_constant<int, 8>{});
              break;
            case 16:
              done = replicate(std::integral_constant<int, 16>{});
              break;
            default:
              break;
          }
          if (done == in.width() && below != nullptr) written = 1;
        }
      }
      for (int x = done; x < in.width(); ++x)
        for (int k = 0; k < S; ++k) std::memcpy(out.pixel(n, made, S * x + k), in.pixel(n, y, x), pixel_bytes);
      for (int k = 1 + written; k <= copies; ++k) {
        if (dense) {
          std::memcpy(out.pixel(n, made + k, 0), first, pixel_bytes * static_cast<std::size_t>(out.width()));
        } else {
          for (int x = 0; x < out.width(); ++x)
            std::memcpy(out.pixel(n, made + k, x), out.pixel(n, made, x), pixel_bytes);
        }
      }
    }
  }
}

template <quantized_element T>
bool check_upsample_views(const tensor_view<const T>& in, const tensor_view<T>& out, shape expected, const char* what) {
  if (!check_view(in, what) || !check_view(out, what)) return false;
  return require(in.batch() == out.batch() && out.dims() == expected, errc::shape_mismatch, what);
}

/// Input rows [first, last) that output rows `band` of an image of `out_height` rows read from one of `in_height`
/// rows: the bilinear taps (every bilinear path reads the rows of the reference's taps) or the nearest sources.
inline row_band rows_read(row_band band, int in_height, int out_height, resize_mode mode, bool bilinear) noexcept {
  if (band.rows() <= 0) return {0, 0};
  if (bilinear) {
    const float scale = reference::detail::float_axis_scale(in_height, out_height, mode);
    return {reference::detail::float_axis_tap(band.first, scale, mode, in_height).lower,
            reference::detail::float_axis_tap(band.last - 1, scale, mode, in_height).upper + 1};
  }
  return {reference::nearest_source_index(band.first, in_height, out_height, mode),
          reference::nearest_source_index(band.last - 1, in_height, out_height, mode) + 1};
}

/// Checks of a window entry point: the views as the whole-map checks see them, the band inside the output image,
/// `band_out` exactly its rows, and the input window holding every row the band reads.
template <quantized_element T>
bool check_window(const tensor_view<const T>& in, int in_first_row, shape image, shape out_image,
                  const tensor_view<T>& band_out, row_band band, resize_mode mode, bool bilinear, const char* what) {
  if (!check_view(in, what) || !check_view(band_out, what)) return false;
  if (!require(band.first >= 0 && band.first <= band.last && band.last <= out_image.height, errc::invalid_argument,
               what))
    return false;
  if (!require(in.batch() == band_out.batch() && in.width() == image.width && in.channels() == image.channels &&
                   band_out.dims() == shape{band.rows(), out_image.width, out_image.channels},
               errc::shape_mismatch, what))
    return false;
  const row_band read = rows_read(band, image.height, out_image.height, mode, bilinear);
  return require(read.rows() <= 0 || (read.first >= in_first_row && read.last <= in_first_row + in.height()),
                 errc::shape_mismatch, what);
}

/// A window entry point of Resize (its output_shape, config and filter): the checks, then
/// `rows(in, band_out, band, frame)` with the frame of the window and the band.
template <class Resize, bool Bilinear, quantized_element T, class Rows>
void run_window(const tensor_view<const T>& in, int in_first_row, int image_height, const tensor_view<T>& band_out,
                row_band band, Rows&& rows) {
  const shape image{image_height, in.width(), in.channels()}, out_image = Resize::output_shape(image);
  if (!check_window(in, in_first_row, image, out_image, band_out, band, Resize::config.mode, Bilinear,
                    "resize run_rows_window: the band must lie in the output, band_out hold exactly its rows and the "
                    "input window every row it reads"))
    return;
  if (band_out.dims().elements() == 0) return;
  rows(in, band_out, band, row_frame{in_first_row, image_height, band.first, out_image.height});
}

}  // namespace detail::upsample

namespace detail::upsample {

/// What a config asks for; static_assert messages say what to change.
template <resize_config Cfg>
struct sizing {
  static_assert((Cfg.out_height == 0) == (Cfg.out_width == 0),
                "resize_config: set both out_height and out_width, or neither (then .scale applies)");
  static_assert((Cfg.out_height == resize_config::from_output) == (Cfg.out_width == resize_config::from_output),
                "resize_config: from_output must be given for both out_height and out_width");
  static_assert(Cfg.out_height >= resize_config::from_output && Cfg.out_width >= resize_config::from_output,
                "resize_config: out_height and out_width are positive, 0 (use .scale) or from_output");
  static_assert(Cfg.out_height != 0 || Cfg.scale >= 1, "resize_config: scale must be a positive integer");
  static constexpr bool from_output = Cfg.out_height == resize_config::from_output;
  static constexpr bool fixed = Cfg.out_height > 0;

  static constexpr shape output_shape(shape in) noexcept {
    if constexpr (fixed)
      return {Cfg.out_height, Cfg.out_width, in.channels};
    else
      return {in.height * Cfg.scale, in.width * Cfg.scale, in.channels};
  }
  /// Reports misuse through mosaiq::require; true when the views may be resized.
  template <quantized_element T>
  static bool check(const tensor_view<const T>& in, const tensor_view<T>& out, const char* what) {
    if constexpr (!from_output)
      if (!check_upsample_views(in, out, output_shape(in.dims()), what)) return false;
    return reference::detail::check_resize_views(in, out);
  }
};

/// Bilinear at the views' sizes: a copy at ratio 1, the exact 2x kernels when both axes are exactly 2x (legacy and
/// half-pixel), the float32 any-ratio kernel otherwise (the reference on builds without AVX2 or NEON).
/// Output rows `rows` of the images `frame` places the views in (the reference fallback: whole maps only).
template <resize_mode Mode, quantized_element T>
void bilinear(const tensor_view<const T>& in, const tensor_view<T>& out, row_band rows, row_frame frame) {
  if (frame.out_height == frame.in_height && out.width() == in.width()) {
    // Every mode is the identity: a strided copy.
    reference::resize_nearest<T>(in.row_slice(rows.first - frame.in_first, rows.rows()),
                                 out.row_slice(rows.first - frame.out_first, rows.rows()), resize_mode::legacy);
    return;
  }
  if constexpr (Mode != resize_mode::align_corners) {
    if (frame.out_height == 2 * frame.in_height && out.width() == 2 * in.width()) {
      if constexpr (has_vectors) {
        // The 2x kernels vectorize 16+ channels and dense rows of 1, 2, 4 or 8; with other channel counts they run
        // the scalar twin on every channel (or tail) and the float kernel is 2-4x faster (same results).
        const int c = in.channels();
        if (c >= 16 || (in.is_dense() && out.is_dense() && (c == 1 || c == 2 || c == 4 || c == 8))) {
          bilinear_2x<Mode, T>(in, out, rows, frame);
          return;
        }
      } else {
        bilinear_2x<Mode, T>(in, out, rows, frame);
        return;
      }
    }
  }
  if constexpr (any_ratio::has_kernel)
    any_ratio::kernel<T>::run(in, out, Mode, rows, frame);
  else
    reference::resize_bilinear<T>(in, out, Mode);
}

}  // namespace detail::upsample

namespace detail::upsample {

/// What resize_bilinear and resize_nearest objects share: the optional requantization (reference::requantization,
/// applied after the resize as a byte table over the output, in place) and the view-taking entry points. Equal
/// quantization (the default) runs Resize::run alone.
template <class Resize, quantized_element T>
class requantizing_resize {
 public:
  requantizing_resize() = default;
  /// Input and output quantization may differ; parameters that cannot be honoured are reported as
  /// errc::invalid_argument and the object refuses to run.
  requantizing_resize(quant_params input, quant_params output) : requant_(input, output) {
    if (!requant_.valid() || requant_.identity()) return;
    for (int q = element_traits<T>::min; q <= element_traits<T>::max; ++q)
      table_.values[static_cast<std::uint8_t>(q)] = static_cast<std::uint8_t>(requant_(static_cast<T>(q)));
    table_.finish();
  }

  bool valid() const noexcept { return requant_.valid(); }
  const reference::requantization<T>& requantization() const noexcept { return requant_; }

  /// Runs on every image of the batch; views may be strided. Misuse is reported through mosaiq::require and leaves
  /// `out` untouched.
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out) const {
    resize_and_requantize(tensor_view<const T>(in), tensor_view<T>(out));
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out) const {
    resize_and_requantize(tensor_view<const T>(in), tensor_view<T>(out));
  }

 private:
  void resize_and_requantize(tensor_view<const T> in, tensor_view<T> out) const {
    if (!require(valid(), errc::invalid_argument, "resize: built from quantization parameters it cannot honour"))
      return;
    if (requant_.identity()) {
      Resize::run(in, out);
      return;
    }
    if (!sizing<Resize::config>::check(in, out,
                                       "resize: output must have the size the config gives, with the same "
                                       "batch and channels"))
      return;
    Resize::run(in, out);
    const auto bytes = [](T* p) { return reinterpret_cast<std::uint8_t*>(p); };
    if (out.is_dense()) {
      table_.run(bytes(out.data()), bytes(out.data()), static_cast<std::size_t>(out.batch()) * out.dims().elements());
      return;
    }
    for (int n = 0; n < out.batch(); ++n)
      for (int y = 0; y < out.height(); ++y)
        for (int x = 0; x < out.width(); ++x)
          table_.run(bytes(out.pixel(n, y, x)), bytes(out.pixel(n, y, x)), static_cast<std::size_t>(out.channels()));
  }

  reference::requantization<T> requant_{};
  byte_table table_{};
};

}  // namespace detail::upsample

/// Bilinear resize to the size Cfg describes (any ratio); see the file comment for what is specialized.
template <resize_config Cfg, quantized_element T>
class resize_bilinear : public detail::upsample::requantizing_resize<resize_bilinear<Cfg, T>, T> {
  using sizing = detail::upsample::sizing<Cfg>;

 public:
  using detail::upsample::requantizing_resize<resize_bilinear<Cfg, T>, T>::requantizing_resize;
  static constexpr resize_config config = Cfg;
  /// True when no output goes through reference::resize_bilinear: SIMD builds (AVX2, AVX-512, NEON) run a kernel for
  /// every ratio and mode; scalar builds keep the integer 2x kernels and call the reference for the rest.
  static constexpr bool specialized =
      detail::any_ratio::has_kernel ||
      (!sizing::from_output && !sizing::fixed && Cfg.scale <= 2 && Cfg.mode != resize_mode::align_corners);

  static constexpr shape output_shape(shape in) noexcept requires(!sizing::from_output) {
    return sizing::output_shape(in);
  }

  /// Equal quantization: runs on every image of the batch; views may be strided. Misuse (extents other than
  /// output_shape(in), batch or channel mismatch, invalid views, an empty input for a non-empty output) is reported
  /// through mosaiq::require and leaves `out` untouched.
  static void run(tensor_view<const T> in, tensor_view<T> out) {
    if (!sizing::check(in, out,
                       "resize_bilinear: output must have the size the config gives (input scaled by config.scale, "
                       "or out_height x out_width) with the same batch and channels"))
      return;
    if (out.dims().elements() == 0) return;
    detail::upsample::bilinear<Cfg.mode, T>(in, out, {0, out.height()}, detail::upsample::row_frame::whole(in, out));
  }

  /// Output rows [band.first, band.last) of every image, nothing else: one task of a parallel run.
  /// Only where no output goes through the reference (specialized), whose rows are not separable.
  static void run_rows(tensor_view<const T> in, tensor_view<T> out, row_band band) requires specialized {
    if (!sizing::check(in, out,
                       "resize_bilinear: output must have the size the config gives (input scaled by config.scale, "
                       "or out_height x out_width) with the same batch and channels") ||
        !require(band.first >= 0 && band.first <= band.last && band.last <= out.height(), errc::invalid_argument,
                 "resize_bilinear: row band outside the output"))
      return;
    if (out.dims().elements() == 0) return;
    detail::upsample::bilinear<Cfg.mode, T>(in, out, band, detail::upsample::row_frame::whole(in, out));
  }

  /// Output rows `band` of an image of `image_height` input rows whose input is given as a window of rows: `in`
  /// holds input rows [in_first_row, in_first_row + in.height()), which must cover every row the band reads, and
  /// `band_out` holds exactly the band's rows. The same bytes as those rows of run(); one step of a banded network
  /// (net/bands.hpp). Misuse is reported (errc::shape_mismatch for a window that misses rows) and writes nothing.
  static void run_rows_window(tensor_view<const T> in, int in_first_row, int image_height, tensor_view<T> band_out,
                              row_band band) requires(specialized && !sizing::from_output) {
    detail::upsample::run_window<resize_bilinear, true>(in, in_first_row, image_height, band_out, band,
                                                        detail::upsample::bilinear<Cfg.mode, T>);
  }
};

/// Nearest-neighbour resize to the size Cfg describes (pixel replication at integer factors).
template <resize_config Cfg, quantized_element T>
class resize_nearest : public detail::upsample::requantizing_resize<resize_nearest<Cfg, T>, T> {
  using sizing = detail::upsample::sizing<Cfg>;

 public:
  using detail::upsample::requantizing_resize<resize_nearest<Cfg, T>, T>::requantizing_resize;
  static constexpr resize_config config = Cfg;
  /// True when the run replicates pixels directly at the integer factor config.scale; align_corners and other sizes
  /// call reference::resize_nearest.
  static constexpr bool specialized = !sizing::from_output && !sizing::fixed && Cfg.mode != resize_mode::align_corners;

  static constexpr shape output_shape(shape in) noexcept requires(!sizing::from_output) {
    return sizing::output_shape(in);
  }

  /// Equal quantization; as resize_bilinear::run.
  static void run(tensor_view<const T> in, tensor_view<T> out) {
    if (!sizing::check(in, out,
                       "resize_nearest: output must have the size the config gives (input scaled by config.scale, "
                       "or out_height x out_width) with the same batch and channels"))
      return;
    if (out.dims().elements() == 0) return;
    constexpr int s = Cfg.scale >= 1 ? Cfg.scale : 1;
    if (Cfg.mode != resize_mode::align_corners && out.height() == s * in.height() && out.width() == s * in.width()) {
      detail::upsample::nearest_integer<s, T>(in, out, {0, out.height()}, detail::upsample::row_frame::whole(in, out));
    } else {
      // align_corners rounds o * (in-1)/(out-1), which is not o / scale; other sizes are not integer factors.
      reference::resize_nearest<T>(in, out, Cfg.mode);
    }
  }

  /// Output rows `band` from a window of input rows; as resize_bilinear::run_rows_window (integer factors).
  static void run_rows_window(tensor_view<const T> in, int in_first_row, int image_height, tensor_view<T> band_out,
                              row_band band) requires specialized {
    detail::upsample::run_window<resize_nearest, false>(in, in_first_row, image_height, band_out, band,
                                                        detail::upsample::nearest_integer<Cfg.scale, T>);
  }
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
