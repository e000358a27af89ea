// Banded execution (net/bands.hpp): every banded plan gives the bytes of the layer-by-layer plan, on
// networks with odd heights, strides 2, dilations, SAME and VALID edges, pools, taps inside the chain
// and broadcast taps from before it, on 1..4 threads, with no heap while running.
//
// The whole networks (banded against layer by layer) are the larger part of this unit's compile time and prove
// the plan, the rings and their plumbing, which do not depend on the ISA level: MOSAIQ_TEST_BANDED_NETWORKS=0
// leaves them out of a binary (tests/CMakeLists.txt: every level but the scalar one and one SIMD level per
// architecture). The kernels' window entry points and the portrait arena bounds below stay in every binary.
// MOSAIQ_TEST_BAND_PATH_GRIDS=1 (tests/CMakeLists.txt: the levels of MOSAIQ_TEST_PATH_GRID_ISAS and of
// MOSAIQ_TEST_BAND_PATH_GRID_ISAS, which narrows this unit alone) keeps the networks that run each
// windowed kernel path of the level (every layer kind of the chain network at band heights 1 to 3 and both element
// types, the resizes in a chain, rows split over threads, dead memory poisoned, GEMM blocks bounded) and leaves
// out what is plan logic over the same windows: the other chain lengths and band heights, a chain inside the
// network, the automatic plan's run, two chains, and the 53-layer portrait network.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <type_traits>
#include <vector>

#include "../examples/portrait_segmentation/portrait_net.hpp"
#include "allocation_counter.hpp"
#include "band_layers.hpp"
#include "mosaiq/net.hpp"
#include "mosaiq/ops.hpp"
#include "mosaiq/reference.hpp"
#include "support.hpp"

#ifndef MOSAIQ_TEST_BAND_PATH_GRIDS
#define MOSAIQ_TEST_BAND_PATH_GRIDS MOSAIQ_TEST_PATH_GRIDS
#endif

