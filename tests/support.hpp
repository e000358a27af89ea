// Shared scaffolding of the doctest suites: a recording error handler, random quantized data and its float twin,
// random convolution requantizations, tensors stored with lead, stride and canaries.
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mosaiq/core.hpp"
#include "mosaiq/net/plan.hpp"
#include "mosaiq/reference/conv_common.hpp"

// MOSAIQ_TEST_PATH_GRIDS=1 (tests/CMakeLists.txt: the levels of MOSAIQ_TEST_PATH_GRID_ISAS) narrows the grids whose
// extra configs vary logic that is the same C++ on every ISA level (convolution geometry, transposed convolution's
// phases, banded plans) to one config per distinct kernel path of the level; the full grids run in the binaries
// without it (docs/decisions.md, "The test suite, part 4").
#ifndef MOSAIQ_TEST_PATH_GRIDS
#define MOSAIQ_TEST_PATH_GRIDS 0
#endif
// MOSAIQ_TEST_BANDED_NETWORKS=0 (tests/CMakeLists.txt: the levels outside MOSAIQ_NETWORK_TEST_ISAS) leaves out the
// whole-network runs that prove plans and plumbing the same on every level: bands_test's banded networks and
// parallel_test's networks on threads; the kernels' windows and row bands, and the plans' static checks, stay.
#ifndef MOSAIQ_TEST_BANDED_NETWORKS
#define MOSAIQ_TEST_BANDED_NETWORKS 1
#endif
// MOSAIQ_TEST_BROADCAST_PATH_GRIDS=1 (tests/CMakeLists.txt: the levels of MOSAIQ_TEST_BROADCAST_PATH_GRID_ISAS) runs
// the broadcast add/mul, same-shape add and held-line grids (tests/eltwise_test.cpp) on one quantization per distinct
// kernel path instead of all of them, and the whole-map pool grid (tests/pool_test.cpp) on one channel count per
// dense-sums path (docs/decisions.md, "The test suite, part 5", "part 6" and "part 9").
#ifndef MOSAIQ_TEST_BROADCAST_PATH_GRIDS
#define MOSAIQ_TEST_BROADCAST_PATH_GRIDS 0
#endif

namespace mosaiq::test {

/// A zero point at the low end of T's range (variant % 3 == 0), the high end (1), or random (2).
template <class T>
int extreme_zero_point(std::mt19937& rng, int variant) {
  switch (variant % 3) {
    case 0:
      return element_traits<T>::min;
    case 1:
      return element_traits<T>::max;
    default:
      return std::uniform_int_distribution<int>(element_traits<T>::min, element_traits<T>::max)(rng);
  }
}

/// Records misuse instead of aborting. Installing it (construction) clears the record; destruction restores the
/// handler that was installed before. The record is shared by all instances, so nest no two of them.
class recording_handler {
 public:
  recording_handler() : previous_(set_error_handler(&record)) { reset(); }
  ~recording_handler() { set_error_handler(previous_); }
  recording_handler(const recording_handler&) = delete;
  recording_handler& operator=(const recording_handler&) = delete;

  /// How many errors were reported since installation or the last reset().
  int calls() const { return state().calls; }
  /// The code of the latest of them (errc::ok if none).
  errc last() const { return state().last; }
  /// Its message ("" if none).
  std::string_view last_message() const { return state().message; }
  void reset() { state() = {}; }

 private:
  struct recorded {
    int calls = 0;
    errc last = errc::ok;
    const char* message = "";
  };
  static recorded& state() {
    static recorded r;
    return r;
  }
  static void record(errc code, const char* message, mosaiq::source_location) {
    ++state().calls;
    state().last = code;
    state().message = message;
  }

  error_handler previous_;
};

inline constexpr std::int32_t q31_half = std::int32_t{1} << 30;  // 0.5 as a Q31 multiplier

/// `count` values drawn uniformly from [lo, hi], by default T's whole range.
template <network_element T>
std::vector<T> random_values(std::mt19937& rng, std::size_t count, int lo = element_traits<T>::min,
                             int hi = element_traits<T>::max) {
  std::uniform_int_distribution<int> value(lo, hi);
  std::vector<T> values(count);
  for (T& v : values) v = static_cast<T>(value(rng));
  return values;
}

/// Random quantization parameters for T: scale in [0.005, 0.08), zero point anywhere in T's range.
template <quantized_element T>
class random_quant {
 public:
  explicit random_quant(std::mt19937& rng) : rng_(rng) {}
  quant_params operator()() { return quant_params{scale_(rng_), zero_point_(rng_)}; }

 private:
  std::mt19937& rng_;
  std::uniform_real_distribution<float> scale_{0.005f, 0.08f};
  std::uniform_int_distribution<int> zero_point_{element_traits<T>::min, element_traits<T>::max};
};

/// A channel slice [first, first + channels) of a tensor with `pixel_stride` elements per pixel,
/// `lead` elements into a canary-filled buffer: `mismatches` counts the slice elements that differ
/// from `expected` (dense, `channels` per pixel), `clobbered` the other elements that lost the canary.
struct slice_check {
  std::size_t mismatches = 0, clobbered = 0;
};

template <class T>
slice_check check_channel_slice(const std::vector<T>& buffer, std::ptrdiff_t lead, std::ptrdiff_t pixel_stride,
                                std::ptrdiff_t first, std::ptrdiff_t channels, std::ptrdiff_t pixels,
                                const std::vector<T>& expected, T canary) {
  slice_check result;
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    const std::ptrdiff_t rel = static_cast<std::ptrdiff_t>(i) - lead;
    const std::ptrdiff_t pixel = rel / pixel_stride, channel = rel % pixel_stride;
    const bool inside = rel >= 0 && pixel < pixels && channel >= first && channel < first + channels;
    if (inside)
      result.mismatches += buffer[i] != expected[static_cast<std::size_t>(pixel * channels + channel - first)];
    else
      result.clobbered += buffer[i] != canary;
  }
  return result;
}

