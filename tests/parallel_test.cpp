// Threads: the built-in pool runs every task exactly once; row bands are a pure function of rows and
// thread count; every op that splits its rows, and whole networks, give bit-identical results on 1 to 8
// threads (more threads than this machine's cores included) and allocate nothing while running.
#include "mosaiq/core/parallel.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "allocation_counter.hpp"
#include "mosaiq/net.hpp"
#include "mosaiq/ops.hpp"
#include "mosaiq/reference.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;
constexpr rounding R = rounding::tflite_reference;
constexpr int max_test_threads = 8;

TEST_CASE("parallel: thread_pool runs each task exactly once, job after job") {
  for (int threads = 1; threads <= max_test_threads; ++threads) {
    thread_pool pool(threads);
    CHECK(pool.thread_count() == threads);
    for (std::size_t tasks : {0, 1, 2, 3, 7, 8, 9, 31}) {
      for (int job = 0; job < 20; ++job) {
        std::array<std::atomic<int>, 32> runs{};
        auto count = [&](std::size_t t) { runs[t].fetch_add(1, std::memory_order_relaxed); };
        pool.parallel_for(tasks, count);
        for (std::size_t t = 0; t < runs.size(); ++t) CHECK(runs[t].load() == (t < tasks ? 1 : 0));
      }
    }
  }
}

TEST_CASE("parallel: thread_pool's workers see the caller's writes and the caller sees theirs") {
  thread_pool pool(4);
  std::vector<int> data(4096);
  for (int round = 0; round < 50; ++round) {
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = round + static_cast<int>(i);
    auto twice = [&](std::size_t t) {
      for (std::size_t i = t * 1024; i < (t + 1) * 1024; ++i) data[i] *= 2;
    };
    pool.parallel_for(4, twice);
    for (std::size_t i = 0; i < data.size(); i += 97) CHECK(data[i] == 2 * (round + static_cast<int>(i)));
  }
}

// Tasks are claimed, not assigned to threads: a thread held inside one task leaves the job's other tasks
// to the threads that are free (with tasks dealt to threads in turn, the holder would wait on its own).
TEST_CASE("parallel: thread_pool's free threads take the tasks a held thread would have had") {
  for (int threads = 2; threads <= 4; ++threads) {
    CAPTURE(threads);
    thread_pool pool(threads);
    const std::size_t tasks = static_cast<std::size_t>(3 * threads);
    for (int job = 0; job < 10; ++job) {
      std::atomic<std::size_t> finished{0};
      std::atomic<bool> holder_saw_all{false};
      std::atomic<int> holders{0};
      auto task = [&](std::size_t) {
        if (holders.fetch_add(1) == 0) {  // the first task to start holds its thread until the others are done
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (finished.load() != tasks - 1 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
          holder_saw_all.store(finished.load() == tasks - 1);
        }
        finished.fetch_add(1);
      };
      pool.parallel_for(tasks, task);
      CHECK(holder_saw_all.load());
      CHECK(finished.load() == tasks);
    }
  }
}

// parallel_pieces keeps a thread on the same rows layer after layer only if the caller always runs task 0.
TEST_CASE("parallel: thread_pool's caller runs task 0 of every job") {
  for (int threads = 2; threads <= 4; ++threads) {
    CAPTURE(threads);
    thread_pool pool(threads);
    const std::thread::id caller = std::this_thread::get_id();
    int elsewhere = 0;
    for (int job = 0; job < 200; ++job) {
      std::atomic<bool> on_caller{false};
      auto task = [&](std::size_t t) {
        if (t == 0) on_caller.store(std::this_thread::get_id() == caller);
        // Long enough for a spinning worker to claim a task while the caller publishes the job.
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
        while (std::chrono::steady_clock::now() < until) {
        }
      };
      pool.parallel_for(std::size_t(threads), task);
      elsewhere += on_caller.load() ? 0 : 1;
    }
    CHECK(elsewhere == 0);
  }
}

TEST_CASE("parallel: serial_executor runs the tasks in order on the caller") {
  serial_executor serial;
  std::vector<std::size_t> order;
  auto record = [&](std::size_t t) { order.push_back(t); };
  serial.parallel_for(5, record);
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 3, 4});
  static_assert(parallel_executor<serial_executor> && parallel_executor<thread_pool>);
}

