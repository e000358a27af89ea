// Quantized depthwise convolution, specialized at compile time for kernel, stride, dilation,
// padding, depth multiplier, output tile, activation and rounding:
//
//   mosaiq::depthwise<{.kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}}, mosaiq::u8> dw(
//       filter /*[KH][KW][C*M]*/, bias /*C*M or nullptr*/, channels, requant);   // load time: packs, may allocate
//   std::vector<std::byte> scratch(dw.workspace_bytes(input.dims()));            // or a slice of a static arena
//   dw(input, output, scratch);                                                  // run: no heap, no branches per pixel
//
// Results equal reference::depthwise_conv bit for bit (TFLite reference semantics: uint8 per-tensor
// weights with a zero point, int8 per-channel symmetric weights).
//
// Design. Everything runs in a "folded" unsigned domain: x_f = x (u8) or x ^ 0x80 (i8, i.e. x + 128),
// w' = w - filter_zp, and bias' = bias - izp_f * sum(w') with izp_f the folded input zero point.
// Out-of-image taps then read izp_f and contribute nothing, exactly like TFLite skipping them.
// Per input row the run builds, once, a "tap-group row" in the workspace: for every output column
// ox, group g of 4 horizontal taps and channel c, the 4 bytes x_f(ox*SW - pad + (4g+t)*DW), t < 4
// (taps past KW or outside the image read izp_f). Stride, dilation and padding live only in that
// build; the hot loop is the same for all of them: per output pixel and 16-channel block,
// acc += dot4(row[kr][ox][g], w[kr][g]) over kernel rows kr and groups g, i.e. one vpdpbusd per
// (kr, g) on AVX-512 VNNI, vpmaddwd on int16 pairs on AVX2, widening multiply-accumulates on NEON,
// plain loops on the scalar path (the twin every SIMD path is tested against). On VNNI a job is 64
// channels, four blocks in a permuted lane order (channel_position) that the 64-byte unpacks of
// the build produce and the saturating packs of the output undo; requantization there is one
// 64-bit product per lane (simd::avx512::multiply_by_nonnegative_multiplier) whenever the scales
// allow it, the general form otherwise. Narrow layers (<= 32 channels) pack 2, 4 or 8 neighbouring
// output pixels into one 64-lane job; at stride 1 over dense pixels the build then reads each
// tap's pixels as one contiguous 64-byte run (interleave_runs), at stride 2 as every other pixel
// of a 128-byte run (interleave_strided_runs), instead of merging masked loads.
// Built rows sit in a ring and serve every output row that needs them (row reuse); rows
// above/below the image take a ring slot filled with the padding byte, like any other row. A map
// with fewer rows (per residue modulo the dilation) than the ring gives each of them its own slot,
// and the padding one constant row (ring_layout). Dilated layers run their output rows phase by
// phase: the rows of a phase, dilation / gcd(stride, dilation) apart, read input rows of one residue
// modulo the dilation, so a pass's ring holds its KH rows (plus lcm(stride, dilation) / dilation
// per further row of the pass) whatever the dilation, not the (KH-1)*dilation+1 rows a top-to-bottom
// order keeps (16x16x128 at dilation 8: 3 rows of 8 KB instead of 17); each row is still built once.
// On VNNI two output rows that share input rows (stride below the kernel's extent) run in one register tile
// (rows_tile): each shared tap-group vector is loaded once for both, and the block's weights and requantization
// constants stay in registers across the tile (56x56x128 on Zen 4: 147 -> 98 us). Output columns go in a main tile of
// `tile.w` pixels plus a compile-time cascade of smaller tiles for the remainder; channel tails use masked or staged
// loads/stores, so nothing outside the views is read or written.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/depthwise/row_job.hpp"
#include "mosaiq/ops/depthwise/scalar.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/epilogue.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"
// The path files (each guards itself: it has code only for its target).
#include "mosaiq/ops/depthwise/avx2.hpp"
#include "mosaiq/ops/depthwise/avx512.hpp"
#include "mosaiq/ops/depthwise/avx512_vnni.hpp"
#include "mosaiq/ops/depthwise/neon.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of one depthwise layer.
struct depthwise_config {
  hw kernel{3, 3};
  hw stride{1, 1};
  hw dilation{1, 1};
  padding pad = padding::same();
  int depth_multiplier = 1;
  /// Output rows per pass (h) and output columns per register tile (w); 0 picks the default for
  /// the kernel, stride and ISA. On AVX-512 VNNI a pass's rows go two at a time through one
  /// register tile where they share input rows (default h = 2 there, w = 4 single / 2 paired).
  hw tile{0, 0};
  /// Channels per block; every path works on 16-channel blocks, so 0 (default) or 16.
  int channel_block = 0;
  /// Fused activation used by the constructor that derives the requantization from scales.
  activation act = activation::none;
  rounding round = rounding::tflite_reference;
  friend constexpr bool operator==(const depthwise_config&, const depthwise_config&) = default;
};

