// Quantized softmax over channels and logistic, table driven, bit-exact with reference/softmax.hpp:
//
//   mosaiq::softmax<mosaiq::softmax_config{.channels = 2}, mosaiq::u8> sm(input_quant, beta);  // load time: tables
//   sm(input, output);     // output quantization: reference::probability_output_params<T> (1/256, min(T))
//   mosaiq::logistic<mosaiq::i8> sigmoid(input_quant);
//   sigmoid(input, output);
//
// Two classes (segmentation heads). The reference output of a pixel depends on d = x0 - x1 only (both entries are
// taken relative to the row maximum), and out1(d) = out0(-d) exactly because the two share one sum. So a 511-entry
// table P[255 + d] = reference out0 of a pair with difference d, built by running reference::softmax itself on the
// 511 pairs, gives out0 = P[255 + d], out1 = P[255 - d] bit for bit (never 256 - out0: that differs in rare cases).
// P is constant below some index `first` and above `last`, so indices are clamped to that window first:
//   AVX-512 VBMI  one vpermi2b (128 entries) when the window fits, else four plus three byte blends;
//   AVX2          16-entry pshufb lookups XOR-telescoped over the window when it has at most 128 entries (input
//                 scale * beta above about 0.09); wider windows run the scalar loop (2 loads and a subtract per
//                 pixel), as does AVX-512 without VBMI above 128 entries;
//   NEON aarch64  vqtbx4q (64 entries) chained over the window; armv7 runs the scalar loop.
// Pixels are processed as byte pairs of dense views (the lookups produce interleaved out0/out1 directly); strided
// views go pixel by pixel through the scalar twin.
//
// Other channel counts (every ISA with 32-bit lanes, simd/lanes.hpp; scalar builds call reference::softmax):
//   1..32 channels   16 pixels per block, one int32 lane per pixel (vectorized across pixels, not across the tiny
//                    channel axis): channels transposed through a byte buffer, lane max, exp entries gathered
//                    (vpgatherdd on AVX-512/AVX2, scalar loads on NEON) and summed (< 2^30), then
//   33+ channels     one pixel at a time, vectorized along the channels (gathered entries, int32 partial sums
//                    flushed to 64 bits), pixels with sum >= 2^30 (over 128 channels near the maximum) go scalar;
// both normalize exactly: q = trunc(float(256 e + sum/2) * (1/float(sum))) is within one of the reference's
// 64-bit quotient, and the int32 remainder 256 e + sum/2 - q sum (exact mod 2^32, |r| < 2^31) corrects it.
//
// Log-softmax (TFLite LOG_SOFTMAX, bit-exact with reference::log_softmax; output quantization 16/256 at max(T)):
//   mosaiq::log_softmax<mosaiq::softmax_config{.channels = 21}, mosaiq::u8> lsm(input_quant);  lsm(input, output);
// Two classes use the same 511-entry difference table as softmax (built from reference::log_softmax). Other channel
// counts gather two 256-entry int32 tables indexed by x - max + 255 (the exp term in Q12.19, 0 below diff_min; the
// difference in Q5.26), sum per pixel, take one scalar fixed-point log per pixel, and compute the outputs in lanes
// (subtract, rounding shift by 22, clamp, the row's cutoff as a mask): 1..32 channels 16 pixels per block as above,
// 33..4095 along the channels.
//
// Logistic: the 256-entry reference table indexed by the input byte, looked up with vpermi2b (AVX-512 VBMI),
// XOR-telescoped pshufb (AVX2, AVX-512 without VBMI), vqtbx4q (NEON aarch64), or a scalar loop.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/byte_table.hpp"
#include "mosaiq/ops/softmax/avx2.hpp"
#include "mosaiq/ops/softmax/avx512.hpp"
#include "mosaiq/ops/softmax/neon.hpp"
#include "mosaiq/ops/softmax/pair_table.hpp"
#include "mosaiq/reference/softmax.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/lanes.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of a softmax layer: the channel count it is specialized for.
struct softmax_config {
  int channels = 2;
  friend constexpr bool operator==(const softmax_config&, const softmax_config&) = default;
};

