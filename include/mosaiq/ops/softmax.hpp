// Quantized softmax over channels and logistic, table driven, bit-exact with reference/softmax.hpp:
//
//   mosaiq::softmax<mosaiq::softmax_config{.channels = 2}, mosaiq::u8> sm(input_quant, beta);  // load time: tables
//   sm(input, output);     // output quantization: reference::probability_output_params<T> (1/256, min(T))
//   mosaiq::logistic<mosaiq::i8> sigmoid(input_quant);
//   sigmoid(input, output);
//
// Two classes (segmentation heads). The reference output of a pixel depends on d = x0 - x1 only (both entries are
// taken relative to the row maximum), and out1(d) = out0(-d) exactly because the two share one sum. So a 511-entry
// table P[255 + d] = reference out0 of a pair with difference d, built by running reference::softmax itself on the
// 511 pairs, gives out0 = P[255 + d], out1 = P[255 - d] bit for bit (never 256 - out0: that differs in rare cases).
// P is constant below some index `first` and above `last`, so indices are clamped to that window first:
//   AVX-512 VBMI  one vpermi2b (128 entries) when the window fits, else four plus three byte blends;
//   AVX2          16-entry pshufb lookups XOR-telescoped over the window when it has at most 128 entries (input
//                 scale * beta above about 0.09); wider windows run the scalar loop (2 loads and a subtract per
//                 pixel), as does AVX-512 without VBMI above 128 entries;
//   NEON aarch64  vqtbx4q (64 entries) chained over the window; armv7 runs the scalar loop.
// Pixels are processed as byte pairs of dense views (the lookups produce interleaved out0/out1 directly); strided
// views go pixel by pixel through the scalar twin.
//
// Other channel counts (every ISA with 32-bit lanes, simd/lanes.hpp; scalar builds call reference::softmax):
//   1..32 channels   16 pixels per block, one int32 lane per pixel (vectorized across pixels, not across the tiny
//                    channel axis): channels transposed through a byte buffer, lane max, exp entries gathered
//                    (vpgatherdd on AVX-512/AVX2, scalar loads on NEON) and summed (< 2^30), then
//   33+ channels     one pixel at a time, vectorized along the channels (gathered entries, int32 partial sums
//                    flushed to 64 bits), pixels with sum >= 2^30 (over 128 channels near the maximum) go scalar;
// both normalize exactly: q = trunc(float(256 e + sum/2) * (1/float(sum))) is within one of the reference's
// 64-bit quotient, and the int32 remainder 256 e + sum/2 - q sum (exact mod 2^32, |r| < 2^31) corrects it.
//
// Log-softmax (TFLite LOG_SOFTMAX, bit-exact with reference::log_softmax; output quantization 16/256 at max(T)):
//   mosaiq::log_softmax<mosaiq::softmax_config{.channels = 21}, mosaiq::u8> lsm(input_quant);  lsm(input, output);
// Two classes use the same 511-entry difference table as softmax (built from reference::log_softmax). Other channel
// counts gather two 256-entry int32 tables indexed by x - max + 255 (the exp term in Q12.19, 0 below diff_min; the
// difference in Q5.26), sum per pixel, take one scalar fixed-point log per pixel, and compute the outputs in lanes
// (subtract, rounding shift by 22, clamp, the row's cutoff as a mask): 1..32 channels 16 pixels per block as above,
// 33..4095 along the channels.
//
// Logistic: the 256-entry reference table indexed by the input byte, looked up with vpermi2b (AVX-512 VBMI),
// XOR-telescoped pshufb (AVX2, AVX-512 without VBMI), vqtbx4q (NEON aarch64), or a scalar loop.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/byte_table.hpp"
#include "mosaiq/ops/softmax/avx2.hpp"
#include "mosaiq/ops/softmax/avx512.hpp"
#include "mosaiq/ops/softmax/neon.hpp"
#include "mosaiq/ops/softmax/pair_table.hpp"
#include "mosaiq/ops/softmax/simd.hpp"
#include "mosaiq/reference/softmax.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/lanes.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of a softmax layer: the channel count it is specialized for.
struct softmax_config {
  int channels = 2;
  friend constexpr bool operator==(const softmax_config&, const softmax_config&) = default;
};

