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
// Design. A 1x1 convolution is a GEMM: pixels (batch * height * width, equally spaced in any
// tensor_view) times a [Cin][Cout] matrix. Everything runs in a "folded" domain chosen by the ISA:
// x_d = x ^ flip is the byte the dot-product instruction wants (unsigned for x86 vpdpbusd and
// vpmaddwd, signed for NEON sdot/smull), so x - input_zp = x_d + offset - input_zp with a
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
// (detail::pw::epilogue_kind). u8 inputs whose channels fill whole k groups are read in place.
// Layers of at most 4 output channels (class-score heads) take a narrow kernel on AVX-512 VNNI
// instead (detail::pw::narrow_tile): 16 pixels per vector, one accumulator per channel, rows read
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
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/simd/amx.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/gemm_x86.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/x86.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Register tile of the pointwise microkernel; 0 picks the default of the ISA compiled for.
struct pointwise_tile {
  int pixels = 0;    ///< output pixels per tile (rows of the GEMM)
  int channels = 0;  ///< output channels per tile, a multiple of 16
  friend constexpr bool operator==(const pointwise_tile&, const pointwise_tile&) = default;
};

/// Compile-time description of one pointwise layer.
struct pointwise_config {
  int out_channels = 0;
  pointwise_tile tile{};
  /// Fused activation used by the constructor that derives the requantization from scales.
  activation act = activation::none;
  rounding round = rounding::tflite_reference;
  friend constexpr bool operator==(const pointwise_config&, const pointwise_config&) = default;
};

namespace detail::pw {

inline constexpr int block = 16;  // output channels per packed weight block, on every path
inline constexpr int group = 4;   // consecutive input channels per dot product (a "k group")
inline constexpr int block_elements = block * group;
// Packed input rows of one pixel block stay within this many bytes (L2-resident); each channel
// tile then reuses its weights across the whole block.
inline constexpr std::size_t input_block_bytes = 64 * 1024;
inline constexpr int max_block_pixels = 4096;

// The microkernels unroll their pixel/block loops with `#pragma GCC unroll` (GCC and clang), not
// with lambda-based unrolling: GCC 12 keeps a lambda-captured accumulator array in memory and
// stores every accumulator back to the stack after each dot product.

[[gnu::always_inline]] inline std::uint32_t load_u32(const void* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Everything the microkernel needs for one tile of pixels x channels.
/// How a tile's epilogue requantizes (AVX-512 paths; the others always run `general`):
/// requantize_epi32, or simd::avx512::requant_lanes (one 64-bit product per lane) without/with left
/// shifts; lanes_folded: requant_lanes without left shifts, the output zero point folded into the
/// 64-bit rounding offsets and the clamp left to saturating narrowing (no activation clamp);
/// lanes_folded_sign_free: lanes_folded without the sign blend, where the clamp starts at the zero
/// point (requant_lanes::sign_free: ReLU / ReLU6 outputs quantized as TFLite does, zero point at the
/// type's minimum).
enum class epilogue_kind : std::uint8_t { general, lanes, lanes_left, lanes_folded, lanes_folded_sign_free };

/// Whether kind q has the output zero point in its lane constants' offsets (requant_lanes::fold_zero_point).
constexpr bool folds_zero_point(epilogue_kind q) noexcept {
  return q == epilogue_kind::lanes_folded || q == epilogue_kind::lanes_folded_sign_free;
}

struct tile_job {
  const void* input;               // packed row of the tile's first pixel
  std::ptrdiff_t input_stride;     // elements between packed pixel rows
  int k_groups;                    // padded input channels / 4
  const void* weights;             // the channel tile's packed weights [k group][block][16][4]
  const std::int32_t* bias;        // folded, at the tile's first channel
  const std::int32_t* multiplier;  // per channel, at the tile's first channel
  const std::int32_t* left_shift;
  const std::int32_t* right_shift;
  const std::int32_t* pixel_offset;  // per pixel of the tile: split-weight term, else 0
  bool split = false;                // pixel_offset may be nonzero (the VNNI tile skips it otherwise)
  std::int32_t output_zero_point, clamp_min, clamp_max;
  void* out;                    // output pixel of the tile's first pixel, at its first channel
  std::ptrdiff_t out_stride;    // elements between output pixels
  int valid_channels;           // channels of this tile inside Cout: (blocks-1)*16 < v <= blocks*16
  const void* lanes = nullptr;  // VNNI lane epilogues: simd::avx512::requant_lanes per block of the tile
};

/// Copies one pixel's Cin bytes flipped into `dst` (as signed or unsigned bytes), zero-padded to
/// `padded` elements, and returns the sum of the flipped values when asked (split weights need it).
template <class InputType, bool SignedInput, bool Sum>
inline std::int32_t pack_row_scalar(const std::uint8_t* src, int channels, InputType* dst, int padded,
                                    std::uint8_t flip, int from = 0) noexcept {
  std::int32_t sum = 0;
  for (int c = from; c < channels; ++c) {
    const std::uint8_t byte = static_cast<std::uint8_t>(src[c] ^ flip);
    if constexpr (SignedInput) {
      dst[c] = static_cast<InputType>(static_cast<std::int8_t>(byte));
    } else {
      dst[c] = static_cast<InputType>(byte);
    }
    if constexpr (Sum) sum += dst[c];
  }
  for (int c = std::max(channels, from); c < padded; ++c) dst[c] = InputType{0};
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Scalar path: the structure of the SIMD paths in plain loops (and the twin they are tested against).
// int16 weights hold any w' exactly, so it never splits.
struct scalar_path {
  using weight_type = std::int16_t;
  using input_type = std::uint8_t;
  static constexpr bool signed_input = false;
  static constexpr pointwise_tile default_tile{4, 16};

  template <bool Sum>
  static std::int32_t pack_row(const std::uint8_t* src, int channels, input_type* dst, int padded,
                               std::uint8_t flip) noexcept {
    return pack_row_scalar<input_type, signed_input, Sum>(src, channels, dst, padded, flip);
  }

  template <int MR, int NB, rounding R, class T>
  static void tile(const tile_job& job) noexcept {
    const auto* a = static_cast<const input_type*>(job.input);
    const auto* w = static_cast<const weight_type*>(job.weights);
    std::array<std::array<std::int32_t, NB * block>, MR> acc;
    for (int p = 0; p < MR; ++p)
      for (int c = 0; c < NB * block; ++c) acc[p][c] = job.bias[c] + job.pixel_offset[p];
    for (int g = 0; g < job.k_groups; ++g) {
      const weight_type* wg = w + g * NB * block_elements;
      for (int p = 0; p < MR; ++p) {
        const input_type* x = a + p * job.input_stride + g * group;
        for (int c = 0; c < NB * block; ++c)
          for (int t = 0; t < group; ++t) acc[p][c] += static_cast<std::int32_t>(x[t]) * wg[c * group + t];
      }
    }
    for (int p = 0; p < MR; ++p)
      kernel::requantize_store<R>(job, acc[p].data(), static_cast<T*>(job.out) + p * job.out_stride);
  }
};

#if defined(__AVX2__)
// ---------------------------------------------------------------------------------------------
// AVX2 (also the AVX-512 build without VNNI): inputs are packed as int16, weights as int16 [16][4],
// so one vpmaddwd multiplies a broadcast (x0 x1 x2 x3) with 4 channels x 4 k and leaves per-channel
// pair sums; they are reduced once per tile. |x_d * w'| <= 255 * 255: pair sums fit int32, exact.
struct avx2_path {
  using weight_type = std::int16_t;
  using input_type = std::int16_t;
  static constexpr bool signed_input = false;
  static constexpr bool quad_tiles = true;  // tile<..., Quads>
  static constexpr pointwise_tile default_tile{3, 16};

  template <bool Sum>
  static std::int32_t pack_row(const std::uint8_t* src, int channels, input_type* dst, int padded,
                               std::uint8_t flip) noexcept {
    const __m128i flip_bits = _mm_set1_epi8(static_cast<char>(flip));
    __m256i sums = _mm256_setzero_si256();
    int c = 0;
    for (; c + 16 <= channels; c += 16) {
      const __m256i v =
          _mm256_cvtepu8_epi16(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c)), flip_bits));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c), v);
      if constexpr (Sum) sums = _mm256_add_epi32(sums, _mm256_madd_epi16(v, _mm256_set1_epi16(1)));
    }
    std::int32_t sum = pack_row_scalar<input_type, signed_input, Sum>(src, channels, dst, padded, flip, c);
    if constexpr (Sum) {
      alignas(32) std::int32_t lanes[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sums);
      for (const std::int32_t lane : lanes) sum += lane;
    }
    return sum;
  }

  /// Quads: 4-channel quads of each block to compute (fewer than 4 only for one-block layers: at
  /// most 8 channels also requantize only the first half).
  template <int MR, int NB, rounding R, class T, int Quads = 4>
  static void tile(const tile_job& job) noexcept {
    static_assert(Quads >= 1 && Quads <= 4);
    const auto* a = static_cast<const input_type*>(job.input);
    const auto* w = static_cast<const weight_type*>(job.weights);
    // acc[p][b][q]: channels 4q..4q+3 of block b, two lanes (k01, k23) per channel.
    __m256i acc[MR][NB][4];
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p)
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) acc[p][b][q] = _mm256_setzero_si256();
    for (int g = 0; g < job.k_groups; ++g) {
      const weight_type* wg = w + g * NB * block_elements;
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        std::int64_t x4;
        std::memcpy(&x4, a + p * job.input_stride + g * group, sizeof x4);
        const __m256i x = _mm256_set1_epi64x(x4);
#pragma GCC unroll 8
        for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
          for (int q = 0; q < Quads; ++q) {
            const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + (b * 4 + q) * 16));
            acc[p][b][q] = _mm256_add_epi32(acc[p][b][q], _mm256_madd_epi16(x, wq));
          }
      }
    }
    const __m256i zp = _mm256_set1_epi32(job.output_zero_point), lo = _mm256_set1_epi32(job.clamp_min),
                  hi = _mm256_set1_epi32(job.clamp_max);
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) {
      const __m256i pixel_offset = _mm256_set1_epi32(job.pixel_offset[p]);
      T* out = static_cast<T*>(job.out) + p * job.out_stride;
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) {
        alignas(16) std::uint8_t bytes[block];
        kernel::requantize_pair_sums<R, tile_job, (Quads + 1) / 2>(acc[p][b], pixel_offset, job, b * block, zp, lo, hi,
                                                                   bytes);
        const int valid = job.valid_channels - b * block;
        std::memcpy(out + b * block, bytes, static_cast<std::size_t>(valid >= block ? block : valid));
      }
    }
  }
};
#endif

