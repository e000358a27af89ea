// A HyperCut-style portrait segmentation network at 256x256x3 as a mosaiq static network type
// (the layer list of Hyperconnect's 2018 TFLite recipe: early stride-2 downsampling, depthwise-
// separable blocks, atrous depthwise convolutions, an ASPP-lite head, bilinear upsampling with skip
// connections, a two-class softmax). Shared by examples/portrait_segmentation/main.cpp and
// bench/network.cpp, which both run make_weights<T>(): random He-like float weights calibrated on
// synthetic images and quantized (examples/common/demo_weights.hpp). A speed and composition demo,
// not a trained model.
//
//   256x256x3 ─ conv 3x3 s2 ─ dw s2 · pw ─ dw · pw ─[s4]─ dw s2 · pw ─ dw · pw ─[s8]─ dw s2 · pw ─┐
//   ┌─────────────────────────────────────────────────────────────────────────────────────────┘
//   └ 16x16x128 ─ (dw d2 · pw) + ─ (dw d4 · pw) + ─[feat]─┬ pw ────────────────┐
//                                                         ├ dw d4 · pw ────────┤
//                                                         ├ dw d8 · pw ────────┼ concat ─ pw ─ pw → 2
//                                                         └ mean · pw · ↑16 ───┘
//   logits 16x16x2 ─ ↑2 + pw(s8) ─ ↑2 + pw(s4) ─ ↑2 ─ ↑2 ─ softmax → 256x256x2
//
// (· joins the depthwise and pointwise halves of a separable block; + is a residual add; ↑ a
// bilinear resize; mean · pw · ↑16 is the image-pooling branch: a global average pool, a 1x1
// convolution on the 1x1 result and a resize back to 16x16, where a bilinear resize of one pixel is a
// broadcast, which resize_nearest does without the bilinear reference fallback of scales other than 2.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mosaiq/mosaiq.hpp>
#include <utility>
#include <vector>

#include "../common/demo_weights.hpp"
#include "../common/threads.hpp"

namespace portrait {

namespace L = mosaiq::layers;
using mosaiq::activation;

inline constexpr int input_size = 256;

// Configs are named constants: every layer below reads like the diagram above.
inline constexpr L::conv2d_config stem{
    .out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}, .act = activation::relu6};
inline constexpr L::depthwise_config dw{.act = activation::relu6};
inline constexpr L::depthwise_config dw_s2{.stride = {2, 2}, .act = activation::relu6};
inline constexpr L::depthwise_config dw_d2{.dilation = {2, 2}, .act = activation::relu6};
inline constexpr L::depthwise_config dw_d4{.dilation = {4, 4}, .act = activation::relu6};
inline constexpr L::depthwise_config dw_d8{.dilation = {8, 8}, .act = activation::relu6};
template <int Channels>
inline constexpr L::pointwise_config pw{.out_channels = Channels, .act = activation::relu6};
/// Linear 1x1 convolution to the two classes (background, person).
inline constexpr L::pointwise_config classes{.out_channels = 2};
inline constexpr L::resize_config up2{.scale = 2, .mode = mosaiq::resize_mode::half_pixel};
inline constexpr L::resize_config broadcast16{.scale = 16, .mode = mosaiq::resize_mode::half_pixel};

/// The input, planned for runs on up to mosaiq_examples::max_threads threads.
template <mosaiq::quantized_element T>
using threaded_input =
    typename mosaiq::input<T, input_size, input_size, 3>::template with_max_threads<mosaiq_examples::max_threads>;