namespace detail::probability {

using softmax_pairs::byte;
using softmax_pairs::pair_table;

/// The scalar twin over `pixels` pairs at `in` (element type T, so d needs no flip).
template <quantized_element T>
inline void pairs_scalar(const pair_table& table, const T* in, T* out, std::size_t pixels) noexcept {
  for (std::size_t i = 0; i < pixels; ++i) {
    const int d = static_cast<int>(in[2 * i]) - static_cast<int>(in[2 * i + 1]);
    out[2 * i] = static_cast<T>(table.by_index[static_cast<std::size_t>(255 + d)]);
    out[2 * i + 1] = static_cast<T>(table.by_index[static_cast<std::size_t>(255 - d)]);
  }
}

/// Two-class softmax over `pixels` dense pairs.
template <quantized_element T>
inline void pairs_dense(const pair_table& table, const T* in, T* out, std::size_t pixels) noexcept {
  [[maybe_unused]] constexpr byte flip = std::same_as<T, i8> ? 0x80 : 0x00;
  [[maybe_unused]] const auto* in_bytes = reinterpret_cast<const byte*>(in);
  [[maybe_unused]] auto* out_bytes = reinterpret_cast<byte*>(out);
  std::size_t done = 0;
#if MOSAIQ_TARGET_AVX512_VBMI
  if (table.window_size() <= 128)
    softmax_pairs::pairs_vbmi<true>(table, in_bytes, out_bytes, pixels, flip);
  else
    softmax_pairs::pairs_vbmi<false>(table, in_bytes, out_bytes, pixels, flip);
  done = pixels;
#elif MOSAIQ_TARGET_AVX2
  if (table.window_size() <= 128) done = softmax_pairs::pairs_avx2(table, in_bytes, out_bytes, pixels, flip);
#elif MOSAIQ_TARGET_NEON64
  done = softmax_pairs::pairs_neon(table, in_bytes, out_bytes, pixels, flip);
#endif
  pairs_scalar<T>(table, in + 2 * done, out + 2 * done, pixels - done);
}

/// The two-class table of a channel-wise op whose outputs depend on x0 - x1 only: P[255 + d] is the reference's out0
/// for the pair (x0, x1) with x0 - x1 = d, taken from one reference run over all 511 pairs.
template <quantized_element T, class Reference>
pair_table make_pair_table(Reference reference) {
  constexpr int lowest = element_traits<T>::min;
  std::array<T, 2 * 511> pairs{}, outputs{};
  for (int i = 0; i < 511; ++i) {
    const int d = i - 255;
    pairs[2 * static_cast<std::size_t>(i)] = static_cast<T>(lowest + std::max(d, 0));
    pairs[2 * static_cast<std::size_t>(i) + 1] = static_cast<T>(lowest + std::max(-d, 0));
  }
  reference(tensor_view<const T>(pairs.data(), shape{1, 511, 2}), tensor_view<T>(outputs.data(), shape{1, 511, 2}));
  pair_table table;
  for (std::size_t i = 0; i < 511; ++i) table.by_index[i] = static_cast<std::uint8_t>(outputs[2 * i]);
  table.finish();
  return table;
}

/// Two-class views: dense ones through the vector lookups, strided ones pixel by pixel.
template <quantized_element T>
void run_pairs(const pair_table& table, tensor_view<const T> in, tensor_view<T> out) {
  if (in.is_dense() && out.is_dense()) {
    pairs_dense<T>(table, in.data(), out.data(), static_cast<std::size_t>(in.batch()) * in.dims().pixels());
    return;
  }
  for (int n = 0; n < in.batch(); ++n)
    for (int y = 0; y < in.height(); ++y)
      for (int x = 0; x < in.width(); ++x) pairs_scalar<T>(table, in.pixel(n, y, x), out.pixel(n, y, x), 1);
}

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
      const std::uint64_t probability_q8 = std::min<std::uint64_t>(255, ((entry << 8) + sum / 2) / sum);
      result[c] = static_cast<T>(static_cast<std::int32_t>(probability_q8) + element_traits<T>::min);
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

#if MOSAIQ_TARGET_SIMD
inline constexpr bool has_lanes = true;
namespace vec {
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

/// Largest channel count of the transposed path: sums stay below 2^30 (at most channels * 2^23).
inline constexpr int max_transposed_channels = 32;

/// Small depths: 16 pixels per block, one lane per pixel; channels are transposed through a byte buffer (as u8:
/// i8 ^ 0x80 keeps every difference), the entries of a block stay in registers for the normalization.
/// 16 pixels of at most max_transposed_channels channels transposed into bytes, channel c of pixel i at
/// bytes[16 c + i], as u8 (i8 ^ 0x80 keeps every difference); pixels past the last one are zeros.
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
      const std::uint64_t probability_q8 = std::min<std::uint64_t>(255, ((entry << 8) + sum / 2) / sum);
      result[c] = static_cast<T>(static_cast<std::int32_t>(probability_q8) + element_traits<T>::min);
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
}  // namespace vec
#else
inline constexpr bool has_lanes = false;
#endif

/// The view-taking entry points of the channel-wise ops: any extents, const or mutable input, forwarded to
/// Op::run on dynamic views.
template <class Op, quantized_element T>
struct view_entry_points {
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out) const {
    static_cast<const Op&>(*this).run(tensor_view<const T>(in), tensor_view<T>(out));
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out) const {
    static_cast<const Op&>(*this).run(tensor_view<const T>(in), tensor_view<T>(out));
  }
};

