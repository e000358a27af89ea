// Shared pieces of the micro-benchmarks: workload descriptions with their `<op>/<impl>/<case>`
// names, deterministic quantized test data, the TFLite-reference output every implementation is
// checked against once before it is timed, GMAC/s and MB/s counters, and the one-thread pin for
// OpenMP-threaded baselines (oneDNN).
#pragma once

#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/conv.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/reference/depthwise.hpp"
#include "mosaiq/simd/amx.hpp"
#include "mosaiq/simd/arch.hpp"

namespace mosaiq::bench {

/// Every buffer a kernel sees starts on a cache line and has this much readable slack after its
/// end: XNNPACK reads up to XNN_EXTRA_BYTES (16) past its inputs.
inline constexpr std::size_t buffer_alignment = 64;
inline constexpr std::size_t buffer_slack = 64;

/// A heap array aligned to a cache line, zero-initialised, with readable slack past the end.
template <class T>
class aligned_buffer {
 public:
  aligned_buffer() = default;
  explicit aligned_buffer(std::size_t count) : size_(count) {
    const std::size_t bytes =
        (count * sizeof(T) + buffer_slack + buffer_alignment - 1) / buffer_alignment * buffer_alignment;
    data_.reset(static_cast<T*>(std::aligned_alloc(buffer_alignment, bytes)));
    if (!data_) throw std::bad_alloc();
    std::fill_n(reinterpret_cast<std::byte*>(data_.get()), bytes, std::byte{0});
  }
  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  std::span<T> span() noexcept { return {data(), size_}; }
  std::span<const T> span() const noexcept { return {data(), size_}; }

 private:
  struct free_deleter {
    void operator()(T* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<T, free_deleter> data_;
  std::size_t size_ = 0;
};

template <quantized_element T>
constexpr std::string_view element_name() noexcept {
  return std::same_as<T, u8> ? "u8" : "i8";
}

/// One convolution workload. Depthwise is C groups of one input and M outputs (TFLite filter
/// [KH][KW][C*M]); dense is one group (TFLite filter [Cout][KH][KW][Cin]). Padding is always SAME.
struct conv_shape {
  enum class kind { depthwise, dense };
  kind type = kind::depthwise;
  int height = 0, width = 0, input_channels = 0;
  int output_channels = 0;  ///< C * depth multiplier for depthwise
  hw kernel{1, 1}, stride{1, 1}, dilation{1, 1};

  static constexpr conv_shape depthwise(int h, int w, int c, hw kernel, hw stride, hw dilation, int multiplier = 1) {
    return {kind::depthwise, h, w, c, c * multiplier, kernel, stride, dilation};
  }
  static constexpr conv_shape dense(int h, int w, int cin, int cout, hw kernel = {1, 1}, hw stride = {1, 1}) {
    return {kind::dense, h, w, cin, cout, kernel, stride, {1, 1}};
  }

  bool is_depthwise() const noexcept { return type == kind::depthwise; }
  int groups() const noexcept { return is_depthwise() ? input_channels : 1; }
  int group_input_channels() const noexcept { return input_channels / groups(); }
  int group_output_channels() const noexcept { return output_channels / groups(); }
  int taps() const noexcept { return kernel.h * kernel.w * group_input_channels(); }
  window_geometry geometry() const noexcept {
    return resolve_window(height, width, kernel, stride, dilation, padding::same());
  }
  mosaiq::shape input_shape() const noexcept { return {height, width, input_channels}; }
  mosaiq::shape output_shape() const noexcept {
    const window_geometry g = geometry();
    return {g.y.output, g.x.output, output_channels};
  }
  std::size_t filter_elements() const noexcept {
    return static_cast<std::size_t>(output_channels) * static_cast<std::size_t>(taps());
  }
  std::int64_t macs() const noexcept { return static_cast<std::int64_t>(output_shape().elements()) * taps(); }
  /// Bytes one run must touch at least: input, filter and output, 8 bits each.
  std::int64_t bytes() const noexcept {
    return static_cast<std::int64_t>(input_shape().elements() + filter_elements() + output_shape().elements());
  }

