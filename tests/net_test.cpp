// Static networks: shape inference and costs, the compile-time memory plan, whole-network results
// against the reference ops chained by hand, no heap in run(), weights blobs, the profiler.
#include "mosaiq/net.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "allocation_counter.hpp"
#include "mosaiq/reference.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;
constexpr rounding R = rounding::tflite_reference;

// A residual block, a 2x upsampling and a softmax: small enough to check every number by hand.
using small_net = network<input<u8, 8, 8, 3>,                                                          //
                          layers::conv2d<layers::conv2d_config{.out_channels = 8, .stride = {2, 2}}>,  // 0: 4x4x8
                          layers::tap<"skip">,                                                         // 1
                          layers::depthwise<layers::depthwise_config{.kernel = {3, 3}}>,               // 2: 4x4x8
                          layers::add<"skip">,                                             // 3: 4x4x8, in place
                          layers::pointwise<layers::pointwise_config{.out_channels = 4}>,  // 4: 4x4x4
                          layers::resize_bilinear<layers::resize_config{.scale = 2}>,      // 5: 8x8x4
                          layers::softmax<>>;                                              // 6: 8x8x4

static_assert(small_net::output_shape == shape{8, 8, 4});
static_assert(small_net::layer_shapes == std::array<shape, 7>{shape{4, 4, 8}, shape{4, 4, 8}, shape{4, 4, 8},
                                                              shape{4, 4, 8}, shape{4, 4, 4}, shape{8, 8, 4},
                                                              shape{8, 8, 4}});
// conv: 16 pixels * 8 out * 3x3x3 taps; depthwise: 16 * 8 * 9; add: 128; pointwise: 16 * 4 * 8;
// bilinear: 4 taps * 256 outputs; softmax: 256 elements.
static_assert(small_net::layer_macs == std::array<std::uint64_t, 7>{3456, 0, 1152, 128, 512, 1024, 256});
static_assert(small_net::macs == 6528);
// conv 8*27 + 8, depthwise 9*8 + 8, pointwise 4*8 + 4.
static_assert(small_net::params == 224 + 80 + 36);
static_assert(small_net::weight_bytes == 216 + 72 + 32 + 4 * (8 + 8 + 4));
// Tensors 1..5 live in the arena (0 is the input, 6 the output); add writes over the depthwise output.
static_assert(small_net::tensor_count == 7);
static_assert(small_net::buffer_of(3) == small_net::buffer_of(2) && small_net::buffer_of(2) != small_net::buffer_of(1));
static_assert(small_net::buffer_of(0) == -1 && small_net::buffer_of(6) == -1);
// The plan reserves exactly the kernels' workspace, live at their layer only: conv2d (layer 0),
// depthwise (layer 2) and pointwise (layer 4).
constexpr std::size_t small_net_scratch(std::size_t layer) {
  return small_net::memory_ranges[small_net::tensor_count + layer].bytes;
}
static_assert(small_net_scratch(0) ==
              mosaiq::conv2d<mosaiq::conv2d_config{.out_channels = 8, .stride = {2, 2}}, u8>::workspace_bytes({8, 8,
                                                                                                               3}));
static_assert(small_net_scratch(2) == mosaiq::depthwise<mosaiq::depthwise_config{}, u8>::workspace_bytes({4, 4, 8}));
static_assert(small_net_scratch(4) ==
              mosaiq::pointwise<mosaiq::pointwise_config{.out_channels = 4}, u8>::workspace_bytes({4, 4, 8}));
// Live at the resize (layer 5): the pointwise output (64 B) and the resize output (256 B); at the
// conv2d: its output and its workspace (the input is the caller's); at the depthwise: its input
// (kept for the add) and output plus its workspace; at the pointwise: the add output (64-byte
// aligned 128 B), its output and its workspace.
static_assert(small_net::peak_live_bytes ==
              std::max({std::size_t{64 + 256}, 128 + align_up(small_net_scratch(0)),
                        128 + 128 + align_up(small_net_scratch(2)), 128 + 64 + align_up(small_net_scratch(4))}));
static_assert(small_net::arena_bytes == small_net::peak_live_bytes);
static_assert(is_valid_plan(small_net::memory_ranges, small_net::memory));

// ASPP-like int8 net: three branches from one tensor, joined by a concat.
using aspp_net =
    network<input<i8, 16, 16, 4>,
            layers::pointwise<layers::pointwise_config{.out_channels = 8, .act = activation::relu}>,  // 0: 16x16x8
            layers::tap<"x">,                                                                         // 1
            layers::depthwise<layers::depthwise_config{.dilation = {2, 2}}>,                          // 2: 16x16x8
            layers::tap<"b1">,                                                                        // 3
            layers::from<"x">,                                                                        // 4
            layers::average_pool<layers::pool_config{.kernel = {2, 2}, .stride = {2, 2}}>,            // 5: 8x8x8
            layers::resize_nearest<layers::resize_config{.scale = 2}>,                                // 6: 16x16x8
            layers::tap<"b2">,                                                                        // 7
            layers::from<"x">,                                                                        // 8
            layers::global_average_pool<>,                                                            // 9: 1x1x8
            layers::resize_bilinear<layers::resize_config{.scale = 16}>,                              // 10: 16x16x8
            layers::tap<"b3">,                                                                        // 11
            layers::concat<"b1", "b2", "b3">,                                                         // 12: 16x16x24
            layers::pointwise<layers::pointwise_config{.out_channels = 4}>>;                          // 13: 16x16x4

