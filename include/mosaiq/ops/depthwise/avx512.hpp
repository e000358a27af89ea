// Depthwise helpers of the AVX-512 targets (with or without VNNI): the depth-multiplier-2 input
// expansion. The tap-group tail of the AVX2 path takes masked loads here too (ops/depthwise/avx2.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "mosaiq/ops/depthwise/scalar.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX512

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace kernels::dw {

/// dst[2c] = dst[2c + 1] = px[c] for c < channels (depth multiplier 2), 32 channels per step: each
/// byte widened to a 16-bit lane holding it twice. Masked loads and stores stay inside both rows.
template <>
inline constexpr bool replicates_channels<2> = true;
template <>
[[gnu::always_inline]] inline void replicate_channels<2>(const std::uint8_t* px, std::uint8_t* dst,
                                                         int channels) noexcept {
  for (int ic = 0; ic < channels; ic += 32) {
    const int count = std::min(32, channels - ic);
    const __mmask32 mask = count == 32 ? ~__mmask32{0} : (__mmask32{1} << count) - 1;
    const __m512i wide = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, px + ic));
    const __mmask64 pairs = count == 32 ? ~__mmask64{0} : (__mmask64{1} << (2 * count)) - 1;
    _mm512_mask_storeu_epi8(dst + 2 * ic, pairs, _mm512_or_si512(wide, _mm512_slli_epi16(wide, 8)));
  }
}

}  // namespace kernels::dw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX512
