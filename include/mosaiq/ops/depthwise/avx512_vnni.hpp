// Depthwise microkernel, AVX-512 VNNI path: 64-channel jobs of four 16-lane blocks, tap-group rows
// built by byte unpacks, one vpdpbusd per (kernel row, tap group, block).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/depthwise/row_job.hpp"
#include "mosaiq/simd/epilogue.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/simd/x86.hpp"

#if MOSAIQ_TARGET_AVX512_VNNI

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {
namespace kernels::dw {

/// The VNNI layer's requantization lanes (a member of depthwise: detail::dw::layer_lanes), one per
/// 16 padded channel positions.
struct vnni_layer_lanes {
  detail::vector<simd::avx512::requant_lanes> requant_lanes_;
  const void* at(int c0) const noexcept { return requant_lanes_.data() + c0 / block; }
};

// AVX-512 VNNI: one vpdpbusd (u8 x_f times s8 weights, 4 taps summed per lane) per 16 channels,
// kernel row and tap group. int8 weights are s8 already; uint8 weights use w' = w - filter_zp when
// every w' fits s8, otherwise w' = (w' - common) + common (depthwise::split_for), both parts s8:
// a second vpdpbusd of each tap-group vector against the common part, into the same accumulators
// (split weights): exact either way.
// GCC 12 reports the intrinsics' own `__Y = __Y` undefined-vector idiom once they are inlined here
// (GCC bug 105593, fixed in 13); the warning is about the compiler header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
struct vnni_path {
  using weight_type = std::int8_t;
  static constexpr int job_channels = 64;              // channels per job (detail::dw::job_channels)
  static constexpr int blocks = job_channels / block;  // 16-lane blocks per job
  static constexpr int default_tile_w = 4;             // x four 16-lane blocks
  static constexpr bool uses_vnni = true;              // the layer runs 64-channel VNNI jobs
  static constexpr int low_block_channels = 8;         // channels of one pixel that blocks 0 and 1 hold
  using layer_lanes = vnni_layer_lanes;

  // The 8-bit then 16-bit unpacks of four tap vectors give, per 128-bit lane L and output vector
  // j, the 4 taps of lanes 16L + 4j .. 16L + 4j + 3, which is block j of the job in
  // channel_position order; the four vectors go to dst[0, 256).
  [[gnu::always_inline]] static void emit(const __m512i (&v)[group_taps], std::uint8_t* dst) noexcept {
    const __m512i ab_lo = _mm512_unpacklo_epi8(v[0], v[1]), ab_hi = _mm512_unpackhi_epi8(v[0], v[1]);
    const __m512i cd_lo = _mm512_unpacklo_epi8(v[2], v[3]), cd_hi = _mm512_unpackhi_epi8(v[2], v[3]);
    _mm512_storeu_si512(dst, _mm512_unpacklo_epi16(ab_lo, cd_lo));
    _mm512_storeu_si512(dst + 64, _mm512_unpackhi_epi16(ab_lo, cd_lo));
    _mm512_storeu_si512(dst + 128, _mm512_unpacklo_epi16(ab_hi, cd_hi));
    _mm512_storeu_si512(dst + 192, _mm512_unpackhi_epi16(ab_hi, cd_hi));
  }

  /// Whether a job holds at most 8 channels of one pixel (the last job of a layer of 64n + 1 .. 64n + 8 channels, e.g.
  /// 72): channel c of a job sits in block c % 16 / 4 (channel_position), so blocks 2 and 3 hold none of them and
  /// are neither built (interleave) nor computed (tile).
  [[gnu::always_inline]] static bool low_blocks_only(int pixels, int valid_channels) noexcept {
    return pixels == 1 && valid_channels <= low_block_channels;
  }

  // 64 channels per step (emit); a last step of at most 8 channels builds blocks 0 and 1 only.
  static void interleave(const std::uint8_t* const src[group_taps], std::uint8_t* dst, int channels,
                         int padded_channels, std::uint8_t flip) noexcept {
    const __m512i flip_bits = _mm512_set1_epi8(static_cast<char>(flip));
    for (int c = 0; c < padded_channels; c += job_channels) {
      // The tail's masked loads never touch bytes past the last channel; the lanes they zero meet zero weights.
      const __mmask64 mask = c + job_channels <= channels ? ~__mmask64{0} : (__mmask64{1} << (channels - c)) - 1;
      const auto load = [&](const std::uint8_t* p) {
        return _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, p + c), flip_bits);
      };
      const __m512i v[group_taps] = {load(src[0]), load(src[1]), load(src[2]), load(src[3])};
      if (low_blocks_only(1, channels - c)) {
        const __m512i ab_lo = _mm512_unpacklo_epi8(v[0], v[1]), cd_lo = _mm512_unpacklo_epi8(v[2], v[3]);
        _mm512_storeu_si512(dst + c * group_taps, _mm512_unpacklo_epi16(ab_lo, cd_lo));
        _mm512_storeu_si512(dst + c * group_taps + 64, _mm512_unpackhi_epi16(ab_lo, cd_lo));
      } else {
        emit(v, dst + c * group_taps);
      }
    }
  }

  // Narrow dense layers at stride 1: the `pixels` neighbouring source pixels of tap t are one
  // contiguous 64-byte run at src[t] (nullptr: a tap past KW, whose zero weights ignore it).
  static void interleave_runs(const std::uint8_t* const src[group_taps], std::uint8_t* dst,
                              std::uint8_t flip) noexcept {
    const __m512i flip_bits = _mm512_set1_epi8(static_cast<char>(flip));
    __m512i v[group_taps];
    for (int t = 0; t < group_taps; ++t)
      v[t] = src[t] != nullptr ? _mm512_xor_si512(_mm512_loadu_si512(src[t]), flip_bits) : flip_bits;
    emit(v, dst);
  }

  // Narrow dense layers at stride 2: the `pixels` (2, 4 or 8) source pixels of tap t are every
  // other pixel of the run at src[t] (nullptr: a tap past KW). Two masked loads read exactly those
  // pixels' bytes (nothing between or past them) and one two-source qword permute packs them:
  // 8 x 8-byte pixels sit at run bytes 0, 16, ..., 112; 4 x 16 at 0, 32, 64, 96; 2 x 32 at 0 and
  // 64. In place of 16 to 32 merge-masked loads per column: 128x128x16 stride 2 spent 70% of its
  // time building.
  static void interleave_strided_runs(const std::uint8_t* const src[group_taps], int pixels, std::uint8_t* dst,
                                      std::uint8_t flip) noexcept {
    const __m512i flip_bits = _mm512_set1_epi8(static_cast<char>(flip));
    const __mmask64 half = pixels == 8   ? 0x00FF00FF00FF00FFull
                           : pixels == 4 ? 0x0000FFFF0000FFFFull
                                         : 0x00000000FFFFFFFFull;
    const __m512i pick = pixels == 8   ? _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14)
                         : pixels == 4 ? _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13)
                                       : _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
    __m512i v[group_taps];
    for (int t = 0; t < group_taps; ++t)
      v[t] = src[t] != nullptr ? _mm512_xor_si512(_mm512_permutex2var_epi64(_mm512_maskz_loadu_epi8(half, src[t]), pick,
                                                                            _mm512_maskz_loadu_epi8(half, src[t] + 64)),
                                                  flip_bits)
                               : flip_bits;
    emit(v, dst);
  }

  // pixels (2, 4 or 8) sub-vectors of `width` lanes, sub-vector k read from src[k][t]: the masked
  // loads of every sub-vector merge into one 64-lane vector, never touching bytes past channel
  // `channels` of each source pixel; the rest is the 64-lane build above.
  static void interleave_pixels(const std::uint8_t* const (*src)[group_taps], int pixels, int width, std::uint8_t* dst,
                                int channels, std::uint8_t flip) noexcept {
    const __m512i flip_bits = _mm512_set1_epi8(static_cast<char>(flip));
    const __mmask64 sub = (__mmask64{1} << channels) - 1;
    __m512i v[group_taps];
    for (int t = 0; t < group_taps; ++t) {
      v[t] = _mm512_setzero_si512();
      for (int k = 0; k < pixels; ++k) v[t] = _mm512_mask_loadu_epi8(v[t], sub << (k * width), src[k][t] - k * width);
      v[t] = _mm512_xor_si512(v[t], flip_bits);
    }
    emit(v, dst);
  }

  // flatten and always_inline lambdas: GCC 12 otherwise leaves some unroll lambdas out of line and
  // the accumulators go through memory.
  // TH output rows at once (rows_tile, below): job.rows holds TH x KH tap-group rows, row r's output
  // at job.out + r * job.out_row_stride; every distinct input row is loaded once per column and
  // block and feeds each (output row, kernel row) that reads it. Per block the KH weight vectors
  // and the requantization constants are held in registers across the tile: GCC otherwise folds
  // them into every use as memory operands, and on CPUs that load one zmm per cycle (Zen 4) those
  // reloads bound the tile.
  template <int KH, int G, int TH, int TW, int SH, int DH, rounding R, class T, bool SplitWeights>
  [[gnu::flatten]] static void tile(const row_job& job, int ox) noexcept {
    __m512i acc[TH][TW][blocks];
    // Blocks 2 and 3 of a job of at most 8 channels are not built; their accumulators keep the bias and their
    // lanes are not stored.
    const bool low_only = low_blocks_only(job.pixels, job.valid_channels);
    start<TH, TW>(job, acc);
    accumulate<KH, G, TH, TW, SH, DH, SplitWeights>(job, ox, acc, low_only);
    requantize<TH, TW, R>(job, acc, low_only);
    store<TH, TW, T>(job, ox, acc);
  }

 private:
  static constexpr auto load = [](const void* p) { return _mm512_loadu_si512(p); };

  /// Accumulators start at the bias.
  template <int TH, int TW>
  [[gnu::always_inline]] static void start(const row_job& job, __m512i (&acc)[TH][TW][blocks]) noexcept {
    unroll<blocks>([&](auto j) __attribute__((always_inline)) {
      const __m512i bias = load(job.bias + j * block);
      unroll<TH>([&](auto r) __attribute__((always_inline)) {
        unroll<TW>([&](auto p) __attribute__((always_inline)) { acc[r][p][j] = bias; });
      });
    });
  }

  /// One vpdpbusd per (tap group, block, input row read, column, output row that reads it). Split weights add one
  /// against the common part per (..., column, output row), except that the rows every output row of the tile
  /// reads, when there are two or more, go into one sum per column that each output row adds once.
  template <int KH, int G, int TH, int TW, int SH, int DH, bool SplitWeights>
  [[gnu::always_inline]] static void accumulate(const row_job& job, int ox, __m512i (&acc)[TH][TW][blocks],
                                                bool low_only) noexcept {
    using rows_read = rows_tile<KH, TH, SH, DH>;
    constexpr bool common_sum = SplitWeights && rows_read::common_count >= 2;
    const auto* w = static_cast<const weight_type*>(job.weights);
    unroll<G>([&](auto g) __attribute__((always_inline)) {
      [[maybe_unused]] __m512i common;
      if constexpr (SplitWeights) common = load(job.split_taps + g * block * group_taps);
      unroll<blocks>([&](auto j) __attribute__((always_inline)) {
        if (j >= 2 && low_only) return;
        [[maybe_unused]] __m512i shared[common_sum ? TW : 1];
        if constexpr (common_sum)
          unroll<TW>([&](auto p) __attribute__((always_inline)) { shared[p] = _mm512_setzero_si512(); });
        __m512i wk[KH];
        unroll<KH>([&](auto kr) __attribute__((always_inline)) {
          wk[kr] = load(w + ((kr * G + g) * blocks + j) * block * group_taps);
          asm("" : "+v"(wk[kr]));
        });
        unroll<rows_read::count>([&](auto i) __attribute__((always_inline)) {
          constexpr int u = rows_read::offsets[i];
          const std::uint8_t* x =
              job.rows[rows_read::source(u)] + ox * job.column_stride + g * job.group_stride + j * block * group_taps;
          unroll<TW>([&](auto p) __attribute__((always_inline)) {
            const __m512i xv = load(x + p * job.column_stride);
            unroll<TH>([&](auto r) __attribute__((always_inline)) {
              constexpr int kr = rows_read::kernel_row(u, r);
              if constexpr (kr >= 0) acc[r][p][j] = _mm512_dpbusd_epi32(acc[r][p][j], xv, wk[kr]);
            });
            if constexpr (common_sum && rows_read::read_by_all(u)) {
              shared[p] = _mm512_dpbusd_epi32(shared[p], xv, common);
            } else if constexpr (SplitWeights) {
              unroll<TH>([&](auto r) __attribute__((always_inline)) {
                if constexpr (rows_read::kernel_row(u, r) >= 0)
                  acc[r][p][j] = _mm512_dpbusd_epi32(acc[r][p][j], xv, common);
              });
            }
          });
        });
        if constexpr (common_sum)
          unroll<TW>([&](auto p) __attribute__((always_inline)) {
            unroll<TH>([&](auto r) __attribute__((always_inline)) {
              acc[r][p][j] = _mm512_add_epi32(acc[r][p][j], shared[p]);
            });
          });
      });
    });
  }

  /// Requantizes to int32 output values (zero point added) in the epilogue chosen at load; the
  /// clamp happens on the packed bytes (store).
  template <int TH, int TW, rounding R>
  [[gnu::always_inline]] static void requantize(const row_job& job, __m512i (&acc)[TH][TW][blocks],
                                                bool low_only) noexcept {
    const __m512i zp = _mm512_set1_epi32(job.output_zero_point);
    const auto* lanes = static_cast<const simd::avx512::requant_lanes*>(job.requant_lanes);
    const auto with_lanes = [&]<bool LeftShift, bool Signed>() __attribute__((always_inline)) {
      unroll<blocks>([&](auto j) __attribute__((always_inline)) {
        if (j >= 2 && low_only) return;
        // The zero point is already in the offsets (depthwise::load); Signed = false: no sign blend.
        const auto constants = simd::avx512::requant_lane_vectors<LeftShift, Signed>::pin(lanes[j]);
        unroll<TH>([&](auto r) __attribute__((always_inline)) {
          unroll<TW>([&](auto p) __attribute__((always_inline)) {
            acc[r][p][j] = simd::avx512::multiply_by_nonnegative_multiplier(acc[r][p][j], constants);
          });
        });
      });
    };
    if (job.requant == requant_epilogue::lanes_folded) {
      with_lanes.template operator()<false, true>();
    } else if (job.requant == requant_epilogue::lanes_folded_sign_free) {
      with_lanes.template operator()<false, false>();
    } else if (job.requant == requant_epilogue::lanes_folded_left) {
      with_lanes.template operator()<true, true>();
    } else if (job.requant == requant_epilogue::lanes_folded_sign_free_left) {
      with_lanes.template operator()<true, false>();
    } else {
      const __m512i lo = _mm512_set1_epi32(job.clamp_min), hi = _mm512_set1_epi32(job.clamp_max);
      unroll<blocks>([&](auto j) __attribute__((always_inline)) {
        if (j >= 2 && low_only) return;
        const __m512i multiplier = load(job.multiplier + j * block), left = load(job.left_shift + j * block),
                      right = load(job.right_shift + j * block);
        unroll<TH>([&](auto r) __attribute__((always_inline)) {
          unroll<TW>([&](auto p) __attribute__((always_inline)) {
            acc[r][p][j] = simd::avx512::requantize_epi32<R>(acc[r][p][j], multiplier, left, right, zp, lo, hi);
          });
        });
      });
    }
  }

  /// Narrows the four blocks with saturating packs (back in channel order), clamps the bytes and
  /// stores them: one pixel per column, or a narrow job's `pixels` sub-vectors.
  template <int TH, int TW, class T>
  [[gnu::always_inline]] static void store(const row_job& job, int ox, __m512i (&acc)[TH][TW][blocks]) noexcept {
    // The saturating packs put the blocks' lanes back in channel order (channel_position is their
    // inverse). Saturation is monotone and the clamp range lies inside it, so clamping bytes is exact.
    static_assert(blocks == 4, "the pack below narrows exactly four blocks");
    const __m512i lo = _mm512_set1_epi8(static_cast<char>(job.clamp_min)),
                  hi = _mm512_set1_epi8(static_cast<char>(job.clamp_max));
    const __mmask64 store_mask =
        job.valid_channels == job_channels ? ~__mmask64{0} : (__mmask64{1} << job.valid_channels) - 1;
    const auto narrow = [&](int r, int p) __attribute__((always_inline)) {
      const __m512i low = _mm512_packs_epi32(acc[r][p][0], acc[r][p][1]),
                    high = _mm512_packs_epi32(acc[r][p][2], acc[r][p][3]);
      if constexpr (element_traits<T>::is_signed)
        return _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(low, high), lo), hi);
      else
        return _mm512_min_epu8(_mm512_max_epu8(_mm512_packus_epi16(low, high), lo), hi);
    };
    unroll<TH>([&](auto r) __attribute__((always_inline)) {
      if (job.pixels == 1) {
        T* out = static_cast<T*>(job.out) + r * job.out_row_stride + ox * job.out_pixel_stride;
        unroll<TW>([&](auto p) __attribute__((always_inline)) {
          _mm512_mask_storeu_epi8(out + p * job.out_pixel_stride, store_mask, narrow(r, p));
        });
      } else {
        // Sub-vector k of job column ox + p is output pixel (ox + p) * pixels + k.
        auto* const out = static_cast<std::uint8_t*>(job.out) + r * job.out_row_stride;
        unroll<TW>([&](auto p) __attribute__((always_inline)) {
          const __m512i bytes = narrow(r, p);
          const int first = (ox + p) * job.pixels;
          for (int k = 0; k < job.pixels && first + k < job.out_width; ++k)
            _mm512_mask_storeu_epi8(out + (first + k) * job.out_pixel_stride - k * job.pixel_width,
                                    store_mask << (k * job.pixel_width), bytes);
        });
      }
    });
  }
};

template <>
struct path_for<simd::isa::avx512_vnni> : simd::use_path<vnni_path> {};
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace kernels::dw
}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_TARGET_AVX512_VNNI