#if defined(__AVXVNNI__) && defined(__AVX2__)
// ---------------------------------------------------------------------------------------------
// AVX-VNNI (VEX vpdpbusd on ymm; AVX2 machines with VNNI but without AVX-512: Alder Lake, Zen 5
// client parts): the AVX-512 VNNI scheme on 8-lane registers. A 16-channel block is two ymm per
// pixel; 16 registers hold 6 pixels x 2 accumulators, the block's two weight vectors and the
// broadcast input. u8 x_d times s8 w' as on AVX-512, split weights included.
struct avx_vnni_path {
  using weight_type = std::int8_t;
  using input_type = std::uint8_t;
  static constexpr bool signed_input = false;
  static constexpr bool quad_tiles = true;  // tile<..., Quads>
  static constexpr pointwise_tile default_tile{6, 16};

  template <bool Sum>
  static std::int32_t pack_row(const std::uint8_t* src, int channels, input_type* dst, int padded,
                               std::uint8_t flip) noexcept {
    const __m256i flip_bits = _mm256_set1_epi8(static_cast<char>(flip));
    __m256i sums = _mm256_setzero_si256();
    int c = 0;
    for (; c + 32 <= channels; c += 32) {
      const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + c)), flip_bits);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c), v);
      if constexpr (Sum) sums = _mm256_add_epi64(sums, _mm256_sad_epu8(v, _mm256_setzero_si256()));
    }
    std::int32_t sum = pack_row_scalar<input_type, signed_input, Sum>(src, channels, dst, padded, flip, c);
    if constexpr (Sum) {
      alignas(32) std::int64_t lanes[4];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sums);
      sum += static_cast<std::int32_t>(lanes[0] + lanes[1] + lanes[2] + lanes[3]);
    }
    return sum;
  }

  /// Quads: 4-channel quads of each block to compute (fewer than 4 only for one-block layers: at
  /// most 8 channels skip the second half's dot products; its epilogue is skipped anyway).
  template <int MR, int NB, rounding R, class T, int Quads = 4>
  static void tile(const tile_job& job) noexcept {
    static_assert(Quads >= 1 && Quads <= 4);
    constexpr int halves = (Quads + 1) / 2;
    const auto* a = static_cast<const input_type*>(job.input);
    const auto* w = static_cast<const weight_type*>(job.weights);
    const auto load = [](const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); };
    __m256i acc[MR][NB][2];  // channels 0-7 and 8-15 of block b
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i bias = load(job.bias + b * block + h * 8);
#pragma GCC unroll 16
        for (int p = 0; p < MR; ++p) acc[p][b][h] = _mm256_add_epi32(bias, _mm256_set1_epi32(job.pixel_offset[p]));
      }
    for (int g = 0; g < job.k_groups; ++g) {
      __m256i wv[NB][2];
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
        for (int h = 0; h < halves; ++h) wv[b][h] = load(w + (g * NB + b) * block_elements + h * 32);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const __m256i x = _mm256_set1_epi32(static_cast<int>(load_u32(a + p * job.input_stride + g * group)));
#pragma GCC unroll 8
        for (int b = 0; b < NB; ++b)
#pragma GCC unroll 2
          for (int h = 0; h < halves; ++h) acc[p][b][h] = _mm256_dpbusd_avx_epi32(acc[p][b][h], x, wv[b][h]);
      }
    }
    const __m256i zp = _mm256_set1_epi32(job.output_zero_point), lo = _mm256_set1_epi32(job.clamp_min),
                  hi = _mm256_set1_epi32(job.clamp_max);
    T* out = static_cast<T*>(job.out);
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      const int valid = job.valid_channels - b * block;
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int c = b * block + h * 8;
        const __m256i multiplier = load(job.multiplier + c), left = load(job.left_shift + c),
                      right = load(job.right_shift + c);
        const int count = valid - h * 8;  // channels of this half to store
        if (count <= 0) continue;
#pragma GCC unroll 16
        for (int p = 0; p < MR; ++p) {
          const __m256i v = simd::avx2::requantize_epi32<R>(acc[p][b][h], multiplier, left, right, zp, lo, hi);
          T* target = out + p * job.out_stride + c;
          if (count >= 8) {
            simd::avx2::store_low_bytes(target, v);
          } else {
            alignas(8) std::uint8_t bytes[8];
            simd::avx2::store_low_bytes(bytes, v);
            std::memcpy(target, bytes, static_cast<std::size_t>(count));
          }
        }
      }
    }
  }
};
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
// ---------------------------------------------------------------------------------------------
// AVX-512 VNNI: one vpdpbusd (u8 x_d times s8 w', 4 k summed per lane) per pixel, 16 channels and
// k group. uint8 filters whose w - filter_zp leaves int8 use the split weights (file comment).
// GCC 12 reports the intrinsics' own `__Y = __Y` undefined-vector idiom once they are inlined here
// (GCC bug 105593, fixed in 13); the warning is about the compiler header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