TEST_CASE("parallel: row bands cover the rows once, in order, sizes within one") {
  static_assert(row_bands::split(7, 3)[0] == row_band{0, 3} && row_bands::split(7, 3)[1] == row_band{3, 5} &&
                row_bands::split(7, 3)[2] == row_band{5, 7});
  static_assert(row_bands::split(2, 8).count == 2 && row_bands::split(0, 4).count == 1);
  for (int rows = 0; rows <= 40; ++rows)
    for (int threads = 1; threads <= 9; ++threads) {
      const row_bands bands = row_bands::split(rows, threads);
      CHECK(bands.count == std::max(1, std::min(rows, threads)));
      int next = 0, smallest = rows, largest = 0;
      for (int i = 0; i < bands.count; ++i) {
        CHECK(bands[i].first == next);
        next = bands[i].last;
        smallest = std::min(smallest, bands[i].rows());
        largest = std::max(largest, bands[i].rows());
      }
      CHECK(next == rows);
      CHECK(largest - smallest <= 1);
    }
}

TEST_CASE("parallel: pieces split the rows as row bands, at least one a band, none under the least rows") {
  static_assert(split_pieces(256, 2, 4, 8).count == 8 && split_pieces(32, 2, 4, 8).count == 4);
  static_assert(split_pieces(16, 2, 4, 8).count == 2 && split_pieces(5, 4, 4, 8).count == 4);
  for (int rows = 1; rows <= 70; ++rows)
    for (int bands = 1; bands <= std::min(rows, 8); ++bands)
      for (int per_band : {1, 2, 4})
        for (int least : {1, 4, 8}) {
          CAPTURE(rows);
          CAPTURE(bands);
          const row_bands pieces = split_pieces(rows, bands, per_band, least);
          CHECK(pieces.rows == rows);
          CHECK(pieces.count >= bands);
          CHECK(pieces.count <= bands * per_band);
          if (pieces.count > bands) CHECK(rows / pieces.count >= least);
          // The most pieces within both bounds.
          if (pieces.count < bands * per_band) CHECK(rows / (pieces.count + 1) < least);
        }
}

// Every piece runs once, with a slot no other piece uses at the same time; a thread held inside its first piece
// leaves the job's other pieces to the free threads.
TEST_CASE("parallel: parallel_pieces runs each piece once on its task's slot; free threads take a held one's") {
  for (int threads = 1; threads <= 4; ++threads)
    for (std::size_t slots = 1; slots <= std::size_t(threads); ++slots)
      for (std::size_t pieces : {slots, slots + 1, 4 * slots, 4 * slots + 3}) {
        CAPTURE(threads);
        CAPTURE(slots);
        CAPTURE(pieces);
        thread_pool pool(threads);
        std::array<std::atomic<int>, 32> runs{};
        std::array<std::atomic<int>, 8> in_slot{};
        std::atomic<bool> shared_slot{false}, bad_slot{false};
        std::atomic<std::size_t> finished{0};
        std::atomic<int> holders{0};
        std::atomic<bool> holder_saw_all{false};
        const bool hold = threads > 1 && slots > 1;
        auto piece = [&](std::size_t p, std::size_t slot) {
          if (slot >= slots) bad_slot.store(true);
          if (in_slot[slot % 8].fetch_add(1) != 0) shared_slot.store(true);
          if (hold && holders.fetch_add(1) == 0) {
            const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (finished.load() != pieces - 1 && std::chrono::steady_clock::now() < give_up)
              std::this_thread::yield();
            holder_saw_all.store(finished.load() == pieces - 1);
          }
          runs[p].fetch_add(1);
          in_slot[slot % 8].fetch_sub(1);
          finished.fetch_add(1);
        };
        parallel_pieces(pool, pieces, slots, piece);
        for (std::size_t p = 0; p < runs.size(); ++p) CHECK(runs[p].load() == (p < pieces ? 1 : 0));
        CHECK_FALSE(shared_slot.load());
        CHECK_FALSE(bad_slot.load());
        CHECK(holder_saw_all.load() == hold);
      }
}

