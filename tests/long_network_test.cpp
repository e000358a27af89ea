// A static network of more than 256 layers (clang's fold-expression nesting limit) builds under g++ and clang++
// without -fbracket-depth and runs as its layers one by one. In the reference group: the network's folds and
// plumbing do not depend on the ISA level, and its compile time (one instantiation per layer index) is paid once
// per build instead of once per level.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "allocation_counter.hpp"
#include "mosaiq/net.hpp"
#include "mosaiq/reference.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;
using test::aligned_arena;

using test::cview;
using test::view;

// clang instantiates a fold expression of N elements as an expression nested N deep and
// rejects more than 256 (-fbracket-depth); the network's folds over its layers go in chunks
// (core/indexed.hpp, for_index_chunks). 260 hard-swish layers on a 2x3x4 map (every layer index is its own
// instantiation: the compile time grows with the count), each with its own output quantization, so a layer run twice,
// skipped or out of order changes the bytes.
template <std::size_t, class Layer>
using same_layer = Layer;
template <class Input, class Layer, class Indices>
struct repeated_layers;
template <class Input, class Layer, std::size_t... I>
struct repeated_layers<Input, Layer, std::index_sequence<I...>> {
  using type = network<Input, same_layer<I, Layer>...>;
};
constexpr std::size_t long_chain_layers = 260;
using long_chain_net =
    repeated_layers<input<i8, 2, 3, 4>, layers::hard_swish<>, std::make_index_sequence<long_chain_layers>>::type;
static_assert(long_chain_net::layer_count == long_chain_layers && long_chain_net::tensor_count == 261);

// Real values 0..25: hard-swish is x itself from 3 up, so values stay apart longer while every layer requantizes them.
quant_params long_chain_quant(std::size_t layer) {
  return {0.1f + 0.0003f * static_cast<float>(layer % 17), static_cast<int>(layer % 7) - 128};
}

std::vector<i8> long_chain_by_hand(const std::vector<i8>& input) {
  const shape s = long_chain_net::input_shape;
  std::vector<i8> x = input, y(x.size());
  quant_params in = long_chain_quant(long_chain_layers);  // the network input's
  for (std::size_t i = 0; i < long_chain_layers; ++i) {
    reference::hard_swish<i8>(cview(x, s), view(y, s), reference::make_hard_swish_params<i8>(in, long_chain_quant(i)));
    std::swap(x, y);
    in = long_chain_quant(i);
  }
  return x;
}

}  // namespace

TEST_CASE("net: a network of 260 layers (more than clang's 256-element folds) equals its layers run one by one") {
  auto w = std::make_unique<long_chain_net::weights>();
  w->input = long_chain_quant(long_chain_layers);
  std::size_t layer = 0;
  detail::for_each_element(w->layers, [&](layers::output_quant_weights& l) { l.output = long_chain_quant(layer++); });
  REQUIRE(layer == long_chain_layers);
  std::mt19937 rng(37);
  const std::vector<i8> input = test::random_values<i8>(rng, std::size_t(long_chain_net::input_shape.elements()));
  const std::vector<i8> expected = long_chain_by_hand(input);
  // 260 requantizations draw the 24 values together, but not to one: the output is not a constant.
  CHECK(std::set<i8>(expected.begin(), expected.end()).size() > 4);

  const long_chain_net::prepared prepared = long_chain_net::prepare(*w);
  aligned_arena arena(long_chain_net::arena_bytes);
  std::vector<i8> output(expected.size(), i8{0x11});
  const long before = mosaiq::test::heap_allocations();
  long_chain_net::run(prepared, cview(input, long_chain_net::input_shape), view(output, long_chain_net::output_shape),
                      arena.bytes);
  CHECK(mosaiq::test::heap_allocations() == before);
  CHECK(output == expected);

  // The blob's header and payload are folds over the layers too: a round trip gives the same weights.
  std::vector<std::byte> blob(long_chain_net::blob_bytes);
  REQUIRE(long_chain_net::save(*w, blob) == blob.size());
  auto loaded = std::make_unique<long_chain_net::weights>();
  REQUIRE(long_chain_net::load(blob, *loaded));
  layer = 0;
  detail::for_each_element(
      loaded->layers, [&](const layers::output_quant_weights& l) { CHECK(l.output == long_chain_quant(layer++)); });
  CHECK(layer_kind<long_chain_net>(long_chain_layers - 1) == "hard_swish");
}

// ---------------------------------------------------------------------------------------------
// The memory planner on long buffer lists. plan_memory lists the buffers alive beside one from their birth order
// (net/plan.hpp) so that a network's plan costs about linear compile time; these are the all-pairs passes it
// replaced, kept as the oracle: the same offsets, arena and peak, and the same verdict on valid and broken plans.