/// The constants a lane epilogue kind reads (multiply_by_nonnegative_multiplier): left shifts only
/// for lanes_left, the sign blend for all but lanes_folded_sign_free.
template <epilogue_kind Q>
using lane_vectors =
    simd::avx512::requant_lane_vectors<Q == epilogue_kind::lanes_left, Q != epilogue_kind::lanes_folded_sign_free>;

struct vnni_path {
  using weight_type = std::int8_t;
  using input_type = std::uint8_t;
  static constexpr bool signed_input = false;
  static constexpr pointwise_tile default_tile{8, 48};

  /// The default tile for a layer of `out_channels`: 8x48 and 6x64 both keep 24 accumulators and
  /// run at the same rate, so take the one whose channel tiles divide the layer. A 256-channel
  /// layer on 8x48 ends in a 16-channel tail tile (8 accumulators, one weight vector per eight
  /// broadcasts) that ran 1/16 of the work in 8.5% of the time (28x28x256, perf).
  /// Two blocks (32 channels) take 12x32, 24 accumulators too: 2-5% faster than 8x32 (112x112
  /// 16->32, 56x56 64->32, the 224x224 stem). One block (at most 16 channels) takes 16x16, the
  /// most pixels a tile has: 5-10% faster than 8x16 (56x56 32->16, 112x112 16->8).
  static constexpr pointwise_tile tile_for(int out_channels) noexcept {
    const int blocks = (out_channels + block - 1) / block;
    if (blocks == 1) return {16, 16};
    if (blocks == 2) return {12, 32};
    return blocks % 3 != 0 && blocks % 4 == 0 ? pointwise_tile{6, 64} : default_tile;
  }

  template <bool Sum>
  static std::int32_t pack_row(const std::uint8_t* src, int channels, input_type* dst, int padded,
                               std::uint8_t flip) noexcept {
    const __m512i flip_bits = _mm512_set1_epi8(static_cast<char>(flip));
    __m512i sums = _mm512_setzero_si512();
    int c = 0;
    for (; c + 64 <= channels; c += 64) {
      const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(src + c), flip_bits);
      _mm512_storeu_si512(dst + c, v);
      if constexpr (Sum) sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, _mm512_setzero_si512()));
    }
    if (c < padded) {
      // Masked loads never touch bytes past the last channel; padding stays 0 (not flipped).
      const int valid = channels - c, stored = padded - c;  // 1..63 and 1..64
      const __mmask64 load_mask = (std::uint64_t{1} << valid) - 1;
      const __mmask64 store_mask = stored == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << stored) - 1;
      const __m512i v =
          _mm512_xor_si512(_mm512_maskz_loadu_epi8(load_mask, src + c), _mm512_maskz_mov_epi8(load_mask, flip_bits));
      _mm512_mask_storeu_epi8(dst + c, store_mask, v);
      if constexpr (Sum) sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, _mm512_setzero_si512()));
    }
    return Sum ? static_cast<std::int32_t>(_mm512_reduce_add_epi64(sums)) : 0;
  }

  template <int MR, int NB, rounding R, class T, epilogue_kind Q = epilogue_kind::general>
  static void tile(const tile_job& job) noexcept {
    const auto* a = static_cast<const input_type*>(job.input);
    const auto* w = static_cast<const weight_type*>(job.weights);
    __m512i acc[MR][NB];
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      const __m512i bias = _mm512_loadu_si512(job.bias + b * block);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p)
        acc[p][b] = job.split ? _mm512_add_epi32(bias, _mm512_set1_epi32(job.pixel_offset[p])) : bias;
    }
    for (int g = 0; g < job.k_groups; ++g) {
      __m512i wv[NB];
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) wv[b] = _mm512_loadu_si512(w + (g * NB + b) * block_elements);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const __m512i x = _mm512_set1_epi32(static_cast<int>(load_u32(a + p * job.input_stride + g * group)));
#pragma GCC unroll 8
        for (int b = 0; b < NB; ++b) simd::avx512::dot_accumulate(acc[p][b], x, wv[b]);
      }
    }
    const __m512i zp = _mm512_set1_epi32(job.output_zero_point), lo = _mm512_set1_epi32(job.clamp_min),
                  hi = _mm512_set1_epi32(job.clamp_max);
    T* out = static_cast<T*>(job.out);
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      const int valid = job.valid_channels - b * block;
      const __mmask16 store_mask = valid >= block ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << valid) - 1u);
      if constexpr (Q == epilogue_kind::general) {
        const __m512i multiplier = _mm512_loadu_si512(job.multiplier + b * block),
                      left = _mm512_loadu_si512(job.left_shift + b * block),
                      right = _mm512_loadu_si512(job.right_shift + b * block);
#pragma GCC unroll 16
        for (int p = 0; p < MR; ++p) {
          const __m512i v = simd::avx512::requantize_epi32<R>(acc[p][b], multiplier, left, right, zp, lo, hi);
          _mm_mask_storeu_epi8(out + p * job.out_stride + b * block, store_mask, _mm512_cvtepi32_epi8(v));
        }
      } else {
        const auto& lanes = static_cast<const simd::avx512::requant_lanes*>(job.lanes)[b];
        // Read once per block, before the stores: the compiler cannot keep constants it reads after
        // each (possibly aliasing) byte store in registers, and reloaded them for every vector
        // (hoisting: 112x112 32->64 102 -> 92 us, 3x3 stem 72 -> 68 us on Zen 5).
        const lane_vectors<Q> constants = lane_vectors<Q>::read(lanes);
#pragma GCC unroll 16
        for (int p = 0; p < MR; ++p) {
          T* const to = out + p * job.out_stride + b * block;
          if constexpr (folds_zero_point(Q)) {
            // Zero point in the offsets, no activation clamp: saturating narrowing is the clamp.
            const __m512i v = simd::avx512::multiply_by_nonnegative_multiplier(acc[p][b], constants);
            if constexpr (std::same_as<T, i8>)
              _mm512_mask_cvtsepi32_storeu_epi8(to, store_mask, v);
            else
              _mm512_mask_cvtusepi32_storeu_epi8(to, store_mask, _mm512_max_epi32(v, _mm512_setzero_si512()));
          } else {
            __m512i v = _mm512_add_epi32(simd::avx512::multiply_by_nonnegative_multiplier(acc[p][b], constants), zp);
            v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
            _mm_mask_storeu_epi8(to, store_mask, _mm512_cvtepi32_epi8(v));
          }
        }
      }
    }
  }
};

/// Layers of at most 4 output channels (class-score heads) on AVX-512 VNNI: a vector holds 16
/// pixels of one channel instead of 16 channels of one pixel (of which such a layer uses 1-4), so a
/// k group costs one vpdpbusd per channel per 16 pixels instead of one per pixel. The group's 4
/// bytes of 16 pixels come from the pixels' 16-byte row chunks (four k groups): byte-masked xmm
/// loads (nothing past a row's `row_bytes` is read), inserted as pixel 4j + q into 128-bit lane j
/// of vector q, then transposed as 4x4 dwords within lanes. The channel's weights for the group
/// are one broadcast. Rows are read in place from the input (flipped here; split-weight pixel sums
/// from one more vpdpbusd per group against ones) or from packed rows (conv2d's patches). The
/// epilogue requantizes 16 pixels with the channel's constants replicated over the lanes and
/// interleaves the channels' bytes into each pixel's dword.
struct narrow_job {
  const std::uint8_t* input;    // row of the first pixel
  std::ptrdiff_t input_stride;  // bytes between pixel rows
  int row_bytes;                // bytes of a row to read: whole k groups when packed, Cin in place
  std::uint8_t flip;            // x_d = x ^ flip (in place; packed rows are flipped already)
  const std::int8_t* weights;   // the layer's one block: [k group][16][4], zero-padded to chunks
  const std::int32_t* bias;     // folded, per channel
  const std::int32_t* multiplier;
  const std::int32_t* left_shift;
  const std::int32_t* right_shift;
  const std::int32_t* pixel_offset;  // per pixel: split-weight term (packed rows with split)
  bool split = false;                // split weights: pixel offsets from pixel_offset or, in place, summed here
  bool in_place = false;
  std::int32_t split_factor = 0;
  const simd::avx512::requant_lanes* lanes;  // per channel, the channel's constants in every lane
  std::int32_t output_zero_point, clamp_min, clamp_max;
  void* out;                  // output pixel of the first pixel
  std::ptrdiff_t out_stride;  // elements between output pixels
};