namespace {

using namespace mosaiq;
namespace L = mosaiq::layers;

using band_layers::conv3x3;
template <int Stride, int Dilation = 1>
using dw3x3 = L::depthwise<L::depthwise_config{
    .stride = {Stride, Stride}, .dilation = {Dilation, Dilation}, .act = activation::relu}>;
template <int Channels>
using pw = L::pointwise<L::pointwise_config{.out_channels = Channels, .act = activation::relu6}>;

// The network the tests run: a broadcast gate from the input, then a chain over every joining kind.
template <class T, int MaxThreads, banding B>
using chain_net =
    network<typename input<T, 37, 29, 5>::template with_max_threads<MaxThreads>::template with_banding<B>,
            L::tap<"in">,              // 0
            L::global_average_pool<>,  // 1: 1x1x5
            pw<16>,                    // 2: 1x1x16
            L::tap<"gate">,            // 3
            L::from<"in">,             // 4
            conv3x3<16, 1>,            // 5: 37x29x16
            dw3x3<2>,                  // 6: 19x15x16 SAME s2
            dw3x3<1, 2>,               // 7: dilation 2
            L::tap<"a">,               // 8
            pw<24>,                    // 9: 19x15x24
            conv3x3<16, 1, 2>,         // 10: dilated conv
            L::add<"a">,               // 11: tap inside the chain
            L::mul<"gate">,            // 12: broadcast tap
            L::tap<"b">,               // 13
            L::max_pool<L::pool_config{.kernel = {3, 3}, .stride = {1, 1}, .pad = padding::same()}>,  // 14
            L::tap<"c">,                                                                              // 15
            L::concat<"b", "c">,                                                                      // 16: 19x15x32
            L::average_pool<L::pool_config{.kernel = {3, 2}, .stride = {2, 2}, .pad = padding::valid()}>,  // 17: 9x7x32
            conv3x3<12, 2>,  // 18: 5x4x12 SAME s2
            L::depthwise<L::depthwise_config{.kernel = {5, 3}, .pad = padding::explicit_pads(2, 1, 1, 1)}>,  // 19: 4x4
            L::softmax<>>;                                                                                   // 20

template <banding B, int MaxThreads = 1>
using u8_net = chain_net<u8, MaxThreads, B>;

static_assert(!u8_net<banding::off()>::banded);
static_assert(u8_net<banding::chain(5, 20, 1)>::banded && u8_net<banding::chain(5, 20, 1)>::band_count == 4);
// The chain's inner maps hold a few rows: the dilated 3x3 conv (layer 10) reads 5 rows of layer 9's map,
// which leads by at most one row more.
static_assert(u8_net<banding::chain(9, 10, 1)>::window_rows[6] >= 5 &&
              u8_net<banding::chain(9, 10, 1)>::window_rows[6] <= 6);
// Bands of two of the 19 rows of layer 16 hold a fraction of the maps.
static_assert(u8_net<banding::chain(5, 16, 2)>::band_saved_bytes > u8_net<banding::off()>::arena_bytes / 4);
static_assert(u8_net<banding::chain(5, 16, 2)>::arena_bytes + u8_net<banding::chain(5, 16, 2)>::band_saved_bytes ==
              u8_net<banding::off()>::arena_bytes);
static_assert(u8_net<banding::chain(5, 16, 2)>::layer_by_layer_arena_bytes == u8_net<banding::off()>::arena_bytes);
static_assert(is_valid_plan(u8_net<banding::chain(5, 20, 3)>::memory_ranges, u8_net<banding::chain(5, 20, 3)>::memory));

/// Whether two plans of one layer list are the same plan: chains, band heights, windows, arena and peak.
template <class A, class B>
constexpr bool same_plan() {
  if (A::band_chain_count != B::band_chain_count || A::arena_bytes != B::arena_bytes ||
      A::peak_live_bytes != B::peak_live_bytes || A::window_rows != B::window_rows)
    return false;
  for (std::size_t c = 0; c < A::band_chains.size(); ++c) {
    const auto a = A::band_chains[c];
    const auto b = B::band_chains[c];
    if (a.first != b.first || a.last != b.last || a.rows != b.rows || a.count != b.count) return false;
  }
  return true;
}

/// The targets whose automatic plans below were checked against the choice before its candidates were evaluated
/// over their own steps (the plans follow the layers' workspaces, which differ between targets).
#define MOSAIQ_TEST_AUTOMATIC_PLANS (MOSAIQ_TARGET_SCALAR || (MOSAIQ_TARGET_AVX2 && !MOSAIQ_TARGET_AVX512))

// The automatic choice's plans (net/network.hpp, automatic_choice), spelled as forced plans.
#if MOSAIQ_TEST_AUTOMATIC_PLANS
static_assert(same_plan<u8_net<banding::automatic(1000)>, u8_net<banding::chain(5, 14, 1)>>());
static_assert(same_plan<u8_net<banding::automatic(300)>, u8_net<banding::chain(5, 14, 4)>>());
#endif
static_assert(same_plan<u8_net<banding::automatic(35)>, u8_net<banding::off()>>());
static_assert(u8_net<banding::automatic(1000)>::arena_bytes < u8_net<banding::off()>::arena_bytes);

#if MOSAIQ_TEST_BANDED_NETWORKS
template <class Net>
std::vector<typename Net::element_type> run_once(const typename Net::weights& w,
                                                 const std::vector<typename Net::element_type>& input) {
  using T = typename Net::element_type;
  const typename Net::prepared p = Net::prepare(w);
  test::aligned_arena arena(Net::arena_bytes);
  std::vector<T> out(Net::output_shape.elements(), T{0x5A});
  Net::run(p, tensor_view<const T>(input.data(), Net::input_shape), tensor_view<T>(out.data(), Net::output_shape),
           arena.bytes);
  return out;
}

/// The same weights for another plan of the same layer list (the blob names the layers only).
template <class To, class From>
typename To::weights same_weights(const typename From::weights& w) {
  std::vector<std::byte> blob(From::blob_bytes);
  REQUIRE(From::save(w, blob) == blob.size());
  typename To::weights out;
  REQUIRE(To::load(blob, out));
  return out;
}

template <class T, int Last, int... Rows>
void check_chain(const typename chain_net<T, 1, banding::off()>::weights& w, const std::vector<T>& input,
                 const std::vector<T>& expected) {
  using whole = chain_net<T, 1, banding::off()>;
  const auto check = [&]<int R>(std::integral_constant<int, R>) {
    using banded = chain_net<T, 1, banding::chain(5, Last, R)>;
    CAPTURE(Last);
    CAPTURE(R);
    CHECK(run_once<banded>(same_weights<banded, whole>(w), input) == expected);
  };
  (check(std::integral_constant<int, Rows>{}), ...);
}

/// Chains of each length from layer 5, odd and even band heights. Every layer kind's windowed kernels run at band
/// heights 1 to 3 for both element types; the other chain lengths and heights are plan logic over the same windows
/// (where a chain ends, which maps it reads whole), the same C++ for both types: uint8 alone runs them, which keeps
/// seven whole networks of int8 out of the unit's compile (docs/decisions.md, "The test suite, part 10").
template <class T>
void check_every_band_height() {
  using whole = chain_net<T, 1, banding::off()>;
  const typename whole::weights w = test::random_weights<whole>(7);
  std::mt19937 rng(3);
  const std::vector<T> input = test::random_values<T>(rng, whole::input_shape.elements());
  const std::vector<T> expected = run_once<whole>(w, input);
  CHECK(std::set<T>(expected.begin(), expected.end()).size() > 4);
  check_chain<T, 20, 1, 2, 3>(w, input, expected);
#if !MOSAIQ_TEST_BAND_PATH_GRIDS
  if constexpr (std::is_same_v<T, u8>) {
    check_chain<T, 6, 1, 2, 3>(w, input, expected);
    check_chain<T, 12, 1, 3>(w, input, expected);
    check_chain<T, 16, 2, 5>(w, input, expected);
  }
#endif
}

TEST_CASE("bands: every chain and band height gives the layer-by-layer bytes (uint8)") {
  check_every_band_height<u8>();
}
TEST_CASE("bands: every layer kind at band heights 1 to 3 gives the layer-by-layer bytes (int8)") {
  check_every_band_height<i8>();
}

#if !MOSAIQ_TEST_BAND_PATH_GRIDS
TEST_CASE("bands: a chain inside the network, taps and the broadcast gate read across bands") {
  using whole = chain_net<u8, 1, banding::off()>;
  using banded = chain_net<u8, 1, banding::chain(9, 16, 2)>;
  static_assert(banded::banded && banded::band_first_layer == 9 && banded::band_last_layer == 16);
  const whole::weights w = test::random_weights<whole>(21);
  std::mt19937 rng(9);
  const std::vector<u8> input = test::random_values<u8>(rng, whole::input_shape.elements());
  CHECK(run_once<banded>(same_weights<banded, whole>(w), input) == run_once<whole>(w, input));
}

TEST_CASE("bands: the automatic plan saves memory and keeps the bytes") {
  using whole = chain_net<u8, 1, banding::off()>;
  // Maps this small cost about as much per layer step as their rows: a loose bound lets bands in.
  using automatic = chain_net<u8, 1, banding::automatic(1000)>;
  static_assert(automatic::banded);
  static_assert(automatic::peak_live_bytes < whole::peak_live_bytes);
  static_assert(automatic::band_overhead_percent <= 1000);
  const whole::weights w = test::random_weights<whole>(5);
  std::mt19937 rng(1);
  const std::vector<u8> input = test::random_values<u8>(rng, whole::input_shape.elements());
  CHECK(run_once<automatic>(same_weights<automatic, whole>(w), input) == run_once<whole>(w, input));
  // A bound no banded plan meets leaves the network layer by layer.
  static_assert(!chain_net<u8, 1, banding::automatic(0)>::banded);
}
#endif  // !MOSAIQ_TEST_BAND_PATH_GRIDS

TEST_CASE("bands: rows within a band split over 1..4 threads, bit-identical, no heap while running") {
  constexpr int max_threads = 4;
  using whole = chain_net<u8, 1, banding::off()>;
  using banded = chain_net<u8, max_threads, banding::chain(5, 20, 3)>;
  const whole::weights w = test::random_weights<whole>(13);
  std::mt19937 rng(2);
  const std::vector<u8> input = test::random_values<u8>(rng, whole::input_shape.elements());
  const std::vector<u8> expected = run_once<whole>(w, input);
  const banded::weights bw = same_weights<banded, whole>(w);
  const banded::prepared p = banded::prepare(bw);
  test::aligned_arena arena(banded::arena_bytes);
  for (int threads = 1; threads <= max_threads + 1; ++threads) {
    CAPTURE(threads);
    thread_pool pool(threads);
    std::vector<u8> got(expected.size(), u8{0x5A});
    const long before = test::heap_allocations();
    banded::run(p, tensor_view<const u8>(input.data(), banded::input_shape),
                tensor_view<u8>(got.data(), banded::output_shape), arena.bytes, pool);
    CHECK(test::heap_allocations() == before);
    CHECK(got == expected);
  }
}

// Depthwise layers keeping their rings between bands (banding::with_kept_rings: layers 6, stride 2, and 19,
// stride 1; the dilated layer 7 builds its rows afresh): the bytes of layer by layer for every band height, on a
// second frame of other values through the same arena (its first band must not resume the first frame's ring),
// on 1..4 threads (the other layers' rows split, the ring-keeping ones on one) and with dead memory poisoned. Their
// input windows omit the rows the rings hold, so a band that did not resume would read rows outside its window.
template <class T>
void check_kept_rings() {
  using whole = chain_net<T, 1, banding::off()>;
  const typename whole::weights w = test::random_weights<whole>(29);
  std::mt19937 rng(6);
  const std::vector<T> first = test::random_values<T>(rng, whole::input_shape.elements());
  const std::vector<T> second = test::random_values<T>(rng, whole::input_shape.elements());
  const std::vector<T> expected = run_once<whole>(w, second);
  const auto check = [&]<int R>(std::integral_constant<int, R>) {
    using banded = chain_net<T, 1, banding::chain(5, 20, R).with_kept_rings(2)>;
    static_assert(banded::arena_bytes > chain_net<T, 1, banding::chain(5, 20, R)>::arena_bytes);
    CAPTURE(R);
    const typename banded::prepared p = banded::prepare(same_weights<banded, whole>(w));
    test::aligned_arena arena(banded::arena_bytes);
    std::vector<T> got(expected.size(), T{0x5A});
    for (const std::vector<T>* input : {&first, &second})
      banded::run(p, tensor_view<const T>(input->data(), banded::input_shape),
                  tensor_view<T>(got.data(), banded::output_shape), arena.bytes);
    CHECK(got == expected);
  };
  check(std::integral_constant<int, 1>{});
  check(std::integral_constant<int, 2>{});
  check(std::integral_constant<int, 3>{});
}

TEST_CASE("bands: depthwise rings kept between bands give the layer-by-layer bytes (uint8, int8)") {
  check_kept_rings<u8>();
  check_kept_rings<i8>();
}

TEST_CASE("bands: kept rings on 1..4 threads and with dead memory poisoned") {
  constexpr int max_threads = 4;
  using whole = chain_net<u8, 1, banding::off()>;
  using banded = chain_net<u8, max_threads, banding::chain(5, 20, 2).with_kept_rings(2)>;
  const whole::weights w = test::random_weights<whole>(31);
  std::mt19937 rng(8);
  const std::vector<u8> input = test::random_values<u8>(rng, whole::input_shape.elements());
  const std::vector<u8> expected = run_once<whole>(w, input);
  const banded::prepared p = banded::prepare(same_weights<banded, whole>(w));
  test::aligned_arena arena(banded::arena_bytes);
  for (int threads = 1; threads <= max_threads; ++threads) {
    CAPTURE(threads);
    thread_pool pool(threads);
    std::vector<u8> got(expected.size(), u8{0x5A});
    banded::run(p, tensor_view<const u8>(input.data(), banded::input_shape),
                tensor_view<u8>(got.data(), banded::output_shape), arena.bytes, pool);
    CHECK(got == expected);
  }
  std::vector<u8> got(expected.size(), u8{0x5A});
  banded::run_poisoning_dead_memory(p, tensor_view<const u8>(input.data(), banded::input_shape),
                                    tensor_view<u8>(got.data(), banded::output_shape), arena.bytes);
  CHECK(got == expected);
}

TEST_CASE("bands: no layer reads memory the banded plan holds dead") {
  using whole = chain_net<u8, 1, banding::off()>;
  using banded = chain_net<u8, 1, banding::chain(5, 20, 2)>;
  const whole::weights w = test::random_weights<whole>(17);
  std::mt19937 rng(4);
  const std::vector<u8> input = test::random_values<u8>(rng, whole::input_shape.elements());
  const banded::weights bw = same_weights<banded, whole>(w);
  test::aligned_arena arena(banded::arena_bytes);
  std::vector<u8> got(banded::output_shape.elements());
  banded::run_poisoning_dead_memory(banded::prepare(bw), tensor_view<const u8>(input.data(), banded::input_shape),
                                    tensor_view<u8>(got.data(), banded::output_shape), arena.bytes);
  CHECK(got == run_once<whole>(w, input));
}
#endif  // MOSAIQ_TEST_BANDED_NETWORKS

/// A window entry point on image rows 4..5 of a 10-row image (they read rows 3..6 through a 3x3 SAME
/// window): a window from row 4 misses row 3 and is reported with nothing written; one from row 3 runs.
template <class Kernel>
void check_window_misuse(const Kernel& kernel, std::size_t workspace_bytes) {
  const shape image{10, 6, 8};
  std::vector<u8> in(image.elements(), u8{7}), out(2 * 6 * 8, u8{0x5A});
  std::vector<std::byte> workspace(workspace_bytes);
  const tensor_view<const u8> window(in.data(), shape{6, 6, 8});
  const tensor_view<u8> band_out(out.data(), shape{2, 6, 8});
  test::recording_handler errors;
  kernel.run_rows_window(window, 4, image.height, band_out, workspace, row_band{4, 6});
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == errc::shape_mismatch);
  CHECK(std::all_of(out.begin(), out.end(), [](u8 v) { return v == 0x5A; }));
  errors.reset();
  kernel.run_rows_window(window, 3, image.height, band_out, workspace, row_band{4, 6});
  CHECK(errors.calls() == 0);
  CHECK(std::any_of(out.begin(), out.end(), [](u8 v) { return v != 0x5A; }));
}