  /// The case part of a benchmark name. Depthwise `112x112x32_k3s1d1_u8` (`m2` appended for a
  /// depth multiplier), dense `112x112x32to64_k1s1_u8`. Square kernels, strides and dilations.
  template <quantized_element T>
  std::string case_name() const {
    // Appended piece by piece: GCC 12 reports a false -Wrestrict on `"literal" + std::string` at -O3.
    std::string name;
    const auto add = [&name](std::string_view text, int value) {
      name += text;
      name += std::to_string(value);
    };
    add("", height), add("x", width), add("x", input_channels);
    if (!is_depthwise()) add("to", output_channels);
    add("_k", kernel.h), add("s", stride.h);
    if (is_depthwise() || dilation.h != 1) add("d", dilation.h);
    if (is_depthwise() && output_channels != input_channels) add("m", output_channels / input_channels);
    name += '_';
    name += element_name<T>();
    return name;
  }
};

/// Deterministic uniform integers in [lo, hi].
template <class T>
void fill_uniform(std::span<T> values, int lo, int hi, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(lo, hi);
  for (T& v : values) v = static_cast<T>(dist(rng));
}

/// A quantized convolution with data, TFLite quantization and its reference output.
/// u8: asymmetric per-tensor, filter zero point 120 with values in [0, 247] so that
/// `filter - zero point` fits int8 (oneDNN takes only s8 weights and no weight zero point).
/// i8: symmetric per-channel filter scales, input/output zero points off zero.
/// Scales put the output's spread at about 40 steps, so few outputs saturate.
template <quantized_element T>
struct conv_problem {
  conv_shape shape;
  aligned_buffer<T> input;
  aligned_buffer<T> filter;  ///< TFLite layout, see conv_shape
  std::vector<std::int32_t> bias;
  quant_params input_q, output_q;
  std::vector<float> filter_scales;  ///< one (u8) or one per output channel (i8)
  std::int32_t filter_zero_point = 0;
  reference::conv_requant requant;

  conv_problem(const conv_shape& s, std::uint32_t seed)
      : shape(s), input(s.input_shape().elements()), filter(s.filter_elements()), bias(s.output_channels) {
    std::mt19937 rng(seed);
    constexpr bool is_u8 = std::same_as<T, u8>;
    constexpr float input_scale = 0.02f, filter_scale = 0.005f;
    // |x - zp_x| and |w - zp_w| are ~uniform over 8 bits: each product has a spread of ~5250.
    const float acc_spread = 5250.0f * std::sqrt(static_cast<float>(s.taps()));
    const float output_scale = input_scale * filter_scale * acc_spread / 40.0f;
    input_q = {input_scale, is_u8 ? 131 : -5};
    output_q = {output_scale, is_u8 ? 125 : 3};
    fill_uniform(input.span(), element_traits<T>::min, element_traits<T>::max, rng);
    if constexpr (is_u8) {
      filter_zero_point = 120;
      fill_uniform(filter.span(), 0, 247, rng);
      filter_scales = {filter_scale};
    } else {
      fill_uniform(filter.span(), -127, 127, rng);
      std::uniform_real_distribution<float> spread(0.5f, 1.5f);
      for (int c = 0; c < s.output_channels; ++c) filter_scales.push_back(filter_scale * spread(rng));
    }
    fill_uniform(std::span(bias), -5000, 5000, rng);
    requant = reference::make_conv_requant<rounding::tflite_reference, T>(input_q, filter_scales, filter_zero_point,
                                                                          output_q, activation::none);
  }

  tensor_view<const T> input_view() const { return {input.data(), shape.input_shape()}; }

  /// mosaiq::reference's output, computed once on first use.
  std::span<const T> reference_output() {
    if (!reference_) {
      reference_.emplace(shape.output_shape().elements());
      const tensor_view<T> out(reference_->data(), shape.output_shape());
      if (shape.is_depthwise()) {
        const reference::depthwise_params p{.kernel = shape.kernel,
                                            .stride = shape.stride,
                                            .dilation = shape.dilation,
                                            .pad = padding::same(),
                                            .depth_multiplier = shape.group_output_channels()};
        reference::depthwise_conv<rounding::tflite_reference, T>(input_view(), filter.data(), bias.data(), out, p,
                                                                 requant);
      } else {
        const reference::conv2d_params p{
            .kernel = shape.kernel, .stride = shape.stride, .dilation = shape.dilation, .pad = padding::same()};
        reference::conv2d<rounding::tflite_reference, T>(input_view(), filter.data(), bias.data(), out, p, requant);
      }
    }
    return reference_->span();
  }

