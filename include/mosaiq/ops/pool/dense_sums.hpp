// Per-channel sums of a whole image on 16-bit lanes, for the global average pool and the average pool whose window is
// the whole map (ops/pool/simd.hpp). The image must be dense (pixels `channels` elements apart, rows `width` pixels
// apart), so it is one flat byte stream whose byte i holds channel i mod C. It is read in steps of L bytes, K vectors,
// L a multiple of lcm(C, vector bytes): byte p of every step holds channel p mod C, so each byte lane keeps one
// channel throughout. Per vector of 16-bit words x (two bytes each, the low byte first),
//   all  += x        (wraps: the sum of lo + 256 hi mod 2^16)
//   high += x >> 8   (the sum of the high bytes)
// and every 256 steps (a lane's byte sum stays <= 255 * 256 < 2^16) the low bytes' sum is all - (high << 8) mod 2^16,
// added with high into int32 sums per step position; at the end the positions of one channel are added up. i8 is
// read as q + 128 (x ^ 0x8080) and 128 per pixel subtracted at the end. The image's last partial step is added byte
// by byte. A load and three operations per vector of bytes for u8 (four for i8), against a widening load and an add
// per 16 channels in channel_sums. `in_register` (ops/pool/x86.hpp, neon.hpp) keeps each loaded vector in a
// register. Channel counts whose step would need more than max_vectors vectors, images under min_image_bytes and
// views that are not dense are not taken (applies() is false; the caller runs channel_sums).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <utility>

#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/pool/neon.hpp"
#include "mosaiq/ops/pool/x86.hpp"
#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_SIMD

#include <xsimd/xsimd.hpp>

#include "mosaiq/simd/arch.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::pooling::dense_sums {

static_assert(std::endian::native == std::endian::little, "the low byte of a 16-bit lane is the first byte");

using bytes = xsimd::batch<std::uint8_t, simd::native_arch>;
using words = xsimd::batch<std::uint16_t, simd::native_arch>;
inline constexpr int vector_bytes = static_cast<int>(bytes::size);
/// Vectors per step: at least 4 (a step of 1-3 vectors is repeated), at most what leaves registers for the loads
/// (two accumulators per vector: 16 of 32 registers on AVX-512 and aarch64, 12 of 16 on AVX2 and armv7).
inline constexpr int min_vectors = 4;
inline constexpr int max_vectors = MOSAIQ_TARGET_AVX512 || MOSAIQ_TARGET_NEON64 ? 8 : 6;
inline constexpr int max_step_bytes = max_vectors * vector_bytes;
/// Smaller images go the other way (channel_sums): below about 4 KB the fixed cost here (flushing and folding the
/// per-position sums) is more than what the 16-bit loop saves (docs/decisions.md has the measurements).
inline constexpr std::ptrdiff_t min_image_bytes = 4096;
/// Steps summed in 16-bit lanes before they are added to the int32 sums: 256 * 255 < 2^16.
inline constexpr int steps_per_flush = 256;

/// The vectors per step for `channels` channels, or 0 when the step would need more than max_vectors.
constexpr int vectors_for(int channels) noexcept {
  if (channels < 1 || channels > max_step_bytes) return 0;
  const int base = std::lcm(channels, vector_bytes) / vector_bytes;
  int k = base;
  while (k < min_vectors) k += base;
  return k <= max_vectors ? k : 0;
}

/// The int32 sums per position of a step of K vectors (byte p of every step holds channel p mod C), summed over runs
/// of the image in 16-bit lanes flushed every steps_per_flush steps.
template <quantized_element T, int K>
struct step_sums {
  static constexpr int step = K * vector_bytes;
  /// XORed into every byte so that it reads as an unsigned value: q + 128 for i8.
  static constexpr std::uint16_t bias = element_traits<T>::is_signed ? 0x8080 : 0;

  /// Written by the first flush (no clearing pass: stores of another width just before the vector loads of the
  /// flush would stall them), added to after it.
  std::uint32_t positions[step];
  bool flushed = false;

