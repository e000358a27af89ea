// Byte-to-byte table lookups over runs of bytes, the load-time table applied with vpermi2b (AVX-512 VBMI),
// XOR-telescoped pshufb (AVX2, AVX-512 without VBMI), vqtbl4q / vqtbx4q (NEON aarch64), vtbl4 / vtbx4 (NEON armv7), or
// a scalar loop (the twin). Used by logistic (ops/softmax.hpp), hard-swish (ops/hard_swish.hpp) and requantizing
// resize (ops/resize.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "mosaiq/core/tensor.hpp"
#include "mosaiq/ops/detail/byte_table/avx2.hpp"
#include "mosaiq/ops/detail/byte_table/avx512.hpp"
#include "mosaiq/ops/detail/byte_table/neon.hpp"
#include "mosaiq/ops/detail/byte_table/registry.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

/// A 256-entry byte table applied to runs of contiguous bytes: out[j] = values[in[j]] (logistic, requantization).
/// Set `values`, then call finish() once (load time) before run().
struct byte_table {
  alignas(64) std::array<std::uint8_t, 256> values{};
  alignas(32) std::array<std::uint8_t, 16 * 32> pshufb_deltas{};  // per half (entries <128, >=128): telescoped chunks

  void finish() noexcept {
    for (std::size_t k = 0; k < 16; ++k)
      for (std::size_t j = 0; j < 16; ++j) {
        const bool starts_half = k % 8 == 0;
        const auto delta = static_cast<std::uint8_t>(values[16 * k + j] ^ (starts_half ? 0 : values[16 * (k - 1) + j]));
        pshufb_deltas[32 * k + j] = pshufb_deltas[32 * k + 16 + j] = delta;
      }
  }

  [[gnu::noinline]] void run(const std::uint8_t* in, std::uint8_t* out, std::size_t count) const noexcept {
    using lookup = simd::native_path_of<byte_lookup_for>;
    std::size_t j = lookup::run(values.data(), pshufb_deltas.data(), in, out, count);
    for (; j < count; ++j) out[j] = values[in[j]];
  }
};

/// A byte_table applied to every element of an 8-bit view: one flat run when both views are dense, else one run per
/// pixel. The caller has checked that the views are valid and of equal extents.
template <class T>
void run_byte_table(const byte_table& table, const tensor_view<const T>& in, const tensor_view<T>& out) noexcept {
  static_assert(sizeof(T) == 1, "run_byte_table: 8-bit elements only");
  const auto bytes = [](const T* p) { return reinterpret_cast<const std::uint8_t*>(p); };
  const auto out_bytes = [](T* p) { return reinterpret_cast<std::uint8_t*>(p); };
  if (in.is_dense() && out.is_dense()) {
    const std::size_t count = static_cast<std::size_t>(in.batch()) * in.dims().elements();
    if (count > 0) table.run(bytes(in.data()), out_bytes(out.data()), count);
    return;
  }
  const auto channels = static_cast<std::size_t>(in.channels());
  for (int n = 0; n < in.batch(); ++n)
    for (int y = 0; y < in.height(); ++y)
      for (int x = 0; x < in.width(); ++x) table.run(bytes(in.pixel(n, y, x)), out_bytes(out.pixel(n, y, x)), channels);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail
