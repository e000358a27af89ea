// Pointwise (1x1, stride 1) convolution in TFLite's 16x8 mode: int16 activations (zero point 0), int8 symmetric
// per-channel filters, int64 biases, specialized at compile time for the output channel count and the pixel tile:
//
//   mosaiq::pointwise16x8<{.out_channels = 72}> pw(filter /*[Cout][Cin] int8*/, bias /*Cout int64 or nullptr*/,
//                                                 input_channels, requant /*reference::make_conv_requant_16x8*/);
//   pw(input, output);  // tensor_view<const i16> -> tensor_view<i16>; no workspace, no heap
//   pw.run_rows(input, output, {first, last});  // output rows [first, last) only: one task of a parallel run
//
// Results equal reference::pointwise_conv_16x8 bit for bit.
//
// Design. TFLite accumulates in int64 and requantizes with the 64-bit MultiplyByQuantizedMultiplier. Both are
// replaced where that is provably the same:
// - int32 accumulators: a channel's accumulator never leaves [-(|bias| + 32768 sum_k |w_k|), +that] in any order of
//   summation, so where that bound is below 2^31 for every channel (checked at load from the actual weights and
//   biases: K * 32768 * 128 bounds it for any weights) int32 sums are exact. Otherwise the layer runs the int64
//   reference (uses_int32_path() says which); the selfie model's largest K = 128 stays far below.
// - the epilogue: reference::single_round_scale_16x8 turns TFLite's Q15 form into the single-rounding scale
//   (M15 << 16, 31 - shift) of mosaiq's existing epilogues, so each path requantizes with its
//   multiply_by_quantized_multiplier<rounding::single_round>.
// The 8-bit pointwise's machinery (folded zero points, split weights, k groups of 4 bytes, packed input rows) has
// nothing to do here: zero points are 0, and the int16 inputs are read in place, one dword (two channels) per
// multiply on x86. Hence a front end of its own (docs/decisions.md, "The 16x8 pointwise kernel").
//
// Weights are packed once per path into blocks of 16 output channels, [K / taps][16][taps] int16 (sign-extended
// from int8; taps = 2 for vpmaddwd / vpdpwssd pairs, 1 for NEON's vmlal_n_s16 and the scalar path), zero-padded to
// whole blocks and taps. A run walks pixel chunks whose input fits L1, and per chunk every block of 16 channels in
// register tiles of `tile_pixels` pixels, with a compile-time cascade of smaller tiles (tile/2, ..., 1) for the
// chunk's last pixels. Microkernels per build: AVX-512 VNNI (vpdpwssd zmm), AVX-512 (vpmaddwd zmm), AVX2 and
// AVX-VNNI (vpmaddwd ymm), NEON (smlal), scalar (ops/pointwise16x8/<isa>.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/ops/detail/kernel_16x8.hpp"
#include "mosaiq/ops/pointwise16x8/avx2.hpp"
#include "mosaiq/ops/pointwise16x8/avx512.hpp"
#include "mosaiq/ops/pointwise16x8/neon.hpp"
#include "mosaiq/ops/pointwise16x8/scalar.hpp"
#include "mosaiq/ops/pointwise16x8/tile.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of one 16x8 pointwise layer.
struct pointwise16x8_config {
  int out_channels = 0;
  /// Output pixels per register tile (0: the path's default).
  int tile_pixels = 0;
  friend constexpr bool operator==(const pointwise16x8_config&, const pointwise16x8_config&) = default;
};

namespace detail::pw16 {
// A pixel chunk's input rows stay within this many bytes (L1-resident while every channel block reads them).
inline constexpr std::size_t chunk_input_bytes = 32 * 1024;

}  // namespace detail::pw16

/// 16x8 pointwise convolution layer for one compile-time config. Construct once (checks and packs the weights),
/// then call on any input size; see the file comment for the design.
template <pointwise16x8_config Cfg>
class pointwise16x8 {
 public:
  /// The path this build runs (the scalar twin is kernels::pw16::scalar_path on every target).
  using path = simd::native_path_of<kernels::pw16::path_for>;

 private:
  static constexpr int out_channels = Cfg.out_channels;
  static constexpr int block = kernels::pw16::block;
  static constexpr int blocks = (out_channels + block - 1) / block;
  // The last block's channels: paths compute only the vectors that hold them (a 24-channel layer computes 24 on AVX2).
  static constexpr int last_channels = out_channels - (blocks - 1) * block;
  static constexpr int tile_pixels = Cfg.tile_pixels > 0 ? Cfg.tile_pixels : path::default_tile_pixels;

  static_assert(Cfg.out_channels >= 1, "pointwise16x8: set .out_channels (at least 1)");
  static_assert(Cfg.out_channels <= (1 << 20), "pointwise16x8: out_channels above 2^20 is not supported");
  static_assert(Cfg.tile_pixels >= 0 && Cfg.tile_pixels <= 16,
                "pointwise16x8: tile_pixels must be 0 (default) or 1..16");