static_assert(aspp_net::output_shape == shape{16, 16, 4});
static_assert(aspp_net::layer_shapes[4] == shape{16, 16, 8} && aspp_net::layer_shapes[9] == shape{1, 1, 8} &&
              aspp_net::layer_shapes[12] == shape{16, 16, 24});
static_assert(aspp_net::layer_macs[9] == 16 * 16 * 8 && aspp_net::layer_macs[12] == 0 &&
              aspp_net::layer_macs[13] == 16 * 16 * 4 * 24);
// "x" is read by three branches: it stays alive until the global average pool (layer 9).
static_assert(aspp_net::memory_ranges[std::size_t(aspp_net::buffer_of(1))].last == 9);
static_assert(is_valid_plan(aspp_net::memory_ranges, aspp_net::memory));

// U-Net with an ASPP head, 42 layers: checks plan quality and that compile time stays modest.
using unet = network<input<u8, 32, 32, 8>,                                             //
                     layers::pointwise<layers::pointwise_config{.out_channels = 16}>,  // 32x32x16
                     layers::tap<"e0">,                                                //
                     layers::depthwise<layers::depthwise_config{.stride = {2, 2}}>,    // 16x16x16
                     layers::pointwise<layers::pointwise_config{.out_channels = 32}>,  //
                     layers::tap<"e1">,                                                //
                     layers::depthwise<layers::depthwise_config{.stride = {2, 2}}>,    // 8x8x32
                     layers::pointwise<layers::pointwise_config{.out_channels = 64}>,  //
                     layers::tap<"e2">,                                                //
                     layers::depthwise<layers::depthwise_config{.stride = {2, 2}}>,    // 4x4x64
                     layers::pointwise<layers::pointwise_config{.out_channels = 64}>,  //
                     layers::tap<"a">,                                                 //
                     layers::pointwise<layers::pointwise_config{.out_channels = 32}>,  //
                     layers::tap<"a1">,                                                //
                     layers::from<"a">,                                                //
                     layers::depthwise<layers::depthwise_config{.dilation = {2, 2}}>,  //
                     layers::pointwise<layers::pointwise_config{.out_channels = 32}>,  //
                     layers::tap<"a2">,                                                //
                     layers::from<"a">,                                                //
                     layers::global_average_pool<>,                                    //
                     layers::pointwise<layers::pointwise_config{.out_channels = 32}>,  //
                     layers::resize_bilinear<layers::resize_config{.scale = 4}>,       //
                     layers::tap<"a3">,                                                //
                     layers::concat<"a1", "a2", "a3">,                                 // 4x4x96
                     layers::pointwise<layers::pointwise_config{.out_channels = 64}>,  //
                     layers::resize_bilinear<layers::resize_config{.scale = 2}>,       // 8x8x64
                     layers::add<"e2">,                                                //
                     layers::pointwise<layers::pointwise_config{.out_channels = 32}>,  //
                     layers::resize_bilinear<layers::resize_config{.scale = 2}>,       // 16x16x32
                     layers::add<"e1">,                                                //
                     layers::pointwise<layers::pointwise_config{.out_channels = 16}>,  //
                     layers::resize_bilinear<layers::resize_config{.scale = 2}>,       // 32x32x16
                     layers::tap<"up0">,                                               //
                     layers::concat<"up0", "e0">,                                      // 32x32x32
                     layers::depthwise<>,                                              //
                     layers::pointwise<layers::pointwise_config{.out_channels = 16}>,  //
                     layers::depthwise<>,                                              //
                     layers::pointwise<layers::pointwise_config{.out_channels = 16}>,  //
                     layers::add<"up0">,                                               //
                     layers::depthwise<>,                                              //
                     layers::pointwise<layers::pointwise_config{.out_channels = 8}>,   //
                     layers::pointwise<layers::pointwise_config{.out_channels = 2}>,   //
                     layers::softmax<>>;
static_assert(unet::layer_count == 42);
static_assert(unet::output_shape == shape{32, 32, 2});
static_assert(is_valid_plan(unet::memory_ranges, unet::memory));
static_assert(unet::plan_efficiency >= 0.9, "the plan should be within 10% of the peak live bytes");

// ---------------------------------------------------------------------------------------------
// Planner unit tests on synthetic lifetimes.

constexpr std::array<live_range, 24> random_ranges(std::uint32_t seed) {
  std::array<live_range, 24> ranges{};
  for (live_range& r : ranges) {
    seed = seed * 1664525u + 1013904223u;
    const int first = int((seed >> 8) % 20);
    seed = seed * 1664525u + 1013904223u;
    const int length = int((seed >> 8) % 6);
    seed = seed * 1664525u + 1013904223u;
    r = {std::size_t(1 + (seed >> 8) % 5000), first, first + length};
  }
  return ranges;
}
constexpr auto synthetic_a = random_ranges(1), synthetic_b = random_ranges(77), synthetic_c = random_ranges(4242);
static_assert(is_valid_plan(synthetic_a, plan_memory(synthetic_a)));
static_assert(is_valid_plan(synthetic_b, plan_memory(synthetic_b)));
static_assert(is_valid_plan(synthetic_c, plan_memory(synthetic_c)));
// Sizes round up to 64 bytes; the peak is at step 2 (64 + 256); buffers that never meet share offset 0.
constexpr std::array<live_range, 4> chain{{{100, 0, 1}, {64, 1, 2}, {200, 2, 3}, {100, 4, 5}}};
static_assert(plan_memory(chain).peak_live_bytes == 64 + 256 && plan_memory(chain).arena_bytes == 64 + 256);
static_assert(plan_memory(chain).offsets[0] == 0 && plan_memory(chain).offsets[2] == 0);
static_assert(plan_memory(chain).offsets[3] == 0);

