// The quick start's chain built for one target: CMake compiles this file once per target
// (mosaiq_add_multitarget), each copy exporting quickstart_chain_target_<target>.
#include "chain.hpp"

#include <mosaiq/net/export.hpp>

MOSAIQ_EXPORT_NETWORK(quickstart_chain, quickstart::chain);
