// What every depthwise microkernel (ops/depthwise/<isa>.hpp) shares with the front end
// (ops/depthwise.hpp): the channel block, the tap group, the row job and the rows a tile reads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/epilogue.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace kernels::dw {

/// The path depthwise runs on an ISA level, registered by the file that defines it (simd::native_path_of).
template <simd::isa>
struct path_for {};

inline constexpr int block = 16;      // channels per block, on every path
inline constexpr int group_taps = 4;  // horizontal taps per group (one vpdpbusd lane)

/// Calls f(integral_constant<0>) ... f(integral_constant<N-1>): a guaranteed unroll, so tile
/// accumulators indexed by these constants stay in registers (-O2 does not unroll the loops).
template <int N, class F>
[[gnu::always_inline]] inline void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) __attribute__((always_inline)) {
    (f(std::integral_constant<int, I>{}), ...);
  }
  (std::make_integer_sequence<int, N>{});
}

/// Which input rows a register tile of TH output rows reads: output row r, kernel row kr read
/// tap-group row r*SH + kr*DH of the pass (stride SH, dilation DH). Rows shared between output rows
/// (stride 1: rows 1..KH-1 of the first are rows 0..KH-2 of the second) are loaded once per tile.
template <int KH, int TH, int SH, int DH>
struct rows_tile {
  /// The kernel row with which output row r reads offset u, or -1.
  static constexpr int kernel_row(int u, int r) noexcept {
    const int d = u - r * SH;
    return d >= 0 && d % DH == 0 && d / DH < KH ? d / DH : -1;
  }
  static constexpr int span = (TH - 1) * SH + (KH - 1) * DH + 1;
  static constexpr bool read(int u) noexcept {
    for (int r = 0; r < TH; ++r)
      if (kernel_row(u, r) >= 0) return true;
    return false;
  }
  /// Distinct offsets read, in increasing order.
  static constexpr int count = [] {
    int n = 0;
    for (int u = 0; u < span; ++u) n += read(u) ? 1 : 0;
    return n;
  }();
  static constexpr std::array<int, count> offsets = [] {
    std::array<int, count> list{};
    for (int u = 0, n = 0; u < span; ++u)
      if (read(u)) list[static_cast<std::size_t>(n++)] = u;
    return list;
  }();
  /// Whether every output row of the tile reads offset u.
  static constexpr bool read_by_all(int u) noexcept {
    for (int r = 0; r < TH; ++r)
      if (kernel_row(u, r) < 0) return false;
    return true;
  }
  /// Offsets every output row reads.
  static constexpr int common_count = [] {
    int n = 0;
    for (int u = 0; u < span; ++u) n += TH > 1 && read_by_all(u) ? 1 : 0;
    return n;
  }();
  /// Index into job.rows ([r][kr]) of the first (r, kr) that reads offset u.
  static constexpr int source(int u) noexcept {
    for (int r = 0; r < TH; ++r)
      if (kernel_row(u, r) >= 0) return r * KH + kernel_row(u, r);
    return 0;
  }
  /// Whether TH rows at once load fewer vectors than TH separate rows.
  static constexpr bool shares_rows = count < TH * KH;
};

/// Everything the hot loop of one (output row, channel job) needs.
struct row_job {
  const std::uint8_t* const* rows;  // KH tap-group rows ([TH][KH] for a multi-row tile), offset to this block
  std::ptrdiff_t column_stride;     // bytes between output columns in a tap-group row
  std::ptrdiff_t group_stride;      // bytes between tap groups of one column
  const void* weights;              // this job's packed weights [KH][G][job_channels][4]
  const std::int32_t* bias;         // job_channels folded biases
  const std::int32_t* multiplier;   // job_channels each
  const std::int32_t* left_shift;
  const std::int32_t* right_shift;
  const void* requant_lanes;  // VNNI: simd::avx512::requant_lanes per block; AVX2: requant_lanes8 or null
  requant_epilogue requant;   // VNNI
  std::int32_t output_zero_point, clamp_min, clamp_max;
  const std::int8_t* split_taps;    // VNNI uint8 split: [G][16][4] the weights' common part for taps < KW, else 0
  void* out;                        // output pixel (ox = 0) of this row, offset to this block
  std::ptrdiff_t out_pixel_stride;  // elements
  std::ptrdiff_t out_row_stride;    // elements between the output rows of a multi-row VNNI tile
  int valid_channels;               // 1..job_channels
  // VNNI with at most 32 output channels: one 64-lane job holds `pixels` (2, 4 or 8) neighbouring
  // output pixels of `pixel_width` (32, 16 or 8) lanes each; columns are then counted in jobs and
  // `out_width` is the row's real pixel count. 1 everywhere else.
  int pixels = 1, pixel_width = 0, out_width = 0;
};

}  // namespace kernels::dw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
