// expect: the network's input<..., Round> sets the rounding: leave .round unset
// A layer config is its op's config, whose .round the network decides for every layer at once.
#include "mosaiq/net/network.hpp"

using net = mosaiq::network<mosaiq::input<mosaiq::i8, 8, 8, 4>,
                            mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{
                                .out_channels = 8, .round = mosaiq::rounding::single_round}>>;
static_assert(net::layer_count == 1);
