// How a static network runs its high-resolution layers: layer by layer (every map whole), or chains
// of layers band by band with a sliding window of rows per intermediate map (net/bands.hpp). Chosen
// per network through its input: `mosaiq::input<u8, 512, 512, 3>::with_banding<mosaiq::banding::automatic()>`.
#pragma once

#include <array>
#include <cstddef>

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// The banding choice of a network (a structural value: a template argument of mosaiq::input).
struct banding {
  enum class choice { off, automatic, chain };
  /// Layers [first_layer, last_layer] (indices in the layer list, both op layers) in bands of
  /// `band_rows` output rows of the last layer.
  struct chain_spec {
    int first_layer = 0;
    int last_layer = 0;
    int band_rows = 0;
    friend constexpr bool operator==(const chain_spec&, const chain_spec&) = default;
  };
  /// At most this many chains per network.
  static constexpr int max_chains = 4;

  choice how = choice::off;
  /// choice::chain: the chains, in layer order, disjoint.
  std::array<chain_spec, max_chains> chains{};
  int chain_count = 0;
  /// choice::automatic: the bound on the band overhead, in percent of the bytes the chains write:
  /// rows moved down in the sliding windows plus a fixed cost per layer step.
  int max_overhead_percent = 5;
  /// Bound on the packed pixel block of every pointwise and conv2d layer's GEMM (their configs'
  /// block_bytes) where the config sets none; 0: the layers' speed default. Lowers their workspace.
  std::size_t gemm_block_bytes = 0;
  /// Depthwise layers in chains whose stride is at most this (undilated ones) keep their ring of built rows from
  /// one band to the next, in a workspace of their own beside the chain's shared one, each band's rows on one
  /// thread, and their input windows omit the rows the ring holds; 0: none (every band's call starts with an
  /// empty ring and builds again the rows the previous band's call also read).
  int kept_ring_stride = 0;

  /// Layer by layer: every tensor whole (the default).
  static constexpr banding off() noexcept { return {}; }
  /// The chains and band heights that give the smallest peak activation memory within the overhead bound
  /// (layer by layer when no chain saves memory).
  static constexpr banding automatic(int max_overhead_percent = 5) noexcept {
    return {.how = choice::automatic, .max_overhead_percent = max_overhead_percent};
  }
  /// Forces layers [first_layer, last_layer] to run in bands of `band_rows` output rows.
  static constexpr banding chain(int first_layer, int last_layer, int band_rows) noexcept {
    return banding{.how = choice::chain}.and_chain(first_layer, last_layer, band_rows);
  }
  /// This plan and one more chain after its others: `banding::chain(0, 11, 2).and_chain(30, 38, 16)`.
  constexpr banding and_chain(int first_layer, int last_layer, int band_rows) const noexcept {
    banding b = *this;
    b.how = choice::chain;
    if (b.chain_count < max_chains) b.chains[std::size_t(b.chain_count)] = {first_layer, last_layer, band_rows};
    b.chain_count += 1;  // past max_chains: rejected by the network's static_assert
    return b;
  }
  /// This plan with pointwise and conv2d layers packing at most `bytes` of GEMM rows per pixel block
  /// (their workspace then holds one such block): memory for speed, with the same results.
  constexpr banding with_gemm_block_bytes(std::size_t bytes) const noexcept {
    banding b = *this;
    b.gemm_block_bytes = bytes;
    return b;
  }
  /// This plan with the chains' depthwise layers of stride at most `max_stride` keeping their rings between
  /// bands (kept_ring_stride): time for the workspace's bytes.
  constexpr banding with_kept_rings(int max_stride = 1) const noexcept {
    banding b = *this;
    b.kept_ring_stride = max_stride;
    return b;
  }
  friend constexpr bool operator==(const banding&, const banding&) = default;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
