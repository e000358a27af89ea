// Quantized depthwise convolution, specialized at compile time for kernel, stride, dilation,
// padding, depth multiplier, output tile, activation and rounding:
//
//   mosaiq::depthwise<{.kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}}, mosaiq::u8> dw(
//       filter /*[KH][KW][C*M]*/, bias /*C*M or nullptr*/, channels, requant);   // load time: packs, may allocate
//   std::vector<std::byte> scratch(dw.workspace_bytes(input.dims()));            // or a slice of a static arena
//   dw(input, output, scratch);                                                  // run: no heap, no branches per pixel
//
// Results equal reference::depthwise_conv bit for bit (TFLite reference semantics: uint8 per-tensor
// weights with a zero point, int8 per-channel symmetric weights).
//
// Design. Everything runs in a "folded" unsigned domain: x_f = x (u8) or x ^ 0x80 (i8, i.e. x + 128),
// w' = w - filter_zp, and bias' = bias - izp_f * sum(w') with izp_f the folded input zero point.
// Out-of-image taps then read izp_f and contribute nothing, exactly like TFLite skipping them.
// Per input row the run builds, once, a "tap-group row" in the workspace: for every output column
// ox, group g of 4 horizontal taps and channel c, the 4 bytes x_f(ox*SW - pad + (4g+t)*DW), t < 4
// (taps past KW or outside the image read izp_f). Stride, dilation and padding live only in that
// build; the hot loop is the same for all of them: per output pixel and 16-channel block,
// acc += dot4(row[kr][ox][g], w[kr][g]) over kernel rows kr and groups g, i.e. one vpdpbusd per
// (kr, g) on AVX-512 VNNI, vpmaddwd on int16 pairs on AVX2, widening multiply-accumulates on NEON,
// plain loops on the scalar path (the twin every SIMD path is tested against). On VNNI a job is 64
// channels, four blocks in a permuted lane order (channel_position) that the 64-byte unpacks of
// the build produce and the saturating packs of the output undo; requantization there is one
// 64-bit product per lane (simd::avx512::multiply_by_nonnegative_multiplier) whenever the scales
// allow it, the general form otherwise. Narrow layers (<= 32 channels) pack 2, 4 or 8 neighbouring
// output pixels into one 64-lane job; at stride 1 over dense pixels the build then reads each
// tap's pixels as one contiguous 64-byte run (interleave_runs), at stride 2 as every other pixel
// of a 128-byte run (interleave_strided_runs), instead of merging masked loads.
// Built rows sit in a ring and serve every output row that needs them (row reuse); rows
// above/below the image map to one constant row. On VNNI two output rows that share input rows
// (stride below the kernel's extent) run in one register tile (rows_tile): each shared tap-group
// vector is loaded once for both, and the block's weights and requantization constants stay in
// registers across the tile (56x56x128 on Zen 4: 147 -> 98 us). Output columns go in a main tile of `tile.w`
// pixels plus a compile-time cascade of smaller tiles for the remainder; channel tails use masked
// or staged loads/stores, so nothing outside the views is read or written.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/detail/common.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/simd/arch.hpp"
#include "mosaiq/simd/neon.hpp"
#include "mosaiq/simd/x86.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of one depthwise layer.
struct depthwise_config {
  hw kernel{3, 3};
  hw stride{1, 1};
  hw dilation{1, 1};
  padding pad = padding::same();
  int depth_multiplier = 1;
  /// Output rows per pass (h) and output columns per register tile (w); 0 picks the default for
  /// the kernel, stride and ISA. On AVX-512 VNNI a pass's rows go two at a time through one
  /// register tile where they share input rows (default h = 2 there, w = 4 single / 2 paired).
  hw tile{0, 0};
  /// Channels per block; every path works on 16-channel blocks, so 0 (default) or 16.
  int channel_block = 0;
  /// Fused activation used by the constructor that derives the requantization from scales.
  activation act = activation::none;
  rounding round = rounding::tflite_reference;
  friend constexpr bool operator==(const depthwise_config&, const depthwise_config&) = default;
};

