// Softmax and log-softmax of other channel counts than 2, the vector path of every target with 32-bit lanes
// (simd/lanes.hpp): 1..32 channels 16 pixels per block (transposed), 33+ along the channels; see ops/softmax.hpp's file
// comment. Also the scalar per-pixel formula these paths use for tails and the log-softmax tables. Scalar builds run
// the reference (ops/softmax.hpp asks has_lanes).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/softmax.hpp"
#include "mosaiq/simd/lanes.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::probability {

/// Softmax of every pixel of a strided run (pixel k at in + k * in_stride), any channel count: the reference formula
/// pixel by pixel. Used for the tails and for pixels whose sum exceeds the vector normalization's range.
template <quantized_element T>
inline void rows_scalar(const std::array<std::uint32_t, 256>& exp_table, const T* in, std::ptrdiff_t in_stride, T* out,
                        std::ptrdiff_t out_stride, std::size_t pixels, int channels) noexcept {
  for (std::size_t k = 0; k < pixels; ++k) {
    const T* source = in + static_cast<std::ptrdiff_t>(k) * in_stride;
    T* result = out + static_cast<std::ptrdiff_t>(k) * out_stride;
    std::int32_t max = source[0];
    for (int c = 1; c < channels; ++c) max = std::max<std::int32_t>(max, source[c]);
    std::uint64_t sum = 0;
    for (int c = 0; c < channels; ++c) sum += exp_table[static_cast<std::size_t>(source[c] - max + 255)];
    for (int c = 0; c < channels; ++c) {
      const std::uint64_t entry = exp_table[static_cast<std::size_t>(source[c] - max + 255)];
      result[c] = reference::softmax_probability<T>(entry, sum);
    }
  }
}

/// Load-time tables of a log-softmax, indexed by d + 255 for d = x - max in [-255, 0].
struct log_softmax_tables {
  alignas(64) std::array<std::uint32_t, 256> exp_terms{};     // reference exp_term(d): Q12.19, 0 below diff_min
  alignas(64) std::array<std::uint32_t, 256> scaled_diffs{};  // reference scaled_diff(d): Q5.26

  explicit log_softmax_tables(const reference::log_softmax_params& params) noexcept {
    for (int d = -255; d <= 0; ++d) {
      exp_terms[static_cast<std::size_t>(d + 255)] = static_cast<std::uint32_t>(params.exp_term(d));
      scaled_diffs[static_cast<std::size_t>(d + 255)] = static_cast<std::uint32_t>(params.scaled_diff(d));
    }
  }
};

/// A pixel's log(sum) and its cutoff as a table index (d <= cutoff <=> d + 255 <= cutoff_index).
struct log_softmax_row {
  std::int32_t log_sum, cutoff_index;
  log_softmax_row(const reference::log_softmax_params& params, std::int32_t sum) noexcept
      : log_sum(reference::log_softmax_params::log_sum(sum)), cutoff_index(params.cutoff(log_sum) + 255) {}
};

/// Whether this target runs the vector paths below (every target with 32-bit lanes); scalar builds run the reference.
inline constexpr bool has_lanes = MOSAIQ_TARGET_SIMD;

