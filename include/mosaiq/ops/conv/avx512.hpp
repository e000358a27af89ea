// conv2d helpers of the AVX-512 targets: interior patches of at most 64 bytes built in one register
// (ops/conv.hpp's patch_rows::pack takes them where a patch's kernel rows are contiguous runs).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/conv/path.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX512

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace kernels::conv {

/// The rows of n interior pixels whose patches start at p, p + step, ...: KH masked loads land
/// the kernel rows' runs in one register (Half: a ymm, for rows of at most 32 bytes), flipped,
/// written with one masked store that includes the zero padding.
template <int KH, bool Half, bool Sum, class Row>
[[gnu::always_inline]] inline void build_interior_run(std::uintptr_t p, std::uintptr_t step, int n, Row* row,
                                                      int padded, const __mmask64 (&run_mask)[KH],
                                                      const std::uintptr_t (&run_offset)[KH], __m512i flip_patch,
                                                      std::int32_t* sums, std::int32_t factor) noexcept {
  const __mmask64 row_mask = padded >= 64 ? ~__mmask64{0} : (__mmask64{1} << padded) - 1;
  for (int j = 0; j < n; ++j, p += step, row += padded) {
    __m512i wide;
    if constexpr (Half) {
      __m256i v = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int ky = 0; ky < KH; ++ky)
        v = _mm256_mask_loadu_epi8(v, static_cast<__mmask32>(run_mask[ky]),
                                   reinterpret_cast<const void*>(p + run_offset[ky]));
      v = _mm256_xor_si256(v, _mm512_castsi512_si256(flip_patch));
      _mm256_mask_storeu_epi8(row, static_cast<__mmask32>(row_mask), v);
      wide = _mm512_zextsi256_si512(v);
    } else {
      __m512i v = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int ky = 0; ky < KH; ++ky)
        v = _mm512_mask_loadu_epi8(v, run_mask[ky], reinterpret_cast<const void*>(p + run_offset[ky]));
      v = _mm512_xor_si512(v, flip_patch);
      _mm512_mask_storeu_epi8(row, row_mask, v);
      wide = v;
    }
    if constexpr (Sum)
      sums[j] =
          factor * static_cast<std::int32_t>(_mm512_reduce_add_epi64(_mm512_sad_epu8(wide, _mm512_setzero_si512())));
  }
}

/// patch_rows::pack (`g`) for patches of at most 64 bytes whose kernel rows are contiguous runs (the stem's 3x3
/// over RGB: 3 runs of 9 bytes): an interior row is built in one register by KH masked loads
/// from the input, each landing its run at the run's place in the patch (lanes outside a load's
/// mask are neither read nor faulted), flipped, and written with one masked store that includes
/// the zero padding. Nothing is read back from memory just written (no store-forwarding stalls)
/// and no staging copy is needed; border pixels (gathered into staging by pack) still take
/// pack_row.
template <class Path, bool Sum, class Patches>
void pack_runs(const Patches& g, typename Patches::cursor begin, int count, typename Path::input_type* rows, int padded,
               std::uint8_t flip, std::int32_t* sums, std::int32_t factor) noexcept {
  constexpr int kh = Patches::kh, kw = Patches::kw, sh = Patches::sh, sw = Patches::sw, dh = Patches::dh;
  const int k = kh * kw * g.channels, run = kw * g.channels;
  const auto patch_of = [&](int i) { return g.staging + static_cast<std::ptrdiff_t>(i) * k; };
  const auto low_bytes = [](int n) { return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1; };
  const __m512i flip_patch = _mm512_maskz_mov_epi8(low_bytes(k), _mm512_set1_epi8(static_cast<char>(flip)));
  // Kernel row ky's run sits at byte ky * run of the patch: it is loaded from its input address
  // minus ky * run, under the run's mask shifted there.
  __mmask64 run_mask[kh];
  std::uintptr_t run_offset[kh];
  for (int ky = 0; ky < kh; ++ky) {
    run_mask[ky] = low_bytes(run) << (ky * run);
    run_offset[ky] = static_cast<std::uintptr_t>(ky * dh * g.row_stride - static_cast<std::ptrdiff_t>(ky) * run);
  }
  const std::uintptr_t step = static_cast<std::uintptr_t>(sw * g.pixel_stride);
  typename Patches::cursor at = begin;
  for (int i = 0; i < count;) {
    auto* row = rows + static_cast<std::ptrdiff_t>(i) * padded;
    if (!g.is_interior(at.oy, at.ox)) {
      const std::int32_t sum = Path::template pack_row<Sum>(patch_of(i), k, row, padded, flip);
      if constexpr (Sum) sums[i] = factor * sum;
      ++i, g.advance(at);
      continue;
    }
    // A run of interior pixels along the output row: their patches step by sw input pixels.
    const int n = std::min(g.x.hi - at.ox, count - i);
    std::uintptr_t p = reinterpret_cast<std::uintptr_t>(at.image) +
                       static_cast<std::uintptr_t>((at.oy * sh - g.pad_top) * g.row_stride +
                                                   (at.ox * sw - g.pad_left) * g.pixel_stride);
    // Patches of at most 32 bytes (the stem's 27) take ymm loads and stores: each 64-byte masked
    // load of a 9-byte run spans two cache lines most of the time (stem 57 -> 54 us on Zen 5).
    std::int32_t* const run_sums = Sum ? sums + i : nullptr;
    if (padded <= 32)
      build_interior_run<kh, true, Sum>(p, step, n, row, padded, run_mask, run_offset, flip_patch, run_sums, factor);
    else
      build_interior_run<kh, false, Sum>(p, step, n, row, padded, run_mask, run_offset, flip_patch, run_sums, factor);
    i += n;
    at.ox += n - 1;  // on the run's last pixel: advance wraps rows and images
    g.advance(at);
  }
}

template <>
struct path_for<simd::isa::avx512> : simd::use_path<register_path> {};

}  // namespace kernels::conv
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX512
