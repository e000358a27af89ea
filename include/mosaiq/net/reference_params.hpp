// A network layer's config as the parameters of its reference kernel (reference/): the float runner, the 16x8
// runner (tools/) and the 16x8 network's executors (net/executor_16x8.hpp) call the references with them.
#pragma once

#include "mosaiq/reference/conv.hpp"
#include "mosaiq/reference/depthwise.hpp"
#include "mosaiq/reference/pool.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

template <class Config>
constexpr reference::conv2d_params conv2d_params_of(const Config& c) noexcept {
  return {.kernel = c.kernel, .stride = c.stride, .dilation = c.dilation, .pad = c.pad};
}
template <class Config>
constexpr reference::depthwise_params depthwise_params_of(const Config& c) noexcept {
  return {.kernel = c.kernel,
          .stride = c.stride,
          .dilation = c.dilation,
          .pad = c.pad,
          .depth_multiplier = c.depth_multiplier};
}
template <class Config>
constexpr reference::transpose_conv_params transpose_conv_params_of(const Config& c) noexcept {
  return {.kernel = c.kernel, .stride = c.stride, .padding = c.padding};
}
template <class Config>
constexpr reference::pool_params pool_params_of(const Config& c) noexcept {
  return {.kernel = c.kernel, .stride = c.stride, .pad = c.pad, .act = c.act};
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail
