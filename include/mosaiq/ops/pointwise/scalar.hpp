// Pointwise microkernel, scalar path: the structure of the SIMD paths in plain loops (and the twin
// they are tested against). Built on every target: the fallback of each.
#pragma once

#include <array>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/ops/pointwise/tile.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace kernels::pw {

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
      detail::kernel::requantize_store<R>(job, acc[p].data(), static_cast<T*>(job.out) + p * job.out_stride);
  }
};

template <>
struct path_for<simd::isa::scalar> : simd::use_path<scalar_path> {};

}  // namespace kernels::pw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
