// Quantized pointwise (1x1, stride 1) convolution, specialized at compile time for the output
// channel count, the register tile, activation and rounding:
//
//   mosaiq::pointwise<{.out_channels = 64}, mosaiq::u8> pw(
//       filter /*[Cout][Cin]*/, bias /*Cout or nullptr*/, input_channels, requant);  // load time: packs, may allocate
//   std::vector<std::byte> scratch(pw.workspace_bytes(input.dims()));               // or a slice of a static arena
//   pw(input, output, scratch);                                                     // run: no heap
//
// Results equal reference::pointwise_conv bit for bit (TFLite reference semantics: uint8 per-tensor
// weights with a zero point, int8 per-channel symmetric weights).
//
// Design. A 1x1 convolution is a GEMM: pixels (batch * height * width, equally spaced where the
// view's images follow each other; a row band of a batch runs image by image) times a [Cin][Cout] matrix. Everything
// runs in a "folded" domain chosen by the ISA: x_d = x ^ flip is the byte the dot-product instruction wants (unsigned
// for x86 vpdpbusd and vpmaddwd, signed for NEON sdot/smull), so x - input_zp = x_d + offset - input_zp with a
// compile-time offset of 0 or +-128, and w' = w - filter_zp. Then
//   acc = bias + (offset - input_zp) * sum(w') + sum(x_d * w')
// and the first two terms are folded into one bias per output channel at load time. Where w'
// must fit int8 (VNNI, NEON) but a uint8 filter's w - filter_zp does not, w' is split into
// (w - 128) + (128 - filter_zp): the second part times sum(x_d) is one offset per pixel, computed
// once per pixel and shared by every output channel.
//
// Weights are packed once per ISA into blocks of 16 output channels x 4 consecutive input channels
// ("k group"; one zmm is exactly a vpdpbusd operand), zero-padded to whole blocks and groups. At
// run time a block of pixels is copied into the workspace as flipped rows padded to whole k groups
// (this is what lets the hot loop read 4 input bytes at a time without touching bytes outside the
// view, and what makes its layout independent of the view's pixel stride). The microkernel then
// computes a tile of `tile.pixels` pixels x `tile.channels` channels: per k group it loads the
// tile's weight vectors, broadcasts 4 input bytes per pixel and issues pixels x blocks dot products
// into register accumulators, then requantizes with per-channel vectors and stores with masks.
// Pixel tails run a compile-time cascade of smaller pixel tiles (tile/2, tile/4, ..., 1); the
// channel tail is one compile-time tile of the remaining blocks.
//
// Microkernels per build: AVX-512 VNNI (vpdpbusd zmm, 8x48 or 6x64 tiles chosen per layer),
// AVX-VNNI (-mavxvnni without AVX-512: VEX vpdpbusd on ymm, 6x16 tiles), AVX2 and AVX-512 without
// VNNI (vpmaddwd on int16), NEON (sdot, or smull/sadalp), scalar. The AVX-512 VNNI epilogue
// requantizes with simd::avx512::requant_lanes (one 64-bit product per lane, the zero point folded
// into its offsets when no activation clamps) wherever the scales allow; load() decides
// (kernels::requant_epilogue). u8 inputs whose channels fill whole k groups are read in place, split
// weights' pixel offsets then summed from them 16 rows at a time (vnni_path::row_sums).
// Layers of at most 4 output channels (class-score heads) take a narrow kernel on AVX-512 VNNI
// instead (kernels::pw::narrow_tile): 16 pixels per vector, one accumulator per channel, rows read
// in place through a 4x4 dword transpose of 16-byte row chunks; 64x64 32->2 8.6 -> 3.4 us.
//
// The block loop takes its rows from a "row source" template argument (detail::pw::pixel_rows
// here: the input pixels); ops/conv.hpp runs the same loop on patches it gathers per block, so a
// KxK convolution is this GEMM with K = KH * KW * Cin and no im2col buffer.
//
// AMX. In the x86-64 Linux AVX-512 VNNI build (simd/amx.hpp: MOSAIQ_HAS_AMX_PATH) a layer loaded
// while simd::amx::enabled() (the CPU has AMX-TILE/AMX-INT8 and Linux granted the tile state) runs
// tile GEMMs instead: uses_amx() says which. Its weights are packed per block of 16 channels as
// [k group][16][4] over K zero-padded to a multiple of 64, so a B tile (16 k groups) is 1 KB at
// stride 64; input rows are packed as above but padded to 64 bytes, unflipped (tdpbusd multiplies
// u8 inputs, tdpbssd i8 inputs, both with int8 w'), so the folded bias uses offset 0. Each register
// tile is 32 pixels x 32 channels (2 A x 2 B tiles into 4 int32 C tiles), stored to one of two
// 4 KB buffers and requantized, while the tile unit computes the next tile, with the VNNI path's
// AVX-512 epilogue (bias, split-weight pixel offsets, multiplier and shifts, zero point, clamp) -
// equal bit for bit. Pixel tails compute a whole
// 16- or 32-row tile (the workspace block is a multiple of 32 rows; rows past the block's end are
// not stored), the channel tail is one 16-channel block, padded with zero weights and masked stores.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/ops/pointwise/avx2.hpp"
#include "mosaiq/ops/pointwise/avx2_vnni.hpp"
#include "mosaiq/ops/pointwise/avx512_vnni.hpp"
#include "mosaiq/ops/pointwise/neon.hpp"
#include "mosaiq/ops/pointwise/scalar.hpp"
#include "mosaiq/ops/pointwise/tile.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/simd/amx.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/epilogue.hpp"
#include "mosaiq/simd/gemm_x86.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of one pointwise layer.
struct pointwise_config {
  int out_channels = 0;
  pointwise_tile tile{};
  /// Fused activation used by the constructor that derives the requantization from scales.
  activation act = activation::none;
  rounding round = rounding::tflite_reference;
  /// Bound on the packed input rows of one pixel block, the bulk of workspace_bytes (0: the speed
  /// default, detail::pw::input_block_bytes); at least one register tile of pixels is packed. Smaller
  /// blocks trade speed for memory; they change how pixels are walked, never the results.
  std::size_t block_bytes = 0;
  friend constexpr bool operator==(const pointwise_config&, const pointwise_config&) = default;
};

