// 16x8 pointwise microkernel, scalar path: the SIMD paths' arithmetic in plain loops (int32 accumulators, the
// single-rounding epilogue), built on every target as the fallback of each and the twin the tests compare with.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/pointwise16x8/tile.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16 {

/// Taps: the packed layout's consecutive input channels per channel (pointwise16x8::scalar_twin runs the layout of
/// the build's SIMD path; 1 as the scalar build's own path).
template <int Taps = 1>
struct scalar_path {
  static constexpr int taps = Taps;
  static constexpr int default_tile_pixels = 4;

  /// Channels: the block's channels in the layer (the SIMD paths skip whole vectors past them; here the stores stop
  /// at job.valid_channels).
  template <int MR, int Channels = block>
  static void tile(const tile_job& job) noexcept {
    std::array<std::array<std::int32_t, block>, MR> acc;
    for (auto& pixel : acc) std::copy_n(job.bias, block, pixel.begin());
    for (int k = 0; k < job.input_channels; ++k) {
      const std::int16_t* w = job.weights + (k / Taps) * block * Taps + k % Taps;
      for (int p = 0; p < MR; ++p) {
        const std::int32_t x = job.input[p * job.input_stride + k];
        for (int c = 0; c < block; ++c) acc[p][c] += x * w[c * Taps];
      }
    }
    for (int p = 0; p < MR; ++p) {
      std::int16_t* out = job.out + p * job.out_stride;
      for (int c = 0; c < job.valid_channels; ++c) {
        const requant_scale s{job.multiplier[c], 0, job.right_shift[c]};
        const std::int32_t v = multiply_by_quantized_multiplier<rounding::single_round>(acc[p][c], s);
        out[c] = static_cast<std::int16_t>(std::clamp(v, job.clamp_min, job.clamp_max));
      }
    }
  }
};

template <>
struct path_for<simd::isa::scalar> : simd::use_path<scalar_path<>> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pw16