namespace all_pairs {

/// The lowest offset, 0 or the end of a placed buffer alive beside buffer i, where buffer i overlaps none of them
/// (the gap the planner's scan in offset order finds, found by trying every such offset).
template <std::size_t N>
std::size_t place(const std::array<live_range, N>& ranges, const std::vector<std::size_t>& order,
                  std::array<std::size_t, N>& offsets) {
  std::vector<std::size_t> placed;
  std::size_t arena = 0;
  for (const std::size_t i : order) {
    const std::size_t bytes = align_up(ranges[i].bytes);
    if (bytes == 0) continue;
    const auto fits_at = [&](std::size_t at) {
      return std::none_of(placed.begin(), placed.end(), [&](std::size_t j) {
        return lifetimes_overlap(ranges[i], ranges[j]) && at < offsets[j] + align_up(ranges[j].bytes) &&
               offsets[j] < at + bytes;
      });
    };
    std::size_t lowest = fits_at(0) ? 0 : std::numeric_limits<std::size_t>::max();
    for (const std::size_t j : placed) {
      const std::size_t end = offsets[j] + align_up(ranges[j].bytes);
      if (lifetimes_overlap(ranges[i], ranges[j]) && end < lowest && fits_at(end)) lowest = end;
    }
    offsets[i] = lowest;
    placed.push_back(i);
    arena = std::max(arena, lowest + bytes);
  }
  return arena;
}

template <std::size_t N>
memory_plan<N> plan(const std::array<live_range, N>& ranges) {
  std::vector<std::size_t> by_size(N), by_birth(N);
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
  greedy.arena_bytes = place(ranges, by_size, greedy.offsets);
  first_fit.arena_bytes = place(ranges, by_birth, first_fit.offsets);
  memory_plan<N> best = first_fit.arena_bytes < greedy.arena_bytes ? first_fit : greedy;
  int last_step = 0;
  for (const live_range& r : ranges) last_step = std::max(last_step, r.last);
  for (int step = 0; step <= last_step; ++step) {
    std::size_t live = 0;
    for (const live_range& r : ranges)
      if (r.first <= step && step <= r.last) live += align_up(r.bytes);
    best.peak_live_bytes = std::max(best.peak_live_bytes, live);
  }
  return best;
}

template <std::size_t N>
bool valid(const std::array<live_range, N>& ranges, const memory_plan<N>& plan) {
  for (std::size_t i = 0; i < N; ++i) {
    if (ranges[i].bytes == 0) continue;
    if (plan.offsets[i] % arena_alignment != 0 || plan.offsets[i] + ranges[i].bytes > plan.arena_bytes) return false;
    for (std::size_t j = i + 1; j < N; ++j)
      if (ranges[j].bytes != 0 && lifetimes_overlap(ranges[i], ranges[j]) &&
          plan.offsets[i] + ranges[i].bytes > plan.offsets[j] && plan.offsets[j] + ranges[j].bytes > plan.offsets[i])
        return false;
  }
  return true;
}

}  // namespace all_pairs

/// A network-like list: short-lived maps and scratch (half of them empty), some long-lived taps and outputs alive
/// to the end, a few zero-length and inverted lifetimes, sizes with and without 64-byte multiples.
template <std::size_t N>
std::array<live_range, N> long_ranges(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::array<live_range, N> ranges{};
  const int steps = int(N / 2);
  for (std::size_t i = 0; i < N; ++i) {
    const int first = int(rng() % std::uint32_t(steps)) - (rng() % 50 == 0 ? 1 : 0);
    const std::uint32_t kind = rng() % 20;
    const int length = kind == 0 ? steps : kind < 3 ? int(rng() % 40) : kind == 3 ? -1 : int(rng() % 3);
    const std::size_t bytes = rng() % 3 == 0 ? 0 : rng() % 2 == 0 ? 64 * (1 + rng() % 100) : 1 + rng() % 9000;
    ranges[i] = {bytes, first, first + length};
  }
  return ranges;
}

TEST_CASE("plan: the birth-order planner equals the all-pairs planner on long buffer lists") {
  for (const std::uint32_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
    CAPTURE(seed);
    const auto ranges = long_ranges<800>(seed);
    const memory_plan<800> fast = plan_memory(ranges), oracle = all_pairs::plan(ranges);
    CHECK(fast.offsets == oracle.offsets);
    CHECK(fast.arena_bytes == oracle.arena_bytes);
    CHECK(fast.peak_live_bytes == oracle.peak_live_bytes);
    CHECK(peak_live_bytes(ranges) == oracle.peak_live_bytes);
    CHECK(is_valid_plan(ranges, fast));
    CHECK(all_pairs::valid(ranges, fast));
    // A buffer moved onto one alive beside it: both checks reject the plan.
    memory_plan<800> broken = fast;
    for (std::size_t i = 0; i < 800 && broken.offsets == fast.offsets; ++i)
      for (std::size_t j = 0; j < 800; ++j)
        if (i != j && ranges[i].bytes != 0 && ranges[j].bytes != 0 && lifetimes_overlap(ranges[i], ranges[j]) &&
            fast.offsets[j] + ranges[i].bytes <= fast.arena_bytes) {
          broken.offsets[i] = fast.offsets[j];
          break;
        }
    REQUIRE(broken.offsets != fast.offsets);
    CHECK_FALSE(all_pairs::valid(ranges, broken));
    CHECK_FALSE(is_valid_plan(ranges, broken));
  }
}
