// The networks of the multi-target link test (multitarget_test.cpp): compiled once per target into
// network.cpp's objects, and once more in the test itself to write their weights blobs.
#pragma once

#include "mosaiq/net.hpp"

namespace mosaiq::test::multitarget {

namespace ml = mosaiq::layers;

// uint8: every SIMD family once (conv2d, depthwise with dilation, residual add, pointwise, bilinear
// upsampling, softmax), odd spatial sizes and channel counts that leave tails at every vector width;
// the residual sum is also an extra output (layers::output), which dispatch hands out by name.
using u8_net = network<input<u8, 23, 29, 3>,                                                              //
                       ml::conv2d<ml::conv2d_config{.out_channels = 19, .stride = {2, 2}}>,               // 12x15x19
                       ml::tap<"skip">,                                                                   //
                       ml::depthwise<ml::depthwise_config{.kernel = {3, 3}, .dilation = {2, 2}}>,         // 12x15x19
                       ml::add<"skip">,                                                                   //
                       ml::output<"sum">,                                                                 //
                       ml::pointwise<ml::pointwise_config{.out_channels = 37, .act = activation::relu}>,  // 12x15x37
                       ml::resize_bilinear<ml::resize_config{.scale = 2}>,                                // 24x30x37
                       ml::pointwise<ml::pointwise_config{.out_channels = 5}>,                            // 24x30x5
                       ml::softmax<>>;

// int8 with per-channel filter scales: pointwise, strided depthwise, pointwise, 3x3 conv2d.
using i8_net = network<input<i8, 17, 21, 8>,                                                               //
                       ml::pointwise<ml::pointwise_config{.out_channels = 24, .act = activation::relu6}>,  //
                       ml::depthwise<ml::depthwise_config{.kernel = {3, 3}, .stride = {2, 2}}>,            //
                       ml::pointwise<ml::pointwise_config{.out_channels = 33}>,                            //
                       ml::conv2d<ml::conv2d_config{.out_channels = 16, .kernel = {3, 3}}>>;

// int16 activations (TFLite's 16x8 mode, as the selfie example's i16 networks): the selfie model's layer kinds, a
// 3x3 stride-2 stem, hard swish, depthwise, residual add, a logistic gate, bilinear upsampling and the 2x2 stride-2
// transposed convolution, at odd sizes and channel counts; the gated map is also an extra output.
using i16_net = network<
    input<i16, 13, 11, 3>,  //
    ml::conv2d<ml::conv2d_config{.out_channels = 10, .kernel = {3, 3}, .stride = {2, 2}, .pad = padding::same()}>,
    ml::hard_swish<>,                                                                                        //
    ml::tap<"h">,                                                                                            //
    ml::depthwise<ml::depthwise_config{.kernel = {3, 3}, .pad = padding::same(), .act = activation::relu}>,  //
    ml::add<"h">,                                                                                            //
    ml::pointwise<ml::pointwise_config{.out_channels = 10}>,                                                 //
    ml::logistic<>,                                                                                          //
    ml::mul<"h">,                                                                                            //
    ml::output<"gate">,                                                                                      // 7x6x10
    ml::resize_bilinear<ml::resize_config{.scale = 2, .mode = resize_mode::half_pixel}>,                     //
    ml::pointwise<ml::pointwise_config{.out_channels = 17, .act = activation::relu}>,                        //
    ml::transpose_conv<ml::transpose_conv_config{.out_channels = 1, .kernel = {2, 2}}>,                      // 28x24x1
    ml::logistic<>>;

}  // namespace mosaiq::test::multitarget
