// Compile-time activation memory plan: every buffer has a size and the first and last layer step
// that touch it; buffers whose lifetimes overlap must not overlap in the arena. Offsets are found
// two ways and the smaller arena wins:
//  - greedy by size (TFLM GreedyMemoryPlanner, NN-512, TVM USMP greedy_by_size): largest buffer
//    first (ties: longer lifetime first), each at the lowest offset that fits between the already
//    placed buffers it conflicts with;
//  - first fit in birth order (TinyEngine), which wins on some chains.
// Finding the optimum is NP-complete; peak_live_bytes is the lower bound both are measured against.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

inline constexpr std::size_t arena_alignment = 64;

constexpr std::size_t align_up(std::size_t bytes, std::size_t alignment = arena_alignment) noexcept {
  return (bytes + alignment - 1) / alignment * alignment;
}

/// One buffer of the plan. Steps are inclusive; a buffer with zero bytes takes no memory.
struct live_range {
  std::size_t bytes = 0;
  int first = 0;
  int last = 0;
};

constexpr bool lifetimes_overlap(const live_range& a, const live_range& b) noexcept {
  return a.first <= b.last && b.first <= a.last;
}

template <std::size_t N>
struct memory_plan {
  std::array<std::size_t, N> offsets{};
  std::size_t arena_bytes = 0;
  std::size_t peak_live_bytes = 0;  ///< largest sum of aligned sizes live at one step
};

namespace detail {

template <std::size_t N>
constexpr std::size_t place(const std::array<live_range, N>& ranges, const std::array<std::size_t, N>& order,
                            std::array<std::size_t, N>& offsets) {
  std::array<bool, N> placed{};
  std::size_t arena = 0;
  for (std::size_t k = 0; k < N; ++k) {
    const std::size_t i = order[k];
    const std::size_t bytes = align_up(ranges[i].bytes);
    if (bytes == 0) continue;
    // Placed buffers alive at the same time, by offset; take the first gap that fits.
    std::array<std::size_t, N> conflicts{};
    std::size_t conflict_count = 0;
    for (std::size_t j = 0; j < N; ++j)
      if (placed[j] && lifetimes_overlap(ranges[i], ranges[j])) conflicts[conflict_count++] = j;
    std::sort(conflicts.begin(), conflicts.begin() + conflict_count,
              [&](std::size_t a, std::size_t b) { return offsets[a] < offsets[b]; });
    std::size_t candidate = 0;
    for (std::size_t c = 0; c < conflict_count; ++c) {
      const std::size_t j = conflicts[c];
      if (offsets[j] >= candidate + bytes) break;
      candidate = std::max(candidate, offsets[j] + align_up(ranges[j].bytes));
    }
    offsets[i] = candidate;
    placed[i] = true;
    arena = std::max(arena, candidate + bytes);
  }
  return arena;
}

}  // namespace detail

template <std::size_t N>
constexpr std::size_t peak_live_bytes(const std::array<live_range, N>& ranges) {
  int last_step = 0;
  for (const live_range& r : ranges) last_step = std::max(last_step, r.last);
  std::size_t peak = 0;
  for (int step = 0; step <= last_step; ++step) {
    std::size_t live = 0;
    for (const live_range& r : ranges)
      if (r.first <= step && step <= r.last) live += align_up(r.bytes);
    peak = std::max(peak, live);
  }
  return peak;
}

/// Offsets (multiples of arena_alignment) for `ranges`; see the file comment.
template <std::size_t N>
constexpr memory_plan<N> plan_memory(const std::array<live_range, N>& ranges) {
  std::array<std::size_t, N> by_size{}, by_birth{};
  for (std::size_t i = 0; i < N; ++i) by_size[i] = by_birth[i] = i;
  std::sort(by_size.begin(), by_size.end(), [&](std::size_t a, std::size_t b) {
    const std::size_t sa = align_up(ranges[a].bytes), sb = align_up(ranges[b].bytes);
    if (sa != sb) return sa > sb;
    const int la = ranges[a].last - ranges[a].first, lb = ranges[b].last - ranges[b].first;
    return la != lb ? la > lb : a < b;
  });
  std::sort(by_birth.begin(), by_birth.end(), [&](std::size_t a, std::size_t b) {
    return ranges[a].first != ranges[b].first ? ranges[a].first < ranges[b].first : a < b;
  });

  memory_plan<N> greedy, first_fit;
  greedy.arena_bytes = detail::place(ranges, by_size, greedy.offsets);
  first_fit.arena_bytes = detail::place(ranges, by_birth, first_fit.offsets);
  memory_plan<N> best = first_fit.arena_bytes < greedy.arena_bytes ? first_fit : greedy;
  best.peak_live_bytes = peak_live_bytes(ranges);
  return best;
}

/// No two buffers that are alive at the same step share a byte; offsets are aligned and inside
/// the arena. Checked over all pairs (used in static_asserts and tests).
template <std::size_t N>
constexpr bool is_valid_plan(const std::array<live_range, N>& ranges, const memory_plan<N>& plan) {
  for (std::size_t i = 0; i < N; ++i) {
    if (ranges[i].bytes == 0) continue;
    if (plan.offsets[i] % arena_alignment != 0 || plan.offsets[i] + ranges[i].bytes > plan.arena_bytes) return false;
    for (std::size_t j = i + 1; j < N; ++j) {
      if (ranges[j].bytes == 0 || !lifetimes_overlap(ranges[i], ranges[j])) continue;
      const bool apart =
          plan.offsets[i] + ranges[i].bytes <= plan.offsets[j] || plan.offsets[j] + ranges[j].bytes <= plan.offsets[i];
      if (!apart) return false;
    }
  }
  return true;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
