// The two-class softmax/log-softmax table (ops/softmax.hpp): the reference's out0 for every difference x0 - x1,
// with its clamp window, in the layouts the per-ISA lookups (ops/softmax/<isa>.hpp) read.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace softmax_pairs {

using byte = std::uint8_t;

/// The two-class table and its clamp window, in the layouts the lookups need.
struct pair_table {
  std::array<byte, 511> by_index{};  // reference out0 of a pair with x0 - x1 = index - 255, as output bytes
  int first = 0;                     // clamping an index to [first, last] changes no entry it reads
  int last = 510;
  alignas(64) std::array<byte, 512> window{};            // by_index[min(first + k, last)]
  alignas(32) std::array<byte, 8 * 32> pshufb_deltas{};  // AVX2: 16-byte chunk k of window XOR chunk k-1, twice

  int window_size() const noexcept { return last - first + 1; }

  void finish() noexcept {
    first = 0;
    while (first < 510 && by_index[static_cast<std::size_t>(first) + 1] == by_index[0]) ++first;
    last = 510;
    while (last > first && by_index[static_cast<std::size_t>(last) - 1] == by_index[510]) --last;
    for (int k = 0; k < 512; ++k)
      window[static_cast<std::size_t>(k)] = by_index[static_cast<std::size_t>(std::min(first + k, last))];
    for (std::size_t k = 0; k < 8; ++k)
      for (std::size_t j = 0; j < 16; ++j) {
        const byte delta = static_cast<byte>(window[16 * k + j] ^ (k > 0 ? window[16 * (k - 1) + j] : 0));
        pshufb_deltas[32 * k + j] = pshufb_deltas[32 * k + 16 + j] = delta;
      }
  }
};

/// The pairs kernel a target runs on an ISA level, registered by the file that defines it (simd::native_path_of).
template <simd::isa>
struct pairs_for {};

/// Targets without a pairs kernel: the front end's scalar loop does every pair.
struct scalar_pairs {
  static std::size_t run(const pair_table&, const byte*, byte*, std::size_t, byte) noexcept { return 0; }
};

template <>
struct pairs_for<simd::isa::scalar> : simd::use_path<scalar_pairs> {};

}  // namespace softmax_pairs
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
