// The quick start's two-layer depthwise chain as a network type: on a 64x64x32 uint8 image, a 3x3
// stride-1 layer with ReLU6, then a 3x3 stride-2 layer with dilation 2 (atrous), both SAME.
// chain.cpp builds it once per target; main.cpp runs the best build this CPU runs.
#pragma once

#include <mosaiq/net.hpp>

namespace quickstart {

namespace L = mosaiq::layers;

inline constexpr L::depthwise_config layer1{.kernel = {3, 3}, .stride = {1, 1}, .act = mosaiq::activation::relu6};
inline constexpr L::depthwise_config layer2{.kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}};

using chain = mosaiq::network<mosaiq::input<mosaiq::u8, 64, 64, 32>, L::depthwise<layer1>, L::depthwise<layer2>>;

}  // namespace quickstart
