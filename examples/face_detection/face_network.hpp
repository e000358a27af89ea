// The SSD-MobileNetV1 face detector of @vladmandic/face-api as a mosaiq network type, alone: what
// face_network.cpp builds once per target (MOSAIQ_EXPORT_NETWORK) for the portable example. It
// declares types only, so the per-target copies define no code outside mosaiq's per-target
// namespaces. The model file, post-processing and detector are in face_model.hpp.
//
// Network (512x512x3, values x / 127.5 - 1): MobileNetV1 (3x3 s2 stem conv, 13 depthwise-
// separable blocks, depthwise with batch norm folded in, all ReLU6, TF SAME padding), SSD extra
// layers (1x1 then 3x3 s2 conv, four times), and a box/class predictor pair (1x1 conv with bias)
// on six feature maps: block 11 (32x32, 3 anchors per cell), block 13 (16x16, 6), and the extras
// (8x8, 4x4, 2x2, 1x1; 6 each): 5118 anchors. Each predictor is an extra network output
// (layers::output); the last class predictor is the main output. Heads come right after the map
// they read, so the memory plan can reuse the map's buffer at once.
#pragma once

#include "../common/threads.hpp"
#include "mosaiq/net.hpp"

namespace face {

using namespace mosaiq;
namespace L = mosaiq::layers;

inline constexpr int input_size = 512;

template <int Channels, int Stride = 1>
using conv3x3 = L::conv2d<L::conv2d_config{
    .out_channels = Channels, .kernel = {3, 3}, .stride = {Stride, Stride}, .act = activation::relu6}>;
template <int Stride>
using dw3x3 = L::depthwise<L::depthwise_config{.stride = {Stride, Stride}, .act = activation::relu6}>;
template <int Channels>
using pw_relu6 = L::pointwise<L::pointwise_config{.out_channels = Channels, .act = activation::relu6}>;
template <int Channels>
using predictor = L::pointwise<L::pointwise_config{.out_channels = Channels}>;

/// The input, planned for runs on up to mosaiq_examples::max_threads threads.
template <quantized_element T>
using threaded_input =
    typename input<T, input_size, input_size, 3>::template with_max_threads<mosaiq_examples::max_threads>;

template <quantized_element T>
using ssd_mobilenet_v1 =
    network<threaded_input<T>, conv3x3<32, 2>,  // 256x256x32
            dw3x3<1>, pw_relu6<64>,             // 1
            dw3x3<2>, pw_relu6<128>,            // 2: 128x128
            dw3x3<1>, pw_relu6<128>,            // 3
            dw3x3<2>, pw_relu6<256>,            // 4: 64x64
            dw3x3<1>, pw_relu6<256>,            // 5
            dw3x3<2>, pw_relu6<512>,            // 6: 32x32
            dw3x3<1>, pw_relu6<512>,            // 7
            dw3x3<1>, pw_relu6<512>,            // 8
            dw3x3<1>, pw_relu6<512>,            // 9
            dw3x3<1>, pw_relu6<512>,            // 10
            dw3x3<1>, pw_relu6<512>,            // 11
            L::tap<"c11">, predictor<12>, L::output<"box0">, L::from<"c11">, predictor<9>, L::output<"cls0">,
            L::from<"c11">, dw3x3<2>, pw_relu6<1024>,  // 12: 16x16
            dw3x3<1>, pw_relu6<1024>,                  // 13
            L::tap<"c13">, predictor<24>, L::output<"box1">, L::from<"c13">, predictor<18>, L::output<"cls1">,
            L::from<"c13">, pw_relu6<256>, conv3x3<512, 2>, L::tap<"e1">,  // 8x8x512
            predictor<24>, L::output<"box2">, L::from<"e1">, predictor<18>, L::output<"cls2">, L::from<"e1">,
            pw_relu6<128>, conv3x3<256, 2>, L::tap<"e3">,  // 4x4x256
            predictor<24>, L::output<"box3">, L::from<"e3">, predictor<18>, L::output<"cls3">, L::from<"e3">,
            pw_relu6<128>, conv3x3<256, 2>, L::tap<"e5">,  // 2x2x256
            predictor<24>, L::output<"box4">, L::from<"e5">, predictor<18>, L::output<"cls4">, L::from<"e5">,
            pw_relu6<64>, conv3x3<128, 2>, L::tap<"e7">,                      // 1x1x128
            predictor<24>, L::output<"box5">, L::from<"e7">, predictor<18>>;  // main output: cls5

}  // namespace face
