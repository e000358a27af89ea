// The byte-table lookup kernel a target registers per ISA level (ops/detail/byte_table/<isa>.hpp), and the scalar
// one every target has.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

/// The lookup kernel on an ISA level, registered by the file that defines it (simd::native_path_of).
template <simd::isa>
struct byte_lookup_for {};

/// Targets without a lookup kernel: the front end's scalar loop does every byte.
struct no_byte_lookup {
  static std::size_t run(const std::uint8_t*, const std::uint8_t*, const std::uint8_t*, std::uint8_t*,
                         std::size_t) noexcept {
    return 0;
  }
};

template <>
struct byte_lookup_for<simd::isa::scalar> : simd::use_path<no_byte_lookup> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail
