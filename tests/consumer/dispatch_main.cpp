// A downstream program that dispatches: the best linked target of consumer_net runs, and its output
// equals the network run directly by this (baseline) unit.
#include <array>
#include <cstddef>
#include <cstdio>
#include <mosaiq/dispatch.hpp>
#include <vector>

#include "network.hpp"

MOSAIQ_DECLARE_NETWORK_ENTRIES(consumer_net)

int main() {
  consumer::net::weights w;
  w.input = {0.05f, 120};
  auto& pw = w.layer<0>();
  for (std::size_t i = 0; i < pw.filter.size(); ++i) pw.filter[i] = static_cast<mosaiq::u8>(i * 37 % 256);
  for (std::size_t i = 0; i < pw.bias.size(); ++i) pw.bias[i] = static_cast<std::int32_t>(i * 100) - 250;
  for (auto& s : pw.filter_scales) s = 0.004f;
  pw.filter_zero_point = 128;
  pw.output = {0.1f, 130};
  std::vector<std::byte> blob(consumer::net::blob_bytes);
  consumer::net::save(w, blob);

  std::array<mosaiq::u8, consumer::net::input_shape.elements()> input{};
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<mosaiq::u8>(i * 13 % 251);
  std::array<mosaiq::u8, consumer::net::output_shape.elements()> direct{}, dispatched{};
  // Each target plans its own workspace: the arena must hold the dispatched target's arena_bytes().
  alignas(64) static std::byte arena[1 << 16];
  static_assert(consumer::net::arena_bytes <= sizeof(arena));
  const auto p = consumer::net::prepare(w);
  consumer::net::run(p, {input.data(), consumer::net::input_shape}, {direct.data(), consumer::net::output_shape},
                     arena);

  mosaiq::dispatched_network net(MOSAIQ_NETWORK_ENTRIES(consumer_net));
  alignas(64) static std::byte state[1 << 16];
  if (net.state_bytes() > sizeof(state) || net.arena_bytes() > sizeof(arena) || !net.prepare(blob, state)) return 1;
  const mosaiq::status s = net.run(mosaiq::tensor_view<const mosaiq::u8>(input.data(), consumer::net::input_shape),
                                   mosaiq::tensor_view<mosaiq::u8>(dispatched.data(), consumer::net::output_shape),
                                   std::span<std::byte>(arena, net.arena_bytes()));
  std::printf("consumer_dispatch: target %.*s\n", static_cast<int>(net.target().size()), net.target().data());
  return s.ok() && dispatched == direct ? 0 : 1;
}