/// The layers on an input type (its element, threads and banding plan). The skip connections' class
/// scores (the decoder's 1x1 convolutions of the 1/4 and 1/8 maps) are computed where those maps are
/// made, so that only the two-channel scores, not the 32- and 64-channel maps, wait for the decoder.
template <class Input>
using network_on =
    mosaiq::network<Input,
                    // Encoder: 1/2, 1/4, 1/8, 1/16.
                    L::conv2d<stem>,                                           // 0: 128x128x16
                    L::depthwise<dw_s2>, L::pointwise<pw<32>>,                 // 64x64x32
                    L::depthwise<dw>, L::pointwise<pw<32>>,                    //
                    L::tap<"s4">,                                              //
                    L::pointwise<classes>, L::tap<"s4_scores">,                // 6: 64x64x2 skip scores
                    L::from<"s4">,                                             //
                    L::depthwise<dw_s2>, L::pointwise<pw<64>>,                 // 32x32x64
                    L::depthwise<dw>, L::pointwise<pw<64>>,                    //
                    L::tap<"s8">,                                              //
                    L::pointwise<classes>, L::tap<"s8_scores">,                // 14: 32x32x2 skip scores
                    L::from<"s8">,                                             //
                    L::depthwise<dw_s2>, L::pointwise<pw<128>>,                // 16x16x128
                    L::tap<"b0">,                                              // atrous residual blocks
                    L::depthwise<dw_d2>, L::pointwise<pw<128>>, L::add<"b0">,  //
                    L::tap<"b1">,                                              //
                    L::depthwise<dw_d4>, L::pointwise<pw<128>>, L::add<"b1">,  //
                    L::tap<"feat">,                                            // 27 (the add above: 26)
                    // ASPP-lite: a 1x1 branch, two atrous separable branches, image pooling; concat; projection.
                    L::pointwise<pw<64>>, L::tap<"aspp_1x1">,                                       //
                    L::from<"feat">, L::depthwise<dw_d4>, L::pointwise<pw<64>>, L::tap<"aspp_d4">,  //
                    L::from<"feat">, L::depthwise<dw_d8>, L::pointwise<pw<64>>, L::tap<"aspp_d8">,  //
                    L::from<"feat">, L::global_average_pool<>, L::pointwise<pw<64>>,                //
                    L::resize_nearest<broadcast16>, L::tap<"aspp_pool">,                            //
                    L::concat<"aspp_1x1", "aspp_d4", "aspp_d8", "aspp_pool">,                       // 43: 16x16x256
                    L::pointwise<pw<64>>, L::pointwise<classes>,                                    // 16x16x2
                    // Decoder: 2x bilinear steps; at 1/8 and 1/4 the skip features' class scores are added.
                    L::resize_bilinear<up2>, L::add<"s8_scores">,      // 32x32x2
                    L::resize_bilinear<up2>, L::add<"s4_scores">,      // 64x64x2
                    L::resize_bilinear<up2>, L::resize_bilinear<up2>,  // 256x256x2
                    L::softmax<>>;                                     // 52

template <mosaiq::quantized_element T>
using network = network_on<threaded_input<T>>;

static_assert(network<mosaiq::u8>::output_shape == mosaiq::shape{input_size, input_size, 2});

/// The banded plan: the encoder to the 1/16 map in two chains, layers 0..9 (the stem, the first block,
/// the 1/4 skip scores and the next stride-2 depthwise layer) in bands of three rows of the 32x32 map and
/// layers 10..17 (to the stride-2 depthwise layer of the 1/16 map) in bands of three rows of the 16x16 map,
/// so that the 1/4 and 1/8 maps live in windows of rows; the decoder from the ASPP concat to the softmax
/// (layers 43..52) in bands of 48 of its 256 output rows (three rows of its 16x16 maps); and every conv2d
/// and pointwise GEMM packing at most 8 KiB of rows per pixel block (the ASPP 1x1 branches' workspace: one
/// block, not the 16x16 map). The output is the bytes of network<T> (tests/bands_test.cpp). Bands of three
/// rows rather than two: each band's depthwise calls start with an empty ring and rebuild the rows the
/// previous band's call also read, and every band calls every layer of its chain, so fewer bands cost less
/// time (11 and 6 bands instead of 16 and 8); the windows hold more rows, and the arena is then the first
/// chain's peak, within issue 21's 150 KB on every build (docs/decisions.md, "Issue 21 on AVX-512 VNNI:
/// bands of three rows").
inline constexpr mosaiq::banding banded_plan =
    mosaiq::banding::chain(0, 9, 3).and_chain(10, 17, 3).and_chain(43, 52, 48).with_gemm_block_bytes(8192);

