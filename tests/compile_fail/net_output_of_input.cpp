// expect: an output layer names the network input
// layers::output must name a computed tensor: the input lives in the caller's view.
#include "mosaiq/net/network.hpp"

using net =
    mosaiq::network<mosaiq::input<mosaiq::u8, 8, 8, 4>, mosaiq::layers::output<"raw">, mosaiq::layers::depthwise<>>;
static_assert(net::layer_count == 2);