/// Independent check: no two buffers alive at the same step share a byte.
template <std::size_t N>
void check_no_live_overlap(const std::array<live_range, N>& ranges, const memory_plan<N>& plan) {
  int last_step = 0;
  for (const live_range& r : ranges) last_step = std::max(last_step, r.last);
  for (int step = 0; step <= last_step; ++step) {
    std::vector<int> owner(plan.arena_bytes, -1);
    std::size_t shared_bytes = 0;
    for (std::size_t b = 0; b < N; ++b) {
      if (ranges[b].bytes == 0 || step < ranges[b].first || step > ranges[b].last) continue;
      REQUIRE(plan.offsets[b] + ranges[b].bytes <= plan.arena_bytes);
      for (std::size_t byte = plan.offsets[b]; byte < plan.offsets[b] + ranges[b].bytes; ++byte) {
        shared_bytes += owner[byte] != -1 ? 1 : 0;
        owner[byte] = int(b);
      }
    }
    CHECK(shared_bytes == 0);
  }
}

TEST_CASE("net: memory plans never overlap live buffers (run-time check)") {
  check_no_live_overlap(synthetic_a, plan_memory(synthetic_a));
  check_no_live_overlap(synthetic_b, plan_memory(synthetic_b));
  check_no_live_overlap(synthetic_c, plan_memory(synthetic_c));
  check_no_live_overlap(small_net::memory_ranges, small_net::memory);
  check_no_live_overlap(aspp_net::memory_ranges, aspp_net::memory);
  check_no_live_overlap(unet::memory_ranges, unet::memory);
}

// ---------------------------------------------------------------------------------------------
// Weights and data.

struct lcg {
  std::uint32_t state;
  int next(int lo, int hi) {
    state = state * 1664525u + 1013904223u;
    return lo + int((state >> 8) % std::uint32_t(hi - lo + 1));
  }
};

template <class T, class W>
void fill_conv(W& w, lcg& rng, quant_params output) {
  for (auto& f : w.filter) f = static_cast<T>(rng.next(element_traits<T>::min, element_traits<T>::max));
  for (auto& b : w.bias) b = rng.next(-2000, 2000);
  for (auto& s : w.filter_scales) s = 0.003f + 0.001f * static_cast<float>(rng.next(0, 6));
  w.filter_zero_point = std::is_same_v<T, u8> ? rng.next(110, 150) : 0;
  w.output = output;
}

template <class T>
std::vector<T> random_tensor(shape s, std::uint32_t seed) {
  lcg rng{seed};
  std::vector<T> v(s.elements());
  for (auto& x : v) x = static_cast<T>(rng.next(element_traits<T>::min, element_traits<T>::max));
  return v;
}

using test::cview;
using test::view;

small_net::weights make_small_weights(std::uint32_t seed) {
  lcg rng{seed};
  small_net::weights w;
  w.input = {0.02f, 128};
  fill_conv<u8>(w.layer<0>(), rng, {0.05f, 120});
  fill_conv<u8>(w.layer<2>(), rng, {0.04f, 125});
  w.layer<3>().output = {0.06f, 128};
  fill_conv<u8>(w.layer<4>(), rng, {0.1f, 128});
  return w;
}

aspp_net::weights make_aspp_weights(std::uint32_t seed) {
  lcg rng{seed};
  aspp_net::weights w;
  w.input = {0.03f, -5};
  fill_conv<i8>(w.layer<0>(), rng, {0.05f, -128});
  fill_conv<i8>(w.layer<2>(), rng, {0.04f, 3});
  w.layer<9>().output = {0.03f, -10};
  w.layer<12>().output = {0.05f, 0};
  fill_conv<i8>(w.layer<13>(), rng, {0.08f, 2});
  return w;
}

using test::aligned_arena;

// The network is the reference ops chained by hand.
std::vector<u8> small_net_by_hand(const small_net::weights& w, const std::vector<u8>& input) {
  const auto& conv = w.layer<0>();
  const auto& dw = w.layer<2>();
  const auto& pw = w.layer<4>();
  std::vector<u8> t1(128), t2(128), t3(128), t4(64), t5(256), out(256);
  reference::conv2d<R, u8>(cview(input, {8, 8, 3}), conv.filter.data(), conv.bias.data(), view(t1, {4, 4, 8}),
                           {.kernel = {3, 3}, .stride = {2, 2}},
                           reference::make_conv_requant<R, u8>(w.input, conv.filter_scales, conv.filter_zero_point,
                                                               conv.output, activation::none));
  reference::depthwise_conv<R, u8>(
      cview(t1, {4, 4, 8}), dw.filter.data(), dw.bias.data(), view(t2, {4, 4, 8}), {},
      reference::make_conv_requant<R, u8>(conv.output, dw.filter_scales, dw.filter_zero_point, dw.output,
                                          activation::none));
  reference::add<R, u8>(cview(t2, {4, 4, 8}), cview(t1, {4, 4, 8}), view(t3, {4, 4, 8}),
                        reference::make_add_params<u8>(dw.output, conv.output, w.layer<3>().output));
  reference::pointwise_conv<R, u8>(
      cview(t3, {4, 4, 8}), pw.filter.data(), pw.bias.data(), view(t4, {4, 4, 4}),
      reference::make_conv_requant<R, u8>(w.layer<3>().output, pw.filter_scales, pw.filter_zero_point, pw.output,
                                          activation::none));
  reference::resize_bilinear<u8>(cview(t4, {4, 4, 4}), view(t5, {8, 8, 4}), resize_mode::half_pixel);
  reference::softmax<u8>(reference::softmax_table(pw.output, 1.0f), cview(t5, {8, 8, 4}), view(out, {8, 8, 4}));
  return out;
}