TEST_CASE("bands: a window that misses rows a band reads is reported and nothing is written") {
  const std::array<float, 1> filter_scale{0.01f};
  const auto q = reference::make_conv_requant<rounding::tflite_reference, u8>({0.02f, 128}, filter_scale, 128,
                                                                              {0.05f, 100}, activation::none);
  const std::vector<u8> filter(9 * 8 * 8, u8{140});
  const std::vector<std::int32_t> bias(8, 0);
  using dw = mosaiq::depthwise<mosaiq::depthwise_config{}, u8>;
  check_window_misuse(dw(filter.data(), bias.data(), 8, q), dw::workspace_bytes({10, 6, 8}));
  using conv = mosaiq::conv2d<mosaiq::conv2d_config{.out_channels = 8}, u8>;
  check_window_misuse(conv(filter.data(), bias.data(), 8, q), conv::band_workspace_bytes({10, 6, 8}, 2));
}

// A depthwise layer `Cfg` on a 10x6x24 uint8 image, its whole-layer output (expected) and windows of input rows and
// output rows (got) for resume_rows_window.
template <depthwise_config Cfg>
struct resume_fixture {
  using dw = mosaiq::depthwise<Cfg, u8>;
  shape image{10, 6, 24};
  std::mt19937 rng;
  std::vector<u8> filter, in;
  std::vector<std::int32_t> bias = std::vector<std::int32_t>(24, 300);
  dw kernel;
  std::vector<u8> expected = std::vector<u8>(image.elements()), got = std::vector<u8>(image.elements(), u8{0x5A});
  std::vector<std::byte> workspace = std::vector<std::byte>(dw::workspace_bytes(image));

