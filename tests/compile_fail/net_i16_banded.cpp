// expect: an i16 (16x8) network has no band chains yet
// The band chains (net/bands.hpp) run 8-bit maps only, so an i16 network cannot be planned in band chains.
#include "mosaiq/net/network.hpp"

using net = mosaiq::network<mosaiq::input<mosaiq::i16, 8, 8, 4>::with_banding<mosaiq::banding::automatic()>,
                            mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 8}>,
                            mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 8}>>;
static_assert(net::arena_bytes > 0);