namespace detail::pw {

// Packed input rows of one pixel block stay within this many bytes (L2-resident); each channel
// tile then reuses its weights across the whole block.
inline constexpr std::size_t input_block_bytes = 64 * 1024;
inline constexpr int max_block_pixels = 4096;

/// Where the GEMM's rows come from. A row source packs rows [first, first + count) of the GEMM
/// (row r = output pixel r, images one after another) into `rows`, `padded` elements apart, with
/// Path::pack_row (x ^ flip, zero padding), and when Sum stores factor * sum(x_d) of row i in
/// sums[i] (the split-weight offset). The pointwise layer's source is its input pixels; ops/conv.hpp
/// gathers patches. Sources are template arguments, so the pointwise path inlines to the plain loop.
struct pixel_rows {
  const std::uint8_t* base;  // first input pixel
  std::ptrdiff_t stride;     // elements between input pixels
  int channels;

  template <class Path, bool Sum>
  [[gnu::always_inline]] void pack(std::ptrdiff_t first, int count, typename Path::input_type* rows, int padded,
                                   std::uint8_t flip, std::int32_t* sums, std::int32_t factor) const noexcept {
    if constexpr (!Sum) {
      // Dense pixels that need no padding are one run: pack it as a single row (pack_row maps each
      // element on its own), not pixel by pixel. Narrow layers (K = 32 int8) spent more time in the
      // per-pixel calls and tail masks than in copying.
      if (stride == channels && channels == padded) {
        Path::template pack_row<false>(base + first * stride, count * channels, rows, count * padded, flip);
        return;
      }
    }
    for (int i = 0; i < count; ++i) {
      const std::int32_t sum = Path::template pack_row<Sum>(
          base + (first + i) * stride, channels, rows + static_cast<std::ptrdiff_t>(i) * padded, padded, flip);
      if constexpr (Sum) sums[i] = factor * sum;
    }
  }
};

/// Lets the other GEMM-based kernels (ops/conv.hpp) run a loaded pointwise layer on their own rows.
struct rows_access;

/// A path whose default tile depends on the layer's output channels (Path::tile_for).
template <class Path>
concept picks_tile_per_layer = requires {
  { Path::tile_for(1) } -> std::same_as<pointwise_tile>;
};

/// Whether Path's tile takes a Quads argument: the 4-channel quads of each block it computes,
/// fewer than 4 for layers of one block.
template <class Path>
inline constexpr bool computes_quads = requires {
  requires Path::quad_tiles;
};

/// Whether Path sums rows read in place (Path::row_sums: the split-weight pixel offsets without a packed copy).
template <class Path>
concept sums_rows = requires(const std::uint8_t* rows, std::int32_t* sums) {
  Path::row_sums(rows, std::ptrdiff_t{1}, 1, 1, std::int32_t{1}, sums);
};

/// Path::row_sums where Path has it (only layers of such paths call this).
template <class Path>
void row_sums(const std::uint8_t* rows, std::ptrdiff_t stride, int channels, int count, std::int32_t factor,
              std::int32_t* sums) noexcept {
  if constexpr (sums_rows<Path>) Path::row_sums(rows, stride, channels, count, factor, sums);
}

/// Whether Path's layers run AMX tiles (ops/pointwise/amx.hpp) where simd::amx::enabled() at load.
template <class Path>
inline constexpr bool runs_amx = requires {
  requires Path::amx_tiles;
};

/// The tile a layer of `out_channels` gets when its config names none.
template <class Path>
constexpr pointwise_tile default_tile(int out_channels) noexcept {
  if constexpr (picks_tile_per_layer<Path>)
    return Path::tile_for(out_channels);
  else
    return Path::default_tile;
}

// The best path this target builds (every target builds the scalar one).
using native_path = simd::native_path_of<kernels::pw::path_for>;

/// A path's per-layer lane constants (Path::layer_lanes: the requantization lanes its tiles read), the
/// first base of pointwise; an empty base for paths without.
struct no_layer_lanes {};
template <class Path>
using layer_lanes = typename detail::kernel::layer_lanes_of<Path, no_layer_lanes>::type;

/// Whether Path's tile and AMX epilogues can requantize with per-block lanes (simd::avx512::requant_lanes).
template <class Path>
inline constexpr bool has_lane_epilogues = requires {
  requires Path::lane_epilogues;
};

/// Whether Path's layers keep AVX2 lanes8 (simd::avx2::requant_lanes8 per 8 channels, chosen at load).
template <class Path>
inline constexpr bool has_lanes8 = requires(layer_lanes<Path>& lanes) {
  lanes.lanes8_;
};

}  // namespace detail::pw

