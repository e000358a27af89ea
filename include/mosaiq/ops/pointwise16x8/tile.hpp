// What every 16x8 pointwise microkernel (ops/pointwise16x8/<isa>.hpp) shares with the front end
// (ops/pointwise16x8.hpp): the tile job, the packed weight layout, the path registry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16 {

/// The path pointwise16x8 runs on an ISA level, registered by the file that defines it (simd::native_path_of).
template <simd::isa>
struct path_for {};

inline constexpr int block = 16;  // output channels per packed weight block, on every path

/// Everything a microkernel needs for one tile of pixels x one block of 16 output channels. Weights are packed per
/// block as [K / taps][16][taps] int16 (Path::taps consecutive input channels per channel: 2 for vpmaddwd's pairs, 1
/// for NEON's multiply-accumulate by a scalar), K rounded up to whole taps with zero weights.
struct tile_job {
  const std::int16_t* input;       // the tile's first pixel, read in place
  std::ptrdiff_t input_stride;     // elements between input pixels
  int input_channels;              // K
  const std::int16_t* weights;     // the block's packed weights
  const std::int32_t* bias;        // 16 per block (0 past the output channels)
  const std::int32_t* multiplier;  // 16 per block: single-rounding scales (reference::single_round_scale_16x8)
  const std::int32_t* right_shift;
  std::int32_t clamp_min, clamp_max;
  std::int16_t* out;          // the tile's first output pixel, at the block's first channel
  std::ptrdiff_t out_stride;  // elements between output pixels
  int valid_channels;         // channels of this block inside Cout, 1..16
};

[[gnu::always_inline]] inline std::int32_t load_pair(const std::int16_t* p) noexcept {
  std::int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Stores the first `count` of 16 int16 results (a whole block with one store where the SIMD path has them in one
/// vector: the partial block goes through this buffer).
[[gnu::always_inline]] inline void store_partial(std::int16_t* out, const std::int16_t* block_values,
                                                 int count) noexcept {
  std::memcpy(out, block_values, static_cast<std::size_t>(count) * sizeof(std::int16_t));
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16