  explicit resume_fixture(unsigned seed)
      : rng(seed),
        filter(test::random_values<u8>(rng, std::size_t(Cfg.kernel.h * Cfg.kernel.w * 24))),
        in(test::random_values<u8>(rng, image.elements())),
        kernel(filter.data(), bias.data(), 24,
               reference::make_conv_requant<rounding::tflite_reference, u8>({0.02f, 128}, std::array<float, 1>{0.01f},
                                                                            128, {0.05f, 100}, activation::none)) {
    kernel(tensor_view<const u8>(in.data(), image), tensor_view<u8>(expected.data(), image), workspace);
  }
  tensor_view<const u8> rows(int first, int count) const {
    return {in.data() + std::size_t(first) * 6 * 24, shape{count, 6, 24}};
  }
  tensor_view<u8> out_rows(int first, int count) {
    return {got.data() + std::size_t(first) * 6 * 24, shape{count, 6, 24}};
  }
};

// A depthwise layer resuming its ring (resume_rows_window): rows 0..2 of a 10-row image, then rows 3..5 from a
// window that starts after the rows the ring still holds (rows 2 and 3 were built for the first band): the bytes of
// the whole layer. A window that misses a row the ring does not hold is reported and nothing is written.
TEST_CASE("bands: a depthwise layer resumes its ring from the previous band") {
  static_assert(mosaiq::depthwise<depthwise_config{}, u8>::resumes_ring &&
                !mosaiq::depthwise<depthwise_config{.dilation = {2, 2}}, u8>::resumes_ring);
  resume_fixture<depthwise_config{}> f(12);
  f.kernel.run_rows_window(f.rows(0, 4), 0, f.image.height, f.out_rows(0, 3), f.workspace, row_band{0, 3});
  test::recording_handler errors;
  // Rows 3..5 read rows 2..6; the ring holds 2 and 3 (and 0, 1): a window from row 5 misses row 4.
  f.kernel.resume_rows_window(f.rows(5, 2), 5, f.image.height, f.out_rows(3, 3), f.workspace, row_band{3, 6});
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == errc::shape_mismatch);
  CHECK(std::all_of(f.got.begin() + 3 * 6 * 24, f.got.end(), [](u8 v) { return v == 0x5A; }));
  errors.reset();
  f.kernel.resume_rows_window(f.rows(4, 3), 4, f.image.height, f.out_rows(3, 3), f.workspace, row_band{3, 6});
  f.kernel.resume_rows_window(f.rows(7, 3), 7, f.image.height, f.out_rows(6, 4), f.workspace, row_band{6, 10});
  CHECK(errors.calls() == 0);
  CHECK(f.got == f.expected);
}

