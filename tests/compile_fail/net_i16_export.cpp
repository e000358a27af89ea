// expect: an i16 (16x8) network is not exportable yet
// dispatch::element names u8 and i8 only: an exported i16 network would be mislabelled.
#include "mosaiq/net/export.hpp"

using net = mosaiq::network<mosaiq::input<mosaiq::i16, 8, 8, 4>,
                            mosaiq::layers::pointwise<mosaiq::layers::pointwise_config{.out_channels = 8}>>;
MOSAIQ_EXPORT_NETWORK(i16_net, net);