/// 16 pixels (Full), else 1..15 (`pixels`) of a layer of NC <= 4 output channels; see narrow_job.
/// The weights are zero-padded to whole chunks of 4 k groups (the last chunk's missing groups
/// multiply zero bytes with zero weights: no branch in the loop).
template <int NC, rounding R, class T, epilogue_kind Q, bool Full>
[[gnu::always_inline]] inline void narrow_tile(const narrow_job& job, int pixels) noexcept {
  static_assert(NC >= 1 && NC <= 4);
  const __mmask16 valid = pixels >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << pixels) - 1u);
  const bool sum_here = job.split && job.in_place;
  __m512i acc[NC];
  const __m512i offsets =
      job.split && !job.in_place ? _mm512_maskz_loadu_epi32(valid, job.pixel_offset) : _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_add_epi32(_mm512_set1_epi32(job.bias[c]), offsets);
  __m512i sums = _mm512_setzero_si512();
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(job.flip)), ones = _mm512_set1_epi8(1);
  // Lanes past `pixels` read the last pixel's row again (their results are not stored).
  const int last = pixels - 1;
  for (int b = 0; b < job.row_bytes; b += 16) {
    const int n = std::min(16, job.row_bytes - b);
    const __mmask16 chunk = static_cast<__mmask16>((1u << n) - 1u);
    // One running address keeps the general registers free (16 pixel addresses spilled).
    std::uintptr_t row = reinterpret_cast<std::uintptr_t>(job.input) + static_cast<std::uintptr_t>(b);
    __m512i r[4];
#pragma GCC unroll 16
    for (int p = 0; p < 16; ++p) {
      const __m128i bytes = _mm_maskz_loadu_epi8(chunk, reinterpret_cast<const void*>(row));
      if (p < 4)
        r[p] = _mm512_castsi128_si512(bytes);
      else if (p < 8)
        r[p % 4] = _mm512_inserti32x4(r[p % 4], bytes, 1);
      else if (p < 12)
        r[p % 4] = _mm512_inserti32x4(r[p % 4], bytes, 2);
      else
        r[p % 4] = _mm512_inserti32x4(r[p % 4], bytes, 3);
      if (Full || p < last) row += static_cast<std::uintptr_t>(job.input_stride);
    }
    const __m512i lo01 = _mm512_unpacklo_epi32(r[0], r[1]), hi01 = _mm512_unpackhi_epi32(r[0], r[1]);
    const __m512i lo23 = _mm512_unpacklo_epi32(r[2], r[3]), hi23 = _mm512_unpackhi_epi32(r[2], r[3]);
    // t[g]: k group b / 4 + g of pixels 0..15, in order (x_d: a set flip marks i8 rows read in
    // place; padding bytes flipped too meet zero weights, and i8 layers never split).
    __m512i t[4] = {_mm512_unpacklo_epi64(lo01, lo23), _mm512_unpackhi_epi64(lo01, lo23),
                    _mm512_unpacklo_epi64(hi01, hi23), _mm512_unpackhi_epi64(hi01, hi23)};
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      if constexpr (std::same_as<T, i8>) t[g] = _mm512_xor_si512(t[g], flip);
      if (sum_here) simd::avx512::dot_accumulate(sums, t[g], ones);
      const std::int8_t* w = job.weights + (b / group + g) * block_elements;
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c)
        simd::avx512::dot_accumulate(acc[c], t[g], _mm512_set1_epi32(static_cast<int>(load_u32(w + c * group))));
    }
  }
  if (sum_here) {
    const __m512i pixel_offsets = _mm512_mullo_epi32(sums, _mm512_set1_epi32(job.split_factor));
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[c] = _mm512_add_epi32(acc[c], pixel_offsets);
  }
  const __m512i zp = _mm512_set1_epi32(job.output_zero_point), lo = _mm512_set1_epi32(job.clamp_min),
                hi = _mm512_set1_epi32(job.clamp_max);
  // Channel c's byte goes to byte c of each pixel's dword.
  __m512i bytes = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    __m512i v;
    if constexpr (Q == epilogue_kind::general) {
      v = simd::avx512::requantize_epi32<R>(acc[c], _mm512_set1_epi32(job.multiplier[c]),
                                            _mm512_set1_epi32(job.left_shift[c]), _mm512_set1_epi32(job.right_shift[c]),
                                            zp, lo, hi);
    } else {
      v = simd::avx512::multiply_by_nonnegative_multiplier(acc[c], lane_vectors<Q>::read(job.lanes[c]));
      if constexpr (!folds_zero_point(Q)) v = _mm512_add_epi32(v, zp);
      v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
    }
    const __mmask64 byte_c = __mmask64{0x1111111111111111} << c;
    bytes = c == 0 ? v : _mm512_mask_blend_epi8(byte_c, bytes, _mm512_slli_epi32(v, 8 * c));
  }
  T* const out = static_cast<T*>(job.out);
  if (job.out_stride == NC && NC != 3) {
    if constexpr (NC == 1) _mm512_mask_cvtepi32_storeu_epi8(out, valid, bytes);
    if constexpr (NC == 2) _mm512_mask_cvtepi32_storeu_epi16(out, valid, bytes);
    if constexpr (NC == 4) _mm512_mask_storeu_epi32(out, valid, bytes);
    return;
  }
  alignas(64) std::uint8_t staged[64];
  _mm512_store_si512(staged, bytes);
  for (int p = 0; p < pixels; ++p) std::memcpy(out + p * job.out_stride, staged + 4 * p, NC);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#if defined(__ARM_NEON)
// ---------------------------------------------------------------------------------------------
// NEON (aarch64 and armv7): signed x_d and int8 w'. With the dot-product extension one sdot per
// pixel, 4 channels and k group; without it vmull_s8 (each product fits int16) and vpadal into
// per-channel pair sums, reduced once per tile. Exact either way, including -128 * -128.
struct neon_path {
  using weight_type = std::int8_t;
  using input_type = std::int8_t;
  static constexpr bool signed_input = true;
  static constexpr bool quad_tiles = true;  // tile<..., Quads>
#if defined(__ARM_FEATURE_DOTPROD)
  static constexpr pointwise_tile default_tile{4, 16};
#elif defined(__aarch64__)
  static constexpr pointwise_tile default_tile{2, 16};
#else
  static constexpr pointwise_tile default_tile{1, 16};
#endif

