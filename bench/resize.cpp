// bench_resize: bilinear and nearest resize, `resize/<impl>/<case>`, one thread. mosaiq's exact 2x bilinear kernels
// (legacy and half-pixel), its float32 any-ratio kernel (8x, 1.5x, align-corners 33 -> 129, 2x down) and nearest
// replication against XNNPACK's resize-bilinear operator (qu8/qs8 Q11 weights: exact at 2x, up to a step apart from
// TFLite's float32 rounding elsewhere) and a memcpy of the output bytes, the bandwidth floor; requantizing resize
// (`..._requant_u8` cases, input and output quantization differ) against memcpy only. Every implementation's output
// is first checked against mosaiq::reference.
#include "mosaiq/ops/resize.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "baselines.hpp"
#include "common.hpp"
#include "mosaiq/reference/resize.hpp"

namespace mosaiq::bench {
namespace {

struct resize_case {
  int height, width, channels;
  resize_mode mode;
  bool nearest = false;
  int out_height = 0, out_width = 0;  // 0: twice the input
  bool requantized = false;           // input and output quantization differ

  int output_height() const { return out_height > 0 ? out_height : 2 * height; }
  int output_width() const { return out_width > 0 ? out_width : 2 * width; }
  bool exact_2x() const { return output_height() == 2 * height && output_width() == 2 * width; }
};

std::string case_name(const resize_case& c, std::string_view element) {
  const std::string ratio =
      c.exact_2x() ? "_2x_" : "_to_" + std::to_string(c.output_height()) + "x" + std::to_string(c.output_width()) + "_";
  std::string name = std::to_string(c.height) + "x" + std::to_string(c.width) + "x" + std::to_string(c.channels) +
                     ratio +
                     (c.nearest                              ? "nearest"
                      : c.mode == resize_mode::legacy        ? "legacy"
                      : c.mode == resize_mode::align_corners ? "align_corners"
                                                             : "half_pixel");
  return name + (c.requantized ? "_requant_" : "_") + std::string(element);
}

template <quantized_element T>
struct resize_problem {
  resize_case c;
  shape in_dims, out_dims;
  aligned_buffer<T> input, expected;