std::vector<i8> aspp_net_by_hand(const aspp_net::weights& w, const std::vector<i8>& input) {
  const auto& pw0 = w.layer<0>();
  const auto& dw = w.layer<2>();
  const auto& pw1 = w.layer<13>();
  const shape full{16, 16, 8};
  std::vector<i8> x(full.elements()), b1(full.elements()), pooled(8 * 8 * 8), b2(full.elements()), mean(8),
      b3(full.elements()), joined(16 * 16 * 24), out(16 * 16 * 4);
  reference::pointwise_conv<R, i8>(
      cview(input, {16, 16, 4}), pw0.filter.data(), pw0.bias.data(), view(x, full),
      reference::make_conv_requant<R, i8>(w.input, pw0.filter_scales, 0, pw0.output, activation::relu));
  reference::depthwise_conv<R, i8>(
      cview(x, full), dw.filter.data(), dw.bias.data(), view(b1, full), {.dilation = {2, 2}},
      reference::make_conv_requant<R, i8>(pw0.output, dw.filter_scales, 0, dw.output, activation::none));
  reference::average_pool<i8>(cview(x, full), view(pooled, {8, 8, 8}), {.kernel = {2, 2}, .stride = {2, 2}},
                              pw0.output);
  reference::resize_nearest<i8>(cview(pooled, {8, 8, 8}), view(b2, full), resize_mode::half_pixel);
  reference::global_average_pool<R, i8>(cview(x, full), view(mean, {1, 1, 8}), pw0.output, w.layer<9>().output);
  reference::resize_bilinear<i8>(cview(mean, {1, 1, 8}), view(b3, full), resize_mode::half_pixel);
  const std::array<reference::concat_input<i8>, 3> parts{
      {{cview(b1, full), dw.output}, {cview(b2, full), pw0.output}, {cview(b3, full), w.layer<9>().output}}};
  reference::concat<i8>(parts, view(joined, {16, 16, 24}), w.layer<12>().output);
  reference::pointwise_conv<R, i8>(
      cview(joined, {16, 16, 24}), pw1.filter.data(), pw1.bias.data(), view(out, {16, 16, 4}),
      reference::make_conv_requant<R, i8>(w.layer<12>().output, pw1.filter_scales, 0, pw1.output, activation::none));
  return out;
}

// Records misuse instead of aborting.
errc last_error = errc::ok;
void record_error(errc code, const char*, source_location) { last_error = code; }
struct recording_errors {
  error_handler previous = set_error_handler(&record_error);
  recording_errors() { last_error = errc::ok; }
  ~recording_errors() { set_error_handler(previous); }
};

template <class Net, class T>
void check_network(const typename Net::weights& w, const std::vector<T>& input, const std::vector<T>& expected) {
  const typename Net::prepared prepared = Net::prepare(w);
  aligned_arena arena(Net::arena_bytes);
  std::vector<T> output(Net::output_shape.elements(), T{0x11});
  std::vector<T> poisoned(output.size(), T{0x22});

  const long before = mosaiq::test::heap_allocations();
  Net::run(prepared, cview(input, Net::input_shape), view(output, Net::output_shape), arena.bytes);
  CHECK(mosaiq::test::heap_allocations() == before);
  CHECK(output == expected);

  Net::run_poisoning_dead_memory(prepared, cview(input, Net::input_shape), view(poisoned, Net::output_shape),
                                 arena.bytes);
  CHECK(poisoned == expected);
  // After the last layer nothing in the arena is live: all of it was poisoned.
  CHECK(std::all_of(arena.bytes.begin(), arena.bytes.end(), [](std::byte b) { return b == std::byte{0xA5}; }));
}

TEST_CASE("net: uint8 residual network equals the reference ops chained by hand") {
  const small_net::weights w = make_small_weights(7);
  const std::vector<u8> input = random_tensor<u8>(small_net::input_shape, 99);
  const std::vector<u8> expected = small_net_by_hand(w, input);
  // The softmax output is not degenerate (not all one class), so the comparison means something.
  CHECK(std::set<u8>(expected.begin(), expected.end()).size() > 8);
  check_network<small_net>(w, input, expected);
}

// A layer's config is its op's (one definition of each field), so a layer may pick the op's register tiles: the
// same residual network with non-default tiles gives the same bytes.
static_assert(std::same_as<layers::conv2d_config, mosaiq::conv2d_config> &&
              std::same_as<layers::depthwise_config, mosaiq::depthwise_config> &&
              std::same_as<layers::pointwise_config, mosaiq::pointwise_config> &&
              std::same_as<layers::resize_config, mosaiq::resize_config>);
