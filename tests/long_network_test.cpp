// A static network of more than 256 layers (clang's fold-expression nesting limit) builds under g++ and clang++
// without -fbracket-depth and runs as its layers one by one. In the reference group: the network's folds and
// plumbing do not depend on the ISA level, and its compile time (one instantiation per layer index) is paid once
// per build instead of once per level.
#include <doctest/doctest.h>

#include <cstddef>
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
