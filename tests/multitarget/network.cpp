// One copy of this file per target (scalar, AVX2, AVX-512 VNNI...): each exports the three test networks
// under names that carry its target (mt_u8_net_target_avx2...). See multitarget_test.cpp.
#include "mosaiq/net/export.hpp"
#include "networks.hpp"

MOSAIQ_EXPORT_NETWORK(mt_u8_net, mosaiq::test::multitarget::u8_net);
MOSAIQ_EXPORT_NETWORK(mt_i8_net, mosaiq::test::multitarget::i8_net);
MOSAIQ_EXPORT_NETWORK(mt_i16_net, mosaiq::test::multitarget::i16_net);
