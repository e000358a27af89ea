// The installed consumer's network for its multi-target build (network.cpp, dispatch_main.cpp).
#pragma once

#include <mosaiq/net.hpp>

namespace consumer {
using net = mosaiq::network<mosaiq::input<mosaiq::u8, 5, 7, 11>,
                            mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 6}>>;
}  // namespace consumer
