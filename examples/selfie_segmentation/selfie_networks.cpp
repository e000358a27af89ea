// MediaPipe Selfie Segmentation's two models for one target: CMake compiles this file once per target
// (mosaiq_add_multitarget in examples/CMakeLists.txt), each copy exporting selfie_square_net_target_<t> (256x256) and
// selfie_landscape_net_target_<t> (144x256); main.cpp picks the best target the CPU runs.
#include "mosaiq/net/export.hpp"
#include "selfie_landscape.hpp"
#include "selfie_square.hpp"

MOSAIQ_EXPORT_NETWORK(selfie_square_net, selfie_square::network);
MOSAIQ_EXPORT_NETWORK(selfie_landscape_net, selfie_landscape::network);
