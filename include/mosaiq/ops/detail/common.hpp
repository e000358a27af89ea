// Pieces the depthwise and pointwise kernels share: workspace layout helpers, the split-weight
// check, the scalar requantize-and-store step (the per-ISA ones: ops/detail/common/<isa>.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel {

inline constexpr std::size_t align = 64;  // workspace regions start on this many bytes

constexpr int round_up(int v, int m) noexcept { return (v + m - 1) / m * m; }
constexpr std::size_t round_up(std::size_t v, std::size_t m) noexcept { return (v + m - 1) / m * m; }

/// The first `align`-aligned byte of a workspace (workspace_bytes reserves `align` bytes of slack).
inline std::uint8_t* aligned_workspace(std::span<std::byte> workspace) noexcept {
  auto* base = reinterpret_cast<std::uint8_t*>(workspace.data());
  return base + (align - reinterpret_cast<std::uintptr_t>(base) % align) % align;
}

/// Whether some w - filter_zp of a uint8 filter leaves int8 (then the weights are split).
template <class T>
bool needs_split_weights(const T* filter, std::size_t count, std::int32_t filter_zp) noexcept {
  bool split = false;
  for (std::size_t i = 0; i < count; ++i) {
    const std::int32_t w = static_cast<std::int32_t>(filter[i]) - filter_zp;
    split = split || w < -128 || w > 127;
  }
  return split;
}

/// Scalar paths: requantizes the job's valid channels of one pixel's accumulators into `out`.
template <rounding R, class T, class Job>
inline void requantize_store(const Job& job, const std::int32_t* acc, T* out) noexcept {
  for (int c = 0; c < job.valid_channels; ++c)
    out[c] = requantize<R, T>(acc[c], {job.multiplier[c], job.left_shift[c], job.right_shift[c]}, job.output_zero_point,
                              job.clamp_min, job.clamp_max);
}

/// A path's per-layer lane constants (Path::layer_lanes: the requantization lanes its tiles read,
/// chosen at load), or None for paths without.
template <class Path, class None>
struct layer_lanes_of {
  using type = None;
};
template <class Path, class None>
requires requires { typename Path::layer_lanes; }
struct layer_lanes_of<Path, None> {
  using type = typename Path::layer_lanes;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel
