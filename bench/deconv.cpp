// bench_deconv: quantized transposed convolution, `deconvolution/<impl>/<case>`, one thread. mosaiq's transpose_conv
// (kernel == stride: the pointwise GEMM; 3x3 and 4x4 stride 2: the stride-phase convolution; both plus depth-to-space)
// beside XNNPACK's xnn_create_deconvolution2d_nhwc_qu8 / _qs8 with the same weights, pads and quantization. XNNPACK's
// qs8 deconvolution takes one kernel scale, so the i8 cases give every output channel the same filter scale (mosaiq
// still runs its per-channel requantization). Outputs are first checked against mosaiq::reference: mosaiq exact,
// XNNPACK within 1 LSB (it requantizes with its own fixed-point formula). Case:
// `<H>x<W>x<Cin>to<Cout>_k<K>s<S>_<type>` (SAME padding).
// `deconvolution/mosaiq/<case>_i16x8` rows: mosaiq::transpose_conv16x8 (TFLite's 16x8 mode; kernel == stride: the 16x8
// pointwise GEMM to KH * KW * Cout columns + depth-to-space) on the 2x2 stride-2 cases, beside their i8 rows, checked
// bit for bit against reference::transpose_conv_16x8. XNNPACK has no 16x8 deconvolution, so no baseline beside them.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "common.hpp"
#include "mosaiq/ops/transpose_conv.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
#include "mosaiq/simd/arch.hpp"

namespace mosaiq::bench {

/// The `_i16x8` rows (bench/deconv16x8_rows.cpp: a translation unit of their own, so that the 8-bit rows' code is
/// compiled as without them).
void register_deconv16x8_rows();

namespace {

/// One workload: data, TFLite quantization (u8 per-tensor with a filter zero point, i8 one scale for all channels) and
/// the reference output.
template <transpose_conv_config Cfg, quantized_element T>
struct deconv_problem {
  static constexpr bool is_u8 = std::same_as<T, u8>;
  shape in, out;
  aligned_buffer<T> input, filter, expected;
  std::vector<std::int32_t> bias;
  quant_params input_q{0.02f, is_u8 ? 131 : -5}, output_q{};
  std::vector<float> filter_scales;
  std::int32_t filter_zero_point = is_u8 ? 120 : 0;
  reference::conv_requant requant;

  explicit deconv_problem(shape input_shape)
      : in(input_shape),
        out(transpose_conv<Cfg, T>::output_shape(input_shape)),
        input(in.elements()),
        filter(static_cast<std::size_t>(Cfg.out_channels) * Cfg.kernel.h * Cfg.kernel.w * in.channels),
        expected(out.elements()),
        bias(static_cast<std::size_t>(Cfg.out_channels)) {
    std::mt19937 rng(7);
    fill_uniform(input.span(), element_traits<T>::min, element_traits<T>::max, rng);
    fill_uniform(filter.span(), is_u8 ? 0 : -127, is_u8 ? 247 : 127, rng);
    fill_uniform(std::span(bias), -5000, 5000, rng);
    constexpr float filter_scale = 0.005f;
    filter_scales.assign(is_u8 ? 1 : bias.size(), filter_scale);
    // Taps overlapping on one output pixel: (K / S)^2 input pixels of Cin channels each, products spread ~5250.
    const float taps =
        static_cast<float>(Cfg.kernel.h * Cfg.kernel.w * in.channels) / static_cast<float>(Cfg.stride.h * Cfg.stride.w);
    output_q = {input_q.scale * filter_scale * 5250.0f * std::sqrt(taps) / 40.0f, is_u8 ? 125 : 3};
    requant = reference::make_conv_requant<Cfg.round, T>(input_q, filter_scales, filter_zero_point, output_q, Cfg.act);
    reference::transpose_conv<Cfg.round, T>(
        tensor_view<const T>(input.data(), in), filter.data(), bias.data(), tensor_view<T>(expected.data(), out),
        {.kernel = Cfg.kernel, .stride = Cfg.stride, .padding = Cfg.padding}, requant);
  }

