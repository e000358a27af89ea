// Element-wise ops in TFLite's 16x8 mode (int16 activations, zero point 0), bit-exact with reference/int16.hpp:
//
//   mosaiq::add16x8<R> residual(a_scale, b_scale, out_scale, mosaiq::activation::none);  // load time
//   residual(a, b, out);     // equal shapes, or one input 1 x 1 x C against the other; out may be a or b
//   mosaiq::mul16x8<R> gate(map_scale, gate_scale, out_scale);                           // load time
//   gate(map, gate_values, out);
//   mosaiq::hard_swish16x8<R> activation(in_scale, out_scale);                           // load time
//   activation(in, out);     // out may be in
//   mosaiq::logistic16x8 sigmoid(in_scale);                                               // output scale 1/32768
//   sigmoid(in, out);        // out may be in
//   mosaiq::resize_bilinear16x8<R>(in, out, mosaiq::resize_mode::half_pixel);             // output size from out
//   mosaiq::resize_bilinear16x8_rows<R>(in, out, mode, {first, last});  // output rows [first, last) only
//
// The element-wise ops split into row bands as the same op on the bands' rows (tensor_view::row_slice); the resize,
// whose rows read input rows around them, has the rows entry point above.
// R is the network's rounding (MultiplyByQuantizedMultiplier's); each object derives TFLite's params once
// (reference::make_add_params_16, make_mul_params_16<R>, make_hard_swish_params_16, make_logistic_params_16) and
// decodes the multipliers for R; a run only computes and does not allocate. Every step is TFLite's 32-bit arithmetic
// (add: inputs shifted left by 15, three multipliers; mul: the int32 product, one multiplier; hard swish: TFLite
// Micro's four steps; logistic: the input multiplier, a 256-entry table gathered and interpolated), so the vector
// path computes it exactly in int32 lanes: blocks of 16 elements widened to int32 on AVX2 (2 ymm),
// AVX-512 (1 zmm) and NEON (4 q), ops/eltwise16x8/simd.hpp; scalar builds run ops/eltwise16x8/scalar.hpp, which
// the tests also compare with the vector path.
//
// Views: equal shapes run as one flat array when all three views are dense with images following each other, row by
// row when each row is dense, else pixel by pixel (any pixel strides, unaligned pointers). The per-channel broadcast
// of squeeze-and-excitation and the attention gates (one input 1 x 1 x C, per image or for the whole batch) runs
// pixel by pixel against the held channel vector. Any other broadcast (a scalar, a row, a column) runs the
// reference, as exact and much slower. Misuse (views, extents, invalid params) is reported as the reference
// reports it and writes nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise16x8/scalar.hpp"
#include "mosaiq/ops/eltwise16x8/scales.hpp"
#include "mosaiq/ops/eltwise16x8/simd.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/reference/hard_swish.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/reference/resize.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace detail::eltwise16 {

/// The spans this target runs (ops/eltwise16x8/simd.hpp or scalar.hpp names them).
namespace native = kernels::eltwise16::native;

inline bool dense_images(const auto& v) noexcept { return v.is_dense() && v.images_follow(); }

/// Whether v is a per-channel vector against out: 1 x 1 x C, for the whole batch or per image.
inline bool is_channel_vector(const tensor_view<const i16>& v, const tensor_view<i16>& out) noexcept {
  return v.height() == 1 && v.width() == 1 && v.channels() == out.channels() &&
         (v.batch() == 1 || v.batch() == out.batch()) && (out.height() != 1 || out.width() != 1);
}

inline bool same_extents(const auto& v, const tensor_view<i16>& out) noexcept {
  return v.dims() == out.dims() && v.batch() == out.batch();
}

/// span(a, b, out, n) over equal-shaped views: one flat run, rows or pixels (see the file comment).
template <class Span>
void run_equal(const tensor_view<const i16>& a, const tensor_view<const i16>& b, const tensor_view<i16>& out,
               Span span) {
  if (dense_images(a) && dense_images(b) && dense_images(out)) {
    span(a.data(), b.data(), out.data(), static_cast<std::size_t>(out.batch()) * out.dims().elements());
    return;
  }
  const bool dense_rows = a.is_dense() && b.is_dense() && out.is_dense();
  const auto row = static_cast<std::size_t>(out.width()) * static_cast<std::size_t>(out.channels());
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y) {
      if (dense_rows) {
        span(a.pixel(n, y, 0), b.pixel(n, y, 0), out.pixel(n, y, 0), row);
        continue;
      }
      for (int x = 0; x < out.width(); ++x)
        span(a.pixel(n, y, x), b.pixel(n, y, x), out.pixel(n, y, x), static_cast<std::size_t>(out.channels()));
    }
}