/// What random_requant draws around. Scales are drawn in [0.5, 2) times their base.
struct requant_spec {
  int input_zero_point = 0;
  int filter_zero_point = 0;
  activation act = activation::none;
  float output_scale = 0.05f;
  /// Products summed per output: the output scale grows with sqrt(taps), so outputs spread over the range
  /// instead of saturating.
  int taps = 1;
  /// > 1 makes real multipliers above one (left shifts: the epilogues' lanes_left variant).
  float amplify = 1.0f;
  /// The output zero point of a ReLU output as TFLite quantizes it (T's minimum: the sign-free epilogue where the
  /// clamp is the full range); otherwise drawn from the middle half of T's range.
  bool output_zero_point_at_min = false;
};

/// A convolution requantization with random scales: uint8 per tensor, int8 per output channel.
template <rounding R, quantized_element T>
reference::conv_requant random_requant(std::mt19937& rng, int output_channels, const requant_spec& spec) {
  std::uniform_real_distribution<float> scale(0.5f, 2.0f);
  const quant_params input{0.02f * scale(rng), spec.input_zero_point};
  const int output_zero_point =
      spec.output_zero_point_at_min
          ? element_traits<T>::min
          : std::uniform_int_distribution<int>(element_traits<T>::min / 2 + 1, element_traits<T>::max / 2)(rng);
  const float spread = std::sqrt(static_cast<float>(spec.taps));
  const quant_params output{spec.output_scale * spread * scale(rng) / spec.amplify, output_zero_point};
  std::vector<float> filter_scales;
  if constexpr (std::same_as<T, u8>)
    filter_scales.push_back(0.004f * scale(rng));
  else
    for (int c = 0; c < output_channels; ++c) filter_scales.push_back(0.01f * scale(rng));
  return reference::make_conv_requant<R, T>(input, filter_scales, spec.filter_zero_point, output, spec.act);
}

/// A tensor one element past the start of its buffer (unaligned data), pixels `pixel_stride` elements apart, the
/// elements around and between pixels left at `fill` (canaries).
template <class T>
struct stored_tensor {
  std::vector<T> buffer;
  tensor_view<T> view;
  stored_tensor(shape s, int batch, int pixel_stride, T fill)
      : buffer(s.pixels() * static_cast<std::size_t>(batch) * static_cast<std::size_t>(pixel_stride) + 1 + 19, fill) {
    view = tensor_view<T>(buffer.data() + 1, s, batch, pixel_stride);
  }
};

/// The real values of quantized `values`.
template <quantized_element T>
std::vector<float> dequantized(const std::vector<T>& values, quant_params quant) {
  std::vector<float> real(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) real[i] = dequantize_value(values[i], quant);
  return real;
}

/// A dense tensor (batch 1) over a vector's elements.
template <class T>
tensor_view<T> view(std::vector<T>& v, shape s) {
  return tensor_view<T>(v.data(), s);
}
template <class T>
tensor_view<const T> cview(const std::vector<T>& v, shape s) {
  return tensor_view<const T>(v.data(), s);
}

/// `size` bytes at an arena_alignment boundary inside a vector (a network's arena).
struct aligned_arena {
  std::vector<std::byte> storage;
  std::span<std::byte> bytes;
  explicit aligned_arena(std::size_t size) : storage(size + arena_alignment) {
    void* p = storage.data();
    std::size_t space = storage.size();
    std::align(arena_alignment, size, p, space);
    bytes = std::span<std::byte>(static_cast<std::byte*>(p), size);
  }
};

/// Whether the 16x8 twin Net16 of Net8 (Net8::with_element<i16>) plans every tensor of the arena in the same buffer as
/// Net8, with twice its bytes.
template <class Net8, class Net16>
constexpr bool tensors_twice_the_bytes() {
  for (std::size_t t = 1; t + 1 < Net16::tensor_count; ++t) {
    if (Net16::buffer_of(t) != Net8::buffer_of(t)) return false;
    const auto b = static_cast<std::size_t>(Net16::buffer_of(t));
    if (Net16::memory_ranges[b].bytes != 2 * Net8::memory_ranges[b].bytes) return false;
  }
  return true;
}

/// Random weights for every layer of a static network: filters over T's range (uint8: zero point 128),
/// biases in [-2000, 2000], filter scales in [0.001, 0.005), output scales in [0.05, 0.1).
template <class Net>
typename Net::weights random_weights(unsigned seed) {
  using T = typename Net::element_type;
  std::mt19937 rng(seed);
  typename Net::weights w;
  w.input = {0.04f, std::is_same_v<T, u8> ? 128 : 0};
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          auto& l = w.template layer<I>();
          if constexpr (requires { l.filter; }) {
            for (auto& v : l.filter) v = static_cast<T>(static_cast<int>(rng() % 256) + element_traits<T>::min);
            for (auto& v : l.bias) v = static_cast<std::int32_t>(rng() % 4001) - 2000;
            for (auto& v : l.filter_scales) v = 0.001f + 0.004f * unit(rng);
            l.filter_zero_point = std::is_same_v<T, u8> ? 128 : 0;
          }
          if constexpr (requires { l.output; })
            l.output = {0.05f + 0.05f * unit(rng), static_cast<int>(rng() % 50) + (std::is_same_v<T, u8> ? 100 : -28)};
        }(),
        ...);
  }
  (std::make_index_sequence<Net::layer_count>{});
  return w;
}

}  // namespace mosaiq::test