  std::string case_name() const {
    std::string name;
    name += std::to_string(in.height) + "x" + std::to_string(in.width) + "x" + std::to_string(in.channels);
    name += "to" + std::to_string(out.channels) + "_k" + std::to_string(Cfg.kernel.h) + "s" +
            std::to_string(Cfg.stride.h) + "_";
    name += element_name<T>();
    return name;
  }
  std::int64_t macs() const {
    return static_cast<std::int64_t>(in.pixels()) * Cfg.kernel.h * Cfg.kernel.w * in.channels * out.channels;
  }
};

/// Times `run` after checking `output` against the problem's reference (at most `tolerance` LSB apart).
template <class Problem, class T>
void register_checked(std::string_view impl, std::shared_ptr<Problem> p, std::span<const T> output,
                      std::function<void()> run, int tolerance, std::string label) {
  register_row("deconvolution", impl, p->case_name(), [=](benchmark::State& state) {
    run();
    const output_match m = compare_outputs<T>(output, p->expected.span());
    if (m.max_abs_diff > tolerance) {
      state.SkipWithError(("output differs from mosaiq::reference: " + m.text()).c_str());
      return;
    }
    for (auto _ : state) {
      run();
      benchmark::ClobberMemory();
    }
    set_throughput_counters(state, p->macs(),
                            static_cast<std::int64_t>(p->in.elements() + p->filter.size() + p->out.elements()));
    state.SetLabel(label + "; vs reference: " + m.text());
  });
}

template <transpose_conv_config Cfg, quantized_element T>
void register_mosaiq(std::shared_ptr<deconv_problem<Cfg, T>> p) {
  using kernel_type = transpose_conv<Cfg, T>;
  auto kernel = std::make_shared<const kernel_type>(p->filter.data(), p->bias.data(), p->in.channels, p->requant);
  auto workspace = std::make_shared<aligned_buffer<std::byte>>(kernel_type::workspace_bytes(p->in));
  auto out = std::make_shared<aligned_buffer<T>>(p->out.elements());
  const std::string label =
      std::string(simd::to_string(simd::native_isa)) +
      (kernel_type::is_pointwise ? ", pointwise GEMM + depth-to-space" : ", phase convolution + depth-to-space");
  register_checked<deconv_problem<Cfg, T>, T>(
      "mosaiq", p, out->span(),
      [=] {
        (*kernel)(tensor_view<const T>(p->input.data(), p->in), tensor_view<T>(out->data(), p->out), workspace->span());
      },
      0, label);
}

#if MOSAIQ_BENCH_XNNPACK
template <transpose_conv_config Cfg, quantized_element T>
void register_xnnpack(std::shared_ptr<deconv_problem<Cfg, T>> p) {
  xnnpack::initialize();
  const hw pad =
      reference::transpose_conv_pads(p->out, {.kernel = Cfg.kernel, .stride = Cfg.stride, .padding = Cfg.padding});
  // XNNPACK crops `top` and `bottom` from the full (in - 1) * s + k rows; the bottom crop is what is left over.
  const auto crop = [](int in, int k, int s, int before, int out) {
    return static_cast<std::uint32_t>((in - 1) * s + k - before - out);
  };
  const std::uint32_t bottom = crop(p->in.height, Cfg.kernel.h, Cfg.stride.h, pad.h, p->out.height);
  const std::uint32_t right = crop(p->in.width, Cfg.kernel.w, Cfg.stride.w, pad.w, p->out.width);
  const auto kh = static_cast<std::uint32_t>(Cfg.kernel.h), kw = static_cast<std::uint32_t>(Cfg.kernel.w);
  const auto sh = static_cast<std::uint32_t>(Cfg.stride.h), sw = static_cast<std::uint32_t>(Cfg.stride.w);
  const auto cin = static_cast<std::size_t>(p->in.channels), cout = static_cast<std::size_t>(p->out.channels);
  auto out = std::make_shared<aligned_buffer<T>>(p->out.elements());
  xnn_operator_t op = nullptr;
  if constexpr (std::same_as<T, u8>) {
    xnnpack::check(
        xnn_create_deconvolution2d_nhwc_qu8(
            static_cast<std::uint32_t>(pad.h), right, bottom, static_cast<std::uint32_t>(pad.w), kh, kw, sh, sw, 1, 1,
            1, cin, cout, cin, cout, static_cast<std::uint8_t>(p->input_q.zero_point), p->input_q.scale,
            static_cast<std::uint8_t>(p->filter_zero_point), p->filter_scales.front(), p->filter.data(), p->bias.data(),
            static_cast<std::uint8_t>(p->output_q.zero_point), p->output_q.scale, 0, 255, 0, &op),
        "xnn_create_deconvolution2d_nhwc_qu8");
    xnnpack::check(xnn_setup_deconvolution2d_nhwc_qu8(op, 1, static_cast<std::size_t>(p->in.height),
                                                      static_cast<std::size_t>(p->in.width), 0, 0, p->input.data(),
                                                      out->data(), nullptr),
                   "xnn_setup_deconvolution2d_nhwc_qu8");
  } else {
    xnnpack::check(xnn_create_deconvolution2d_nhwc_qs8(
                       static_cast<std::uint32_t>(pad.h), right, bottom, static_cast<std::uint32_t>(pad.w), kh, kw, sh,
                       sw, 1, 1, 1, cin, cout, cin, cout, static_cast<std::int8_t>(p->input_q.zero_point),
                       p->input_q.scale, p->filter_scales.front(), p->filter.data(), p->bias.data(),
                       static_cast<std::int8_t>(p->output_q.zero_point), p->output_q.scale, -128, 127, 0, &op),
                   "xnn_create_deconvolution2d_nhwc_qs8");
    xnnpack::check(xnn_setup_deconvolution2d_nhwc_qs8(op, 1, static_cast<std::size_t>(p->in.height),
                                                      static_cast<std::size_t>(p->in.width), 0, 0, p->input.data(),
                                                      out->data(), nullptr),
                   "xnn_setup_deconvolution2d_nhwc_qs8");
  }
  auto owned = std::shared_ptr<xnn_operator>(op, xnnpack::operator_deleter{});
  register_checked<deconv_problem<Cfg, T>, T>(
      "xnnpack", p, out->span(), [owned, out] { xnnpack::check(xnn_run_operator(owned.get(), nullptr), "run"); }, 1,
      std::same_as<T, u8> ? "qu8" : "qs8");
}
#endif

template <transpose_conv_config Cfg>
void register_case(shape in) {
  const auto both = [&]<quantized_element T>() {
    auto p = std::make_shared<deconv_problem<Cfg, T>>(in);
    register_mosaiq<Cfg, T>(p);
#if MOSAIQ_BENCH_XNNPACK
    register_xnnpack<Cfg, T>(p);
#endif
  };
  both.template operator()<u8>();
  both.template operator()<i8>();
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  using namespace mosaiq;
  bench::setup_baselines("deconvolution/mosaiq");
  // The selfie model's last layer (2x2 s2 to one channel), a wider 2x2 s2 decoder step, overlapping 3x3 and 4x4 s2.
  bench::register_case<transpose_conv_config{.out_channels = 1}>({128, 128, 16});
  bench::register_case<transpose_conv_config{.out_channels = 16}>({64, 64, 32});
  bench::register_deconv16x8_rows();  // the two 2x2 stride-2 cases above in 16x8
  bench::register_case<transpose_conv_config{.out_channels = 32, .kernel = {3, 3}}>({32, 32, 32});
  bench::register_case<transpose_conv_config{.out_channels = 32, .kernel = {4, 4}}>({32, 32, 32});
  // A narrower 3x3 s2 decoder step, and a 4x4 s2 to few output channels (an image-like last layer).
  bench::register_case<transpose_conv_config{.out_channels = 16, .kernel = {3, 3}}>({64, 64, 16});
  bench::register_case<transpose_conv_config{.out_channels = 3, .kernel = {4, 4}}>({64, 64, 32});
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