/// span(a, b, out, n) pixel by pixel, the side that `vector_is_a` names read as the image's channel vector.
template <class Span>
void run_channel_vector(const tensor_view<const i16>& a, const tensor_view<const i16>& b, const tensor_view<i16>& out,
                        bool vector_is_a, Span span) {
  const tensor_view<const i16>& vector = vector_is_a ? a : b;
  const tensor_view<const i16>& full = vector_is_a ? b : a;
  const auto channels = static_cast<std::size_t>(out.channels());
  for (int n = 0; n < out.batch(); ++n) {
    const i16* held = vector.pixel(vector.batch() == 1 ? 0 : n, 0, 0);
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x) {
        const i16* run = full.pixel(n, y, x);
        span(vector_is_a ? held : run, vector_is_a ? run : held, out.pixel(n, y, x), channels);
      }
  }
}

/// A binary op over checked views: the equal-shape and channel-vector cases on span, every other broadcast on
/// `reference_op` (which sees the views as given).
template <class Span, class Reference>
void run_binary(const tensor_view<const i16>& a, const tensor_view<const i16>& b, const tensor_view<i16>& out,
                Span span, Reference reference_op) {
  if (same_extents(a, out) && same_extents(b, out))
    run_equal(a, b, out, span);
  else if (same_extents(b, out) && is_channel_vector(a, out))
    run_channel_vector(a, b, out, true, span);
  else if (same_extents(a, out) && is_channel_vector(b, out))
    run_channel_vector(a, b, out, false, span);
  else
    reference_op();
}

/// span(in, out, n) over checked equal-extent views (run_equal with the input as both operands); `op` names the op in
/// the reports.
template <class Span>
void run_unary(const tensor_view<const i16>& in, const tensor_view<i16>& out, const char* op, Span span) {
  if (!check_view(in, op) || !check_view(out, op) ||
      !require(same_extents(in, out), errc::shape_mismatch, "16-bit element-wise op: input and output extents differ"))
    return;
  run_equal(in, in, out, [&span](const i16* pi, const i16*, i16* po, std::size_t n) { span(pi, po, n); });
}

}  // namespace detail::eltwise16

/// TFLite's int16 ADD (reference::add_16<R>, bit for bit): see the file comment.
template <rounding R = rounding::tflite_reference>
class add16x8 {
 public:
  add16x8() = default;
  /// Reports errc::invalid_argument (through make_add_params_16) and builds an object that refuses to run when the
  /// scales are unusable.
  add16x8(float a_scale, float b_scale, float out_scale, activation act = activation::none)
      : add16x8(reference::make_add_params_16(a_scale, b_scale, out_scale, act)) {}
  explicit add16x8(const reference::add_params_16& params)
      : params_(params), scales_(kernels::eltwise16::add_scales_16x8_of<R>(params)) {}

  bool valid() const noexcept { return params_.valid; }
  const reference::add_params_16& params() const noexcept { return params_; }

  void operator()(tensor_view<const i16> a, tensor_view<const i16> b, tensor_view<i16> out) const {
    if (!reference::detail::check_binary_views(a, b, out, reference::detail::add_view_names) ||
        !require(valid(), errc::invalid_argument, "16-bit add: params were not built by make_add_params_16"))
      return;
    detail::eltwise16::run_binary(
        a, b, out,
        [this](const i16* pa, const i16* pb, i16* po, std::size_t n) {
          detail::eltwise16::native::add_span<R>(pa, pb, po, n, scales_);
        },
        [&] { reference::add_16<R>(a, b, out, params_); });
  }

 private:
  reference::add_params_16 params_{};
  kernels::eltwise16::add_scales_16x8 scales_{};
};

/// TFLite's int16 MUL (reference::mul_16<R>, bit for bit): see the file comment.
template <rounding R = rounding::tflite_reference>
class mul16x8 {
 public:
  mul16x8() = default;
  /// Reports errc::invalid_argument (through make_mul_params_16) and builds an object that refuses to run when the
  /// scales are unusable.
  mul16x8(float a_scale, float b_scale, float out_scale, activation act = activation::none)
      : mul16x8(reference::make_mul_params_16<R>(a_scale, b_scale, out_scale, act)) {}
  explicit mul16x8(const reference::mul_params_16& params)
      : params_(params), scales_(kernels::eltwise16::mul_scales_16_of<R>(params)) {}

  bool valid() const noexcept { return params_.valid && params_.round == R; }
  const reference::mul_params_16& params() const noexcept { return params_; }