namespace detail::dw {

inline constexpr int block = 16;      // channels per block, on every path
inline constexpr int group_taps = 4;  // horizontal taps per group (one vpdpbusd lane)

constexpr int groups_for(int kernel_w) noexcept { return (kernel_w + group_taps - 1) / group_taps; }

constexpr bool uses_vnni = simd::native_isa == simd::isa::avx512_vnni;

/// Calls f(integral_constant<0>) ... f(integral_constant<N-1>): a guaranteed unroll, so tile
/// accumulators indexed by these constants stay in registers (-O2 does not unroll the loops).
template <int N, class F>
[[gnu::always_inline]] inline void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) __attribute__((always_inline)) {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

/// Default output tile width per ISA: enough independent accumulators to hide the multiply-add
/// latency without spilling (VNNI: four zmm per pixel; AVX2: four ymm per pixel; NEON: sixteen q
/// registers per pixel).
constexpr int default_tile_w(hw /*kernel*/) noexcept {
  switch (simd::native_isa) {
    case simd::isa::avx512_vnni: return 4;  // x four 16-lane blocks
    case simd::isa::avx512:
    case simd::isa::avx2:
    case simd::isa::avx2_vnni: return 2;
    case simd::isa::neon: return 1;
    case simd::isa::scalar: return 4;
  }
  return 1;
}

// Channels per hot-loop job: the VNNI path works on 64 channels as four 16-lane blocks whose lanes
// are permuted so that both the byte unpacks of its build and the saturating packs of its output
// keep channel order (see vnni_path); the other paths work on plain 16-channel blocks.
inline constexpr int job_channels = uses_vnni ? 64 : block;

/// Where channel c sits in the packed per-channel arrays and the tap-group rows.
constexpr int channel_position(int c) noexcept {
  if constexpr (!uses_vnni) return c;
  // Block j = c % 16 / 4, lane 4 * (c % 64 / 16) + c % 4 of its 64-channel job.
  return c / 64 * 64 + c % 16 / 4 * 16 + c % 64 / 16 * 4 + c % 4;
}

/// Output pixels per VNNI job for `channels` output channels: narrow layers share one 64-lane
/// job between 2 (<= 32 channels), 4 (<= 16) or 8 (<= 8) neighbouring pixels so that no lanes idle.
inline constexpr int max_pixels_per_job = 8;
constexpr int pixels_per_job(int channels) noexcept {
  if constexpr (!uses_vnni) return 1;
  return channels <= 8 ? 8 : channels <= 16 ? 4 : channels <= 32 ? 2 : 1;
}

/// Which input rows a register tile of TH output rows reads: output row r, kernel row kr read
/// tap-group row r*SH + kr*DH of the pass (stride SH, dilation DH). Rows shared between output rows
/// (stride 1: rows 1..KH-1 of the first are rows 0..KH-2 of the second) are loaded once per tile.
template <int KH, int TH, int SH, int DH>
struct rows_tile {
  /// The kernel row with which output row r reads offset u, or -1.
  static constexpr int kernel_row(int u, int r) noexcept {
    const int d = u - r * SH;
    return d >= 0 && d % DH == 0 && d / DH < KH ? d / DH : -1;
  }
  static constexpr int span = (TH - 1) * SH + (KH - 1) * DH + 1;
  static constexpr bool read(int u) noexcept {
    for (int r = 0; r < TH; ++r)
      if (kernel_row(u, r) >= 0) return true;
    return false;
  }
  /// Distinct offsets read, in increasing order.
  static constexpr int count = [] {
    int n = 0;
    for (int u = 0; u < span; ++u) n += read(u) ? 1 : 0;
    return n;
  }();
  static constexpr std::array<int, count> offsets = [] {
    std::array<int, count> list{};
    for (int u = 0, n = 0; u < span; ++u)
      if (read(u)) list[static_cast<std::size_t>(n++)] = u;
    return list;
  }();
  /// Index into job.rows ([r][kr]) of the first (r, kr) that reads offset u.
  static constexpr int source(int u) noexcept {
    for (int r = 0; r < TH; ++r)
      if (kernel_row(u, r) >= 0) return r * KH + kernel_row(u, r);
    return 0;
  }
  /// Whether TH rows at once load fewer vectors than TH separate rows.
  static constexpr bool shares_rows = count < TH * KH;
};

/// Which requantization the VNNI tile runs (chosen at load time from the scales).
/// lanes*: simd::avx512::requant_lanes with the output zero point folded into the offsets;
/// *_unsigned: the negative-x offsets are dropped because no lane's result for x < 0 survives the
/// clamp differently (single rounding, or a clamp at or above the zero point such as ReLU/ReLU6).
enum class requant_kind { lanes, lanes_with_left_shift, lanes_unsigned, lanes_unsigned_with_left_shift, general };

/// Everything the hot loop of one (output row, channel job) needs.
struct row_job {
  const std::uint8_t* const* rows;  // KH tap-group rows ([TH][KH] for a multi-row tile), offset to this block
  std::ptrdiff_t column_stride;     // bytes between output columns in a tap-group row
  std::ptrdiff_t group_stride;      // bytes between tap groups of one column
  const void* weights;              // this job's packed weights [KH][G][job_channels][4]
  const std::int32_t* bias;         // job_channels folded biases
  const std::int32_t* multiplier;   // job_channels each
  const std::int32_t* left_shift;
  const std::int32_t* right_shift;
  const void* requant_lanes;        // VNNI: this job's simd::avx512::requant_lanes, one per block
  requant_kind requant;             // VNNI
  std::int32_t output_zero_point, clamp_min, clamp_max;
  std::int32_t sum_x_factor;        // VNNI uint8 split: 128 - filter_zp, else unused
  const std::int8_t* group_ones;    // VNNI uint8 split: [G][16][4] 1 for taps < KW
  void* out;                        // output pixel (ox = 0) of this row, offset to this block
  std::ptrdiff_t out_pixel_stride;  // elements
  std::ptrdiff_t out_row_stride;    // elements between the output rows of a multi-row VNNI tile
  int valid_channels;               // 1..job_channels
  // VNNI with at most 32 output channels: one 64-lane job holds `pixels` (2, 4 or 8) neighbouring
  // output pixels of `pixel_width` (32, 16 or 8) lanes each; columns are then counted in jobs and
  // `out_width` is the row's real pixel count. 1 everywhere else.
  int pixels = 1, pixel_width = 0, out_width = 0;
};

// ---------------------------------------------------------------------------------------------
// Scalar path: the structure of the SIMD paths in plain loops (and the twin they are tested against).
struct scalar_path {
  using weight_type = std::int16_t;

  static void interleave(const std::uint8_t* const src[group_taps], std::uint8_t* dst, int channels,
                         int padded_channels, std::uint8_t flip) noexcept {
    for (int c = 0; c < channels; ++c)
      for (int t = 0; t < group_taps; ++t) dst[c * group_taps + t] = static_cast<std::uint8_t>(src[t][c] ^ flip);
    std::memset(dst + channels * group_taps, 0, static_cast<std::size_t>(padded_channels - channels) * group_taps);
  }

  template <int KH, int G, int TW, rounding R, class T>
  static void tile(const row_job& job, int ox) noexcept {
    const auto* w = static_cast<const weight_type*>(job.weights);
    std::array<std::array<std::int32_t, block>, TW> acc;
    for (auto& a : acc) std::copy_n(job.bias, block, a.begin());
    for (int kr = 0; kr < KH; ++kr)
      for (int g = 0; g < G; ++g) {
        const weight_type* wg = w + (kr * G + g) * block * group_taps;
        for (int p = 0; p < TW; ++p) {
          const std::uint8_t* x = job.rows[kr] + (ox + p) * job.column_stride + g * job.group_stride;
          for (int c = 0; c < block; ++c)
            for (int t = 0; t < group_taps; ++t)
              acc[p][c] += static_cast<std::int32_t>(x[c * group_taps + t]) * wg[c * group_taps + t];
        }
      }
    for (int p = 0; p < TW; ++p)
      kernel::requantize_store<R>(job, acc[p].data(), static_cast<T*>(job.out) + (ox + p) * job.out_pixel_stride);
  }
};

#if defined(__AVX2__)
// ---------------------------------------------------------------------------------------------
// x86: the tap-group build is a 4-way byte interleave of 16-channel vectors.
[[gnu::always_inline]] inline void interleave_x86(const std::uint8_t* const src[group_taps], std::uint8_t* dst, int channels,
                           int padded_channels, std::uint8_t flip) noexcept {
  const __m128i flip_bits = _mm_set1_epi8(static_cast<char>(flip));
  const auto emit = [&](__m128i a, __m128i b, __m128i c, __m128i d, std::uint8_t* out) {
    a = _mm_xor_si128(a, flip_bits), b = _mm_xor_si128(b, flip_bits);
    c = _mm_xor_si128(c, flip_bits), d = _mm_xor_si128(d, flip_bits);
    const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
    const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_unpacklo_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm_unpackhi_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32), _mm_unpacklo_epi16(ab_hi, cd_hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 48), _mm_unpackhi_epi16(ab_hi, cd_hi));
  };
  const auto load = [](const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  int c = 0;
  for (; c + block <= channels; c += block)
    emit(load(src[0] + c), load(src[1] + c), load(src[2] + c), load(src[3] + c), dst + c * group_taps);
  if (c < channels) {
    // Tail: masked loads never touch bytes past the last channel; masked-off lanes read 0.
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    const __mmask16 mask = static_cast<__mmask16>((1u << (channels - c)) - 1u);
    const auto partial = [&](const std::uint8_t* p) {
      return _mm_mask_blend_epi8(mask, flip_bits, _mm_maskz_loadu_epi8(mask, p));
    };
#else
    const auto partial = [&](const std::uint8_t* p) {
      alignas(16) std::uint8_t staged[block];
      std::memset(staged, flip, block);
      std::memcpy(staged, p, static_cast<std::size_t>(channels - c));
      return _mm_load_si128(reinterpret_cast<const __m128i*>(staged));
    };
#endif
    emit(partial(src[0] + c), partial(src[1] + c), partial(src[2] + c), partial(src[3] + c), dst + c * group_taps);
    c += block;
  }
  if (c < padded_channels) std::memset(dst + c * group_taps, 0, static_cast<std::size_t>(padded_channels - c) * group_taps);
}