  /// `count` (<= steps_per_flush) steps from p, each `stride` bytes after the previous one, added to the 16-bit sums.
  [[gnu::noinline]] static void add_steps(const std::uint8_t* p, std::ptrdiff_t count, std::ptrdiff_t stride,
                                          words* all, words* high) noexcept {
    words a[K], h[K];
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) {
      a[k] = all[k];
      h[k] = high[k];
    }
    for (const std::uint8_t* end = p + count * stride; p != end; p += stride) {
#pragma GCC unroll 8
      for (int k = 0; k < K; ++k) {
        words x = xsimd::bitwise_cast<words>(bytes::load_unaligned(p + k * vector_bytes));
        if constexpr (bias != 0) x ^= words(bias);
        in_register(x);  // else GCC reads x from memory twice, for the add and for the shift
        a[k] += x;
        h[k] += x >> 8;
      }
    }
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) {
      all[k] = a[k];
      high[k] = h[k];
    }
  }

  /// Adds the 16-bit sums to the int32 sums per position and clears them.
  void flush(words* all, words* high) noexcept {
    alignas(64) std::uint16_t a[step / 2], h[step / 2];
    for (int k = 0; k < K; ++k) {
      all[k].store_aligned(a + k * vector_bytes / 2);
      high[k].store_aligned(h + k * vector_bytes / 2);
      all[k] = high[k] = words(0);
    }
    if (!flushed) {
      for (int j = 0; j < step / 2; ++j) {
        positions[2 * j] = static_cast<std::uint16_t>(a[j] - (h[j] << 8));
        positions[2 * j + 1] = h[j];
      }
      flushed = true;
    } else {
      for (int j = 0; j < step / 2; ++j) {
        positions[2 * j] += static_cast<std::uint16_t>(a[j] - (h[j] << 8));
        positions[2 * j + 1] += h[j];
      }
    }
  }

  /// `length` bytes from p, the first pixel's first byte: whole steps, then the rest one byte at a time; called once.
  void add_run(const std::uint8_t* p, std::ptrdiff_t length) noexcept {
    words all[K], high[K];
    for (int k = 0; k < K; ++k) all[k] = high[k] = words(0);
    const std::ptrdiff_t steps = length / step;
    std::ptrdiff_t pending = 0;
    for (std::ptrdiff_t done = 0; done < steps;) {
      if (pending == steps_per_flush) {
        flush(all, high);
        pending = 0;
      }
      const std::ptrdiff_t chunk = std::min<std::ptrdiff_t>(steps - done, steps_per_flush - pending);
      add_steps(p + done * step, chunk, step, all, high);
      done += chunk;
      pending += chunk;
    }
    flush(all, high);
    // The last partial step, byte by byte (a padded copy for the vector loop costs more: its stores of other widths
    // stall the vector loads that read it).
    const std::ptrdiff_t rest = length - steps * step;
    for (std::ptrdiff_t i = 0; i < rest; ++i)
      positions[i] += static_cast<std::uint8_t>(p[steps * step + i] ^ static_cast<std::uint8_t>(bias));
  }
};

/// image_channel_sums with K vectors per step.
template <quantized_element T, int K>
[[gnu::noinline]] void image_sums(const tensor_view<const T>& in, int n, std::int32_t* sums) noexcept {
  step_sums<T, K> acc;
  const int channels = in.channels();
  const std::ptrdiff_t row_bytes = std::ptrdiff_t{in.width()} * channels;
  acc.add_run(reinterpret_cast<const std::uint8_t*>(in.pixel(n, 0, 0)), row_bytes * in.height());
  const std::int32_t pixel_bias = element_traits<T>::is_signed ? 128 : 0;
  const std::int32_t bias_total = pixel_bias * in.height() * in.width();  // < 2^31: pixels <= 2^31 / 256
  // Positions m * C + c for every m hold channel c: added a whole channel row at a time (vectorizable).
  std::uint32_t totals[max_step_bytes];
  for (int c = 0; c < channels; ++c) totals[c] = acc.positions[c];
  for (int m = channels; m < step_sums<T, K>::step; m += channels)
    for (int c = 0; c < channels; ++c) totals[c] += acc.positions[m + c];
  for (int c = 0; c < channels; ++c) sums[c] = static_cast<std::int32_t>(totals[c]) - bias_total;
}

/// Whether image_channel_sums takes `in`: a dense view (each image one run of bytes) of at least min_image_bytes per
/// image whose channel count has a step.
template <quantized_element T>
bool applies(const tensor_view<const T>& in) noexcept {
  const std::ptrdiff_t row_bytes = std::ptrdiff_t{in.width()} * in.channels();
  return in.is_dense() && in.row_stride() == row_bytes && row_bytes * in.height() >= min_image_bytes &&
         vectors_for(in.channels()) != 0;
}

/// Per channel, the sum over every pixel of image n (raw values), into sums[0, channels); `in` must be a view that
/// applies() takes.
template <quantized_element T>
void image_channel_sums(const tensor_view<const T>& in, int n, std::int32_t* sums) noexcept {
  const int vectors = vectors_for(in.channels());
  [&]<int... K>(std::integer_sequence<int, K...>) {
    (void)((vectors == min_vectors + K && (image_sums<T, min_vectors + K>(in, n, sums), true)) || ...);
  }
  (std::make_integer_sequence<int, max_vectors - min_vectors + 1>{});
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::pooling::dense_sums

#endif  // MOSAIQ_TARGET_SIMD
