// How a static network runs its high-resolution layers: layer by layer (every map whole), or a chain
// of layers band by band with a sliding window of rows per intermediate map (net/bands.hpp). Chosen
// per network through its input: `mosaiq::input<u8, 512, 512, 3>::with_banding<mosaiq::banding::automatic()>`.
#pragma once

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// The banding choice of a network (a structural value: a template argument of mosaiq::input).
struct banding {
  enum class choice { off, automatic, chain };
  choice how = choice::off;
  /// choice::chain: the first and last layer (indices in the layer list, both op layers) and the
  /// output rows of the last layer per band.
  int first_layer = 0;
  int last_layer = 0;
  int band_rows = 0;
  /// choice::automatic: the bound on the band overhead, in percent of the bytes the chain writes:
  /// rows moved down in the sliding windows plus a fixed cost per layer step.
  int max_overhead_percent = 5;

  /// Layer by layer: every tensor whole (the default).
  static constexpr banding off() noexcept { return {}; }
  /// The chain and band height that give the smallest peak activation memory within the overhead bound
  /// (layer by layer when no chain saves memory).
  static constexpr banding automatic(int max_overhead_percent = 5) noexcept {
    return {.how = choice::automatic, .max_overhead_percent = max_overhead_percent};
  }
  /// Forces layers [first_layer, last_layer] to run in bands of `band_rows` output rows.
  static constexpr banding chain(int first_layer, int last_layer, int band_rows) noexcept {
    return {.how = choice::chain, .first_layer = first_layer, .last_layer = last_layer, .band_rows = band_rows};
  }
  friend constexpr bool operator==(const banding&, const banding&) = default;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
