// Depthwise microkernel, scalar path: the structure of the SIMD paths in plain loops (and the twin
// they are tested against). Built on every target: the fallback of each.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/depthwise/row_job.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace kernels::dw {

/// Whether this target has a vector expansion for depth multiplier M (output channel c*M + m reads input
/// channel c): replicate_channels<M>, specialised where it exists (ops/depthwise/avx512.hpp: M = 2); the
/// front end's plain loop runs otherwise.
template <int M>
inline constexpr bool replicates_channels = false;
template <int M>
void replicate_channels(const std::uint8_t* px, std::uint8_t* dst, int channels) noexcept;

// Scalar path: the structure of the SIMD paths in plain loops (and the twin they are tested against).
struct scalar_path {
  using weight_type = std::int16_t;
  static constexpr int job_channels = block;
  static constexpr int default_tile_w = 4;
  /// Whether the layer runs this path's 64-channel VNNI jobs: channels permuted in the packed arrays, narrow layers
  /// sharing a job between pixels, the members of ops/depthwise/layer_avx512_vnni.hpp (detail::dw::uses_vnni).
  static constexpr bool uses_vnni = false;

  static void interleave(const std::uint8_t* const src[group_taps], std::uint8_t* dst, int channels,
                         int padded_channels, std::uint8_t flip) noexcept {
    for (int c = 0; c < channels; ++c)
      for (int t = 0; t < group_taps; ++t) dst[c * group_taps + t] = static_cast<std::uint8_t>(src[t][c] ^ flip);
    std::memset(dst + channels * group_taps, 0, static_cast<std::size_t>(padded_channels - channels) * group_taps);
  }

  template <int KH, int G, int TW, rounding R, class T>
  static void tile(const row_job& job, int ox) noexcept {
    const auto* w = static_cast<const weight_type*>(job.weights);
    std::array<std::array<std::int32_t, block>, TW> acc;
    for (auto& a : acc) std::copy_n(job.bias, block, a.begin());
    for (int kr = 0; kr < KH; ++kr)
      for (int g = 0; g < G; ++g) {
        const weight_type* wg = w + (kr * G + g) * block * group_taps;
        for (int p = 0; p < TW; ++p) {
          const std::uint8_t* x = job.rows[kr] + (ox + p) * job.column_stride + g * job.group_stride;
          for (int c = 0; c < block; ++c)
            for (int t = 0; t < group_taps; ++t)
              acc[p][c] += static_cast<std::int32_t>(x[c * group_taps + t]) * wg[c * group_taps + t];
        }
      }
    for (int p = 0; p < TW; ++p)
      detail::kernel::requantize_store<R>(job, acc[p].data(),
                                          static_cast<T*>(job.out) + (ox + p) * job.out_pixel_stride);
  }
};

template <>
struct path_for<simd::isa::scalar> : simd::use_path<scalar_path> {};

}  // namespace kernels::dw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
