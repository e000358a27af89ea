// bench_activation: quantized hard-swish, `hardswish/<impl>/<case>`, one thread. mosaiq's table lookup beside
// XNNPACK's hardswish operator and a memcpy of the input bytes (the bandwidth floor of a one-pass op). Debian's XNNPACK
// snapshot (0.0~git20220216) has no 8-bit hardswish (xnn_create_hardswish_nc_qu8/qs8 came later), and its f16 one has
// no x86 kernel (it creates, then faults when run), so its row runs xnn_create_hardswish_nc_f32 on the same element
// count: what a model falls back to without an 8-bit kernel, four times the bytes. mosaiq's
// output is first checked against mosaiq::reference (exact); XNNPACK's against float hard-swish of the dequantized
// input (within 1 output step).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "baselines.hpp"
#include "common.hpp"
#include "mosaiq/ops/eltwise16x8.hpp"
#include "mosaiq/ops/hard_swish.hpp"
#include "mosaiq/reference/hard_swish.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/arch.hpp"

namespace mosaiq::bench {
namespace {

const std::string isa_label(simd::to_string(simd::native_isa));

template <quantized_element T>
std::string case_of(shape s) {
  std::string name;
  name += std::to_string(s.height) + "x" + std::to_string(s.width) + "x" + std::to_string(s.channels) + "_";
  name += element_name<T>();
  return name;
}

/// The quantizations of a hard-swish after a conv: input over about [-6, 6], output over [-0.375, 6].
template <quantized_element T>
constexpr quant_params input_quant() {
  return {12.0f / 255.0f, std::same_as<T, u8> ? 128 : 0};
}
template <quantized_element T>
constexpr quant_params output_quant() {
  return {6.375f / 255.0f, std::same_as<T, u8> ? 15 : -113};
}

template <quantized_element T>
void register_mosaiq(shape dims, std::shared_ptr<aligned_buffer<T>> input) {
  const hard_swish<T> kernel(input_quant<T>(), output_quant<T>());
  auto out = std::make_shared<aligned_buffer<T>>(dims.elements());
  auto expected = std::make_shared<aligned_buffer<T>>(dims.elements());
  reference::hard_swish<T>(tensor_view<const T>(input->data(), dims), tensor_view<T>(expected->data(), dims),
                           kernel.params());
  register_row("hardswish", "mosaiq", case_of<T>(dims), [=](benchmark::State& state) {
    const tensor_view<const T> in(input->data(), dims);
    const tensor_view<T> result(out->data(), dims);
    kernel(in, result);
    const output_match m = compare_outputs<T>(out->span(), expected->span());
    if (m.differing != 0) {
      state.SkipWithError(("output differs from mosaiq::reference: " + m.text()).c_str());
      return;
    }
    for (auto _ : state) {
      kernel(in, result);
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(dims.elements()));
    state.SetLabel(isa_label + "; vs reference: exact");
  });
}

#if MOSAIQ_BENCH_XNNPACK
/// XNNPACK's f32 hardswish on the dequantized input, checked within one output step of mosaiq's float twin.
template <quantized_element T>
void register_xnnpack(shape dims, std::shared_ptr<aligned_buffer<T>> input) {
  xnnpack::initialize();
  const std::size_t count = dims.elements();
  auto in32 = std::make_shared<aligned_buffer<float>>(count);
  auto out32 = std::make_shared<aligned_buffer<float>>(count);
  for (std::size_t i = 0; i < count; ++i) in32->data()[i] = dequantize_value(input->data()[i], input_quant<T>());
  xnn_operator_t created = nullptr;
  const auto channels = static_cast<std::size_t>(dims.channels);
  xnnpack::check(xnn_create_hardswish_nc_f32(channels, channels, channels, 0, &created), "create hardswish f32");
  auto owned = std::shared_ptr<xnn_operator>(created, xnnpack::operator_deleter{});
  xnnpack::check(xnn_setup_hardswish_nc_f32(created, count / channels, in32->data(), out32->data(), nullptr),
                 "setup hardswish f32");
  // The buffers XNNPACK was set up with live as long as the row.
  register_row("hardswish", "xnnpack", case_of<T>(dims), [=, keep = in32](benchmark::State& state) {
    xnnpack::check(xnn_run_operator(owned.get(), nullptr), "run");
    int worst = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const float x = dequantize_value(input->data()[i], input_quant<T>());
      const float got = out32->data()[i], want = reference::hard_swish_value(x);
      worst = std::max(worst, static_cast<int>(std::ceil(std::abs(got - want) / output_quant<T>().scale - 1e-3f)));
    }
    if (worst > 1) {
      state.SkipWithError("XNNPACK's f32 hardswish is more than one output step from float hard-swish");
      return;
    }
    for (auto _ : state) {
      xnnpack::check(xnn_run_operator(owned.get(), nullptr), "run");
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(count));
    state.SetLabel("f32 (no 8-bit hardswish in this XNNPACK); MB/s counts 8-bit elements");
  });
}
#endif

template <quantized_element T>
void register_memcpy(shape dims) {
  const std::size_t bytes = dims.elements();
  auto source = std::make_shared<aligned_buffer<std::uint8_t>>(bytes);
  auto target = std::make_shared<aligned_buffer<std::uint8_t>>(bytes);
  register_row("hardswish", "memcpy", case_of<T>(dims), [=](benchmark::State& state) {
    for (auto _ : state) {
      std::memcpy(target->data(), source->data(), bytes);
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
    state.SetLabel("input bytes copied");
  });
}

/// mosaiq's 16x8 hard swish (ops/eltwise16x8.hpp) on the same shape, case `<shape>_i16x8`: int16 input over the
/// whole range at the 8-bit rows' real range ([-6, 6] in, [-0.375, 6] out), checked exact against
/// reference::hard_swish_16 once. No XNNPACK neighbour (it has no 16x8 operators); MB/s counts input bytes.
void register_i16x8(shape dims) {
  const hard_swish16x8<> kernel(6.0f / 32768, 6.375f / 32768);
  auto input = std::make_shared<aligned_buffer<i16>>(dims.elements());
  auto out = std::make_shared<aligned_buffer<i16>>(dims.elements());
  auto expected = std::make_shared<aligned_buffer<i16>>(dims.elements());
  std::mt19937 rng(42);
  fill_uniform(input->span(), -32768, 32767, rng);
  const tensor_view<const i16> in(input->data(), dims);
  const tensor_view<i16> result(out->data(), dims);
  reference::hard_swish_16<rounding::tflite_reference>(in, tensor_view<i16>(expected->data(), dims), kernel.params());
  const std::string name =
      std::to_string(dims.height) + "x" + std::to_string(dims.width) + "x" + std::to_string(dims.channels) + "_i16x8";
  // The row owns the buffer its input view points into.
  register_row("hardswish", "mosaiq", name, [=, keep = input](benchmark::State& state) {
    kernel(in, result);
    if (!std::equal(out->span().begin(), out->span().end(), expected->span().begin())) {
      state.SkipWithError("output differs from mosaiq::reference");
      return;
    }
    for (auto _ : state) {
      kernel(in, result);
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(dims.elements() * sizeof(i16)));
    state.SetLabel(isa_label + "; vs reference: exact");
  });
}

template <quantized_element T>
void register_case(shape dims) {
  auto input = std::make_shared<aligned_buffer<T>>(dims.elements());
  std::mt19937 rng(42);
  fill_uniform(input->span(), element_traits<T>::min, element_traits<T>::max, rng);
  register_mosaiq<T>(dims, input);
#if MOSAIQ_BENCH_XNNPACK
  register_xnnpack<T>(dims, input);
#endif
  register_memcpy<T>(dims);
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  using namespace mosaiq;
  bench::setup_baselines("hardswish/mosaiq");
  // The selfie model's hard-swish tensors: the stem (128x128x16), an expanded block (32x32x96), the bottleneck.
  for (const shape dims : {shape{128, 128, 16}, shape{32, 32, 96}, shape{8, 8, 576}}) {
    bench::register_case<u8>(dims);
    bench::register_case<i8>(dims);
    bench::register_i16x8(dims);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