// A tensor in a buffer with `extra` unused elements after every pixel's channels (a strided view)
// and guard bytes after the last pixel, which no run may touch.
template <class T>
struct strided_tensor {
  shape dims;
  int pixel_stride;
  std::vector<T> buffer;
  strided_tensor(shape s, int extra, std::mt19937& rng)
      : dims(s), pixel_stride(s.channels + extra), buffer(test::random_values<T>(rng, size_for(s, extra) + 64)) {}
  static std::size_t size_for(shape s, int extra) { return s.pixels() * static_cast<std::size_t>(s.channels + extra); }
  tensor_view<T> view() { return tensor_view<T>(buffer.data(), dims, 1, pixel_stride); }
  tensor_view<const T> cview() const { return tensor_view<const T>(buffer.data(), dims, 1, pixel_stride); }
};

// Runs `kernel` serially into one output and on pools of 1..8 threads into others (each starting from
// the same bytes): every byte, padding between strided pixels and the guard included, must agree.
template <class Kernel, class T>
void check_bands_match(const Kernel& kernel, const strided_tensor<T>& in, strided_tensor<T> out) {
  std::vector<std::byte> serial_workspace(Kernel::workspace_bytes(in.dims));
  strided_tensor<T> expected = out;
  kernel(in.cview(), expected.view(), serial_workspace);
  for (int threads = 1; threads <= max_test_threads; ++threads) {
    CAPTURE(threads);
    thread_pool pool(threads);
    std::vector<std::byte> workspace(parallel_workspace_bytes<Kernel>(in.dims, threads));
    strided_tensor<T> got = out;
    const long before = test::heap_allocations();
    parallel_run(pool, kernel, in.cview(), got.view(), workspace);
    CHECK(test::heap_allocations() == before);
    CHECK(got.buffer == expected.buffer);
  }
}

template <class T>
reference::conv_requant requant_for(std::mt19937& rng, int channels) {
  // uint8 filters are per tensor (one scale), int8 ones per output channel.
  std::vector<float> scales(std::is_same_v<T, u8> ? 1 : static_cast<std::size_t>(channels));
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  for (float& s : scales) s = scale(rng);
  const std::int32_t filter_zp = std::is_same_v<T, u8> ? 7 : 0;
  return reference::make_conv_requant<R, T>({0.05f, std::is_same_v<T, u8> ? 120 : -3}, scales, filter_zp,
                                            {0.08f, std::is_same_v<T, u8> ? 110 : 5}, activation::relu6);
}

template <class Kernel, class T>
void check_conv_kind(shape in_shape, int out_channels, int filter_elements_per_output, int extra) {
  std::mt19937 rng(static_cast<unsigned>(in_shape.height * 131 + in_shape.width * 7 + in_shape.channels));
  const std::vector<T> filter =
      test::random_values<T>(rng, static_cast<std::size_t>(out_channels * filter_elements_per_output), -100, 100);
  std::vector<std::int32_t> bias(static_cast<std::size_t>(out_channels));
  std::uniform_int_distribution<std::int32_t> b(-2000, 2000);
  for (auto& v : bias) v = b(rng);
  const Kernel kernel(filter.data(), bias.data(), in_shape.channels, requant_for<T>(rng, out_channels));
  const strided_tensor<T> in(in_shape, extra, rng);
  check_bands_match(kernel, in, strided_tensor<T>(Kernel::output_shape(in_shape), extra, rng));
}

TEST_CASE_TEMPLATE("parallel: depthwise bands equal one run, 1..8 threads", T, u8, i8) {
  constexpr depthwise_config k3{.kernel = {3, 3}};
  constexpr depthwise_config k3s2{.kernel = {3, 3}, .stride = {2, 2}};
  constexpr depthwise_config k5d2{.kernel = {5, 5}, .dilation = {2, 2}};
  constexpr depthwise_config valid{.kernel = {3, 3}, .pad = padding::valid()};
  constexpr depthwise_config m2{.kernel = {3, 3}, .depth_multiplier = 2};
  for (const shape s : {shape{1, 5, 8}, shape{7, 9, 19}, shape{13, 6, 32}, shape{17, 11, 40}}) {
    CAPTURE(s.height);
    check_conv_kind<mosaiq::depthwise<k3, T>, T>(s, s.channels, 9, 0);
    check_conv_kind<mosaiq::depthwise<k3s2, T>, T>(s, s.channels, 9, 3);
    check_conv_kind<mosaiq::depthwise<k5d2, T>, T>(s, s.channels, 25, 0);
    if (s.height >= 3) check_conv_kind<mosaiq::depthwise<valid, T>, T>(s, s.channels, 9, 5);
    check_conv_kind<mosaiq::depthwise<m2, T>, T>(s, 2 * s.channels, 9, 0);
  }
}

