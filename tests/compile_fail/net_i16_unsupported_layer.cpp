// expect: this layer kind has no 16x8 executor yet
// An i16 (16x8) network takes only the layer kinds that have a 16x8 executor (net/executor_16x8.hpp): no max pool.
#include "mosaiq/net/network.hpp"

using net = mosaiq::network<mosaiq::input<mosaiq::i16, 8, 8, 4>, mosaiq::layers::max_pool<>>;
static_assert(net::arena_bytes == 0);