namespace detail::dw {

using kernels::dw::block, kernels::dw::group_taps;

// The best path this target builds (every target builds the scalar one).
using native_path = simd::native_path_of<kernels::dw::path_for>;

/// The requantization lanes a path's tiles read (Path::layer_lanes, chosen at load), or none.
struct no_layer_lanes {
  const void* at(int) const noexcept { return nullptr; }
};
template <class Path>
using layer_lanes = typename detail::kernel::layer_lanes_of<Path, no_layer_lanes>::type;
/// Folds the requantization of a layer into Lanes where its path keeps folded AVX2 lanes (simd::avx2::requant_lanes8,
/// reference rounding), else nothing.
template <class Lanes>
void choose_lanes8(Lanes& lanes, const std::int32_t* multiplier, const std::int32_t* left_shift,
                   const std::int32_t* right_shift, int padded_channels) {
  if constexpr (requires { lanes.choose_lanes8(multiplier, left_shift, right_shift, padded_channels); })
    lanes.choose_lanes8(multiplier, left_shift, right_shift, padded_channels);
}

constexpr int groups_for(int kernel_w) noexcept { return (kernel_w + group_taps - 1) / group_taps; }

constexpr bool uses_vnni = native_path::uses_vnni;  // the path's 64-channel VNNI jobs (scalar_path::uses_vnni)

/// Default output tile width: enough independent accumulators to hide the multiply-add latency
/// without spilling (the path's, see ops/depthwise/<isa>.hpp).
constexpr int default_tile_w(hw /*kernel*/) noexcept { return native_path::default_tile_w; }

// Channels per hot-loop job: the VNNI path works on 64 channels as four 16-lane blocks whose lanes
// are permuted so that both the byte unpacks of its build and the saturating packs of its output
// keep channel order (see vnni_path); the other paths work on plain 16-channel blocks.
inline constexpr int job_channels = native_path::job_channels;
static_assert(uses_vnni == (job_channels == 64), "the VNNI path is the one with 64-channel jobs");

/// Where channel c sits in the packed per-channel arrays and the tap-group rows.
constexpr int channel_position(int c) noexcept {
  if constexpr (!uses_vnni) return c;
  // Block j = c % 16 / 4, lane 4 * (c % 64 / 16) + c % 4 of its 64-channel job.
  return c / 64 * 64 + c % 16 / 4 * 16 + c % 64 / 16 * 4 + c % 4;
}

/// Output pixels per VNNI job for `channels` output channels: narrow layers share one 64-lane
/// job between 2 (<= 32 channels), 4 (<= 16) or 8 (<= 8) neighbouring pixels so that no lanes idle.
inline constexpr int max_pixels_per_job = 8;
constexpr int pixels_per_job(int channels) noexcept {
  if constexpr (!uses_vnni) return 1;
  return channels <= 8 ? 8 : channels <= 16 ? 4 : channels <= 32 ? 2 : 1;
}

}  // namespace detail::dw

/// Depthwise convolution layer for one compile-time config and element type. Construct once
/// (packs the weights), then call on any input size; see the file comment for the design.
template <depthwise_config Cfg, quantized_element T>
class depthwise {
  static_assert(Cfg.kernel.h >= 1 && Cfg.kernel.w >= 1, "depthwise: kernel extents must be at least 1");
  static_assert(Cfg.kernel.h * Cfg.kernel.w <= 1024, "depthwise: kernel larger than 1024 taps is not supported");
  static_assert(Cfg.stride.h >= 1 && Cfg.stride.w >= 1, "depthwise: stride must be at least 1");
  static_assert(Cfg.dilation.h >= 1 && Cfg.dilation.w >= 1, "depthwise: dilation must be at least 1");
  static_assert(Cfg.pad.top >= 0 && Cfg.pad.bottom >= 0 && Cfg.pad.left >= 0 && Cfg.pad.right >= 0,
                "depthwise: explicit pads must be non-negative");
  static_assert(Cfg.pad.mode == padding_mode::explicit_pads ||
                    (Cfg.pad.top == 0 && Cfg.pad.bottom == 0 && Cfg.pad.left == 0 && Cfg.pad.right == 0),
                "depthwise: pad amounts are only meaningful with padding::explicit_pads(...)");
  static_assert(Cfg.depth_multiplier >= 1, "depthwise: depth_multiplier must be at least 1");
  static_assert(Cfg.tile.h >= 0 && Cfg.tile.h <= 8, "depthwise: tile.h (output rows per pass) must be 0..8");
  static_assert(Cfg.tile.w >= 0 && Cfg.tile.w <= 32, "depthwise: tile.w (output columns per tile) must be 0..32");
  static_assert(Cfg.channel_block == 0 || Cfg.channel_block == detail::dw::block,
                "depthwise: channel_block must be 0 (default) or 16, the block every path uses");

  using path = detail::dw::native_path;
  using weight_type = typename path::weight_type;

