// Quantized pooling kernels, bit-exact with reference/pool.hpp:
//
//   mosaiq::max_pool<mosaiq::u8>(in, out, {.kernel = {2, 2}, .stride = {2, 2}}, quant);
//   mosaiq::average_pool<mosaiq::i8>(in, out, {.kernel = {3, 3}, .pad = mosaiq::padding::same()}, quant);
//   mosaiq::global_average_pool<mosaiq::rounding::tflite_reference, mosaiq::u8>(in, out, in_quant, out_quant);
//
// Same signatures and contracts as the reference ops. Channels run in vectors over each output pixel's in-image
// taps; average and global pool widen blocks of 16 to int32 (simd/lanes.hpp), a tail on a copy of the taps:
//   max      on the bytes themselves (64 channels per zmm, 32 per ymm, 16 per q register; partial vectors masked
//            or copied): the whole window's max in one register, then the activation clamp; the full 2x2 and 3x3
//            windows are unrolled at compile time;
//   average  the int32 sum of the taps (the full 2x2 and 3x3 windows unrolled at compile time, as for max), then
//            reference::detail::rounded_divide by the tap count (exact: a float quotient corrected by its remainder,
//            for windows up to 4096 taps; a larger window, e.g. a whole-map pool, divides its 16 sums in scalar code,
//            one division per channel against thousands of taps summed), then the activation clamp; a window that
//            is the whole map (one output pixel) of a dense view takes the global pool's dense sums instead;
//   global   the sum over all pixels per channel: on a dense image of at least 4 KB whose channel count has a
//            step of 4-8 vectors (ops/pool/dense_sums.hpp: the image as one byte stream, 16-bit lane sums), else per
//            64 channels (one pass over the image, four blocks of int32 sums); then per channel the reference's MEAN
//            recipe (input offset, the multiplier with 1 / pixels folded in, output offset): C values per image.
// Without an ISA (scalar builds) every op calls the reference. The vector path is ops/pool/simd.hpp, on the byte
// vectors of ops/pool/{x86,neon}.hpp for max pool.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/pool/simd.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

using reference::global_pool_params;
using reference::pool_params;

