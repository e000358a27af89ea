// Built once per target by the installed mosaiq_add_multitarget.
#include "network.hpp"

#include <mosaiq/net/export.hpp>

MOSAIQ_EXPORT_NETWORK(consumer_net, consumer::net);
