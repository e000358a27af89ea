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

/// The buffers that take memory, by first step (ties: by index), and how far back an earlier-born buffer
/// can reach: enough to list the buffers alive at the same time as one buffer without a pass over all of
/// them (the plan of a network of N layers has about 2N buffers, and such passes made it quadratic).
template <std::size_t N>
struct birth_order {
  std::array<std::size_t, N> buffer{};    ///< buffer at each position
  std::array<std::size_t, N> position{};  ///< position of each buffer (N: it takes no memory)
  std::array<int, N> reach{};             ///< latest last step of the buffers at positions 0..p
  std::size_t count = 0;
};

template <std::size_t N>
constexpr birth_order<N> order_by_birth(const std::array<live_range, N>& ranges) {
  birth_order<N> b;
  for (std::size_t i = 0; i < N; ++i)
    if (align_up(ranges[i].bytes) != 0) b.buffer[b.count++] = i;
  std::sort(b.buffer.begin(), b.buffer.begin() + std::ptrdiff_t(b.count), [&](std::size_t x, std::size_t y) {
    return ranges[x].first != ranges[y].first ? ranges[x].first < ranges[y].first : x < y;
  });
  b.position.fill(N);
  for (std::size_t p = 0; p < b.count; ++p) {
    b.position[b.buffer[p]] = p;
    b.reach[p] = p == 0 ? ranges[b.buffer[p]].last : std::max(b.reach[p - 1], ranges[b.buffer[p]].last);
  }
  return b;
}

/// fn(j) for every buffer j != i that takes memory and whose lifetime overlaps buffer i's (i takes memory):
/// those born later, up to i's last step, then those born earlier, back to where none reaches i's first step.
template <std::size_t N, class Fn>
constexpr void for_each_overlapping(const std::array<live_range, N>& ranges, const birth_order<N>& b, std::size_t i,
                                    Fn&& fn) {
  const std::size_t at = b.position[i];
  for (std::size_t p = at + 1; p < b.count && ranges[b.buffer[p]].first <= ranges[i].last; ++p)
    if (lifetimes_overlap(ranges[i], ranges[b.buffer[p]])) fn(b.buffer[p]);
  for (std::size_t p = at; p-- > 0 && b.reach[p] >= ranges[i].first;)
    if (lifetimes_overlap(ranges[i], ranges[b.buffer[p]])) fn(b.buffer[p]);
}

template <std::size_t N>
constexpr std::size_t place(const std::array<live_range, N>& ranges, const birth_order<N>& births,
                            const std::array<std::size_t, N>& order, std::array<std::size_t, N>& offsets) {
  std::array<bool, N> placed{};
  std::array<std::size_t, N> conflicts{};
  std::size_t arena = 0;
  for (std::size_t k = 0; k < births.count; ++k) {
    const std::size_t i = order[k];
    const std::size_t bytes = align_up(ranges[i].bytes);
    // Placed buffers alive at the same time, by offset; take the first gap that fits. (Buffers at the same
    // offset give the same gap in any order.)
    std::size_t conflict_count = 0;
    for_each_overlapping(ranges, births, i, [&](std::size_t j) {
      if (placed[j]) conflicts[conflict_count++] = j;
    });
    std::sort(conflicts.begin(), conflicts.begin() + std::ptrdiff_t(conflict_count),
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

/// The most aligned bytes alive at one step from 0 on: the live sum at each step where a buffer is born
/// (the sum only grows there), buffers leaving after their last step.
template <std::size_t N>
constexpr std::size_t peak_live(const std::array<live_range, N>& ranges, const birth_order<N>& births) {
  std::array<std::size_t, N> by_death = births.buffer;
  const auto end = by_death.begin() + std::ptrdiff_t(births.count);
  std::sort(by_death.begin(), end, [&](std::size_t x, std::size_t y) { return ranges[x].last < ranges[y].last; });
  std::size_t live = 0, peak = 0, dead = 0;
  for (std::size_t p = 0; p < births.count; ++p) {
    const live_range& r = ranges[births.buffer[p]];
    const int step = std::max(r.first, 0);
    if (r.last < step) continue;  // never alive at a step from 0 on
    for (; dead < births.count && ranges[by_death[dead]].last < step; ++dead)
      if (ranges[by_death[dead]].last >= std::max(ranges[by_death[dead]].first, 0))
        live -= align_up(ranges[by_death[dead]].bytes);
    live += align_up(r.bytes);
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace detail

template <std::size_t N>
constexpr std::size_t peak_live_bytes(const std::array<live_range, N>& ranges) {
  return detail::peak_live(ranges, detail::order_by_birth(ranges));
}

/// Offsets (multiples of arena_alignment) for `ranges`; see the file comment. Both orders list only the
/// buffers that take memory (the others keep offset 0).
template <std::size_t N>
constexpr memory_plan<N> plan_memory(const std::array<live_range, N>& ranges) {
  const detail::birth_order<N> births = detail::order_by_birth(ranges);
  std::array<std::size_t, N> by_size = births.buffer;
  std::sort(by_size.begin(), by_size.begin() + std::ptrdiff_t(births.count), [&](std::size_t a, std::size_t b) {
    const std::size_t sa = align_up(ranges[a].bytes), sb = align_up(ranges[b].bytes);
    if (sa != sb) return sa > sb;
    const int la = ranges[a].last - ranges[a].first, lb = ranges[b].last - ranges[b].first;
    return la != lb ? la > lb : a < b;
  });

  memory_plan<N> greedy, first_fit;
  greedy.arena_bytes = detail::place(ranges, births, by_size, greedy.offsets);
  first_fit.arena_bytes = detail::place(ranges, births, births.buffer, first_fit.offsets);
  memory_plan<N> best = first_fit.arena_bytes < greedy.arena_bytes ? first_fit : greedy;
  best.peak_live_bytes = detail::peak_live(ranges, births);
  return best;
}

/// No two buffers that are alive at the same step share a byte; offsets are aligned and inside
/// the arena. Checked for every pair of buffers alive together (used in static_asserts and tests): in birth
/// order, each buffer against those born after it up to its last step.
template <std::size_t N>
constexpr bool is_valid_plan(const std::array<live_range, N>& ranges, const memory_plan<N>& plan) {
  const detail::birth_order<N> births = detail::order_by_birth(ranges);
  for (std::size_t p = 0; p < births.count; ++p) {
    const std::size_t i = births.buffer[p];
    if (plan.offsets[i] % arena_alignment != 0 || plan.offsets[i] + ranges[i].bytes > plan.arena_bytes) return false;
    for (std::size_t q = p + 1; q < births.count && ranges[births.buffer[q]].first <= ranges[i].last; ++q) {
      const std::size_t j = births.buffer[q];
      if (!lifetimes_overlap(ranges[i], ranges[j])) continue;
      const bool apart =
          plan.offsets[i] + ranges[i].bytes <= plan.offsets[j] || plan.offsets[j] + ranges[j].bytes <= plan.offsets[i];
      if (!apart) return false;
    }
  }
  return true;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
