// expect: mosaiq::banding::chain: the layers cannot run in bands
// An i16 (16x8) network runs band chains (net/bands.hpp), but its transposed convolution has no window entry point:
// it ends a chain, so a chain forced across it is refused.
#include "mosaiq/net/network.hpp"

namespace L = mosaiq::layers;
using net = mosaiq::network<mosaiq::input<mosaiq::i16, 8, 8, 4>::with_banding<mosaiq::banding::chain(0, 1, 2)>,
                            L::pointwise<L::pointwise_config{.out_channels = 8}>,
                            L::transpose_conv<L::transpose_conv_config{.out_channels = 2, .kernel = {2, 2}}>>;
static_assert(net::arena_bytes > 0);
