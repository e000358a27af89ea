// A downstream project's model: mosaiq_add_model generated head.hpp (namespace head) and head.mosaiq at build time.
// Loads the weights, runs the network on a ramp and checks what must hold of a softmax output.
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <numeric>
#include <vector>

#include "head.hpp"

int main() {
  using net = head::network;
  std::ifstream file(MOSAIQ_MODEL_HEAD_WEIGHTS, std::ios::binary);
  const std::vector<char> chars((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto weights = std::make_unique<net::weights>();
  if (!net::load(std::as_bytes(std::span(chars)), *weights)) return 1;
  const net::prepared prepared = net::prepare(*weights);
  std::vector<mosaiq::u8> input(net::input_shape.elements()), output(net::output_shape.elements());
  std::iota(input.begin(), input.end(), mosaiq::u8{0});
  alignas(64) static std::byte arena[net::arena_bytes + 1];
  net::run(prepared, mosaiq::tensor_view<const mosaiq::u8>(input.data(), net::input_shape),
           mosaiq::tensor_view<mosaiq::u8>(output.data(), net::output_shape), arena);
  // Softmax probabilities in steps of 1/256 sum to about 1.
  const int sum = std::accumulate(output.begin(), output.end(), 0);
  std::printf("imported network: %zu layers, output sum %d / 256\n", net::layer_count, sum);
  return sum >= 256 - 8 && sum <= 256 + 8 ? 0 : 1;
}