// AVX2 (also the AVX-512 build without VNNI): x_f widened to int16, vpmaddwd with int16 w'
// (|x_f * w'| <= 255 * 255, pair sums fit int32). Accumulators hold per-channel pair sums
// [c: taps 01, taps 23] that are reduced once per pixel.
struct avx2_path {
  using weight_type = std::int16_t;
  [[gnu::always_inline]] static void interleave(const std::uint8_t* const src[group_taps], std::uint8_t* dst,
                                                int channels, int padded_channels, std::uint8_t flip) noexcept {
    interleave_x86(src, dst, channels, padded_channels, flip);
  }

  template <int KH, int G, int TW, rounding R, class T>
  static void tile(const row_job& job, int ox) noexcept {
    const auto* w = static_cast<const weight_type*>(job.weights);
    __m256i acc[TW][4];
    for (int p = 0; p < TW; ++p)
      for (int q = 0; q < 4; ++q) acc[p][q] = _mm256_setzero_si256();
    for (int kr = 0; kr < KH; ++kr)
      for (int g = 0; g < G; ++g) {
        const weight_type* wg = w + (kr * G + g) * block * group_taps;
        for (int q = 0; q < 4; ++q) {
          const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + q * 16));
          for (int p = 0; p < TW; ++p) {
            const std::uint8_t* x = job.rows[kr] + (ox + p) * job.column_stride + g * job.group_stride + q * 16;
            const __m256i x16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
            acc[p][q] = _mm256_add_epi32(acc[p][q], _mm256_madd_epi16(x16, wq));
          }
        }
      }
    const __m256i zp = _mm256_set1_epi32(job.output_zero_point), lo = _mm256_set1_epi32(job.clamp_min),
                  hi = _mm256_set1_epi32(job.clamp_max);
    for (int p = 0; p < TW; ++p) {
      alignas(16) std::uint8_t bytes[block];
      kernel::requantize_pair_sums<R>(acc[p], _mm256_setzero_si256(), job, 0, zp, lo, hi, bytes);
      T* out = static_cast<T*>(job.out) + (ox + p) * job.out_pixel_stride;
      if (job.valid_channels == block)
        std::memcpy(out, bytes, block);
      else
        std::memcpy(out, bytes, static_cast<std::size_t>(job.valid_channels));
    }
  }
};
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
// AVX-512 VNNI: one vpdpbusd (u8 x_f times s8 weights, 4 taps summed per lane) per 16 channels,
// kernel row and tap group. int8 weights are s8 already; uint8 weights use w' = w - filter_zp when
// every w' fits s8, otherwise w' = (w - 128) + (128 - filter_zp) with the second term taken from
// the window sum of x_f (a vpdpbusd against per-tap ones): exact either way.
// GCC 12 reports the intrinsics' own `__Y = __Y` undefined-vector idiom once they are inlined here
// (GCC bug 105593, fixed in 13); the warning is about the compiler header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
struct vnni_path {
  using weight_type = std::int8_t;
  static constexpr int blocks = job_channels / block;  // 16-lane blocks per job

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

  // 64 channels per step (emit).
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
      emit(v, dst + c * group_taps);
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
      v[t] = src[t] != nullptr
                 ? _mm512_xor_si512(_mm512_permutex2var_epi64(_mm512_maskz_loadu_epi8(half, src[t]), pick,
                                                              _mm512_maskz_loadu_epi8(half, src[t] + 64)),
                                    flip_bits)
                 : flip_bits;
    emit(v, dst);
  }

  // pixels (2, 4 or 8) sub-vectors of `width` lanes, sub-vector k read from src[k][t]: the masked
  // loads of every sub-vector merge into one 64-lane vector, never touching bytes past channel
  // `channels` of each source pixel; the rest is the 64-lane build above.
  static void interleave_pixels(const std::uint8_t* const (*src)[group_taps], int pixels, int width,
                                std::uint8_t* dst, int channels, std::uint8_t flip) noexcept {
    const __m512i flip_bits = _mm512_set1_epi8(static_cast<char>(flip));
    const __mmask64 sub = (__mmask64{1} << channels) - 1;
    __m512i v[group_taps];
    for (int t = 0; t < group_taps; ++t) {
      v[t] = _mm512_setzero_si512();
      for (int k = 0; k < pixels; ++k)
        v[t] = _mm512_mask_loadu_epi8(v[t], sub << (k * width), src[k][t] - k * width);
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
    static_assert(TH == 1 || !SplitWeights, "split weights keep window sums: one output row per tile");
    using rows_read = rows_tile<KH, TH, SH, DH>;
    const auto* w = static_cast<const weight_type*>(job.weights);
    const auto load = [](const void* p) { return _mm512_loadu_si512(p); };
    __m512i acc[TH][TW][blocks];
    [[maybe_unused]] __m512i window_sum[SplitWeights ? TW : 1][blocks];
    unroll<blocks>([&](auto j) __attribute__((always_inline)) {
      const __m512i bias = load(job.bias + j * block);
      unroll<TH>([&](auto r) __attribute__((always_inline)) {
        unroll<TW>([&](auto p) __attribute__((always_inline)) { acc[r][p][j] = bias; });
      });
      if constexpr (SplitWeights)
        unroll<TW>([&](auto p) __attribute__((always_inline)) { window_sum[p][j] = _mm512_setzero_si512(); });
    });
    unroll<G>([&](auto g) __attribute__((always_inline)) {
      [[maybe_unused]] __m512i ones;
      if constexpr (SplitWeights) ones = load(job.group_ones + g * block * group_taps);
      unroll<blocks>([&](auto j) __attribute__((always_inline)) {
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
            if constexpr (SplitWeights) window_sum[p][j] = _mm512_dpbusd_epi32(window_sum[p][j], xv, ones);
          });
        });
      });
    });
    if constexpr (SplitWeights) {
      const __m512i factor = _mm512_set1_epi32(job.sum_x_factor);
      unroll<blocks>([&](auto j) __attribute__((always_inline)) {
        unroll<TW>([&](auto p) __attribute__((always_inline)) {
          acc[0][p][j] = _mm512_add_epi32(acc[0][p][j], _mm512_mullo_epi32(window_sum[p][j], factor));
        });
      });
    }
    // Requantize to int32 output values (zero point added); the clamp happens on the packed bytes.
    const __m512i zp = _mm512_set1_epi32(job.output_zero_point);
    const auto* lanes = static_cast<const simd::avx512::requant_lanes*>(job.requant_lanes);
    const auto with_lanes = [&]<bool LeftShift, bool Signed>() __attribute__((always_inline)) {
      unroll<blocks>([&](auto j) __attribute__((always_inline)) {
        // The zero point is already in the offsets (depthwise::load); Signed = false: no sign blend.
        const auto constants = simd::avx512::requant_lane_vectors<LeftShift, Signed>::pin(lanes[j]);
        unroll<TH>([&](auto r) __attribute__((always_inline)) {
          unroll<TW>([&](auto p) __attribute__((always_inline)) {
            acc[r][p][j] = simd::avx512::multiply_by_nonnegative_multiplier(acc[r][p][j], constants);
          });
        });
      });
    };
    if (job.requant == requant_kind::lanes) {
      with_lanes.template operator()<false, true>();
    } else if (job.requant == requant_kind::lanes_unsigned) {
      with_lanes.template operator()<false, false>();
    } else if (job.requant == requant_kind::lanes_with_left_shift) {
      with_lanes.template operator()<true, true>();
    } else if (job.requant == requant_kind::lanes_unsigned_with_left_shift) {
      with_lanes.template operator()<true, false>();
    } else {
      const __m512i lo = _mm512_set1_epi32(job.clamp_min), hi = _mm512_set1_epi32(job.clamp_max);
      unroll<blocks>([&](auto j) __attribute__((always_inline)) {
        const __m512i multiplier = load(job.multiplier + j * block), left = load(job.left_shift + j * block),
                      right = load(job.right_shift + j * block);
        unroll<TH>([&](auto r) __attribute__((always_inline)) {
          unroll<TW>([&](auto p) __attribute__((always_inline)) {
            acc[r][p][j] = simd::avx512::requantize_epi32<R>(acc[r][p][j], multiplier, left, right, zp, lo, hi);
          });
        });
      });
    }
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
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#if defined(__ARM_NEON)
// NEON (aarch64 and armv7): vst4q interleaves the tap-group row in one store; the hot loop widens
// x_f to int16 and multiply-accumulates with int16 w' into per-tap int32 lanes, reduced per pixel.
struct neon_path {
  using weight_type = std::int16_t;

