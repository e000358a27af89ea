// bench_network: whole networks end to end, `network/<impl>/<case>`, one thread; with `--threads N`
// (2..8) also `network/<impl>/<case>_t<N>`: mosaiq on a mosaiq::thread_pool of N threads, XNNPACK's
// operators on a pthreadpool of N threads. One-thread rows time the calling thread's CPU time; N-thread
// rows time wall-clock time (steady clock), which is what threads shorten.
//
// portrait_256_{u8,i8}: the HyperCut-style portrait segmentation network of
// examples/portrait_segmentation (256x256x3 -> 256x256x2, 46 M MACs, stand-in weights), run by
// mosaiq as one static network (compile-time plan, one arena) and by XNNPACK op by op: the same
// layers, weights and quantization through one XNNPACK operator per layer (bench/xnnpack_net.hpp),
// every tensor in its own buffer, created and set up once, only xnn_run_operator timed.
//
// Before timing, the XNNPACK output is compared with mosaiq's: XNNPACK requantizes in float and its
// rounding differs by one step here and there, which compounds through 37 layers, so the check is
// that the two compute the same function (most mask pixels agree, outputs are not constant), not
// bit equality. Counters: GMAC/s, memory (mosaiq: arena and peak live bytes; XNNPACK: the bytes of
// its activation buffers) and, on the XNNPACK row, `xnnpack/mosaiq`, the time ratio against the
// mosaiq row of the same run (also computed by bench/ratios.py from the JSON). With
// MOSAIQ_BENCH_PROFILE=<runs> set, both are also timed layer by layer and printed side by side.
//
// selfie_{256,144x256}_{u8,i8}: MediaPipe's selfie segmentation models, one thread, in their own translation unit
// (bench/network_selfie.cpp), built when CMake finds the npm packages; shared helpers are in network_rows.hpp.
//
// `<case>_banded` rows run the same weights through the network's row-band plan (net/bands.hpp, one
// thread), checked byte for byte against layer by layer; `--memory_table` prints the peak activation
// memory of each plan beside XNNPACK's op-by-op buffers and TFLite's arena planner, and exits.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#if MOSAIQ_BENCH_FACE
#include "../examples/face_detection/image.hpp"
#endif
#include "../examples/portrait_segmentation/portrait_net.hpp"
#include "baselines.hpp"
#include "common.hpp"
#include "network_rows.hpp"
#if MOSAIQ_BENCH_XNNPACK
#include "xnnpack_net.hpp"
#endif
#if MOSAIQ_BENCH_SELFIE
#include "network_selfie.hpp"
#endif

namespace mosaiq::bench {
namespace {

template <quantized_element T>
struct portrait_problem {
  using net = portrait::network<T>;
  std::unique_ptr<typename net::weights> weights = std::make_unique<typename net::weights>();
  std::optional<typename net::prepared> prepared;
  aligned_buffer<T> input{net::input_shape.elements()}, output{net::output_shape.elements()};
  aligned_buffer<std::byte> arena{net::arena_bytes};
  std::array<double, mosaiq_examples::max_threads + 1> mosaiq_ms{};  ///< per frame by threads, once that row ran

