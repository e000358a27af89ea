// Reference table-driven probability ops for NHWC u8, i8 and float: softmax over the channel axis and logistic
// (sigmoid). Both have the fixed 8-bit output quantization TFLite uses for probabilities: scale 1/256 with zero
// point 0 (u8) or -128 (i8). The tables are built once, at load time, from the input quantization.
//
// Softmax definition (XNNPACK's lut32norm normalization, made exact with 64-bit arithmetic):
//   T[i] = lrint(2^23 * exp(beta * input_scale * (i - 255)))      i = x - max + 255 in [0, 255]
//   sum  = sum over the channels of T[x_c - max + 255]          (uint64; at least T[255] = 2^23)
//   u8   = min(255, ((T[x_c - max + 255] << 8) + sum / 2) / sum),   i8 = u8 - 128
// Every output is within 1 LSB of round(256 * softmax) (clamped to 255), and outputs depend on the differences
// x_c - max only, so for two classes out0 is a function of d = x0 - x1 alone and out1(d) == out0(-d). It is not
// bit-exact with TFLite's gemmlowp reference (which differs from the ideal rounding by 1 LSB in rare cases) nor
// with XNNPACK qu8 (whose table scale is 2^23 - 1 and which has no beta).
//
// Log-softmax definition (TFLite's quantized reference LogSoftmax, u8 and i8 alike, beta 1; output scale 16/256, zero
// point 255 / 127): with gemmlowp fixed point, d = x - max, s(d) = d * input_scale in Q5.26 (a TFLite multiplier),
//   sum = sum over d >= diff_min of Rescale<Q12.19>(exp(s(d))),   L = log(sum) in Q5.26,
//   out = d > cutoff(L) ? clamp(RoundingDivideByPOT(s(d) - L, 22) + zero point) : min(T)
// bit-exact with TFLite's reference kernels (its optimized uint8 kernel, the default, computes in float from a table).
//
// Logistic definition (TFLite's LUTPopulate, float32 as TFLite computes it):
//   lut[q] = clamp(round_half_away(256 * (1 / (1 + exp(-input_scale * (q - zp_in))))) + zp_out)
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference {

/// Output quantization of softmax and logistic: scale 1/256, zero point 0 (u8) or -128 (i8).
template <quantized_element T>
inline constexpr quant_params probability_output_params{1.0f / 256.0f, element_traits<T>::min};

namespace detail {

template <class T>
bool check_elementwise_views(const tensor_view<const T>& in, const tensor_view<T>& out, const char* what) {
  if (!check_view(in, what) || !check_view(out, what)) return false;
  return require(in.batch() == out.batch() && in.dims() == out.dims(), errc::shape_mismatch, what);
}

}  // namespace detail

/// The 256-entry exp table of a quantized softmax, for one (input scale, beta) pair. Building it is load-time work.
class softmax_table {
 public:
  /// Q23 fixed point: the table entry of the row maximum, exp(0).
  static constexpr std::uint32_t one = std::uint32_t{1} << 23;

  /// Needs a finite input scale > 0 and a finite beta > 0 (reported as errc::invalid_argument otherwise; the table
  /// is then marked invalid and softmax() refuses it). The zero point cancels out of softmax and is not used.
  softmax_table(quant_params input, float beta) {
    const double scaled_beta = static_cast<double>(beta) * static_cast<double>(input.scale);
    valid_ = require(std::isfinite(input.scale) && input.scale > 0.0f && std::isfinite(beta) && beta > 0.0f &&
                         is_usable_real_multiplier(scaled_beta),
                     errc::invalid_argument, "softmax_table: input scale and beta must be finite and positive");
    if (!valid_) return;
    for (int i = 0; i < 256; ++i) {
      const double exp_q23 = static_cast<double>(one) * std::exp(scaled_beta * (i - 255));
      entries_[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(std::lrint(exp_q23));
    }
  }

  bool valid() const noexcept { return valid_; }
  /// entries()[x - max + 255] = lrint(2^23 * exp(beta * input_scale * (x - max))).
  const std::array<std::uint32_t, 256>& entries() const noexcept { return entries_; }

 private:
  std::array<std::uint32_t, 256> entries_{};
  bool valid_ = false;
};

/// One channel's output from its table entry and the pixel's sum of entries: min(255, (entry * 256 + sum / 2) / sum)
/// from the output's minimum (the file comment's formula; the vector paths' scalar tails use it too).
template <quantized_element T>
[[gnu::always_inline]] inline T softmax_probability(std::uint64_t entry, std::uint64_t sum) noexcept {
  const std::uint64_t probability_q8 = std::min<std::uint64_t>(255, ((entry << 8) + sum / 2) / sum);
  return static_cast<T>(static_cast<std::int32_t>(probability_q8) + element_traits<T>::min);
}

/// Softmax over the channels of every pixel. Output quantization: probability_output_params<T>.
template <quantized_element T>
void softmax(const softmax_table& table, std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out) {
  if (!require(table.valid(), errc::invalid_argument, "softmax: the table was built from invalid parameters")) return;
  if (!detail::check_elementwise_views(in, out, "softmax: input and output views must be valid and match")) return;
  const auto& exp_table = table.entries();
  for (int n = 0; n < out.batch(); ++n) {
    for (int y = 0; y < out.height(); ++y) {
      for (int x = 0; x < out.width(); ++x) {
        const T* source = in.pixel(n, y, x);
        T* result = out.pixel(n, y, x);
        if (out.channels() == 0) continue;
        const std::int32_t max = *std::max_element(source, source + in.channels());
        const auto entry = [&](int c) -> std::uint64_t {
          return exp_table[static_cast<std::size_t>(static_cast<std::int32_t>(source[c]) - max + 255)];
        };
        std::uint64_t sum = 0;
        for (int c = 0; c < in.channels(); ++c) sum += entry(c);
        for (int c = 0; c < out.channels(); ++c) result[c] = softmax_probability<T>(entry(c), sum);
      }
    }
  }
}

namespace detail {

/// For every pixel of matching float views: finish(source, result, max, sum) with sum = the sum over the channels of
/// exp(beta * (x - max)), in double.
template <class Finish>
void float_exponential_rows(tensor_view<const float> in, tensor_view<float> out, float beta, const char* what,
                            Finish finish) {
  if (!check_elementwise_views(in, out, what)) return;
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x) {
        const float* source = in.pixel(n, y, x);
        if (out.channels() == 0) continue;
        const double max = *std::max_element(source, source + in.channels());
        double sum = 0.0;
        for (int c = 0; c < in.channels(); ++c) sum += std::exp(static_cast<double>(beta) * (source[c] - max));
        finish(source, out.pixel(n, y, x), max, sum);
      }
}

}  // namespace detail

/// Float softmax over the channels of every pixel: exp(beta * (x - max)) / sum, computed in double.
inline void softmax(tensor_view<const float> in, tensor_view<float> out, float beta) {
  detail::float_exponential_rows(
      in, out, beta, "softmax: input and output views must be valid and match",
      [&](const float* source, float* result, double max, double sum) {
        for (int c = 0; c < out.channels(); ++c)
          result[c] = static_cast<float>(std::exp(static_cast<double>(beta) * (source[c] - max)) / sum);
      });
}

namespace detail::fixed_point {

// gemmlowp fixed point on int32 raw values: a value with I integer bits is raw * 2^(I - 31). Products of a value
// with I bits and one with J bits have I + J bits (saturating_rounding_doubling_high_mul); + and - wrap.

using raw = std::int32_t;

constexpr raw mul(raw a, raw b) noexcept { return saturating_rounding_doubling_high_mul(a, b); }
constexpr raw add(raw a, raw b) noexcept {
  return static_cast<raw>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
constexpr raw sub(raw a, raw b) noexcept {
  return static_cast<raw>(static_cast<std::uint32_t>(a) - static_cast<std::uint32_t>(b));
}
constexpr raw saturate(std::int64_t v) noexcept {
  return static_cast<raw>(
      std::clamp<std::int64_t>(v, std::numeric_limits<raw>::min(), std::numeric_limits<raw>::max()));
}
/// The fixed-point 1 of a format with `integer_bits` (the largest raw value when there are none).
constexpr raw one(int integer_bits) noexcept {
  return integer_bits == 0 ? std::numeric_limits<raw>::max() : raw{1} << (31 - integer_bits);
}
/// x * 2^exponent: saturating for exponent > 0, rounding half away from zero for exponent < 0.
constexpr raw multiply_by_pot(raw x, int exponent) noexcept {
  if (exponent < 0) return rounding_divide_by_pot(x, -exponent);
  if (exponent == 0) return x;
  const raw threshold = static_cast<raw>((std::int64_t{1} << (31 - exponent)) - 1);
  if (x > threshold) return std::numeric_limits<raw>::max();
  if (x < -threshold) return std::numeric_limits<raw>::min();
  return static_cast<raw>(static_cast<std::uint32_t>(x) << exponent);
}
/// The same value in a format with `to_bits` integer bits instead of `from_bits`.
constexpr raw rescale(raw x, int from_bits, int to_bits) noexcept { return multiply_by_pot(x, from_bits - to_bits); }
/// (a + b) / 2, rounded half away from zero.
constexpr raw rounding_half_sum(raw a, raw b) noexcept {
  const std::int64_t sum = std::int64_t{a} + b;
  return static_cast<raw>((sum + (sum >= 0 ? 1 : -1)) / 2);
}

/// exp(a) for a in [-1/4, 0), no integer bits in or out: a Taylor expansion around -1/8.
constexpr raw exp_on_quarter_interval(raw a) noexcept {
  constexpr raw exp_minus_one_eighth = 1895147668, one_third = 715827883;
  const raw x = add(a, raw{1} << 28);  // a + 1/8
  const raw x2 = mul(x, x), x3 = mul(x2, x), x4 = mul(x2, x2);
  const raw x4_over_4 = multiply_by_pot(x4, -2);
  const raw higher_terms = multiply_by_pot(add(mul(add(x4_over_4, x3), one_third), x2), -1);
  return add(exp_minus_one_eighth, mul(exp_minus_one_eighth, add(x, higher_terms)));
}

/// exp(a) for a <= 0 with IntegerBits integer bits, result with none: the quarter interval above, then one
/// multiplication by exp(-2^k) for every bit k of the remaining whole quarters.
template <int IntegerBits>
constexpr raw exp_on_negative_values(raw a) noexcept {
  static_assert(IntegerBits <= 5, "exp_on_negative_values: inputs below -32 are not clamped");
  constexpr int fractional_bits = 31 - IntegerBits;
  constexpr raw quarter = raw{1} << (fractional_bits - 2);
  const raw a_mod_quarter_minus_quarter = sub(a & (quarter - 1), quarter);
  raw result = exp_on_quarter_interval(rescale(a_mod_quarter_minus_quarter, IntegerBits, 0));
  const raw remainder = sub(a_mod_quarter_minus_quarter, a);
  // exp(-2^k) in Q0.31 for k = -2 .. 4.
  constexpr std::array<raw, 7> exp_minus_power_of_two{1672461947, 1302514674, 790015084, 290630308,
                                                      39332535,   720401,     242};
  for (int k = -2; k <= 4; ++k) {
    if (IntegerBits <= k) continue;
    if ((remainder & (raw{1} << (fractional_bits + k))) != 0)
      result = mul(result, exp_minus_power_of_two[static_cast<std::size_t>(k + 2)]);
  }
  return a == 0 ? one(0) : result;
}

/// 1 / (1 + a) for a in [0, 1), no integer bits: three Newton-Raphson steps from 48/17 - 32/17 * (1 + a) / 2.
constexpr raw one_over_one_plus_x(raw a) noexcept {
  constexpr raw forty_eight_seventeenths = 1515870810, minus_thirty_two_seventeenths = -1010580540;  // 2 int bits
  const raw half_denominator = rounding_half_sum(a, one(0));
  raw x = add(forty_eight_seventeenths, mul(half_denominator, minus_thirty_two_seventeenths));
  for (int i = 0; i < 3; ++i) {
    const raw one_minus_half_denominator_times_x = sub(one(2), mul(half_denominator, x));
    x = add(x, rescale(mul(x, one_minus_half_denominator_times_x), 4, 2));
  }
  return rescale(x, 1, 0);  // x / 2 read with one integer bit
}

/// log(x) for x >= 1 given with InBits integer bits, result with OutBits (TFLite's
/// log_x_for_x_greater_than_or_equal_to_1): x = 2^z * r with r in [sqrt(1/2), sqrt(2)) chosen from two
/// normalizations, log r from a rational approximation around 2^(-1/4), accumulated with one spare integer bit.
template <int OutBits, int InBits>
constexpr raw log_of_at_least_one(raw x) noexcept {
  constexpr int accumulator_bits = OutBits + 1;
  constexpr raw log_2 = 1488522236, sqrt_sqrt_half = 1805811301, sqrt_half = 1518500250, one_quarter = 536870912;
  constexpr raw alpha_n = 117049297, alpha_d = 127690142, alpha_i = 1057819769, alpha_f = 638450708;
  constexpr raw shifted_quarter = rescale(one_quarter, 0, accumulator_bits);

  const int z_a_headroom_plus_one = std::countl_zero(static_cast<std::uint32_t>(x));
  const raw r_a = multiply_by_pot(mul(multiply_by_pot(x, z_a_headroom_plus_one - 1), sqrt_half), 1);
  const raw z_a_power =
      saturate(std::int64_t{multiply_by_pot(InBits - z_a_headroom_plus_one, 31 - accumulator_bits)} + shifted_quarter);
  const int z_b_headroom = std::countl_zero(static_cast<std::uint32_t>(mul(x, sqrt_half))) - 1;
  const raw r_b = multiply_by_pot(x, z_b_headroom);
  const raw z_b_power =
      saturate(std::int64_t{multiply_by_pot(InBits - z_b_headroom, 31 - accumulator_bits)} - shifted_quarter);
  const raw r = std::min(r_a, r_b), z_power = std::max(z_a_power, z_b_power);

  const raw p = rounding_half_sum(r, sqrt_sqrt_half);
  raw q = sub(r, sqrt_sqrt_half);
  q = add(q, q);
  const raw q_squared = mul(q, q);
  const raw numerator = add(mul(q, r), mul(mul(q, q_squared), alpha_n));
  const raw denominator_minus_one = add(mul(p, add(add(alpha_i, q), mul(alpha_d, q_squared))), mul(alpha_f, q));
  const raw log_r = mul(rescale(numerator, 0, accumulator_bits), one_over_one_plus_x(denominator_minus_one));
  return rescale(add(mul(z_power, log_2), log_r), accumulator_bits, OutBits);
}

}  // namespace detail::fixed_point

/// Output quantization of log-softmax, the one TFLite requires: scale 16/256, zero point 255 (u8) or 127 (i8), so
/// outputs cover [-255/16, 0].
template <quantized_element T>
inline constexpr quant_params log_softmax_output_params{16.0f / 256.0f, element_traits<T>::max};

/// The load-time parameters of a quantized log-softmax for one input scale (TFLite's LogSoftmax Prepare with beta 1:
/// PreprocessLogSoftmaxScalingExp and CalculateInputRadius), and the per-element steps of its reference kernel.
class log_softmax_params {
 public:
  /// Integer bits of the scaled differences (Q5.26), of the sum of exponentials (Q12.19) and of the output step.
  static constexpr int diff_bits = 5, sum_bits = 12, output_bits = 4;
  /// The sum of exponentials (each at most 2^19 in Q12.19) stays below 2^31 for up to this many channels.
  static constexpr int max_channels = 4095;

  /// Needs a finite input scale in (2^-26, ...) (reported as errc::invalid_argument otherwise, as TFLite's Prepare
  /// rejects it: the scaled-difference multiplier must be above one and its reverse below one).
  explicit log_softmax_params(quant_params input) {
    valid_ = std::isfinite(input.scale) && input.scale > 0.0f;
    if (valid_) {
      const double scaled = std::min(static_cast<double>(input.scale) * double(std::int64_t{1} << (31 - diff_bits)),
                                     double((std::int64_t{1} << 31) - 1));
      const quantized_multiplier forward = quantize_multiplier(scaled);
      valid_ = scaled > 1.0 && forward.shift >= 0;
      if (valid_) {
        input_scale_ = prepare_scale<rounding::tflite_reference>(forward);
        const double reverse = double(std::int64_t{1} << (31 - forward.shift)) / forward.multiplier;
        const quantized_multiplier backward = quantize_multiplier(reverse);
        valid_ = reverse < 1.0 && reverse > 0.0 && backward.shift <= 0;
        reverse_scale_ = prepare_scale<rounding::tflite_reference>(backward);
        const double radius =
            31.0 * double(std::int64_t{1} << (31 - diff_bits)) / double(std::int64_t{1} << forward.shift);
        diff_min_ = -static_cast<std::int32_t>(std::floor(radius));
      }
    }
    require(valid_, errc::invalid_argument, "log_softmax_params: the input scale must be finite and above 2^-26");
  }

  bool valid() const noexcept { return valid_; }
  /// Differences below this one contribute nothing to the sum (TFLite's diff_min).
  std::int32_t diff_min() const noexcept { return diff_min_; }

  /// diff = x - row max (<= 0) in Q5.26.
  std::int32_t scaled_diff(std::int32_t diff) const noexcept {
    return multiply_by_quantized_multiplier<rounding::tflite_reference>(diff, input_scale_);
  }
  /// exp(diff) in Q12.19, the term of the sum; 0 below diff_min.
  std::int32_t exp_term(std::int32_t diff) const noexcept {
    if (diff < diff_min_) return 0;
    return detail::fixed_point::rescale(detail::fixed_point::exp_on_negative_values<diff_bits>(scaled_diff(diff)), 0,
                                        sum_bits);
  }
  /// log(sum) in Q5.26 for a sum of exp_term values (at least one term is exp(0)).
  static std::int32_t log_sum(std::int32_t sum) noexcept {
    return detail::fixed_point::log_of_at_least_one<diff_bits, sum_bits>(sum);
  }
  /// Differences at or below this one give the lowest output (the row's log(sum) would push them past Q5.26).
  std::int32_t cutoff(std::int32_t log_sum) const noexcept {
    const std::int32_t lowest_representable = log_sum + std::numeric_limits<std::int32_t>::min();
    return std::max(diff_min_ - 1,
                    multiply_by_quantized_multiplier<rounding::tflite_reference>(lowest_representable, reverse_scale_));
  }
  /// The output of one element: (scaled diff - log sum) in steps of 1/16, rounded, plus the zero point, clamped.
  template <quantized_element T>
  static T output(std::int32_t diff, std::int32_t scaled_diff, std::int32_t log_sum, std::int32_t cutoff) noexcept {
    if (diff <= cutoff) return static_cast<T>(element_traits<T>::min);
    const std::int32_t steps =
        rounding_divide_by_pot(detail::fixed_point::sub(scaled_diff, log_sum), 31 - diff_bits - output_bits);
    return saturate_cast<T>(steps + element_traits<T>::max);
  }

 private:
  requant_scale input_scale_{}, reverse_scale_{};
  std::int32_t diff_min_ = 0;
  bool valid_ = false;
};

/// Log-softmax over the channels of every pixel, TFLite's quantized reference kernel (LogSoftmax for u8 and i8; beta
/// 1): the sum of exp(x - max) in fixed point, its log, then (x - max - log sum) in steps of 1/16. Output
/// quantization: log_softmax_output_params<T>. Channels: at most log_softmax_params::max_channels.
template <quantized_element T>
void log_softmax(const log_softmax_params& params, std::type_identity_t<tensor_view<const T>> in, tensor_view<T> out) {
  if (!require(params.valid(), errc::invalid_argument, "log_softmax: built from invalid quantization")) return;
  if (!detail::check_elementwise_views(in, out, "log_softmax: input and output views must be valid and match")) return;
  if (!require(in.channels() <= log_softmax_params::max_channels, errc::invalid_argument,
               "log_softmax: more than 4095 channels overflow the fixed-point sum"))
    return;
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x) {
        const T* source = in.pixel(n, y, x);
        T* result = out.pixel(n, y, x);
        if (out.channels() == 0) continue;
        const std::int32_t max = *std::max_element(source, source + in.channels());
        std::int32_t sum = 0;
        for (int c = 0; c < in.channels(); ++c) sum += params.exp_term(source[c] - max);
        const std::int32_t log_sum = log_softmax_params::log_sum(sum);
        const std::int32_t cutoff = params.cutoff(log_sum);
        for (int c = 0; c < out.channels(); ++c) {
          const std::int32_t diff = source[c] - max;
          result[c] = log_softmax_params::output<T>(diff, params.scaled_diff(diff), log_sum, cutoff);
        }
      }
}

/// Float log-softmax over the channels of every pixel: beta * (x - max) - log(sum exp(beta * (x - max))), in double.
inline void log_softmax(tensor_view<const float> in, tensor_view<float> out, float beta = 1.0f) {
  detail::float_exponential_rows(in, out, beta, "log_softmax: input and output views must be valid and match",
                                 [&](const float* source, float* result, double max, double sum) {
                                   const double log_sum = std::log(sum);
                                   for (int c = 0; c < out.channels(); ++c)
                                     result[c] =
                                         static_cast<float>(static_cast<double>(beta) * (source[c] - max) - log_sum);
                                 });
}

/// The 256-entry logistic table of one input quantization, indexed by the input byte (int8 values as uint8).
template <quantized_element T>
class logistic_table {
 public:
  /// Needs a finite input scale > 0 (errc::invalid_argument otherwise; the table is marked invalid).
  explicit logistic_table(quant_params input) {
    valid_ = require(std::isfinite(input.scale) && input.scale > 0.0f, errc::invalid_argument,
                     "logistic_table: input scale must be finite and positive");
    if (!valid_) return;
    // TFLite's float32 steps: 1 / output_scale, dequantize, sigmoid, std::round (half away), + zero point, clamp.
    const quant_params output = probability_output_params<T>;
    const float inverse_output_scale = 1.0f / output.scale;
    for (std::int32_t q = element_traits<T>::min; q <= element_traits<T>::max; ++q) {
      const float dequantized = input.scale * static_cast<float>(q - input.zero_point);
      const float sigmoid = 1.0f / (1.0f + std::exp(-dequantized));
      const float rescaled = std::round(sigmoid * inverse_output_scale);
      const auto quantized = static_cast<std::int32_t>(rescaled + static_cast<float>(output.zero_point));
      values_[static_cast<u8>(q)] = saturate_cast<T>(quantized);
    }
  }

  bool valid() const noexcept { return valid_; }
  /// The output for input q is values()[static_cast<u8>(q)].
  const std::array<T, 256>& values() const noexcept { return values_; }
  T operator()(T q) const noexcept { return values_[static_cast<u8>(q)]; }

 private:
  std::array<T, 256> values_{};
  bool valid_ = false;
};

/// Logistic of every element. Output quantization: probability_output_params<T>.
template <quantized_element T>
void logistic(const logistic_table<T>& table, std::type_identity_t<tensor_view<const T>> in,
              std::type_identity_t<tensor_view<T>> out) {
  if (!require(table.valid(), errc::invalid_argument, "logistic: the table was built from invalid parameters")) return;
  if (!detail::check_elementwise_views(in, out, "logistic: input and output views must be valid and match")) return;
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x) {
        const T* source = in.pixel(n, y, x);
        T* result = out.pixel(n, y, x);
        for (int c = 0; c < out.channels(); ++c) result[c] = table(source[c]);
      }
}

/// Float logistic 1 / (1 + exp(-x)), computed in double.
inline void logistic(tensor_view<const float> in, tensor_view<float> out) {
  if (!detail::check_elementwise_views(in, out, "logistic: input and output views must be valid and match")) return;
  for (int n = 0; n < out.batch(); ++n)
    for (int y = 0; y < out.height(); ++y)
      for (int x = 0; x < out.width(); ++x) {
        const float* source = in.pixel(n, y, x);
        float* result = out.pixel(n, y, x);
        for (int c = 0; c < out.channels(); ++c)
          result[c] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(source[c]))));
      }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::reference
