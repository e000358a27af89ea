// Partial byte vectors through a zero-padded copy, for targets without masked loads and stores (AVX2, NEON): the
// pool's byte vector types (ops/pool/x86.hpp, ops/pool/neon.hpp) add them to their full-width operations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::pooling {

template <class Full>
struct padded_partial : Full {
  using Full::load;
  using Full::store;
  using Full::width;
  using typename Full::vec;
  static vec load(const void* p, int n) noexcept {
    alignas(width) std::uint8_t copy[width] = {};
    std::memcpy(copy, p, static_cast<std::size_t>(n));
    return load(copy);
  }
  static void store(void* p, vec v, int n) noexcept {
    alignas(width) std::uint8_t copy[width];
    store(copy, v);
    std::memcpy(p, copy, static_cast<std::size_t>(n));
  }
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::pooling