  template <bool Sum>
  static std::int32_t pack_row(const std::uint8_t* src, int channels, input_type* dst, int padded,
                               std::uint8_t flip) noexcept {
    const uint8x16_t flip_bits = vdupq_n_u8(flip);
    int32x4_t sums = vdupq_n_s32(0);
    int c = 0;
    for (; c + 16 <= channels; c += 16) {
      const int8x16_t v = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(src + c), flip_bits));
      vst1q_s8(dst + c, v);
      if constexpr (Sum) sums = vpadalq_s16(sums, vpaddlq_s8(v));
    }
    std::int32_t sum = pack_row_scalar<input_type, signed_input, Sum>(src, channels, dst, padded, flip, c);
    if constexpr (Sum) {
      std::int32_t lanes[4];
      vst1q_s32(lanes, sums);
      sum += lanes[0] + lanes[1] + lanes[2] + lanes[3];
    }
    return sum;
  }

  // [sum(a), sum(b)] pairs: channel sums from two pair-sum vectors [c0 k01, c0 k23, c1 k01, c1 k23].
  static int32x4_t pair_sums(int32x4_t a, int32x4_t b) noexcept {
#if defined(__aarch64__)
    return vpaddq_s32(a, b);
#else
    return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
  }

  /// Quads: 4-channel quads of each block to compute (fewer than 4 only for layers of one block:
  /// a 2-channel class head computes one quad, a quarter of the dot products and requantization).
  template <int MR, int NB, rounding R, class T, int Quads = 4>
  static void tile(const tile_job& job) noexcept {
    static_assert(Quads >= 1 && Quads <= 4);
    const auto* a = static_cast<const input_type*>(job.input);
    const auto* w = static_cast<const weight_type*>(job.weights);
#if defined(__ARM_FEATURE_DOTPROD)
    constexpr int lanes = 4;  // acc[p][b][q]: channels 4q..4q+3
#else
    constexpr int lanes = 8;  // acc[p][b][2q + h]: channels 4q + 2h, 4q + 2h + 1 as (k01, k23) pair sums
#endif
    int32x4_t acc[MR][NB][lanes];
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p)
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 8
        for (int q = 0; q < lanes; ++q) acc[p][b][q] = vdupq_n_s32(0);
    for (int g = 0; g < job.k_groups; ++g) {
      int8x16_t wv[NB][4];
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
        for (int q = 0; q < Quads; ++q) wv[b][q] = vld1q_s8(w + (g * NB + b) * block_elements + q * 16);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const std::uint32_t x4 = load_u32(a + p * job.input_stride + g * group);
#if defined(__ARM_FEATURE_DOTPROD)
        const int8x16_t x = vreinterpretq_s8_u32(vdupq_n_u32(x4));
#pragma GCC unroll 8
        for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
          for (int q = 0; q < Quads; ++q) acc[p][b][q] = vdotq_s32(acc[p][b][q], wv[b][q], x);
#else
        const int8x8_t x = vreinterpret_s8_u32(vdup_n_u32(x4));
#pragma GCC unroll 8
        for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
          for (int q = 0; q < Quads; ++q) {
            acc[p][b][2 * q] = vpadalq_s16(acc[p][b][2 * q], vmull_s8(vget_low_s8(wv[b][q]), x));
            acc[p][b][2 * q + 1] = vpadalq_s16(acc[p][b][2 * q + 1], vmull_s8(vget_high_s8(wv[b][q]), x));
          }
#endif
      }
    }
    const int32x4_t zp = vdupq_n_s32(job.output_zero_point), lo = vdupq_n_s32(job.clamp_min),
                    hi = vdupq_n_s32(job.clamp_max);
#pragma GCC unroll 16
    for (int p = 0; p < MR; ++p) {
      const int32x4_t pixel_offset = vdupq_n_s32(job.pixel_offset[p]);
      T* out = static_cast<T*>(job.out) + p * job.out_stride;
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) {
        int16x4_t narrow[4] = {vdup_n_s16(0), vdup_n_s16(0), vdup_n_s16(0), vdup_n_s16(0)};
#pragma GCC unroll 4
        for (int q = 0; q < Quads; ++q) {
          const int c = b * block + q * 4;
#if defined(__ARM_FEATURE_DOTPROD)
          const int32x4_t dots = acc[p][b][q];
#else
          const int32x4_t dots = pair_sums(acc[p][b][2 * q], acc[p][b][2 * q + 1]);
#endif
          const int32x4_t sums = vaddq_s32(vaddq_s32(dots, pixel_offset), vld1q_s32(job.bias + c));
          narrow[q] = vmovn_s32(simd::neon::requantize_s32<R>(sums, vld1q_s32(job.multiplier + c),
                                                              vld1q_s32(job.left_shift + c),
                                                              vld1q_s32(job.right_shift + c), zp, lo, hi));
        }
        std::uint8_t bytes[block];
        kernel::narrow_to_bytes<T>(narrow, bytes);
        const int valid = job.valid_channels - b * block;
        std::memcpy(out + b * block, bytes, static_cast<std::size_t>(valid >= block ? block : valid));
      }
    }
  }
};
#endif

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

/// The tile a layer of `out_channels` gets when its config names none.
template <class Path>
constexpr pointwise_tile default_tile(int out_channels) noexcept {
  if constexpr (picks_tile_per_layer<Path>)
    return Path::tile_for(out_channels);
  else
    return Path::default_tile;
}

#if defined(MOSAIQ_FORCE_SCALAR)
using native_path = scalar_path;
#elif defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
using native_path = vnni_path;
#elif defined(__AVXVNNI__) && defined(__AVX2__)
using native_path = avx_vnni_path;
#elif defined(__AVX2__)
using native_path = avx2_path;
#elif defined(__ARM_NEON)
using native_path = neon_path;
#else
using native_path = scalar_path;
#endif

}  // namespace detail::pw

/// Pointwise convolution layer for one compile-time config and element type. Construct once
/// (packs the weights), then call on any input size; see the file comment for the design.
template <pointwise_config Cfg, quantized_element T>
class pointwise {
  using path = detail::pw::native_path;
  using weight_type = typename path::weight_type;
  using input_type = typename path::input_type;

  static constexpr pointwise_tile path_tile = detail::pw::default_tile<path>(Cfg.out_channels);
  static constexpr int tile_pixels = Cfg.tile.pixels > 0 ? Cfg.tile.pixels : path_tile.pixels;
  static constexpr int tile_channels = Cfg.tile.channels > 0 ? Cfg.tile.channels : path_tile.channels;

  static_assert(Cfg.out_channels >= 1, "pointwise: set .out_channels (at least 1)");
  static_assert(Cfg.out_channels <= (1 << 20), "pointwise: out_channels above 2^20 is not supported");
  static_assert(Cfg.tile.pixels >= 0 && tile_pixels <= 16, "pointwise: tile.pixels must be 0 (default) or 1..16");
  static_assert(Cfg.tile.channels >= 0 && tile_channels % detail::pw::block == 0 && tile_channels <= 128,
                "pointwise: tile.channels must be 0 (default) or a multiple of 16 up to 128");

  static constexpr int out_channels = Cfg.out_channels;
  static constexpr int blocks = (out_channels + detail::pw::block - 1) / detail::pw::block;
  static constexpr int padded_channels = blocks * detail::pw::block;
  static constexpr int tile_blocks = std::min(tile_channels / detail::pw::block, blocks);
  static constexpr int full_tiles = blocks / tile_blocks;
  static constexpr int tail_blocks = blocks % tile_blocks;  // one last, narrower channel tile
  static constexpr bool is_int8 = std::same_as<T, i8>;
  // x_d = x ^ flip is the byte the path multiplies; x - input_zp = x_d + input_offset - input_zp.
  static constexpr std::uint8_t flip = is_int8 != path::signed_input ? 0x80 : 0x00;
  static constexpr std::int32_t input_offset = path::signed_input ? (is_int8 ? 0 : 128) : (is_int8 ? -128 : 0);
  // int8 weights hold w - filter_zp of a uint8 filter only sometimes; int16 weights always.
  static constexpr bool may_split = std::same_as<weight_type, std::int8_t> && !is_int8;
  static constexpr rounding R = Cfg.round;
#if MOSAIQ_HAS_AMX_PATH
  // The AMX path exists in this build (it runs only where simd::amx::enabled() at load).
  static constexpr bool amx_compiled = std::same_as<path, detail::pw::vnni_path>;
#else
  static constexpr bool amx_compiled = false;
#endif
  static constexpr int amx_rows = 32;  // pixels per AMX register tile (and per workspace block unit)
  // The AMX and VNNI epilogues' requantization (detail::pw::epilogue_kind), chosen at load.
  using lane_requant = detail::pw::epilogue_kind;
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
  // The VNNI tile (and the AMX epilogue) can requantize with simd::avx512::requant_lanes.
  static constexpr bool lane_epilogues = std::same_as<path, detail::pw::vnni_path>;
#else
  static constexpr bool lane_epilogues = false;
#endif