  explicit resize_problem(resize_case rc)
      : c(rc),
        in_dims{rc.height, rc.width, rc.channels},
        out_dims{rc.output_height(), rc.output_width(), rc.channels},
        input(in_dims.elements()),
        expected(out_dims.elements()) {
    std::mt19937 rng(42);
    fill_uniform(input.span(), element_traits<T>::min, element_traits<T>::max, rng);
    const tensor_view<T> out(expected.data(), out_dims);
    if (c.nearest)
      reference::resize_nearest<T>(tensor_view<const T>(input.data(), in_dims), out, c.mode);
    else
      reference::resize_bilinear<T>(tensor_view<const T>(input.data(), in_dims), out, c.mode);
  }
  std::int64_t output_bytes() const { return static_cast<std::int64_t>(out_dims.elements() * sizeof(T)); }
};

/// Times `run` after checking `output` against the reference once (at most `tolerance` LSB apart).
template <quantized_element T, class Run>
void register_checked(std::string_view impl, std::shared_ptr<resize_problem<T>> p,
                      std::shared_ptr<aligned_buffer<T>> out, Run run, int tolerance, std::string label) {
  register_row("resize", impl, case_name(p->c, element_name<T>()),
               [p, out, run, tolerance, label](benchmark::State& state) {
                 run();
                 const output_match m = compare_outputs<T>(out->span(), p->expected.span());
                 if (m.max_abs_diff > tolerance) {
                   state.SkipWithError(("output differs from mosaiq::reference: " + m.text()).c_str());
                   return;
                 }
                 for (auto _ : state) {
                   run();
                   benchmark::ClobberMemory();
                 }
                 // MB/s counts output bytes, so rates compare directly with the memcpy row.
                 state.SetBytesProcessed(state.iterations() * p->output_bytes());
                 state.SetLabel(label + (label.empty() ? "" : "; ") + "vs reference: " + m.text());
               });
}

template <resize_mode Mode, bool Nearest, quantized_element T>
void register_mosaiq(std::shared_ptr<resize_problem<T>> p) {
  auto out = std::make_shared<aligned_buffer<T>>(p->out_dims.elements());
  constexpr resize_config cfg{.scale = 2, .mode = Mode};
  // Other sizes: the output extents come from the view (the kernel is the same as with a fixed out_height/out_width).
  constexpr resize_config any{
      .mode = Mode, .out_height = resize_config::from_output, .out_width = resize_config::from_output};
  const auto run = [p, out] {
    const tensor_view<const T> in(p->input.data(), p->in_dims);
    const tensor_view<T> o(out->data(), p->out_dims);
    if constexpr (Nearest)
      resize_nearest<cfg, T>::run(in, o);
    else if (p->c.exact_2x())
      resize_bilinear<cfg, T>::run(in, o);
    else
      resize_bilinear<any, T>::run(in, o);
  };
  register_checked<T>("mosaiq", p, out, run, 0, std::string(simd::to_string(simd::native_isa)));
}

#if MOSAIQ_BENCH_XNNPACK
template <quantized_element T>
void register_xnnpack(std::shared_ptr<resize_problem<T>> p) {
  xnnpack::initialize();
  auto out = std::make_shared<aligned_buffer<T>>(p->out_dims.elements());
  const std::uint32_t flags = p->c.mode == resize_mode::legacy          ? XNN_FLAG_TENSORFLOW_LEGACY_MODE
                              : p->c.mode == resize_mode::align_corners ? XNN_FLAG_ALIGN_CORNERS
                                                                        : 0u;
  const auto channels = static_cast<std::size_t>(p->c.channels);
  xnn_operator_t op = nullptr;
  if constexpr (std::same_as<T, u8>) {
    xnnpack::check(xnn_create_resize_bilinear2d_nhwc_u8(channels, channels, channels, flags, &op), "create resize u8");
    xnnpack::check(xnn_setup_resize_bilinear2d_nhwc_u8(op, 1, p->c.height, p->c.width, p->out_dims.height,
                                                       p->out_dims.width, p->input.data(), out->data(), nullptr),
                   "setup resize u8");
  } else {
    xnnpack::check(xnn_create_resize_bilinear2d_nhwc_s8(channels, channels, channels, flags, &op), "create resize s8");
    xnnpack::check(xnn_setup_resize_bilinear2d_nhwc_s8(op, 1, p->c.height, p->c.width, p->out_dims.height,
                                                       p->out_dims.width, p->input.data(), out->data(), nullptr),
                   "setup resize s8");
  }
  auto owned = std::shared_ptr<xnn_operator>(op, xnnpack::operator_deleter{});
  // Q11 weights: exact at 2x; at other ratios XNNPACK's fixed point and TFLite's float32 may round apart.
  register_checked<T>(
      "xnnpack", p, out, [owned] { xnnpack::check(xnn_run_operator(owned.get(), nullptr), "run"); },
      p->c.exact_2x() ? 1 : 2, "");
}
#endif

template <quantized_element T>
void register_memcpy(std::shared_ptr<resize_problem<T>> p) {
  auto source = std::make_shared<aligned_buffer<T>>(p->out_dims.elements());
  auto out = std::make_shared<aligned_buffer<T>>(p->out_dims.elements());
  std::memcpy(source->data(), p->expected.data(), p->expected.size() * sizeof(T));
  register_checked<T>(
      "memcpy", p, out, [source, out] { std::memcpy(out->data(), source->data(), out->size() * sizeof(T)); }, 0,
      "output bytes copied");
}

template <resize_mode Mode, bool Nearest, quantized_element T>
void register_case(int height, int width, int channels, int out_height = 0, int out_width = 0) {
  auto p =
      std::make_shared<resize_problem<T>>(resize_case{height, width, channels, Mode, Nearest, out_height, out_width});
  register_mosaiq<Mode, Nearest, T>(p);
#if MOSAIQ_BENCH_XNNPACK
  if constexpr (!Nearest) register_xnnpack<T>(p);
#endif
  register_memcpy<T>(p);
}

/// Requantizing resize (input and output quantization differ): mosaiq's equal-quantization kernel plus the byte-table
/// requantization, against a memcpy of the output; neither TFLite nor XNNPACK resizes with requantization.
template <resize_mode Mode, quantized_element T>
void register_requantized_case(int height, int width, int channels, int out_height = 0, int out_width = 0) {
  const resize_case c{height, width, channels, Mode, false, out_height, out_width, true};
  const quant_params input{0.05f, 3}, output{0.08f, -10};
  auto p = std::make_shared<resize_problem<T>>(c);
  const reference::requantization<T> requant(input, output);
  reference::resize_bilinear<T>(tensor_view<const T>(p->input.data(), p->in_dims),
                                tensor_view<T>(p->expected.data(), p->out_dims), Mode, requant);
  constexpr resize_config any{
      .mode = Mode, .out_height = resize_config::from_output, .out_width = resize_config::from_output};
  auto kernel = std::make_shared<resize_bilinear<any, T>>(input, output);
  auto out = std::make_shared<aligned_buffer<T>>(p->out_dims.elements());
  register_checked<T>(
      "mosaiq", p, out,
      [p, out, kernel] {
        (*kernel)(tensor_view<const T>(p->input.data(), p->in_dims), tensor_view<T>(out->data(), p->out_dims));
      },
      0, std::string(simd::to_string(simd::native_isa)));
  register_memcpy<T>(p);
}

void register_all() {
  for (const auto [h, w, c] : {std::array{80, 80, 16}, std::array{128, 128, 32}, std::array{160, 160, 2},
                               std::array{80, 80, 2}, std::array{64, 64, 3}}) {
    register_case<resize_mode::legacy, false, u8>(h, w, c);
    register_case<resize_mode::half_pixel, false, u8>(h, w, c);
  }
  register_case<resize_mode::half_pixel, false, i8>(80, 80, 16);
  register_case<resize_mode::half_pixel, false, i8>(160, 160, 2);
  register_case<resize_mode::half_pixel, false, i8>(32, 32, 24);  // the selfie decoder's 24 channels
  register_case<resize_mode::half_pixel, true, u8>(80, 80, 16);
  register_case<resize_mode::half_pixel, true, u8>(160, 160, 2);
  // Other ratios: the float32 any-ratio kernel.
  register_case<resize_mode::half_pixel, false, u8>(32, 32, 2, 256, 256);      // 8x, 2-class logits
  register_case<resize_mode::legacy, false, u8>(60, 80, 16, 90, 120);          // 1.5x
  register_case<resize_mode::align_corners, false, u8>(33, 33, 21, 129, 129);  // DeepLab
  register_case<resize_mode::half_pixel, false, u8>(128, 128, 32, 64, 64);     // down 2x
  register_case<resize_mode::half_pixel, false, i8>(32, 32, 2, 256, 256);
  // Requantizing: the 2x integer kernel and the 8x float kernel, then the byte table.
  register_requantized_case<resize_mode::half_pixel, u8>(80, 80, 16);
  register_requantized_case<resize_mode::half_pixel, u8>(32, 32, 2, 256, 256);
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  mosaiq::bench::setup_baselines("mosaiq::resize_bilinear / mosaiq::resize_nearest");
  mosaiq::bench::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