namespace vec {

/// Largest channel count of the transposed path: sums stay below 2^30 (at most channels * 2^23).
inline constexpr int max_transposed_channels = 32;

// The entry points the front end calls, declared on every target (scalar builds discard the branches naming them);
// defined below where MOSAIQ_TARGET_SIMD.
template <quantized_element T>
inline void transposed(const std::array<std::uint32_t, 256>& exp_table, const T* in, std::ptrdiff_t in_stride, T* out,
                       std::ptrdiff_t out_stride, std::size_t pixels, int channels) noexcept;
template <quantized_element T>
inline void along_channels(const std::array<std::uint32_t, 256>& exp_table, const T* in, std::ptrdiff_t in_stride,
                           T* out, std::ptrdiff_t out_stride, std::size_t pixels, int channels) noexcept;
template <quantized_element T>
inline void log_softmax_transposed(const log_softmax_tables& tables, const reference::log_softmax_params& params,
                                   const T* in, std::ptrdiff_t in_stride, T* out, std::ptrdiff_t out_stride,
                                   std::size_t pixels, int channels) noexcept;
template <quantized_element T>
inline void log_softmax_along_channels(const log_softmax_tables& tables, const reference::log_softmax_params& params,
                                       const T* in, std::ptrdiff_t in_stride, T* out, std::ptrdiff_t out_stride,
                                       std::size_t pixels, int channels) noexcept;

#if MOSAIQ_TARGET_SIMD
using lanes::freg;
using lanes::reg;
using lanes::regs;

/// Table entries at 16 indices in [0, 255].
[[gnu::always_inline]] inline void gather(const std::uint32_t* table, const reg* index, reg* entries) noexcept {
  for (int r = 0; r < regs; ++r) entries[r] = lanes::gather(table, index[r]);
}

/// The reference's min(255, (e * 256 + h) / d) with h = d / 2, exactly, for 0 <= e <= d < 2^30: the float quotient
/// is within 2^-21 relative of the exact one (so off by at most one after truncation), and the remainder
/// n - q * d, exact mod 2^32 and inside (-2^30, 2^31), corrects it.
[[gnu::always_inline]] inline reg normalize(reg e, reg d, reg d_minus_one, reg h, freg inverse) noexcept {
  const reg n = (e << 8) + h;
  const freg nf = lanes::to_float(e) * freg(256.0f) + lanes::to_float(h);
  return xsimd::min(lanes::floor_divide(n, nf, d, d_minus_one, inverse), reg(255));
}

/// The sum of 16 int32 lanes' entries as unsigned 32-bit values, in 64 bits.
[[gnu::always_inline]] inline std::uint64_t sum_entries(const reg* acc) noexcept {
  alignas(64) std::int32_t parts[16];
  lanes::store(parts, acc);
  std::uint64_t sum = 0;
  for (const std::int32_t p : parts) sum += static_cast<std::uint32_t>(p);
  return sum;
}

/// Small depths, 16 pixels per block, one lane per pixel: the block's pixels of at most max_transposed_channels
/// channels transposed into bytes, channel c of pixel i at bytes[16 c + i], as u8 (i8 ^ 0x80 keeps every difference);
/// pixels past the last one are zeros. The entries of a block stay in registers for the normalization.
template <quantized_element T>
struct pixel_block {
  static constexpr std::uint8_t flip = std::same_as<T, i8> ? 0x80 : 0x00;
  alignas(64) std::uint8_t bytes[max_transposed_channels * 16];

  void load(const T* source, std::ptrdiff_t stride, int lanes_used, int channels) noexcept {
    if (lanes_used < 16) std::memset(bytes, 0, sizeof bytes);
    for (int i = 0; i < lanes_used; ++i)
      for (int c = 0; c < channels; ++c)
        bytes[16 * c + i] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(source[i * stride + c]) ^ flip);
  }
  void store(T* result, std::ptrdiff_t stride, int lanes_used, int channels) const noexcept {
    for (int i = 0; i < lanes_used; ++i)
      for (int c = 0; c < channels; ++c)
        result[i * stride + c] = static_cast<T>(static_cast<std::uint8_t>(bytes[16 * c + i] ^ flip));
  }
  /// Channel c widened to int32 lanes.
  void channel(int c, reg* x) const noexcept { lanes::widen<u8>(bytes + 16 * c, x); }
  /// 255 - (the lane's maximum): adding it to a value gives its table index x - max + 255.
  void index_bias(int channels, reg* bias) const noexcept {
    reg x[regs];
    channel(0, bias);
    for (int c = 1; c < channels; ++c) {
      channel(c, x);
      for (int r = 0; r < regs; ++r) bias[r] = xsimd::max(bias[r], x[r]);
    }
    for (int r = 0; r < regs; ++r) bias[r] = reg(255) - bias[r];
  }
};

template <quantized_element T>
inline void transposed(const std::array<std::uint32_t, 256>& exp_table, const T* in, std::ptrdiff_t in_stride, T* out,
                       std::ptrdiff_t out_stride, std::size_t pixels, int channels) noexcept {
  pixel_block<T> block;
  reg entries[max_transposed_channels][regs];
  const auto* table = exp_table.data();
  for (std::size_t k = 0; k < pixels; k += 16) {
    const int lanes_used = static_cast<int>(std::min<std::size_t>(16, pixels - k));
    block.load(in + static_cast<std::ptrdiff_t>(k) * in_stride, in_stride, lanes_used, channels);
    reg bias[regs], x[regs], sum[regs];
    block.index_bias(channels, bias);
    for (int r = 0; r < regs; ++r) sum[r] = reg(0);
    for (int c = 0; c < channels; ++c) {
      block.channel(c, x);
      for (int r = 0; r < regs; ++r) x[r] += bias[r];
      gather(table, x, entries[c]);
      for (int r = 0; r < regs; ++r) sum[r] += entries[c][r];
    }
    reg d_minus_one[regs], h[regs];
    freg inverse[regs];
    for (int r = 0; r < regs; ++r) {
      d_minus_one[r] = sum[r] - reg(1);
      h[r] = sum[r] >> 1;
      inverse[r] = lanes::reciprocal(sum[r]);
    }
    for (int c = 0; c < channels; ++c) {
      reg q[regs];
      for (int r = 0; r < regs; ++r) q[r] = normalize(entries[c][r], sum[r], d_minus_one[r], h[r], inverse[r]);
      lanes::narrow<u8>(block.bytes + 16 * c, q);
    }
    block.store(out + static_cast<std::ptrdiff_t>(k) * out_stride, out_stride, lanes_used, channels);
  }
}

