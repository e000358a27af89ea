// Pointwise microkernels, AVX-512 VNNI path: the register-tile GEMM (vnni_path) and the narrow
// kernel of layers with at most 4 output channels (narrow_tile).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/pointwise/tile.hpp"
#include "mosaiq/simd/amx.hpp"
#include "mosaiq/simd/epilogue.hpp"
#include "mosaiq/simd/gemm_x86.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX512_VNNI

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace kernels::pw {

// AVX-512 VNNI: one vpdpbusd (u8 x_d times s8 w', 4 k summed per lane) per pixel, 16 channels and
// k group. uint8 filters whose w - filter_zp leaves int8 use the split weights (file comment).
// GCC 12 reports the intrinsics' own `__Y = __Y` undefined-vector idiom once they are inlined here
// (GCC bug 105593, fixed in 13); the warning is about the compiler header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

/// One 16-byte chunk of 16 rows: the first `chunk` bytes of each (byte-masked xmm loads, nothing past them is
/// read), row 4j + q into 128-bit lane j of r[q]; rows `stride` bytes apart from `row`, those past `last` (unless
/// Full) read row `last` again. One running address keeps the general registers free (16 row addresses spilled).
template <bool Full>
[[gnu::always_inline]] inline void load_chunk_rows(std::uintptr_t row, std::ptrdiff_t stride, __mmask16 chunk, int last,
                                                   __m512i (&r)[4]) noexcept {
#pragma GCC unroll 16
  for (int p = 0; p < 16; ++p) {
    const __m128i bytes = _mm_maskz_loadu_epi8(chunk, reinterpret_cast<const void*>(row));
    if (p < 4)
      r[p] = _mm512_castsi128_si512(bytes);
    else if (p < 8)
      r[p % 4] = _mm512_inserti32x4(r[p % 4], bytes, 1);
    else if (p < 12)
      r[p % 4] = _mm512_inserti32x4(r[p % 4], bytes, 2);
    else
      r[p % 4] = _mm512_inserti32x4(r[p % 4], bytes, 3);
    if (Full || p < last) row += static_cast<std::uintptr_t>(stride);
  }
}

/// The VNNI layer's lanes (a base of pointwise: detail::pw::layer_lanes), in the layer's order.
struct vnni_layer_lanes {
  detail::vector<simd::avx512::requant_lanes> lanes_;          // VNNI and AMX layers: per block of 16 channels
  detail::vector<simd::avx512::requant_lanes> channel_lanes_;  // narrow VNNI layers: per channel
  detail::vector<simd::avx2::requant_lanes8> lanes8_;          // kept empty (avx2_layer_lanes's: choose_lanes8)
};

struct vnni_path {
  using layer_lanes = vnni_layer_lanes;
  static constexpr bool lane_epilogues = true;  // the tile and AMX epilogues take requant_lanes
  using weight_type = std::int8_t;
  using input_type = std::uint8_t;
  static constexpr bool signed_input = false;
  /// Layers of this path run AMX tiles instead where the build has them and the CPU runs them
  /// (ops/pointwise/amx.hpp).
  static constexpr bool amx_tiles = MOSAIQ_HAS_AMX_PATH != 0;
  static constexpr pointwise_tile default_tile{8, 48};

  /// The default tile for a layer of `out_channels`: 8x48 and 6x64 both keep 24 accumulators and
  /// run at the same rate, so take the one whose channel tiles divide the layer. A 256-channel
  /// layer on 8x48 ends in a 16-channel tail tile (8 accumulators, one weight vector per eight
  /// broadcasts) that ran 1/16 of the work in 8.5% of the time (28x28x256, perf).
  /// Two blocks (32 channels) take 12x32, 24 accumulators too: 2-5% faster than 8x32 (112x112
  /// 16->32, 56x56 64->32, the 224x224 stem). One block (at most 16 channels) takes 16x16, the
  /// most pixels a tile has: 5-10% faster than 8x16 (56x56 32->16, 112x112 16->8).
  static constexpr pointwise_tile tile_for(int out_channels) noexcept {
    const int blocks = (out_channels + block - 1) / block;
    if (blocks == 1) return {16, 16};
    if (blocks == 2) return {12, 32};
    return blocks % 3 != 0 && blocks % 4 == 0 ? pointwise_tile{6, 64} : default_tile;
  }

  template <bool Sum>
  static std::int32_t pack_row(const std::uint8_t* src, int channels, input_type* dst, int padded,
                               std::uint8_t flip) noexcept {
    const __m512i flip_bits = _mm512_set1_epi8(static_cast<char>(flip));
    __m512i sums = _mm512_setzero_si512();
    int c = 0;
    for (; c + 64 <= channels; c += 64) {
      const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(src + c), flip_bits);
      _mm512_storeu_si512(dst + c, v);
      if constexpr (Sum) sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, _mm512_setzero_si512()));
    }
    if (c < padded) {
      // Masked loads never touch bytes past the last channel; padding stays 0 (not flipped).
      const int valid = channels - c, stored = padded - c;  // 1..63 and 1..64
      const __mmask64 load_mask = (std::uint64_t{1} << valid) - 1;
      const __mmask64 store_mask = stored == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << stored) - 1;
      const __m512i v =
          _mm512_xor_si512(_mm512_maskz_loadu_epi8(load_mask, src + c), _mm512_maskz_mov_epi8(load_mask, flip_bits));
      _mm512_mask_storeu_epi8(dst + c, store_mask, v);
      if constexpr (Sum) sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, _mm512_setzero_si512()));
    }
    return Sum ? static_cast<std::int32_t>(_mm512_reduce_add_epi64(sums)) : 0;
  }

  /// Lane j of vector q (s0..s3) holds 4 dword partial sums of one row: adds them up, to dword 4j + q.
  /// Vectors by value: an array argument kept them in memory.
  [[gnu::always_inline]] static __m512i lane_totals(__m512i s0, __m512i s1, __m512i s2, __m512i s3) noexcept {
    const __m512i a01 = _mm512_add_epi32(_mm512_unpacklo_epi32(s0, s1), _mm512_unpackhi_epi32(s0, s1));
    const __m512i a23 = _mm512_add_epi32(_mm512_unpacklo_epi32(s2, s3), _mm512_unpackhi_epi32(s2, s3));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(a01, a23), _mm512_unpackhi_epi64(a01, a23));
  }

  /// sums[i] = factor * sum of the `channels` bytes of row i, rows `stride` bytes apart from `rows`, i < count:
  /// the split-weight pixel offsets of rows the tile reads in place (u8 inputs, whole k groups). 16 rows at a
  /// time, as the narrow kernel reads them: per 16-byte chunk, byte-masked xmm loads (nothing past a row's
  /// `channels` bytes is read) inserted as row 4j + q into 128-bit lane j of vector q, one vpdpbusd against ones
  /// per vector, then a 4x4 dword transpose-add. Packing each row with its sum cost more than the tile's own
  /// dot products on layers of 16-24 input channels. Dense rows of 16 bytes take dense16_row_sums.
  static void row_sums(const std::uint8_t* rows, std::ptrdiff_t stride, int channels, int count, std::int32_t factor,
                       std::int32_t* sums) noexcept {
    if (channels == 16 && stride == 16) return dense16_row_sums(rows, count, factor, sums);
    const __m512i ones = _mm512_set1_epi8(1), scale = _mm512_set1_epi32(factor);
    for (int p0 = 0; p0 < count; p0 += block) {
      const int n = std::min(block, count - p0);
      __m512i s[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
      for (int b = 0; b < channels; b += 16) {
        const __mmask16 chunk = static_cast<__mmask16>((1u << std::min(16, channels - b)) - 1u);
        // Lanes past n read the last row again (their sums are not stored).
        __m512i r[4];
        load_chunk_rows<false>(reinterpret_cast<std::uintptr_t>(rows + p0 * stride + b), stride, chunk, n - 1, r);
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) simd::avx512::dot_accumulate(s[q], r[q], ones);
      }
      // Lane j of s[q] holds the 4 group sums of row 4j + q: row 4j + q to dword 4j + q.
      _mm512_mask_storeu_epi32(sums + p0, static_cast<__mmask16>((1u << n) - 1u),
                               _mm512_mullo_epi32(lane_totals(s[0], s[1], s[2], s[3]), scale));
    }
  }

  /// row_sums of rows of exactly 16 bytes back to back (a dense 16-channel input, the selfie models' large maps):
  /// 16 rows are 256 contiguous bytes, four zmm loads with row 4k + j in 128-bit lane j of load k, instead of 16
  /// xmm loads and 12 inserts; one vpdpbusd against ones per load, the transpose-add (row 4k + j to dword 4j + k)
  /// and one vpermd back to row order. A last block of fewer than 16 rows loads with byte masks (nothing past
  /// its rows is read; the lanes of missing rows sum zeros and are not stored).
  /// Never inlined: a first version inlined into the layer's run_rows (through row_sums) made GCC 12 keep the
  /// tile's accumulators in memory, also in layers without split weights (docs/decisions.md, issue 19).
  [[gnu::noinline]] static void dense16_row_sums(const std::uint8_t* rows, int count, std::int32_t factor,
                                                 std::int32_t* sums) noexcept {
    const __m512i ones = _mm512_set1_epi8(1), scale = _mm512_set1_epi32(factor);
    const __m512i row_order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    // The 64 bytes at `from` (rows 4k..4k+3 of a block), masked, summed per dword against ones.
    const auto dword_sums = [ones](const std::uint8_t* from, __mmask64 mask) {
      __m512i s = _mm512_setzero_si512();
      simd::avx512::dot_accumulate(s, _mm512_maskz_loadu_epi8(mask, from), ones);
      return s;
    };
    const auto store = [&](std::int32_t* to, __mmask16 rows_mask, __m512i s0, __m512i s1, __m512i s2, __m512i s3) {
      const __m512i totals = _mm512_permutexvar_epi32(row_order, lane_totals(s0, s1, s2, s3));
      _mm512_mask_storeu_epi32(to, rows_mask, _mm512_mullo_epi32(totals, scale));
    };
    constexpr __mmask64 all = ~__mmask64{0};
    int p0 = 0;
    for (; p0 + block <= count; p0 += block) {
      const std::uint8_t* const from = rows + static_cast<std::ptrdiff_t>(p0) * 16;
      store(sums + p0, 0xFFFF, dword_sums(from, all), dword_sums(from + 64, all), dword_sums(from + 128, all),
            dword_sums(from + 192, all));
    }
    if (p0 == count) return;
    // Bytes of each load inside the last n rows: 64, or fewer down to none.
    const int n = count - p0, bytes = 16 * n;
    const auto mask = [bytes](int k) {
      const int b = std::clamp(bytes - 64 * k, 0, 64);
      return b == 64 ? all : (__mmask64{1} << b) - 1;
    };
    const std::uint8_t* const from = rows + static_cast<std::ptrdiff_t>(p0) * 16;
    store(sums + p0, static_cast<__mmask16>((1u << n) - 1u), dword_sums(from, mask(0)), dword_sums(from + 64, mask(1)),
          dword_sums(from + 128, mask(2)), dword_sums(from + 192, mask(3)));
  }

  template <int MR, int NB, rounding R, class T, requant_epilogue Q = requant_epilogue::general>
  static void tile(const tile_job& job) noexcept {
    const auto* a = static_cast<const input_type*>(job.input);
    const auto* w = static_cast<const weight_type*>(job.weights);
    __m512i acc[MR][NB];
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      const __m512i bias = _mm512_loadu_si512(job.bias + b * block);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p)
        acc[p][b] = job.split ? _mm512_add_epi32(bias, _mm512_set1_epi32(job.pixel_offset[p])) : bias;
    }
    for (int g = 0; g < job.k_groups; ++g) {
      __m512i wv[NB];
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) wv[b] = _mm512_loadu_si512(w + (g * NB + b) * block_elements);
#pragma GCC unroll 16
      for (int p = 0; p < MR; ++p) {
        const __m512i x = _mm512_set1_epi32(static_cast<int>(load_u32(a + p * job.input_stride + g * group)));
#pragma GCC unroll 8
        for (int b = 0; b < NB; ++b) simd::avx512::dot_accumulate(acc[p][b], x, wv[b]);
      }
    }
    const __m512i zp = _mm512_set1_epi32(job.output_zero_point), lo = _mm512_set1_epi32(job.clamp_min),
                  hi = _mm512_set1_epi32(job.clamp_max);
    T* out = static_cast<T*>(job.out);
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      const int valid = job.valid_channels - b * block;
      const __mmask16 store_mask = valid >= block ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << valid) - 1u);
      if constexpr (Q == requant_epilogue::general) {
        const __m512i multiplier = _mm512_loadu_si512(job.multiplier + b * block),
                      left = _mm512_loadu_si512(job.left_shift + b * block),
                      right = _mm512_loadu_si512(job.right_shift + b * block);
#pragma GCC unroll 16
        for (int p = 0; p < MR; ++p) {
          const __m512i v = simd::avx512::requantize_epi32<R>(acc[p][b], multiplier, left, right, zp, lo, hi);
          _mm_mask_storeu_epi8(out + p * job.out_stride + b * block, store_mask, _mm512_cvtepi32_epi8(v));
        }
      } else {
        const auto& lanes = static_cast<const simd::avx512::requant_lanes*>(job.lanes)[b];
        // Read once per block, before the stores: the compiler cannot keep constants it reads after
        // each (possibly aliasing) byte store in registers, and reloaded them for every vector.
        const lane_vectors<Q> constants = lane_vectors<Q>::read(lanes);
#pragma GCC unroll 16
        for (int p = 0; p < MR; ++p) {
          T* const to = out + p * job.out_stride + b * block;
          if constexpr (folds_zero_point(Q)) {
            // Zero point in the offsets, no activation clamp: saturating narrowing is the clamp.
            const __m512i v = simd::avx512::multiply_by_nonnegative_multiplier(acc[p][b], constants);
            if constexpr (std::same_as<T, i8>)
              _mm512_mask_cvtsepi32_storeu_epi8(to, store_mask, v);
            else
              _mm512_mask_cvtusepi32_storeu_epi8(to, store_mask, _mm512_max_epi32(v, _mm512_setzero_si512()));
          } else {
            __m512i v = _mm512_add_epi32(simd::avx512::multiply_by_nonnegative_multiplier(acc[p][b], constants), zp);
            v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
            _mm_mask_storeu_epi8(to, store_mask, _mm512_cvtepi32_epi8(v));
          }
        }
      }
    }
  }
};