TEST_CASE_TEMPLATE("parallel: conv2d bands equal one run, 1..8 threads", T, u8, i8) {
  constexpr conv2d_config k3s2{.out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}};
  constexpr conv2d_config k3{.out_channels = 20, .kernel = {3, 3}};
  constexpr conv2d_config k5d2{.out_channels = 8, .kernel = {5, 5}, .dilation = {2, 2}, .pad = padding::valid()};
  for (const shape s : {shape{1, 7, 3}, shape{9, 9, 3}, shape{15, 12, 8}, shape{23, 10, 5}}) {
    CAPTURE(s.height);
    check_conv_kind<mosaiq::conv2d<k3s2, T>, T>(s, 16, 9 * s.channels, 0);
    check_conv_kind<mosaiq::conv2d<k3, T>, T>(s, 20, 9 * s.channels, 2);
    if (s.height >= 9 && s.width >= 9) check_conv_kind<mosaiq::conv2d<k5d2, T>, T>(s, 8, 25 * s.channels, 0);
  }
}

TEST_CASE_TEMPLATE("parallel: pointwise bands equal one run, 1..8 threads", T, u8, i8) {
  for (const shape s : {shape{1, 9, 16}, shape{5, 7, 24}, shape{12, 12, 64}, shape{19, 3, 40}}) {
    CAPTURE(s.height);
    check_conv_kind<mosaiq::pointwise<pointwise_config{.out_channels = 24}, T>, T>(s, 24, s.channels, 0);
    check_conv_kind<mosaiq::pointwise<pointwise_config{.out_channels = 40}, T>, T>(s, 40, s.channels, 4);
  }
}

template <class Resize, class T>
void check_resize_bands(shape in_shape, int extra) {
  std::mt19937 rng(static_cast<unsigned>(in_shape.height * 31 + in_shape.channels));
  const strided_tensor<T> in(in_shape, extra, rng);
  const strided_tensor<T> start(Resize::output_shape(in_shape), extra, rng);
  strided_tensor<T> expected = start;
  Resize::run(in.cview(), expected.view());
  for (int threads = 1; threads <= max_test_threads; ++threads) {
    CAPTURE(threads);
    thread_pool pool(threads);
    strided_tensor<T> got = start;
    parallel_rows(pool, got.dims.height,
                  [&](row_band band, std::size_t) { Resize::run_rows(in.cview(), got.view(), band); });
    CHECK(got.buffer == expected.buffer);
  }
}

TEST_CASE_TEMPLATE("parallel: bilinear resize bands equal one run, 1..8 threads", T, u8, i8) {
  using half_pixel_2x = mosaiq::resize_bilinear<resize_config{.scale = 2, .mode = resize_mode::half_pixel}, T>;
  using legacy_2x = mosaiq::resize_bilinear<resize_config{.scale = 2, .mode = resize_mode::legacy}, T>;
  using any_ratio_3x = mosaiq::resize_bilinear<resize_config{.scale = 3, .mode = resize_mode::half_pixel}, T>;
  using identity = mosaiq::resize_bilinear<resize_config{.scale = 1, .mode = resize_mode::half_pixel}, T>;
  for (const shape s : {shape{1, 4, 2}, shape{5, 7, 2}, shape{9, 6, 16}, shape{4, 5, 21}}) {
    CAPTURE(s.height);
    if constexpr (half_pixel_2x::specialized) check_resize_bands<half_pixel_2x, T>(s, 0);
    if constexpr (legacy_2x::specialized) check_resize_bands<legacy_2x, T>(s, 3);
    if constexpr (any_ratio_3x::specialized) check_resize_bands<any_ratio_3x, T>(s, 0);
    if constexpr (identity::specialized) check_resize_bands<identity, T>(s, 1);
  }
}

