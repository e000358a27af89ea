// bench_pointwise: quantized 1x1 convolution plus MobileNet's 3x3 stride-2 stem (the network's
// other dense convolution), `pointwise/<impl>/<case>`, one thread, u8 and i8 workloads on mosaiq
// (mosaiq::pointwise for the 1x1 cases, mosaiq::conv2d for the stem, which runs the same GEMM on
// patches gathered on the fly), XNNPACK and oneDNN, each checked against mosaiq::reference (mosaiq
// bit for bit).
// `pointwise/mosaiq/...` rows run the vector path of the build (AMX turned off while loading);
// `pointwise/mosaiq_amx/...` rows the AMX tile path of the same build where the CPU and the OS have
// AMX (simd/amx.hpp), else they report why not.
// `pointwise/mosaiq/<case>_i16x8` rows: mosaiq::pointwise16x8 (TFLite's 16x8 mode: int16 activations, int8
// per-channel filters, int64 biases) on three of the selfie model's 1x1 shapes, each beside the i8 row of the same
// shape, checked bit for bit against reference::pointwise_conv_16x8. XNNPACK has no 16x8 convolution operator (its
// convolutions take f32, f16, qc8, qs8 and qu8), so these rows have no baseline beside them.
// `--threads N` adds `pointwise/mosaiq/<case>_t<N>` for the 1x1 cases: the vector path in row bands
// on a mosaiq::thread_pool of N threads (wall-clock time).
// `pointwise/peak/vpdpbusd` is the AVX512-VNNI ceiling of this core: back-to-back independent
// vpdpbusd zmm, 64 MACs each; divide a row's GMAC/s by it for the share of peak. Builds with
// AVX-VNNI (-mavxvnni, or -march=native on such CPUs) add `pointwise/peak/vpdpbusd_ymm`, the
// ceiling of the avx2_vnni build's 256-bit microkernel.
#include "mosaiq/ops/pointwise.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "../examples/common/threads.hpp"
#include "baselines.hpp"
#include "common.hpp"
#include "mosaiq/ops/conv.hpp"
#include "mosaiq/ops/pointwise16x8.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/simd/amx.hpp"
#include "problem_16x8.hpp"

#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
#include <immintrin.h>
#endif

