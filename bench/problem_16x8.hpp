// Workloads of the 16x8 rows (`<op>/mosaiq/<case>_i16x8`: TFLite's 16x8 mode, int16 activations, int8 per-channel
// filters, int64 biases) of bench_pointwise, bench_conv and bench_deconv, and their reference outputs.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/arch.hpp"

namespace mosaiq::bench {

/// Full-range int16 inputs, int8 filters with per-channel scales, int64 biases, and scales that put the outputs'
/// spread at about 8000 steps (few saturate) for sums of `sum_terms` products each.
struct operands_16x8 {
  aligned_buffer<std::int16_t> input, output, expected;
  aligned_buffer<std::int8_t> filter;
  std::vector<std::int64_t> bias;
  reference::conv_requant_16x8 requant;

  operands_16x8(std::size_t input_elements, std::size_t filter_elements, std::size_t output_elements,
                int output_channels, int sum_terms, std::uint32_t seed)
      : input(input_elements),
        output(output_elements),
        expected(output_elements),
        filter(filter_elements),
        bias(static_cast<std::size_t>(output_channels)) {
    std::mt19937 rng(seed);
    fill_uniform(input.span(), -32768, 32767, rng);
    fill_uniform(filter.span(), -127, 127, rng);
    fill_uniform(std::span(bias), -100000, 100000, rng);
    constexpr float input_scale = 1.0f / 4096, filter_scale = 0.01f;
    // Uniform int16 times uniform int8: each product has a spread of about 18918 * 73 = 1.38e6.
    const float acc_spread = 1.38e6f * std::sqrt(static_cast<float>(sum_terms));
    std::vector<float> filter_scales;
    std::uniform_real_distribution<float> spread(0.5f, 1.5f);
    for (int c = 0; c < output_channels; ++c) filter_scales.push_back(filter_scale * spread(rng));
    requant = reference::make_conv_requant_16x8(input_scale, filter_scales,
                                                input_scale * filter_scale * acc_spread / 8000.0f, activation::none);
  }
};

/// A 16x8 convolution workload of a dense (conv_shape::dense: 1x1 or a SAME window) or depthwise shape, and its
/// reference output (reference::conv2d_16x8 or reference::depthwise_conv_16x8).
struct problem_16x8 : operands_16x8 {
  conv_shape shape;

  problem_16x8(const conv_shape& s, std::uint32_t seed)
      : operands_16x8(s.input_shape().elements(), s.filter_elements(), s.output_shape().elements(), s.output_channels,
                      s.taps(), seed),
        shape(s) {
    if (s.is_depthwise())
      reference::depthwise_conv_16x8(input_view(), filter.data(), bias.data(), output_view(expected),
                                     {.kernel = s.kernel,
                                      .stride = s.stride,
                                      .dilation = s.dilation,
                                      .pad = padding::same(),
                                      .depth_multiplier = s.output_channels / s.input_channels},
                                     requant);
    else
      reference::conv2d_16x8(input_view(), filter.data(), bias.data(), output_view(expected),
                             {.kernel = s.kernel, .stride = s.stride, .dilation = s.dilation, .pad = padding::same()},
                             requant);
  }
  tensor_view<const std::int16_t> input_view() const { return {input.data(), shape.input_shape()}; }
  tensor_view<std::int16_t> output_view(aligned_buffer<std::int16_t>& buffer) const {
    return {buffer.data(), shape.output_shape()};
  }
  /// Bytes one run must touch at least: int16 input and output, int8 filter.
  std::int64_t bytes() const noexcept {
    return static_cast<std::int64_t>(2 * shape.input_shape().elements() + shape.filter_elements() +
                                     2 * shape.output_shape().elements());
  }
};

/// The case of the 8-bit rows of `shape` with `_i16x8` for the element type.
inline std::string case_name_16x8(const conv_shape& shape) {
  std::string name = shape.case_name<i8>();
  name.replace(name.size() - 2, 2, "i16x8");
  return name;
}

/// Registers `<op>/mosaiq/<case>`. On the row's first run: the workload (`make_problem()`, a unique_ptr to a type
/// with `output`, `expected` and `bytes()`) and the layer (`make_layer(problem)`, a unique_ptr), one `run(layer,
/// problem)` checked against the reference (exact, on the layer's int32 path), else the row reports why. Then times
/// `run`; `label` names the layer.
template <class MakeProblem, class MakeLayer, class Run>
void register_checked_16x8_row(std::string_view op, const std::string& case_name, std::int64_t macs, std::string label,
                               MakeProblem make_problem, MakeLayer make_layer, Run run) {
  struct row_state {
    decltype(make_problem()) problem;
    decltype(make_layer(*make_problem())) layer;
    std::string error;
  };
  auto row = std::make_shared<row_state>();
  register_row(op, "mosaiq", case_name, [=](benchmark::State& state) {
    if (!row->layer && row->error.empty()) {
      row->problem = make_problem();
      row->layer = make_layer(*row->problem);
      run(*row->layer, *row->problem);
      const output_match m = compare_outputs<std::int16_t>(row->problem->output.span(), row->problem->expected.span());
      if (m.differing != 0 || !row->layer->uses_int32_path())
        row->error = label + " differs from its reference (" + m.text() + ") or left the int32 path";
    }
    if (!row->error.empty()) {
      state.SkipWithError(row->error.c_str());
      return;
    }
    for (auto _ : state) {
      run(*row->layer, *row->problem);
      benchmark::ClobberMemory();
    }
    set_throughput_counters(state, macs, row->problem->bytes());
    state.SetLabel(label + " " + std::string(simd::to_string(simd::native_isa)) + "; vs reference: exact");
  });
}

/// `<op>/mosaiq/<case>_i16x8` of a 16x8 kernel `Op` that is constructed from (filter, bias, input channels,
/// requantization) and runs as `op(input, output)` (pointwise16x8, depthwise16x8).
template <class Op>
void register_16x8_row(std::string_view op, const conv_shape& shape, std::uint32_t seed, std::string label) {
  register_checked_16x8_row(
      op, case_name_16x8(shape), shape.macs(), std::move(label),
      [shape, seed] { return std::make_unique<problem_16x8>(shape, seed); },
      [](const problem_16x8& p) {
        return std::make_unique<Op>(p.filter.data(), p.bias.data(), p.shape.input_channels, p.requant);
      },
      [](const Op& layer, problem_16x8& p) { layer(p.input_view(), p.output_view(p.output)); });
}

}  // namespace mosaiq::bench
