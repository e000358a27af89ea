// expect: layers::add and layers::mul need the current and the tapped tensor to broadcast
// A residual add whose branch changed the channel count (8 -> 16).
#include "mosaiq/net/network.hpp"

using net = mosaiq::network<
    mosaiq::input<mosaiq::u8, 16, 16, 3>, mosaiq::layers::conv2d<mosaiq::layers::conv2d_config{.out_channels = 8}>,
    mosaiq::layers::tap<"skip">, mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 16}>,
    mosaiq::layers::add<"skip">>;
static_assert(net::layer_count == 4);
