// A tensor view placed inside a larger buffer, misaligned and optionally strided, with canaries around and between
// its pixels: the harness the SIMD-vs-reference tests use to prove kernels stay inside their views.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "mosaiq/core/tensor.hpp"

namespace mosaiq::test {

inline constexpr std::size_t guard = 67;  // canary elements before and after every buffer (odd: shifts alignment too)

/// How a test places a tensor: images in the batch, elements between pixels beyond the channels, misalignment.
struct layout {
  int batch, extra, misalign;
};

/// A tensor placed `misalign` elements after a guard region inside a larger buffer, pixels `extra` elements apart
/// beyond the channel count; everything outside the view holds a canary.
template <class T>
struct placed_tensor {
  shape dims;
  int batch;
  std::ptrdiff_t pixel_stride;
  std::size_t offset;
  std::vector<T> storage;
  static constexpr T canary = static_cast<T>(0x5a);

  placed_tensor(shape d, int b, int extra, int misalign)
      : dims(d),
        batch(b),
        pixel_stride(d.channels + extra),
        offset(guard + static_cast<std::size_t>(misalign)),
        storage(offset + static_cast<std::size_t>(b) * d.pixels() * static_cast<std::size_t>(pixel_stride) + guard,
                canary) {}

  tensor_view<T> view() { return tensor_view<T>(storage.data() + offset, dims, batch, pixel_stride); }

  bool inside(std::size_t index) const {
    if (index < offset) return false;
    const std::size_t element = index - offset;
    const auto stride = static_cast<std::size_t>(pixel_stride);
    return element < static_cast<std::size_t>(batch) * dims.pixels() * stride &&
           element % stride < static_cast<std::size_t>(dims.channels);
  }
  void fill_random(std::mt19937& rng) {
    std::uniform_int_distribution<int> value(0, 255);
    for (std::size_t i = 0; i < storage.size(); ++i)
      if (inside(i)) storage[i] = static_cast<T>(value(rng));
  }
  /// Index of the first canary that changed, or -1.
  long first_damaged_canary() const {
    for (std::size_t i = 0; i < storage.size(); ++i)
      if (!inside(i) && storage[i] != canary) return static_cast<long>(i);
    return -1;
  }
  /// The view's elements in NHWC order.
  std::vector<T> values() {
    std::vector<T> result;
    const auto v = view();
    for (int n = 0; n < batch; ++n)
      for (int y = 0; y < dims.height; ++y)
        for (int x = 0; x < dims.width; ++x)
          for (int c = 0; c < dims.channels; ++c) result.push_back(v(n, y, x, c));
    return result;
  }
};

}  // namespace mosaiq::test