template <>
struct path_for<simd::isa::avx512_vnni> : simd::use_path<vnni_path> {};

/// Layers of at most 4 output channels (class-score heads) on AVX-512 VNNI: a vector holds 16
/// pixels of one channel instead of 16 channels of one pixel (of which such a layer uses 1-4), so a
/// k group costs one vpdpbusd per channel per 16 pixels instead of one per pixel. The group's 4
/// bytes of 16 pixels come from the pixels' 16-byte row chunks (four k groups): byte-masked xmm
/// loads (nothing past a row's `row_bytes` is read), inserted as pixel 4j + q into 128-bit lane j
/// of vector q, then transposed as 4x4 dwords within lanes. The channel's weights for the group
/// are one broadcast. Rows are read in place from the input (flipped here; split-weight pixel sums
/// from one more vpdpbusd per group against ones) or from packed rows (conv2d's patches). The
/// epilogue requantizes 16 pixels with the channel's constants replicated over the lanes and
/// interleaves the channels' bytes into each pixel's dword.
struct narrow_job {
  const std::uint8_t* input;    // row of the first pixel
  std::ptrdiff_t input_stride;  // bytes between pixel rows
  int row_bytes;                // bytes of a row to read: whole k groups when packed, Cin in place
  std::uint8_t flip;            // x_d = x ^ flip (in place; packed rows are flipped already)
  const std::int8_t* weights;   // the layer's one block: [k group][16][4], zero-padded to chunks
  const std::int32_t* bias;     // folded, per channel
  const std::int32_t* multiplier;
  const std::int32_t* left_shift;
  const std::int32_t* right_shift;
  const std::int32_t* pixel_offset;  // per pixel: split-weight term (packed rows with split)
  bool split = false;                // split weights: pixel offsets from pixel_offset or, in place, summed here
  bool in_place = false;
  std::int32_t split_factor = 0;
  const simd::avx512::requant_lanes* lanes;  // per channel, the channel's constants in every lane
  std::int32_t output_zero_point, clamp_min, clamp_max;
  void* out;                  // output pixel of the first pixel
  std::ptrdiff_t out_stride;  // elements between output pixels
};