  static constexpr int kh = Cfg.kernel.h, kw = Cfg.kernel.w;
  static constexpr int groups = detail::dw::groups_for(kw);
  static constexpr int multiplier = Cfg.depth_multiplier;
  // Dilated layers run their output rows phase by phase: the rows of one phase (oy mod phase_count)
  // read input rows of one residue modulo the dilation, and consecutive ones read windows
  // lcm(stride, dilation) rows apart, so the ring holds the KH rows of that residue a row reads
  // instead of the (KH-1)*dilation+1 rows a top-to-bottom order spans. Each input row is read by one
  // phase only (rows of different phases read different residues), so it is still built once.
  static constexpr bool phased = Cfg.dilation.h > 1 && kh > 1;
  static constexpr int phase_count = phased ? Cfg.dilation.h / std::gcd(Cfg.stride.h, Cfg.dilation.h) : 1;
  // Input rows between consecutive output rows of a pass (of one phase): lcm(stride, dilation) when phased.
  static constexpr int pass_row_shift = phase_count * Cfg.stride.h;
  // A ring slot holds input rows iy with the same iy / ring_unit (mod ring_rows).
  static constexpr int ring_unit = phased ? Cfg.dilation.h : 1;
  // VNNI tiles hold four accumulators per column: wider ones than 8 would only spill.
  static constexpr int tile_w = Cfg.tile.w <= 0         ? detail::dw::default_tile_w(Cfg.kernel)
                                : detail::dw::uses_vnni ? std::min(Cfg.tile.w, 8)
                                                        : Cfg.tile.w;
  // VNNI: two output rows per register tile where they share input rows (stride below the kernel's
  // extent, e.g. every stride-1 layer), each shared tap-group vector loaded once for both.
  static constexpr int register_rows =
      detail::dw::uses_vnni && kernels::dw::rows_tile<kh, 2, pass_row_shift, Cfg.dilation.h>::shares_rows ? 2 : 1;
  static constexpr int tile_h = Cfg.tile.h > 0 ? Cfg.tile.h : register_rows;
  // Rows and columns of the multi-row register tile: TH x TW x 4 accumulators stay within 16.
  static constexpr int rows_th = std::min(register_rows, tile_h);
  static constexpr int rows_tw = std::max(1, std::min(tile_w, 4) / rows_th);
  static constexpr bool is_int8 = std::same_as<T, i8>;
  // x_f = x ^ flip_: 0x80 for int8, 0 for uint8, 0xFF (complement_flip) for uint8 layers whose split needs
  // negated weights. The build takes it as a template argument, so the common forms xor nothing extra.
  static constexpr std::uint8_t default_flip = is_int8 ? 0x80 : 0x00, complement_flip = 0xFF;
  static constexpr int job_channels = detail::dw::job_channels;
  static constexpr int block_bytes = detail::dw::block * detail::dw::group_taps;
  static constexpr int job_bytes = job_channels * detail::dw::group_taps;
  // Ring slots one pass of tile_h output rows spans (in ring units), so a row stays until no later
  // pass can need it.
  static constexpr int ring_rows =
      (tile_h - 1) * pass_row_shift / ring_unit + ((kh - 1) * Cfg.dilation.h) / ring_unit + 1;
  static_assert(pass_row_shift % ring_unit == 0, "depthwise: the rows of a phase share one residue mod dilation");
  // Tag of a ring slot holding the padding row (image rows are tagged with their index), and of an empty slot.
  static constexpr int padding_tag = -1, empty_tag = -2;

  /// The ring for an image of `height` rows. A pass reads at most ring_rows consecutive ring units (iy / ring_unit,
  /// rounded down, rows outside the image included), so ring_rows slots indexed by unit modulo ring_rows hold
  /// them all, the padding rows among them. An image of fewer units than that gives each of its units a slot
  /// and the padding a row of its own, fewer rows when it has at most ring_rows - 2 units (16 rows at
  /// dilation 8: 2 units, so 2 slots and the padding row, where the paired rows' ring has 4 slots).
  struct ring_layout {
    int slots = 0;
    bool padding_row = false;  // a constant row outside the ring serves the rows outside the image
  };
  static constexpr ring_layout ring_for(int height) noexcept {
    const int units = (height + ring_unit - 1) / ring_unit;
    if (units < ring_rows) return {units, true};
    return {ring_rows, false};
  }
  /// The slot of input row iy: its ring unit rounded down (rows above the image are negative), modulo the slots: a
  /// compile-time modulo when the ring is ring_rows slots, the unit itself when every unit of the image has its own
  /// slot (rows outside the image then use the padding row, not a slot).
  static constexpr int ring_slot(int iy, ring_layout ring) noexcept {
    const int unit = iy >= 0 ? iy / ring_unit : -((ring_unit - 1 - iy) / ring_unit);
    return ring.padding_row ? unit : (unit % ring_rows + ring_rows) % ring_rows;
  }

 public:
  static constexpr depthwise_config config = Cfg;

  /// `filter` [KH][KW][C*M] (TFLite layout), `bias` C*M entries or nullptr, `q` built by
  /// reference::make_conv_requant for the same rounding and element type (its clamp is used).
  depthwise(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    load(filter, bias, input_channels, q);
  }

  /// Derives the requantization from scales as TFLite does, with the config's activation.
  depthwise(const T* filter, const std::int32_t* bias, int input_channels, quant_params input,
            std::span<const float> filter_scales, std::int32_t filter_zero_point, quant_params output) {
    load(filter, bias, input_channels,
         reference::make_conv_requant<Cfg.round, T>(input, filter_scales, filter_zero_point, output, Cfg.act));
  }

  int input_channels() const noexcept { return channels_; }
  int output_channels() const noexcept { return channels_ * multiplier; }