  static void interleave(const std::uint8_t* const src[group_taps], std::uint8_t* dst, int channels,
                         int padded_channels, std::uint8_t flip) noexcept {
    const uint8x16_t flip_bits = vdupq_n_u8(flip);
    int c = 0;
    for (; c + block <= channels; c += block) {
      uint8x16x4_t v;
      v.val[0] = veorq_u8(vld1q_u8(src[0] + c), flip_bits);
      v.val[1] = veorq_u8(vld1q_u8(src[1] + c), flip_bits);
      v.val[2] = veorq_u8(vld1q_u8(src[2] + c), flip_bits);
      v.val[3] = veorq_u8(vld1q_u8(src[3] + c), flip_bits);
      vst4q_u8(dst + c * group_taps, v);
    }
    if (c < channels) {
      uint8x16x4_t v;
      for (int t = 0; t < group_taps; ++t) {
        std::uint8_t staged[block];
        std::memset(staged, flip, block);
        std::memcpy(staged, src[t] + c, static_cast<std::size_t>(channels - c));
        v.val[t] = veorq_u8(vld1q_u8(staged), flip_bits);
      }
      vst4q_u8(dst + c * group_taps, v);
      c += block;
    }
    std::memset(dst + c * group_taps, 0, static_cast<std::size_t>(padded_channels - c) * group_taps);
  }

  // [sum(a), sum(b), sum(c), sum(d)]
  static int32x4_t horizontal_sums(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) noexcept {
#if defined(__aarch64__)
    return vpaddq_s32(vpaddq_s32(a, b), vpaddq_s32(c, d));
#else
    const int32x2_t ab = vpadd_s32(vadd_s32(vget_low_s32(a), vget_high_s32(a)), vadd_s32(vget_low_s32(b), vget_high_s32(b)));
    const int32x2_t cd = vpadd_s32(vadd_s32(vget_low_s32(c), vget_high_s32(c)), vadd_s32(vget_low_s32(d), vget_high_s32(d)));
    return vcombine_s32(ab, cd);
#endif
  }

  template <int KH, int G, int TW, rounding R, class T>
  static void tile(const row_job& job, int ox) noexcept {
    const auto* w = static_cast<const weight_type*>(job.weights);
    int32x4_t acc[TW][block];  // [pixel][channel] lanes = taps
    for (int p = 0; p < TW; ++p)
      for (int c = 0; c < block; ++c) acc[p][c] = vdupq_n_s32(0);
    for (int kr = 0; kr < KH; ++kr)
      for (int g = 0; g < G; ++g) {
        const weight_type* wg = w + (kr * G + g) * block * group_taps;
        for (int p = 0; p < TW; ++p) {
          const std::uint8_t* x = job.rows[kr] + (ox + p) * job.column_stride + g * job.group_stride;
          for (int q = 0; q < block / 4; ++q) {  // 4 channels x 4 taps per 16 bytes
            const uint8x16_t bytes = vld1q_u8(x + q * 16);
            const int16x8_t x01 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(bytes)));
            const int16x8_t x23 = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(bytes)));
            const int16x8_t w01 = vld1q_s16(wg + q * 16), w23 = vld1q_s16(wg + q * 16 + 8);
            int32x4_t* a = acc[p] + q * 4;
            a[0] = vmlal_s16(a[0], vget_low_s16(x01), vget_low_s16(w01));
            a[1] = vmlal_s16(a[1], vget_high_s16(x01), vget_high_s16(w01));
            a[2] = vmlal_s16(a[2], vget_low_s16(x23), vget_low_s16(w23));
            a[3] = vmlal_s16(a[3], vget_high_s16(x23), vget_high_s16(w23));
          }
        }
      }
    const int32x4_t zp = vdupq_n_s32(job.output_zero_point), lo = vdupq_n_s32(job.clamp_min),
                    hi = vdupq_n_s32(job.clamp_max);
    for (int p = 0; p < TW; ++p) {
      int16x4_t narrow[block / 4];
      for (int q = 0; q < block / 4; ++q) {
        const int32x4_t* a = acc[p] + q * 4;
        const int32x4_t sums = vaddq_s32(horizontal_sums(a[0], a[1], a[2], a[3]), vld1q_s32(job.bias + q * 4));
        narrow[q] = vmovn_s32(simd::neon::requantize_s32<R>(sums, vld1q_s32(job.multiplier + q * 4),
                                                            vld1q_s32(job.left_shift + q * 4),
                                                            vld1q_s32(job.right_shift + q * 4), zp, lo, hi));
      }
      std::uint8_t bytes[block];
      kernel::narrow_to_bytes<T>(narrow, bytes);
      T* out = static_cast<T*>(job.out) + (ox + p) * job.out_pixel_stride;
      std::memcpy(out, bytes, static_cast<std::size_t>(job.valid_channels));
    }
  }
};
#endif