  portrait_problem() {
    if (!portrait::make_weights<T>(*weights)) throw std::runtime_error("portrait::make_weights failed");
    prepared.emplace(net::prepare(*weights));
    const std::vector<std::uint8_t> rgb = portrait::synthetic_portrait();
    for (std::size_t i = 0; i < rgb.size(); ++i) input.data()[i] = portrait::from_rgb<T>(rgb[i]);
    run();
  }
  void run() {
    serial_executor serial;
    run(serial);
  }
  template <parallel_executor E>
  void run(E& exec) {
    net::run(*prepared, tensor_view<const T>(input.data(), net::input_shape),
             tensor_view<T>(output.data(), net::output_shape), arena.span(), exec);
  }
  static std::string case_name() { return std::string("portrait_256_") + std::string(element_name<T>()); }
};

template <quantized_element T, class Get>
void register_portrait_rows(Get get, std::shared_ptr<thread_pools> pools,
                            [[maybe_unused]] std::shared_ptr<twin_state<typename portrait_problem<T>::net>> twin) {
  using problem = portrait_problem<T>;
  using net = typename problem::net;
  const int threads = pools->threads;
  const std::string case_name = problem::case_name() + threads_suffix(threads);
  with_clock(threads, register_row("network", "mosaiq", case_name, [get, pools, threads](benchmark::State& state) {
               problem& p = get();
               if (threads > 1)
                 print_thread_profile<net>(problem::case_name() + threads_suffix(threads), *p.prepared,
                                           tensor_view<const T>(p.input.data(), net::input_shape),
                                           tensor_view<T>(p.output.data(), net::output_shape), p.arena.span(),
                                           pools->mosaiq_pool());
               time_frames(
                   state, threads, [&p, &pools] { p.run(pools->mosaiq_pool()); }, net::macs, memory_counters<net>,
                   &p.mosaiq_ms[std::size_t(threads)]);
               state.SetLabel(std::string(simd::to_string(simd::native_isa)) + "; static network, " +
                              std::to_string(net::layer_count) + " layers, " + std::to_string(threads) + " thread(s)");
             }));

#if MOSAIQ_BENCH_XNNPACK
  with_clock(
      threads, register_row("network", "xnnpack", case_name, [get, twin, pools, threads](benchmark::State& state) {
        problem& p = get();
        if (!twin->twin && twin->error.empty()) {
          try {
            twin->twin.emplace(xnnpack::from_network<net>(*p.weights));
            auto& ops = *twin->twin->ops;
            std::copy_n(p.input.data(), p.input.size(), ops.values(twin->twin->input()).data());
            ops.run();
            // Same function? Mask pixels (argmax of the two classes) and probabilities against mosaiq's.
            const std::span<const T> got = ops.values(twin->twin->output());
            const std::span<const T> want = p.output.span();
            const output_match m = compare_outputs<T>(got, want);
            std::size_t agree = 0, pixels = want.size() / 2;
            double abs_diff = 0;
            T lo = got[0], hi = got[0];
            for (std::size_t i = 0; i < pixels; ++i) {
              agree += (got[2 * i + 1] > got[2 * i]) == (want[2 * i + 1] > want[2 * i]);
              abs_diff += std::abs(int(got[2 * i + 1]) - int(want[2 * i + 1]));
              lo = std::min({lo, got[2 * i], got[2 * i + 1]}), hi = std::max({hi, got[2 * i], got[2 * i + 1]});
            }
            const double agreement = double(agree) / double(pixels);
            char text[192];
            std::snprintf(text, sizeof text,
                          "%s, %zu operators; vs mosaiq: mask %.2f%% equal, probability mean|diff| %.2f LSB, max %d",
                          std::same_as<T, u8> ? "qu8" : "qc8/qs8 (softmax qu8 between sign flips)",
                          ops.operator_count(), 100.0 * agreement, abs_diff / double(pixels), m.max_abs_diff);
            twin->label = text;
            if (hi - lo < 16 || agreement < 0.9)
              twin->error = std::string("XNNPACK output implausible (constant, or far from mosaiq's): ") + text;
            else
              print_layer_comparison(p, *twin->twin);
          } catch (const std::exception& e) {
            twin->error = e.what();
          }
        }
        if (!twin->error.empty()) {
          state.SkipWithError(twin->error.c_str());
          return;
        }
        const xnnpack::op_network<T>& ops = *twin->twin->ops;
        const pthreadpool_t pool = pools->xnnpack_pool();
        time_frames(
            state, threads, [&ops, pool] { ops.run(pool); }, net::macs,
            [&p, &ops, threads](benchmark::State& s, double ms) {
              s.counters["activation_bytes"] = double(ops.activation_bytes());
              if (p.mosaiq_ms[std::size_t(threads)] > 0)
                s.counters["xnnpack/mosaiq"] = ms / p.mosaiq_ms[std::size_t(threads)];
            },
            nullptr);
        state.SetLabel(twin->label);
      }));
#endif
}

static_assert(portrait::banded_network<u8>::banded && portrait::banded_network<u8>::band_saved_bytes > 0);

template <quantized_element T>
void register_portrait(const std::vector<int>& thread_counts) {
  using problem = portrait_problem<T>;
  // Built on first use: the weights are calibrated in float (about 0.2 s), which a filter that
  // skips these rows should not pay.
  auto shared = std::make_shared<std::optional<problem>>();
  auto get = [shared]() -> problem& {
    if (!shared->has_value()) shared->emplace();
    return **shared;
  };
  auto twin = std::make_shared<twin_state<typename problem::net>>();
  for (const int threads : thread_counts) {
    register_portrait_rows<T>(get, std::make_shared<thread_pools>(threads), twin);
    // `portrait_256_<t>_banded`: portrait::banded_network on the same weights and frame; `banded/plain` is its time
    // over the one-thread layer-by-layer row of the same run.
    if (threads == 1)
      register_banded_row<portrait::banded_network<T>>(
          problem::case_name(), [get] { return &get(); }, [](const problem& p) { return p.mosaiq_ms[1]; });
  }
}

#if MOSAIQ_BENCH_FACE
// ---------------------------------------------------------------------------------------------
// face_512_{u8,i8}: face-api's pretrained SSD-MobileNetV1 face detector (examples/face_detection;
// 512x512x3, 3.3 G MACs, 12 predictor outputs), the model converted by face_convert
// (MOSAIQ_FACE_MODEL_DIR, scripts/bench sets it) on the package's sample1.jpg
// (MOSAIQ_FACE_API_DIR). The network rows time the network alone (XNNPACK has no SSD
// post-processing); `face_512_*_postprocess` times mosaiq's decoding + NMS of the same frame.

template <quantized_element T>
struct face_problem {
  using net = face::ssd_mobilenet_v1<T>;
  std::unique_ptr<face::model<T>> model = std::make_unique<face::model<T>>();
  std::unique_ptr<face::detector<T>> detector;
  std::vector<T> input;
  std::array<face::detection, 100> faces{};
  std::size_t face_count = 0;
  std::array<double, mosaiq_examples::max_threads + 1> mosaiq_ms{};  ///< per frame by threads, once that row ran