 public:
  static constexpr pointwise16x8_config config = Cfg;
  using element_type = std::int16_t;

  /// `filter` [Cout][Cin] int8 (TFLite layout), `bias` Cout int64 entries or nullptr, `q` from
  /// reference::make_conv_requant_16x8 (one multiplier, or one per output channel; its clamp is the fused
  /// activation). Misuse is reported through mosaiq::require and leaves the layer unusable (ready() false).
  pointwise16x8(const std::int8_t* filter, const std::int64_t* bias, int input_channels,
                const reference::conv_requant_16x8& q) {
    load(filter, bias, input_channels, q);
  }
  /// A layer with no weights (ready() false): what a layer built on this one holds when its own checks failed.
  pointwise16x8() = default;

  bool ready() const noexcept { return ready_; }
  int input_channels() const noexcept { return channels_; }
  static constexpr int output_channels() noexcept { return out_channels; }
  static constexpr int tile() noexcept { return tile_pixels; }
  /// Whether the SIMD int32 path runs (every channel's accumulator provably fits int32), else the int64 reference.
  bool uses_int32_path() const noexcept { return int32_path_; }

  static constexpr shape output_shape(shape in) noexcept { return {in.height, in.width, out_channels}; }

  /// Runs on every image of the batch. Views may have any extents (static ones convert), pixel strides and element
  /// offsets; misuse is reported through mosaiq::require and leaves `out` untouched.
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const std::int16_t, InExtents> in, tensor_view<std::int16_t, OutExtents> out) const {
    run(tensor_view<const std::int16_t>(in), tensor_view<std::int16_t>(out));
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<std::int16_t, InExtents> in, tensor_view<std::int16_t, OutExtents> out) const {
    run(tensor_view<const std::int16_t>(in), tensor_view<std::int16_t>(out));
  }

  /// Output rows [band.first, band.last) of every image, nothing else: the same layer on those rows (a 1x1 window
  /// reads its own pixel only), so bit-identical to them in a whole run. One task of a parallel run.
  void run_rows(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out, row_band band) const {
    if (!require(band.first >= 0 && band.first <= band.last && band.last <= out.height() && band.last <= in.height(),
                 errc::invalid_argument, "pointwise16x8: row band outside the input or output"))
      return;
    run(in.row_slice(band.first, band.rows()), out.row_slice(band.first, band.rows()));
  }

  /// The same layer on the scalar microkernel over this path's packed weights: the twin the tests compare with.
  void run_scalar_twin(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out) const {
    run<kernels::pw16::scalar_path<path::taps>>(in, out);
  }

 private:
  void load(const std::int8_t* filter, const std::int64_t* bias, int input_channels,
            const reference::conv_requant_16x8& q) {
    if (!require(input_channels >= 1, errc::invalid_argument, "pointwise16x8: input_channels must be at least 1") ||
        !require(filter != nullptr, errc::null_pointer, "pointwise16x8: filter is null") ||
        !detail::kernel_16x8::check_requant(
            q, out_channels,
            "pointwise16x8: multipliers must be non-negative with shift in [-31, 7] (make_conv_requant_16x8)"))
      return;
    channels_ = input_channels;
    clamp_ = q.clamp;
    const int steps = (input_channels + path::taps - 1) / path::taps;
    weights_.assign(static_cast<std::size_t>(blocks) * steps * block * path::taps, 0);
    bias_.assign(static_cast<std::size_t>(blocks) * block, 0);
    multiplier_.assign(bias_.size(), 0);
    right_shift_.assign(bias_.size(), 31);
    int32_path_ = true;
    for (int c = 0; c < out_channels; ++c) {
      const std::int8_t* row = filter + static_cast<std::size_t>(c) * input_channels;
      const std::int64_t b = bias ? bias[c] : 0;
      int32_path_ = int32_path_ && detail::kernel_16x8::accumulates_in_int32(row, input_channels, 1, b);
      pack_channel(c, row, steps);
      bias_[c] = static_cast<std::int32_t>(b);  // used only where int32_path_ proves it fits
      const requant_scale s = reference::single_round_scale_16x8(q.multiplier_for(c));
      multiplier_[c] = s.multiplier, right_shift_[c] = s.right_shift;
    }
    if (!int32_path_) keep_reference_operands(filter, bias, q);
    ready_ = true;
  }

  /// Output channel c's weights, sign-extended, into its block: [K / taps][16][taps].
  void pack_channel(int c, const std::int8_t* row, int steps) {
    std::int16_t* block_weights = weights_.data() + static_cast<std::size_t>(c / block) * steps * block * path::taps;
    for (int k = 0; k < channels_; ++k)
      block_weights[(static_cast<std::size_t>(k / path::taps) * block + c % block) * path::taps + k % path::taps] =
          row[k];
  }

  /// A layer whose accumulators could leave int32 runs the int64 reference on its own operands.
  void keep_reference_operands(const std::int8_t* filter, const std::int64_t* bias,
                               const reference::conv_requant_16x8& q) {
    filter_.assign(filter, filter + static_cast<std::size_t>(out_channels) * channels_);
    bias64_.assign(static_cast<std::size_t>(out_channels), 0);
    if (bias) std::copy_n(bias, out_channels, bias64_.begin());
    requant_ = q;
  }

  template <class Path = path>
  void run(tensor_view<const std::int16_t> in, tensor_view<std::int16_t> out) const {
    if (!require(ready_, errc::invalid_argument,
                 "pointwise16x8: layer was not loaded (construction reported an error)") ||
        !check_view(in, "pointwise16x8: invalid input view") || !check_view(out, "pointwise16x8: invalid output view"))
      return;
    if (!require(in.channels() == channels_, errc::shape_mismatch,
                 "pointwise16x8: input channels differ from the weights") ||
        !require(out.dims() == output_shape(in.dims()), errc::shape_mismatch,
                 "pointwise16x8: output extents differ from output_shape(input)") ||
        !require(out.batch() == in.batch(), errc::shape_mismatch, "pointwise16x8: input and output batch differ"))
      return;
    if (!int32_path_) {
      reference::pointwise_conv_16x8(in, filter_.data(), bias64_.data(), out, requant_);
      return;
    }
    if (!in.images_follow() || !out.images_follow()) return run_each_image<Path>(in, out);
    const std::ptrdiff_t pixels = static_cast<std::ptrdiff_t>(in.batch()) * in.height() * in.width();
    if (pixels == 0) return;
    const std::ptrdiff_t row_bytes = static_cast<std::ptrdiff_t>(channels_) * sizeof(std::int16_t);
    const std::ptrdiff_t chunk =
        std::max<std::ptrdiff_t>(tile_pixels, static_cast<std::ptrdiff_t>(detail::pw16::chunk_input_bytes) / row_bytes);
    // Fixed for the run; the block loop sets the rest.
    kernels::pw16::tile_job job{};
    job.input_stride = in.pixel_stride(), job.out_stride = out.pixel_stride();
    job.input_channels = channels_;
    job.clamp_min = clamp_.min, job.clamp_max = clamp_.max;
    const std::size_t block_weights =
        static_cast<std::size_t>((channels_ + Path::taps - 1) / Path::taps) * block * Path::taps;
    for (std::ptrdiff_t p0 = 0; p0 < pixels; p0 += chunk) {
      const std::ptrdiff_t count = std::min(chunk, pixels - p0);
      for (int b = 0; b < blocks; ++b) {
        const int c0 = b * block;
        job.weights = weights_.data() + b * block_weights;
        job.bias = bias_.data() + c0;
        job.multiplier = multiplier_.data() + c0;
        job.right_shift = right_shift_.data() + c0;
        job.valid_channels = std::min(block, out_channels - c0);
        job.input = in.pixel(0, 0, 0) + p0 * job.input_stride;
        job.out = out.pixel(0, 0, 0) + p0 * job.out_stride + c0;
        std::ptrdiff_t left = count;
        if (b + 1 < blocks)
          run_pixel_tiles<Path, tile_pixels, block>(job, left);
        else
          run_pixel_tiles<Path, tile_pixels, last_channels>(job, left);
      }
    }
  }

  /// Row bands of a batch leave gaps between images: one image at a time. Out of line and cold, so that the run's
  /// own code (and what the compiler inlines into it) stays as without this case.
  template <class Path>
  [[gnu::noinline, gnu::cold]] void run_each_image(tensor_view<const std::int16_t> in,
                                                   tensor_view<std::int16_t> out) const {
    for (int n = 0; n < in.batch(); ++n) run<Path>(in.image(n), out.image(n));
  }

  /// Tiles of MR pixels while they fit, then the smaller tiles MR/2, ..., 1 for the rest.
  template <class Path, int MR, int Channels>
  static void run_pixel_tiles(kernels::pw16::tile_job& job, std::ptrdiff_t& count) noexcept {
    for (; count >= MR; count -= MR) {
      Path::template tile<MR, Channels>(job);
      job.input += MR * job.input_stride;
      job.out += MR * job.out_stride;
    }
    if constexpr (MR > 1) run_pixel_tiles<Path, MR / 2, Channels>(job, count);
  }

  int channels_ = 0;
  bool ready_ = false;
  bool int32_path_ = true;
  clamp_range clamp_{};
  detail::vector<std::int16_t> weights_;                          // per block: [K / taps][16][taps]
  detail::vector<std::int32_t> bias_, multiplier_, right_shift_;  // per padded output channel
  // The int64 reference's operands, kept only by layers that cannot accumulate in int32.
  std::vector<std::int8_t> filter_;
  std::vector<std::int64_t> bias64_;
  reference::conv_requant_16x8 requant_;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