#if defined(MOSAIQ_FORCE_SCALAR)
using native_path = scalar_path;
#elif defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
using native_path = vnni_path;
#elif defined(__AVX2__)
using native_path = avx2_path;
#elif defined(__ARM_NEON)
using native_path = neon_path;
#else
using native_path = scalar_path;
#endif

}  // namespace detail::dw

/// Depthwise convolution layer for one compile-time config and element type. Construct once
/// (packs the weights), then call on any input size; see the file comment for the design.
template <depthwise_config Cfg, quantized_element T>
class depthwise {
  static_assert(Cfg.kernel.h >= 1 && Cfg.kernel.w >= 1, "depthwise: kernel extents must be at least 1");
  static_assert(Cfg.kernel.h * Cfg.kernel.w <= 1024, "depthwise: kernel larger than 1024 taps is not supported");
  static_assert(Cfg.stride.h >= 1 && Cfg.stride.w >= 1, "depthwise: stride must be at least 1");
  static_assert(Cfg.dilation.h >= 1 && Cfg.dilation.w >= 1, "depthwise: dilation must be at least 1");
  static_assert(Cfg.pad.top >= 0 && Cfg.pad.bottom >= 0 && Cfg.pad.left >= 0 && Cfg.pad.right >= 0,
                "depthwise: explicit pads must be non-negative");
  static_assert(Cfg.pad.mode == padding_mode::explicit_pads ||
                    (Cfg.pad.top == 0 && Cfg.pad.bottom == 0 && Cfg.pad.left == 0 && Cfg.pad.right == 0),
                "depthwise: pad amounts are only meaningful with padding::explicit_pads(...)");
  static_assert(Cfg.depth_multiplier >= 1, "depthwise: depth_multiplier must be at least 1");
  static_assert(Cfg.tile.h >= 0 && Cfg.tile.h <= 8, "depthwise: tile.h (output rows per pass) must be 0..8");
  static_assert(Cfg.tile.w >= 0 && Cfg.tile.w <= 32, "depthwise: tile.w (output columns per tile) must be 0..32");
  static_assert(Cfg.channel_block == 0 || Cfg.channel_block == detail::dw::block,
                "depthwise: channel_block must be 0 (default) or 16, the block every path uses");

  using path = detail::dw::native_path;
  using weight_type = typename path::weight_type;

  static constexpr int kh = Cfg.kernel.h, kw = Cfg.kernel.w;
  static constexpr int groups = detail::dw::groups_for(kw);
  static constexpr int multiplier = Cfg.depth_multiplier;
  // VNNI tiles hold four accumulators per column: wider ones than 8 would only spill.
  static constexpr int tile_w = Cfg.tile.w <= 0 ? detail::dw::default_tile_w(Cfg.kernel)
                                : detail::dw::uses_vnni ? std::min(Cfg.tile.w, 8)
                                                        : Cfg.tile.w;
  // VNNI: two output rows per register tile where they share input rows (stride below the kernel's
  // extent, e.g. every stride-1 layer), each shared tap-group vector loaded once for both.
  static constexpr int register_rows =
      detail::dw::uses_vnni && detail::dw::rows_tile<kh, 2, Cfg.stride.h, Cfg.dilation.h>::shares_rows ? 2 : 1;
  static constexpr int tile_h = Cfg.tile.h > 0 ? Cfg.tile.h : register_rows;
  // Rows and columns of the multi-row register tile: TH x TW x 4 accumulators stay within 16.
  static constexpr int rows_th = std::min(register_rows, tile_h);
  static constexpr int rows_tw = std::max(1, std::min(tile_w, 4) / rows_th);
  static constexpr bool is_int8 = std::same_as<T, i8>;
  static constexpr std::uint8_t flip = is_int8 ? 0x80 : 0x00;  // x_f = x ^ flip
  static constexpr int job_channels = detail::dw::job_channels;
  static constexpr int block_bytes = detail::dw::block * detail::dw::group_taps;
  static constexpr int job_bytes = job_channels * detail::dw::group_taps;
  // Input rows one pass of tile_h output rows spans; the ring holds that many built rows, so a
  // row stays until no later pass can need it.
  static constexpr int ring_rows = (tile_h - 1) * Cfg.stride.h + (kh - 1) * Cfg.dilation.h + 1;

 public:
  static constexpr depthwise_config config = Cfg;

  /// `filter` [KH][KW][C*M] (TFLite layout), `bias` C*M entries or nullptr, `q` built by
  /// reference::make_conv_requant for the same rounding and element type (its clamp is used).
  depthwise(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    load(filter, bias, input_channels, q);
  }

  /// Derives the requantization from scales as TFLite does, with the config's activation.
  depthwise(const T* filter, const std::int32_t* bias, int input_channels, quant_params input,
            std::span<const float> filter_scales, std::int32_t filter_zero_point, quant_params output) {
    load(filter, bias, input_channels,
         reference::make_conv_requant<Cfg.round, T>(input, filter_scales, filter_zero_point, output, Cfg.act));
  }

  int input_channels() const noexcept { return channels_; }
  int output_channels() const noexcept { return channels_ * multiplier; }

  /// Output extents for an input of `in` (channels become C * depth_multiplier).
  static constexpr shape output_shape(shape in) noexcept {
    const window_geometry geo = resolve_window(in.height, in.width, Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
    return {geo.y.output, geo.x.output, in.channels * multiplier};
  }

  /// Scratch bytes a run on `in` needs (any alignment; the run aligns inside it).
  static constexpr std::size_t workspace_bytes(shape in) noexcept {
    const layout l = layout_for(in);
    return l.total;
  }

  /// Runs on every image of the batch. Views may have any extents (static ones convert) and
  /// pixel strides; misuse is reported through mosaiq::require and leaves `out` untouched.
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out,
                  std::span<std::byte> workspace) const {
    run(tensor_view<const T>(in), tensor_view<T>(out), workspace);
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out, std::span<std::byte> workspace) const {
    run(tensor_view<const T>(in), tensor_view<T>(out), workspace);
  }

