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

#if MOSAIQ_TARGET_AVX512_VBMI
/// patch_rows::pack (`g`) for patches of at most 32 bytes over dense input rows (pixel stride = channels: the 3x3
/// stems over RGB, 27 bytes) whose neighbouring pixels' taps fit a 64-byte window two at a time (g.fits_windows):
/// every patch of the block, borders included. Per output row, per window of up to 64 input bytes: one masked load
/// per kernel row (bytes outside the image, or a whole row outside it, take the input zero point, as the gather
/// does), flipped; then per pair of output pixels one vpermb per kernel row places the row's taps of both patches
/// (the same index for every kernel row, each under its own byte mask) and one masked store writes both padded
/// rows. Sum: the pair's patches sit at bytes 0 and 32 instead (two stores), one vpsadbw per pair, and the sums of a
/// window's (at most 8) patches are reduced together and stored as one vector.
template <class Path, bool Sum, class Patches>
void pack_windows(const Patches& g, typename Patches::cursor begin, int count, typename Path::input_type* rows,
                  int padded, std::uint8_t flip, std::int32_t* sums, std::int32_t factor) noexcept {
  constexpr int kh = Patches::kh, kw = Patches::kw, sh = Patches::sh, sw = Patches::sw, dh = Patches::dh,
                dw = Patches::dw;
  const int c = g.channels, step = sw * c, span = ((kw - 1) * dw + 1) * c;
  // Pixels per window: the taps of n neighbouring pixels span (n - 1) * step + span <= 64 bytes; whole pairs (Sum:
  // at most 8, whose patch sums are reduced together).
  const int per_window = std::min(((64 - span) / step + 1) & ~1, Sum ? 8 : 64);
  const int second = Sum ? 32 : padded;  // where the pair's second patch starts
  // Pair 0 of a window: byte q * second + (ky * kw + kx) * c + ch of the pair takes window byte
  // (q * sw + kx * dw) * c + ch of kernel row ky's window; pair j the same plus j * 2 * step.
  alignas(64) std::uint8_t index_bytes[64] = {};
  __mmask64 row_mask[kh] = {};
  for (int q = 0; q < 2; ++q)
    for (int ky = 0; ky < kh; ++ky)
      for (int kx = 0; kx < kw; ++kx)
        for (int ch = 0; ch < c; ++ch) {
          const int at = q * second + (ky * kw + kx) * c + ch;
          index_bytes[at] = static_cast<std::uint8_t>((q * sw + kx * dw) * c + ch);
          row_mask[ky] |= __mmask64{1} << at;
        }
  const __m512i index0 = _mm512_load_si512(index_bytes), pair_step = _mm512_set1_epi8(static_cast<char>(2 * step));
  const __m512i flip_bits = _mm512_set1_epi8(static_cast<char>(flip));
  const __m512i zero_point = _mm512_set1_epi8(static_cast<char>(g.zero_point));
  const __m512i outside = _mm512_xor_si512(zero_point, flip_bits);
  const auto low_bytes = [](std::ptrdiff_t n) { return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1; };
  const __mmask64 one_row = low_bytes(padded), two_rows = low_bytes(second + padded);
  const std::ptrdiff_t row_bytes = static_cast<std::ptrdiff_t>(g.in_w) * c;  // an input row's bytes in the image
  typename Patches::cursor at = begin;
  for (int i = 0; i < count;) {
    const int n_row = std::min(g.out_w - at.ox, count - i);
    // Kernel row ky's input row, or none (outside the image: every tap reads the zero point).
    std::uintptr_t src[kh];
    const int iy0 = at.oy * sh - g.pad_top;
#pragma GCC unroll 8
    for (int ky = 0; ky < kh; ++ky) {
      const int iy = iy0 + ky * dh;
      src[ky] = iy >= 0 && iy < g.in_h ? reinterpret_cast<std::uintptr_t>(at.image + iy * g.row_stride) : 0;
    }
    auto* row = rows + static_cast<std::ptrdiff_t>(i) * padded;
    for (int done = 0; done < n_row;) {
      const int n = std::min(per_window, n_row - done);
      // The window starts at the first pixel's first tap; its bytes inside the image are [lo, hi).
      const std::ptrdiff_t x0 = static_cast<std::ptrdiff_t>((at.ox + done) * sw - g.pad_left) * c;
      const std::ptrdiff_t lo = std::max<std::ptrdiff_t>(0, -x0), hi = std::min<std::ptrdiff_t>(64, row_bytes - x0);
      const __mmask64 inside = hi > lo ? low_bytes(hi) & ~low_bytes(lo) : 0;
      __m512i window[kh];
#pragma GCC unroll 8
      for (int ky = 0; ky < kh; ++ky)
        window[ky] =
            src[ky] != 0
                ? _mm512_xor_si512(
                      _mm512_mask_loadu_epi8(zero_point, inside,
                                             reinterpret_cast<const void*>(src[ky] + static_cast<std::uintptr_t>(x0))),
                      flip_bits)
                : outside;
      __m512i index = index0;
      // Sum: the qword byte sums of pairs 0 and 1 (low and high dword of each qword), and of pairs 2 and 3.
      __m512i pairs01 = _mm512_setzero_si512(), pairs23 = _mm512_setzero_si512();
      for (int j = 0; j < n; j += 2, index = _mm512_add_epi8(index, pair_step)) {
        __m512i v = _mm512_maskz_permutexvar_epi8(row_mask[0], index, window[0]);
#pragma GCC unroll 8
        for (int ky = 1; ky < kh; ++ky) v = _mm512_mask_permutexvar_epi8(v, row_mask[ky], index, window[ky]);
        const bool pair = j + 1 < n;
        if constexpr (Sum) {
          // Qwords 0-3 are the first patch's byte sums (each below 2^11), 4-7 the second's.
          const __m512i s = _mm512_sad_epu8(v, _mm512_setzero_si512());
          const __m512i placed = (j & 2) != 0 ? _mm512_slli_epi64(s, 32) : s;
          if (j < 4)
            pairs01 = _mm512_add_epi32(pairs01, placed);
          else
            pairs23 = _mm512_add_epi32(pairs23, placed);
          _mm256_mask_storeu_epi8(row, static_cast<__mmask32>(one_row), _mm512_castsi512_si256(v));
          if (pair)
            _mm256_mask_storeu_epi8(row + padded, static_cast<__mmask32>(one_row), _mm512_extracti64x4_epi64(v, 1));
        } else {
          _mm512_mask_storeu_epi8(row, pair ? two_rows : one_row, v);
        }
        row += 2 * padded;
      }
      if constexpr (Sum) {
        // Each 128-bit lane's two qwords and the lane pairs (0, 1) and (2, 3) added up: dwords 0 and 1 are the
        // first patches of the two pairs, dwords 8 and 9 their second patches; then the window's patches in order.
        const auto fold = [](__m512i x) {
          x = _mm512_add_epi32(x, _mm512_shuffle_i64x2(x, x, _MM_SHUFFLE(2, 3, 0, 1)));
          return _mm512_add_epi32(x, _mm512_shuffle_epi32(x, _MM_PERM_BADC));
        };
        const __m512i order = _mm512_setr_epi32(0, 8, 1, 9, 16, 24, 17, 25, 0, 0, 0, 0, 0, 0, 0, 0);
        const __m512i totals = _mm512_permutex2var_epi32(fold(pairs01), order, fold(pairs23));
        _mm512_mask_storeu_epi32(sums + i + done, static_cast<__mmask16>((1u << n) - 1u),
                                 _mm512_mullo_epi32(totals, _mm512_set1_epi32(factor)));
      }
      done += n;
    }
    i += n_row;
    at.ox += n_row - 1;  // on the row's last pixel: advance wraps rows and images
    g.advance(at);
  }
}

template <>
struct path_for<simd::isa::avx512> : simd::use_path<window_path> {};
#else
template <>
struct path_for<simd::isa::avx512> : simd::use_path<register_path> {};
#endif

}  // namespace kernels::conv
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX512