/// Pointwise convolution layer for one compile-time config and element type. Construct once
/// (packs the weights), then call on any input size; see the file comment for the design.
template <pointwise_config Cfg, quantized_element T>
class pointwise : private detail::pw::layer_lanes<detail::pw::native_path> {
  using path = detail::pw::native_path;
  using weight_type = typename path::weight_type;
  using input_type = typename path::input_type;

  static constexpr pointwise_tile path_tile = detail::pw::default_tile<path>(Cfg.out_channels);
  static constexpr int tile_pixels = Cfg.tile.pixels > 0 ? Cfg.tile.pixels : path_tile.pixels;
  static constexpr int tile_channels = Cfg.tile.channels > 0 ? Cfg.tile.channels : path_tile.channels;

  static_assert(Cfg.out_channels >= 1, "pointwise: set .out_channels (at least 1)");
  static_assert(Cfg.out_channels <= (1 << 20), "pointwise: out_channels above 2^20 is not supported");
  static_assert(Cfg.tile.pixels >= 0 && tile_pixels <= 16, "pointwise: tile.pixels must be 0 (default) or 1..16");
  static_assert(Cfg.tile.channels >= 0 && tile_channels % kernels::pw::block == 0 && tile_channels <= 128,
                "pointwise: tile.channels must be 0 (default) or a multiple of 16 up to 128");

  static constexpr int out_channels = Cfg.out_channels;
  static constexpr int blocks = (out_channels + kernels::pw::block - 1) / kernels::pw::block;
  static constexpr int padded_channels = blocks * kernels::pw::block;
  static constexpr int tile_blocks = std::min(tile_channels / kernels::pw::block, blocks);
  static constexpr int full_tiles = blocks / tile_blocks;
  static constexpr int tail_blocks = blocks % tile_blocks;  // one last, narrower channel tile
  // Paths whose tile takes a quad count (AVX2) compute only the 4-channel quads of the last block that hold output
  // channels when tiles are one block wide: a 24-channel layer computes 24 channels, not 32.
  static constexpr int last_quads = (out_channels - (blocks - 1) * kernels::pw::block + 3) / 4;
  static constexpr bool narrow_last_block = detail::pw::computes_quads<path> && tile_blocks == 1 && last_quads < 4;
  static constexpr bool is_int8 = std::same_as<T, i8>;
  // x_d = x ^ flip is the byte the path multiplies; x - input_zp = x_d + input_offset - input_zp.
  static constexpr std::uint8_t flip = is_int8 != path::signed_input ? 0x80 : 0x00;
  static constexpr std::int32_t input_offset = path::signed_input ? (is_int8 ? 0 : 128) : (is_int8 ? -128 : 0);
  // int8 weights hold w - filter_zp of a uint8 filter only sometimes; int16 weights always.
  static constexpr bool may_split = std::same_as<weight_type, std::int8_t> && !is_int8;
  static constexpr rounding R = Cfg.round;
  // The AMX path exists in this build (it runs only where simd::amx::enabled() at load).
  static constexpr bool amx_compiled = detail::pw::runs_amx<path>;
  static constexpr int amx_rows = 32;  // pixels per AMX register tile (and per workspace block unit)
  // The AMX and VNNI epilogues' requantization (kernels::requant_epilogue), chosen at load.
  using lane_requant = kernels::requant_epilogue;
  // The VNNI tile (and the AMX epilogue) can requantize with simd::avx512::requant_lanes.
  static constexpr bool lane_epilogues = detail::pw::has_lane_epilogues<path>;
  // Split weights' pixel offsets can come from input rows read in place (Path::row_sums).
  static constexpr bool sums_in_place = detail::pw::sums_rows<path>;

