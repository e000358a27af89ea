// Quick start: a two-layer depthwise chain on a generated 64x64x32 uint8 image.
// Layer 1: 3x3 stride 1, ReLU6. Layer 2: 3x3 stride 2 with dilation 2 (atrous), both SAME.
// Runs the chain with mosaiq's generated kernels, checks the result against the scalar reference
// ops bit for bit, and prints the output shape, a checksum of the output bytes and the time per run.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mosaiq/mosaiq.hpp>
#include <vector>

namespace mq = mosaiq;

int main() {
  constexpr mq::shape input_shape{64, 64, 32};
  constexpr int channels = input_shape.channels;

  // Deterministic input and weights (a real application loads them from a model).
  std::vector<mq::u8> input(input_shape.elements());
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<mq::u8>((i * 2654435761u) >> 24);
  std::vector<mq::u8> filter(3 * 3 * channels);
  for (std::size_t i = 0; i < filter.size(); ++i) filter[i] = static_cast<mq::u8>(100 + (i * 37) % 56);
  std::vector<std::int32_t> bias(channels, 250);

  // Quantization as TFLite stores it: input/output (scale, zero point), filter scale and zero point.
  const mq::quant_params in_q{0.02f, 128}, mid_q{0.03f, 0}, out_q{0.05f, 10};
  const float filter_scale[] = {0.004f};
  const auto layer1_q = mq::reference::make_conv_requant<mq::rounding::tflite_reference, mq::u8>(
      in_q, filter_scale, 128, mid_q, mq::activation::relu6);
  const auto layer2_q = mq::reference::make_conv_requant<mq::rounding::tflite_reference, mq::u8>(
      mid_q, filter_scale, 128, out_q, mq::activation::none);
  // Each layer is a kernel type generated for its exact configuration; weights are packed here.
  constexpr mq::depthwise_config layer1_config{.kernel = {3, 3}, .stride = {1, 1}, .act = mq::activation::relu6};
  constexpr mq::depthwise_config layer2_config{.kernel = {3, 3}, .stride = {2, 2}, .dilation = {2, 2}};
  const mq::depthwise<layer1_config, mq::u8> layer1(filter.data(), bias.data(), channels, layer1_q);
  const mq::depthwise<layer2_config, mq::u8> layer2(filter.data(), bias.data(), channels, layer2_q);

  constexpr mq::shape output_shape = decltype(layer2)::output_shape(input_shape);
  std::vector<mq::u8> middle(input_shape.elements()), output(output_shape.elements());
  // Scratch for both layers, allocated once up front: running allocates nothing.
  std::vector<std::byte> workspace(std::max(layer1.workspace_bytes(input_shape), layer2.workspace_bytes(input_shape)));

  const mq::tensor_view<const mq::u8> in_view(input.data(), input_shape);
  const mq::tensor_view<mq::u8> mid_view(middle.data(), input_shape);
  const mq::tensor_view<mq::u8> out_view(output.data(), output_shape);

  const auto run = [&] {
    layer1(in_view, mid_view, workspace);
    layer2(mid_view, out_view, workspace);
  };

  // The same chain through the reference ops: the generated kernels must match it exactly.
  std::vector<mq::u8> ref_middle(middle.size()), ref_output(output.size());
  mq::reference::depthwise_conv<mq::rounding::tflite_reference>(
      in_view, filter.data(), bias.data(), mq::tensor_view<mq::u8>(ref_middle.data(), input_shape),
      {.kernel = layer1_config.kernel, .stride = layer1_config.stride}, layer1_q);
  mq::reference::depthwise_conv<mq::rounding::tflite_reference>(
      mq::tensor_view<const mq::u8>(ref_middle.data(), input_shape), filter.data(), bias.data(),
      mq::tensor_view<mq::u8>(ref_output.data(), output_shape),
      {.kernel = layer2_config.kernel, .stride = layer2_config.stride, .dilation = layer2_config.dilation}, layer2_q);

  run();
  constexpr int repeats = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) run();
  const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;

  std::uint32_t checksum = 2166136261u;  // FNV-1a over the output bytes
  for (mq::u8 v : output) checksum = (checksum ^ v) * 16777619u;
  const double macs = 9.0 * channels * (input_shape.pixels() + output_shape.pixels());
  const double us = elapsed.count() / repeats;
  std::printf("isa: %s\n", mq::simd::to_string(mq::simd::native_isa).data());
  std::printf("output: %dx%dx%d  checksum: %08x\n", output_shape.height, output_shape.width, output_shape.channels,
              checksum);
  std::printf("time: %.1f us per run (%.2f GMAC/s)\n", us, macs / us / 1e3);
  const bool matches = output == ref_output;
  std::printf("bit-exact with the reference ops: %s\n", matches ? "yes" : "NO");
  return matches ? 0 : 1;
}