using small_tiled_net =
    network<input<u8, 8, 8, 3>,                                                                           //
            layers::conv2d<layers::conv2d_config{.out_channels = 8, .stride = {2, 2}, .tile = {3, 16}}>,  //
            layers::tap<"skip">,                                                                          //
            layers::depthwise<layers::depthwise_config{.kernel = {3, 3}, .tile = {3, 1}}>,                //
            layers::add<"skip">,                                                                          //
            layers::pointwise<layers::pointwise_config{.out_channels = 4, .tile = {5, 32}}>,              //
            layers::resize_bilinear<layers::resize_config{.scale = 2}>,                                   //
            layers::softmax<>>;
static_assert(small_tiled_net::layer_shapes == small_net::layer_shapes && small_tiled_net::macs == small_net::macs);

TEST_CASE("net: layers take their op's config, register tiles included, with the same results") {
  const small_net::weights w = make_small_weights(11);
  small_tiled_net::weights tiled_w;
  tiled_w.input = w.input;
  tiled_w.layer<0>() = w.layer<0>();
  tiled_w.layer<2>() = w.layer<2>();
  tiled_w.layer<3>() = w.layer<3>();
  tiled_w.layer<4>() = w.layer<4>();
  const std::vector<u8> input = random_tensor<u8>(small_net::input_shape, 5);
  check_network<small_tiled_net>(tiled_w, input, small_net_by_hand(w, input));
}

// A classifier head ending in log-softmax (21 classes: the vector path across pixels), int8, run in place.
using log_softmax_net = network<input<i8, 5, 7, 21>, layers::log_softmax<>>;
static_assert(log_softmax_net::output_shape == shape{5, 7, 21});
static_assert(log_softmax_net::macs == 5 * 7 * 21);

TEST_CASE("net: log_softmax layer equals reference::log_softmax, output quantization 16/256 at 127") {
  log_softmax_net::weights w;
  w.input = {0.07f, -3};
  const std::vector<i8> input = random_tensor<i8>(log_softmax_net::input_shape, 13);
  std::vector<i8> expected(input.size());
  reference::log_softmax<i8>(reference::log_softmax_params(w.input), cview(input, log_softmax_net::input_shape),
                             view(expected, log_softmax_net::output_shape));
  CHECK(std::set<i8>(expected.begin(), expected.end()).size() > 8);
  check_network<log_softmax_net>(w, input, expected);
  CHECK(log_softmax_net::prepare(w).tensor_quant(log_softmax_net::tensor_count - 1) == quant_params{0.0625f, 127});
}

TEST_CASE("net: int8 ASPP-like network (from, concat, pooling, resize) equals the reference chain") {
  const aspp_net::weights w = make_aspp_weights(3);
  const std::vector<i8> input = random_tensor<i8>(aspp_net::input_shape, 5);
  const std::vector<i8> expected = aspp_net_by_hand(w, input);
  CHECK(std::set<i8>(expected.begin(), expected.end()).size() > 8);
  check_network<aspp_net>(w, input, expected);
}

// Squeeze-and-excitation shape: the map is tapped, pooled to 1x1xC, a 1x1 gives the per-channel gate, layers::mul
// multiplies the gate (current, 1x1x8) into the tapped map (8x8x8) and layers::add adds the tapped gate back to the
// product: both broadcast the 1x1x8 vector over the map (TFLite broadcasting).
using se_net = network<input<u8, 8, 8, 4>,
                       layers::pointwise<layers::pointwise_config{.out_channels = 8, .act = activation::relu}>,  // 0
                       layers::tap<"x">,                                                                         // 1
                       layers::global_average_pool<>,                                   // 2: 1x1x8
                       layers::pointwise<layers::pointwise_config{.out_channels = 8}>,  // 3: 1x1x8
                       layers::tap<"g">,                                                // 4
                       layers::mul<"x">,                                                // 5: 8x8x8
                       layers::add<"g">>;                                               // 6: 8x8x8

static_assert(se_net::layer_shapes[3] == shape{1, 1, 8} && se_net::layer_shapes[5] == shape{8, 8, 8});
static_assert(se_net::output_shape == shape{8, 8, 8});
static_assert(se_net::layer_macs[5] == 512 && se_net::layer_macs[6] == 512);

std::vector<u8> se_net_by_hand(const se_net::weights& w, const std::vector<u8>& input) {
  const auto& pw0 = w.layer<0>();
  const auto& pw1 = w.layer<3>();
  const shape map{8, 8, 8}, vector{1, 1, 8};
  std::vector<u8> x(map.elements()), mean(8), gate(8), product(map.elements()), out(map.elements());
  reference::pointwise_conv<R, u8>(
      cview(input, {8, 8, 4}), pw0.filter.data(), pw0.bias.data(), view(x, map),
      reference::make_conv_requant<R, u8>(w.input, pw0.filter_scales, pw0.filter_zero_point, pw0.output,
                                          activation::relu));
  reference::global_average_pool<R, u8>(cview(x, map), view(mean, vector), pw0.output, w.layer<2>().output);
  reference::pointwise_conv<R, u8>(
      cview(mean, vector), pw1.filter.data(), pw1.bias.data(), view(gate, vector),
      reference::make_conv_requant<R, u8>(w.layer<2>().output, pw1.filter_scales, pw1.filter_zero_point, pw1.output,
                                          activation::none));
  reference::mul<R, u8>(cview(gate, vector), cview(x, map), view(product, map),
                        reference::make_mul_params<u8>(pw1.output, pw0.output, w.layer<5>().output));
  reference::add<R, u8>(cview(product, map), cview(gate, vector), view(out, map),
                        reference::make_add_params<u8>(w.layer<5>().output, pw1.output, w.layer<6>().output));
  return out;
}