/// A pointwise config with small GEMM blocks: its workspace (a slice per thread) stays below the networks' maps
/// on every target, so that the row runs the tests expect keep within the peak on every target.
constexpr layers::pointwise_config small_blocks(int out_channels) {
  return {.out_channels = out_channels, .block_bytes = 4096};
}

// Every layer kind that splits (conv2d, depthwise, pointwise, add and mul, also broadcasting a 1x1xC
// tap, pools, nearest and bilinear resize, concat, softmax) and one that does not (global average pool).
template <int Threads>
using kinds_net = network<
    input<u8, 64, 63, 3>::with_max_threads<Threads>,                                                    //
    layers::conv2d<layers::conv2d_config{.out_channels = 16}>,                                          // 64x63x16
    layers::tap<"skip">,                                                                                //
    layers::depthwise<layers::depthwise_config{.kernel = {3, 3}}>,                                      //
    layers::add<"skip">,                                                                                //
    layers::tap<"x">,                                                                                   //
    layers::max_pool<layers::pool_config{.kernel = {3, 3}, .stride = {2, 2}, .pad = padding::same()}>,  // 32x32x16
    layers::resize_nearest<layers::resize_config{.scale = 2}>,                                          // 64x64x16
    layers::average_pool<layers::pool_config{.kernel = {1, 2}, .stride = {1, 1}}>,
    layers::tap<"p">,                                             // 64x63x16
    layers::from<"x">,                                            //
    layers::global_average_pool<>,                                // 1x1x16
    layers::tap<"gate">,                                          //
    layers::resize_bilinear<layers::resize_config{.scale = 64}>,  // 64x64x16
    layers::max_pool<layers::pool_config{.kernel = {1, 2}, .stride = {1, 1}}>,
    layers::tap<"g">,                     // 64x63x16
    layers::concat<"x", "p", "g">,        // 64x63x48
    layers::pointwise<small_blocks(16)>,  //
    layers::mul<"gate">,                  // broadcasts the 1x1x16 gate over every band
    layers::add<"gate">,                  //
    layers::softmax<>>;

static_assert(kinds_net<1>::output_shape == shape{64, 63, 16});
// A single-thread network plans exactly the kernels' workspace; more threads add slices.
static_assert(kinds_net<1>::arena_bytes < kinds_net<4>::arena_bytes);
// On 8 threads every op layer but the global average pool (one output pixel) runs in 8 bands, so the
// comparisons below cover each layer kind's split; small layers would use fewer. Scalar builds run the
// 64x bilinear resize through the reference, whose rows do not split.
constexpr bool bilinear_splits =
    mosaiq::resize_bilinear<resize_config{.scale = 64, .mode = resize_mode::half_pixel}, u8>::specialized;
constexpr int expected_bands(std::string_view kind) {
  return kind == "global_average_pool" || (kind == "resize_bilinear" && !bilinear_splits) ? 1 : 8;
}
static_assert([]<std::size_t... I>(std::index_sequence<I...>) {
  using net = kinds_net<8>;
  return ((net::topology.layers[I].role != layer_role::op ||
           net::layer_bands<I>(8) == expected_bands(net::layer<I>::kind)) &&
          ...);
}(std::make_index_sequence<kinds_net<8>::layer_count>{}));
static_assert(kinds_net<8>::layer_bands<0>(3) == 3 && kinds_net<2>::layer_bands<0>(8) == 2);

// Row runs: the depthwise layer and the add after it (its output rows read only the same rows), and the
// 1x2 max pool through the concat, pointwise, broadcast mul and add to the softmax (taps inside). A run
// on threads is one parallel_for: on 8 threads the conv2d, both runs, the 32x32 max pool, nearest
// resize, 1x2 average pool and (where it splits) the bilinear resize; the global pool runs whole. A
// network planned for one thread has none.
template <int Threads>
using row_run = typename kinds_net<Threads>::row_run;
static_assert(kinds_net<8>::active_row_runs[2] == row_run<8>{2, 3} &&
              kinds_net<8>::active_row_runs[4] == row_run<8>{} &&
              kinds_net<8>::active_row_runs[13] == row_run<8>{13, 19} &&
              kinds_net<8>::active_row_runs[14] == row_run<8>{13, 19} && !kinds_net<8>::active_row_runs[12].active());