  /// Output extents for an input of `in` (channels become C * depth_multiplier).
  static constexpr shape output_shape(shape in) noexcept {
    const window_geometry geo = resolve_window(in.height, in.width, Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
    return {geo.y.output, geo.x.output, in.channels * multiplier};
  }

  /// Scratch bytes a run on `in` needs (any alignment; the run aligns inside it).
  static constexpr std::size_t workspace_bytes(shape in) noexcept {
    const layout l = layout_for(in);
    return l.total;
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
    run(in, out, workspace, band);
  }

  /// Output rows `band` of an image of `image_height` rows whose input is given as a window of rows:
  /// `in` holds image rows [in_first_row, in_first_row + in.height()), which must cover every row the
  /// band's windows read, and `band_out` holds exactly the band's rows. One step of a banded network
  /// (net/bands.hpp); workspace as for the whole image.
  void run_rows_window(tensor_view<const T> in, int in_first_row, int image_height, tensor_view<T> band_out,
                       std::span<std::byte> workspace, row_band band) const {
    run(in, {in_first_row, image_height}, band_out, workspace, band);
  }

  /// Whether run_rows_window can resume a ring: only undilated rows (a phased ring shares its slots between the
  /// residues of a unit, so the next call's first phase finds its rows overwritten by the previous call's last).
  static constexpr bool resumes_ring = !phased;

  /// run_rows_window for the band after the one the previous call on this workspace computed, on the same image
  /// (batch 1): the ring keeps the tap-group rows that call built, so the rows the two bands share are not built
  /// again, and `in` needs to hold only the rows the ring does not (checked). The first band of an image goes
  /// through run_rows_window, which starts with an empty ring; no other call may use the workspace in between.
  void resume_rows_window(tensor_view<const T> in, int in_first_row, int image_height, tensor_view<T> band_out,
                          std::span<std::byte> workspace, row_band band) const requires(resumes_ring) {
    run(in, {in_first_row, image_height}, band_out, workspace, band, in.batch() == 1);
  }

 private:
  struct layout {
    int out_w = 0, padded_channels = 0;
    std::size_t row_bytes = 0;  // one tap-group row: out_w * groups * padded_channels * 4
    std::size_t pad_pixel = 0, expanded_row = 0, pad_row = 0, ring = 0, tags = 0, total = 0;
    ring_layout ring_slots{};
  };

  static constexpr layout layout_for(shape in) noexcept {
    using detail::kernel::align, detail::kernel::round_up;
    layout l;
    const shape o = output_shape(in);
    const int pixels = detail::dw::pixels_per_job(o.channels);
    l.out_w = (o.width + pixels - 1) / pixels;  // job columns
    l.padded_channels = round_up(o.channels, job_channels);
    l.row_bytes = static_cast<std::size_t>(l.out_w) * groups * static_cast<std::size_t>(l.padded_channels) *
                  detail::dw::group_taps;
    const std::size_t channels = static_cast<std::size_t>(o.channels);
    std::size_t at = 0;
    l.pad_pixel = at;
    at += round_up(channels, align);
    l.expanded_row = at;
    if constexpr (multiplier > 1) at += round_up(static_cast<std::size_t>(in.width) * channels, align);
    l.ring_slots = ring_for(in.height);
    l.pad_row = at;
    if (l.ring_slots.padding_row) at += round_up(l.row_bytes, align);
    l.ring = at;
    at += static_cast<std::size_t>(l.ring_slots.slots) * round_up(l.row_bytes, align);
    l.tags = at;
    at += round_up(sizeof(int) * static_cast<std::size_t>(l.ring_slots.slots), align);
    l.total = at + align;  // slack to align the caller's pointer
    return l;
  }

  void load(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    const int oc = input_channels * multiplier;
    if (!require(input_channels >= 1, errc::invalid_argument, "depthwise: input_channels must be at least 1") ||
        !require(filter != nullptr, errc::null_pointer, "depthwise: filter is null") ||
        !reference::check_conv_requant<Cfg.round, T>(q, oc))
      return;
    channels_ = input_channels;
    const int padded = detail::kernel::round_up(oc, job_channels);
    const int jobs = padded / job_channels;
    const std::int32_t filter_zp = q.filter_zero_point;

    // uint8 on VNNI: w' = w - filter_zp must fit s8 for a single vpdpbusd per tap group; otherwise
    // w' = sign * (w - filter_zp) is split (split_for), and sign -1 folds x as 255 - x.
    weight_split split{};
    if constexpr (detail::dw::uses_vnni && !is_int8)
      split = split_for(filter, static_cast<std::size_t>(kh * kw * oc), filter_zp);
    split_weights_ = split.common != 0;
    flip_ = split.sign < 0 ? complement_flip : default_flip;
    // The folded input zero point: what padding taps read after the build's flip.
    const std::int32_t folded_input_zp = static_cast<std::uint8_t>(q.input_zero_point) ^ flip_;

    weights_.assign(static_cast<std::size_t>(jobs) * kh * groups * job_bytes, weight_type{0});
    bias_.assign(static_cast<std::size_t>(padded), 0);
    mult_.assign(static_cast<std::size_t>(padded), 0);
    left_.assign(static_cast<std::size_t>(padded), 0);
    right_.assign(static_cast<std::size_t>(padded), R == rounding::single_round ? 1 : 0);
    // Narrow layers (pixels_per_job > 1): lane v of the job holds channel v % width of its pixel.
    const int pixels = detail::dw::pixels_per_job(oc), width = job_channels / pixels;
    for (int v = 0; v < (pixels > 1 ? job_channels : oc); ++v) {
      const int c = pixels > 1 ? v % width : v;
      if (c >= oc) continue;
      std::int64_t weight_sum = 0;
      const int at_channel = detail::dw::channel_position(v);
      const int job = at_channel / job_channels, lane = at_channel % job_channels;
      for (int kr = 0; kr < kh; ++kr)
        for (int kc = 0; kc < kw; ++kc) {
          const std::int32_t w = split.sign * (static_cast<std::int32_t>(filter[(kr * kw + kc) * oc + c]) - filter_zp);
          weight_sum += w;
          const int g = kc / detail::dw::group_taps, t = kc % detail::dw::group_taps;
          const std::size_t at = ((static_cast<std::size_t>(job) * kh + kr) * groups + g) * job_bytes +
                                 static_cast<std::size_t>(lane) * detail::dw::group_taps + t;
          weights_[at] = static_cast<weight_type>(w - split.common);
        }
      bias_[at_channel] = static_cast<std::int32_t>((bias ? bias[c] : 0) - folded_input_zp * weight_sum);
      const requant_scale s = q.scale_for(c);
      mult_[at_channel] = s.multiplier, left_[at_channel] = s.left_shift, right_[at_channel] = s.right_shift;
    }
    if constexpr (detail::dw::uses_vnni) choose_lane_epilogue(q, padded);
    if constexpr (R == rounding::tflite_reference)
      detail::dw::choose_lanes8(lanes_, mult_.data(), left_.data(), right_.data(), padded);
    for (int g = 0; g < groups; ++g)
      for (int lane = 0; lane < detail::dw::block; ++lane)
        for (int t = 0; t < detail::dw::group_taps; ++t)
          split_taps_[static_cast<std::size_t>((g * detail::dw::block + lane) * detail::dw::group_taps + t)] =
              static_cast<std::int8_t>(g * detail::dw::group_taps + t < kw ? split.common : 0);
    input_zero_point_ = q.input_zero_point;
    output_zero_point_ = q.output_zero_point;
    clamp_ = q.clamp;
    ready_ = true;
  }

  static constexpr rounding R = Cfg.round;

  void run(tensor_view<const T> in, tensor_view<T> out, std::span<std::byte> workspace) const {
    run(in, out, workspace, {0, out.height()});
  }

  void run(tensor_view<const T> in, tensor_view<T> out, std::span<std::byte> workspace, row_band band) const {
    if (!check_view(out, "depthwise: invalid output view") ||
        !require(out.height() == output_shape(in.dims()).height, errc::shape_mismatch,
                 "depthwise: output extents differ from output_shape(input)") ||
        !require(band.first >= 0 && band.first <= band.last && band.last <= out.height(), errc::invalid_argument,
                 "depthwise: row band outside the output"))
      return;
    run(in, {0, in.height()}, out.row_slice(band.first, band.rows()), workspace, band);
  }

  /// Where the input view sits in the image: image rows [first, first + in.height()) of image_height.
  struct input_window {
    int first = 0;
    int image_height = 0;
  };

  /// One run's geometry and its workspace carved by layout_for(image): the ring, its tags, the padding pixel and
  /// row, the expanded row of a depth multiplier, and the strides of the tap-group rows.
  struct frame {
    window_geometry geo;
    layout l;
    int image_height = 0, out_width = 0, oc = 0, pixels = 0;
    std::uint8_t *pad_pixel = nullptr, *expanded = nullptr, *pad_row = nullptr, *ring = nullptr;
    int* tags = nullptr;
    std::size_t ring_stride = 0;
    std::uint8_t pad_byte = 0;
    std::ptrdiff_t column_stride = 0, group_stride = 0;
  };

  // `out` holds output rows `band` only.
  // `resume`: the workspace holds the ring of the previous band's call on the same image (resume_rows_window).
  void run(tensor_view<const T> in, input_window window, tensor_view<T> out, std::span<std::byte> workspace,
           row_band band, bool resume = false) const {
    if (!require(ready_, errc::invalid_argument, "depthwise: layer was not loaded (construction reported an error)") ||
        !check_view(in, "depthwise: invalid input view") || !check_view(out, "depthwise: invalid output view"))
      return;
    const shape image{window.image_height, in.width(), in.channels()};
    const shape expected = output_shape(image);
    const window_geometry geo =
        resolve_window(image.height, image.width, Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
    // The first image row the band's windows read (clipped to the image).
    const int top = std::max(0, band.first * Cfg.stride.h - geo.y.pad_before);
    if (!check_run(in, window, out, workspace, band, resume, image, geo, top)) return;
    if (expected.height == 0 || expected.width == 0 || image.height == 0 || in.width() == 0 || band.rows() == 0) return;

    const frame f = make_frame(image, expected, geo, workspace);
    if (resume && !check_resumed_ring(f, top, window.first)) return;
    for (int n = 0; n < in.batch(); ++n) {
      if (!resume)
        for (int r = 0; r < f.l.ring_slots.slots; ++r) f.tags[r] = empty_tag;
      // Phase by phase (a single one unless phased), in passes of up to tile_h rows of the phase,
      // phase_count output rows apart.
      for (int phase = 0; phase < phase_count; ++phase)
        for (int oy0 = band.first + phase; oy0 < band.last; oy0 += tile_h * phase_count)
          run_pass(f, in, window.first, out, n, band, oy0);
    }
  }

  // The run's view, band and workspace checks (the band's windows read image rows [top, bottom)).
  [[gnu::always_inline]] bool check_run(const tensor_view<const T>& in, input_window window, const tensor_view<T>& out,
                                        std::span<std::byte> workspace, row_band band, bool resume, shape image,
                                        const window_geometry& geo, int top) const {
    const shape expected = output_shape(image);
    const int bottom =
        std::min(image.height, (band.last - 1) * Cfg.stride.h - geo.y.pad_before + (kh - 1) * Cfg.dilation.h + 1);
    return require(in.channels() == channels_, errc::shape_mismatch,
                   "depthwise: input channels differ from the weights") &&
           require(band.first >= 0 && band.first <= band.last && band.last <= expected.height, errc::invalid_argument,
                   "depthwise: row band outside the output") &&
           require(out.dims() == shape{band.rows(), expected.width, expected.channels}, errc::shape_mismatch,
                   "depthwise: output extents differ from output_shape(input)") &&
           require(band.rows() == 0 || ((resume || window.first <= top) && bottom <= window.first + in.height()),
                   errc::shape_mismatch, "depthwise: the input window misses rows the band reads") &&
           require(out.batch() == in.batch(), errc::shape_mismatch, "depthwise: input and output batch differ") &&
           require(workspace.size() >= workspace_bytes(image), errc::invalid_argument,
                   "depthwise: workspace smaller than workspace_bytes(input)");
  }

  // Carves the workspace and fills the padding pixel and row (what rows outside the image read).
  [[gnu::always_inline]] frame make_frame(shape image, shape expected, const window_geometry& geo,
                                          std::span<std::byte> workspace) const {
    frame f{.geo = geo, .l = layout_for(image), .image_height = image.height, .out_width = expected.width};
    std::uint8_t* const base = detail::kernel::aligned_workspace(workspace);
    f.pad_pixel = base + f.l.pad_pixel;
    f.expanded = base + f.l.expanded_row;
    f.pad_row = base + f.l.pad_row;
    f.ring = base + f.l.ring;
    f.tags = reinterpret_cast<int*>(base + f.l.tags);
    f.ring_stride = detail::kernel::round_up(f.l.row_bytes, detail::kernel::align);
    f.oc = expected.channels;
    f.pixels = detail::dw::pixels_per_job(f.oc);
    // Padding reads the raw input zero point; the build flips it like every other input byte.
    std::memset(f.pad_pixel, static_cast<std::uint8_t>(input_zero_point_), static_cast<std::size_t>(f.oc));
    f.pad_byte = static_cast<std::uint8_t>(static_cast<std::uint8_t>(input_zero_point_) ^ flip_);
    if (f.l.ring_slots.padding_row) std::memset(f.pad_row, f.pad_byte, f.l.row_bytes);
    f.column_stride = static_cast<std::ptrdiff_t>(groups) * f.l.padded_channels * detail::dw::group_taps;
    f.group_stride = static_cast<std::ptrdiff_t>(f.l.padded_channels) * detail::dw::group_taps;
    return f;
  }

  // A resumed ring must hold every row the band reads above the window (those the previous band built).
  [[gnu::always_inline]] bool check_resumed_ring(const frame& f, int top, int window_first) const {
    for (int iy = top; iy < window_first; ++iy)
      if (!require(f.tags[ring_slot(iy, f.l.ring_slots)] == iy, errc::shape_mismatch,
                   "depthwise: the input window misses rows the band reads (not in the resumed ring)"))
        return false;
    return true;
  }

  // The tap-group row of image row iy (rows outside the image: the padding), built into its ring slot unless the
  // slot already holds it.
  [[gnu::always_inline]] const std::uint8_t* ring_row(const frame& f, const tensor_view<const T>& in, int window_first,
                                                      int n, int iy) const {
    const bool inside = iy >= 0 && iy < f.image_height;
    if (!inside && f.l.ring_slots.padding_row) return f.pad_row;
    const int slot = ring_slot(iy, f.l.ring_slots);
    std::uint8_t* row = f.ring + static_cast<std::size_t>(slot) * f.ring_stride;
    const int tag = inside ? iy : padding_tag;
    if (f.tags[slot] != tag) {
      if (inside)
        build_row_flipped(in, n, iy - window_first, row, f.pad_pixel, f.expanded, f.l, f.geo.x.pad_before);
      else
        std::memset(row, f.pad_byte, f.l.row_bytes);
      f.tags[slot] = tag;
    }
    return row;
  }

  // One pass: up to tile_h output rows of a phase from oy0, phase_count apart; each row's KH tap-group rows are
  // built (or found in the ring) once, then every channel job runs over the pass's rows.
  [[gnu::always_inline]] void run_pass(const frame& f, const tensor_view<const T>& in, int window_first,
                                       const tensor_view<T>& out, int n, row_band band, int oy0) const {
    const int pass_rows = std::min(tile_h, (band.last - oy0 + phase_count - 1) / phase_count);
    std::array<std::array<const std::uint8_t*, kh>, tile_h> rows{};
    for (int r = 0; r < pass_rows; ++r)
      for (int kr = 0; kr < kh; ++kr)
        rows[r][kr] = ring_row(f, in, window_first, n,
                               (oy0 + r * phase_count) * Cfg.stride.h - f.geo.y.pad_before + kr * Cfg.dilation.h);
    const std::ptrdiff_t out_row_stride =
        pass_rows > 1 ? out.pixel(n, oy0 + phase_count - band.first, 0) - out.pixel(n, oy0 - band.first, 0) : 0;
    for (int b = 0; b * job_channels < f.oc; ++b) {
      const int c0 = b * job_channels;
      std::array<const std::uint8_t*, tile_h * kh> block_rows{};
      for (int r = 0; r < pass_rows; ++r)
        for (int kr = 0; kr < kh; ++kr) block_rows[r * kh + kr] = rows[r][kr] + c0 * detail::dw::group_taps;
      for (int r = 0; r < pass_rows;) {
        const kernels::dw::row_job job =
            job_for(f, b, block_rows.data() + r * kh, out.pixel(n, oy0 + r * phase_count - band.first, 0) + c0,
                    out.pixel_stride(), out_row_stride);
        if (rows_th > 1 && r + rows_th <= pass_rows) {
          if constexpr (rows_th > 1) run_row_tiles<rows_th, rows_tw>(job, f.l.out_w, split_weights_);
          r += rows_th;
        } else {
          run_columns(job, f.l.out_w);
          ++r;
        }
      }
    }
  }

  // The row job of channel job b whose output row starts at `out` (its KH tap-group rows at `rows`).
  [[gnu::always_inline]] kernels::dw::row_job job_for(const frame& f, int b, const std::uint8_t* const* rows, T* out,
                                                      std::ptrdiff_t out_pixel_stride,
                                                      std::ptrdiff_t out_row_stride) const noexcept {
    const int c0 = b * job_channels;
    return {.rows = rows,
            .column_stride = f.column_stride,
            .group_stride = f.group_stride,
            .weights = weights_.data() + static_cast<std::size_t>(b) * kh * groups * job_bytes,
            .bias = bias_.data() + c0,
            .multiplier = mult_.data() + c0,
            .left_shift = left_.data() + c0,
            .right_shift = right_.data() + c0,
            .requant_lanes = requant_lanes_data(c0),
            .requant = requant_,
            .output_zero_point = output_zero_point_,
            .clamp_min = clamp_.min,
            .clamp_max = clamp_.max,
            .split_taps = split_taps_.data(),
            .out = out,
            .out_pixel_stride = out_pixel_stride,
            .out_row_stride = out_row_stride,
            .valid_channels = std::min(job_channels, f.oc - c0),
            .pixels = f.pixels,
            .pixel_width = job_channels / f.pixels,
            .out_width = f.out_width};
  }

  // Output channel ic*M + m reads input channel ic: each of the row's `width` pixels replicated into `expanded`
  // (C*M bytes a pixel), so the row is then built as M = 1. A dense row is one run of channels (every byte
  // repeated M times), so the vector expansion runs over the whole row instead of pixel by pixel.
  void replicate_row(const std::uint8_t* source, std::ptrdiff_t source_stride, int width,
                     std::uint8_t* expanded) const {
    const bool dense = source_stride == channels_;
    const int pixels = dense ? 1 : width;
    const int run = dense ? width * channels_ : channels_;
    for (int ix = 0; ix < pixels; ++ix) {
      const std::uint8_t* px = source + ix * source_stride;
      std::uint8_t* dst = expanded + static_cast<std::ptrdiff_t>(ix) * channels_ * multiplier;
      if constexpr (kernels::dw::replicates_channels<multiplier>) {
        kernels::dw::replicate_channels<multiplier>(px, dst, run);
      } else {
        for (int ic = 0; ic < run; ++ic)
          for (int m = 0; m < multiplier; ++m) dst[ic * multiplier + m] = px[ic];
      }
    }
  }

  // One tap-group row for input row iy: per output column and group, the 4 taps' source pixels
  // (or the pad pixel) interleaved per channel.
  template <std::uint8_t Flip>
  void build_row(const tensor_view<const T>& in, int n, int iy, std::uint8_t* row, const std::uint8_t* pad_pixel,
                 std::uint8_t* expanded, const layout& l, int pad_left) const {
    const int oc = channels_ * multiplier;
    const auto* source = reinterpret_cast<const std::uint8_t*>(in.pixel(n, iy, 0));
    std::ptrdiff_t source_stride = in.pixel_stride();
    if constexpr (multiplier > 1) {
      replicate_row(source, source_stride, in.width(), expanded);
      source = expanded;
      source_stride = oc;
    }
    const std::ptrdiff_t column_bytes = static_cast<std::ptrdiff_t>(l.padded_channels) * detail::dw::group_taps;
    if constexpr (detail::dw::uses_vnni) {
      const int pixels = detail::dw::pixels_per_job(oc);
      if (pixels > 1)
        return build_narrow_row(in, source, source_stride, oc, pixels, row, column_bytes, pad_pixel, l, pad_left, Flip);
    }
    for (int ox = 0; ox < l.out_w; ++ox)
      for (int g = 0; g < groups; ++g) {
        const std::uint8_t* taps[detail::dw::group_taps];
        for (int t = 0; t < detail::dw::group_taps; ++t) {
          const int k = g * detail::dw::group_taps + t;
          const int ix = ox * Cfg.stride.w - pad_left + k * Cfg.dilation.w;
          taps[t] = k < kw && ix >= 0 && ix < in.width() ? source + ix * source_stride : pad_pixel;
        }
        path::interleave(taps, row + (ox * groups + g) * column_bytes, oc, l.padded_channels, Flip);
      }
  }

  // build_row with the layer's flip_ as a compile-time constant (the complement only for uint8 on VNNI).
  void build_row_flipped(const tensor_view<const T>& in, int n, int iy, std::uint8_t* row,
                         const std::uint8_t* pad_pixel, std::uint8_t* expanded, const layout& l, int pad_left) const {
    if constexpr (detail::dw::uses_vnni && !is_int8)
      if (flip_ == complement_flip) return build_row<complement_flip>(in, n, iy, row, pad_pixel, expanded, l, pad_left);
    build_row<default_flip>(in, n, iy, row, pad_pixel, expanded, l, pad_left);
  }

  template <int TW>
  static void run_tiles(const kernels::dw::row_job& job, int& ox, int out_w, bool split) noexcept {
    if constexpr (detail::dw::uses_vnni) {
      run_tile_loop<1, TW>(job, ox, out_w, split);
    } else {
      (void)split;
      for (; ox + TW <= out_w; ox += TW) path::template tile<kh, groups, TW, R, T>(job, ox);
    }
    if constexpr (TW > 1) run_tiles<TW / 2>(job, ox, out_w, split);
  }

  void run_columns(const kernels::dw::row_job& job, int out_w) const noexcept {
    int ox = 0;
    run_tiles<tile_w>(job, ox, out_w, split_weights_);
  }

  // The VNNI path's members (ops/depthwise/layer_avx512_vnni.hpp; declared on every target, only
  // VNNI targets call them): the lane epilogue chosen at load, the narrow layers' tap-group rows
  // (pixels_per_job > 1), single-row tiles and TH-row tiles.
  [[gnu::always_inline]] inline void choose_lane_epilogue(const reference::conv_requant& q, int padded);
  [[gnu::always_inline]] inline void build_narrow_row(const tensor_view<const T>& in, const std::uint8_t* source,
                                                      std::ptrdiff_t source_stride, int oc, int pixels,
                                                      std::uint8_t* row, std::ptrdiff_t column_bytes,
                                                      const std::uint8_t* pad_pixel, const layout& l, int pad_left,
                                                      std::uint8_t flip) const;
  /// TH output rows in tiles of TW columns, then the narrower cascade.
  template <int TH, int TW>
  static void run_row_tiles(const kernels::dw::row_job& job, int out_w, bool split, int ox = 0) noexcept;
  /// Tiles of TH rows and TW columns from column ox while they fit, with split weights or not.
  template <int TH, int TW>
  [[gnu::always_inline]] static inline void run_tile_loop(const kernels::dw::row_job& job, int& ox, int out_w,
                                                          bool split) noexcept;

  /// uint8 weights whose w - filter_zp leave s8 (VNNI): w' = sign * (w - filter_zp) runs as (w' - common) + common,
  /// both parts s8, the common part against the window's x_f (the tile's split_taps). common = 0: no split.
  struct weight_split {
    std::int32_t sign = 1, common = 0;
  };
  static weight_split split_for(const T* filter, std::size_t count, std::int32_t filter_zp) noexcept {
    std::int32_t lo = 255, hi = -255;
    for (std::size_t i = 0; i < count; ++i) {
      const std::int32_t w = static_cast<std::int32_t>(filter[i]) - filter_zp;
      lo = std::min(lo, w), hi = std::max(hi, w);
    }
    if (lo >= -128 && hi <= 127) return {};
    // common in [hi - 127, lo + 128] (never empty: hi - lo <= 255) keeps every w' - common in s8; it must be s8
    // itself, which only hi = 255 (filter_zp 0) prevents: then the negated weights, in [-255, -lo], take it.
    if (hi <= 254) return {1, std::max(hi - 127, -128)};
    return {-1, std::max(-lo - 127, -128)};
  }

  int channels_ = 0;
  bool ready_ = false;
  bool split_weights_ = false;
  std::uint8_t flip_ = default_flip;
  std::int32_t input_zero_point_ = 0, output_zero_point_ = 0;
  clamp_range clamp_{};
  detail::vector<weight_type> weights_;                         // [block][KH][G][16][4]
  detail::vector<std::int32_t> bias_, mult_, left_, right_;     // per padded output channel
  std::array<std::int8_t, groups * block_bytes> split_taps_{};  // [G][16][4] the split's common part, taps < KW
  kernels::requant_epilogue requant_ = kernels::requant_epilogue::general;
  [[no_unique_address]] detail::dw::layer_lanes<path> lanes_;
  const void* requant_lanes_data(int c0) const noexcept { return lanes_.at(c0); }
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

// The target's members of depthwise, defined out of class (they need the class above); the file has
// code only for its target.
#include "mosaiq/ops/depthwise/layer_avx512_vnni.hpp"
