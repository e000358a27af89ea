// conv2d, the paths: how a target packs the GEMM rows of a block of patches beyond the gather-then-pack_row of
// ops/conv.hpp (patch_rows::pack). Every target gathers; AVX-512 also builds interior patches of at most 64 bytes in
// one register (pack_runs, ops/conv/avx512.hpp), and with VBMI builds every patch of at most 32 bytes over dense
// rows, borders included, two at a time by byte permutes of 64-byte input windows (pack_windows). ops/conv.hpp asks
// its native path.
#pragma once

#include <cstdint>

#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::conv {

/// Every patch gathered into staging, then packed with the pointwise path's pack_row.
struct gather_path {
  /// Whether interior patches of at most 64 bytes with contiguous kernel rows are built in one register (pack_runs).
  static constexpr bool packs_runs = false;
  /// Whether patches of at most 32 bytes over dense input rows are permuted from input windows (pack_windows).
  static constexpr bool packs_windows = false;
};

/// AVX-512: interior patches built in one register by masked loads (pack_runs), the others gathered.
struct register_path : gather_path {
  static constexpr bool packs_runs = true;
};

/// AVX-512 with VBMI: small patches permuted from input windows (pack_windows), the others as register_path.
struct window_path : register_path {
  static constexpr bool packs_windows = true;
};

/// patch_rows::pack for patches built in one register; declared on every target (the front end names it in a branch
/// other targets discard), defined by the targets whose path packs_runs.
template <class Path, bool Sum, class Patches>
void pack_runs(const Patches& g, typename Patches::cursor begin, int count, typename Path::input_type* rows, int padded,
               std::uint8_t flip, std::int32_t* sums, std::int32_t factor) noexcept;

/// patch_rows::pack for patches permuted from input windows (the targets whose path packs_windows define it).
template <class Path, bool Sum, class Patches>
void pack_windows(const Patches& g, typename Patches::cursor begin, int count, typename Path::input_type* rows,
                  int padded, std::uint8_t flip, std::int32_t* sums, std::int32_t factor) noexcept;

/// The conv2d path a target runs on an ISA level, registered by the file that defines it (simd::native_path_of; the
/// front end, ops/conv.hpp, picks after every path file is included).
template <simd::isa>
struct path_for {};

template <>
struct path_for<simd::isa::scalar> : simd::use_path<gather_path> {};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::conv