  // At most 4 output channels: the VNNI path's narrow kernel (16 pixels per vector, see
  // detail::pw::narrow_tile) instead of 16-channel tiles; AMX layers keep their tiles.
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
  static constexpr pointwise_tile tile() noexcept { return {tile_pixels, tile_blocks * detail::pw::block}; }

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
    const int k_align = amx ? 64 : detail::pw::group;
    const int unit = amx ? amx_rows : tile_pixels;
    l.k_groups = (std::max(input_channels, 1) + k_align - 1) / k_align * (k_align / detail::pw::group);
    l.row_elements = static_cast<std::size_t>(l.k_groups) * detail::pw::group;
    const std::size_t row_bytes = l.row_elements * sizeof(input_type);
    const std::size_t fit = std::max<std::size_t>(detail::pw::input_block_bytes / row_bytes / unit, 1);
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
    const int k_groups = layout_for(input_channels, 1).k_groups;
    const std::int32_t filter_zp = q.filter_zero_point;

    split_weights_ = false;
    if constexpr (may_split)
      split_weights_ = detail::kernel::needs_split_weights(
          filter, static_cast<std::size_t>(out_channels) * input_channels, filter_zp);

    amx_ = false;
#if MOSAIQ_HAS_AMX_PATH
    if constexpr (amx_compiled) amx_ = simd::amx::enabled();
#endif
    // AMX multiplies unflipped bytes: u8 inputs with tdpbusd, i8 inputs with tdpbssd (offset 0).
    const std::int32_t offset = amx_ ? 0 : input_offset;
    const int amx_k_groups = layout_for(input_channels, 1, true).k_groups;
    if (amx_) {
      weights_.clear();
      amx_weights_.assign(static_cast<std::size_t>(blocks) * amx_k_groups * detail::pw::block_elements, 0);
    } else {
      amx_weights_.clear();
      // The narrow kernel reads whole chunks of 4 k groups (zero weights past the last group).
      const int stored_groups = narrow ? (k_groups + 3) / 4 * 4 : k_groups;
      weights_.assign(static_cast<std::size_t>(blocks) * stored_groups * detail::pw::block_elements, weight_type{0});
    }
    bias_.assign(padded_channels, 0);
    mult_.assign(padded_channels, 0);
    left_.assign(padded_channels, 0);
    right_.assign(padded_channels, R == rounding::single_round ? 1 : 0);  // a valid shift for padding lanes
    for (int c = 0; c < out_channels; ++c) {
      // Channel c sits in block b of a channel tile of `nb` blocks starting at block `first`.
      const int b = c / detail::pw::block, lane = c % detail::pw::block;
      const int tile_index = b / tile_blocks, first = tile_index * tile_blocks;
      const int nb = tile_index < full_tiles ? tile_blocks : tail_blocks;
      weight_type* tile_weights =
          amx_ ? nullptr : weights_.data() + static_cast<std::size_t>(first) * k_groups * detail::pw::block_elements;
      std::int64_t weight_sum = 0;
      for (int k = 0; k < input_channels; ++k) {
        const std::int32_t raw = filter[static_cast<std::size_t>(c) * input_channels + k];
        weight_sum += raw - filter_zp;
        const int g = k / detail::pw::group, t = k % detail::pw::group;
        const std::int32_t w = split_weights_ ? raw - 128 : raw - filter_zp;
        if (amx_) {
          // Block b's panel [k group][16][4]: B tile s is k groups 16s..16s+15, 64 bytes apart.
          amx_weights_[(static_cast<std::size_t>(b) * amx_k_groups + g) * detail::pw::block_elements +
                       static_cast<std::size_t>(lane) * detail::pw::group + t] = static_cast<std::int8_t>(w);
        } else {
          tile_weights[(static_cast<std::size_t>(g) * nb + (b - first)) * detail::pw::block_elements +
                       static_cast<std::size_t>(lane) * detail::pw::group + t] = static_cast<weight_type>(w);
        }
      }
      // Wrapping int32 arithmetic, like the accumulators.
      const std::int64_t folded = (bias ? bias[c] : 0) + (offset - q.input_zero_point) * weight_sum;
      bias_[c] = static_cast<std::int32_t>(static_cast<std::uint32_t>(folded));
      const requant_scale s = q.scale_for(c);
      mult_[c] = s.multiplier, left_[c] = s.left_shift, right_[c] = s.right_shift;
    }
    requant_ = lane_requant::general;
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    // The AMX and VNNI epilogues requantize with one 64-bit product per lane where the scales allow
    // it (simd::avx512::requant_lanes; equal to requantize_epi32, fewer instructions): with small K
    // the epilogue, not the multiplies, is what a layer spends its time on.
    if (lane_epilogues || amx_) {
      lanes_.assign(static_cast<std::size_t>(blocks), {});
      bool supported = true, left_shift = false;
      for (int at = 0; at < padded_channels; ++at) {
        const requant_scale s{mult_[at], left_[at], right_[at]};
        supported = supported && simd::avx512::requant_lanes::supports<R>(s);
        left_shift = left_shift || s.left_shift != 0;
        lanes_[at / detail::pw::block].template set_lane<R>(at % detail::pw::block, s);
      }
      requant_ = !supported ? lane_requant::general : left_shift ? lane_requant::lanes_left : lane_requant::lanes;
      const bool full_range = q.clamp.min == element_traits<T>::min && q.clamp.max == element_traits<T>::max;
      if (requant_ == lane_requant::lanes && full_range &&
          std::ranges::all_of(lanes_, [](const auto& l) { return l.folds_zero_point(); })) {
        requant_ = lane_requant::lanes_folded;
        for (auto& l : lanes_) l.fold_zero_point(q.output_zero_point);
        const bool clamp_hides_negative = q.clamp.min >= q.output_zero_point;
        if (std::ranges::all_of(lanes_, [&](const auto& l) { return l.sign_free(clamp_hides_negative); }))
          requant_ = lane_requant::lanes_folded_sign_free;
      }
      if (narrow && !amx_) {
        // The same constants with one channel in every lane (valid for the kind chosen above: the
        // lanes are the channel's).
        channel_lanes_.assign(static_cast<std::size_t>(out_channels), {});
        for (int c = 0; c < out_channels; ++c) {
          for (int lane = 0; lane < detail::pw::block; ++lane)
            channel_lanes_[c].template set_lane<R>(lane, requant_scale{mult_[c], left_[c], right_[c]});
          if (detail::pw::folds_zero_point(requant_)) channel_lanes_[c].fold_zero_point(q.output_zero_point);
        }
      }
    }
#endif
    output_zero_point_ = q.output_zero_point;
    clamp_ = q.clamp;
    split_factor_ = 128 - filter_zp;
    ready_ = true;
  }

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
    // Pixels of a view are equally spaced (rows and images follow without gaps in pixel units).
    const std::ptrdiff_t pixels = static_cast<std::ptrdiff_t>(in.batch()) * in.height() * in.width();
    if (pixels == 0) return;
    const detail::pw::pixel_rows rows{reinterpret_cast<const std::uint8_t*>(in.pixel(0, 0, 0)), in.pixel_stride(),
                                      channels_};
    run_rows(rows, pixels, in.dims().pixels(), out.pixel(0, 0, 0), out.pixel_stride(),
             detail::kernel::aligned_workspace(workspace));
  }

  /// The GEMM over `pixels` rows from `rows` (see detail::pw::pixel_rows), `image_pixels` per image
  /// (sizes the pixel block as workspace_bytes did), output row r at destination + r * out_stride.
  /// `base`: the aligned workspace, layout_for(channels_, image_pixels). Checks are the caller's.
  /// Never inlined: inlined into conv2d's run, GCC 12 kept the VNNI tile's accumulators in memory.
  template <class Rows>
  [[gnu::noinline]] void run_rows(const Rows& rows, std::ptrdiff_t pixels, std::size_t image_pixels, T* destination,
                                  std::ptrdiff_t out_stride, std::uint8_t* base) const noexcept {
#if MOSAIQ_HAS_AMX_PATH
    if constexpr (amx_compiled) {
      if (amx_) {
        run_rows_amx(rows, pixels, image_pixels, destination, out_stride, base);
        return;
      }
    }
#endif
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    if constexpr (narrow && std::same_as<Rows, detail::pw::pixel_rows>) {
      // The narrow kernel reads the input in place (no packed copy, no workspace).
      const detail::pw::narrow_job job = narrow_job_for(rows.base, rows.stride, true, nullptr, destination, out_stride);
      switch (requant_) {
        case lane_requant::lanes_folded:
          return run_narrow<lane_requant::lanes_folded>(job, pixels);
        case lane_requant::lanes_folded_sign_free:
          return run_narrow<lane_requant::lanes_folded_sign_free>(job, pixels);
        case lane_requant::lanes:
          return run_narrow<lane_requant::lanes>(job, pixels);
        case lane_requant::lanes_left:
          return run_narrow<lane_requant::lanes_left>(job, pixels);
        default:
          return run_narrow<lane_requant::general>(job, pixels);
      }
    }
#endif
    const layout l = layout_for(channels_, image_pixels);
    auto* const packed = reinterpret_cast<input_type*>(base + l.input);
    auto* const pixel_offsets = reinterpret_cast<std::int32_t*>(base + l.offsets);
    const int padded = static_cast<int>(l.row_elements);

    detail::pw::tile_job job{.input = packed,
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
    // Input pixels the tile can read as they are (bytes it wants, whole k groups, no split-weight
    // sums): skip the packed copy, which took 2.4% of a 28x28x256 layer.
    const std::uint8_t* direct = nullptr;
    if constexpr (std::same_as<Rows, detail::pw::pixel_rows> && std::same_as<input_type, std::uint8_t> && flip == 0) {
      if (!split_weights_ && rows.channels % detail::pw::group == 0) {
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
  void run_channel_tiles(const detail::pw::tile_job& job, T* block_out, int block_pixels) const noexcept {
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    if constexpr (narrow) {
      run_narrow<Q>(narrow_job_for(static_cast<const std::uint8_t*>(job.input), job.input_stride, false,
                                   job.pixel_offset, block_out, job.out_stride),
                    block_pixels);
      return;
    }
#endif
    for (int t = 0; t < full_tiles; ++t)
      run_channel_tile<tile_blocks, Q>(job, t * tile_blocks, block_out, block_pixels);
    if constexpr (tail_blocks > 0)
      run_channel_tile<tail_blocks, Q>(job, full_tiles * tile_blocks, block_out, block_pixels);
  }

  template <int NB, lane_requant Q>
  void run_channel_tile(detail::pw::tile_job job, int first_block, T* block_out, int block_pixels) const noexcept {
    const int c0 = first_block * detail::pw::block;
    job.weights = weights_.data() + static_cast<std::size_t>(first_block) * job.k_groups * detail::pw::block_elements;
    job.bias = bias_.data() + c0;
    job.multiplier = mult_.data() + c0;
    job.left_shift = left_.data() + c0;
    job.right_shift = right_.data() + c0;
    job.out = block_out + c0;
    job.valid_channels = std::min(NB * detail::pw::block, out_channels - c0);
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    if constexpr (Q != lane_requant::general) job.lanes = lanes_.data() + first_block;
#endif
    int p = 0;
    run_pixel_tiles<tile_pixels, NB, Q>(job, p, block_pixels);
  }

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
  /// The narrow kernel's job: rows from `input`, `input_stride` bytes apart, packed (flipped, whole
  /// k groups, pixel offsets in `pixel_offsets` with split weights) or the input in place.
  detail::pw::narrow_job narrow_job_for(const std::uint8_t* input, std::ptrdiff_t input_stride, bool in_place,
                                        const std::int32_t* pixel_offsets, T* out, std::ptrdiff_t out_stride) const {
    return {.input = input,
            .input_stride = input_stride,
            .row_bytes = in_place ? channels_ : layout_for(channels_, 1).k_groups * detail::pw::group,
            .flip = in_place ? flip : std::uint8_t{0},
            .weights = weights_.data(),
            .bias = bias_.data(),
            .multiplier = mult_.data(),
            .left_shift = left_.data(),
            .right_shift = right_.data(),
            .pixel_offset = pixel_offsets,
            .split = split_weights_,
            .in_place = in_place,
            .split_factor = split_factor_,
            .lanes = channel_lanes_.data(),
            .output_zero_point = output_zero_point_,
            .clamp_min = clamp_.min,
            .clamp_max = clamp_.max,
            .out = out,
            .out_stride = out_stride};
  }

  /// `pixels` rows of a narrow layer, 16 at a time.
  template <lane_requant Q>
  static void run_narrow(detail::pw::narrow_job job, std::ptrdiff_t pixels) noexcept {
    constexpr int pixels_per_tile = detail::pw::block;
    for (std::ptrdiff_t p = 0; p < pixels; p += pixels_per_tile) {
      if (pixels - p >= pixels_per_tile)
        detail::pw::narrow_tile<out_channels, R, T, Q, true>(job, pixels_per_tile);
      else
        detail::pw::narrow_tile<out_channels, R, T, Q, false>(job, static_cast<int>(pixels - p));
      job.input += pixels_per_tile * job.input_stride;
      if (job.pixel_offset != nullptr) job.pixel_offset += pixels_per_tile;
      job.out = static_cast<T*>(job.out) + pixels_per_tile * job.out_stride;
    }
  }
#endif

  template <int MR, int NB, lane_requant Q>
  static void run_pixel_tiles(detail::pw::tile_job& job, int& p, int block_pixels) noexcept {
    const auto* packed = static_cast<const input_type*>(job.input);
    const std::int32_t* offsets = job.pixel_offset;
    T* const out = static_cast<T*>(job.out);
    for (; p + MR <= block_pixels; p += MR) {
      detail::pw::tile_job tile = job;
      tile.input = packed + p * job.input_stride;
      tile.pixel_offset = offsets + p;
      tile.out = out + p * job.out_stride;
      if constexpr (Q != lane_requant::general)
        path::template tile<MR, NB, R, T, Q>(tile);
      else if constexpr (detail::pw::computes_quads<path> && blocks == 1)
        path::template tile<MR, NB, R, T, (out_channels + 3) / 4>(tile);
      else
        path::template tile<MR, NB, R, T>(tile);
    }
    if constexpr (MR > 1) run_pixel_tiles<MR / 2, NB, Q>(job, p, block_pixels);
  }

#if MOSAIQ_HAS_AMX_PATH
  /// run_rows on the AMX path: per block of rows, pack them (64-byte padded, unflipped), then per
  /// pair of channel blocks (and one last single block) run 32- or 16-row tiles over the block.
  template <class Rows>
  void run_rows_amx(const Rows& rows, std::ptrdiff_t pixels, std::size_t image_pixels, T* destination,
                    std::ptrdiff_t out_stride, std::uint8_t* base) const noexcept {
    const layout l = layout_for(channels_, image_pixels, true);
    auto* const packed = reinterpret_cast<input_type*>(base + l.input);
    auto* const pixel_offsets = reinterpret_cast<std::int32_t*>(base + l.offsets);
    const int padded = static_cast<int>(l.row_elements);
    const simd::amx::tile_config config = simd::amx::full_tiles();
    simd::amx::load_config(config);
    alignas(64) std::int32_t c[2 * amx_rows * 2 * detail::pw::block];  // two C buffers, alternating
    for (std::ptrdiff_t p0 = 0; p0 < pixels; p0 += l.block_pixels) {
      const int block_pixels = static_cast<int>(std::min<std::ptrdiff_t>(l.block_pixels, pixels - p0));
      if (split_weights_) {
        rows.template pack<path, true>(p0, block_pixels, packed, padded, 0, pixel_offsets, split_factor_);
      } else {
        rows.template pack<path, false>(p0, block_pixels, packed, padded, 0, pixel_offsets, 0);  // offsets unread
      }
      T* const block_out = destination + p0 * out_stride;
      switch (requant_) {
        case lane_requant::lanes_folded:
          run_amx_block_pairs<lane_requant::lanes_folded>(packed, padded, pixel_offsets, block_pixels, block_out,
                                                          out_stride, c);
          break;
        case lane_requant::lanes_folded_sign_free:
          run_amx_block_pairs<lane_requant::lanes_folded_sign_free>(packed, padded, pixel_offsets, block_pixels,
                                                                    block_out, out_stride, c);
          break;
        case lane_requant::lanes:
          run_amx_block_pairs<lane_requant::lanes>(packed, padded, pixel_offsets, block_pixels, block_out, out_stride,
                                                   c);
          break;
        case lane_requant::lanes_left:
          run_amx_block_pairs<lane_requant::lanes_left>(packed, padded, pixel_offsets, block_pixels, block_out,
                                                        out_stride, c);
          break;
        default:
          run_amx_block_pairs<lane_requant::general>(packed, padded, pixel_offsets, block_pixels, block_out, out_stride,
                                                     c);
      }
    }
    simd::amx::release();
  }

  template <lane_requant Q>
  void run_amx_block_pairs(const input_type* packed, int padded, const std::int32_t* pixel_offsets, int block_pixels,
                           T* block_out, std::ptrdiff_t out_stride, std::int32_t* c) const noexcept {
    int b = 0;
    for (; b + 2 <= blocks; b += 2)
      run_amx_blocks<2, Q>(b, packed, padded, pixel_offsets, block_pixels, block_out, out_stride, c);
    if constexpr (blocks % 2 != 0)
      run_amx_blocks<1, Q>(b, packed, padded, pixel_offsets, block_pixels, block_out, out_stride, c);
  }

  /// NB channel blocks from `first_block` over the block's rows, 32 (or a last 16) at a time,
  /// software-pipelined: tile i's multiplies are issued, then tile i-1's sums (in the other C
  /// buffer) are requantized while the tile unit works, then tile i is stored.
  template <int NB, lane_requant Q>
  void run_amx_blocks(int first_block, const input_type* packed, int padded, const std::int32_t* pixel_offsets,
                      int block_pixels, T* block_out, std::ptrdiff_t out_stride, std::int32_t* c) const noexcept {
    constexpr int block = detail::pw::block;
    const int c0 = first_block * block;
    const std::ptrdiff_t panel_bytes = static_cast<std::ptrdiff_t>(padded) * block;  // one block's weights
    const auto* b = reinterpret_cast<const std::int8_t*>(amx_weights_.data()) + first_block * panel_bytes;
    const int k_steps = padded / simd::amx::k_step;
    const auto* a = reinterpret_cast<const std::uint8_t*>(packed);
    constexpr int buffer = amx_rows * 2 * block;
    int previous = -1, previous_rows = 0;
    for (int p = 0, i = 0; p < block_pixels; p += amx_rows, ++i) {
      const int rows = std::min(amx_rows, block_pixels - p);
      std::int32_t* const sums = c + (i % 2) * buffer;
      const std::uint8_t* const rows_at = a + static_cast<std::ptrdiff_t>(p) * padded;
      if (rows > 16)
        simd::amx::gemm_compute<2, NB, is_int8>(rows_at, padded, b, panel_bytes, k_steps);
      else
        simd::amx::gemm_compute<1, NB, is_int8>(rows_at, padded, b, panel_bytes, k_steps);
      if (previous >= 0)
        requantize_amx<NB, Q>(c + ((i + 1) % 2) * buffer, previous_rows, pixel_offsets + previous, c0,
                              block_out + previous * out_stride + c0, out_stride);
      if (rows > 16)
        simd::amx::gemm_store<2, NB>(sums);
      else
        simd::amx::gemm_store<1, NB>(sums);
      previous = p, previous_rows = rows;
    }
    if (previous >= 0) {
      const int i = previous / amx_rows;
      requantize_amx<NB, Q>(c + (i % 2) * buffer, previous_rows, pixel_offsets + previous, c0,
                            block_out + previous * out_stride + c0, out_stride);
    }
  }

  /// The VNNI path's epilogue on `rows` rows of NB * 16 int32 dot products.
  template <int NB, lane_requant Q>
  [[gnu::always_inline]] void requantize_amx(const std::int32_t* c, int rows, const std::int32_t* pixel_offset, int c0,
                                             T* out, std::ptrdiff_t out_stride) const noexcept {
    constexpr int block = detail::pw::block;
    const __m512i zp = _mm512_set1_epi32(output_zero_point_), lo = _mm512_set1_epi32(clamp_.min),
                  hi = _mm512_set1_epi32(clamp_.max);
#pragma GCC unroll 2
    for (int b = 0; b < NB; ++b) {
      const int valid = out_channels - (c0 + b * block);
      const __mmask16 store_mask = valid >= block ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << valid) - 1u);
      const int ch = c0 + b * block;
      const __m512i bias = _mm512_loadu_si512(bias_.data() + ch), multiplier = _mm512_loadu_si512(mult_.data() + ch),
                    left = _mm512_loadu_si512(left_.data() + ch), right = _mm512_loadu_si512(right_.data() + ch);
      // Read once per block, before the stores (see vnni_path::tile).
      const auto lanes = detail::pw::lane_vectors<Q>::read(lanes_[static_cast<std::size_t>(ch / block)]);
      const bool split = split_weights_;
      for (int r = 0; r < rows; ++r) {
        __m512i acc = _mm512_add_epi32(_mm512_load_si512(c + r * NB * block + b * block), bias);
        if (split) acc = _mm512_add_epi32(acc, _mm512_set1_epi32(pixel_offset[r]));
        T* const to = out + r * out_stride + b * block;
        if constexpr (detail::pw::folds_zero_point(Q)) {
          const __m512i v = simd::avx512::multiply_by_nonnegative_multiplier(acc, lanes);
          if constexpr (is_int8)
            _mm512_mask_cvtsepi32_storeu_epi8(to, store_mask, v);
          else
            _mm512_mask_cvtusepi32_storeu_epi8(to, store_mask, _mm512_max_epi32(v, _mm512_setzero_si512()));
          continue;
        }
        __m512i v;
        if constexpr (Q == lane_requant::general) {
          v = simd::avx512::requantize_epi32<R>(acc, multiplier, left, right, zp, lo, hi);
        } else {
          v = _mm512_add_epi32(simd::avx512::multiply_by_nonnegative_multiplier(acc, lanes), zp);
          v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
        }
        _mm_mask_storeu_epi8(out + r * out_stride + b * block, store_mask, _mm512_cvtepi32_epi8(v));
      }
    }
  }
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
  std::vector<simd::avx512::requant_lanes> lanes_;          // VNNI and AMX layers: per block of 16 channels
  std::vector<simd::avx512::requant_lanes> channel_lanes_;  // narrow VNNI layers: per channel
#endif
  int channels_ = 0;
  bool ready_ = false;
  bool amx_ = false;
  lane_requant requant_ = lane_requant::general;
  bool split_weights_ = false;
  std::int32_t output_zero_point_ = 0, split_factor_ = 0;
  clamp_range clamp_{};
  std::vector<weight_type> weights_;                      // per channel tile: [k group][block][16][4]
  std::vector<std::int8_t> amx_weights_;                  // AMX layers: per block [k group (K padded to 64)][16][4]
  std::vector<std::int32_t> bias_, mult_, left_, right_;  // per padded output channel
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
