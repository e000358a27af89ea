// The portrait network built for one target: CMake compiles this file once per target
// (mosaiq_add_multitarget), each copy exporting portrait_u8_net_target_<t> and
// portrait_i8_net_target_<t>; main.cpp runs the best build this CPU runs.
#include <mosaiq/net/export.hpp>

#include "portrait_net.hpp"

MOSAIQ_EXPORT_NETWORK(portrait_u8_net, portrait::network<mosaiq::u8>);
MOSAIQ_EXPORT_NETWORK(portrait_i8_net, portrait::network<mosaiq::i8>);