  /// Output rows [band.first, band.last) of every image, nothing else: one task of a parallel run
  /// (see mosaiq::parallel_rows), each with its own workspace of workspace_bytes(input).
  void run_rows(tensor_view<const T> in, tensor_view<T> out, std::span<std::byte> workspace, row_band band) const {
    run(in, out, workspace, band);
  }

 private:
  struct layout {
    int out_w = 0, padded_channels = 0;
    std::size_t row_bytes = 0;  // one tap-group row: out_w * groups * padded_channels * 4
    std::size_t pad_pixel = 0, expanded_row = 0, pad_row = 0, ring = 0, tags = 0, total = 0;
  };

  static constexpr layout layout_for(shape in) noexcept {
    using detail::kernel::align, detail::kernel::round_up;
    layout l;
    const shape o = output_shape(in);
    const int pixels = detail::dw::pixels_per_job(o.channels);
    l.out_w = (o.width + pixels - 1) / pixels;  // job columns
    l.padded_channels = round_up(o.channels, job_channels);
    l.row_bytes = static_cast<std::size_t>(l.out_w) * groups * static_cast<std::size_t>(l.padded_channels) *
                  detail::dw::group_taps;
    const std::size_t channels = static_cast<std::size_t>(o.channels);
    std::size_t at = 0;
    l.pad_pixel = at;
    at += round_up(channels, align);
    l.expanded_row = at;
    if constexpr (multiplier > 1) at += round_up(static_cast<std::size_t>(in.width) * channels, align);
    l.pad_row = at;
    at += round_up(l.row_bytes, align);
    l.ring = at;
    at += ring_rows * round_up(l.row_bytes, align);
    l.tags = at;
    at += round_up(sizeof(int) * ring_rows, align);
    l.total = at + align;  // slack to align the caller's pointer
    return l;
  }

  void load(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    const int oc = input_channels * multiplier;
    if (!require(input_channels >= 1, errc::invalid_argument, "depthwise: input_channels must be at least 1") ||
        !require(filter != nullptr, errc::null_pointer, "depthwise: filter is null") ||
        !reference::check_conv_requant<Cfg.round, T>(q, oc))
      return;
    channels_ = input_channels;
    const int padded = detail::kernel::round_up(oc, job_channels);
    const int jobs = padded / job_channels;
    const std::int32_t filter_zp = q.filter_zero_point;
    const std::int32_t folded_input_zp = q.input_zero_point + (is_int8 ? 128 : 0);

    // uint8 on VNNI: w' = w - filter_zp must fit s8 for a single vpdpbusd per tap group.
    split_weights_ = false;
    if constexpr (detail::dw::uses_vnni && !is_int8)
      split_weights_ = detail::kernel::needs_split_weights(filter, static_cast<std::size_t>(kh * kw * oc), filter_zp);

    weights_.assign(static_cast<std::size_t>(jobs) * kh * groups * job_bytes, weight_type{0});
    bias_.assign(static_cast<std::size_t>(padded), 0);
    mult_.assign(static_cast<std::size_t>(padded), 0);
    left_.assign(static_cast<std::size_t>(padded), 0);
    right_.assign(static_cast<std::size_t>(padded), R == rounding::single_round ? 1 : 0);
    // Narrow layers (pixels_per_job > 1): lane v of the job holds channel v % width of its pixel.
    const int pixels = detail::dw::pixels_per_job(oc), width = job_channels / pixels;
    for (int v = 0; v < (pixels > 1 ? job_channels : oc); ++v) {
      const int c = pixels > 1 ? v % width : v;
      if (c >= oc) continue;
      std::int64_t weight_sum = 0;
      const int at_channel = detail::dw::channel_position(v);
      const int job = at_channel / job_channels, lane = at_channel % job_channels;
      for (int kr = 0; kr < kh; ++kr)
        for (int kc = 0; kc < kw; ++kc) {
          const std::int32_t w = static_cast<std::int32_t>(filter[(kr * kw + kc) * oc + c]) - filter_zp;
          weight_sum += w;
          const int g = kc / detail::dw::group_taps, t = kc % detail::dw::group_taps;
          const std::size_t at = ((static_cast<std::size_t>(job) * kh + kr) * groups + g) * job_bytes +
                                 static_cast<std::size_t>(lane) * detail::dw::group_taps + t;
          weights_[at] = static_cast<weight_type>(split_weights_ ? static_cast<std::int32_t>(filter[(kr * kw + kc) * oc + c]) - 128 : w);
        }
      bias_[at_channel] = static_cast<std::int32_t>((bias ? bias[c] : 0) - folded_input_zp * weight_sum);
      const requant_scale s = q.scale_for(c);
      mult_[at_channel] = s.multiplier, left_[at_channel] = s.left_shift, right_[at_channel] = s.right_shift;
    }
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    if constexpr (detail::dw::uses_vnni) {
      requant_lanes_.assign(static_cast<std::size_t>(padded / detail::dw::block), {});
      bool supported = true, left_shift = false;
      for (int at = 0; at < padded; ++at) {
        const requant_scale s{mult_[at], left_[at], right_[at]};
        supported = supported && simd::avx512::requant_lanes::supports<R>(s);
        left_shift = left_shift || s.left_shift != 0;
        requant_lanes_[at / detail::dw::block].template set_lane<R>(at % detail::dw::block, s);
      }
      // The zero point goes into the offsets (the tile adds none); the bytes are clamped after packing.
      supported = supported && std::ranges::all_of(requant_lanes_, [](const auto& l) { return l.folds_zero_point(); });
      if (supported)
        for (auto& l : requant_lanes_) l.fold_zero_point(q.output_zero_point);
      const bool clamp_hides_negative = q.clamp.min >= q.output_zero_point;
      const bool sign_free = std::ranges::all_of(
          requant_lanes_, [&](const auto& lanes) { return lanes.sign_free(clamp_hides_negative); });
      using kind = detail::dw::requant_kind;
      requant_ = !supported  ? kind::general
                 : sign_free ? (left_shift ? kind::lanes_unsigned_with_left_shift : kind::lanes_unsigned)
                             : (left_shift ? kind::lanes_with_left_shift : kind::lanes);
    }
#endif
    for (int g = 0; g < groups; ++g)
      for (int lane = 0; lane < detail::dw::block; ++lane)
        for (int t = 0; t < detail::dw::group_taps; ++t)
          group_ones_[static_cast<std::size_t>((g * detail::dw::block + lane) * detail::dw::group_taps + t)] =
              g * detail::dw::group_taps + t < kw ? 1 : 0;
    input_zero_point_ = q.input_zero_point;
    output_zero_point_ = q.output_zero_point;
    clamp_ = q.clamp;
    sum_x_factor_ = 128 - filter_zp;
    ready_ = true;
  }

