// Pieces the depthwise and pointwise kernels share: workspace layout helpers, the split-weight
// check, and the per-ISA requantize-and-store steps of their microkernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel {

inline constexpr std::size_t align = 64;  // workspace regions start on this many bytes

constexpr int round_up(int v, int m) noexcept { return (v + m - 1) / m * m; }
constexpr std::size_t round_up(std::size_t v, std::size_t m) noexcept { return (v + m - 1) / m * m; }

/// The first `align`-aligned byte of a workspace (workspace_bytes reserves `align` bytes of slack).
inline std::uint8_t* aligned_workspace(std::span<std::byte> workspace) noexcept {
  auto* base = reinterpret_cast<std::uint8_t*>(workspace.data());
  return base + (align - reinterpret_cast<std::uintptr_t>(base) % align) % align;
}

/// Whether some w - filter_zp of a uint8 filter leaves int8 (then the weights are split).
template <class T>
bool needs_split_weights(const T* filter, std::size_t count, std::int32_t filter_zp) noexcept {
  bool split = false;
  for (std::size_t i = 0; i < count; ++i) {
    const std::int32_t w = static_cast<std::int32_t>(filter[i]) - filter_zp;
    split = split || w < -128 || w > 127;
  }
  return split;
}

/// Scalar paths: requantizes the job's valid channels of one pixel's accumulators into `out`.
template <rounding R, class T, class Job>
inline void requantize_store(const Job& job, const std::int32_t* acc, T* out) noexcept {
  for (int c = 0; c < job.valid_channels; ++c)
    out[c] = requantize<R, T>(acc[c], {job.multiplier[c], job.left_shift[c], job.right_shift[c]}, job.output_zero_point,
                              job.clamp_min, job.clamp_max);
}

#if MOSAIQ_TARGET_AVX2
/// multiply_by_quantized_multiplier of channels c..c+7 of a job: with the job's per-lane folded constants where it
/// has them (pointwise, reference rounding: one 64-bit product per lane), else the general lane multiply.
template <rounding R, class Job>
[[gnu::always_inline]] inline __m256i scale_pair_sums(__m256i total, const Job& job, int c) noexcept {
  if constexpr (R == rounding::tflite_reference && requires { job.lanes8; }) {
    if (job.lanes8 != nullptr)
      return simd::avx2::multiply_by_nonnegative_multiplier(
          total, static_cast<const simd::avx2::requant_lanes8*>(job.lanes8)[c / 8]);
  }
  const auto load = [](const std::int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  return simd::avx2::multiply_by_quantized_multiplier<R>(total, load(job.multiplier + c), load(job.left_shift + c),
                                                         load(job.right_shift + c));
}

/// AVX2 paths: 16 channels held as (taps 01, taps 23) pair sums, channels 4q..4q+3 in acc[q], plus
/// `offset` and the job's bias from channel c0, requantized into 16 bytes (Halves = 1: the first 8
/// only, the other 8 bytes left as they are).
template <rounding R, class Job, int Halves = 2>
[[gnu::always_inline]] inline void requantize_pair_sums(const __m256i acc[4], __m256i offset, const Job& job, int c0,
                                                        __m256i zp, __m256i lo, __m256i hi,
                                                        std::uint8_t bytes[16]) noexcept {
  const auto load = [](const std::int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
#pragma GCC unroll 2
  for (int half = 0; half < Halves; ++half) {
    // hadd leaves channels as [0 1 4 5 | 2 3 6 7]; the 64-bit permute restores the order.
    const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[2 * half], acc[2 * half + 1]), 0b11011000);
    const int c = c0 + half * 8;
    const __m256i total = _mm256_add_epi32(_mm256_add_epi32(sums, offset), load(job.bias + c));
    const __m256i v = _mm256_add_epi32(scale_pair_sums<R>(total, job, c), zp);
    simd::avx2::store_low_bytes(bytes + half * 8, _mm256_min_epi32(_mm256_max_epi32(v, lo), hi));
  }
}
#endif

#if MOSAIQ_TARGET_NEON
/// NEON paths: 16 requantized channels (already clamped to T's range, so plain narrowing is exact)
/// into 16 bytes.
template <class T>
[[gnu::always_inline]] inline void narrow_to_bytes(const int16x4_t narrow[4], std::uint8_t bytes[16]) noexcept {
  const int16x8_t low = vcombine_s16(narrow[0], narrow[1]), high = vcombine_s16(narrow[2], narrow[3]);
  if constexpr (element_traits<T>::is_signed) {
    vst1q_u8(bytes, vreinterpretq_u8_s8(vcombine_s8(vmovn_s16(low), vmovn_s16(high))));
  } else {
    vst1q_u8(bytes, vcombine_u8(vmovn_u16(vreinterpretq_u16_s16(low)), vmovn_u16(vreinterpretq_u16_s16(high))));
  }
}
#endif

/// A path's per-layer lane constants (Path::layer_lanes: the requantization lanes its tiles read,
/// chosen at load), or None for paths without.
template <class Path, class None>
struct layer_lanes_of {
  using type = None;
};
template <class Path, class None>
requires requires { typename Path::layer_lanes; }
struct layer_lanes_of<Path, None> {
  using type = typename Path::layer_lanes;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::kernel
