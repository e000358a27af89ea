// Pooling in TFLite's 16x8 mode (int16 activations, zero point 0), bit-exact with reference/int16.hpp:
//
//   mosaiq::average_pool16x8(in, out, {.kernel = {16, 16}, .stride = {16, 16}}, scale);   // reference::average_pool_16
//   const auto params = mosaiq::reference::make_mean_params_16<R>(in_scale, out_scale, height * width);  // load time
//   mosaiq::mean16x8<R>(in, out, params);                                                 // reference::mean_16<R>
//
// Same arguments and contracts as the references: average pool sums each window's in-image taps in int32 (at most
// 65535 taps, else refused), divides by their count rounded half away from zero and clamps to the fused activation
// (the scale only sets that clamp); MEAN (mosaiq's global_average_pool layer) sums all of an image's pixels per
// channel in int32 and applies the folded multiplier of make_mean_params_16 for rounding R. The vector path
// (ops/pool16x8/simd.hpp) takes blocks of 16 channels widened to int32 lanes over any view (pixel strides, unaligned
// pointers, channel tails as an overlapping last block or, below 16 channels, through padded copies); scalar builds
// run the references themselves. Misuse is reported as the reference reports it and writes nothing.
#pragma once

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/pool16x8/scalar.hpp"
#include "mosaiq/ops/pool16x8/simd.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

namespace detail::pooling16 {

// Function objects, as the 8-bit pools (ops/pool.hpp): calls read like the references' and argument-dependent lookup
// never makes them ambiguous.

struct average_pool16x8_fn {
  void operator()(tensor_view<const i16> in, tensor_view<i16> out, const reference::pool_params& params,
                  float scale = 1.0f) const {
    kernels::pool16::native::average_pool(in, out, params, scale);
  }
};

template <rounding R>
struct mean16x8_fn {
  void operator()(tensor_view<const i16> in, tensor_view<i16> out, const reference::mean_params_16& params) const {
    kernels::pool16::native::mean<R>(in, out, params);
  }
};

}  // namespace detail::pooling16

/// Average pool in 16x8, equal bit for bit to reference::average_pool_16 (same arguments and contract).
inline constexpr detail::pooling16::average_pool16x8_fn average_pool16x8{};

/// MEAN over height and width in 16x8, equal bit for bit to reference::mean_16<R> (same arguments and contract).
template <rounding R>
inline constexpr detail::pooling16::mean16x8_fn<R> mean16x8{};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