namespace detail::probability {

using softmax_pairs::byte;
using softmax_pairs::pair_table;

/// The scalar twin over `pixels` pairs at `in` (element type T, so d needs no flip).
template <quantized_element T>
inline void pairs_scalar(const pair_table& table, const T* in, T* out, std::size_t pixels) noexcept {
  for (std::size_t i = 0; i < pixels; ++i) {
    const int d = static_cast<int>(in[2 * i]) - static_cast<int>(in[2 * i + 1]);
    out[2 * i] = static_cast<T>(table.by_index[static_cast<std::size_t>(255 + d)]);
    out[2 * i + 1] = static_cast<T>(table.by_index[static_cast<std::size_t>(255 - d)]);
  }
}

/// Two-class softmax over `pixels` dense pairs.
template <quantized_element T>
inline void pairs_dense(const pair_table& table, const T* in, T* out, std::size_t pixels) noexcept {
  constexpr byte flip = std::same_as<T, i8> ? 0x80 : 0x00;
  using vector_pairs = simd::native_path_of<softmax_pairs::pairs_for>;
  const std::size_t done =
      vector_pairs::run(table, reinterpret_cast<const byte*>(in), reinterpret_cast<byte*>(out), pixels, flip);
  pairs_scalar<T>(table, in + 2 * done, out + 2 * done, pixels - done);
}

/// The two-class table of a channel-wise op whose outputs depend on x0 - x1 only: P[255 + d] is the reference's out0
/// for the pair (x0, x1) with x0 - x1 = d, taken from one reference run over all 511 pairs.
template <quantized_element T, class Reference>
pair_table make_pair_table(Reference reference) {
  constexpr int lowest = element_traits<T>::min;
  std::array<T, 2 * 511> pairs{}, outputs{};
  for (int i = 0; i < 511; ++i) {
    const int d = i - 255;
    pairs[2 * static_cast<std::size_t>(i)] = static_cast<T>(lowest + std::max(d, 0));
    pairs[2 * static_cast<std::size_t>(i) + 1] = static_cast<T>(lowest + std::max(-d, 0));
  }
  reference(tensor_view<const T>(pairs.data(), shape{1, 511, 2}), tensor_view<T>(outputs.data(), shape{1, 511, 2}));
  pair_table table;
  for (std::size_t i = 0; i < 511; ++i) table.by_index[i] = static_cast<std::uint8_t>(outputs[2 * i]);
  table.finish();
  return table;
}

/// Two-class views: dense ones through the vector lookups, strided ones pixel by pixel.
template <quantized_element T>
void run_pairs(const pair_table& table, tensor_view<const T> in, tensor_view<T> out) {
  if (in.is_dense() && out.is_dense()) {
    pairs_dense<T>(table, in.data(), out.data(), static_cast<std::size_t>(in.batch()) * in.dims().pixels());
    return;
  }
  for (int n = 0; n < in.batch(); ++n)
    for (int y = 0; y < in.height(); ++y)
      for (int x = 0; x < in.width(); ++x) pairs_scalar<T>(table, in.pixel(n, y, x), out.pixel(n, y, x), 1);
}

/// The view-taking entry points of the channel-wise ops: any extents, const or mutable input, forwarded to
/// Op::run on dynamic views.
template <class Op, quantized_element T>
struct view_entry_points {
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out) const {
    static_cast<const Op&>(*this).run(tensor_view<const T>(in), tensor_view<T>(out));
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out) const {
    static_cast<const Op&>(*this).run(tensor_view<const T>(in), tensor_view<T>(out));
  }
};

template <class T>
bool check_same_views(const tensor_view<const T>& in, const tensor_view<T>& out, const char* what) {
  if (!check_view(in, what) || !check_view(out, what)) return false;
  return require(in.batch() == out.batch() && in.dims() == out.dims(), errc::shape_mismatch, what);
}