  static constexpr rounding R = Cfg.round;

  void run(tensor_view<const T> in, tensor_view<T> out, std::span<std::byte> workspace) const {
    run(in, out, workspace, {0, out.height()});
  }

  void run(tensor_view<const T> in, tensor_view<T> out, std::span<std::byte> workspace, row_band band) const {
    if (!require(ready_, errc::invalid_argument, "depthwise: layer was not loaded (construction reported an error)") ||
        !check_view(in, "depthwise: invalid input view") || !check_view(out, "depthwise: invalid output view"))
      return;
    const shape expected = output_shape(in.dims());
    if (!require(in.channels() == channels_, errc::shape_mismatch,
                 "depthwise: input channels differ from the weights") ||
        !require(out.dims() == expected, errc::shape_mismatch,
                 "depthwise: output extents differ from output_shape(input)") ||
        !require(out.batch() == in.batch(), errc::shape_mismatch, "depthwise: input and output batch differ") ||
        !require(workspace.size() >= workspace_bytes(in.dims()), errc::invalid_argument,
                 "depthwise: workspace smaller than workspace_bytes(input)") ||
        !require(band.first >= 0 && band.first <= band.last && band.last <= expected.height, errc::invalid_argument,
                 "depthwise: row band outside the output"))
      return;
    if (expected.height == 0 || expected.width == 0 || in.height() == 0 || in.width() == 0) return;

    const layout l = layout_for(in.dims());
    std::uint8_t* const base = detail::kernel::aligned_workspace(workspace);
    std::uint8_t* const pad_pixel = base + l.pad_pixel;
    std::uint8_t* const expanded = base + l.expanded_row;
    std::uint8_t* const pad_row = base + l.pad_row;
    std::uint8_t* const ring = base + l.ring;
    int* const tags = reinterpret_cast<int*>(base + l.tags);
    const std::size_t ring_stride = detail::kernel::round_up(l.row_bytes, detail::kernel::align);
    const int oc = expected.channels;
    const int pixels = detail::dw::pixels_per_job(oc);

    // Padding reads the raw input zero point; the build flips it like every other input byte.
    std::memset(pad_pixel, static_cast<std::uint8_t>(input_zero_point_), static_cast<std::size_t>(oc));
    std::memset(pad_row, static_cast<std::uint8_t>(static_cast<std::uint8_t>(input_zero_point_) ^ flip), l.row_bytes);

    const window_geometry geo = resolve_window(in.height(), in.width(), Cfg.kernel, Cfg.stride, Cfg.dilation, Cfg.pad);
    const std::ptrdiff_t column_stride = static_cast<std::ptrdiff_t>(groups) * l.padded_channels * detail::dw::group_taps;
    const std::ptrdiff_t group_stride = static_cast<std::ptrdiff_t>(l.padded_channels) * detail::dw::group_taps;

    for (int n = 0; n < in.batch(); ++n) {
      for (int r = 0; r < ring_rows; ++r) tags[r] = -1;
      const auto row_for = [&](int iy) -> const std::uint8_t* {
        if (iy < 0 || iy >= in.height()) return pad_row;
        const int slot = iy % ring_rows;
        std::uint8_t* row = ring + static_cast<std::size_t>(slot) * ring_stride;
        if (tags[slot] != iy) {
          build_row(in, n, iy, row, pad_pixel, expanded, l, geo.x.pad_before);
          tags[slot] = iy;
        }
        return row;
      };
      for (int oy0 = band.first; oy0 < band.last; oy0 += tile_h) {
        const int pass_rows = std::min(tile_h, band.last - oy0);
        std::array<std::array<const std::uint8_t*, kh>, tile_h> rows{};
        for (int r = 0; r < pass_rows; ++r)
          for (int kr = 0; kr < kh; ++kr)
            rows[r][kr] = row_for((oy0 + r) * Cfg.stride.h - geo.y.pad_before + kr * Cfg.dilation.h);
        const std::ptrdiff_t out_row_stride = pass_rows > 1 ? out.pixel(n, oy0 + 1, 0) - out.pixel(n, oy0, 0) : 0;
        for (int b = 0; b * job_channels < oc; ++b) {
          const int c0 = b * job_channels;
          std::array<const std::uint8_t*, tile_h * kh> block_rows{};
          for (int r = 0; r < pass_rows; ++r)
            for (int kr = 0; kr < kh; ++kr) block_rows[r * kh + kr] = rows[r][kr] + c0 * detail::dw::group_taps;
          for (int r = 0; r < pass_rows;) {
            const detail::dw::row_job job{
                .rows = block_rows.data() + r * kh,
                .column_stride = column_stride,
                .group_stride = group_stride,
                .weights = weights_.data() + static_cast<std::size_t>(b) * kh * groups * job_bytes,
                .bias = bias_.data() + c0,
                .multiplier = mult_.data() + c0,
                .left_shift = left_.data() + c0,
                .right_shift = right_.data() + c0,
                .requant_lanes = requant_lanes_data(c0),
                .requant = requant_,
                .output_zero_point = output_zero_point_,
                .clamp_min = clamp_.min,
                .clamp_max = clamp_.max,
                .sum_x_factor = sum_x_factor_,
                .group_ones = group_ones_.data(),
                .out = out.pixel(n, oy0 + r, 0) + c0,
                .out_pixel_stride = out.pixel_stride(),
                .out_row_stride = out_row_stride,
                .valid_channels = std::min(job_channels, oc - c0),
                .pixels = pixels,
                .pixel_width = job_channels / pixels,
                .out_width = expected.width};
            if (rows_th > 1 && r + rows_th <= pass_rows && !split_weights_) {
              run_row_tiles<rows_th, rows_tw>(job, l.out_w);
              r += rows_th;
            } else {
              run_columns(job, l.out_w);
              ++r;
            }
          }
        }
      }
    }
  }