  // At most 4 output channels: the VNNI path's narrow kernel (16 pixels per vector, see
  // kernels::pw::narrow_tile) instead of 16-channel tiles; AMX layers keep their tiles.
  static constexpr bool narrow = lane_epilogues && out_channels <= 4;

  friend struct detail::pw::rows_access;

 public:
  static constexpr pointwise_config config = Cfg;
  using element_type = T;

  /// `filter` [Cout][Cin] (TFLite layout), `bias` Cout entries or nullptr, `q` built by
  /// reference::make_conv_requant for the same rounding and element type (its clamp is used).
  pointwise(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    load(filter, bias, input_channels, q);
  }

  /// Derives the requantization from scales as TFLite does, with the config's activation.
  pointwise(const T* filter, const std::int32_t* bias, int input_channels, quant_params input,
            std::span<const float> filter_scales, std::int32_t filter_zero_point, quant_params output) {
    load(filter, bias, input_channels,
         reference::make_conv_requant<Cfg.round, T>(input, filter_scales, filter_zero_point, output, Cfg.act));
  }

  int input_channels() const noexcept { return channels_; }
  static constexpr int output_channels() noexcept { return out_channels; }

  /// The register tile this instantiation runs (the config's, or the ISA default); an AMX layer
  /// (uses_amx()) runs 32 x 32 tiles instead.
  static constexpr pointwise_tile tile() noexcept { return {tile_pixels, tile_blocks * kernels::pw::block}; }

  /// Whether this layer runs the AMX tile path (chosen at load: simd::amx::enabled() then).
  bool uses_amx() const noexcept { return amx_; }

  static constexpr shape output_shape(shape in) noexcept { return {in.height, in.width, out_channels}; }

  /// Scratch bytes a run on `in` needs (any alignment; the run aligns inside it).
  static constexpr std::size_t workspace_bytes(shape in) noexcept {
    // Enough for either path: which one runs is known at load time only.
    if constexpr (amx_compiled)
      return std::max(layout_for(in.channels, in.pixels()).total, layout_for(in.channels, in.pixels(), true).total);
    return layout_for(in.channels, in.pixels()).total;
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
    if (!require(band.first >= 0 && band.first <= band.last && band.last <= in.height() && out.height() == in.height(),
                 errc::invalid_argument, "pointwise: row band outside the output"))
      return;
    // Pixels are independent: the band is a pointwise layer on the band's rows.
    run(in.row_slice(band.first, band.rows()), out.row_slice(band.first, band.rows()), workspace);
  }

 private:
  struct layout {
    int k_groups = 0, block_pixels = 0;
    std::size_t row_elements = 0;  // packed input row: k_groups * 4
    std::size_t input = 0, offsets = 0, total = 0;
  };

  /// `amx`: the AMX path's layout (rows padded to 64 bytes, blocks of whole 32-row tiles).
  static constexpr layout layout_for(int input_channels, std::size_t pixels, bool amx = false) noexcept {
    using detail::kernel::align, detail::kernel::round_up;
    layout l;
    const int k_align = amx ? 64 : kernels::pw::group;
    const int unit = amx ? amx_rows : tile_pixels;
    l.k_groups = (std::max(input_channels, 1) + k_align - 1) / k_align * (k_align / kernels::pw::group);
    l.row_elements = static_cast<std::size_t>(l.k_groups) * kernels::pw::group;
    const std::size_t row_bytes = l.row_elements * sizeof(input_type);
    constexpr std::size_t block_bytes = Cfg.block_bytes > 0 ? Cfg.block_bytes : detail::pw::input_block_bytes;
    const std::size_t fit = std::max<std::size_t>(block_bytes / row_bytes / unit, 1);
    const std::size_t tiles = std::min(
        {fit, std::size_t(detail::pw::max_block_pixels / unit), std::max<std::size_t>((pixels + unit - 1) / unit, 1)});
    l.block_pixels = static_cast<int>(tiles) * unit;
    std::size_t at = 0;
    l.input = at;
    at += round_up(static_cast<std::size_t>(l.block_pixels) * row_bytes, align);
    l.offsets = at;
    at += round_up(static_cast<std::size_t>(l.block_pixels) * sizeof(std::int32_t), align);
    l.total = at + align;  // slack to align the caller's pointer
    return l;
  }