TEST_CASE("net: squeeze-and-excitation (layers::mul and layers::add broadcasting a 1x1xC gate) equals the reference") {
  lcg rng{17};
  se_net::weights w;
  w.input = {0.02f, 128};
  fill_conv<u8>(w.layer<0>(), rng, {0.05f, 0});
  w.layer<2>().output = {0.04f, 3};
  fill_conv<u8>(w.layer<3>(), rng, {0.02f, 100});
  w.layer<5>().output = {0.03f, 110};
  w.layer<6>().output = {0.04f, 90};
  const std::vector<u8> input = random_tensor<u8>(se_net::input_shape, 23);
  const std::vector<u8> expected = se_net_by_hand(w, input);
  CHECK(std::set<u8>(expected.begin(), expected.end()).size() > 8);
  check_network<se_net>(w, input, expected);
}

// SSD-style heads: a box head on an early feature map is an extra output (layers::output), kept
// alive past its last reader; the class head on a later map is the main output.
using ssd_heads_net =
    network<input<u8, 16, 16, 8>,
            layers::pointwise<layers::pointwise_config{.out_channels = 16, .act = activation::relu6}>,  // 0: t1
            layers::tap<"f0">,                                                                          // 1
            layers::pointwise<layers::pointwise_config{.out_channels = 12}>,                            // 2: t2
            layers::output<"box0">,                                                                     // 3
            layers::from<"f0">,                                                                         // 4
            layers::depthwise<layers::depthwise_config{.stride = {2, 2}}>,                              // 5: t3
            layers::pointwise<layers::pointwise_config{.out_channels = 6}>>;                            // 6: t4

static_assert(ssd_heads_net::extra_output_count == 1);
static_assert(ssd_heads_net::tensor_named<"box0"> == 2 && ssd_heads_net::tensor_named<"f0"> == 1);
static_assert(ssd_heads_net::tensor_shape<"box0"> == shape{16, 16, 12});
static_assert(ssd_heads_net::output_shape == shape{8, 8, 6});
// The box head's buffer lives to the end of the run (past the last layer, 6), f0's until layer 5.
static_assert(ssd_heads_net::memory_ranges[std::size_t(ssd_heads_net::buffer_of(2))].last == 7);
static_assert(ssd_heads_net::memory_ranges[std::size_t(ssd_heads_net::buffer_of(1))].last == 5);
static_assert(is_valid_plan(ssd_heads_net::memory_ranges, ssd_heads_net::memory));

TEST_CASE("net: extra outputs (layers::output) survive the run and equal the reference chain") {
  lcg rng{21};
  ssd_heads_net::weights w;
  w.input = {0.02f, 120};
  fill_conv<u8>(w.layer<0>(), rng, {6.0f / 255, 0});
  fill_conv<u8>(w.layer<2>(), rng, {0.05f, 128});
  fill_conv<u8>(w.layer<5>(), rng, {0.03f, 7});
  fill_conv<u8>(w.layer<6>(), rng, {0.06f, 131});
  const std::vector<u8> input = random_tensor<u8>(ssd_heads_net::input_shape, 8);

  const shape fs{16, 16, 16}, bs{16, 16, 12}, ds{8, 8, 16}, os{8, 8, 6};
  std::vector<u8> f0(fs.elements()), box(bs.elements()), down(ds.elements()), expected(os.elements());
  const auto& l0 = w.layer<0>();
  const auto& l2 = w.layer<2>();
  const auto& l5 = w.layer<5>();
  const auto& l6 = w.layer<6>();
  reference::pointwise_conv<R, u8>(cview(input, {16, 16, 8}), l0.filter.data(), l0.bias.data(), view(f0, fs),
                                   reference::make_conv_requant<R, u8>(w.input, l0.filter_scales, l0.filter_zero_point,
                                                                       l0.output, activation::relu6));
  reference::pointwise_conv<R, u8>(cview(f0, fs), l2.filter.data(), l2.bias.data(), view(box, bs),
                                   reference::make_conv_requant<R, u8>(
                                       l0.output, l2.filter_scales, l2.filter_zero_point, l2.output, activation::none));
  reference::depthwise_conv<R, u8>(cview(f0, fs), l5.filter.data(), l5.bias.data(), view(down, ds), {.stride = {2, 2}},
                                   reference::make_conv_requant<R, u8>(
                                       l0.output, l5.filter_scales, l5.filter_zero_point, l5.output, activation::none));
  reference::pointwise_conv<R, u8>(cview(down, ds), l6.filter.data(), l6.bias.data(), view(expected, os),
                                   reference::make_conv_requant<R, u8>(
                                       l5.output, l6.filter_scales, l6.filter_zero_point, l6.output, activation::none));
  CHECK(std::set<u8>(box.begin(), box.end()).size() > 8);

  const ssd_heads_net::prepared prepared = ssd_heads_net::prepare(w);
  CHECK(ssd_heads_net::output_quant<"box0">(prepared) == l2.output);
  aligned_arena arena(ssd_heads_net::arena_bytes);
  std::vector<u8> output(os.elements());
  const auto read_box = [&] {
    const tensor_view<const u8> v = ssd_heads_net::output_view<"box0">(arena.bytes);
    REQUIRE(v.dims() == bs);
    std::vector<u8> got;
    for (int y = 0; y < bs.height; ++y)
      for (int x = 0; x < bs.width; ++x) got.insert(got.end(), v.pixel(0, y, x), v.pixel(0, y, x) + bs.channels);
    return got;
  };
  const long before = mosaiq::test::heap_allocations();
  ssd_heads_net::run(prepared, cview(input, ssd_heads_net::input_shape), view(output, os), arena.bytes);
  CHECK(mosaiq::test::heap_allocations() == before);
  CHECK(output == expected);
  CHECK(read_box() == box);

  // Dead memory is poisoned after every layer; the extra output is not dead until run() returns.
  std::fill(output.begin(), output.end(), u8{0});
  ssd_heads_net::run_poisoning_dead_memory(prepared, cview(input, ssd_heads_net::input_shape), view(output, os),
                                           arena.bytes);
  CHECK(output == expected);
  CHECK(read_box() == box);
}