static_assert(kinds_net<8>::parallel_steps(8) == 6 + (bilinear_splits ? 1 : 0) && kinds_net<8>::parallel_steps(1) == 0);
static_assert(std::ranges::none_of(kinds_net<1>::row_runs, [](const row_run<1>& r) { return r.active(); }));

// Row runs keep within the peak live bytes of the plan without them (net/network.hpp, choose_row_runs). On the
// 64x64 maps the depthwise and both pointwise layers after it (1..3) could run as one run, but that would hold
// the 32-channel maps of layers 0 and 1 and both 8-channel outputs at once, more than the busiest layer (the
// depthwise: its input and output) holds; the depthwise with the first pointwise would too. The two pointwise
// layers hold less, so they run as a run; so do the depthwise, pointwise and softmax on the pooled 32x32 maps.
template <int Threads>
using run_memory_net = network<input<u8, 64, 64, 8>::with_max_threads<Threads>,
                               layers::pointwise<small_blocks(32)>,                            // 0: 64x64x32
                               layers::depthwise<layers::depthwise_config{.kernel = {3, 3}}>,  // 1
                               layers::pointwise<small_blocks(8)>,                             // 2: 64x64x8
                               layers::pointwise<small_blocks(8)>,                             // 3
                               layers::max_pool<layers::pool_config{.kernel = {2, 2}, .stride = {2, 2}}>,  // 4: 32x32x8
                               layers::depthwise<layers::depthwise_config{.kernel = {3, 3}}>,              // 5
                               layers::pointwise<small_blocks(8)>,                                         // 6
                               layers::softmax<>>;                                                         // 7
using memory_net = run_memory_net<4>;
static_assert(memory_net::row_runs[1] == memory_net::row_run{1, 3} &&
              memory_net::row_runs[5] == memory_net::row_run{5, 7});
static_assert(!memory_net::active_row_runs[1].active() && memory_net::active_row_runs[2] == memory_net::row_run{2, 3} &&
              memory_net::active_row_runs[3] == memory_net::row_run{2, 3} &&
              memory_net::active_row_runs[5] == memory_net::row_run{5, 7});
static_assert(memory_net::parallel_steps(4) == 5 &&
              memory_net::peak_live_bytes == memory_net::peak_live_bytes_without_runs);
// On two threads the conv2d's workspace is smaller, and so the peak: of the candidate 13..19 only its pointwise,
// broadcast mul, add and softmax keep within it (the max pool and concat would hold their 48-channel map too).
static_assert(kinds_net<2>::row_runs[13] == row_run<2>{13, 19} && !kinds_net<2>::active_row_runs[13].active() &&
              !kinds_net<2>::active_row_runs[15].active() && kinds_net<2>::active_row_runs[16] == row_run<2>{16, 19});
// Every network with runs keeps within the plan without them (a static_assert in network checks the peak).
static_assert(memory_net::arena_bytes <= memory_net::arena_bytes_without_runs);
static_assert(kinds_net<8>::arena_bytes <= kinds_net<8>::arena_bytes_without_runs);
static_assert(kinds_net<2>::peak_live_bytes <= kinds_net<2>::peak_live_bytes_without_runs);

// The networks' runs on threads: plans and plumbing the same on every level (MOSAIQ_TEST_BANDED_NETWORKS, support.hpp;
// the ops' row bands above run on every level).
#if MOSAIQ_TEST_BANDED_NETWORKS
using test::random_weights;

/// What a serial run of a network gave: its weights as a blob, its input and its output.
struct serial_result {
  std::vector<std::byte> blob;
  std::vector<u8> input, output;
};

