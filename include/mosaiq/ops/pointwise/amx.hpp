// Pointwise, AMX path: the layer's tile loop (pack a block of rows, 32- or 16-row tiles per pair of
// channel blocks, the VNNI epilogue on the tiles' int32 sums). Members of pointwise defined out of
// class: ops/pointwise.hpp declares them and includes this file after the class. Only the x86-64
// Linux AVX-512 VNNI build has them (simd/amx.hpp: MOSAIQ_HAS_AMX_PATH).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/simd/amx.hpp"

#if MOSAIQ_HAS_AMX_PATH

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// run_rows on the AMX path: per block of rows, pack them (64-byte padded, unflipped), then per
/// pair of channel blocks (and one last single block) run 32- or 16-row tiles over the block.
template <pointwise_config Cfg, quantized_element T>
template <class Rows>
inline void pointwise<Cfg, T>::run_rows_amx(const Rows& rows, std::ptrdiff_t pixels, std::size_t image_pixels,
                                            T* destination, std::ptrdiff_t out_stride,
                                            std::uint8_t* base) const noexcept {
  const layout l = layout_for(channels_, image_pixels, true);
  auto* const packed = reinterpret_cast<input_type*>(base + l.input);
  auto* const pixel_offsets = reinterpret_cast<std::int32_t*>(base + l.offsets);
  const int padded = static_cast<int>(l.row_elements);
  const simd::amx::tile_config config = simd::amx::full_tiles();
  simd::amx::load_config(config);
  alignas(64) std::int32_t c[2 * amx_rows * 2 * kernels::pw::block];  // two C buffers, alternating
  for (std::ptrdiff_t p0 = 0; p0 < pixels; p0 += l.block_pixels) {
    const int block_pixels = static_cast<int>(std::min<std::ptrdiff_t>(l.block_pixels, pixels - p0));
    if (split_weights_) {
      rows.template pack<path, true>(p0, block_pixels, packed, padded, 0, pixel_offsets, split_factor_);
    } else {
      rows.template pack<path, false>(p0, block_pixels, packed, padded, 0, pixel_offsets, 0);  // offsets unread
    }
    T* const block_out = destination + p0 * out_stride;
    switch (requant_) {
      case lane_requant::lanes_folded:
        run_amx_block_pairs<lane_requant::lanes_folded>(packed, padded, pixel_offsets, block_pixels, block_out,
                                                        out_stride, c);
        break;
      case lane_requant::lanes_folded_sign_free:
        run_amx_block_pairs<lane_requant::lanes_folded_sign_free>(packed, padded, pixel_offsets, block_pixels,
                                                                  block_out, out_stride, c);
        break;
      case lane_requant::lanes:
        run_amx_block_pairs<lane_requant::lanes>(packed, padded, pixel_offsets, block_pixels, block_out, out_stride, c);
        break;
      case lane_requant::lanes_left:
        run_amx_block_pairs<lane_requant::lanes_left>(packed, padded, pixel_offsets, block_pixels, block_out,
                                                      out_stride, c);
        break;
      default:
        run_amx_block_pairs<lane_requant::general>(packed, padded, pixel_offsets, block_pixels, block_out, out_stride,
                                                   c);
    }
  }
  simd::amx::release();
}

template <pointwise_config Cfg, quantized_element T>
template <kernels::requant_epilogue Q>
inline void pointwise<Cfg, T>::run_amx_block_pairs(const input_type* packed, int padded,
                                                   const std::int32_t* pixel_offsets, int block_pixels, T* block_out,
                                                   std::ptrdiff_t out_stride, std::int32_t* c) const noexcept {
  int b = 0;
  for (; b + 2 <= blocks; b += 2)
    run_amx_blocks<2, Q>(b, packed, padded, pixel_offsets, block_pixels, block_out, out_stride, c);
  if constexpr (blocks % 2 != 0)
    run_amx_blocks<1, Q>(b, packed, padded, pixel_offsets, block_pixels, block_out, out_stride, c);
}