TEST_CASE("net: strided input and output views") {
  const small_net::weights w = make_small_weights(11);
  const std::vector<u8> dense_input = random_tensor<u8>(small_net::input_shape, 12);
  const std::vector<u8> expected = small_net_by_hand(w, dense_input);
  // Input pixels 5 apart, output pixels 6 apart.
  std::vector<u8> input(8 * 8 * 5), output(8 * 8 * 6, 0);
  for (std::size_t p = 0; p < 64; ++p) std::copy_n(&dense_input[p * 3], 3, &input[p * 5]);
  const auto prepared = small_net::prepare(w);
  aligned_arena arena(small_net::arena_bytes);
  small_net::run(prepared, tensor_view<const u8>(input.data(), {8, 8, 3}, 1, 5),
                 tensor_view<u8>(output.data(), {8, 8, 4}, 1, 6), arena.bytes);
  for (std::size_t p = 0; p < 64; ++p) CHECK(std::equal(&expected[p * 4], &expected[p * 4 + 4], &output[p * 6]));
}

TEST_CASE("net: run reports a misaligned or small arena and wrong shapes, and writes nothing") {
  const recording_errors errors;
  const small_net::weights w = make_small_weights(1);
  const auto prepared = small_net::prepare(w);
  const std::vector<u8> input = random_tensor<u8>(small_net::input_shape, 2);
  std::vector<u8> output(small_net::output_shape.elements(), 0x33);
  aligned_arena arena(small_net::arena_bytes + 64);

  small_net::run(prepared, cview(input, small_net::input_shape), view(output, small_net::output_shape),
                 arena.bytes.subspan(1, small_net::arena_bytes));
  CHECK(last_error == errc::bad_alignment);
  last_error = errc::ok;
  small_net::run(prepared, cview(input, small_net::input_shape), view(output, small_net::output_shape),
                 arena.bytes.first(small_net::arena_bytes - 1));
  CHECK(last_error == errc::invalid_argument);
  last_error = errc::ok;
  small_net::run(prepared, cview(input, {8, 8, 4}), view(output, small_net::output_shape), arena.bytes);
  CHECK(last_error == errc::shape_mismatch);
  CHECK(std::all_of(output.begin(), output.end(), [](u8 v) { return v == 0x33; }));
}

// ---------------------------------------------------------------------------------------------
// Blobs.

// Same layer kinds as small_net, but the pointwise makes 5 channels.
using small_net_wider =
    network<input<u8, 8, 8, 3>, layers::conv2d<layers::conv2d_config{.out_channels = 8, .stride = {2, 2}}>,
            layers::tap<"skip">, layers::depthwise<layers::depthwise_config{.kernel = {3, 3}}>, layers::add<"skip">,
            layers::pointwise<layers::pointwise_config{.out_channels = 5}>,
            layers::resize_bilinear<layers::resize_config{.scale = 2}>, layers::softmax<>>;

TEST_CASE("net: weights blob round trip") {
  const small_net::weights original = make_small_weights(21);
  std::vector<std::byte> blob(small_net::blob_bytes);
  REQUIRE(small_net::save(original, blob) == small_net::blob_bytes);

  small_net::weights loaded = make_small_weights(22);
  REQUIRE(small_net::load(blob, loaded));
  std::vector<std::byte> again(small_net::blob_bytes);
  REQUIRE(small_net::save(loaded, again) == small_net::blob_bytes);
  CHECK(again == blob);
  CHECK(loaded.layer<0>().filter == original.layer<0>().filter);
  CHECK(loaded.layer<4>().filter_scales == original.layer<4>().filter_scales);
  CHECK(loaded.layer<3>().output == original.layer<3>().output);

  const std::vector<u8> input = random_tensor<u8>(small_net::input_shape, 23);
  check_network<small_net>(loaded, input, small_net_by_hand(original, input));
}

TEST_CASE("net: a blob for another network is a blob_mismatch and leaves the weights untouched") {
  const recording_errors errors;
  std::vector<std::byte> blob(small_net::blob_bytes);
  REQUIRE(small_net::save(make_small_weights(31), blob) == small_net::blob_bytes);

  small_net_wider::weights other{};
  other.input = {0.5f, 7};
  CHECK_FALSE(small_net_wider::load(blob, other));
  CHECK(last_error == errc::blob_mismatch);
  CHECK(other.input == quant_params{0.5f, 7});

  // Same size, different header byte: a changed output shape.
  last_error = errc::ok;
  small_net::weights same{};
  std::vector<std::byte> corrupted = blob;
  corrupted[40] ^= std::byte{1};
  CHECK_FALSE(small_net::load(corrupted, same));
  CHECK(last_error == errc::blob_mismatch);

  last_error = errc::ok;
  CHECK_FALSE(small_net::load(std::span<const std::byte>(blob).first(blob.size() - 1), same));
  CHECK(last_error == errc::blob_mismatch);
}

