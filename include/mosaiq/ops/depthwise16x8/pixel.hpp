// What every 16x8 depthwise microkernel (ops/depthwise16x8/<isa>.hpp) shares with the front end
// (ops/depthwise16x8.hpp): the pixel job, the packed weight layout, the path registry.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16 {

/// The path depthwise16x8 runs on an ISA level, registered by the file that defines it (simd::native_path_of).
template <simd::isa>
struct path_for {};

inline constexpr int block = 16;  // channels per packed weight block, on every path

/// Which channel of a block each of the 16 accumulator slots holds. The identity where a path keeps channel order;
/// AVX2's vpunpck{l,h}wd + vpmaddwd leave channels 0-3, 8-11 in one vector and 4-7, 12-15 in the other.
using slot_order = std::array<int, block>;
inline constexpr slot_order natural_order = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/// One output pixel. Weights are packed per block of 16 channels as [ceil(T / group)][16 slots][group] int16
/// (Path::group_taps consecutive taps of a slot's channel: 2 for vpmaddwd's pairs, 1 for a multiply-accumulate by
/// lane), sign-extended from int8, zero past the last tap and the last channel. Biases, multipliers and shifts are
/// 16 int32 per block in the path's slot order.
struct pixel_job {
  const std::int16_t* const* taps;  // T pointers to the tap's input pixel (channel 0), nullptr outside the image
  int channels;                     // C
  const std::int16_t* weights;      // block 0's packed weights
  std::ptrdiff_t block_weights;     // int16 elements per block
  const std::int32_t* bias;         // 16 per block, slot order
  const std::int32_t* multiplier;   // single-rounding scales (reference::single_round_scale_16x8), slot order
  const std::int32_t* right_shift;
  std::int32_t clamp_min, clamp_max;
  std::int16_t* out;  // the output pixel's channel 0
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16
