// MediaPipe Selfie Segmentation's two models as 16x8 networks (int16 activations, int8 filters: TFLite's 16x8 mode)
// for one target: compiled once per target like selfie_networks.cpp, each copy exporting
// selfie_square_i16_net_target_<t> (256x256) and selfie_landscape_i16_net_target_<t> (144x256).
#include "mosaiq/net/export.hpp"
#include "selfie_landscape_i16.hpp"
#include "selfie_square_i16.hpp"

MOSAIQ_EXPORT_NETWORK(selfie_square_i16_net, selfie_square_i16::network);
MOSAIQ_EXPORT_NETWORK(selfie_landscape_i16_net, selfie_landscape_i16::network);
