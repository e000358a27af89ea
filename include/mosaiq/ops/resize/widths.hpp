// The byte widths a target's 2x resize kernels run at, widest first: each ISA's file (ops/resize/<isa>.hpp) names
// its list, and a row continues with the next narrower width where the wider one stops.
#pragma once

#include <cstdint>
#include <type_traits>

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace detail::upsample {

using byte = std::uint8_t;

/// Byte-vector operation sets (see ops/resize/x86.hpp), widest first; none on the scalar target.
template <class... Widths>
struct byte_widths {};
template <class Widest, class... Narrower>
struct byte_widths<Widest, Narrower...> {
  using widest = Widest;
  using narrowest = typename decltype((std::type_identity<Widest>{}, ..., std::type_identity<Narrower>{}))::type;
};

}  // namespace detail::upsample
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