// A 5x5 layer in one-row bands over the whole image: each band after the first resumes the ring from a window of the
// one row it does not hold yet (the first bands' windows also reach into the padding above the image).
TEST_CASE("bands: a 5x5 depthwise layer resumes its ring band after band in one-row bands") {
  resume_fixture<depthwise_config{.kernel = {5, 5}}> f(13);
  test::recording_handler errors;
  f.kernel.run_rows_window(f.rows(0, 3), 0, f.image.height, f.out_rows(0, 1), f.workspace, row_band{0, 1});
  for (int y = 1; y < f.image.height; ++y) {
    const int next = std::min(y + 2, f.image.height - 1);  // the one row the ring does not hold yet (or the last)
    f.kernel.resume_rows_window(f.rows(next, 1), next, f.image.height, f.out_rows(y, 1), f.workspace,
                                row_band{y, y + 1});
  }
  CHECK(errors.calls() == 0);
  CHECK(f.got == f.expected);
}

// The schedule on its own: a 3x3 stride-1 SAME chain of two layers over 10 rows in bands of 4 (3 bands).
TEST_CASE("bands: the schedule computes each row once and keeps just the rows still read") {
  band_schedule<2, 3> s;
  s.layers[0] = {.op = true,
                 .input_count = 1,
                 .inputs = {0},
                 .maps = {row_map::windowed(10, 3, 1, 1, 1)},
                 .output = 1,
                 .height = 10};
  s.layers[1] = {.op = true,
                 .input_count = 1,
                 .inputs = {1},
                 .maps = {row_map::windowed(10, 3, 1, 1, 1)},
                 .output = 2,
                 .height = 10};
  s.first = 0;
  s.last = 1;
  s.band_rows = 4;
  s.windowed[1] = true;
  band_cursor<3> cursor{};
  REQUIRE(s.band_count() == 3);
  // The first layer leads by one row (the second's row 3 reads its row 4): its pace is 11 rows over
  // 3 bands. Band 0: 4 rows; the second layer makes 3, as its row 3 reads row 4.
  auto step = s.advance(cursor, 0);
  CHECK(step.rows[0] == row_band{0, 4});
  CHECK(step.rows[1] == row_band{0, 3});
  CHECK(step.window[1] == row_band{0, 4});
  // Band 1: the first layer up to 8 rows, the second up to 7 (rows 3..6 read 2..7): rows 2, 3 stay.
  step = s.advance(cursor, 1);
  CHECK(step.rows[0] == row_band{4, 8});
  CHECK(step.rows[1] == row_band{3, 7});
  CHECK(step.window[1] == row_band{2, 8});
  // Band 2: everything; rows 7..9 read 6..9 (row 10 is padding).
  step = s.advance(cursor, 2);
  CHECK(step.rows[0] == row_band{8, 10});
  CHECK(step.rows[1] == row_band{7, 10});
  CHECK(step.window[1] == row_band{6, 10});
  const auto totals = s.measure();
  CHECK(totals.capacity[1] == 6);
  CHECK(totals.moved[1] == 2 + 2);
  CHECK(totals.max_rows[0] == 4);
}

// ---------------------------------------------------------------------------------------------
// Resize window entry points: output rows of a band from just the input rows they read.