/// Large depths, one pixel at a time, vectorized along the channels: byte max, gathered entries summed in int32 lanes
/// (flushed to 64 bits every 128 blocks), then the exact normalization with the sum broadcast. Pixels whose sum
/// reaches 2^30 (only when more than 128 channels sit near the maximum) take the scalar formula.
template <quantized_element T>
inline void along_channels(const std::array<std::uint32_t, 256>& exp_table, const T* in, std::ptrdiff_t in_stride,
                           T* out, std::ptrdiff_t out_stride, std::size_t pixels, int channels) noexcept {
  const auto* table = exp_table.data();
  const int body = channels / 16 * 16;
  for (std::size_t k = 0; k < pixels; ++k) {
    const T* source = in + static_cast<std::ptrdiff_t>(k) * in_stride;
    T* result = out + static_cast<std::ptrdiff_t>(k) * out_stride;
    T max_value = source[0];
    for (int c = 1; c < channels; ++c) max_value = std::max(max_value, source[c]);
    const std::int32_t max = max_value;
    const reg bias = reg(255 - max);
    std::uint64_t sum = 0;
    int c = 0;
    while (c < body) {
      reg acc[regs], x[regs], e[regs];
      for (int r = 0; r < regs; ++r) acc[r] = reg(0);
      const int stop = std::min(body, c + 128 * 16);
      for (; c < stop; c += 16) {
        lanes::widen<T>(source + c, x);
        for (int r = 0; r < regs; ++r) x[r] += bias;
        gather(table, x, e);
        for (int r = 0; r < regs; ++r) acc[r] += e[r];
      }
      sum += sum_entries(acc);
    }
    for (; c < channels; ++c) sum += table[static_cast<std::size_t>(source[c] - max + 255)];
    if (sum >= (std::uint64_t{1} << 30)) {
      rows_scalar<T>(exp_table, source, in_stride, result, out_stride, 1, channels);
      continue;
    }
    const auto d = static_cast<std::int32_t>(sum);
    const reg d_reg(d), d_minus_one(d - 1), h(d / 2), zero_point(element_traits<T>::min);
    const freg inverse(1.0f / static_cast<float>(d));
    for (c = 0; c < body; c += 16) {
      reg x[regs], e[regs];
      lanes::widen<T>(source + c, x);
      for (int r = 0; r < regs; ++r) x[r] += bias;
      gather(table, x, e);
      for (int r = 0; r < regs; ++r) x[r] = normalize(e[r], d_reg, d_minus_one, h, inverse) + zero_point;
      lanes::narrow<T>(result + c, x);
    }
    for (; c < channels; ++c) {
      const std::uint64_t entry = table[static_cast<std::size_t>(source[c] - max + 255)];
      result[c] = reference::softmax_probability<T>(entry, sum);
    }
  }
}

/// reference::log_softmax_params::output per lane, with top / bottom the output range: bottom at or below the cutoff,
/// else clamp(RoundingDivideByPOT(scaled - log_sum, 22) + top).
[[gnu::always_inline]] inline reg log_softmax_output(reg scaled, reg log_sum, reg index, reg cutoff_index, reg top,
                                                     reg bottom) noexcept {
  constexpr int step_shift = 31 - reference::log_softmax_params::diff_bits - reference::log_softmax_params::output_bits;
  const reg steps = lanes::rounding_divide_by_pot(scaled - log_sum, reg(step_shift));
  const reg clamped = xsimd::max(xsimd::min(steps + top, top), bottom);
  return bottom + lanes::keep_where(index > cutoff_index, clamped - bottom);
}

