// The face detector's network built for one target: CMake compiles this file once per target
// (mosaiq_add_multitarget in examples/CMakeLists.txt), each copy exporting face_u8_net_target_<t>
// and face_i8_net_target_<t>; face_dispatch.hpp picks one at run time.
#include "face_network.hpp"

#include "mosaiq/net/export.hpp"

MOSAIQ_EXPORT_NETWORK(face_u8_net, face::ssd_mobilenet_v1<mosaiq::u8>);
MOSAIQ_EXPORT_NETWORK(face_i8_net, face::ssd_mobilenet_v1<mosaiq::i8>);
