// add's per-input tables (see ops/eltwise.hpp's file comment): built and proven exact at load, target-independent; the
// per-ISA files (avx512.hpp, avx2.hpp, neon.hpp) look them up.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/eltwise/add_linear.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise {

/// The per-input tables of add (see the file comment): out = clamp((first[a] + second[b]) >> 8, clamp). Entries are
/// indexed by the element's byte (its bit pattern, so i8 -1 is entry 255). `exact` is set only when the formula was
/// checked against the reference pipeline on all 65,536 (a, b) pairs; otherwise add runs the arithmetic pipeline.
struct add_tables {
  std::array<std::int32_t, 256> first{}, second{};
  /// The same entries as byte planes for the byte-shuffle kernels: rank1, level1 low, level1 high, rank2 (= 255 minus
  /// the low byte of second), level2 low, level2 high.
  std::array<std::array<std::uint8_t, 256>, 6> planes{};
  bool exact = false;
};

/// Largest |H| kept in a table entry: H1 + H2 + carry then fits int16 (the VBMI kernel adds 16-bit words).
inline constexpr std::int32_t max_table_level = 16383;

/// The output step as floor((s * M + beta) / 2^N): single rounding adds 2^(N-1); TFLite's two roundings fold into one
/// floor whose offset depends on the sign of s (beta_plus for s >= 0, beta_minus below), so both are candidates.
struct output_floor {
  int n = 0;
  std::array<std::int64_t, 2> betas{};
  int beta_count = 1;
};

template <rounding R>
output_floor output_floor_of(const requant_scale& out) {
  output_floor step;
  if constexpr (R == rounding::tflite_reference) {
    step.n = 31 + out.right_shift;
    step.betas[0] = std::int64_t{1} << 30;
    if (out.right_shift > 0) {
      step.betas[0] += std::int64_t{1} << (30 + out.right_shift);
      step.betas[1] = step.betas[0] - (std::int64_t{1} << 31);
      step.beta_count = 2;
    }
  } else {
    step.n = out.right_shift;
    step.betas[0] = std::int64_t{1} << (step.n - 1);
  }
  return step;
}

/// Fills the entries for one beta. s * M + beta = (scaled1 * M + beta) + scaled2 * M = (h1 + h2) 2^N + l1 + l2 with
/// l1, l2 in [0, 2^N), so the floor is h1 + h2 + [l1 + l2 >= 2^N] = h1 + h2 + [l1 >= g2] with g2 = 2^N - l2.
inline void fill_table_entries(const add_scaled_inputs& scaled, std::int64_t multiplier, std::int64_t beta, int n,
                               std::int32_t output_offset, add_tables& tables) {
  const std::int64_t unit = std::int64_t{1} << n;
  std::array<std::int64_t, 256> l1{}, g2{}, sorted{};
  std::array<std::int32_t, 256> h1{}, h2{};
  for (std::size_t v = 0; v < 256; ++v) {
    const std::int64_t x1 = scaled.first[v] * multiplier + beta;
    const std::int64_t x2 = scaled.second[v] * multiplier;
    const std::int64_t f1 = x1 >> n, f2 = x2 >> n;  // floor
    h1[v] = static_cast<std::int32_t>(std::clamp<std::int64_t>(f1, -(1 << 24), 1 << 24));
    h2[v] = static_cast<std::int32_t>(std::clamp<std::int64_t>(f2, -(1 << 24), 1 << 24));
    l1[v] = x1 - f1 * unit;
    g2[v] = unit - (x2 - f2 * unit);
  }
  sorted = g2;
  std::sort(sorted.begin(), sorted.end());
  // Ranks turn the comparison into one of bytes: r1 = #{g2 <= l1}, r2 = #{g2 < g2[b]}; l1 >= g2[b] <=> r1 > r2.
  for (std::size_t v = 0; v < 256; ++v) {
    auto r1 = static_cast<std::int32_t>(std::upper_bound(sorted.begin(), sorted.end(), l1[v]) - sorted.begin());
    const auto r2 = static_cast<std::int32_t>(std::lower_bound(sorted.begin(), sorted.end(), g2[v]) - sorted.begin());
    std::int32_t level1 = h1[v];
    if (r1 == 256) {  // above every g2: the carry is always 1
      ++level1;
      r1 = 0;
    }
    level1 = std::clamp(level1 + output_offset, -max_table_level, max_table_level);
    const std::int32_t level2 = std::clamp(h2[v], -max_table_level, max_table_level);
    // (first + second) >> 8 = level1 + level2 + [r1 + 255 - r2 >= 256] = level1 + level2 + [r1 > r2].
    tables.first[v] = level1 * 256 + r1;
    tables.second[v] = level2 * 256 + 255 - r2;
  }
}

/// The proof: the tables' formula against the reference's output step for every (a, b) pair.
template <rounding R>
bool tables_match_reference(const add_tables& tables, const add_scaled_inputs& scaled, const requant_scale& out,
                            const reference::add_params& p) {
  for (std::size_t a = 0; a < 256; ++a)
    for (std::size_t b = 0; b < 256; ++b) {
      const std::int32_t expected =
          std::clamp(multiply_by_quantized_multiplier<R>(scaled.first[a] + scaled.second[b], out) + p.output_offset,
                     p.clamp.min, p.clamp.max);
      if (std::clamp((tables.first[a] + tables.second[b]) >> 8, p.clamp.min, p.clamp.max) != expected) return false;
    }
  return true;
}

inline void fill_byte_planes(add_tables& tables) {
  for (std::size_t v = 0; v < 256; ++v) {
    const auto first = static_cast<std::uint32_t>(tables.first[v]);
    const auto second = static_cast<std::uint32_t>(tables.second[v]);
    tables.planes[0][v] = static_cast<std::uint8_t>(first);
    tables.planes[1][v] = static_cast<std::uint8_t>(first >> 8);
    tables.planes[2][v] = static_cast<std::uint8_t>(first >> 16);
    tables.planes[3][v] = static_cast<std::uint8_t>(255 - (second & 255));
    tables.planes[4][v] = static_cast<std::uint8_t>(second >> 8);
    tables.planes[5][v] = static_cast<std::uint8_t>(second >> 16);
  }
}

template <rounding R, quantized_element T>
add_tables make_add_tables(const reference::add_params& p) {
  add_tables tables;
  if (!p.valid) return tables;
  const reference::detail::add_scales scales = reference::detail::decode_add_scales<R>(p);
  const requant_scale out = scales.output;
  if (out.left_shift != 0) return tables;  // make_add_params guarantees shift <= 0; stay general anyway

  const add_scaled_inputs scaled = scale_add_inputs<R, T>(p, scales);
  const output_floor step = output_floor_of<R>(out);
  for (int candidate = 0; candidate < step.beta_count; ++candidate) {
    fill_table_entries(scaled, out.multiplier, step.betas[std::size_t(candidate)], step.n, p.output_offset, tables);
    if (tables_match_reference<R>(tables, scaled, out, p)) {
      fill_byte_planes(tables);
      tables.exact = true;
      return tables;
    }
  }
  return tables;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::eltwise
