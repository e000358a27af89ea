// Transposed convolution, the portable gather (gather_path of ops/transpose_conv/path.hpp): the filter as int16
// [KH][KW][Cin][Cout], the loop over contiguous output channels left to the compiler's vectorizer. The member of
// transpose_conv defined out of class for the targets whose native_path is gather_path (every target without AVX2:
// scalar, NEON); ops/transpose_conv.hpp declares it and includes this file after the class.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/transpose_conv.hpp"
#include "mosaiq/simd/target.hpp"

#if !MOSAIQ_TARGET_AVX2

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Every tap landing on output pixel (oy, ox), summed into `sums` (Cout entries, bias included).
template <transpose_conv_config Cfg, quantized_element T>
inline void transpose_conv<Cfg, T>::gather_pixel(const tensor_view<const T>& in, int oy, int ox, hw pad,
                                                 std::array<std::int32_t, cout>& sums) const {
  const auto rows = taps_onto(oy, pad.h, Cfg.stride.h, kh, in.height());
  const auto columns = taps_onto(ox, pad.w, Cfg.stride.w, kw, in.width());
  const std::ptrdiff_t tap_stride = static_cast<std::ptrdiff_t>(channels_) * cout;
  sums = bias_;
  for (int iy = rows.first; iy <= rows.last; ++iy)
    for (int ix = columns.first; ix <= columns.last; ++ix) {
      const int fy = oy + pad.h - iy * Cfg.stride.h, fx = ox + pad.w - ix * Cfg.stride.w;
      accumulate(in.pixel(0, iy, ix), packed_.data() + (fy * kw + fx) * tap_stride, sums);
    }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // !MOSAIQ_TARGET_AVX2