/// Input rows output rows `band` read, from the reference's own taps (bilinear) or sources (nearest).
row_band resize_rows_read(row_band band, int in_height, int out_height, resize_mode mode, bool bilinear) {
  if (bilinear) {
    const float scale = reference::detail::float_axis_scale(in_height, out_height, mode);
    int first = in_height, last = 0;
    for (int y = band.first; y < band.last; ++y) {
      const reference::detail::float_tap t = reference::detail::float_axis_tap(y, scale, mode, in_height);
      first = std::min(first, t.lower), last = std::max(last, t.upper + 1);
    }
    return {first, last};
  }
  int first = in_height, last = 0;
  for (int y = band.first; y < band.last; ++y) {
    const int source = reference::nearest_source_index(y, in_height, out_height, mode);
    first = std::min(first, source), last = std::max(last, source + 1);
  }
  return {first, last};
}

/// Every band of `band_rows` output rows, run from a copy of just the rows it reads with poisoned rows
/// around it (a read outside the window changes the bytes), equals those rows of the whole-map run.
template <class Resize, class T>
void check_resize_windows(shape image, int band_rows) {
  std::mt19937 rng(std::uint32_t(image.height * 131 + image.channels * 7 + band_rows));
  const std::vector<T> pixels = test::random_values<T>(rng, image.elements());
  const shape out_image = Resize::output_shape(image);
  std::vector<T> whole(out_image.elements());
  Resize::run(tensor_view<const T>(pixels.data(), image), tensor_view<T>(whole.data(), out_image));
  const std::size_t row = std::size_t(image.width) * std::size_t(image.channels);
  const std::size_t out_row = std::size_t(out_image.width) * std::size_t(out_image.channels);
  constexpr bool bilinear = std::is_same_v<Resize, mosaiq::resize_bilinear<Resize::config, T>>;
  for (int first = 0; first < out_image.height; first += band_rows) {
    const row_band band{first, std::min(out_image.height, first + band_rows)};
    CAPTURE(band.first);
    const row_band read = resize_rows_read(band, image.height, out_image.height, Resize::config.mode, bilinear);
    std::vector<T> window((std::size_t(read.rows()) + 4) * row, T{0x33});
    std::copy_n(pixels.begin() + std::ptrdiff_t(std::size_t(read.first) * row), std::size_t(read.rows()) * row,
                window.begin() + std::ptrdiff_t(2 * row));
    std::vector<T> got(std::size_t(band.rows()) * out_row, T{0x5A});
    Resize::run_rows_window(
        tensor_view<const T>(window.data() + 2 * row, shape{read.rows(), image.width, image.channels}), read.first,
        image.height, tensor_view<T>(got.data(), shape{band.rows(), out_image.width, out_image.channels}), band);
    CHECK(std::equal(got.begin(), got.end(), whole.begin() + std::ptrdiff_t(std::size_t(band.first) * out_row)));
  }
}

template <resize_config C, class T>
void check_resize_modes_and_shapes() {
  // Odd and even heights; channel counts of the 2x kernels' dense rows (2, 16), their pixel blocks (20) and the
  // any-ratio kernel's flat (3) and channel (9) paths; band heights odd and even, one row to more than the map.
  for (const shape image : {shape{7, 5, 2}, shape{6, 9, 3}, shape{9, 4, 16}, shape{5, 6, 20}, shape{8, 3, 9}}) {
    CAPTURE(image.height);
    CAPTURE(image.channels);
    for (const int band_rows : {1, 2, 3, 5, 64}) {
      CAPTURE(band_rows);
      if constexpr (mosaiq::resize_bilinear<C, T>::specialized)
        check_resize_windows<mosaiq::resize_bilinear<C, T>, T>(image, band_rows);
      if constexpr (mosaiq::resize_nearest<C, T>::specialized)
        check_resize_windows<mosaiq::resize_nearest<C, T>, T>(image, band_rows);
    }
  }
}

template <class T>
void check_resize_configs() {
  check_resize_modes_and_shapes<resize_config{.scale = 2, .mode = resize_mode::half_pixel}, T>();
  check_resize_modes_and_shapes<resize_config{.scale = 2, .mode = resize_mode::legacy}, T>();
  check_resize_modes_and_shapes<resize_config{.scale = 2, .mode = resize_mode::align_corners}, T>();
  check_resize_modes_and_shapes<resize_config{.scale = 3, .mode = resize_mode::half_pixel}, T>();
  check_resize_modes_and_shapes<resize_config{.scale = 3, .mode = resize_mode::align_corners}, T>();
  check_resize_modes_and_shapes<resize_config{.scale = 1, .mode = resize_mode::legacy}, T>();
}

TEST_CASE("bands: resize windows give the whole-map rows (bilinear, nearest; every mode; top and bottom edges)") {
  check_resize_configs<u8>();
  check_resize_configs<i8>();
}