  /// Rows per Rows::pack call of either path (what a row source's own staging must hold).
  static constexpr int any_block_pixels(int input_channels, std::size_t pixels) noexcept {
    if constexpr (amx_compiled)
      return std::max(layout_for(input_channels, pixels).block_pixels,
                      layout_for(input_channels, pixels, true).block_pixels);
    return layout_for(input_channels, pixels).block_pixels;
  }

  void load(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    if (!require(input_channels >= 1, errc::invalid_argument, "pointwise: input_channels must be at least 1") ||
        !require(filter != nullptr, errc::null_pointer, "pointwise: filter is null") ||
        !reference::check_conv_requant<Cfg.round, T>(q, out_channels))
      return;
    channels_ = input_channels;
    const std::int32_t filter_zp = q.filter_zero_point;

    split_weights_ = false;
    if constexpr (may_split)
      split_weights_ = detail::kernel::needs_split_weights(
          filter, static_cast<std::size_t>(out_channels) * input_channels, filter_zp);

    amx_ = false;
    if constexpr (amx_compiled) amx_ = simd::amx::enabled();
    allocate_packed(input_channels);
    // AMX multiplies unflipped bytes: u8 inputs with tdpbusd, i8 inputs with tdpbssd (offset 0).
    const std::int32_t offset = amx_ ? 0 : input_offset;
    for (int c = 0; c < out_channels; ++c) pack_channel(c, filter, bias, input_channels, q, offset);
    requant_ = lane_requant::general;
    if constexpr (lane_epilogues || amx_compiled) {
      if (lane_epilogues || amx_) choose_lane_epilogue(q);
    }
    if constexpr (detail::pw::has_lanes8<path>) choose_lanes8(input_channels);
    output_zero_point_ = q.output_zero_point;
    clamp_ = q.clamp;
    split_factor_ = 128 - filter_zp;
    ready_ = true;
  }

  /// Sizes the packed weights (the AMX or the tile layout, as amx_ says) and per-channel arrays.
  void allocate_packed(int input_channels) {
    if (amx_) {
      weights_.clear();
      const int amx_k_groups = layout_for(input_channels, 1, true).k_groups;
      amx_weights_.assign(static_cast<std::size_t>(blocks) * amx_k_groups * kernels::pw::block_elements, 0);
    } else {
      amx_weights_.clear();
      // The narrow kernel reads whole chunks of 4 k groups (zero weights past the last group).
      const int k_groups = layout_for(input_channels, 1).k_groups;
      const int stored_groups = narrow ? (k_groups + 3) / 4 * 4 : k_groups;
      weights_.assign(static_cast<std::size_t>(blocks) * stored_groups * kernels::pw::block_elements, weight_type{0});
    }
    bias_.assign(padded_channels, 0);
    mult_.assign(padded_channels, 0);
    left_.assign(padded_channels, 0);
    right_.assign(padded_channels, R == rounding::single_round ? 1 : 0);  // a valid shift for padding lanes
  }

  /// Output channel c: its weights w' into the packed layout, its folded bias (input `offset` of the
  /// path's x_d) and its requantization scale.
  void pack_channel(int c, const T* filter, const std::int32_t* bias, int input_channels,
                    const reference::conv_requant& q, std::int32_t offset) {
    const int k_groups = layout_for(input_channels, 1).k_groups;
    const int amx_k_groups = layout_for(input_channels, 1, true).k_groups;
    const std::int32_t filter_zp = q.filter_zero_point;
    // Channel c sits in block b of a channel tile of `nb` blocks starting at block `first`.
    const int b = c / kernels::pw::block, lane = c % kernels::pw::block;
    const int tile_index = b / tile_blocks, first = tile_index * tile_blocks;
    const int nb = tile_index < full_tiles ? tile_blocks : tail_blocks;
    weight_type* tile_weights =
        amx_ ? nullptr : weights_.data() + static_cast<std::size_t>(first) * k_groups * kernels::pw::block_elements;
    std::int64_t weight_sum = 0;
    for (int k = 0; k < input_channels; ++k) {
      const std::int32_t raw = filter[static_cast<std::size_t>(c) * input_channels + k];
      weight_sum += raw - filter_zp;
      const int g = k / kernels::pw::group, t = k % kernels::pw::group;
      const std::int32_t w = split_weights_ ? raw - 128 : raw - filter_zp;
      if (amx_) {
        // Block b's panel [k group][16][4]: B tile s is k groups 16s..16s+15, 64 bytes apart.
        amx_weights_[(static_cast<std::size_t>(b) * amx_k_groups + g) * kernels::pw::block_elements +
                     static_cast<std::size_t>(lane) * kernels::pw::group + t] = static_cast<std::int8_t>(w);
      } else {
        tile_weights[(static_cast<std::size_t>(g) * nb + (b - first)) * kernels::pw::block_elements +
                     static_cast<std::size_t>(lane) * kernels::pw::group + t] = static_cast<weight_type>(w);
      }
    }
    // Wrapping int32 arithmetic, like the accumulators.
    const std::int64_t folded = (bias ? bias[c] : 0) + (offset - q.input_zero_point) * weight_sum;
    bias_[c] = static_cast<std::int32_t>(static_cast<std::uint32_t>(folded));
    const requant_scale s = q.scale_for(c);
    mult_[c] = s.multiplier, left_[c] = s.left_shift, right_[c] = s.right_shift;
  }

