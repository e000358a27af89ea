// expect: a resize layer scales by an integer .scale; .out_height and .out_width are the op's
// The resize op's fixed output sizes are not (yet) a layer's: a network resizes by an integer factor.
#include "mosaiq/net/network.hpp"

using net =
    mosaiq::network<mosaiq::input<mosaiq::u8, 8, 8, 4>,
                    mosaiq::layers::resize_bilinear<mosaiq::layers::resize_config{.out_height = 12, .out_width = 12}>>;
static_assert(net::layer_count == 1);
