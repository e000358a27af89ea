// Layer aliases the banded-network tests share (tests/bands_test.cpp, tests/bands16x8_test.cpp).
#pragma once

#include "mosaiq/net/layers.hpp"

namespace band_layers {

namespace L = mosaiq::layers;

/// A 3x3 convolution with relu6 of the given output channels, stride and dilation.
template <int Channels, int Stride = 1, int Dilation = 1>
using conv3x3 = L::conv2d<L::conv2d_config{.out_channels = Channels,
                                           .kernel = {3, 3},
                                           .stride = {Stride, Stride},
                                           .dilation = {Dilation, Dilation},
                                           .act = mosaiq::activation::relu6}>;

}  // namespace band_layers