  face_problem() {
    const char* models = std::getenv("MOSAIQ_FACE_MODEL_DIR");
    const char* package = std::getenv("MOSAIQ_FACE_API_DIR");
    if (models == nullptr || package == nullptr)
      throw std::runtime_error(
          "set MOSAIQ_FACE_MODEL_DIR (face_convert output) and MOSAIQ_FACE_API_DIR (scripts/bench does)");
    face::load_model(std::string(models) + "/face_" + std::string(element_name<T>()) + ".mosaiq", *model);
    detector = std::make_unique<face::detector<T>>(*model);
    input =
        face::to_network_elements<T>(face::network_input(face::load_rgb(std::string(package) + "/demo/sample1.jpg")));
    run();
    face_count = detector->postprocess({}, faces);
  }
  tensor_view<const T> input_view() const { return tensor_view<const T>(input.data(), net::input_shape); }
  void run() {
    serial_executor serial;
    run(serial);
  }
  template <parallel_executor E>
  void run(E& exec) {
    detector->detect(input_view(), {}, std::span<face::detection>(faces.data(), 0), exec);
  }
  static std::string case_name() { return std::string("face_512_") + std::string(element_name<T>()); }
};

template <quantized_element T>
using face_shared = lazy_problem<face_problem<T>>;

template <quantized_element T>
void register_face_rows(std::shared_ptr<face_shared<T>> shared, std::shared_ptr<thread_pools> pools,
                        [[maybe_unused]] std::shared_ptr<twin_state<typename face_problem<T>::net>> twin) {
  using problem = face_problem<T>;
  using net = typename problem::net;
  const int threads = pools->threads;
  const std::string case_name = problem::case_name() + threads_suffix(threads);
  with_clock(threads, register_row("network", "mosaiq", case_name, [shared, pools, threads](benchmark::State& state) {
               problem* p = shared->get();
               if (p == nullptr) return state.SkipWithError(shared->error.c_str());
               time_frames(
                   state, threads, [p, &pools] { p->run(pools->mosaiq_pool()); }, net::macs, memory_counters<net>,
                   &p->mosaiq_ms[std::size_t(threads)]);
               state.SetLabel(std::string(simd::to_string(simd::native_isa)) + "; " + std::to_string(p->face_count) +
                              " faces on sample1.jpg, " + std::to_string(threads) + " thread(s)");
             }));
  if (threads == 1)
    register_row("network", "mosaiq", problem::case_name() + "_postprocess", [shared](benchmark::State& state) {
      problem* p = shared->get();
      if (p == nullptr) return state.SkipWithError(shared->error.c_str());
      for (auto _ : state) benchmark::DoNotOptimize(p->detector->postprocess({}, p->faces));
      state.counters["postprocess_scratch_bytes"] = double(sizeof(face::postprocess_scratch));
    })->Unit(benchmark::kMicrosecond);
#if MOSAIQ_BENCH_XNNPACK
  with_clock(threads,
             register_row("network", "xnnpack", case_name, [shared, twin, pools, threads](benchmark::State& state) {
               problem* p = shared->get();
               if (p == nullptr) return state.SkipWithError(shared->error.c_str());
               if (!twin->twin && twin->error.empty()) {
                 try {
                   twin->twin.emplace(xnnpack::from_network<net>(p->model->weights));
                   auto& ops = *twin->twin->ops;
                   std::copy_n(p->input.data(), p->input.size(), ops.values(twin->twin->input()).data());
                   ops.run();
                   // Same function? The class logits of the last head and the first head's, against mosaiq's.
                   p->run();
                   const auto compare = [&](std::size_t tensor, std::span<const T> want) {
                     return compare_outputs<T>(ops.values(twin->twin->tensors[tensor]), want);
                   };
                   const auto cls0 = net::template output_view<"cls0">(p->detector->arena());
                   const output_match m0 =
                       compare(net::template tensor_named<"cls0">,
                               std::span<const T>(cls0.data(), net::template tensor_shape<"cls0">.elements()));
                   char text[160];
                   std::snprintf(text, sizeof text, "%s, %zu operators; vs mosaiq: first class head max|diff| %d LSB",
                                 std::same_as<T, u8> ? "qu8" : "qc8/qs8", ops.operator_count(), m0.max_abs_diff);
                   twin->label = text;
                   if (m0.max_abs_diff > 64) twin->error = std::string("XNNPACK output far from mosaiq's: ") + text;
                 } catch (const std::exception& e) {
                   twin->error = e.what();
                 }
               }
               if (!twin->error.empty()) return state.SkipWithError(twin->error.c_str());
               const xnnpack::op_network<T>& ops = *twin->twin->ops;
               const pthreadpool_t pool = pools->xnnpack_pool();
               time_frames(
                   state, threads, [&ops, pool] { ops.run(pool); }, net::macs,
                   [p, &ops, threads](benchmark::State& s, double ms) {
                     s.counters["activation_bytes"] = double(ops.activation_bytes());
                     const double mine = p->mosaiq_ms[std::size_t(threads)];
                     if (mine > 0) s.counters["xnnpack/mosaiq"] = ms / mine;
                   },
                   nullptr);
               state.SetLabel(twin->label);
             }));
#endif
}

/// The face detector's banded plan: the first layers (the 256x256 and 128x128 maps) run in bands of one
/// output row, the plan `banding::automatic(35)` picks (README, "Row bands"); planned for one thread (the
/// examples' input plans workspace slices for mosaiq_examples::max_threads), so it has one-thread rows only.
inline constexpr banding face_banding = banding::chain(0, 11, 1);
template <quantized_element T>
using face_banded_net =
    typename on_input<face::ssd_mobilenet_v1<T>, typename input<T, face::input_size, face::input_size,
                                                                3>::template with_banding<face_banding>>::type;

/// `face_512_<t>_banded`: the same weights and frame through the banded plan (its arena in the counters);
/// the first run is compared byte for byte with the layer-by-layer output of the detector.
template <quantized_element T>
struct face_banded {
  using net = face_banded_net<T>;
  using whole = typename face_problem<T>::net;
  std::unique_ptr<typename net::weights> weights = std::make_unique<typename net::weights>();
  std::optional<typename net::prepared> prepared;
  aligned_buffer<T> output{net::output_shape.elements()};
  aligned_buffer<std::byte> arena{net::arena_bytes};