/// 16 pixels (Full), else 1..15 (`pixels`) of a layer of NC <= 4 output channels; see narrow_job.
/// The weights are zero-padded to whole chunks of 4 k groups (the last chunk's missing groups
/// multiply zero bytes with zero weights: no branch in the loop).
template <int NC, rounding R, class T, requant_epilogue Q, bool Full>
[[gnu::always_inline]] inline void narrow_tile(const narrow_job& job, int pixels) noexcept {
  static_assert(NC >= 1 && NC <= 4);
  const __mmask16 valid = pixels >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << pixels) - 1u);
  const bool sum_here = job.split && job.in_place;
  __m512i acc[NC];
  const __m512i offsets =
      job.split && !job.in_place ? _mm512_maskz_loadu_epi32(valid, job.pixel_offset) : _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_add_epi32(_mm512_set1_epi32(job.bias[c]), offsets);
  __m512i sums = _mm512_setzero_si512();
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(job.flip)), ones = _mm512_set1_epi8(1);
  // Lanes past `pixels` read the last pixel's row again (their results are not stored).
  const int last = pixels - 1;
  for (int b = 0; b < job.row_bytes; b += 16) {
    const int n = std::min(16, job.row_bytes - b);
    const __mmask16 chunk = static_cast<__mmask16>((1u << n) - 1u);
    __m512i r[4];
    load_chunk_rows<Full>(reinterpret_cast<std::uintptr_t>(job.input) + static_cast<std::uintptr_t>(b),
                          job.input_stride, chunk, last, r);
    const __m512i lo01 = _mm512_unpacklo_epi32(r[0], r[1]), hi01 = _mm512_unpackhi_epi32(r[0], r[1]);
    const __m512i lo23 = _mm512_unpacklo_epi32(r[2], r[3]), hi23 = _mm512_unpackhi_epi32(r[2], r[3]);
    // t[g]: k group b / 4 + g of pixels 0..15, in order (x_d: a set flip marks i8 rows read in
    // place; padding bytes flipped too meet zero weights, and i8 layers never split).
    __m512i t[4] = {_mm512_unpacklo_epi64(lo01, lo23), _mm512_unpackhi_epi64(lo01, lo23),
                    _mm512_unpacklo_epi64(hi01, hi23), _mm512_unpackhi_epi64(hi01, hi23)};
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      if constexpr (std::same_as<T, i8>) t[g] = _mm512_xor_si512(t[g], flip);
      if (sum_here) simd::avx512::dot_accumulate(sums, t[g], ones);
      const std::int8_t* w = job.weights + (b / group + g) * block_elements;
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c)
        simd::avx512::dot_accumulate(acc[c], t[g], _mm512_set1_epi32(static_cast<int>(load_u32(w + c * group))));
    }
  }
  if (sum_here) {
    const __m512i pixel_offsets = _mm512_mullo_epi32(sums, _mm512_set1_epi32(job.split_factor));
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[c] = _mm512_add_epi32(acc[c], pixel_offsets);
  }
  const __m512i zp = _mm512_set1_epi32(job.output_zero_point), lo = _mm512_set1_epi32(job.clamp_min),
                hi = _mm512_set1_epi32(job.clamp_max);
  // Channel c's byte goes to byte c of each pixel's dword.
  __m512i bytes = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    __m512i v;
    if constexpr (Q == requant_epilogue::general) {
      v = simd::avx512::requantize_epi32<R>(acc[c], _mm512_set1_epi32(job.multiplier[c]),
                                            _mm512_set1_epi32(job.left_shift[c]), _mm512_set1_epi32(job.right_shift[c]),
                                            zp, lo, hi);
    } else {
      v = simd::avx512::multiply_by_nonnegative_multiplier(acc[c], lane_vectors<Q>::read(job.lanes[c]));
      if constexpr (!folds_zero_point(Q)) v = _mm512_add_epi32(v, zp);
      v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
    }
    const __mmask64 byte_c = __mmask64{0x1111111111111111} << c;
    bytes = c == 0 ? v : _mm512_mask_blend_epi8(byte_c, bytes, _mm512_slli_epi32(v, 8 * c));
  }
  T* const out = static_cast<T*>(job.out);
  if (job.out_stride == NC && NC != 3) {
    if constexpr (NC == 1) _mm512_mask_cvtepi32_storeu_epi8(out, valid, bytes);
    if constexpr (NC == 2) _mm512_mask_cvtepi32_storeu_epi16(out, valid, bytes);
    if constexpr (NC == 4) _mm512_mask_storeu_epi32(out, valid, bytes);
    return;
  }
  alignas(64) std::uint8_t staged[64];
  _mm512_store_si512(staged, bytes);
  for (int p = 0; p < pixels; ++p) std::memcpy(out + p * job.out_stride, staged + 4 * p, NC);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace kernels::pw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX512_VNNI