/// The network with the banded plan, planned for one thread (the workspace of one band).
template <mosaiq::quantized_element T>
using banded_network =
    network_on<typename mosaiq::input<T, input_size, input_size, 3>::template with_banding<banded_plan>>;

/// The input quantization the demo uses: pixel values 0..255 mapped to [-1, 1).
template <mosaiq::quantized_element T>
inline constexpr mosaiq::quant_params input_quant{1.0f / 128.0f, std::same_as<T, mosaiq::u8> ? 128 : 0};

/// An 8-bit RGB byte as the network input element (uint8 as is, int8 shifted by -128).
template <mosaiq::quantized_element T>
constexpr T from_rgb(std::uint8_t v) noexcept {
  return static_cast<T>(std::same_as<T, mosaiq::u8> ? v : v - 128);
}

/// Seed of the stand-in weights (any value works; this one is what the README's numbers used).
inline constexpr std::uint64_t weights_seed = 2018;

/// A synthetic 256x256 RGB "portrait": head and shoulders over a vertical gradient, lit from the
/// upper left. `variant` 1 moves the person and changes the colours (a second calibration sample).
inline std::vector<std::uint8_t> synthetic_portrait(int variant = 0) {
  constexpr int size = input_size;
  std::vector<std::uint8_t> rgb(std::size_t(size) * size * 3);
  const auto inside = [](float x, float y, float cx, float cy, float rx, float ry) {
    const float dx = (x - cx) / rx, dy = (y - cy) / ry;
    return dx * dx + dy * dy;  // < 1 inside the ellipse
  };
  const float shift = variant == 0 ? 0.0f : 40.0f, tone = variant == 0 ? 1.0f : 0.7f;
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      const float fx = static_cast<float>(x) - shift, fy = static_cast<float>(y);
      float r = 150 + 60 * fy / size, g = 180 + 40 * fy / size, b = 220 - 30 * fy / size;  // background
      if (variant != 0) std::swap(r, g);
      const float light = 1.1f - 0.35f * (fx + fy) / (2 * size);
      const float shoulders = inside(fx, fy, 128, 292, 118, 100);
      const float neck = std::abs(fx - 128) < 24 && fy > 150 && fy < 200 ? 0.0f : 2.0f;
      const float head = inside(fx, fy, 128, 112, 50, 64);
      const float hair = inside(fx, fy, 128, 96, 56, 62);
      if (shoulders < 1) r = 60 * light, g = 70 * light, b = 120 * light;  // a dark blue shirt
      if (neck < 1 || head < 1) {
        const float shade = tone * light * (1.0f - 0.25f * std::min(head, 1.0f));
        r = 225 * shade, g = 180 * shade, b = 150 * shade;  // skin
      }
      if (hair < 1 && (fy < 78 || head >= 1)) r = 70 * light, g = 45 * light, b = 30 * light;
      std::uint8_t* p = &rgb[(std::size_t(y) * size + std::size_t(x)) * 3];
      p[0] = static_cast<std::uint8_t>(std::clamp(r, 0.0f, 255.0f));
      p[1] = static_cast<std::uint8_t>(std::clamp(g, 0.0f, 255.0f));
      p[2] = static_cast<std::uint8_t>(std::clamp(b, 0.0f, 255.0f));
    }
  return rgb;
}

/// The stand-in weights of network<T>: random He-like float weights (seed weights_seed), calibrated
/// on the two synthetic portraits and quantized (examples/common/demo_weights.hpp). The example and
/// bench_network call this, so they run the same weights. Allocates (load time).
template <mosaiq::quantized_element T>
bool make_weights(typename network<T>::weights& w) {
  std::vector<std::vector<float>> samples;
  for (int variant : {0, 1}) {
    const std::vector<std::uint8_t> rgb = synthetic_portrait(variant);
    std::vector<float>& sample = samples.emplace_back(rgb.size());
    for (std::size_t i = 0; i < rgb.size(); ++i) sample[i] = (static_cast<float>(rgb[i]) - 128.0f) / 128.0f;
  }
  return mosaiq_examples::make_demo_weights<network<T>>(w, weights_seed, samples, input_quant<T>);
}

}  // namespace portrait
