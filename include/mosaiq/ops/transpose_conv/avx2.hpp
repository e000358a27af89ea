// Transposed convolution, the AVX2 gather (pairs_path of ops/transpose_conv/path.hpp): the filter regrouped into
// int16 pairs of input channels at load, vpmaddwd into 8 output channels per register. Members of transpose_conv
// defined out of class: ops/transpose_conv.hpp declares them and includes this file after the class.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/transpose_conv.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX2

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// packed_ regrouped as [tap][input channel pair][Cout rounded to 8][2] (missing channels: 0).
template <transpose_conv_config Cfg, quantized_element T>
inline void transpose_conv<Cfg, T>::pack_pairs() {
  const int pairs = (channels_ + 1) / 2;
  pairs_.assign(static_cast<std::size_t>(taps) * pairs * lane_blocks * 16, 0);
  for (int tap = 0; tap < taps; ++tap)
    for (int ic = 0; ic < channels_; ++ic)
      for (int oc = 0; oc < cout; ++oc)
        pairs_[((static_cast<std::size_t>(tap) * pairs + ic / 2) * lane_blocks * 8 + oc) * 2 + ic % 2] =
            packed_[(static_cast<std::size_t>(tap) * channels_ + ic) * cout + oc];
  packed_ = {};  // the pairs replace it
}

/// acc += (x - input_zp) * w for one input pixel and one tap's pair block, two input channels per vpmaddwd.
template <transpose_conv_config Cfg, quantized_element T>
inline void transpose_conv<Cfg, T>::accumulate_pairs(const T* x, const std::int16_t* w,
                                                     __m256i (&acc)[lane_blocks]) const noexcept {
  const std::int32_t zp = requant_.input_zero_point;
  const int pairs = channels_ / 2;
  const auto pair_of = [](std::int32_t lo, std::int32_t hi) {
    return _mm256_set1_epi32(
        static_cast<std::int32_t>((static_cast<std::uint32_t>(hi) << 16) | (static_cast<std::uint32_t>(lo) & 0xffffu)));
  };
  const auto add_pair = [&](__m256i both, const std::int16_t* row) {
    for (int b = 0; b < lane_blocks; ++b)
      acc[b] = _mm256_add_epi32(
          acc[b], _mm256_madd_epi16(both, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16 * b))));
  };
  for (int p = 0; p < pairs; ++p)
    add_pair(pair_of(std::int32_t{x[2 * p]} - zp, std::int32_t{x[2 * p + 1]} - zp), w + p * lane_blocks * 16);
  if (channels_ % 2 != 0) add_pair(pair_of(std::int32_t{x[channels_ - 1]} - zp, 0), w + pairs * lane_blocks * 16);
}

/// Every tap landing on output pixel (oy, ox), summed into `sums` (Cout entries, bias included).
template <transpose_conv_config Cfg, quantized_element T>
inline void transpose_conv<Cfg, T>::gather_pixel(const tensor_view<const T>& in, int oy, int ox, hw pad,
                                                 std::array<std::int32_t, cout>& sums) const {
  const auto rows = taps_onto(oy, pad.h, Cfg.stride.h, kh, in.height());
  const auto columns = taps_onto(ox, pad.w, Cfg.stride.w, kw, in.width());
  const std::ptrdiff_t tap_stride = static_cast<std::ptrdiff_t>((channels_ + 1) / 2) * lane_blocks * 16;
  __m256i acc[lane_blocks];
  for (auto& a : acc) a = _mm256_setzero_si256();
  for (int iy = rows.first; iy <= rows.last; ++iy)
    for (int ix = columns.first; ix <= columns.last; ++ix) {
      const int fy = oy + pad.h - iy * Cfg.stride.h, fx = ox + pad.w - ix * Cfg.stride.w;
      accumulate_pairs(in.pixel(0, iy, ix), pairs_.data() + (fy * kw + fx) * tap_stride, acc);
    }
  alignas(32) std::array<std::int32_t, lane_blocks * 8> lanes;
  for (int b = 0; b < lane_blocks; ++b) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes.data() + 8 * b), acc[b]);
  for (int oc = 0; oc < cout; ++oc)
    sums[static_cast<std::size_t>(oc)] = bias_[static_cast<std::size_t>(oc)] + lanes[static_cast<std::size_t>(oc)];
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX2