/// What softmax and log_softmax share: the two-class table, the checks of a run and the choice of path. Op gives
/// valid(), its messages (invalid, views, channels), run_lanes (the vector paths on `pixels` pixels at a pixel
/// stride) and run_reference (scalar builds).
template <class Op, softmax_config Cfg, quantized_element T>
class channel_probability : public view_entry_points<Op, T> {
 public:
  /// Views may be strided; misuse is reported through mosaiq::require and leaves `out` untouched.
  void run(tensor_view<const T> in, tensor_view<T> out) const {
    const Op& op = static_cast<const Op&>(*this);
    if (!require(op.valid(), errc::invalid_argument, Op::invalid_message)) return;
    if (!check_same_views(in, out, Op::views_message)) return;
    if (!require(in.channels() == Cfg.channels, errc::shape_mismatch, Op::channels_message)) return;
    if constexpr (Cfg.channels == 2) {
      run_pairs<T>(pairs_, in, out);
    } else {
      if constexpr (has_lanes) {
        // Every pixel is at data + k * pixel_stride (rows and images follow the pixel stride).
        const std::size_t pixels = static_cast<std::size_t>(in.batch()) * in.dims().pixels();
        if (pixels == 0) return;
        op.run_lanes(in.data(), in.pixel_stride(), out.data(), out.pixel_stride(), pixels);
      } else {
        op.run_reference(in, out);
      }
    }
  }

 protected:
  /// Load time: the two-class table from the op's reference run (only when the op is valid).
  template <class Reference>
  void build_pairs(Reference reference) {
    if constexpr (Cfg.channels == 2) {
      if (static_cast<const Op&>(*this).valid()) pairs_ = make_pair_table<T>(reference);
    }
  }

 private:
  pair_table pairs_{};
};

}  // namespace detail::probability

/// Softmax over the channels of every pixel, specialized for Cfg.channels; see the file comment.
template <softmax_config Cfg, quantized_element T>
class softmax : public detail::probability::channel_probability<softmax<Cfg, T>, Cfg, T> {
  static_assert(Cfg.channels >= 1, "softmax: channels must be at least 1");
  friend class detail::probability::channel_probability<softmax, Cfg, T>;

 public:
  static constexpr softmax_config config = Cfg;
  /// True when the run uses the two-class difference table or the vector paths (every ISA with 32-bit lanes);
  /// otherwise (scalar builds, other channel counts than 2) it calls reference::softmax.
  static constexpr bool specialized = Cfg.channels == 2 || detail::probability::has_lanes;
  static constexpr quant_params output_params = reference::probability_output_params<T>;

  /// Load time: builds the tables from the input quantization and beta (reported as errc::invalid_argument, and the
  /// object refuses to run, unless the scale and beta are finite and positive).
  explicit softmax(quant_params input, float beta = 1.0f) : table_(input, beta) {
    this->build_pairs([&](tensor_view<const T> in, tensor_view<T> out) { run_reference(in, out); });
  }

  bool valid() const noexcept { return table_.valid(); }
  const reference::softmax_table& exp_table() const noexcept { return table_; }

 private:
  static constexpr const char* invalid_message = "softmax: built from invalid quantization or beta";
  static constexpr const char* views_message = "softmax: input and output views must be valid and match";
  static constexpr const char* channels_message = "softmax: channels differ from config.channels";

  void run_lanes([[maybe_unused]] const T* in, [[maybe_unused]] std::ptrdiff_t in_stride, [[maybe_unused]] T* out,
                 [[maybe_unused]] std::ptrdiff_t out_stride, [[maybe_unused]] std::size_t pixels) const noexcept {
    if constexpr (detail::probability::has_lanes) {
      if constexpr (Cfg.channels <= detail::probability::vec::max_transposed_channels)
        detail::probability::vec::transposed<T>(table_.entries(), in, in_stride, out, out_stride, pixels, Cfg.channels);
      else
        detail::probability::vec::along_channels<T>(table_.entries(), in, in_stride, out, out_stride, pixels,
                                                    Cfg.channels);
    }
  }
  /// The reference (exp table + exact per-element integer division).
  void run_reference(tensor_view<const T> in, tensor_view<T> out) const { reference::softmax<T>(table_, in, out); }