TEST_CASE("bands: a resize window that misses a row its band reads is reported and nothing is written") {
  using up = mosaiq::resize_bilinear<resize_config{.scale = 2, .mode = resize_mode::half_pixel}, u8>;
  using nearest = mosaiq::resize_nearest<resize_config{.scale = 2}, u8>;
  const shape image{8, 4, 16};
  std::vector<u8> in(image.elements(), u8{7}), out(3 * 8 * 16, u8{0x5A});
  const tensor_view<u8> band_out(out.data(), shape{3, 8, 16});
  test::recording_handler errors;
  // Output rows 5..7 read input rows 2..4 (half-pixel: row 7 blends rows 3 and 4): a window of rows 2..3 misses 4.
  up::run_rows_window(tensor_view<const u8>(in.data(), shape{2, 4, 16}), 2, image.height, band_out, row_band{5, 8});
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == errc::shape_mismatch);
  // Nearest reads rows 2..3: a window from row 3 misses row 2.
  nearest::run_rows_window(tensor_view<const u8>(in.data(), shape{2, 4, 16}), 3, image.height, band_out,
                           row_band{5, 8});
  CHECK(errors.calls() == 2);
  // A band_out that is not the band's rows.
  up::run_rows_window(tensor_view<const u8>(in.data(), shape{3, 4, 16}), 2, image.height, band_out, row_band{5, 7});
  CHECK(errors.calls() == 3);
  CHECK(std::all_of(out.begin(), out.end(), [](u8 v) { return v == 0x5A; }));
  up::run_rows_window(tensor_view<const u8>(in.data(), shape{3, 4, 16}), 2, image.height, band_out, row_band{5, 8});
  CHECK(errors.calls() == 3);
  CHECK(std::all_of(out.begin(), out.end(), [](u8 v) { return v == 7; }));
}

#if MOSAIQ_TEST_BANDED_NETWORKS
// A chain through resizes (bilinear half-pixel and legacy, nearest x3) between convolutions (the resizes
// every build joins: scalar builds run other bilinear configs through the whole-map reference).
template <class T, banding B>
using resize_net = network<typename input<T, 13, 11, 3>::template with_banding<B>, conv3x3<16, 2>,  // 0: 7x6x16
                           L::resize_bilinear<L::resize_config{.scale = 2, .mode = resize_mode::half_pixel}>,  // 1
                           dw3x3<1>,                                         // 2: 14x12x16
                           L::resize_nearest<L::resize_config{.scale = 3}>,  // 3: 42x36x16
                           pw<4>,                                            // 4
                           L::resize_bilinear<L::resize_config{.scale = 2, .mode = resize_mode::legacy}>,  // 5: 84x72x4
                           dw3x3<2>,                                                                       // 6: 42x36x4
                           L::softmax<>>;                                                                  // 7

template <class T, int... Rows>
void check_resize_chain() {
  using whole = resize_net<T, banding::off()>;
  const typename whole::weights w = test::random_weights<whole>(11);
  std::mt19937 rng(5);
  const std::vector<T> input = test::random_values<T>(rng, whole::input_shape.elements());
  const std::vector<T> expected = run_once<whole>(w, input);
  CHECK(std::set<T>(expected.begin(), expected.end()).size() > 4);
  const auto check = [&]<int R>(std::integral_constant<int, R>) {
    using banded = resize_net<T, banding::chain(0, 7, R)>;
    static_assert(banded::banded && banded::band_saved_bytes > 0);
    CAPTURE(R);
    CHECK(run_once<banded>(same_weights<banded, whole>(w), input) == expected);
  };
  (check(std::integral_constant<int, Rows>{}), ...);
}

TEST_CASE("bands: resizes join chains; every band height gives the layer-by-layer bytes") {
  check_resize_chain<u8, 1, 2, 5, 7>();
  check_resize_chain<i8, 1, 3>();
}

#if !MOSAIQ_TEST_BAND_PATH_GRIDS
TEST_CASE("bands: two chains, maps read after a chain held whole, the schedule and plan for both") {
  using whole = chain_net<u8, 1, banding::off()>;
  // Chain 5..10 makes the map of tap "a" (layer 7), read by layer 11 after it: held whole, not a window.
  using two = chain_net<u8, 1, banding::chain(5, 10, 1).and_chain(14, 20, 2)>;
  static_assert(two::band_chain_count == 2 && two::band_chains[1].first == 14 && two::band_chains[1].rows == 2);
  static_assert(two::window_rows[5] == 0 && two::window_rows[6] > 0);  // map of layer 7 whole, of layer 9 a window
  static_assert(is_valid_plan(two::memory_ranges, two::memory));
  const whole::weights w = test::random_weights<whole>(23);
  std::mt19937 rng(6);
  const std::vector<u8> input = test::random_values<u8>(rng, whole::input_shape.elements());
  const std::vector<u8> expected = run_once<whole>(w, input);
  CHECK(run_once<two>(same_weights<two, whole>(w), input) == expected);
  test::aligned_arena arena(two::arena_bytes);
  std::vector<u8> got(two::output_shape.elements());
  two::run_poisoning_dead_memory(two::prepare(same_weights<two, whole>(w)),
                                 tensor_view<const u8>(input.data(), two::input_shape),
                                 tensor_view<u8>(got.data(), two::output_shape), arena.bytes);
  CHECK(got == expected);
}
#endif  // !MOSAIQ_TEST_BAND_PATH_GRIDS

