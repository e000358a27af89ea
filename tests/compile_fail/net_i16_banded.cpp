// expect: an i16 (16x8) network runs layer by layer for now
// The 16x8 executors have no row bands yet, so an i16 network cannot be planned in band chains.
#include "mosaiq/net/network.hpp"

using net = mosaiq::network<mosaiq::input<mosaiq::i16, 8, 8, 4>::with_banding<mosaiq::banding::automatic()>,
                            mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 8}>,
                            mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 8}>>;
static_assert(net::arena_bytes > 0);
