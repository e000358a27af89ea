// What bench_network's translation units share (bench/network.cpp, bench/network_selfie.cpp): the clocks and
// counters of a network row, the thread pools of the N-thread rows, the XNNPACK twin's state and per-layer
// comparison, and the other runtimes' memory planners of `--memory_table`.
#pragma once

#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../examples/common/threads.hpp"
#include "common.hpp"
#include "mosaiq/mosaiq.hpp"
#if MOSAIQ_BENCH_XNNPACK
#include "xnnpack_net.hpp"
#endif

namespace mosaiq::bench {

/// CPU time of the calling thread, the clock Google Benchmark reports.
inline double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

/// The clock of a row: the calling thread's CPU time on one thread, wall-clock time on several.
inline double frame_clock_ms(int threads) {
  if (threads == 1) return thread_cpu_ms();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// A mosaiq network row's memory counters: arena, peak live bytes, plan efficiency, weights.
template <class Net>
void memory_counters(benchmark::State& s, double) {
  s.counters["arena_bytes"] = double(Net::arena_bytes);
  s.counters["peak_live_bytes"] = double(Net::peak_live_bytes);
  s.counters["plan_efficiency"] = Net::plan_efficiency;
  s.counters["weight_bytes"] = double(Net::weight_bytes);
}

/// One-thread rows time the calling thread's CPU time; N-thread rows wall-clock time (Google Benchmark
/// appends `/real_time` to their names; bench/ratios.py reads them as `<case>_t<N>`).
inline benchmark::internal::Benchmark* with_clock(int threads, benchmark::internal::Benchmark* row) {
  row->Unit(benchmark::kMillisecond);
  return threads > 1 ? row->UseRealTime() : row;
}

/// Case names: today's rows are the one-thread rows; N threads append `_t<N>`.
inline std::string threads_suffix(int threads) { return threads == 1 ? "" : "_t" + std::to_string(threads); }

/// A mosaiq thread pool and a pthreadpool of N threads, made on first use and kept for the run.
struct thread_pools {
  explicit thread_pools(int n) : threads(n) {}
  int threads = 1;
  std::unique_ptr<thread_pool> mosaiq;
#if MOSAIQ_BENCH_XNNPACK
  std::unique_ptr<pthreadpool, decltype(&pthreadpool_destroy)> xnnpack{nullptr, &pthreadpool_destroy};
#endif
  thread_pool& mosaiq_pool() {
    if (!mosaiq) mosaiq = std::make_unique<thread_pool>(threads);
    return *mosaiq;
  }
#if MOSAIQ_BENCH_XNNPACK
  /// nullptr (the calling thread) for one thread, as the one-thread rows always ran.
  pthreadpool_t xnnpack_pool() {
    if (threads > 1 && !xnnpack) xnnpack.reset(pthreadpool_create(static_cast<std::size_t>(threads)));
    return xnnpack.get();
  }
#endif
};

/// The XNNPACK twin of a network, built (and checked against mosaiq) by the first XNNPACK row of any
/// thread count.
template <class Net>
struct twin_state {
#if MOSAIQ_BENCH_XNNPACK
  std::optional<xnnpack::network_twin<Net>> twin;
  std::string error, label;
#endif
};

/// A problem built on first use (weights loaded, a photo read: a filter that skips its rows should not pay) from
/// `args`, kept for the run; a failure to build it is the error its rows skip with.
template <class Problem>
struct lazy_problem {
  std::optional<Problem> p;
  std::string error;
  template <class... Args>
  Problem* get(Args&&... args) {
    if (!p && error.empty()) {
      try {
        p.emplace(std::forward<Args>(args)...);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    return p ? &*p : nullptr;
  }
};

/// Times `run` per frame (ms), with GMAC/s and the memory counters.
template <class Run, class Counters>
void time_frames(benchmark::State& state, int threads, Run&& run, std::uint64_t macs, Counters&& counters,
                 double* ms_per_frame) {
  const double start = frame_clock_ms(threads);
  for (auto _ : state) {
    run();
    benchmark::ClobberMemory();
  }
  const double ms = (frame_clock_ms(threads) - start) / double(state.iterations());
  if (ms_per_frame != nullptr) *ms_per_frame = ms;
  state.counters["GMAC/s"] =
      benchmark::Counter(static_cast<double>(macs) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  counters(state, ms);
}

#if MOSAIQ_BENCH_XNNPACK
/// A problem's network on another plan (`Plan`: the same layers, e.g. Net::with_banding<...> or
/// Net::with_max_threads<N>): the same weights and input, its own arena. The first run (on `exec`) is compared byte
/// for byte with the problem's one-thread layer-by-layer output.
template <class Plan, class Problem>
struct plan_twin {
  using T = typename Plan::element_type;
  std::unique_ptr<typename Plan::weights> weights = std::make_unique<typename Plan::weights>();
  std::optional<typename Plan::prepared> prepared;
  aligned_buffer<T> output{Plan::output_shape.elements()};
  aligned_buffer<std::byte> arena{Plan::arena_bytes};

  template <parallel_executor E = serial_executor>
  explicit plan_twin(Problem& p, E&& exec = E{}) {
    weights->input = p.weights->input;
    weights->layers = p.weights->layers;
    prepared.emplace(Plan::prepare(*weights));
    p.run();  // the one-thread layer-by-layer output of this frame, to compare with
    run(p, exec);
    if (!std::equal(output.data(), output.data() + output.size(), p.output.data()))
      throw std::runtime_error(Problem::case_name() + ": the output on another plan (banded, threads) differs from " +
                               "one thread layer by layer");
  }
  template <parallel_executor E = serial_executor>
  void run(Problem& p, E&& exec = E{}) {
    Plan::run(*prepared, tensor_view<const T>(p.input.data(), Plan::input_shape),
              tensor_view<T>(output.data(), Plan::output_shape), arena.span(), exec);
  }
};

/// `network/mosaiq/<case>_banded`: Banded on the problem `get()` points to (null: it did not load), one thread, with
/// the arena counters, `band_saved_bytes` and `banded/plain` (the time over `plain_ms(problem)`, the layer-by-layer row
/// of this run, once it ran; 0: not yet). The label lists the chains.
template <class Banded, class Get, class PlainMs>
void register_banded_row(const std::string& case_name, Get get, PlainMs plain_ms) {
  using problem = std::remove_pointer_t<decltype(get())>;
  using twin = plan_twin<Banded, problem>;
  auto banded = std::make_shared<lazy_problem<twin>>();
  with_clock(1, register_row("network", "mosaiq", case_name + "_banded", [=](benchmark::State& state) {
               problem* p = get();
               if (p == nullptr) return state.SkipWithError("the layer-by-layer problem did not load");
               if (banded->get(*p) == nullptr) return state.SkipWithError(banded->error.c_str());
               twin& b = *banded->get(*p);
               time_frames(
                   state, 1, [&b, p] { b.run(*p); }, Banded::macs,
                   [p, plain_ms](benchmark::State& s, double ms) {
                     memory_counters<Banded>(s, ms);
                     s.counters["band_saved_bytes"] = double(Banded::band_saved_bytes);
                     if (plain_ms(*p) > 0) s.counters["banded/plain"] = ms / plain_ms(*p);
                   },
                   nullptr);
               std::string chains;
               for (int c = 0; c < Banded::band_chain_count; ++c) {
                 const auto& chain = Banded::band_chains[std::size_t(c)];
                 chains += (c == 0 ? "layers " : ", ") + std::to_string(chain.first) + ".." +
                           std::to_string(chain.last) + " in bands of " + std::to_string(chain.rows);
               }
               state.SetLabel(std::string(simd::to_string(simd::native_isa)) + "; " + chains + " row(s), " +
                              std::to_string(Banded::band_plan.gemm_block_bytes) + "-byte GEMM blocks, 1 thread");
             }));
}

/// mosaiq's CPU time per layer (the calling thread's clock around each layer), average of `runs` runs after one
/// warm-up; indexed by layer, 0 for tap and from.
template <class Net>
std::array<double, Net::layer_count> layer_cpu_ms(const typename Net::prepared& prepared,
                                                  tensor_view<const typename Net::element_type> input,
                                                  tensor_view<typename Net::element_type> output,
                                                  std::span<std::byte> arena, int runs) {
  struct timer {
    std::array<double, Net::layer_count>* total_ms;
    double start = 0;
    void before(std::size_t) noexcept { start = thread_cpu_ms(); }
    void after(std::size_t layer, std::span<std::byte>) noexcept { (*total_ms)[layer] += thread_cpu_ms() - start; }
  };
  std::array<double, Net::layer_count> warm_up{}, ms{};
  Net::run_observed(prepared, input, output, arena, timer{&warm_up});
  for (int r = 0; r < runs; ++r) Net::run_observed(prepared, input, output, arena, timer{&ms});
  for (double& v : ms) v /= runs;
  return ms;
}

/// With MOSAIQ_BENCH_PROFILE=<runs> in the environment, once per network type: its wall-clock time per step on one
/// thread and on `pool` (medians of `runs` frames each, steady clock around each step: a layer, or a row run on
/// threads, timed on its last layer), the frame medians and the parallel_for calls per frame, on stderr.
template <class Net>
void print_thread_profile(const std::string& name, const typename Net::prepared& prepared,
                          tensor_view<const typename Net::element_type> input,
                          tensor_view<typename Net::element_type> output, std::span<std::byte> arena,
                          thread_pool& pool) {
  static bool printed = false;
  const char* env = std::getenv("MOSAIQ_BENCH_PROFILE");
  if (env == nullptr || printed) return;
  printed = true;
  const int runs = std::max(1, std::atoi(env));
  using clock = std::chrono::steady_clock;
  const auto us = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  };
  struct timer {
    std::vector<std::vector<double>>* samples;
    clock::time_point start{};
    void before(std::size_t) noexcept { start = clock::now(); }
    void after(std::size_t layer, std::span<std::byte>) {
      (*samples)[layer].push_back(std::chrono::duration<double, std::micro>(clock::now() - start).count());
    }
  };
  serial_executor serial;
  std::vector<std::vector<double>> one(Net::layer_count), many(Net::layer_count);
  std::vector<double> one_frame, many_frame;
  for (int r = 0; r < runs; ++r) {
    clock::time_point t = clock::now();
    Net::run(prepared, input, output, arena, serial);
    one_frame.push_back(us(t, clock::now()));
    t = clock::now();
    Net::run(prepared, input, output, arena, pool);
    many_frame.push_back(us(t, clock::now()));
    Net::run_observed(prepared, input, output, arena, timer{&one}, serial);
    Net::run_observed(prepared, input, output, arena, timer{&many}, pool);
  }
  const auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const int threads = pool.thread_count();
  std::fprintf(stderr,
               "\n%s, wall-clock us per step, medians of %d frames: 1 thread %.1f, %d threads %.1f (%.2fx); "
               "parallel_for calls per frame: %d\n| # | op | output | row run | 1 thread | %d threads "
               "|\n|---|---|---|---|---:|---:|\n",
               name.c_str(), runs, median(one_frame), threads, median(many_frame),
               median(one_frame) / median(many_frame), Net::parallel_steps(threads), threads);
  for (std::size_t i = 0; i < Net::layer_count; ++i) {
    if (Net::topology.layers[i].role != layer_role::op) continue;
    const shape s = Net::layer_shapes[i];
    const auto run = Net::active_row_runs[i];
    const std::string in_run = run.active() ? std::to_string(run.first) + ".." + std::to_string(run.last) : "";
    std::fprintf(stderr, "| %zu | %s | %dx%dx%d | %s | %.2f | %.2f |\n", i, layer_kind<Net>(i).data(), s.height,
                 s.width, s.channels, in_run.c_str(), median(one[i]), median(many[i]));
  }
}

/// With MOSAIQ_BENCH_PROFILE=<runs> in the environment: mosaiq's and XNNPACK's CPU time per layer side by
/// side on stderr (the calling thread's CPU clock read around each layer, which adds the same small cost per
/// layer to both), with each layer's input and output shapes.
template <class Problem, class Twin>
void print_layer_comparison(Problem& p, const Twin& twin) {
  using net = typename Problem::net;
  const char* env = std::getenv("MOSAIQ_BENCH_PROFILE");
  if (env == nullptr) return;
  const int runs = std::max(1, std::atoi(env));
  const auto mine = layer_cpu_ms<net>(
      *p.prepared, tensor_view<const typename net::element_type>(p.input.data(), net::input_shape),
      tensor_view<typename net::element_type>(p.output.data(), net::output_shape), p.arena.span(), runs);
  const std::vector<double> theirs = twin.ops->profile(runs, net::layer_count, thread_cpu_ms);
  std::fprintf(stderr, "\n%s, per layer (CPU ms, average of %d runs)\n", Problem::case_name().c_str(), runs);
  std::fprintf(stderr,
               "| # | op | input | output | MACs | mosaiq ms | xnnpack ms | xnnpack/mosaiq |\n"
               "|---|---|---|---|---:|---:|---:|---:|\n");
  double total_mine = 0, total_theirs = 0;
  for (std::size_t i = 0; i < net::layer_count; ++i) {
    const layer_node& node = net::topology.layers[i];
    if (node.role != layer_role::op) continue;
    const shape in = net::topology.tensors[std::size_t(node.inputs[0])].dims, s = net::layer_shapes[i];
    total_mine += mine[i], total_theirs += theirs[i];
    std::fprintf(stderr, "| %zu | %s | %dx%dx%d | %dx%dx%d | %llu | %.4f | %.4f | %.2f |\n", i,
                 layer_kind<net>(i).data(), in.height, in.width, in.channels, s.height, s.width, s.channels,
                 static_cast<unsigned long long>(net::layer_macs[i]), mine[i], theirs[i],
                 mine[i] > 0 ? theirs[i] / mine[i] : 0.0);
  }
  std::fprintf(stderr, "| | total | | | %llu | %.4f | %.4f | %.2f |\n\n", static_cast<unsigned long long>(net::macs),
               total_mine, total_theirs, total_theirs / total_mine);
}
#endif

/// The same network on another input type (the layers unchanged): the banded plan of a network.
template <class Net, class Input>
struct on_input;
template <class Old, class... Layers, class Input>
struct on_input<network<Old, Layers...>, Input> {
  using type = network<Input, Layers...>;
};

// ---------------------------------------------------------------------------------------------
// --memory_table: peak activation memory of the same networks by plan (README, "Row bands").

/// One activation tensor as another runtime's planner sees it: bytes and the layers that make and
/// last read it (inclusive).
struct planned_tensor {
  std::size_t bytes = 0;
  int first = 0, last = 0;
};

/// TFLite's arena for whole tensors under its planner (tensorflow/lite arena_planner.cc and
/// simple_memory_arena.cc): tensors in non-increasing size, equal sizes by the layer that makes them;
/// each goes at the smallest gap that fits between the tensors already placed whose lifetimes overlap
/// its own (walked by offset), or after the last of them; offsets aligned to 64 bytes (its default
/// tensor alignment). The arena is the highest end.
inline std::size_t tflite_arena_bytes(std::vector<planned_tensor> tensors) {
  constexpr std::size_t alignment = 64;
  const auto align = [](std::size_t offset) { return (offset + alignment - 1) / alignment * alignment; };
  std::stable_sort(tensors.begin(), tensors.end(), [](const planned_tensor& a, const planned_tensor& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.first < b.first;
  });
  struct placed {
    std::size_t offset;
    planned_tensor tensor;
  };
  std::vector<placed> active;  // by offset
  std::size_t high = 0;
  for (const planned_tensor& t : tensors) {
    if (t.bytes == 0) continue;
    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    std::size_t best = none, best_gap = none, end = 0;
    for (const placed& a : active) {
      if (a.tensor.last < t.first || a.tensor.first > t.last) continue;
      const std::size_t at = align(end);
      if (at + t.bytes <= a.offset && a.offset - at < best_gap) best = at, best_gap = a.offset - end;
      end = std::max(end, a.offset + a.tensor.bytes);
      if (best_gap == 0) break;
    }
    if (best == none) best = align(end);
    high = std::max(high, best + t.bytes);
    const auto after = std::upper_bound(active.begin(), active.end(), best,
                                        [](std::size_t offset, const placed& a) { return offset < a.offset; });
    active.insert(after, placed{best, t});
  }
  return high;
}

/// A network's intermediate tensors (its arena's, not the input or the output) for other planners.
template <class Net>
std::vector<planned_tensor> intermediate_tensors() {
  std::vector<planned_tensor> tensors;
  for (std::size_t t = 1; t + 1 < Net::tensor_count; ++t) {
    const auto& node = Net::topology.tensors[t];
    tensors.push_back({node.dims.elements() * sizeof(typename Net::element_type), node.producer, node.last_use});
  }
  return tensors;
}

/// One row of the table: mosaiq layer by layer and banded (one-thread plans), XNNPACK's op-by-op
/// buffers (one per tensor, as bench/xnnpack_net.hpp allocates them, input and output included) and
/// TFLite's arena for the intermediate tensors (TFLite also places the input and output in its arena).
template <class Banded>
void print_memory_row(const char* name) {
  using T = typename Banded::element_type;
  std::size_t all_tensors = 0;
  for (const auto& node : Banded::topology.tensors) all_tensors += node.dims.elements() * sizeof(T);
  const std::size_t io = (Banded::input_shape.elements() + Banded::output_shape.elements()) * sizeof(T);
  std::printf("| %s | %zu | %zu | %zu | %zu | %zu |\n", name, Banded::layer_by_layer_arena_bytes, Banded::arena_bytes,
              all_tensors, tflite_arena_bytes(intermediate_tensors<Banded>()), io);
}

}  // namespace mosaiq::bench