namespace detail::pooling {

/// The path this target runs: the vector kernels of ops/pool/simd.hpp where it has SIMD, else the reference ops.
inline constexpr bool vector_kernels = MOSAIQ_TARGET_SIMD;

// The ops are function objects (variable templates), not function templates: a function mosaiq::max_pool would be
// found by argument-dependent lookup (tensor_view lives in mosaiq) next to reference::max_pool in unqualified calls
// and make them ambiguous; lookup ignores objects there. Call them as the reference ops: mosaiq::max_pool<T>(...).

template <quantized_element T>
struct max_pool_fn {
  void operator()(tensor_view<const T> in, tensor_view<T> out, const pool_params& params, quant_params quant) const {
    if constexpr (vector_kernels) {
      const std::optional<window_geometry> geometry = reference::detail::resolve_pool(in, out, params);
      if (!geometry) return;
      const std::optional<clamp_range> clamp = reference::detail::pool_clamp<T>(params.act, quant);
      if (!clamp) return;
      if (out.dims().elements() == 0) return;
      max_windowed<T>(in, out, params, *geometry, *clamp);
    } else {
      reference::max_pool<T>(in, out, params, quant);
    }
  }
};

template <quantized_element T>
struct average_pool_fn {
  void operator()(tensor_view<const T> in, tensor_view<T> out, const pool_params& params, quant_params quant) const {
    if constexpr (vector_kernels) {
      if (std::int64_t{params.kernel.h} * params.kernel.w <= detail::pooling::max_summed_average_taps) {
        const std::optional<window_geometry> geometry = reference::detail::resolve_pool(in, out, params);
        if (!geometry) return;
        const std::optional<clamp_range> clamp = reference::detail::pool_clamp<T>(params.act, quant);
        if (!clamp) return;
        if (out.dims().elements() == 0) return;
        if (whole_map_average<T>(in, out, params, *geometry, *clamp)) return;
        average_windowed<T>(in, out, params, *geometry, *clamp);
        return;
      }
    }
    reference::average_pool<T>(in, out, params, quant);
  }
};

template <rounding R, quantized_element T>
struct global_average_pool_fn {
  /// `params` come from reference::make_global_average_pool_params<R, T> for the input's height * width. Out of line:
  /// inlined where the output's size is known (fewer channels than a block), GCC 12 takes finish_block's full-block
  /// store for an overflow (-Warray-bounds) although the channel count rules that branch out.
  [[gnu::noinline]] void operator()(tensor_view<const T> in, tensor_view<T> out,
                                    const global_pool_params& params) const {
    if (!check_view(in, "global_average_pool: input") || !check_view(out, "global_average_pool: output")) return;
    if (!require(out.dims() == shape{1, 1, in.channels()} && out.batch() == in.batch(), errc::shape_mismatch,
                 "global_average_pool: output must be 1 x 1 x channels with the input's batch"))
      return;
    if (!require(params.valid && std::int64_t{in.height()} * in.width() == params.pixel_count, errc::invalid_argument,
                 "global_average_pool: params must be valid and built for the input's height * width"))
      return;

    const requant_scale scale = prepare_scale<R>(params.multiplier);
    const std::int32_t offset_total = params.input_offset * params.pixel_count;  // fits: pixel_count < 2^31 / 256
    const auto finish = [&](std::int32_t raw_sum) {
      return requantize<R, T>(raw_sum - offset_total, scale, params.output_offset, element_traits<T>::min,
                              element_traits<T>::max);
    };
    for (int n = 0; n < in.batch(); ++n) {
      T* target = out.pixel(n, 0, 0);
      int c = 0;
      if constexpr (vector_kernels) c = global_average_channels<R, T>(in, n, offset_total, scale, params, target);
      for (; c < in.channels(); ++c) {
        std::int32_t sum = 0;
        for (int y = 0; y < in.height(); ++y)
          for (int x = 0; x < in.width(); ++x) sum += static_cast<std::int32_t>(in(n, y, x, c));
        target[c] = finish(sum);
      }
    }
  }

  /// Builds the params from the quantizations on every call, as the reference op does.
  void operator()(tensor_view<const T> in, tensor_view<T> out, quant_params in_quant, quant_params out_quant) const {
    if (!check_view(in, "global_average_pool: input") || !check_view(out, "global_average_pool: output")) return;
    const std::int64_t pixels = std::int64_t{in.height()} * in.width();
    if (!require(pixels >= 1 && pixels <= reference::max_global_pool_pixels, errc::invalid_argument,
                 "global_average_pool: height * width must be in [1, max_global_pool_pixels]"))
      return;
    const global_pool_params params =
        reference::make_global_average_pool_params<R, T>(in_quant, out_quant, static_cast<int>(pixels));
    if (!params.valid) return;  // the builder has reported why
    (*this)(in, out, params);
  }
  /// Input and output share `quant`.
  void operator()(tensor_view<const T> in, tensor_view<T> out, quant_params quant) const {
    (*this)(in, out, quant, quant);
  }
};

}  // namespace detail::pooling

/// Max pool, equal bit for bit to reference::max_pool<T> (same arguments and contract).
template <quantized_element T>
inline constexpr detail::pooling::max_pool_fn<T> max_pool{};

/// Average pool, equal bit for bit to reference::average_pool<T> (same arguments and contract).
template <quantized_element T>
inline constexpr detail::pooling::average_pool_fn<T> average_pool{};

/// Global average pool (TFLite MEAN over height and width), equal bit for bit to reference::global_average_pool<R, T>:
/// (in, out, in_quant, out_quant), (in, out, quant), or (in, out, params) with params prepared once by
/// reference::make_global_average_pool_params<R, T> for the input's height * width (what the network executor does).
template <rounding R, quantized_element T>
inline constexpr detail::pooling::global_average_pool_fn<R, T> global_average_pool{};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