  explicit face_banded(const face_problem<T>& p) {
    weights->input = p.model->weights.input;
    weights->layers = p.model->weights.layers;
    prepared.emplace(net::prepare(*weights));
    run(p);
    aligned_buffer<T> want{whole::output_shape.elements()};
    aligned_buffer<std::byte> whole_arena{whole::arena_bytes};
    serial_executor serial;
    whole::run(whole::prepare(p.model->weights), p.input_view(), tensor_view<T>(want.data(), whole::output_shape),
               whole_arena.span(), serial);
    if (!std::equal(output.data(), output.data() + net::output_shape.elements(), want.data()))
      throw std::runtime_error("banded face detector differs from layer by layer");
  }
  template <parallel_executor E = serial_executor>
  void run(const face_problem<T>& p, E&& exec = E{}) {
    net::run(*prepared, p.input_view(), tensor_view<T>(output.data(), net::output_shape), arena.span(), exec);
  }
};
static_assert(face_banded_net<i8>::banded && face_banded_net<i8>::band_saved_bytes > 0);

template <quantized_element T>
void register_face_banded_row(std::shared_ptr<face_shared<T>> shared, std::shared_ptr<thread_pools> pools) {
  using net = face_banded_net<T>;
  const int threads = pools->threads;
  const std::string case_name = face_problem<T>::case_name() + "_banded" + threads_suffix(threads);
  auto banded = std::make_shared<std::optional<face_banded<T>>>();
  auto error = std::make_shared<std::string>();
  with_clock(threads, register_row("network", "mosaiq", case_name, [=](benchmark::State& state) {
               face_problem<T>* p = shared->get();
               if (p == nullptr) return state.SkipWithError(shared->error.c_str());
               if (!*banded && error->empty()) {
                 try {
                   banded->emplace(*p);
                 } catch (const std::exception& e) {
                   *error = e.what();
                 }
               }
               if (!error->empty()) return state.SkipWithError(error->c_str());
               face_banded<T>& b = **banded;
               time_frames(
                   state, threads, [&b, p, &pools] { b.run(*p, pools->mosaiq_pool()); }, net::macs,
                   [](benchmark::State& s, double ms) {
                     memory_counters<net>(s, ms);
                     s.counters["band_saved_bytes"] = double(net::band_saved_bytes);
                   },
                   nullptr);
               state.SetLabel(std::string(simd::to_string(simd::native_isa)) + "; layers " +
                              std::to_string(net::band_first_layer) + ".." + std::to_string(net::band_last_layer) +
                              " in bands of " + std::to_string(net::band_rows) + " row(s), " + std::to_string(threads) +
                              " thread(s)");
             }));
}

template <quantized_element T>
void register_face(const std::vector<int>& thread_counts) {
  auto shared = std::make_shared<face_shared<T>>();
  auto twin = std::make_shared<twin_state<typename face_problem<T>::net>>();
  for (const int threads : thread_counts) {
    auto pools = std::make_shared<thread_pools>(threads);
    register_face_rows<T>(shared, pools, twin);
    if (threads == 1) register_face_banded_row<T>(shared, pools);
  }
}

#endif

// ---------------------------------------------------------------------------------------------
// --memory_table: peak activation memory of the same networks by plan (README, "Row bands").

void print_memory_table() {
  std::printf(
      "| network | mosaiq layer by layer | mosaiq banded | XNNPACK op by op (every tensor) | TFLite arena "
      "(intermediates) | input + output |\n|---|---:|---:|---:|---:|---:|\n");
  print_memory_row<portrait::banded_network<u8>>("portrait 256 (u8, i8)");
#if MOSAIQ_BENCH_FACE
  print_memory_row<face_banded_net<u8>>("face 512 (u8, i8)");
#endif
#if MOSAIQ_BENCH_SELFIE
  print_selfie_memory_rows();
#endif
}

void register_all(const std::vector<int>& thread_counts) {
  register_portrait<u8>(thread_counts);
  register_portrait<i8>(thread_counts);
#if MOSAIQ_BENCH_FACE
  register_face<u8>(thread_counts);
  register_face<i8>(thread_counts);
#endif
#if MOSAIQ_BENCH_SELFIE
  register_selfie(thread_counts);
#endif
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  // --threads N: the one-thread rows and, for N > 1, the same rows on N threads (`_t<N>`).
  const int threads = mosaiq_examples::take_threads_flag(argc, argv);
  if (threads == 0) {
    std::fprintf(stderr, "bench_network: --threads takes 1..%d\n", mosaiq_examples::max_threads);
    return 2;
  }
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--memory_table") {
      mosaiq::bench::print_memory_table();
      return 0;
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  mosaiq::bench::setup_baselines("mosaiq::network (examples/portrait_segmentation/portrait_net.hpp)");
  std::vector<int> thread_counts{1};
  if (threads > 1) thread_counts.push_back(threads);
  mosaiq::bench::register_all(thread_counts);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