  // The target's lane constants (ops/pointwise/layer_avx2.hpp, layer_avx512_vnni.hpp define these where they exist).
  void choose_lanes8(int input_channels);
  void choose_lane_epilogue(const reference::conv_requant& q);
  void run(tensor_view<const T> in, tensor_view<T> out, std::span<std::byte> workspace) const {
    if (!require(ready_, errc::invalid_argument, "pointwise: layer was not loaded (construction reported an error)") ||
        !check_view(in, "pointwise: invalid input view") || !check_view(out, "pointwise: invalid output view"))
      return;
    if (!require(in.channels() == channels_, errc::shape_mismatch,
                 "pointwise: input channels differ from the weights") ||
        !require(out.dims() == output_shape(in.dims()), errc::shape_mismatch,
                 "pointwise: output extents differ from output_shape(input)") ||
        !require(out.batch() == in.batch(), errc::shape_mismatch, "pointwise: input and output batch differ") ||
        !require(workspace.size() >= workspace_bytes(in.dims()), errc::invalid_argument,
                 "pointwise: workspace smaller than workspace_bytes(input)"))
      return;
    if (!in.images_follow() || !out.images_follow()) return run_each_image(in, out, workspace);
    const std::ptrdiff_t pixels = static_cast<std::ptrdiff_t>(in.batch()) * in.height() * in.width();
    if (pixels == 0) return;
    const detail::pw::pixel_rows rows{reinterpret_cast<const std::uint8_t*>(in.pixel(0, 0, 0)), in.pixel_stride(),
                                      channels_};
    run_rows(rows, pixels, in.dims().pixels(), out.pixel(0, 0, 0), out.pixel_stride(),
             detail::kernel::aligned_workspace(workspace));
  }

  /// Row bands of a batch leave gaps between images: one image at a time. Out of line and cold, so that run's own
  /// code stays as without this case.
  [[gnu::noinline, gnu::cold]] void run_each_image(tensor_view<const T> in, tensor_view<T> out,
                                                   std::span<std::byte> workspace) const {
    for (int n = 0; n < in.batch(); ++n) run(in.image(n), out.image(n), workspace);
  }

