// Element types and their quantized ranges.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

using u8 = std::uint8_t;
using i8 = std::int8_t;
using i16 = std::int16_t;

/// The 8-bit element types mosaiq kernels take: uint8 (TFLite legacy asymmetric) and int8.
template <class T>
concept quantized_element = std::same_as<T, u8> || std::same_as<T, i8>;

/// The activation elements of static networks: the 8-bit ones, and int16 for TFLite's 16x8 mode (int16 activations
/// with zero point 0, int8 per-channel filters, int64 biases). Only net/ and the 16x8 kernels take i16; the 8-bit ops
/// keep quantized_element, so an i16 network reaches only the layers that have a 16x8 executor.
template <class T>
concept network_element = quantized_element<T> || std::same_as<T, i16>;

/// Representable range of an element as int32, the type arithmetic is done in.
template <network_element T>
struct element_traits {
  static constexpr std::int32_t min = std::numeric_limits<T>::min();
  static constexpr std::int32_t max = std::numeric_limits<T>::max();
  static constexpr bool is_signed = std::numeric_limits<T>::is_signed;
};

/// Saturating conversion of an int32 to an element.
template <network_element T>
constexpr T saturate_cast(std::int32_t v) noexcept {
  return static_cast<T>(v < element_traits<T>::min   ? element_traits<T>::min
                        : v > element_traits<T>::max ? element_traits<T>::max
                                                     : v);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
