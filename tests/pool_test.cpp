// ops/pool.hpp against reference/pool.hpp, bit for bit: max and average pool over kernel / stride / padding grids
// with every activation, global average pool with equal and unequal quantizations in both rounding modes; u8 and i8,
// channel counts around the 16-element block, odd sizes down to 1, batch 2, unaligned and strided views, canaries.
#include "mosaiq/ops/pool.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "mosaiq/reference/pool.hpp"
#include "placed_tensor.hpp"
#include "support.hpp"

namespace {

using mosaiq::activation;
using mosaiq::hw;
using mosaiq::i8;
using mosaiq::padding;
using mosaiq::quant_params;
using mosaiq::rounding;
using mosaiq::shape;
using mosaiq::u8;
namespace ref = mosaiq::reference;
using mosaiq::test::placed_tensor;

using mosaiq::test::layout;
constexpr layout layouts[] = {{1, 0, 0}, {2, 3, 1}};
constexpr int channel_counts[] = {1, 3, 8, 15, 16, 17, 31, 64, 100};
constexpr shape sizes[] = {{1, 1, 0}, {1, 6, 0}, {5, 1, 0}, {5, 7, 0}, {8, 9, 0}};

struct window {
  hw kernel, stride;
  padding pad;
};
const window windows[] = {
    {{1, 1}, {1, 1}, padding::valid()},
    {{2, 2}, {2, 2}, padding::valid()},
    {{2, 2}, {2, 2}, padding::same()},
    {{3, 3}, {1, 1}, padding::same()},
    {{3, 3}, {2, 2}, padding::same()},
    {{3, 2}, {1, 3}, padding::valid()},
    {{5, 5}, {2, 1}, padding::same()},
    {{1, 4}, {1, 2}, padding::same()},
    {{3, 3}, {2, 2}, padding::explicit_pads(1, 2, 2, 1)},
};

template <class T, bool Max>
void check_windowed() {
  std::mt19937 rng(21);
  const quant_params quant{0.03f, std::is_same_v<T, u8> ? 120 : -9};
  for (const window& w : windows)
    for (const activation act : {activation::none, activation::relu6, activation::relu_n1_to_1})
      for (const layout l : layouts)
        for (const int channels : channel_counts)
          for (shape size : sizes) {
            if (size.height < w.kernel.h && w.pad.mode == mosaiq::padding_mode::valid) continue;
            if (size.width < w.kernel.w && w.pad.mode == mosaiq::padding_mode::valid) continue;
            size.channels = channels;
            const ref::pool_params params{.kernel = w.kernel, .stride = w.stride, .pad = w.pad, .act = act};
            const mosaiq::window_geometry g =
                mosaiq::resolve_window(size.height, size.width, w.kernel, w.stride, hw{1, 1}, w.pad);
            if (g.y.output <= 0 || g.x.output <= 0) continue;
            const shape out_dims{g.y.output, g.x.output, channels};
            placed_tensor<T> in(size, l.batch, l.extra, l.misalign);
            placed_tensor<T> out(out_dims, l.batch, l.extra == 0 ? 0 : 1, l.misalign + 1);
            placed_tensor<T> expected(out_dims, l.batch, 0, 0);
            in.fill_random(rng);
            mosaiq::test::recording_handler errors;  // explicit pads may leave a window outside: both must refuse
            if constexpr (Max) {
              ref::max_pool<T>(in.view(), expected.view(), params, quant);
              const int reference_errors = errors.calls();
              mosaiq::max_pool<T>(in.view(), out.view(), params, quant);
              CHECK(errors.calls() == 2 * reference_errors);
              if (reference_errors != 0) continue;
            } else {
              ref::average_pool<T>(in.view(), expected.view(), params, quant);
              const int reference_errors = errors.calls();
              mosaiq::average_pool<T>(in.view(), out.view(), params, quant);
              CHECK(errors.calls() == 2 * reference_errors);
              if (reference_errors != 0) continue;
            }
            CAPTURE(channels);
            CAPTURE(size.height);
            CAPTURE(size.width);
            CAPTURE(w.kernel.h);
            CAPTURE(w.kernel.w);
            CAPTURE(w.stride.h);
            CAPTURE(w.stride.w);
            CAPTURE(l.batch);
            CAPTURE(static_cast<int>(act));
            CHECK(out.values() == expected.values());
            CHECK(out.first_damaged_canary() == -1);
            CHECK(in.first_damaged_canary() == -1);
          }
}

/// The dense-sums grid's path of `channels` channels on this level: the vectors per step (0: channel_sums, which
/// sums channels in groups of sum_blocks blocks), whether the last 16-lane finish block is partial, and whether
/// channel_sums needs more than one group. A scalar build's op is the reference: the same channel classes.
struct dense_sums_path {
  int vectors;
  bool channel_tail, several_groups;
  bool operator==(const dense_sums_path&) const = default;
};

dense_sums_path dense_sums_path_of(int channels) {
#if MOSAIQ_TARGET_SIMD
  namespace pooling = mosaiq::detail::pooling;
  return {pooling::dense_sums::vectors_for(channels), channels % mosaiq::lanes::block != 0,
          channels > pooling::sum_blocks * mosaiq::lanes::block};
#else
  return {0, channels % 16 != 0, channels > 64};
#endif
}

/// Whether the whole-map pool grids run one case per kernel path: at the levels that run the eltwise grids so
/// (MOSAIQ_TEST_BROADCAST_PATH_GRIDS: x86 AVX-512 VNNI, the ARM NEON binaries, the sanitizer AVX2 one), and in
/// scalar builds, whose pools call the reference (the grid compared it with itself). The full grids run in x86's
/// AVX2 and AVX-512 binaries (docs/decisions.md, "The test suite, part 9").
constexpr bool one_run_per_kernel_path = MOSAIQ_TEST_BROADCAST_PATH_GRIDS || !MOSAIQ_TARGET_SIMD;

/// Whether the grid runs `channels` on the maps of its kind (`small`: up to 1024 pixels). The full grid: every count
/// on the small maps, and on the large ones the counts 1 mod 7 and 16, 24 and 48 (past 256 steps of 16-bit sums on
/// every level). One run per kernel path: only the first count of each dense_sums_path among those, so that every
/// path of the level still runs on every map, layout and fill.
bool dense_sums_grid_runs(int channels, bool small) {
  const auto candidate = [small](int c) { return small || c % 7 == 1 || c == 24 || c == 16 || c == 48; };
  if (!candidate(channels)) return false;
  if (!one_run_per_kernel_path) return true;
  for (int earlier = 1; earlier < channels; ++earlier)
    if (candidate(earlier) && dense_sums_path_of(earlier) == dense_sums_path_of(channels)) return false;
  return true;
}

TEST_CASE("max_pool equals the reference: u8") { check_windowed<u8, true>(); }
TEST_CASE("max_pool equals the reference: i8") { check_windowed<i8, true>(); }
TEST_CASE("average_pool equals the reference: u8") { check_windowed<u8, false>(); }
TEST_CASE("average_pool equals the reference: i8") { check_windowed<i8, false>(); }

TEST_CASE_TEMPLATE("average_pool: the vector rounded division is exact for every sum and tap count", T, u8, i8) {
  // One output pixel per (window, value): a k x k window over a constant image divides k*k*v by k*k, so use an
  // image whose taps sum to every value in range instead: a 1 x taps window over a row of chosen values.
  std::mt19937 rng(8);
  // Past 4096 taps the sums are divided in scalar code.
  for (const int taps : {1, 2, 3, 4, 5, 6, 7, 9, 12, 25, 49, 63, 100, 255, 256, 1000, 4096, 4097, 5000, 16384}) {
    // 4097 and 5000 take the scalar division too: the grids one per kernel path leave out the largest image.
    if (one_run_per_kernel_path && taps == 16384) continue;
    const int width = taps;
    const int channels = 16;
    std::vector<T> in(static_cast<std::size_t>(width * channels) * 64);
    for (T& v : in) v = static_cast<T>(std::uniform_int_distribution<int>(-128, 255)(rng));
    // 64 rows: row r is biased toward the extremes so sums near both ends and near ties occur.
    for (int r = 0; r < 64; ++r)
      for (int i = 0; i < width * channels; ++i)
        if ((i + r) % (r % 7 + 2) == 0)
          in[static_cast<std::size_t>(r * width * channels + i)] =
              r % 2 ? mosaiq::element_traits<T>::max : mosaiq::element_traits<T>::min;
    const ref::pool_params params{.kernel = {1, taps}, .stride = {1, 1}, .pad = padding::valid()};
    std::vector<T> out(64 * channels), expected(64 * channels);
    const mosaiq::tensor_view<const T> view(in.data(), shape{64, width, channels});
    ref::average_pool<T>(view, mosaiq::tensor_view<T>(expected.data(), shape{64, 1, channels}), params, {1.0f, 0});
    mosaiq::average_pool<T>(view, mosaiq::tensor_view<T>(out.data(), shape{64, 1, channels}), params, {1.0f, 0});
    CAPTURE(taps);
    CHECK(out == expected);
  }
}

TEST_CASE_TEMPLATE("average_pool over whole maps of more than 4096 taps equals the reference", T, u8, i8) {
  // The selfie model's squeeze-and-excitation pools (AVERAGE_POOL_2D over the whole 128x128 map), with channel tails,
  // a strided view and an activation clamp.
  std::mt19937 rng(21);
  struct whole_map {
    int height, width, channels;
  };
  for (const whole_map m : {whole_map{128, 128, 16}, whole_map{65, 70, 19}, whole_map{64, 65, 33}}) {
    const int pixel_stride = m.channels + 3;
    std::vector<T> in(static_cast<std::size_t>(m.height * m.width * pixel_stride) + 1);  // +1: an unaligned view
    for (T& v : in) v = static_cast<T>(std::uniform_int_distribution<int>(-128, 255)(rng));
    const mosaiq::tensor_view<const T> view(in.data() + 1, shape{m.height, m.width, m.channels}, 1, pixel_stride);
    for (const activation act : {activation::none, activation::relu6}) {
      const ref::pool_params params{
          .kernel = {m.height, m.width}, .stride = {m.height, m.width}, .pad = padding::valid(), .act = act};
      const mosaiq::quant_params quant{0.05f, 3};
      std::vector<T> out(static_cast<std::size_t>(m.channels)), expected(out.size());
      ref::average_pool<T>(view, mosaiq::tensor_view<T>(expected.data(), shape{1, 1, m.channels}), params, quant);
      mosaiq::average_pool<T>(view, mosaiq::tensor_view<T>(out.data(), shape{1, 1, m.channels}), params, quant);
      CAPTURE(m.height);
      CAPTURE(m.channels);
      CHECK(out == expected);
    }
  }
}

#if MOSAIQ_TARGET_SIMD
TEST_CASE("lanes::rounded_divide equals reference rounded_divide for every window sum") {
  // Every sum a window of d taps can have, u8 and i8 alike; some of them (n = k * d with fl(1/d) < 1/d) make the
  // float quotient one too small, which the remainder test corrects.
  namespace lanes = mosaiq::lanes;
  long mismatches = 0;
  for (const int d : {1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 13, 25, 49, 50, 81, 100, 121, 127, 255, 256, 1000, 4095, 4096}) {
    const lanes::divisor_regs divisor = lanes::divisor_regs::of(d);
    alignas(64) std::int32_t sums[lanes::block], got[lanes::block];
    for (int first = -128 * d; first <= 255 * d; first += lanes::block) {
      for (int j = 0; j < lanes::block; ++j) sums[j] = std::min(first + j, 255 * d);
      lanes::reg r[lanes::regs];
      lanes::load(sums, r);
      for (int k = 0; k < lanes::regs; ++k) r[k] = lanes::rounded_divide(r[k], divisor);
      lanes::store(got, r);
      for (int j = 0; j < lanes::block; ++j) mismatches += got[j] != ref::detail::rounded_divide(sums[j], d);
    }
  }
  CHECK(mismatches == 0);
}
#endif

template <class T, rounding R>
void check_global() {
  std::mt19937 rng(31);
  mosaiq::test::random_quant<T> random(rng);
  const shape global_sizes[] = {{1, 1, 0}, {1, 7, 0}, {5, 3, 0}, {16, 16, 0}, {9, 11, 0}};
  for (int trial = 0; trial < 6; ++trial) {
    const quant_params in_quant = random();
    const quant_params out_quant = trial % 3 == 0 ? in_quant : random();
    for (const layout l : layouts)
      for (const int channels : channel_counts)
        for (shape size : global_sizes) {
          size.channels = channels;
          const shape out_dims{1, 1, channels};
          placed_tensor<T> in(size, l.batch, l.extra, l.misalign);
          placed_tensor<T> out(out_dims, l.batch, l.extra == 0 ? 0 : 2, l.misalign + 1);
          placed_tensor<T> expected(out_dims, l.batch, 0, 0);
          in.fill_random(rng);
          ref::global_average_pool<R, T>(in.view(), expected.view(), in_quant, out_quant);
          mosaiq::global_average_pool<R, T>(in.view(), out.view(), in_quant, out_quant);
          CAPTURE(channels);
          CAPTURE(size.height);
          CAPTURE(size.width);
          CAPTURE(trial);
          CHECK(out.values() == expected.values());
          CHECK(out.first_damaged_canary() == -1);
          // The prepared form the network executor uses.
          const ref::global_pool_params params =
              ref::make_global_average_pool_params<R, T>(in_quant, out_quant, size.height * size.width);
          placed_tensor<T> prepared(out_dims, l.batch, 0, 1);
          mosaiq::global_average_pool<R, T>(in.view(), prepared.view(), params);
          CHECK(prepared.values() == expected.values());
        }
  }
}

/// Scaled sums far beyond the element range (many pixels, an output scale far below the input's, values one step from
/// the zero point either way): the means saturate in the vector finish as in the reference.
template <class T, rounding R>
void check_global_large_sums() {
  std::mt19937 rng(37);
  const shape size{96, 128, 19};
  const int zero_point = mosaiq::element_traits<T>::min + 3;
  for (const float ratio : {3000.0f, 40000.0f})
    for (const int step : {1, -1}) {
      const quant_params in_quant{0.05f, zero_point};
      const quant_params out_quant{0.05f / ratio, 0};
      placed_tensor<T> in(size, 1, 0, 1);
      const mosaiq::tensor_view<T> values = in.view();
      for (int y = 0; y < size.height; ++y)
        for (int x = 0; x < size.width; ++x)
          for (int c = 0; c < size.channels; ++c)
            values.pixel(0, y, x)[c] = static_cast<T>(zero_point + (rng() % 2 == 0 ? step : 0));
      placed_tensor<T> out(shape{1, 1, 19}, 1, 2, 1);
      placed_tensor<T> expected(shape{1, 1, 19}, 1, 0, 0);
      ref::global_average_pool<R, T>(in.view(), expected.view(), in_quant, out_quant);
      mosaiq::global_average_pool<R, T>(in.view(), out.view(), in_quant, out_quant);
      CAPTURE(ratio);
      CAPTURE(step);
      CHECK(out.values() == expected.values());
      CHECK(out.first_damaged_canary() == -1);
    }
}

TEST_CASE("global_average_pool: scaled sums that saturate") {
  check_global_large_sums<u8, rounding::tflite_reference>();
  check_global_large_sums<i8, rounding::single_round>();
}

TEST_CASE("global_average_pool equals the reference: u8, TFLite reference rounding") {
  check_global<u8, rounding::tflite_reference>();
}
TEST_CASE("global_average_pool equals the reference: i8, TFLite reference rounding") {
  check_global<i8, rounding::tflite_reference>();
}
TEST_CASE("global_average_pool equals the reference: u8 and i8, single rounding") {
  check_global<u8, rounding::single_round>();
  check_global<i8, rounding::single_round>();
}

TEST_CASE("global_average_pool: large images and extreme values") {
  // 181 x 181 pixels of 255 (u8) or -128 (i8): sums near the int32 bounds of the 16-element blocks.
  const shape dims{181, 181, 19};
  std::vector<u8> in_u8(dims.elements(), 255);
  std::vector<i8> in_i8(dims.elements(), -128);
  std::vector<u8> out_u8(19), expected_u8(19);
  std::vector<i8> out_i8(19), expected_i8(19);
  const quant_params in_q{0.02f, 3}, out_q{0.5f, 7};
  ref::global_average_pool<rounding::tflite_reference, u8>(mosaiq::tensor_view<const u8>(in_u8.data(), dims),
                                                           mosaiq::tensor_view<u8>(expected_u8.data(), shape{1, 1, 19}),
                                                           in_q, out_q);
  mosaiq::global_average_pool<rounding::tflite_reference, u8>(mosaiq::tensor_view<const u8>(in_u8.data(), dims),
                                                              mosaiq::tensor_view<u8>(out_u8.data(), shape{1, 1, 19}),
                                                              in_q, out_q);
  CHECK(out_u8 == expected_u8);
  ref::global_average_pool<rounding::single_round, i8>(mosaiq::tensor_view<const i8>(in_i8.data(), dims),
                                                       mosaiq::tensor_view<i8>(expected_i8.data(), shape{1, 1, 19}),
                                                       in_q, out_q);
  mosaiq::global_average_pool<rounding::single_round, i8>(mosaiq::tensor_view<const i8>(in_i8.data(), dims),
                                                          mosaiq::tensor_view<i8>(out_i8.data(), shape{1, 1, 19}), in_q,
                                                          out_q);
  CHECK(out_i8 == expected_i8);
}

/// The whole-image channel sums on 16-bit lanes (ops/pool/dense_sums.hpp) that dense views take in the global average
/// pool and in the average pool whose window is the whole map: every channel count 1-100 (steps of 4-8 vectors and
/// counts without a step), maps from 1x1 (under dense_sums::min_image_bytes: the other path) to past 4096 taps and
/// past 256 steps of 16-bit sums (64x64 is 256 steps of 384 bytes at 24 channels on AVX-512), odd sizes with a
/// partial last step, random, all-largest and all-smallest values (the 16-bit lanes' bounds), batch 2 and misaligned
/// views; canaries around the output.
template <class T>
void check_dense_sums() {
  std::mt19937 rng(41);
  const shape maps[] = {{1, 1, 0}, {3, 5, 0}, {7, 9, 0}, {23, 29, 0}, {32, 32, 0}, {64, 64, 0}, {65, 70, 0}};
  const layout dense_layouts[] = {{1, 0, 0}, {2, 0, 3}};
  mosaiq::test::random_quant<T> random(rng);
  long mismatches = 0, checked = 0;
  for (int channels = 1; channels <= 100; ++channels)
    for (shape size : maps)
      for (const layout l : dense_layouts)
        for (const int fill : {0, 1, 2}) {
          if (!dense_sums_grid_runs(channels, size.pixels() <= 1024)) continue;
          size.channels = channels;
          placed_tensor<T> in(size, l.batch, l.extra, l.misalign);
          in.fill_random(rng);
          const mosaiq::tensor_view<T> values = in.view();
          if (fill > 0)
            for (int n = 0; n < l.batch; ++n)
              for (int y = 0; y < size.height; ++y)
                for (int x = 0; x < size.width; ++x)
                  for (int c = 0; c < channels; ++c)
                    values.pixel(n, y, x)[c] =
                        fill == 1 ? mosaiq::element_traits<T>::max : mosaiq::element_traits<T>::min;
          const shape out_dims{1, 1, channels};
          // Whole-map AVERAGE_POOL_2D (valid, and same padding: one window over the whole map either way).
          for (const padding pad : {padding::valid(), padding::same()}) {
            const ref::pool_params params{.kernel = {size.height, size.width},
                                          .stride = {size.height, size.width},
                                          .pad = pad,
                                          .act = fill == 0 ? activation::relu6 : activation::none};
            const quant_params quant{0.04f, std::is_same_v<T, u8> ? 100 : -20};
            placed_tensor<T> out(out_dims, l.batch, 0, l.misalign + 1), expected(out_dims, l.batch, 0, 0);
            ref::average_pool<T>(in.view(), expected.view(), params, quant);
            mosaiq::average_pool<T>(in.view(), out.view(), params, quant);
            mismatches += out.values() != expected.values() || out.first_damaged_canary() != -1;
            ++checked;
          }
          // MEAN, both rounding modes.
          const quant_params in_quant = random(), out_quant = fill == 0 ? random() : in_quant;
          placed_tensor<T> out(out_dims, l.batch, 0, l.misalign + 1), expected(out_dims, l.batch, 0, 0);
          ref::global_average_pool<rounding::tflite_reference, T>(in.view(), expected.view(), in_quant, out_quant);
          mosaiq::global_average_pool<rounding::tflite_reference, T>(in.view(), out.view(), in_quant, out_quant);
          mismatches += out.values() != expected.values() || out.first_damaged_canary() != -1;
          ref::global_average_pool<rounding::single_round, T>(in.view(), expected.view(), in_quant, out_quant);
          mosaiq::global_average_pool<rounding::single_round, T>(in.view(), out.view(), in_quant, out_quant);
          mismatches += out.values() != expected.values() || out.first_damaged_canary() != -1;
          checked += 2;
          CHECK(in.first_damaged_canary() == -1);
        }
  CAPTURE(checked);
  CHECK(mismatches == 0);
}

TEST_CASE_TEMPLATE("global and whole-map average pool on dense views equal the reference", T, u8, i8) {
  check_dense_sums<T>();
}

TEST_CASE("pool kernels: misuse is reported and writes nothing") {
  mosaiq::test::recording_handler errors;
  std::vector<u8> in(4 * 4 * 3, 1), out(2 * 2 * 3, 9);
  const ref::pool_params params{.kernel = {2, 2}, .stride = {2, 2}};
  mosaiq::max_pool<u8>(mosaiq::tensor_view<const u8>(in.data(), shape{4, 4, 3}),
                       mosaiq::tensor_view<u8>(out.data(), shape{2, 1, 3}), params, {0.1f, 0});
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  mosaiq::average_pool<u8>(mosaiq::tensor_view<const u8>(nullptr, shape{4, 4, 3}),
                           mosaiq::tensor_view<u8>(out.data(), shape{2, 2, 3}), params, {0.1f, 0});
  CHECK(errors.calls() == 2);
  mosaiq::global_average_pool<rounding::tflite_reference, u8>(mosaiq::tensor_view<const u8>(in.data(), shape{4, 4, 3}),
                                                              mosaiq::tensor_view<u8>(out.data(), shape{1, 1, 3}),
                                                              ref::global_pool_params{});
  CHECK(errors.calls() == 3);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  CHECK(std::count(out.begin(), out.end(), u8{9}) == 12);
}

}  // namespace
