// 16x8 pooling, the entry points of scalar builds: the int16 references themselves (reference/int16.hpp), under the
// names ops/pool16x8/simd.hpp gives its vector kernels on SIMD targets.
#pragma once

#include "mosaiq/simd/target.hpp"

#if MOSAIQ_TARGET_SCALAR

#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/reference/pool.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pool16::native {

[[gnu::always_inline]] inline void average_pool(const tensor_view<const i16>& in, const tensor_view<i16>& out,
                                                const reference::pool_params& params, float scale) {
  reference::average_pool_16(in, out, params, scale);
}

template <rounding R>
[[gnu::always_inline]] inline void mean(const tensor_view<const i16>& in, const tensor_view<i16>& out,
                                        const reference::mean_params_16& params) {
  reference::mean_16<R>(in, out, params);
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::kernels::pool16::native

#endif  // MOSAIQ_TARGET_SCALAR
