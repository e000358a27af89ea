// Quick start: a two-layer depthwise chain (chain.hpp) on a generated 64x64x32 uint8 image.
// Layer 1: 3x3 stride 1, ReLU6. Layer 2: 3x3 stride 2 with dilation 2 (atrous), both SAME.
// The chain is a network type built once per target (chain.cpp); this program, compiled for the
// architecture's baseline, runs the best build the CPU supports, checks the result against the
// scalar reference ops bit for bit, and prints the target, the output shape, a checksum of the
// output bytes and the time per run.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mosaiq/dispatch.hpp>
#include <mosaiq/reference.hpp>
#include <vector>

#include "../common/aligned_bytes.hpp"
#include "chain.hpp"

MOSAIQ_DECLARE_NETWORK_ENTRIES(quickstart_chain)

namespace mq = mosaiq;
using quickstart::chain;

// Quantization as TFLite stores it: input/output (scale, zero point), filter scale and zero point.
constexpr mq::quant_params in_q{0.02f, 128}, mid_q{0.03f, 0}, out_q{0.05f, 10};
constexpr float filter_scale = 0.004f;
constexpr mq::u8 filter_zero_point = 128;

/// Deterministic weights (a real application loads them from a model): both layers share filter and bias.
chain::weights make_weights() {
  chain::weights weights;
  weights.input = in_q;
  auto& w1 = weights.layer<0>();
  for (std::size_t i = 0; i < w1.filter.size(); ++i) w1.filter[i] = static_cast<mq::u8>(100 + (i * 37) % 56);
  w1.bias.fill(250);
  w1.filter_scales = {filter_scale};
  w1.filter_zero_point = filter_zero_point;
  w1.output = mid_q;
  weights.layer<1>() = w1;
  weights.layer<1>().output = out_q;
  return weights;
}

/// The same chain through the scalar reference ops: the generated kernels must match it exactly.
std::vector<mq::u8> reference_output(mq::tensor_view<const mq::u8> input, const chain::weights& weights) {
  const auto& w = weights.layer<0>();
  const float scales[] = {filter_scale};
  const auto layer1_q = mq::reference::make_conv_requant<mq::rounding::tflite_reference, mq::u8>(
      in_q, scales, filter_zero_point, mid_q, mq::activation::relu6);
  const auto layer2_q = mq::reference::make_conv_requant<mq::rounding::tflite_reference, mq::u8>(
      mid_q, scales, filter_zero_point, out_q, mq::activation::none);
  std::vector<mq::u8> middle(chain::input_shape.elements()), output(chain::output_shape.elements());
  constexpr auto c1 = quickstart::layer1, c2 = quickstart::layer2;
  mq::reference::depthwise_conv<mq::rounding::tflite_reference>(
      input, w.filter.data(), w.bias.data(), mq::tensor_view<mq::u8>(middle.data(), chain::input_shape),
      {.kernel = c1.kernel, .stride = c1.stride}, layer1_q);
  mq::reference::depthwise_conv<mq::rounding::tflite_reference>(
      mq::tensor_view<const mq::u8>(middle.data(), chain::input_shape), w.filter.data(), w.bias.data(),
      mq::tensor_view<mq::u8>(output.data(), chain::output_shape),
      {.kernel = c2.kernel, .stride = c2.stride, .dilation = c2.dilation}, layer2_q);
  return output;
}

int main() {
  constexpr mq::shape input_shape = chain::input_shape, output_shape = chain::output_shape;

  // A deterministic input (a real application has a camera frame).
  std::vector<mq::u8> input(input_shape.elements());
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<mq::u8>((i * 2654435761u) >> 24);
  const chain::weights weights = make_weights();
  // The weights blob is what a model file holds; each target's build loads and packs it.
  std::vector<std::byte> blob(chain::blob_bytes);
  chain::save(weights, blob);

  // The best linked build this CPU runs; its state (weights, packed filters) goes in storage that
  // outlives `net` (declared first), whose destructor destroys the state there.
  const mq::dispatch::network_entry* entry = mq::select_entry(MOSAIQ_NETWORK_ENTRIES(quickstart_chain));
  if (entry == nullptr) {
    std::fprintf(stderr, "quickstart: no linked target runs on this CPU\n");
    return 1;
  }
  mosaiq_examples::aligned_bytes state(entry->state_bytes, entry->state_alignment);
  mq::dispatched_network net(*entry);
  std::printf("target: %.*s%s (the best of the linked targets this CPU runs)\n", int(net.target().size()),
              net.target().data(), net.uses_amx() ? " with AMX" : "");
  mosaiq_examples::aligned_bytes arena(net.arena_bytes(), mq::arena_alignment);
  if (const mq::status s = net.prepare(blob, state.bytes); !s) {
    std::fprintf(stderr, "quickstart: %s\n", s.message);
    return 1;
  }

  std::vector<mq::u8> output(output_shape.elements());
  const mq::tensor_view<const mq::u8> in_view(input.data(), input_shape);
  const mq::tensor_view<mq::u8> out_view(output.data(), output_shape);
  const auto run = [&] { return net.run(in_view, out_view, arena.bytes); };

  const std::vector<mq::u8> ref_output = reference_output(in_view, weights);

  if (const mq::status s = run(); !s) {
    std::fprintf(stderr, "quickstart: %s\n", s.message);
    return 1;
  }
  constexpr int repeats = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) run();
  const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;

  std::uint32_t checksum = 2166136261u;  // FNV-1a over the output bytes
  for (mq::u8 v : output) checksum = (checksum ^ v) * 16777619u;
  const double us = elapsed.count() / repeats;
  std::printf("output: %dx%dx%d  checksum: %08x\n", output_shape.height, output_shape.width, output_shape.channels,
              checksum);
  std::printf("time: %.1f us per run (%.2f GMAC/s)\n", us, double(net.macs()) / us / 1e3);
  const bool matches = output == ref_output;
  std::printf("bit-exact with the reference ops: %s\n", matches ? "yes" : "NO");
  return matches ? 0 : 1;
}