/// Log-softmax, small depths: 16 pixels per block as in transposed(); the exponential terms are gathered and summed
/// per lane, the 16 logs (one per pixel) are scalar, the outputs are lanes again (as u8: zero point 255, range 0..255,
/// which the i8 flip turns into 127, -128..127).
template <quantized_element T>
inline void log_softmax_transposed(const log_softmax_tables& tables, const reference::log_softmax_params& params,
                                   const T* in, std::ptrdiff_t in_stride, T* out, std::ptrdiff_t out_stride,
                                   std::size_t pixels, int channels) noexcept {
  pixel_block<T> block;
  const reg top = reg(255), bottom = reg(0);
  for (std::size_t k = 0; k < pixels; k += 16) {
    const int lanes_used = static_cast<int>(std::min<std::size_t>(16, pixels - k));
    block.load(in + static_cast<std::ptrdiff_t>(k) * in_stride, in_stride, lanes_used, channels);
    reg bias[regs], x[regs], e[regs], sum[regs];
    block.index_bias(channels, bias);
    for (int r = 0; r < regs; ++r) sum[r] = reg(0);
    for (int c = 0; c < channels; ++c) {
      block.channel(c, x);
      for (int r = 0; r < regs; ++r) x[r] += bias[r];
      gather(tables.exp_terms.data(), x, e);
      for (int r = 0; r < regs; ++r) sum[r] += e[r];
    }
    alignas(64) std::int32_t sums[16], log_sums[16], cutoffs[16];
    lanes::store(sums, sum);
    for (int i = 0; i < 16; ++i) {
      const log_softmax_row row(params, sums[i]);
      log_sums[i] = row.log_sum;
      cutoffs[i] = row.cutoff_index;
    }
    reg log_sum[regs], cutoff_index[regs];
    lanes::load(log_sums, log_sum);
    lanes::load(cutoffs, cutoff_index);
    for (int c = 0; c < channels; ++c) {
      block.channel(c, x);
      for (int r = 0; r < regs; ++r) x[r] += bias[r];
      gather(tables.scaled_diffs.data(), x, e);
      for (int r = 0; r < regs; ++r) e[r] = log_softmax_output(e[r], log_sum[r], x[r], cutoff_index[r], top, bottom);
      lanes::narrow<u8>(block.bytes + 16 * c, e);
    }
    block.store(out + static_cast<std::ptrdiff_t>(k) * out_stride, out_stride, lanes_used, channels);
  }
}

/// Log-softmax, large depths: one pixel at a time, vectorized along the channels (sums of at most 4095 terms of
/// 2^19 fit int32 lanes); the channel tail takes the reference's per-element steps.
template <quantized_element T>
inline void log_softmax_along_channels(const log_softmax_tables& tables, const reference::log_softmax_params& params,
                                       const T* in, std::ptrdiff_t in_stride, T* out, std::ptrdiff_t out_stride,
                                       std::size_t pixels, int channels) noexcept {
  const int body = channels / 16 * 16;
  const reg top = reg(element_traits<T>::max), bottom = reg(element_traits<T>::min);
  for (std::size_t k = 0; k < pixels; ++k) {
    const T* source = in + static_cast<std::ptrdiff_t>(k) * in_stride;
    T* result = out + static_cast<std::ptrdiff_t>(k) * out_stride;
    const std::int32_t max = *std::max_element(source, source + channels);
    const reg bias = reg(255 - max);
    reg acc[regs], x[regs], e[regs];
    for (int r = 0; r < regs; ++r) acc[r] = reg(0);
    int c = 0;
    for (; c < body; c += 16) {
      lanes::widen<T>(source + c, x);
      for (int r = 0; r < regs; ++r) x[r] += bias;
      gather(tables.exp_terms.data(), x, e);
      for (int r = 0; r < regs; ++r) acc[r] += e[r];
    }
    auto sum = static_cast<std::int32_t>(sum_entries(acc));
    for (; c < channels; ++c) sum += params.exp_term(source[c] - max);
    const log_softmax_row row(params, sum);
    const reg log_sum = reg(row.log_sum), cutoff_index = reg(row.cutoff_index);
    for (c = 0; c < body; c += 16) {
      lanes::widen<T>(source + c, x);
      for (int r = 0; r < regs; ++r) x[r] += bias;
      gather(tables.scaled_diffs.data(), x, e);
      for (int r = 0; r < regs; ++r) e[r] = log_softmax_output(e[r], log_sum, x[r], cutoff_index, top, bottom);
      lanes::narrow<T>(result + c, e);
    }
    for (; c < channels; ++c) {
      const std::int32_t d = source[c] - max;
      result[c] =
          reference::log_softmax_params::output<T>(d, params.scaled_diff(d), row.log_sum, row.cutoff_index - 255);
    }
  }
}
#endif  // MOSAIQ_TARGET_SIMD

}  // namespace vec

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail::probability