/// NB channel blocks from `first_block` over the block's rows, 32 (or a last 16) at a time,
/// software-pipelined: tile i's multiplies are issued, then tile i-1's sums (in the other C
/// buffer) are requantized while the tile unit works, then tile i is stored.
template <pointwise_config Cfg, quantized_element T>
template <int NB, kernels::requant_epilogue Q>
inline void pointwise<Cfg, T>::run_amx_blocks(int first_block, const input_type* packed, int padded,
                                              const std::int32_t* pixel_offsets, int block_pixels, T* block_out,
                                              std::ptrdiff_t out_stride, std::int32_t* c) const noexcept {
  constexpr int block = kernels::pw::block;
  const int c0 = first_block * block;
  const std::ptrdiff_t panel_bytes = static_cast<std::ptrdiff_t>(padded) * block;  // one block's weights
  const auto* b = reinterpret_cast<const std::int8_t*>(amx_weights_.data()) + first_block * panel_bytes;
  const int k_steps = padded / simd::amx::k_step;
  const auto* a = reinterpret_cast<const std::uint8_t*>(packed);
  constexpr int buffer = amx_rows * 2 * block;
  int previous = -1, previous_rows = 0;
  for (int p = 0, i = 0; p < block_pixels; p += amx_rows, ++i) {
    const int rows = std::min(amx_rows, block_pixels - p);
    std::int32_t* const sums = c + (i % 2) * buffer;
    const std::uint8_t* const rows_at = a + static_cast<std::ptrdiff_t>(p) * padded;
    if (rows > 16)
      simd::amx::gemm_compute<2, NB, is_int8>(rows_at, padded, b, panel_bytes, k_steps);
    else
      simd::amx::gemm_compute<1, NB, is_int8>(rows_at, padded, b, panel_bytes, k_steps);
    if (previous >= 0)
      requantize_amx<NB, Q>(c + ((i + 1) % 2) * buffer, previous_rows, pixel_offsets + previous, c0,
                            block_out + previous * out_stride + c0, out_stride);
    if (rows > 16)
      simd::amx::gemm_store<2, NB>(sums);
    else
      simd::amx::gemm_store<1, NB>(sums);
    previous = p, previous_rows = rows;
  }
  if (previous >= 0) {
    const int i = previous / amx_rows;
    requantize_amx<NB, Q>(c + (i % 2) * buffer, previous_rows, pixel_offsets + previous, c0,
                          block_out + previous * out_stride + c0, out_stride);
  }
}

/// The VNNI path's epilogue on `rows` rows of NB * 16 int32 dot products.
template <pointwise_config Cfg, quantized_element T>
template <int NB, kernels::requant_epilogue Q>
[[gnu::always_inline]] inline void pointwise<Cfg, T>::requantize_amx(const std::int32_t* c, int rows,
                                                                     const std::int32_t* pixel_offset, int c0, T* out,
                                                                     std::ptrdiff_t out_stride) const noexcept {
  constexpr int block = kernels::pw::block;
  const __m512i zp = _mm512_set1_epi32(output_zero_point_), lo = _mm512_set1_epi32(clamp_.min),
                hi = _mm512_set1_epi32(clamp_.max);
#pragma GCC unroll 2
  for (int b = 0; b < NB; ++b) {
    const int valid = out_channels - (c0 + b * block);
    const __mmask16 store_mask = valid >= block ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << valid) - 1u);
    const int ch = c0 + b * block;
    const __m512i bias = _mm512_loadu_si512(bias_.data() + ch), multiplier = _mm512_loadu_si512(mult_.data() + ch),
                  left = _mm512_loadu_si512(left_.data() + ch), right = _mm512_loadu_si512(right_.data() + ch);
    // Read once per block, before the stores (see vnni_path::tile).
    const auto lanes = kernels::lane_vectors<Q>::read(lanes_[static_cast<std::size_t>(ch / block)]);
    const bool split = split_weights_;
    for (int r = 0; r < rows; ++r) {
      __m512i acc = _mm512_add_epi32(_mm512_load_si512(c + r * NB * block + b * block), bias);
      if (split) acc = _mm512_add_epi32(acc, _mm512_set1_epi32(pixel_offset[r]));
      T* const to = out + r * out_stride + b * block;
      if constexpr (kernels::folds_zero_point(Q)) {
        const __m512i v = simd::avx512::multiply_by_nonnegative_multiplier(acc, lanes);
        if constexpr (is_int8)
          _mm512_mask_cvtsepi32_storeu_epi8(to, store_mask, v);
        else
          _mm512_mask_cvtusepi32_storeu_epi8(to, store_mask, _mm512_max_epi32(v, _mm512_setzero_si512()));
        continue;
      }
      __m512i v;
      if constexpr (Q == lane_requant::general) {
        v = simd::avx512::requantize_epi32<R>(acc, multiplier, left, right, zp, lo, hi);
      } else {
        v = _mm512_add_epi32(simd::avx512::multiply_by_nonnegative_multiplier(acc, lanes), zp);
        v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
      }
      _mm_mask_storeu_epi8(out + r * out_stride + b * block, store_mask, _mm512_cvtepi32_epi8(v));
    }
  }
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#endif  // MOSAIQ_HAS_AMX_PATH