  // One tap-group row for input row iy: per output column and group, the 4 taps' source pixels
  // (or the pad pixel) interleaved per channel.
  void build_row(const tensor_view<const T>& in, int n, int iy, std::uint8_t* row, const std::uint8_t* pad_pixel,
                 std::uint8_t* expanded, const layout& l, int pad_left) const {
    const int oc = channels_ * multiplier;
    const auto* source = reinterpret_cast<const std::uint8_t*>(in.pixel(n, iy, 0));
    std::ptrdiff_t source_stride = in.pixel_stride();
    if constexpr (multiplier > 1) {
      // Output channel ic*M + m reads input channel ic: replicate once per row, then build as M = 1.
      for (int ix = 0; ix < in.width(); ++ix) {
        const std::uint8_t* px = source + ix * source_stride;
        std::uint8_t* dst = expanded + static_cast<std::ptrdiff_t>(ix) * oc;
#if defined(__AVX512BW__) && defined(__AVX512VL__)
        if constexpr (multiplier == 2) {
          // 32 channels per step: widen each byte to a 16-bit lane holding it twice.
          for (int ic = 0; ic < channels_; ic += 32) {
            const int count = std::min(32, channels_ - ic);
            const __mmask32 mask = count == 32 ? ~__mmask32{0} : (__mmask32{1} << count) - 1;
            const __m512i wide = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, px + ic));
            const __mmask64 pairs = count == 32 ? ~__mmask64{0} : (__mmask64{1} << (2 * count)) - 1;
            _mm512_mask_storeu_epi8(dst + 2 * ic, pairs, _mm512_or_si512(wide, _mm512_slli_epi16(wide, 8)));
          }
          continue;
        }
#endif
        for (int ic = 0; ic < channels_; ++ic)
          for (int m = 0; m < multiplier; ++m) dst[ic * multiplier + m] = px[ic];
      }
      source = expanded;
      source_stride = oc;
    }
    const std::ptrdiff_t column_bytes = static_cast<std::ptrdiff_t>(l.padded_channels) * detail::dw::group_taps;
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    if constexpr (detail::dw::uses_vnni) {
      const int pixels = detail::dw::pixels_per_job(oc);
      if (pixels > 1) {
        const int out_width = output_shape(in.dims()).width;
        // Stride 1 or 2 over densely packed pixels: a job column's sources per tap are one 64-byte
        // run (stride 1) or every other pixel of a 128-byte one (stride 2).
        constexpr int sw = Cfg.stride.w;
        const bool runs = (sw == 1 || sw == 2) && source_stride == oc && oc * pixels == job_channels;
        for (int ox = 0; ox < l.out_w; ++ox)
          for (int g = 0; g < groups; ++g) {
            if (runs && (ox + 1) * pixels <= out_width) {
              const std::uint8_t* starts[detail::dw::group_taps];
              bool inside = true;
              for (int t = 0; t < detail::dw::group_taps; ++t) {
                const int tap = g * detail::dw::group_taps + t;
                const int ix = ox * pixels * sw - pad_left + tap * Cfg.dilation.w;
                const bool in_image = ix >= 0 && ix + (pixels - 1) * sw < in.width();
                starts[t] = tap < kw && in_image ? source + ix * source_stride : nullptr;
                inside = inside && (tap >= kw || in_image);
              }
              if (inside) {
                if constexpr (sw == 1)
                  path::interleave_runs(starts, row + (ox * groups + g) * column_bytes, flip);
                else
                  path::interleave_strided_runs(starts, pixels, row + (ox * groups + g) * column_bytes, flip);
                continue;
              }
            }
            const std::uint8_t* taps[detail::dw::max_pixels_per_job][detail::dw::group_taps];
            for (int k = 0; k < pixels; ++k)
              for (int t = 0; t < detail::dw::group_taps; ++t) {
                const int x = ox * pixels + k, tap = g * detail::dw::group_taps + t;
                const int ix = x * Cfg.stride.w - pad_left + tap * Cfg.dilation.w;
                taps[k][t] = x < out_width && tap < kw && ix >= 0 && ix < in.width() ? source + ix * source_stride
                                                                                     : pad_pixel;
              }
            path::interleave_pixels(taps, pixels, job_channels / pixels, row + (ox * groups + g) * column_bytes, oc,
                                    flip);
          }
        return;
      }
    }
#endif
    for (int ox = 0; ox < l.out_w; ++ox)
      for (int g = 0; g < groups; ++g) {
        const std::uint8_t* taps[detail::dw::group_taps];
        for (int t = 0; t < detail::dw::group_taps; ++t) {
          const int k = g * detail::dw::group_taps + t;
          const int ix = ox * Cfg.stride.w - pad_left + k * Cfg.dilation.w;
          taps[t] = k < kw && ix >= 0 && ix < in.width() ? source + ix * source_stride : pad_pixel;
        }
        path::interleave(taps, row + (ox * groups + g) * column_bytes, oc, l.padded_channels, flip);
      }
  }

  template <int TW>
  static void run_tiles(const detail::dw::row_job& job, int& ox, int out_w, bool split) noexcept {
    if constexpr (detail::dw::uses_vnni) {
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
      constexpr int sh = Cfg.stride.h, dh = Cfg.dilation.h;
      if (split) {
        // Twice the accumulators: keep the split tile within the register file.
        constexpr int split_tw = TW > 2 ? 2 : TW;
        for (; ox + split_tw <= out_w; ox += split_tw)
          path::template tile<kh, groups, 1, split_tw, sh, dh, R, T, true>(job, ox);
      } else {
        for (; ox + TW <= out_w; ox += TW) path::template tile<kh, groups, 1, TW, sh, dh, R, T, false>(job, ox);
      }
#endif
    } else {
      (void)split;
      for (; ox + TW <= out_w; ox += TW) path::template tile<kh, groups, TW, R, T>(job, ox);
    }
    if constexpr (TW > 1) run_tiles<TW / 2>(job, ox, out_w, split);
  }

  void run_columns(const detail::dw::row_job& job, int out_w) const noexcept {
    int ox = 0;
    run_tiles<tile_w>(job, ox, out_w, split_weights_);
  }

  /// TH output rows (VNNI, no split weights) in tiles of TW columns, then the narrower cascade.
  template <int TH, int TW>
  static void run_row_tiles(const detail::dw::row_job& job, int out_w, int ox = 0) noexcept {
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    if constexpr (TH > 1) {
      for (; ox + TW <= out_w; ox += TW)
        path::template tile<kh, groups, TH, TW, Cfg.stride.h, Cfg.dilation.h, R, T, false>(job, ox);
      if constexpr (TW > 1) run_row_tiles<TH, TW / 2>(job, out_w, ox);
    }
#else
    (void)job, (void)out_w, (void)ox;
#endif
  }

  int channels_ = 0;
  bool ready_ = false;
  bool split_weights_ = false;
  std::int32_t input_zero_point_ = 0, output_zero_point_ = 0, sum_x_factor_ = 0;
  clamp_range clamp_{};
  std::vector<weight_type> weights_;  // [block][KH][G][16][4]
  std::vector<std::int32_t> bias_, mult_, left_, right_;  // per padded output channel
  std::array<std::int8_t, groups * block_bytes> group_ones_{};
  detail::dw::requant_kind requant_ = detail::dw::requant_kind::general;
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
  std::vector<simd::avx512::requant_lanes> requant_lanes_;  // per 16 padded channel positions
  const void* requant_lanes_data(int c0) const noexcept { return requant_lanes_.data() + c0 / detail::dw::block; }
#else
  const void* requant_lanes_data(int) const noexcept { return nullptr; }
#endif
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
