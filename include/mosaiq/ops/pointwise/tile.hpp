// What every pointwise microkernel (ops/pointwise/<isa>.hpp) shares with the front end
// (ops/pointwise.hpp): the packed weight block, the tile job, the scalar row packer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Register tile of the pointwise microkernel; 0 picks the default of the ISA compiled for.
struct pointwise_tile {
  int pixels = 0;    ///< output pixels per tile (rows of the GEMM)
  int channels = 0;  ///< output channels per tile, a multiple of 16
  friend constexpr bool operator==(const pointwise_tile&, const pointwise_tile&) = default;
};

namespace kernels::pw {

/// The path pointwise runs on an ISA level, registered by the file that defines it (simd::native_path_of).
template <simd::isa>
struct path_for {};

inline constexpr int block = 16;  // output channels per packed weight block, on every path
inline constexpr int group = 4;   // consecutive input channels per dot product (a "k group")
inline constexpr int block_elements = block * group;

// The microkernels unroll their pixel/block loops with `#pragma GCC unroll` (GCC and clang), not
// with lambda-based unrolling: GCC 12 keeps a lambda-captured accumulator array in memory and
// stores every accumulator back to the stack after each dot product.

[[gnu::always_inline]] inline std::uint32_t load_u32(const void* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// The AVX-512 VNNI path's narrow-kernel job (ops/pointwise/avx512_vnni.hpp), declared for every
/// target so that the layer can declare its members.
struct narrow_job;

/// Everything the microkernel needs for one tile of pixels x channels.
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
  void* out;                     // output pixel of the tile's first pixel, at its first channel
  std::ptrdiff_t out_stride;     // elements between output pixels
  int valid_channels;            // channels of this tile inside Cout: (blocks-1)*16 < v <= blocks*16
  const void* lanes = nullptr;   // VNNI lane epilogues: simd::avx512::requant_lanes per block of the tile
  const void* lanes8 = nullptr;  // AVX2 reference rounding: simd::avx2::requant_lanes8 per 8 channels, or null
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

}  // namespace kernels::pw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