template <class T>
bool check_same_views(const tensor_view<const T>& in, const tensor_view<T>& out, const char* what) {
  if (!check_view(in, what) || !check_view(out, what)) return false;
  return require(in.batch() == out.batch() && in.dims() == out.dims(), errc::shape_mismatch, what);
}

/// What softmax and log_softmax share: the two-class table, the checks of a run and the choice of path. Op gives
/// valid(), its messages (invalid, views, channels), run_lanes (the vector paths on `pixels` pixels at a pixel
/// stride) and run_reference (scalar builds).
template <class Op, softmax_config Cfg, quantized_element T>
class channel_probability : public view_entry_points<Op, T> {
 public:
  /// Views may be strided; misuse is reported through mosaiq::require and leaves `out` untouched.
  void run(tensor_view<const T> in, tensor_view<T> out) const {
    const Op& op = static_cast<const Op&>(*this);
    if (!require(op.valid(), errc::invalid_argument, Op::invalid_message)) return;
    if (!check_same_views(in, out, Op::views_message)) return;
    if (!require(in.channels() == Cfg.channels, errc::shape_mismatch, Op::channels_message)) return;
    if constexpr (Cfg.channels == 2) {
      run_pairs<T>(pairs_, in, out);
    } else {
#if MOSAIQ_TARGET_SIMD
      // Every pixel is at data + k * pixel_stride (rows and images follow the pixel stride).
      const std::size_t pixels = static_cast<std::size_t>(in.batch()) * in.dims().pixels();
      if (pixels == 0) return;
      op.run_lanes(in.data(), in.pixel_stride(), out.data(), out.pixel_stride(), pixels);
#else
      op.run_reference(in, out);
#endif
    }
  }

 protected:
  /// Load time: the two-class table from the op's reference run (only when the op is valid).
  template <class Reference>
  void build_pairs(Reference reference) {
    if constexpr (Cfg.channels == 2) {
      if (static_cast<const Op&>(*this).valid()) pairs_ = make_pair_table<T>(reference);
    }
  }

 private:
  pair_table pairs_{};
};

}  // namespace detail::probability

/// Softmax over the channels of every pixel, specialized for Cfg.channels; see the file comment.
template <softmax_config Cfg, quantized_element T>
class softmax : public detail::probability::channel_probability<softmax<Cfg, T>, Cfg, T> {
  static_assert(Cfg.channels >= 1, "softmax: channels must be at least 1");
  friend class detail::probability::channel_probability<softmax, Cfg, T>;

 public:
  static constexpr softmax_config config = Cfg;
  /// True when the run uses the two-class difference table or the vector paths (every ISA with 32-bit lanes);
  /// otherwise (scalar builds, other channel counts than 2) it calls reference::softmax.
  static constexpr bool specialized = Cfg.channels == 2 || detail::probability::has_lanes;
  static constexpr quant_params output_params = reference::probability_output_params<T>;

  /// Load time: builds the tables from the input quantization and beta (reported as errc::invalid_argument, and the
  /// object refuses to run, unless the scale and beta are finite and positive).
  explicit softmax(quant_params input, float beta = 1.0f) : table_(input, beta) {
    this->build_pairs([&](tensor_view<const T> in, tensor_view<T> out) { run_reference(in, out); });
  }

  bool valid() const noexcept { return table_.valid(); }
  const reference::softmax_table& exp_table() const noexcept { return table_; }

 private:
  static constexpr const char* invalid_message = "softmax: built from invalid quantization or beta";
  static constexpr const char* views_message = "softmax: input and output views must be valid and match";
  static constexpr const char* channels_message = "softmax: channels differ from config.channels";