  /// The GEMM over `pixels` rows from `rows` (see detail::pw::pixel_rows), `image_pixels` per image
  /// (sizes the pixel block as workspace_bytes did), output row r at destination + r * out_stride.
  /// `base`: the aligned workspace, layout_for(channels_, image_pixels). Checks are the caller's.
  /// Never inlined: inlined into conv2d's run, GCC 12 kept the VNNI tile's accumulators in memory.
  template <class Rows>
  [[gnu::noinline]] void run_rows(const Rows& rows, std::ptrdiff_t pixels, std::size_t image_pixels, T* destination,
                                  std::ptrdiff_t out_stride, std::uint8_t* base) const noexcept {
    if constexpr (amx_compiled) {
      if (amx_) {
        run_rows_amx(rows, pixels, image_pixels, destination, out_stride, base);
        return;
      }
    }
    if constexpr (narrow && std::same_as<Rows, detail::pw::pixel_rows>) {
      // The narrow kernel reads the input in place (no packed copy, no workspace).
      run_narrow_in_place(rows, pixels, destination, out_stride);
      return;
    }
    const layout l = layout_for(channels_, image_pixels);
    auto* const packed = reinterpret_cast<input_type*>(base + l.input);
    auto* const pixel_offsets = reinterpret_cast<std::int32_t*>(base + l.offsets);
    const int padded = static_cast<int>(l.row_elements);

    kernels::pw::tile_job job{.input = packed,
                              .input_stride = static_cast<std::ptrdiff_t>(l.row_elements),
                              .k_groups = l.k_groups,
                              .weights = nullptr,
                              .bias = nullptr,
                              .multiplier = nullptr,
                              .left_shift = nullptr,
                              .right_shift = nullptr,
                              .pixel_offset = pixel_offsets,
                              .split = split_weights_,
                              .output_zero_point = output_zero_point_,
                              .clamp_min = clamp_.min,
                              .clamp_max = clamp_.max,
                              .out = nullptr,
                              .out_stride = out_stride,
                              .valid_channels = 0};
    // Input pixels the tile can read as they are (bytes it wants, whole k groups; split-weight sums
    // where the path computes them from rows in place): skip the packed copy, which took 2.4% of a
    // 28x28x256 layer.
    const std::uint8_t* direct = nullptr;
    if constexpr (std::same_as<Rows, detail::pw::pixel_rows> && std::same_as<input_type, std::uint8_t> && flip == 0) {
      if ((!split_weights_ || sums_in_place) && rows.channels % kernels::pw::group == 0) {
        direct = rows.base;
        job.input_stride = rows.stride;
      }
    }
    // Without split weights every pixel offset is 0 (the VNNI tile skips them; the others add them).
    if (!split_weights_) std::fill_n(pixel_offsets, l.block_pixels, 0);
    for (std::ptrdiff_t p0 = 0; p0 < pixels; p0 += l.block_pixels) {
      const int block_pixels = static_cast<int>(std::min<std::ptrdiff_t>(l.block_pixels, pixels - p0));
      if (direct) {
        job.input = direct + p0 * job.input_stride;
        if constexpr (sums_in_place) {
          if (split_weights_)
            detail::pw::row_sums<path>(direct + p0 * job.input_stride, job.input_stride, rows.channels, block_pixels,
                                       split_factor_, pixel_offsets);
        }
      } else if (split_weights_) {
        rows.template pack<path, true>(p0, block_pixels, packed, padded, flip, pixel_offsets, split_factor_);
      } else {
        rows.template pack<path, false>(p0, block_pixels, packed, padded, flip, pixel_offsets, 0);
      }
      T* const block_out = destination + p0 * out_stride;
      // An explicit switch: dispatching through a generic lambda doubled the time of the 1x1
      // layers (GCC 12 then reloads the job's fields around every tile).
      if constexpr (lane_epilogues) {
        switch (requant_) {
          case lane_requant::lanes_folded:
            run_channel_tiles<lane_requant::lanes_folded>(job, block_out, block_pixels);
            break;
          case lane_requant::lanes_folded_sign_free:
            run_channel_tiles<lane_requant::lanes_folded_sign_free>(job, block_out, block_pixels);
            break;
          case lane_requant::lanes:
            run_channel_tiles<lane_requant::lanes>(job, block_out, block_pixels);
            break;
          case lane_requant::lanes_left:
            run_channel_tiles<lane_requant::lanes_left>(job, block_out, block_pixels);
            break;
          default:
            run_channel_tiles<lane_requant::general>(job, block_out, block_pixels);
        }
      } else {
        run_channel_tiles<lane_requant::general>(job, block_out, block_pixels);
      }
    }
  }

  template <lane_requant Q>
  void run_channel_tiles(const kernels::pw::tile_job& job, T* block_out, int block_pixels) const noexcept {
    if constexpr (narrow) {
      run_narrow<Q>(narrow_job_for(static_cast<const std::uint8_t*>(job.input), job.input_stride, false,
                                   job.pixel_offset, block_out, job.out_stride),
                    block_pixels);
      return;
    }
    constexpr int plain_tiles = narrow_last_block ? full_tiles - 1 : full_tiles;
    for (int t = 0; t < plain_tiles; ++t)
      run_channel_tile<tile_blocks, Q>(job, t * tile_blocks, block_out, block_pixels);
    if constexpr (narrow_last_block) run_channel_tile<1, Q, last_quads>(job, blocks - 1, block_out, block_pixels);
    if constexpr (tail_blocks > 0)
      run_channel_tile<tail_blocks, Q>(job, full_tiles * tile_blocks, block_out, block_pixels);
  }

  template <int NB, lane_requant Q, int Quads = 4>
  void run_channel_tile(kernels::pw::tile_job job, int first_block, T* block_out, int block_pixels) const noexcept {
    const int c0 = first_block * kernels::pw::block;
    job.weights = weights_.data() + static_cast<std::size_t>(first_block) * job.k_groups * kernels::pw::block_elements;
    job.bias = bias_.data() + c0;
    job.multiplier = mult_.data() + c0;
    job.left_shift = left_.data() + c0;
    job.right_shift = right_.data() + c0;
    job.out = block_out + c0;
    job.valid_channels = std::min(NB * kernels::pw::block, out_channels - c0);
    if constexpr (Q != lane_requant::general) job.lanes = this->lanes_.data() + first_block;
    if constexpr (detail::pw::has_lanes8<path>) {
      if (!this->lanes8_.empty()) job.lanes8 = this->lanes8_.data() + c0 / 8;
    }
    int p = 0;
    run_pixel_tiles<tile_pixels, NB, Q, Quads>(job, p, block_pixels);
  }