/// NetN (NetOne's layers planned for more threads) on 1..max_threads threads of a pool gives NetOne's serial
/// output byte for byte, three times each, with no heap while running. The weights go through a blob.
template <class NetOne, class NetN>
serial_result check_threads_equal_serial(unsigned seed, int max_threads) {
  const typename NetOne::weights w = random_weights<NetOne>(seed);
  serial_result serial{std::vector<std::byte>(NetOne::blob_bytes), {}, {}};
  REQUIRE(NetOne::save(w, serial.blob) == serial.blob.size());
  typename NetN::weights tw;
  REQUIRE(NetN::load(serial.blob, tw));

  std::mt19937 rng(seed + 1);
  serial.input = test::random_values<u8>(rng, NetOne::input_shape.elements());
  const auto in_view = tensor_view<const u8>(serial.input.data(), NetOne::input_shape);
  serial.output.resize(NetOne::output_shape.elements());
  test::aligned_arena serial_arena(NetOne::arena_bytes);
  NetOne::run(NetOne::prepare(w), in_view, tensor_view<u8>(serial.output.data(), NetOne::output_shape),
              serial_arena.bytes);
  CHECK(std::set<u8>(serial.output.begin(), serial.output.end()).size() > 8);

  const typename NetN::prepared tp = NetN::prepare(tw);
  test::aligned_arena arena(NetN::arena_bytes);
  for (int threads = 1; threads <= max_threads; ++threads) {
    CAPTURE(threads);
    thread_pool pool(threads);
    for (int repeat = 0; repeat < 3; ++repeat) {
      std::vector<u8> got(serial.output.size(), u8{0x5A});
      const long before = test::heap_allocations();
      NetN::run(tp, in_view, tensor_view<u8>(got.data(), NetN::output_shape), arena.bytes, pool);
      CHECK(test::heap_allocations() == before);
      CHECK(got == serial.output);
    }
  }
  return serial;
}

TEST_CASE("parallel: row runs within the plan's peak equal the serial run on 1..4 threads") {
  check_threads_equal_serial<run_memory_net<1>, memory_net>(21, 4);
}

TEST_CASE("parallel: a network on 1..8 threads equals its serial run, no heap while running") {
  const serial_result serial =
      check_threads_equal_serial<kinds_net<1>, kinds_net<max_test_threads>>(5, max_test_threads);
  const auto in_view = tensor_view<const u8>(serial.input.data(), kinds_net<1>::input_shape);
  // The counter itself works (under ThreadSanitizer too, where a malloc hook counts).
  const long before_probe = test::heap_allocations();
  void* probe = ::operator new(16);  // a direct call: unlike a new-expression, it may not be elided
  ::operator delete(probe);
  CHECK(test::heap_allocations() >= before_probe + 1);

  // A pool larger than max_threads uses max_threads of them.
  thread_pool wide(max_test_threads + 2);
  std::vector<u8> got(serial.output.size());
  kinds_net<2>::weights w2;
  REQUIRE(kinds_net<2>::load(serial.blob, w2));
  test::aligned_arena small_arena(kinds_net<2>::arena_bytes);
  kinds_net<2>::run(kinds_net<2>::prepare(w2), in_view, tensor_view<u8>(got.data(), kinds_net<2>::output_shape),
                    small_arena.bytes, wide);
  CHECK(got == serial.output);
}

TEST_CASE("parallel: profile() runs a network on threads and times every op layer or row run") {
  using net = kinds_net<2>;
  const net::weights w = random_weights<net>(3);
  const net::prepared p = net::prepare(w);
  std::vector<u8> input(net::input_shape.elements(), u8{90}), output(net::output_shape.elements());
  test::aligned_arena arena(net::arena_bytes);
  thread_pool pool(2);
  const auto report = profile<net>(p, tensor_view<const u8>(input.data(), net::input_shape),
                                   tensor_view<u8>(output.data(), net::output_shape), arena.bytes, 3, nullptr, pool);
  CHECK(report.runs == 3);
  CHECK(report.total_ms > 0);
  // A row run on threads is one step, timed on its last layer.
  for (std::size_t i = 0; i < net::layer_count; ++i) {
    CAPTURE(i);
    const net::row_run run = net::active_row_runs[i];
    if (net::topology.layers[i].role != layer_role::op) continue;
    if (run.active() && int(i) != run.last)
      CHECK(report.layer_ms[i] == 0);
    else
      CHECK(report.layer_ms[i] > 0);
  }
}

#endif  // MOSAIQ_TEST_BANDED_NETWORKS

}  // namespace