  void operator()(tensor_view<const i16> a, tensor_view<const i16> b, tensor_view<i16> out) const {
    if (!reference::detail::check_binary_views(a, b, out, reference::detail::mul_view_names) ||
        !require(valid(), errc::invalid_argument,
                 "16-bit mul: params were not built by make_mul_params_16 for this rounding mode"))
      return;
    detail::eltwise16::run_binary(
        a, b, out,
        [this](const i16* pa, const i16* pb, i16* po, std::size_t n) {
          detail::eltwise16::native::mul_span<R>(pa, pb, po, n, scales_);
        },
        [&] { reference::mul_16<R>(a, b, out, params_); });
  }

 private:
  reference::mul_params_16 params_{};
  kernels::eltwise16::mul_scales_16 scales_{};
};

/// int16 HARD_SWISH (TFLite Micro's kernel; reference::hard_swish_16<R>, bit for bit): see the file comment.
template <rounding R = rounding::tflite_reference>
class hard_swish16x8 {
 public:
  hard_swish16x8() = default;
  /// Reports errc::invalid_argument (through make_hard_swish_params_16) and builds an object that refuses to run when
  /// the scales are unusable.
  hard_swish16x8(float in_scale, float out_scale)
      : hard_swish16x8(reference::make_hard_swish_params_16(in_scale, out_scale)) {}
  explicit hard_swish16x8(const reference::hard_swish_params_16& params)
      : params_(params), scales_(kernels::eltwise16::hard_swish_scales_16_of<R>(params)) {}

  bool valid() const noexcept { return params_.valid; }
  const reference::hard_swish_params_16& params() const noexcept { return params_; }

  /// Equal extents, any strides; out may be exactly in.
  void operator()(tensor_view<const i16> in, tensor_view<i16> out) const {
    if (!require(valid(), errc::invalid_argument,
                 "16-bit hard swish: params were not built by make_hard_swish_params_16"))
      return;
    detail::eltwise16::run_unary(in, out, "16-bit hard swish", [this](const i16* pi, i16* po, std::size_t n) {
      detail::eltwise16::native::hard_swish_span<R>(pi, po, n, scales_);
    });
  }

 private:
  reference::hard_swish_params_16 params_{};
  kernels::eltwise16::hard_swish_scales_16 scales_{};
};

/// int16 LOGISTIC (reference::logistic_16, bit for bit): output at reference::logistic_output_quant_16 (1/32768).
class logistic16x8 {
 public:
  logistic16x8() = default;
  /// Reports errc::invalid_argument (through make_logistic_params_16) and builds an object that refuses to run when
  /// the input scale is unusable.
  explicit logistic16x8(float in_scale) : logistic16x8(reference::make_logistic_params_16(in_scale)) {}
  explicit logistic16x8(const reference::logistic_params_16& params)
      : params_(params), table_(kernels::eltwise16::logistic_table_16_of(params)) {}

  bool valid() const noexcept { return params_.valid; }
  const reference::logistic_params_16& params() const noexcept { return params_; }

  /// Equal extents, any strides; out may be exactly in.
  void operator()(tensor_view<const i16> in, tensor_view<i16> out) const {
    if (!require(valid(), errc::invalid_argument, "16-bit logistic: params were not built by make_logistic_params_16"))
      return;
    detail::eltwise16::run_unary(in, out, "16-bit logistic", [this](const i16* pi, i16* po, std::size_t n) {
      detail::eltwise16::native::logistic_span(pi, po, n, table_);
    });
  }

 private:
  reference::logistic_params_16 params_{};
  kernels::eltwise16::logistic_table_16 table_{};
};

