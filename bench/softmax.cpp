// bench_softmax: softmax and log-softmax (2, 21 and 1001 classes) and logistic, `softmax/<impl>/<case>`,
// `log_softmax/<impl>/<case>` and `logistic/<impl>/<case>`,
// one thread. mosaiq's softmax (difference table for 2 classes, exact vector normalization otherwise) against
// XNNPACK's qu8 softmax (lut32norm: one integer division per element; no beta, table scale 2^23 - 1, so it may differ
// by 1 LSB) and a memcpy of the output bytes; log-softmax has no XNNPACK row (XNNPACK has no log-softmax operator,
// quantized or float); logistic against XNNPACK's qu8 sigmoid. Every output is first checked
// against mosaiq::reference.
#include "mosaiq/ops/softmax.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "baselines.hpp"
#include "common.hpp"
#include "mosaiq/reference/softmax.hpp"

namespace mosaiq::bench {
namespace {

enum class table_op { softmax, logistic, log_softmax };

template <quantized_element T>
struct elementwise_problem {
  std::string case_name;
  shape dims;
  quant_params input_q;
  aligned_buffer<T> input, expected;

  elementwise_problem(std::string name, shape d, quant_params q, table_op op)
      : case_name(std::move(name)), dims(d), input_q(q), input(d.elements()), expected(d.elements()) {
    std::mt19937 rng(7);
    // Logits of a two-class head: mostly confident, some near the boundary.
    fill_uniform(input.span(), element_traits<T>::min, element_traits<T>::max, rng);
    const tensor_view<const T> in(input.data(), dims);
    const tensor_view<T> out(expected.data(), dims);
    if (op == table_op::softmax)
      reference::softmax<T>(reference::softmax_table(q, 1.0f), in, out);
    else if (op == table_op::log_softmax)
      reference::log_softmax<T>(reference::log_softmax_params(q), in, out);
    else
      reference::logistic<T>(reference::logistic_table<T>(q), in, out);
  }
  std::int64_t bytes() const { return static_cast<std::int64_t>(dims.elements() * sizeof(T)); }
};

template <quantized_element T, class Run>
void register_checked(std::string_view op, std::string_view impl, std::shared_ptr<elementwise_problem<T>> p,
                      std::shared_ptr<aligned_buffer<T>> out, Run run, int tolerance, std::string label) {
  register_row(op, impl, p->case_name, [p, out, run, tolerance, label](benchmark::State& state) {
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
    state.SetBytesProcessed(state.iterations() * p->bytes());  // output bytes, comparable with the memcpy row
    state.SetLabel(label + (label.empty() ? "" : "; ") + "vs reference: " + m.text());
  });
}

template <quantized_element T>
void register_memcpy(std::string_view op, std::shared_ptr<elementwise_problem<T>> p) {
  auto source = std::make_shared<aligned_buffer<T>>(p->dims.elements());
  auto out = std::make_shared<aligned_buffer<T>>(p->dims.elements());
  std::memcpy(source->data(), p->expected.data(), p->expected.size() * sizeof(T));
  register_checked<T>(
      op, "memcpy", p, out, [source, out] { std::memcpy(out->data(), source->data(), out->size() * sizeof(T)); }, 0,
      "output bytes copied");
}

/// The mosaiq row of an elementwise table op: the kernel maps the problem's input to a fresh output.
template <quantized_element T, class Problem, class Kernel>
void register_mosaiq_row(const char* op, const std::shared_ptr<Problem>& p, std::shared_ptr<Kernel> kernel) {
  auto out = std::make_shared<aligned_buffer<T>>(p->dims.elements());
  register_checked<T>(
      op, "mosaiq", p, out,
      [p, out, kernel] {
        (*kernel)(tensor_view<const T>(p->input.data(), p->dims), tensor_view<T>(out->data(), p->dims));
      },
      0, std::string(simd::to_string(simd::native_isa)));
}

template <quantized_element T, int Channels = 2>
void register_softmax(std::string name, shape dims, float input_scale) {
  auto p =
      std::make_shared<elementwise_problem<T>>(std::move(name), dims, quant_params{input_scale, 0}, table_op::softmax);
  register_mosaiq_row<T>("softmax", p,
                         std::make_shared<softmax<softmax_config{.channels = Channels}, T>>(p->input_q, 1.0f));
#if MOSAIQ_BENCH_XNNPACK
  if constexpr (std::same_as<T, u8>) {
    xnnpack::initialize();
    auto xnn_out = std::make_shared<aligned_buffer<T>>(dims.elements());
    xnn_operator_t op = nullptr;
    xnnpack::check(xnn_create_softmax_nc_qu8(Channels, Channels, Channels, input_scale, 0, 1.0f / 256.0f, 0, &op),
                   "create softmax qu8");
    xnnpack::check(xnn_setup_softmax_nc_qu8(op, dims.pixels(), p->input.data(), xnn_out->data(), nullptr),
                   "setup softmax qu8");
    auto owned = std::shared_ptr<xnn_operator>(op, xnnpack::operator_deleter{});
    register_checked<T>(
        "softmax", "xnnpack", p, xnn_out, [owned] { xnnpack::check(xnn_run_operator(owned.get(), nullptr), "run"); }, 1,
        "");
  }
#endif
  register_memcpy<T>("softmax", p);
}

template <quantized_element T>
void register_logistic(std::string name, shape dims, quant_params q) {
  auto p = std::make_shared<elementwise_problem<T>>(std::move(name), dims, q, table_op::logistic);
  register_mosaiq_row<T>("logistic", p, std::make_shared<logistic<T>>(q));
#if MOSAIQ_BENCH_XNNPACK
  if constexpr (std::same_as<T, u8>) {
    xnnpack::initialize();
    auto xnn_out = std::make_shared<aligned_buffer<T>>(dims.elements());
    xnn_operator_t op = nullptr;
    xnnpack::check(
        xnn_create_sigmoid_nc_qu8(dims.channels, dims.channels, dims.channels, static_cast<std::uint8_t>(q.zero_point),
                                  q.scale, 0, 1.0f / 256.0f, 0, 255, 0, &op),
        "create sigmoid qu8");
    xnnpack::check(xnn_setup_sigmoid_nc_qu8(op, dims.pixels(), p->input.data(), xnn_out->data(), nullptr),
                   "setup sigmoid qu8");
    auto owned = std::shared_ptr<xnn_operator>(op, xnnpack::operator_deleter{});
    register_checked<T>(
        "logistic", "xnnpack", p, xnn_out, [owned] { xnnpack::check(xnn_run_operator(owned.get(), nullptr), "run"); },
        1, "");
  }
#endif
  register_memcpy<T>("logistic", p);
}

/// XNNPACK has no log-softmax operator (quantized or float), so only mosaiq and memcpy rows.
template <quantized_element T, int Channels = 2>
void register_log_softmax(std::string name, shape dims, float input_scale) {
  auto p = std::make_shared<elementwise_problem<T>>(std::move(name), dims, quant_params{input_scale, 0},
                                                    table_op::log_softmax);
  register_mosaiq_row<T>("log_softmax", p,
                         std::make_shared<log_softmax<softmax_config{.channels = Channels}, T>>(p->input_q));
  register_memcpy<T>("log_softmax", p);
}

void register_all() {
  // Input scale 0.1: the two-class table varies over 114 differences (one 128-entry lookup); 0.02: over all 511.
  register_softmax<u8>("160x160x2_u8", shape{160, 160, 2}, 0.1f);
  register_softmax<i8>("160x160x2_i8", shape{160, 160, 2}, 0.1f);
  register_softmax<u8>("160x160x2_wide_window_u8", shape{160, 160, 2}, 0.02f);
  register_softmax<u8>("256x256x2_u8", shape{256, 256, 2}, 0.1f);
  // Small depth (vectorized across pixels) and a classifier head (vectorized along the channels).
  register_softmax<u8, 21>("160x160x21_u8", shape{160, 160, 21}, 0.1f);
  register_softmax<i8, 21>("160x160x21_i8", shape{160, 160, 21}, 0.1f);
  register_softmax<u8, 1001>("1x1x1001_u8", shape{1, 1, 1001}, 0.1f);
  // Log-softmax beside softmax on the same shapes (the two-class table's window: 0.1 -> narrow, 0.02 -> all 511).
  register_log_softmax<u8>("160x160x2_u8", shape{160, 160, 2}, 0.1f);
  register_log_softmax<i8>("160x160x2_i8", shape{160, 160, 2}, 0.1f);
  register_log_softmax<u8>("160x160x2_wide_window_u8", shape{160, 160, 2}, 0.02f);
  register_log_softmax<u8, 21>("160x160x21_u8", shape{160, 160, 21}, 0.1f);
  register_log_softmax<i8, 21>("160x160x21_i8", shape{160, 160, 21}, 0.1f);
  register_log_softmax<u8, 1001>("1x1x1001_u8", shape{1, 1, 1001}, 0.1f);
  register_logistic<u8>("160x160x2_u8", shape{160, 160, 2}, quant_params{0.1f, 128});
  register_logistic<u8>("80x80x64_u8", shape{80, 80, 64}, quant_params{0.05f, 100});
  register_logistic<i8>("80x80x64_i8", shape{80, 80, 64}, quant_params{0.05f, -20});
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  mosaiq::bench::setup_baselines("mosaiq::softmax / mosaiq::logistic");
  mosaiq::bench::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