 private:
  std::optional<aligned_buffer<T>> reference_;
};

/// How far one output is from another, element by element.
struct output_match {
  int max_abs_diff = 0;
  std::size_t differing = 0;
  std::size_t count = 0;
  std::string text() const {
    if (differing == 0) return "exact";
    char buf[96];
    std::snprintf(buf, sizeof buf, "max|diff| %d on %.2f%%", max_abs_diff, 100.0 * differing / count);
    return buf;
  }
};

template <class T>
output_match compare_outputs(std::span<const T> got, std::span<const T> want) {
  output_match m{.count = want.size()};
  if (got.size() != want.size()) return {.max_abs_diff = 1 << 30, .differing = want.size(), .count = want.size()};
  for (std::size_t i = 0; i < want.size(); ++i) {
    const int diff = std::abs(static_cast<int>(got[i]) - static_cast<int>(want[i]));
    if (diff == 0) continue;
    ++m.differing;
    m.max_abs_diff = std::max(m.max_abs_diff, diff);
  }
  return m;
}

/// An implementation of a workload, ready to run: `run` computes `output` from the problem's input.
template <class T>
struct conv_runner {
  std::function<void()> run;
  std::span<const T> output;
  std::string label;  ///< what the implementation chose (kernel name, ISA), shown in the results
  /// What the implementation is known to compute differently from the workload on this CPU (empty if nothing):
  /// the reason given when its output is refused.
  std::string known_difference = {};
};

/// Registers `<op>/<impl>/<case>`. Times and rates are the calling thread's CPU time (Google
/// Benchmark's default): it is what a single-threaded kernel costs even on a busy machine, and it
/// keeps the name free of a `/real_time` suffix. That is honest only because every implementation
/// runs on the calling thread: XNNPACK without a threadpool, oneDNN pinned to one OpenMP thread
/// (setup_baselines checks it). Wall-clock time is in the JSON as `real_time`.
template <class Fn>
benchmark::internal::Benchmark* register_row(std::string_view op, std::string_view impl, std::string_view case_name,
                                             Fn&& fn) {
  const std::string name = std::string(op) + "/" + std::string(impl) + "/" + std::string(case_name);
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Fn>(fn))->Unit(benchmark::kMicrosecond);
}

/// GMAC/s (1e9 multiply-accumulates per second) and MB/s (SetBytesProcessed) for `macs` and
/// `bytes` per iteration.
inline void set_throughput_counters(benchmark::State& state, std::int64_t macs, std::int64_t bytes) {
  state.counters["GMAC/s"] =
      benchmark::Counter(static_cast<double>(macs) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (bytes > 0) state.SetBytesProcessed(state.iterations() * bytes);
}

/// Registers one implementation of a workload. On its first invocation the row builds the
/// implementation (`make(problem)`, which may throw), runs it once and compares the output with
/// mosaiq::reference: more than `tolerance` LSB apart anywhere means the baseline is not computing
/// the same workload, and the row reports an error instead of a time. With `threads` > 1 the case
/// name gets `_t<threads>` and the row reports wall-clock time (the work runs on several threads).
template <quantized_element T, class Make>
void register_conv_row(std::string_view op, std::string_view impl, std::shared_ptr<conv_problem<T>> problem, Make make,
                       int tolerance, int threads = 1) {
  struct row_state {
    std::optional<conv_runner<T>> runner;
    std::string error;
    std::string label;
  };
  auto row = std::make_shared<row_state>();
  const std::string case_name =
      problem->shape.template case_name<T>() + (threads > 1 ? "_t" + std::to_string(threads) : std::string());
  auto* registered = register_row(op, impl, case_name, [problem, make, tolerance, row](benchmark::State& state) {
    if (!row->runner && row->error.empty()) {
      try {
        row->runner.emplace(make(*problem));
        row->runner->run();
        const output_match m = compare_outputs<T>(row->runner->output, problem->reference_output());
        if (m.max_abs_diff > tolerance) {
          const std::string& why = row->runner->known_difference;
          row->error = "output differs from mosaiq::reference by more than " + std::to_string(tolerance) + " (" +
                       m.text() + "): " + (why.empty() ? "a misconfigured baseline or a kernel bug" : why) +
                       "; not timed";
        }
        row->label = row->runner->label + (row->runner->label.empty() ? "" : "; ") + "vs reference: " + m.text();
      } catch (const std::exception& e) {
        row->error = e.what();
      }
    }
    if (!row->error.empty()) {
      state.SkipWithError(row->error.c_str());
      return;
    }
    for (auto _ : state) {
      row->runner->run();
      benchmark::ClobberMemory();
    }
    set_throughput_counters(state, problem->shape.macs(), problem->shape.bytes());
    state.SetLabel(row->label);
  });
  if (threads > 1) registered->UseRealTime();
}

/// The label's path part: "amx 32x32" or the register tile and ISA of the vector path.
template <class Tile>
std::string path_label(bool amx, Tile tile) {
  if (amx) return "amx 32x32 tdpbusd/tdpbssd";
  return std::to_string(tile.pixels) + "x" + std::to_string(tile.channels) + " " +
         std::string(simd::to_string(simd::native_isa));
}

/// A mosaiq layer with a pointwise tile (pointwise, conv2d) loaded on `p` with the AMX path on or off, its workspace
/// and output; labelled `name` and the path ("mosaiq::conv2d 16x16 avx512_vnni").
template <class Op, quantized_element T, bool Amx = false>
conv_runner<T> layer_runner(const conv_problem<T>& p, std::string_view name) {
  const conv_shape& s = p.shape;
  struct state {
    Op op;
    aligned_buffer<std::byte> workspace;
    aligned_buffer<T> output;
  };
  const simd::amx::scoped_enabled choice(Amx);
  auto st = std::make_shared<state>(Op(p.filter.data(), p.bias.data(), s.input_channels, p.requant),
                                    aligned_buffer<std::byte>(), aligned_buffer<T>(s.output_shape().elements()));
  if constexpr (requires(const Op& op) { op.uses_amx(); })
    if (st->op.uses_amx() != Amx) throw std::runtime_error(std::string(name) + " did not load the requested path");
  st->workspace = aligned_buffer<std::byte>(st->op.workspace_bytes(s.input_shape()));
  const tensor_view<const T> in = p.input_view();
  const tensor_view<T> out(st->output.data(), s.output_shape());
  return {.run = [st, in, out] { st->op(in, out, st->workspace.span()); },
          .output = st->output.span(),
          .label = std::string(name) + " " + path_label(Amx, Op::tile())};
}

/// A mosaiq kernel with run_rows (depthwise, pointwise, conv2d) on a thread_pool of `threads`, its
/// per-band workspace and output: a runner for register_conv_row's `_t<N>` rows.
template <class Kernel, quantized_element T>
conv_runner<T> parallel_runner(std::shared_ptr<const Kernel> kernel, const conv_problem<T>& p, int threads,
                               std::string label) {
  struct state {
    thread_pool pool;
    aligned_buffer<std::byte> workspace;
    aligned_buffer<T> output;
    state(int n, std::size_t workspace_bytes, std::size_t outputs)
        : pool(n), workspace(workspace_bytes), output(outputs) {}
  };
  const conv_shape& s = p.shape;
  auto st = std::make_shared<state>(threads, parallel_workspace_bytes<Kernel>(s.input_shape(), threads),
                                    s.output_shape().elements());
  const tensor_view<const T> in = p.input_view();
  const tensor_view<T> out(st->output.data(), s.output_shape());
  return {.run = [st, kernel, in, out] { parallel_run(st->pool, *kernel, in, out, st->workspace.span()); },
          .output = st->output.span(),
          .label = std::move(label) + ", " + std::to_string(threads) + " threads"};
}

/// Pins the OpenMP runtime that oneDNN was built with (Debian's libdnnl uses libgomp) to one
/// thread. The symbol is looked up in the running process rather than linked, so the benchmark
/// does not need OpenMP compile flags and cannot end up talking to a second OpenMP runtime.
/// Returns the thread count OpenMP now reports, or 0 when no OpenMP runtime is loaded.
inline int pin_openmp_to_one_thread() {
  using set_fn = void (*)(int);
  using get_fn = int (*)();
  const auto set_threads = reinterpret_cast<set_fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  const auto max_threads = reinterpret_cast<get_fn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  if (set_threads == nullptr || max_threads == nullptr) return 0;
  set_threads(1);
  return max_threads();
}

/// A row that exists only to say why an implementation is missing from this build.
inline void register_unavailable(std::string_view op, std::string_view impl, std::string_view case_name,
                                 std::string why) {
  register_row(op, impl, case_name,
               [why = std::move(why)](benchmark::State& state) { state.SkipWithError(why.c_str()); });
}

}  // namespace mosaiq::bench