namespace mosaiq::bench {
namespace {

// MobileNet v1's pointwise layers (32->64 at 112x112 up to 1024->1024 at 7x7) and its 3x3 stem.
const std::array pointwise_cases{
    conv_shape::dense(112, 112, 32, 64), conv_shape::dense(56, 56, 128, 128),
    conv_shape::dense(28, 28, 256, 256), conv_shape::dense(14, 14, 512, 512),
    conv_shape::dense(7, 7, 1024, 1024), conv_shape::dense(224, 224, 3, 32, {3, 3}, {2, 2}),
};

#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
/// 12 independent vpdpbusd chains, enough to hide a 4-5 cycle latency on two ports, so the loop is
/// bound by issue throughput only. Named accumulators, not an array, so that they stay in registers.
/// Isa: the vector type, `dot` (one vpdpbusd in place), `splat32`, `splat8`, `add`, `macs`, `label`.
template <class Isa>
void peak_chains(benchmark::State& state) {
  using vec = typename Isa::vec;
  constexpr int chains = 12, unroll = 100;
  // Distinct start values, so no two chains are the same computation.
  vec a0 = Isa::splat32(0), a1 = Isa::splat32(1), a2 = Isa::splat32(2), a3 = Isa::splat32(3), a4 = Isa::splat32(4),
      a5 = Isa::splat32(5), a6 = Isa::splat32(6), a7 = Isa::splat32(7), a8 = Isa::splat32(8), a9 = Isa::splat32(9),
      a10 = Isa::splat32(10), a11 = Isa::splat32(11);
  const vec u8s = Isa::splat8(3), s8s = Isa::splat8(-2);
  for (auto _ : state) {
    for (int i = 0; i < unroll; ++i) {
      Isa::dot(a0, u8s, s8s), Isa::dot(a1, u8s, s8s), Isa::dot(a2, u8s, s8s), Isa::dot(a3, u8s, s8s);
      Isa::dot(a4, u8s, s8s), Isa::dot(a5, u8s, s8s), Isa::dot(a6, u8s, s8s), Isa::dot(a7, u8s, s8s);
      Isa::dot(a8, u8s, s8s), Isa::dot(a9, u8s, s8s), Isa::dot(a10, u8s, s8s), Isa::dot(a11, u8s, s8s);
    }
  }
  vec sum = Isa::add(Isa::add(Isa::add(a0, a1), Isa::add(a2, a3)), Isa::add(Isa::add(a4, a5), Isa::add(a6, a7)));
  sum = Isa::add(sum, Isa::add(Isa::add(a8, a9), Isa::add(a10, a11)));
  benchmark::DoNotOptimize(sum);
  set_throughput_counters(state, chains * unroll * Isa::macs, 0);
  state.SetLabel(Isa::label);
}

#endif

#if defined(__AVX512VNNI__)
/// acc += u8 x s8 dot products of 4, one vpdpbusd zmm in place. Inline asm, not
/// _mm512_dpbusd_epi32: GCC 12 copies the accumulator to another register around every call of the
/// intrinsic, and the extra moves would count against the peak this row measures.
inline void vpdpbusd(__m512i& acc, __m512i u8s, __m512i s8s) {
  asm volatile("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8s), "v"(s8s));
}

/// vpdpbusd zmm: 16 lanes x 4 u8*s8 products.
struct zmm_dot {
  using vec = __m512i;
  static constexpr std::int64_t macs = 64;
  static constexpr const char* label = "12 independent vpdpbusd zmm chains, 64 MACs per instruction";
  static void dot(vec& acc, vec u8s, vec s8s) { vpdpbusd(acc, u8s, s8s); }
  static vec splat32(int v) { return _mm512_set1_epi32(v); }
  static vec splat8(char v) { return _mm512_set1_epi8(v); }
  static vec add(vec a, vec b) { return _mm512_add_epi32(a, b); }
};
void peak_vpdpbusd(benchmark::State& state) { peak_chains<zmm_dot>(state); }
#endif

#if defined(__AVXVNNI__)
/// The AVX-VNNI ceiling: the VEX vpdpbusd on ymm, 32 MACs each (what the avx2_vnni build's microkernel
/// issues); `{vex}` (spelled %{vex%} in GCC asm) keeps an AVX-512 assembler from picking the EVEX form.
struct ymm_vex_dot {
  using vec = __m256i;
  static constexpr std::int64_t macs = 32;
  static constexpr const char* label = "12 independent VEX vpdpbusd ymm chains, 32 MACs per instruction";
  static void dot(vec& acc, vec u8s, vec s8s) {
    asm volatile("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u8s), "x"(s8s));
  }
  static vec splat32(int v) { return _mm256_set1_epi32(v); }
  static vec splat8(char v) { return _mm256_set1_epi8(v); }
  static vec add(vec a, vec b) { return _mm256_add_epi32(a, b); }
};
void peak_vpdpbusd_ymm(benchmark::State& state) { peak_chains<ymm_vex_dot>(state); }
#endif

/// The 1x1 cases as compile-time values: the mosaiq kernel is a template on its output channels.
struct pointwise_case {
  int height, width, input_channels, output_channels;
};
constexpr std::array mosaiq_cases{
    pointwise_case{112, 112, 32, 64},
    pointwise_case{56, 56, 128, 128},
    pointwise_case{28, 28, 256, 256},
    pointwise_case{14, 14, 512, 512},
    pointwise_case{7, 7, 1024, 1024},
    // The selfie segmentation models' small-channel layers (issue 19): 16-24 input channels on large maps.
    pointwise_case{128, 128, 16, 16},
    pointwise_case{64, 64, 16, 72},
    pointwise_case{64, 64, 24, 16},
};

template <int OutChannels, quantized_element T, bool Amx = false>
conv_runner<T> make_mosaiq(const conv_problem<T>& p) {
  return layer_runner<pointwise<pointwise_config{.out_channels = OutChannels}, T>, T, Amx>(p, "mosaiq::pointwise");
}

/// The 3x3 stride-2 SAME stem as mosaiq::conv2d (the only non-1x1 case).
constexpr conv2d_config stem_config{.out_channels = 32, .kernel = {3, 3}, .stride = {2, 2}};

template <quantized_element T, bool Amx = false>
conv_runner<T> make_mosaiq_stem(const conv_problem<T>& p) {
  return layer_runner<conv2d<stem_config, T>, T, Amx>(p, "mosaiq::conv2d");
}

/// `pointwise/mosaiq_amx/<case>`: the AMX path, bit for bit like the VNNI rows, or why it is missing.
template <quantized_element T, class Make>
void register_amx_row(const std::shared_ptr<conv_problem<T>>& problem, Make make) {
  if (simd::amx::available())
    register_conv_row<T>("pointwise", "mosaiq_amx", problem, make, 0);
  else
    register_unavailable("pointwise", "mosaiq_amx", problem->shape.template case_name<T>(),
                         std::string("AMX not available: ") + simd::amx::status().reason);
}

template <quantized_element T>
void register_case(const conv_shape& shape, std::uint32_t seed) {
  auto problem = std::make_shared<conv_problem<T>>(shape, seed);
  const bool is_stem = shape.kernel == stem_config.kernel && shape.stride == stem_config.stride &&
                       shape.output_channels == stem_config.out_channels;
  if (is_stem) {
    register_conv_row<T>("pointwise", "mosaiq", problem, make_mosaiq_stem<T>, 0);
    register_amx_row<T>(problem, make_mosaiq_stem<T, true>);
  }
  register_baseline_rows<T>("pointwise", problem);
}

template <pointwise_case Case, quantized_element T>
void register_mosaiq_case(std::uint32_t seed, int threads) {
  const conv_shape shape = conv_shape::dense(Case.height, Case.width, Case.input_channels, Case.output_channels);
  auto problem = std::make_shared<conv_problem<T>>(shape, seed);
  // mosaiq implements the reference's rounding, so it must match bit for bit.
  register_conv_row<T>("pointwise", "mosaiq", problem, make_mosaiq<Case.output_channels, T>, 0);
  if (threads > 1) {
    const auto make = [threads](const conv_problem<T>& p) {
      using op_type = pointwise<pointwise_config{.out_channels = Case.output_channels}, T>;
      const simd::amx::scoped_enabled choice(false);
      auto op = std::make_shared<const op_type>(p.filter.data(), p.bias.data(), p.shape.input_channels, p.requant);
      return parallel_runner<op_type, T>(op, p, threads, "mosaiq::pointwise " + path_label(false, op_type::tile()));
    };
    register_conv_row<T>("pointwise", "mosaiq", problem, make, 0, threads);
  }
  register_amx_row<T>(problem, make_mosaiq<Case.output_channels, T, true>);
  register_baseline_rows<T>("pointwise", problem);
}

// The selfie model's 1x1 shapes the 16x8 rows run (issue 19): the 64x64 expansion, a 32x32 one, a 16x16 projection.
constexpr std::array selfie_16x8_cases{
    pointwise_case{64, 64, 16, 72},
    pointwise_case{32, 32, 24, 96},
    pointwise_case{16, 16, 96, 24},
};

/// `pointwise/mosaiq/<case>_i16x8`: the layer is loaded and checked against the reference on the row's first run.
template <pointwise_case Case>
void register_16x8_row(std::uint32_t seed) {
  using op_type = pointwise16x8<pointwise16x8_config{.out_channels = Case.output_channels}>;
  const conv_shape shape = conv_shape::dense(Case.height, Case.width, Case.input_channels, Case.output_channels);
  register_16x8_row<op_type>("pointwise", shape, seed,
                             "mosaiq::pointwise16x8 " + std::to_string(op_type::tile()) + "x16");
}

/// The 16x8 rows, and the i8 rows of their shapes that the 1x1 cases above do not register already.
template <std::size_t... I>
void register_16x8_cases(std::uint32_t& seed, int threads, std::index_sequence<I...>) {
  constexpr auto registered_above = [](pointwise_case c) {
    for (const pointwise_case& m : mosaiq_cases)
      if (m.height == c.height && m.width == c.width && m.input_channels == c.input_channels &&
          m.output_channels == c.output_channels)
        return true;
    return false;
  };
  (
      [&] {
        if constexpr (!registered_above(selfie_16x8_cases[I]))
          register_mosaiq_case<selfie_16x8_cases[I], i8>(seed++, threads);
        register_16x8_row<selfie_16x8_cases[I]>(seed++);
      }(),
      ...);
}

template <std::size_t... I>
void register_mosaiq_cases(std::uint32_t& seed, int threads, std::index_sequence<I...>) {
  ((register_mosaiq_case<mosaiq_cases[I], u8>(seed, threads), ++seed,
    register_mosaiq_case<mosaiq_cases[I], i8>(seed, threads), ++seed),
   ...);
}

void register_all(int threads) {
#if defined(__AVX512VNNI__)
  register_row("pointwise", "peak", "vpdpbusd", peak_vpdpbusd);
#else
  register_unavailable("pointwise", "peak", "vpdpbusd", "built without AVX512-VNNI (see MOSAIQ_BENCH_FLAGS)");
#endif
#if defined(__AVXVNNI__)
  register_row("pointwise", "peak", "vpdpbusd_ymm", peak_vpdpbusd_ymm);
#endif
  // Seeds follow registration order, so every run (and every filter) sees the same data per case.
  std::uint32_t seed = 100;
  register_mosaiq_cases(seed, threads, std::make_index_sequence<mosaiq_cases.size()>{});
  for (const conv_shape& shape : pointwise_cases) {
    if (shape.kernel == hw{1, 1}) continue;  // registered with its mosaiq row above
    register_case<u8>(shape, seed++);
    register_case<i8>(shape, seed++);
  }
  register_16x8_cases(seed, threads, std::make_index_sequence<selfie_16x8_cases.size()>{});
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  const int threads = mosaiq_examples::take_threads_flag(argc, argv);
  if (threads == 0) return 2;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const std::string context = "mosaiq::pointwise (1x1 cases), mosaiq::conv2d (3x3 stem); mosaiq: the " +
                              std::string(mosaiq::simd::to_string(mosaiq::simd::native_isa)) +
                              " vector path (AMX off while loading), mosaiq_amx: AMX path";
  mosaiq::bench::setup_baselines(context.c_str());
  mosaiq::bench::register_all(threads);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
