// Transposed convolution, the paths of the overlapping-kernel gather (ops/transpose_conv.hpp): how a target keeps the
// filter and sums the taps landing on one output pixel. ops/transpose_conv.hpp asks native_path; its members that
// differ per path are declared in the class and defined out of class in ops/transpose_conv/scalar.hpp (gather_path)
// and ops/transpose_conv/avx2.hpp (pairs_path).
#pragma once

#include <cstdint>

#include "mosaiq/core/allocator.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::tconv {

/// The filter as int16 [KH][KW][Cin][Cout]; the loop over contiguous output channels is left to the compiler's
/// vectorizer.
struct gather_path {
  /// Whether the filter is regrouped into input-channel pairs at load (the layer's pack_pairs) and kept as pairs_type.
  static constexpr bool packs_pairs = false;
  /// What the layer keeps beyond the [KH][KW][Cin][Cout] filter: nothing.
  struct pairs_type {};
  /// accumulate_pairs' accumulator (declared on every path, defined only where packs_pairs).
  using lane = std::int32_t;
};

#if MOSAIQ_TARGET_AVX2
/// AVX2: the filter as int16 [KH][KW][Cin/2][Cout rounded to 8][2]; vpmaddwd multiplies pairs of input channels into
/// 8 output channels per register.
struct pairs_path {
  static constexpr bool packs_pairs = true;
  using pairs_type = detail::vector<std::int16_t>;
  using lane = __m256i;
};

// The path this target runs.
using native_path = pairs_path;
#else
using native_path = gather_path;
#endif

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::tconv