// A plan's GEMM block bound (banding::with_gemm_block_bytes) reaches the conv2d and pointwise layers that set
// none: their workspaces shrink to one register tile of pixels per block, layer by layer and in bands, and
// the bytes stay those of the speed default.
template <class T>
void check_gemm_block_bound() {
  using whole = chain_net<T, 1, banding::off()>;
  using bounded = chain_net<T, 1, banding::off().with_gemm_block_bytes(1)>;
  using banded = chain_net<T, 1, banding::chain(5, 16, 2).with_gemm_block_bytes(1)>;
  static_assert(!bounded::banded && bounded::arena_bytes < whole::arena_bytes);
  static_assert(bounded::layer_by_layer_arena_bytes == whole::arena_bytes && bounded::band_saved_bytes > 0);
  static_assert(banded::arena_bytes < chain_net<T, 1, banding::chain(5, 16, 2)>::arena_bytes);
  const typename whole::weights w = test::random_weights<whole>(31);
  std::mt19937 rng(8);
  const std::vector<T> input = test::random_values<T>(rng, whole::input_shape.elements());
  const std::vector<T> expected = run_once<whole>(w, input);
  CHECK(run_once<bounded>(same_weights<bounded, whole>(w), input) == expected);
  CHECK(run_once<banded>(same_weights<banded, whole>(w), input) == expected);
}

TEST_CASE("bands: a GEMM block bound shrinks the workspaces and keeps the bytes (uint8, int8)") {
  check_gemm_block_bound<u8>();
  check_gemm_block_bound<i8>();
}
#endif  // MOSAIQ_TEST_BANDED_NETWORKS

// The portrait network of examples/portrait_segmentation: its banded plan (three chains in bands of three rows
// and 8 KiB GEMM blocks, see portrait_net.hpp) keeps the bytes in issue 21's 150 KB on every build: 141,504 bytes
// on AVX2, 145,984 scalar and NEON, 149,696 on AVX-512 VNNI (its two-row depthwise tile keeps a fourth row in the
// first chain's ring). Layer by layer (banding::off(), the GEMMs' speed-default blocks) 364,096 on AVX2.
static_assert(portrait::banded_network<u8>::arena_bytes <= 150'000);
static_assert(portrait::banded_network<i8>::arena_bytes <= 150'000);
static_assert(portrait::banded_network<u8>::band_saved_bytes >= 190'000);
static_assert(portrait::banded_network<u8>::layer_by_layer_arena_bytes ==
              portrait::banded_network<u8>::with_banding<banding::off()>::arena_bytes);

// The automatic choice on the portrait network, one thread: within 5% it bands the stem and the first depthwise
// layer (2 of 53 layers, 8 bands); within 100% and with 8 KiB GEMM blocks its second round adds the decoder to
// the encoder's chain and lowers the peak below what the first chain alone leaves.
// clang's default constexpr step limit (-fconstexpr-steps, 2^20) is below what the choice takes on this network
// (2^21 for automatic(), as before this choice was made cheaper): clang builds leave these out.
#ifndef __clang__
template <banding B>
using portrait_on = portrait::network_on<input<u8, portrait::input_size, portrait::input_size, 3>::with_banding<B>>;
inline constexpr banding portrait_loose = banding::automatic(100).with_gemm_block_bytes(8192);
#if MOSAIQ_TEST_AUTOMATIC_PLANS
static_assert(same_plan<portrait_on<banding::automatic()>, portrait_on<banding::chain(0, 1, 32)>>());
static_assert(same_plan<portrait_on<portrait_loose>,
                        portrait_on<banding::chain(0, 17, 1).and_chain(40, 52, 26).with_gemm_block_bytes(8192)>>());
static_assert(portrait_on<portrait_loose>::peak_live_bytes <
              portrait_on<banding::chain(0, 17, 1).with_gemm_block_bytes(8192)>::peak_live_bytes);
#endif
#if MOSAIQ_TARGET_AVX2 && !MOSAIQ_TARGET_AVX512
static_assert(portrait_on<banding::automatic()>::arena_bytes == 331'840);
static_assert(portrait_on<portrait_loose>::arena_bytes == 147'648);
static_assert(portrait_on<banding::chain(0, 17, 1).with_gemm_block_bytes(8192)>::arena_bytes == 163'840);
#endif
#endif  // __clang__

#if MOSAIQ_TEST_BANDED_NETWORKS && !MOSAIQ_TEST_BAND_PATH_GRIDS
template <class T>
void check_portrait() {
  using whole = portrait::network<T>;
  using banded = portrait::banded_network<T>;
  auto w = std::make_unique<typename whole::weights>();
  REQUIRE(portrait::make_weights<T>(*w));
  auto bw = std::make_unique<typename banded::weights>();
  bw->input = w->input;
  bw->layers = w->layers;
  const std::vector<std::uint8_t> rgb = portrait::synthetic_portrait();
  std::vector<T> input(rgb.size());
  for (std::size_t i = 0; i < rgb.size(); ++i) input[i] = portrait::from_rgb<T>(rgb[i]);
  const std::vector<T> expected = run_once<whole>(*w, input);
  CHECK(std::set<T>(expected.begin(), expected.end()).size() > 4);
  CHECK(run_once<banded>(*bw, input) == expected);
}

TEST_CASE("bands: the portrait network's banded plan gives the layer-by-layer bytes (uint8, int8)") {
  check_portrait<u8>();
  check_portrait<i8>();
}
#endif  // MOSAIQ_TEST_BANDED_NETWORKS

}  // namespace