  reference::softmax_table table_;
};

/// Log-softmax over the channels of every pixel (TFLite's quantized LOG_SOFTMAX, beta 1), specialized for
/// Cfg.channels, bit-exact with reference::log_softmax; see the file comment.
template <softmax_config Cfg, quantized_element T>
class log_softmax : public detail::probability::channel_probability<log_softmax<Cfg, T>, Cfg, T> {
  static_assert(Cfg.channels >= 1 && Cfg.channels <= reference::log_softmax_params::max_channels,
                "log_softmax: channels must be in [1, 4095] (the fixed-point sum of exponentials overflows above)");
  friend class detail::probability::channel_probability<log_softmax, Cfg, T>;

 public:
  static constexpr softmax_config config = Cfg;
  /// True when the run uses the two-class difference table or the vector paths (every ISA with 32-bit lanes);
  /// otherwise (scalar builds, other channel counts than 2) it calls reference::log_softmax.
  static constexpr bool specialized = Cfg.channels == 2 || detail::probability::has_lanes;
  static constexpr quant_params output_params = reference::log_softmax_output_params<T>;

  /// Load time: TFLite's Prepare and the tables (errc::invalid_argument, and the object refuses to run, unless the
  /// input scale is finite and above 2^-26).
  explicit log_softmax(quant_params input) : params_(input), tables_(params_) {
    this->build_pairs([&](tensor_view<const T> in, tensor_view<T> out) { run_reference(in, out); });
  }

  bool valid() const noexcept { return params_.valid(); }
  const reference::log_softmax_params& params() const noexcept { return params_; }

 private:
  static constexpr const char* invalid_message = "log_softmax: built from invalid quantization";
  static constexpr const char* views_message = "log_softmax: input and output views must be valid and match";
  static constexpr const char* channels_message = "log_softmax: channels differ from config.channels";

  void run_lanes([[maybe_unused]] const T* in, [[maybe_unused]] std::ptrdiff_t in_stride, [[maybe_unused]] T* out,
                 [[maybe_unused]] std::ptrdiff_t out_stride, [[maybe_unused]] std::size_t pixels) const noexcept {
    if constexpr (detail::probability::has_lanes) {
      if constexpr (Cfg.channels <= detail::probability::vec::max_transposed_channels)
        detail::probability::vec::log_softmax_transposed<T>(tables_, params_, in, in_stride, out, out_stride, pixels,
                                                            Cfg.channels);
      else
        detail::probability::vec::log_softmax_along_channels<T>(tables_, params_, in, in_stride, out, out_stride,
                                                                pixels, Cfg.channels);
    }
  }
  void run_reference(tensor_view<const T> in, tensor_view<T> out) const { reference::log_softmax<T>(params_, in, out); }

  reference::log_softmax_params params_;
  detail::probability::log_softmax_tables tables_;
};

/// Logistic (sigmoid) of every element: the reference table, vectorized lookups; see the file comment.
template <quantized_element T>
class logistic : public detail::probability::view_entry_points<logistic<T>, T> {
 public:
  static constexpr quant_params output_params = reference::probability_output_params<T>;

  /// Load time: builds the table (errc::invalid_argument, and the object refuses to run, unless the input scale is
  /// finite and positive).
  explicit logistic(quant_params input) : table_(input) {
    for (std::size_t q = 0; q < 256; ++q) lookup_.values[q] = static_cast<std::uint8_t>(table_.values()[q]);
    lookup_.finish();
  }

  bool valid() const noexcept { return table_.valid(); }
  const reference::logistic_table<T>& table() const noexcept { return table_; }

  void run(tensor_view<const T> in, tensor_view<T> out) const {
    if (!require(valid(), errc::invalid_argument, "logistic: built from invalid quantization")) return;
    if (!detail::probability::check_same_views(in, out, "logistic: input and output views must be valid and match"))
      return;
    detail::run_byte_table<T>(lookup_, in, out);
  }

 private:
  reference::logistic_table<T> table_;
  detail::byte_table lookup_{};
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
