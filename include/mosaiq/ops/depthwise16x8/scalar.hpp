// 16x8 depthwise microkernel, scalar path: the SIMD paths' arithmetic in plain loops (int32 accumulators, the
// single-rounding epilogue), built on every target as the fallback of each and the twin the tests compare with.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/depthwise16x8/pixel.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16 {

/// Group and Order: the packed layout of the build's SIMD path (depthwise16x8::run_scalar_twin runs on it); the
/// scalar build's own path packs single taps in channel order.
template <int Group = 1, slot_order Order = natural_order>
struct scalar_path {
  static constexpr int group_taps = Group;
  static constexpr slot_order order = Order;

  /// The block of 16 channels from b * 16 of one pixel, or its first `count` (the stores stop there).
  template <int Taps, bool Edge, bool Whole>
  static void channel_block(const pixel_job& job, int b, int count) noexcept {
    const std::int16_t* w = job.weights + b * job.block_weights;
    const int c0 = b * block;
    for (int slot = 0; slot < block; ++slot) {
      const int c = Order[static_cast<std::size_t>(slot)];
      if (c >= count) continue;
      std::int32_t acc = job.bias[c0 + slot];
      for (int t = 0; t < Taps; ++t)
        if (!Edge || job.taps[t] != nullptr)
          acc += std::int32_t{job.taps[t][c0 + c]} * w[((t / Group) * block + slot) * Group + t % Group];
      const requant_scale scale{job.multiplier[c0 + slot], 0, job.right_shift[c0 + slot]};
      const std::int32_t v = multiply_by_quantized_multiplier<rounding::single_round>(acc, scale);
      job.out[c0 + c] = static_cast<std::int16_t>(std::clamp(v, job.clamp_min, job.clamp_max));
    }
  }
};

template <>
struct path_for<simd::isa::scalar> : simd::use_path<scalar_path<>> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::dw16
