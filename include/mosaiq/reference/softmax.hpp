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
// Logistic definition (TFLite's LUTPopulate, float32 as TFLite computes it):
//   lut[q] = clamp(round_half_away(256 * (1 / (1 + exp(-input_scale * (q - zp_in))))) + zp_out)
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"

namespace mosaiq::reference {

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
        for (int c = 0; c < out.channels(); ++c) {
          const std::uint64_t probability_q8 = std::min<std::uint64_t>(255, ((entry(c) << 8) + sum / 2) / sum);
          result[c] = static_cast<T>(static_cast<std::int32_t>(probability_q8) + element_traits<T>::min);
        }
      }
    }
  }
}

/// Float softmax over the channels of every pixel: exp(beta * (x - max)) / sum, computed in double.
inline void softmax(tensor_view<const float> in, tensor_view<float> out, float beta) {
  if (!detail::check_elementwise_views(in, out, "softmax: input and output views must be valid and match")) return;
  for (int n = 0; n < out.batch(); ++n) {
    for (int y = 0; y < out.height(); ++y) {
      for (int x = 0; x < out.width(); ++x) {
        const float* source = in.pixel(n, y, x);
        float* result = out.pixel(n, y, x);
        if (out.channels() == 0) continue;
        const double max = *std::max_element(source, source + in.channels());
        double sum = 0.0;
        for (int c = 0; c < in.channels(); ++c) sum += std::exp(static_cast<double>(beta) * (source[c] - max));
        for (int c = 0; c < out.channels(); ++c)
          result[c] = static_cast<float>(std::exp(static_cast<double>(beta) * (source[c] - max)) / sum);
      }
    }
  }
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

}  // namespace mosaiq::reference