  // The VNNI path's narrow kernel (ops/pointwise/layer_avx512_vnni.hpp; only narrow layers call these).
  kernels::pw::narrow_job narrow_job_for(const std::uint8_t* input, std::ptrdiff_t input_stride, bool in_place,
                                         const std::int32_t* pixel_offsets, T* out, std::ptrdiff_t out_stride) const;
  template <class Rows>
  void run_narrow_in_place(const Rows& rows, std::ptrdiff_t pixels, T* destination,
                           std::ptrdiff_t out_stride) const noexcept;
  template <lane_requant Q>
  static void run_narrow(kernels::pw::narrow_job job, std::ptrdiff_t pixels) noexcept;

  template <int MR, int NB, lane_requant Q, int Quads>
  static void run_pixel_tiles(kernels::pw::tile_job& job, int& p, int block_pixels) noexcept {
    const auto* packed = static_cast<const input_type*>(job.input);
    const std::int32_t* offsets = job.pixel_offset;
    T* const out = static_cast<T*>(job.out);
    for (; p + MR <= block_pixels; p += MR) {
      kernels::pw::tile_job tile = job;
      tile.input = packed + p * job.input_stride;
      tile.pixel_offset = offsets + p;
      tile.out = out + p * job.out_stride;
      if constexpr (Q != lane_requant::general)
        path::template tile<MR, NB, R, T, Q>(tile);
      else if constexpr (Quads < 4)
        path::template tile<MR, NB, R, T, Quads>(tile);
      else
        path::template tile<MR, NB, R, T>(tile);
    }
    if constexpr (MR > 1) run_pixel_tiles<MR / 2, NB, Q, Quads>(job, p, block_pixels);
  }

  // The AMX path (ops/pointwise/amx.hpp defines these where MOSAIQ_HAS_AMX_PATH; only amx_compiled layers call them).
  template <class Rows>
  void run_rows_amx(const Rows& rows, std::ptrdiff_t pixels, std::size_t image_pixels, T* destination,
                    std::ptrdiff_t out_stride, std::uint8_t* base) const noexcept;
  template <lane_requant Q>
  void run_amx_block_pairs(const input_type* packed, int padded, const std::int32_t* pixel_offsets, int block_pixels,
                           T* block_out, std::ptrdiff_t out_stride, std::int32_t* c) const noexcept;
  template <int NB, lane_requant Q>
  void run_amx_blocks(int first_block, const input_type* packed, int padded, const std::int32_t* pixel_offsets,
                      int block_pixels, T* block_out, std::ptrdiff_t out_stride, std::int32_t* c) const noexcept;
  template <int NB, lane_requant Q>
  [[gnu::always_inline]] void requantize_amx(const std::int32_t* c, int rows, const std::int32_t* pixel_offset, int c0,
                                             T* out, std::ptrdiff_t out_stride) const noexcept;

  int channels_ = 0;
  bool ready_ = false;
  bool amx_ = false;
  lane_requant requant_ = lane_requant::general;
  bool split_weights_ = false;
  std::int32_t output_zero_point_ = 0, split_factor_ = 0;
  clamp_range clamp_{};
  detail::vector<weight_type> weights_;                      // per channel tile: [k group][block][16][4]
  detail::vector<std::int8_t> amx_weights_;                  // AMX layers: per block [k group (K padded to 64)][16][4]
  detail::vector<std::int32_t> bias_, mult_, left_, right_;  // per padded output channel
};

namespace detail::pw {
struct rows_access {
  /// Whether the layer loaded (its constructor reported no error).
  template <class Layer>
  static bool ready(const Layer& layer) noexcept {
    return layer.ready_;
  }
  /// Rows per block (per Rows::pack call) of a run with `image_pixels` rows per image.
  template <class Layer>
  static constexpr int block_pixels(int channels, std::size_t image_pixels) noexcept {
    return Layer::any_block_pixels(channels, image_pixels);
  }
  template <class Layer, class Rows>
  static void run(const Layer& layer, const Rows& rows, std::ptrdiff_t pixels, std::size_t image_pixels,
                  typename Layer::element_type* destination, std::ptrdiff_t out_stride, std::uint8_t* base) noexcept {
    layer.run_rows(rows, pixels, image_pixels, destination, out_stride, base);
  }
};
}  // namespace detail::pw

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

// The target's members of pointwise, defined out of class (they need the class above); each file has
// code only for its target.
#include "mosaiq/ops/pointwise/amx.hpp"
#include "mosaiq/ops/pointwise/layer_avx2.hpp"
#include "mosaiq/ops/pointwise/layer_avx512_vnni.hpp"