TEST_CASE("net: profile prints a row per op layer and a summary") {
  const aspp_net::weights w = make_aspp_weights(41);
  const auto prepared = aspp_net::prepare(w);
  const std::vector<i8> input = random_tensor<i8>(aspp_net::input_shape, 42);
  std::vector<i8> output(aspp_net::output_shape.elements());
  aligned_arena arena(aspp_net::arena_bytes);
  std::FILE* text = std::tmpfile();
  REQUIRE(text != nullptr);
  const auto report = profile<aspp_net>(prepared, cview(input, aspp_net::input_shape),
                                        view(output, aspp_net::output_shape), arena.bytes, 3, text);
  CHECK(report.runs == 3);
  CHECK(report.total_ms > 0.0);
  CHECK(report.layer_ms[1] == 0.0);  // a tap does no work
  std::rewind(text);
  std::string printed;
  for (int c = std::fgetc(text); c != EOF; c = std::fgetc(text)) printed.push_back(static_cast<char>(c));
  std::fclose(text);
  CHECK(printed.find("global_average_pool") != std::string::npos);
  CHECK(printed.find("16x16x24") != std::string::npos);
  CHECK(printed.find("total: " + std::to_string(aspp_net::macs) + " MACs") != std::string::npos);
  CHECK(std::count(printed.begin(), printed.end(), '\n') == 1 + 8 + 1);  // header, 8 op layers, summary
  CHECK(output == aspp_net_by_hand(w, input));
}

}  // namespace

// A segmentation decoder's tail: hard-swish, an overlapping 3x3 stride-2 transposed convolution, hard-swish again and
// the 2x2 stride-2 transposed convolution to one channel (the selfie model's last layers), in i8 per-channel.
using decoder_net =
    network<input<i8, 5, 6, 4>,
            layers::hard_swish<>,                                                                        // 0: 5x6x4
            layers::transpose_conv<layers::transpose_conv_config{.out_channels = 6, .kernel = {3, 3}}>,  // 1: 10x12x6
            layers::hard_swish<>,                                                                        // 2
            layers::transpose_conv<layers::transpose_conv_config{
                .out_channels = 1, .kernel = {2, 2}, .stride = {2, 2}, .padding = padding::valid()}>>;  // 3: 20x24x1

static_assert(decoder_net::layer_shapes ==
              std::array<shape, 4>{shape{5, 6, 4}, shape{10, 12, 6}, shape{10, 12, 6}, shape{20, 24, 1}});
// Transposed convolutions: every input pixel meets every tap: 30 * 9 * 4 * 6 and 120 * 4 * 6 * 1.
static_assert(decoder_net::layer_macs == std::array<std::uint64_t, 4>{120, 6480, 720, 2880});
// hard-swish is a table lookup per element: it runs in place.
static_assert(decoder_net::buffer_of(3) == decoder_net::buffer_of(2));

std::vector<i8> decoder_net_by_hand(const decoder_net::weights& w, const std::vector<i8>& input) {
  const shape s0{5, 6, 4}, s1{10, 12, 6}, s3{20, 24, 1};
  std::vector<i8> t0(s0.elements()), t1(s1.elements()), t2(s1.elements()), out(s3.elements());
  reference::hard_swish<i8>(cview(input, s0), view(t0, s0),
                            reference::make_hard_swish_params<i8>(w.input, w.layer<0>().output));
  const auto& up1 = w.layer<1>();
  reference::transpose_conv<R, i8>(
      cview(t0, s0), up1.filter.data(), up1.bias.data(), view(t1, s1), {.kernel = {3, 3}, .stride = {2, 2}},
      reference::make_conv_requant<R, i8>(w.layer<0>().output, up1.filter_scales, 0, up1.output, activation::none));
  reference::hard_swish<i8>(cview(t1, s1), view(t2, s1),
                            reference::make_hard_swish_params<i8>(up1.output, w.layer<2>().output));
  const auto& up3 = w.layer<3>();
  reference::transpose_conv<R, i8>(
      cview(t2, s1), up3.filter.data(), up3.bias.data(), view(out, s3),
      {.kernel = {2, 2}, .stride = {2, 2}, .padding = padding::valid()},
      reference::make_conv_requant<R, i8>(w.layer<2>().output, up3.filter_scales, 0, up3.output, activation::none));
  return out;
}

TEST_CASE(
    "net: hard-swish and transposed convolutions (layers::hard_swish, layers::transpose_conv) equal the "
    "reference") {
  lcg rng{29};
  decoder_net::weights w;
  w.input = {0.05f, -10};
  w.layer<0>().output = {0.03f, -100};
  fill_conv<i8>(w.layer<1>(), rng, {0.08f, 5});
  w.layer<2>().output = {0.05f, -110};
  fill_conv<i8>(w.layer<3>(), rng, {0.1f, -3});
  const std::vector<i8> input = random_tensor<i8>(decoder_net::input_shape, 31);
  const std::vector<i8> expected = decoder_net_by_hand(w, input);
  CHECK(std::set<i8>(expected.begin(), expected.end()).size() > 8);
  check_network<decoder_net>(w, input, expected);
}