/// int16 RESIZE_BILINEAR (reference::resize_bilinear_16<R>, bit for bit; TFLite's ResizeBilinearInteger): the output
/// size is out's, input and output share their quantization. Each output pixel's taps and Q10 weights as the reference
/// derives them, its channels 16 per step. Output rows [band.first, band.last) only, bit-identical to those rows of
/// the whole resize: one task of a parallel run. On misuse nothing is written.
template <rounding R = rounding::tflite_reference>
void resize_bilinear16x8_rows(tensor_view<const i16> in, tensor_view<i16> out, resize_mode mode, row_band band) {
  if (!reference::detail::check_resize_views(in, out) ||
      !require(band.first >= 0 && band.first <= band.last && band.last <= out.height(), errc::invalid_argument,
               "16-bit resize: row band outside the output"))
    return;
  namespace ref = reference::detail;
  const std::int64_t scale_y = ref::q10_axis_scale(in.height(), out.height(), mode);
  const std::int64_t scale_x = ref::q10_axis_scale(in.width(), out.width(), mode);
  const auto channels = static_cast<std::size_t>(out.channels());
  for (int n = 0; n < out.batch(); ++n)
    for (int y = band.first; y < band.last; ++y) {
      const ref::q10_tap tap_y = ref::q10_axis_tap(y, scale_y, mode, in.height());
      for (int x = 0; x < out.width(); ++x) {
        const ref::q10_tap tap_x = ref::q10_axis_tap(x, scale_x, mode, in.width());
        const kernels::eltwise16::bilinear_taps taps{
            in.pixel(n, tap_y.lower, tap_x.lower), in.pixel(n, tap_y.upper, tap_x.lower),
            in.pixel(n, tap_y.lower, tap_x.upper), in.pixel(n, tap_y.upper, tap_x.upper)};
        const auto wy = static_cast<std::int32_t>(tap_y.upper_weight),
                   wx = static_cast<std::int32_t>(tap_x.upper_weight);
        detail::eltwise16::native::bilinear_span<R>(taps, {1024 - wy, wy, 1024 - wx, wx}, out.pixel(n, y, x), channels);
      }
    }
}

/// The whole resize (resize_bilinear16x8_rows over every output row).
template <rounding R = rounding::tflite_reference>
void resize_bilinear16x8(tensor_view<const i16> in, tensor_view<i16> out, resize_mode mode) {
  resize_bilinear16x8_rows<R>(in, out, mode, {0, out.height()});
}

/// Output rows `band` of the resize of an image of `image_height` rows to one of `out_height` rows, whose input is
/// given as a window of rows: `in` holds image rows [in_first_row, in_first_row + in.height()), which must hold every
/// row the band's taps read, and `band_out` exactly the band's rows (the output's width and channels). Bit-identical
/// to those rows of resize_bilinear16x8: one step of a banded network (net/bands.hpp). On misuse nothing is written.
template <rounding R = rounding::tflite_reference>
void resize_bilinear16x8_window(tensor_view<const i16> in, int in_first_row, int image_height,
                                tensor_view<i16> band_out, int out_height, resize_mode mode, row_band band) {
  namespace ref = reference::detail;
  const char* misuse =
      "16-bit resize window: the band must lie in the output, band_out hold exactly its rows and the input window "
      "every row it reads";
  if (!check_view(in, misuse) || !check_view(band_out, misuse) ||
      !require(band.first >= 0 && band.first <= band.last && band.last <= out_height &&
                   band_out.height() == band.rows() && band_out.batch() == in.batch() &&
                   band_out.channels() == in.channels() && in_first_row >= 0 &&
                   in_first_row + in.height() <= image_height,
               errc::shape_mismatch, misuse))
    return;
  if (band_out.dims().elements() == 0) return;
  const std::int64_t scale_y = ref::q10_axis_scale(image_height, out_height, mode);
  const std::int64_t scale_x = ref::q10_axis_scale(in.width(), band_out.width(), mode);
  const auto inside = [&](int row) { return row >= in_first_row && row < in_first_row + in.height(); };
  for (int y = band.first; y < band.last; ++y) {
    const ref::q10_tap tap_y = ref::q10_axis_tap(y, scale_y, mode, image_height);
    if (!require(in.width() > 0 && inside(tap_y.lower) && inside(tap_y.upper), errc::shape_mismatch, misuse)) return;
  }
  const auto channels = static_cast<std::size_t>(band_out.channels());
  for (int n = 0; n < band_out.batch(); ++n)
    for (int y = band.first; y < band.last; ++y) {
      const ref::q10_tap tap_y = ref::q10_axis_tap(y, scale_y, mode, image_height);
      const int lower = tap_y.lower - in_first_row, upper = tap_y.upper - in_first_row;
      for (int x = 0; x < band_out.width(); ++x) {
        const ref::q10_tap tap_x = ref::q10_axis_tap(x, scale_x, mode, in.width());
        const kernels::eltwise16::bilinear_taps taps{in.pixel(n, lower, tap_x.lower), in.pixel(n, upper, tap_x.lower),
                                                     in.pixel(n, lower, tap_x.upper), in.pixel(n, upper, tap_x.upper)};
        const auto wy = static_cast<std::int32_t>(tap_y.upper_weight),
                   wx = static_cast<std::int32_t>(tap_x.upper_weight);
        detail::eltwise16::native::bilinear_span<R>(taps, {1024 - wy, wy, 1024 - wx, wx},
                                                    band_out.pixel(n, y - band.first, x), channels);
      }
    }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
