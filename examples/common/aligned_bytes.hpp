// Heap storage at a given alignment for the examples: arenas, and the state of a dispatched network
// (whose size and alignment the chosen target reports at run time).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace mosaiq_examples {

/// `size` bytes at an `alignment` boundary inside a vector of its own; moving keeps the bytes in place.
struct aligned_bytes {
  std::vector<std::byte> storage;
  std::span<std::byte> bytes;
  aligned_bytes(std::size_t size, std::size_t alignment) : storage(size + alignment) {
    void* p = storage.data();
    std::size_t space = storage.size();
    std::align(alignment, size, p, space);
    bytes = std::span<std::byte>(static_cast<std::byte*>(p), size);
  }
};

}  // namespace mosaiq_examples