  void run_lanes([[maybe_unused]] const T* in, [[maybe_unused]] std::ptrdiff_t in_stride, [[maybe_unused]] T* out,
                 [[maybe_unused]] std::ptrdiff_t out_stride, [[maybe_unused]] std::size_t pixels) const noexcept {
#if MOSAIQ_TARGET_SIMD
    if constexpr (Cfg.channels <= detail::probability::vec::max_transposed_channels)
      detail::probability::vec::transposed<T>(table_.entries(), in, in_stride, out, out_stride, pixels, Cfg.channels);
    else
      detail::probability::vec::along_channels<T>(table_.entries(), in, in_stride, out, out_stride, pixels,
                                                  Cfg.channels);
#endif
  }
  /// The reference (exp table + exact per-element integer division).
  void run_reference(tensor_view<const T> in, tensor_view<T> out) const { reference::softmax<T>(table_, in, out); }

  reference::softmax_table table_;
};

/// Log-softmax over the channels of every pixel (TFLite's quantized LOG_SOFTMAX, beta 1), specialized for
/// Cfg.channels, bit-exact with reference::log_softmax; see the file comment.
template <softmax_config Cfg, quantized_element T>
class log_softmax : public detail::probability::channel_probability<log_softmax<Cfg, T>, Cfg, T> {
  static_assert(Cfg.channels >= 1 && Cfg.channels <= reference::log_softmax_params::max_channels,
                "log_softmax: channels must be in [1, 4095] (the fixed-point sum of exponentials overflows above)");
  friend class detail::probability::channel_probability<log_softmax, Cfg, T>;

 public:
  static constexpr softmax_config config = Cfg;
  /// True when the run uses the two-class difference table or the vector paths (every ISA with 32-bit lanes);
  /// otherwise (scalar builds, other channel counts than 2) it calls reference::log_softmax.
  static constexpr bool specialized = Cfg.channels == 2 || detail::probability::has_lanes;
  static constexpr quant_params output_params = reference::log_softmax_output_params<T>;

  /// Load time: TFLite's Prepare and the tables (errc::invalid_argument, and the object refuses to run, unless the
  /// input scale is finite and above 2^-26).
  explicit log_softmax(quant_params input) : params_(input), tables_(params_) {
    this->build_pairs([&](tensor_view<const T> in, tensor_view<T> out) { run_reference(in, out); });
  }

  bool valid() const noexcept { return params_.valid(); }
  const reference::log_softmax_params& params() const noexcept { return params_; }

 private:
  static constexpr const char* invalid_message = "log_softmax: built from invalid quantization";
  static constexpr const char* views_message = "log_softmax: input and output views must be valid and match";
  static constexpr const char* channels_message = "log_softmax: channels differ from config.channels";

  void run_lanes([[maybe_unused]] const T* in, [[maybe_unused]] std::ptrdiff_t in_stride, [[maybe_unused]] T* out,
                 [[maybe_unused]] std::ptrdiff_t out_stride, [[maybe_unused]] std::size_t pixels) const noexcept {
#if MOSAIQ_TARGET_SIMD
    if constexpr (Cfg.channels <= detail::probability::vec::max_transposed_channels)
      detail::probability::vec::log_softmax_transposed<T>(tables_, params_, in, in_stride, out, out_stride, pixels,
                                                          Cfg.channels);
    else
      detail::probability::vec::log_softmax_along_channels<T>(tables_, params_, in, in_stride, out, out_stride, pixels,
                                                              Cfg.channels);
#endif
  }
  void run_reference(tensor_view<const T> in, tensor_view<T> out) const { reference::log_softmax<T>(params_, in, out); }

  reference::log_softmax_params params_;
  detail::probability::log_softmax_tables tables_;
};

/// Logistic (sigmoid) of every element: the reference table, vectorized lookups; see the file comment.
template <quantized_element T>
class logistic : public detail::probability::view_entry_points<logistic<T>, T> {
 public:
  static constexpr quant_params output_params = reference::probability_output_params<T>;

  /// Load time: builds the table (errc::invalid_argument, and the object refuses to run, unless the input scale is
  /// finite and positive).
  explicit logistic(quant_params input) : table_(input) {
    for (std::size_t q = 0; q < 256; ++q) lookup_.values[q] = static_cast<std::uint8_t>(table_.values()[q]);
    lookup_.finish();
  }

  bool valid() const noexcept { return table_.valid(); }
  const reference::logistic_table<T>& table() const noexcept { return table_; }

  void run(tensor_view<const T> in, tensor_view<T> out) const {
    if (!require(valid(), errc::invalid_argument, "logistic: built from invalid quantization")) return;
    if (!detail::probability::check_same_views(in, out, "logistic: input and output views must be valid and match"))
      return;
    detail::run_byte_table<T>(lookup_, in, out);
  }

 private:
  reference::logistic_table<T> table_;
  detail::byte_table lookup_{};
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
