// ops/eltwise.hpp against reference/eltwise.hpp, bit for bit: add (u8, i8, both rounding modes, every activation,
// random and extreme quantizations, in place) and concat (equal and unequal quantizations, channel slices, in place),
// channel counts around the 16-element block, odd sizes down to 1, batch 2, unaligned and strided views, canaries.
// Broadcasting add and mul: every broadcast pattern of two NHWC inputs over a 2x3x5xC output (each axis of each
// input full or 1, at least one full), channel counts around the 16-element block and the 8-element gather, dense and
// strided/misaligned views with canaries, u8 and i8, both rounding modes, activations, random and extreme
// quantizations (multipliers flushed to zero, exactly 1, with large left shifts), in place, and mul over every pair of
// byte values through the element-wise, held-scalar and held-vector kernels. With MOSAIQ_TEST_BROADCAST_PATH_GRIDS=1
// the broadcast, same-shape add and held-line grids run one quantization per distinct kernel path (broadcast_path).
#include "mosaiq/ops/eltwise.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

#include "mosaiq/ops/eltwise/held_lines.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "placed_tensor.hpp"
#include "support.hpp"

namespace {

using mosaiq::activation;
using mosaiq::element_traits;
using mosaiq::i8;
using mosaiq::quant_params;
using mosaiq::rounding;
using mosaiq::shape;
using mosaiq::tensor_view;
using mosaiq::u8;
namespace ref = mosaiq::reference;
using mosaiq::test::placed_tensor;

using mosaiq::test::layout;
constexpr layout layouts[] = {{1, 0, 0}, {2, 0, 3}, {1, 5, 1}, {2, 1, 0}};
constexpr int channel_counts[] = {1, 3, 8, 15, 16, 17, 31, 64, 100};
constexpr shape sizes[] = {{1, 1, 0}, {1, 5, 0}, {3, 1, 0}, {5, 7, 0}, {2, 9, 0}};
constexpr activation activations[] = {activation::none, activation::relu, activation::relu6, activation::relu_n1_to_1};

/// (a, b, out) quantizations: random ones plus hand-picked extremes (tiny and huge scale ratios: shifts near -31,
/// outputs that saturate, equal scales).
template <class T>
std::vector<std::array<quant_params, 3>> add_quantizations(std::mt19937& rng) {
  mosaiq::test::random_quant<T> random(rng);
  std::vector<std::array<quant_params, 3>> q;
  for (int i = 0; i < 4; ++i) q.push_back({random(), random(), random()});
  const int zp = std::is_same_v<T, u8> ? 128 : 0;
  q.push_back({quant_params{0.05f, zp}, quant_params{0.05f, zp}, quant_params{0.05f, zp}});
  q.push_back({quant_params{1e-7f, zp + 3}, quant_params{0.05f, zp - 7}, quant_params{0.1f, zp}});
  q.push_back({quant_params{0.5f, zp - 100}, quant_params{1e-9f, 5}, quant_params{0.001f, zp + 20}});
  q.push_back({quant_params{0.02f, zp}, quant_params{0.03f, zp}, quant_params{10.0f, zp}});
  return q;
}

/// add_quantizations plus two with equal input scales whose ties defeat the linear form (TFLite reference rounding):
/// on x86 the first keeps exact tables and the second has neither, so add's table-only and pipeline-only walks run too.
template <class T>
std::vector<std::array<quant_params, 3>> add_quantizations_with_ties(std::mt19937& rng) {
  std::vector<std::array<quant_params, 3>> quantizations = add_quantizations<T>(rng);
  const int lo = element_traits<T>::min, mid = lo + 128, hi = element_traits<T>::max;
  quantizations.push_back({quant_params{0.05f, lo}, quant_params{0.05f, mid}, quant_params{0.1f, hi}});
  quantizations.push_back({quant_params{0.05f, hi}, quant_params{0.05f, lo}, quant_params{0.1f, mid}});
  return quantizations;
}

TEST_CASE_TEMPLATE("add over every pair of values equals the reference", T, u8, i8) {
  // 256 x 256 pairs as one dense 256 x 256 x 1 tensor, for several quantizations.
  std::mt19937 rng(5);
  std::vector<T> a(65536), b(65536), out(65536), expected(65536);
  for (int i = 0; i < 65536; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<T>(i & 255);
    b[static_cast<std::size_t>(i)] = static_cast<T>(i >> 8);
  }
  const shape dims{256, 256, 1};
  for (const auto& q : add_quantizations<T>(rng)) {
    const mosaiq::add<T> kernel(q[0], q[1], q[2], activation::none);
    ref::add<rounding::tflite_reference, T>(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims),
                                            tensor_view<T>(expected.data(), dims), kernel.params());
    kernel(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims),
           tensor_view<T>(out.data(), dims));
    CHECK(out == expected);
    const mosaiq::add<T, rounding::single_round> single(q[0], q[1], q[2], activation::none);
    ref::add<rounding::single_round, T>(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims),
                                        tensor_view<T>(expected.data(), dims), single.params());
    single(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims),
           tensor_view<T>(out.data(), dims));
    CHECK(out == expected);
  }
}

/// Every (a, b) byte pair, SIMD against the reference, for scales that make the multipliers and shifts differ (and
/// ones whose exact ties defeat the per-input tables, so the arithmetic fallback runs too), zero points at both ends
/// and the middle, both rounding modes, no activation and relu6.
template <class T, rounding R>
void check_add_exhaustive(std::vector<T>& a, std::vector<T>& b, int& table_runs, int& runs) {
  constexpr std::array<std::array<float, 3>, 6> scales{{{0.05f, 0.03f, 0.07f},
                                                        {0.05f, 0.05f, 0.1f},
                                                        {0.02f, 0.5f, 0.3f},
                                                        {1e-3f, 0.2f, 0.25f},
                                                        {0.1f, 0.1f, 0.1f},
                                                        {0.0078125f, 0.0078125f, 0.015625f}}};
  constexpr std::array<int, 3> zero_points =
      std::is_same_v<T, u8> ? std::array<int, 3>{0, 128, 255} : std::array<int, 3>{-128, 0, 127};
  const shape dims{256, 256, 1};
  std::vector<T> out(65536), expected(65536);
  for (const auto& s : scales)
    for (std::size_t z = 0; z < zero_points.size(); ++z)
      for (const activation act : {activation::none, activation::relu6}) {
        const quant_params qa{s[0], zero_points[z]}, qb{s[1], zero_points[(z + 1) % 3]},
            qo{s[2], zero_points[(z + 2) % 3]};
        const mosaiq::add<T, R> kernel(qa, qb, qo, act);
        REQUIRE(kernel.valid());
        ref::add<R, T>(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims),
                       tensor_view<T>(expected.data(), dims), kernel.params());
        std::fill(out.begin(), out.end(), T{7});
        kernel(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims),
               tensor_view<T>(out.data(), dims));
        CAPTURE(s[0]);
        CAPTURE(s[1]);
        CAPTURE(s[2]);
        CAPTURE(z);
        CAPTURE(static_cast<int>(act));
        CAPTURE(kernel.uses_tables());
        CHECK(out == expected);
        ++runs;
        table_runs += kernel.uses_tables() ? 1 : 0;
      }
}

TEST_CASE_TEMPLATE("add over every pair of values: zero points, scales, rounding modes, relu6", T, u8, i8) {
  std::vector<T> a(65536), b(65536);
  for (int i = 0; i < 65536; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<T>(i & 255);
    b[static_cast<std::size_t>(i)] = static_cast<T>(i >> 8);
  }
  int table_runs = 0, runs = 0;
  check_add_exhaustive<T, rounding::tflite_reference>(a, b, table_runs, runs);
  check_add_exhaustive<T, rounding::single_round>(a, b, table_runs, runs);
  MESSAGE("per-input tables in ", table_runs, " of ", runs, " quantizations");
  if constexpr (mosaiq::detail::eltwise::native_path::add_tables) {
    CHECK(table_runs * 2 > runs);  // most quantizations take the tables
    const mosaiq::add<T> generic(quant_params{0.05f, 3}, quant_params{0.03f, 9}, quant_params{0.07f, 2});
    CHECK(generic.uses_tables());
  } else {
    CHECK(table_runs == 0);
  }
}

/// add's linear form (ops/eltwise/add_linear.hpp) over every (a, b) pair: the load-time proof re-checked here from
/// its scalar formula (every unflagged pair's candidate is the reference's output), then the kernel on all pairs as
/// one dense tensor (flagged blocks on the tables) against the reference. Counts the quantizations with a form and
/// the flagged pairs.
template <class T, rounding R>
void check_add_linear(const std::array<quant_params, 3>& q, activation act, const std::vector<T>& a,
                      const std::vector<T>& b, int& forms, int& flagged, int& wrong, int& on_pipeline) {
  const shape dims{256, 256, 1};
  const mosaiq::add<T, R> kernel(q[0], q[1], q[2], act);
  REQUIRE(kernel.valid());
  std::vector<T> out(65536), expected(65536);
  ref::add<R, T>(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims),
                 tensor_view<T>(expected.data(), dims), kernel.params());
  kernel(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims), tensor_view<T>(out.data(), dims));
  CAPTURE(q[0].scale);
  CAPTURE(q[1].scale);
  CAPTURE(q[2].scale);
  CAPTURE(q[0].zero_point);
  CAPTURE(q[1].zero_point);
  CAPTURE(q[2].zero_point);
  CAPTURE(static_cast<int>(act));
  CHECK(out == expected);
  const mosaiq::detail::eltwise::add_linear* form = kernel.linear_form();
  if (form == nullptr) return;
  ++forms;
  on_pipeline += kernel.uses_tables() ? 0 : 1;  // tables not exact: flagged blocks on the arithmetic pipeline
  int unflagged_wrong = 0, flags = 0, wrongs = 0;
  for (std::size_t i = 0; i < 65536; ++i) {
    const bool flag = form->flagged(a[i], b[i]);
    const bool right = form->candidate(a[i], b[i], kernel.params().clamp) == expected[i];
    unflagged_wrong += !flag && !right ? 1 : 0;
    flags += flag ? 1 : 0;
    wrongs += right ? 0 : 1;
  }
  CHECK(unflagged_wrong == 0);
  CHECK(flags == form->flagged_pairs);
  CHECK(wrongs == form->wrong_pairs);
  CHECK(flags <= mosaiq::detail::eltwise::max_flagged_pairs);
  flagged += flags;
  wrong += wrongs;
}

TEST_CASE_TEMPLATE("add's linear form: every pair against the reference, a grid of quantizations", T, u8, i8) {
  std::vector<T> a(65536), b(65536);
  for (int i = 0; i < 65536; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<T>(i & 255);
    b[static_cast<std::size_t>(i)] = static_cast<T>(i >> 8);
  }
  std::mt19937 rng(25);
  std::vector<std::array<quant_params, 3>> grid = add_quantizations<T>(rng);
  std::uniform_real_distribution<float> ratio(0.3f, 3.0f);
  mosaiq::test::random_quant<T> random(rng);
  for (int i = 0; i < 12; ++i) {  // residual-like: the output scale near the inputs'
    const quant_params qa = random(), qb = random();
    grid.push_back({qa, qb, quant_params{std::max(qa.scale, qb.scale) * ratio(rng), random().zero_point}});
  }
  int forms = 0, flagged = 0, wrong = 0, runs = 0, on_pipeline = 0;
  for (const auto& q : grid)
    for (const activation act : {activation::none, activation::relu, activation::relu6}) {
      check_add_linear<T, rounding::tflite_reference>(q, act, a, b, forms, flagged, wrong, on_pipeline);
      check_add_linear<T, rounding::single_round>(q, act, a, b, forms, flagged, wrong, on_pipeline);
      runs += 2;
    }
  MESSAGE("linear form in ", forms, " of ", runs, " quantizations (", on_pipeline,
          " without exact tables); flagged pairs ", flagged, ", wrong candidates ", wrong, " (all flagged) of ",
          forms * 65536);
  if constexpr (mosaiq::detail::eltwise::native_path::linear_add) {
    CHECK(forms * 4 > runs * 3);
    CHECK(wrong > 0);  // the flagged blocks' tables did run: without them these outputs would differ
  } else {
    CHECK(forms == 0);
  }
}

TEST_CASE_TEMPLATE("add's linear form: flagged blocks, tails, unaligned and in-place views", T, u8, i8) {
  // The first random quantization whose linear form has wrong candidates: those pairs are placed in some blocks, the
  // rest random.
  std::mt19937 rng(31);
  mosaiq::test::random_quant<T> random(rng);
  mosaiq::add<T> kernel;
  const mosaiq::detail::eltwise::add_linear* form = nullptr;
  // Without the linear form (a compile-time choice of the path) no quantization gets one: a few kernels show it (the
  // search for one with wrong candidates would build all 400 for nothing).
  const int tries = mosaiq::detail::eltwise::native_path::linear_add ? 400 : 8;
  for (int i = 0; i < tries && (form == nullptr || form->wrong_pairs == 0); ++i) {
    kernel = mosaiq::add<T>(random(), random(), random(), activation::none);
    form = kernel.linear_form();
  }
  if constexpr (!mosaiq::detail::eltwise::native_path::linear_add) {
    CHECK(form == nullptr);
    return;
  }
  REQUIRE(form != nullptr);
  const ref::detail::add_scales scales = ref::detail::decode_add_scales<rounding::tflite_reference>(kernel.params());
  std::vector<std::array<T, 2>> wrong_pairs;
  for (int x = element_traits<T>::min; x <= element_traits<T>::max; ++x)
    for (int y = element_traits<T>::min; y <= element_traits<T>::max; ++y) {
      const T exact = ref::detail::add_element<rounding::tflite_reference, T>(static_cast<T>(x), static_cast<T>(y),
                                                                              kernel.params(), scales);
      if (form->candidate(x, y, kernel.params().clamp) != exact)
        wrong_pairs.push_back({static_cast<T>(x), static_cast<T>(y)});
    }
  MESSAGE("wrong candidates ", wrong_pairs.size(), ", flagged pairs ", form->flagged_pairs, ", shift ", form->shift,
          ", band ", form->band);
  REQUIRE(!wrong_pairs.empty());
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{31}, std::size_t{32}, std::size_t{33},
                              std::size_t{95}, std::size_t{200}, std::size_t{1000}})
    for (const int misalign : {0, 1, 3}) {
      std::vector<T> a = mosaiq::test::random_values<T>(rng, n + 8), b = mosaiq::test::random_values<T>(rng, n + 8);
      for (std::size_t i = 0; i < n; i += 13) {  // a wrong-candidate pair every 13 elements, tails included
        const auto& pair = wrong_pairs[i % wrong_pairs.size()];
        a[static_cast<std::size_t>(misalign) + i] = pair[0];
        b[static_cast<std::size_t>(misalign) + i] = pair[1];
      }
      const shape dims{1, static_cast<int>(n), 1};
      std::vector<T> expected(n + 8, T{5}), out(n + 8, T{5});
      const tensor_view<const T> va(a.data() + misalign, dims), vb(b.data() + misalign, dims);
      ref::add<rounding::tflite_reference, T>(va, vb, tensor_view<T>(expected.data() + misalign, dims),
                                              kernel.params());
      kernel(va, vb, tensor_view<T>(out.data() + misalign, dims));
      CAPTURE(n);
      CAPTURE(misalign);
      CHECK(out == expected);  // the elements around the run keep their 5 too
      std::vector<T> in_place = a;
      kernel(tensor_view<const T>(in_place.data() + misalign, dims), vb,
             tensor_view<T>(in_place.data() + misalign, dims));
      CHECK(std::equal(in_place.begin() + misalign, in_place.begin() + misalign + static_cast<std::ptrdiff_t>(n),
                       expected.begin() + misalign));
      in_place = b;
      kernel(va, tensor_view<const T>(in_place.data() + misalign, dims),
             tensor_view<T>(in_place.data() + misalign, dims));
      CHECK(std::equal(in_place.begin() + misalign, in_place.begin() + misalign + static_cast<std::ptrdiff_t>(n),
                       expected.begin() + misalign));
    }
}

template <class T>
void check_concat() {
  std::mt19937 rng(7);
  mosaiq::test::random_quant<T> random(rng);
  const int zp = std::is_same_v<T, u8> ? 128 : 0;
  const quant_params out_quant{0.04f, zp - 3};
  // Per input: equal to the output's, random, or extreme (saturating ratios both ways, ties).
  const std::vector<quant_params> input_quants{
      out_quant, random(), random(), quant_params{0.02f, zp - 3}, quant_params{40.0f, zp + 1}, quant_params{1e-6f, zp}};
  for (const layout l : layouts)
    for (const int first : channel_counts)
      for (const int second : {1, 16, 17, 31})
        for (shape size : sizes) {
          const quant_params q0 = input_quants[static_cast<std::size_t>(first + second) % input_quants.size()];
          const quant_params q1 = input_quants[static_cast<std::size_t>(first * 3 + second) % input_quants.size()];
          const quant_params q2 = input_quants[static_cast<std::size_t>(second * 5 + size.width) % input_quants.size()];
          const int third = 3;
          const int total = first + second + third;
          size.channels = first;
          placed_tensor<T> in0(size, l.batch, l.extra, l.misalign);
          placed_tensor<T> in1(shape{size.height, size.width, second}, l.batch, l.extra + 1, l.misalign + 1);
          placed_tensor<T> in2(shape{size.height, size.width, third}, l.batch, 0, 2);
          // The output is channels [2, 2 + total) of a wider tensor when the layout is strided.
          const int lead = l.extra == 0 ? 0 : 2;
          placed_tensor<T> wide(shape{size.height, size.width, total + lead + (l.extra == 0 ? 0 : l.extra)}, l.batch, 0,
                                l.misalign);
          placed_tensor<T> wide_expected = wide;
          in0.fill_random(rng);
          in1.fill_random(rng);
          in2.fill_random(rng);
          const std::array<ref::concat_input<T>, 3> parts{{{in0.view(), q0}, {in1.view(), q1}, {in2.view(), q2}}};
          ref::concat<T>(std::span<const ref::concat_input<T>>(parts), wide_expected.view().channel_slice(lead, total),
                         out_quant);
          mosaiq::concat<T>(std::span<const ref::concat_input<T>>(parts), wide.view().channel_slice(lead, total),
                            out_quant);
          CAPTURE(first);
          CAPTURE(second);
          CAPTURE(size.height);
          CAPTURE(size.width);
          CAPTURE(l.batch);
          CAPTURE(l.extra);
          CHECK(wide.storage == wide_expected.storage);  // values and every byte around them
          CHECK(in0.first_damaged_canary() == -1);
          CHECK(in1.first_damaged_canary() == -1);
        }
}

TEST_CASE("concat equals the reference: u8") { check_concat<u8>(); }
TEST_CASE("concat equals the reference: i8") { check_concat<i8>(); }

TEST_CASE_TEMPLATE("concat in place: an input that is its destination slice", T, u8, i8) {
  std::mt19937 rng(11);
  const quant_params out_quant{0.1f, 3}, other{0.07f, 2};
  for (const bool rescale : {false, true}) {
    placed_tensor<T> wide(shape{3, 5, 40}, 2, 0, 1);
    wide.fill_random(rng);
    placed_tensor<T> expected = wide;
    placed_tensor<T> head(shape{3, 5, 17}, 2, 0, 0);
    head.fill_random(rng);
    const quant_params tail_quant = rescale ? other : out_quant;
    // The reference on a copy: its tail input is its own slice too.
    const std::array<ref::concat_input<T>, 2> expected_parts{
        {{head.view(), out_quant}, {expected.view().channel_slice(17, 23), tail_quant}}};
    ref::concat<T>(std::span<const ref::concat_input<T>>(expected_parts), expected.view(), out_quant);
    const std::array<ref::concat_input<T>, 2> parts{
        {{head.view(), out_quant}, {wide.view().channel_slice(17, 23), tail_quant}}};
    mosaiq::concat<T>(std::span<const ref::concat_input<T>>(parts), wide.view(), out_quant);
    CHECK(wide.storage == expected.storage);
  }
}

TEST_CASE("concat rescale: the vector rounding equals std::round on every u8 and i8 value and many ratios") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> log_scale(-12.0f, 12.0f);
  std::vector<u8> in(256), out(256), expected(256);
  for (int i = 0; i < 256; ++i) in[static_cast<std::size_t>(i)] = static_cast<u8>(i);
  const shape dims{1, 256, 1};
  for (int trial = 0; trial < 300; ++trial) {
    const quant_params in_quant{std::exp2(log_scale(rng)), trial % 256};
    const quant_params out_quant{std::exp2(log_scale(rng) / 4), (trial * 7) % 256};
    const std::array<ref::concat_input<u8>, 1> parts{{{tensor_view<const u8>(in.data(), dims), in_quant}}};
    ref::concat<u8>(std::span<const ref::concat_input<u8>>(parts), tensor_view<u8>(expected.data(), dims), out_quant);
    mosaiq::concat<u8>(std::span<const ref::concat_input<u8>>(parts), tensor_view<u8>(out.data(), dims), out_quant);
    CHECK(out == expected);
  }
}

TEST_CASE("eltwise kernels: misuse is reported and writes nothing") {
  mosaiq::test::recording_handler errors;
  std::vector<u8> a(24, 1), b(24, 2), out(24, 9);
  const mosaiq::add<u8> kernel(quant_params{0.1f, 0}, quant_params{0.1f, 0}, quant_params{0.2f, 0});
  kernel(tensor_view<const u8>(a.data(), shape{2, 3, 4}), tensor_view<const u8>(b.data(), shape{2, 3, 4}),
         tensor_view<u8>(out.data(), shape{3, 2, 4}));
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  const mosaiq::add<u8> invalid;
  invalid(tensor_view<const u8>(a.data(), shape{2, 3, 4}), tensor_view<const u8>(b.data(), shape{2, 3, 4}),
          tensor_view<u8>(out.data(), shape{2, 3, 4}));
  CHECK(errors.calls() == 2);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  const std::array<ref::concat_input<u8>, 1> parts{{{tensor_view<const u8>(a.data(), shape{2, 3, 4}), {0.1f, 0}}}};
  mosaiq::concat<u8>(std::span<const ref::concat_input<u8>>(parts), tensor_view<u8>(out.data(), shape{2, 3, 3}),
                     {0.1f, 0});
  CHECK(errors.calls() == 3);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  CHECK(std::count(out.begin(), out.end(), u8{9}) == 24);
}

// ---------------------------------------------------------------------------------------------------------------
// Broadcasting add and mul
// ---------------------------------------------------------------------------------------------------------------

constexpr int out_batch = 2, out_height = 3, out_width = 5;
constexpr int broadcast_channel_counts[] = {1, 3, 8, 15, 16, 17, 31, 32, 33, 47, 64, 100};

/// An input's extents under a broadcast pattern: bit 0 batch, 1 height, 2 width, 3 channels; a set bit keeps the
/// output's extent, a clear one is 1.
struct extents {
  int batch;
  shape dims;
};

extents pattern_extents(unsigned pattern, int channels) {
  const auto keep = [pattern](unsigned bit, int extent) { return (pattern >> bit & 1u) != 0 ? extent : 1; };
  return {keep(0, out_batch), shape{keep(1, out_height), keep(2, out_width), keep(3, channels)}};
}

/// (a, b, out) quantizations for mul: random ones plus extremes (multiplier flushed to zero, tiny, exactly 1, huge
/// with a large left shift, saturating outputs).
template <class T>
std::vector<std::array<quant_params, 3>> mul_quantizations(std::mt19937& rng) {
  mosaiq::test::random_quant<T> random(rng);
  std::vector<std::array<quant_params, 3>> q;
  for (int i = 0; i < 3; ++i) q.push_back({random(), random(), random()});
  const int zp = std::is_same_v<T, u8> ? 128 : 0;
  q.push_back({quant_params{0.5f, zp}, quant_params{0.5f, zp}, quant_params{0.25f, zp}});           // multiplier 1
  q.push_back({quant_params{1e-6f, zp + 3}, quant_params{1e-5f, zp - 7}, quant_params{1.0f, zp}});  // flushes to 0
  q.push_back({quant_params{1e-4f, zp - 100}, quant_params{0.02f, 5}, quant_params{0.001f, zp + 20}});
  q.push_back({quant_params{0.9f, zp + 60}, quant_params{0.8f, zp - 90}, quant_params{1e-5f, zp}});      // shift ~16
  q.push_back({quant_params{1.0f, zp}, quant_params{1.0f, zp}, quant_params{1.0f / 536870912.0f, zp}});  // 2^29
  // Exact powers of two below 1 (M = 2^30, where the folded AVX2 rounding's correction changes): 1/4, and 1/256 for a
  // logistic gate (scale 1/256, zero point 0 in u8, -128 in i8) on a map in its output quantization.
  q.push_back({quant_params{0.5f, zp + 1}, quant_params{0.5f, zp - 2}, quant_params{1.0f, zp}});
  q.push_back({quant_params{0.05f, zp - 3}, quant_params{1.0f / 256, zp - 128}, quant_params{0.05f, zp}});
  return q;
}

/// Byte -> value maps for a's and b's random values.
template <class T>
using value_maps = std::array<std::array<T, 256>, 2>;

template <class T>
void map_values(placed_tensor<T>& t, const std::array<T, 256>& map) {
  for (std::size_t i = 0; i < t.storage.size(); ++i)
    if (t.inside(i)) t.storage[i] = map[static_cast<std::uint8_t>(t.storage[i])];
}

/// The SIMD kernel against the reference over every broadcast pattern pair, in dense and placed (strided,
/// misaligned, canary-guarded) views, plus in place where out can be a; a's and b's random values through maps where
/// given.
template <class T, class Kernel, class Reference>
void check_patterns(const Kernel& kernel, Reference reference, std::mt19937& rng, bool strided,
                    const value_maps<T>* maps = nullptr) {
  for (const int channels : broadcast_channel_counts)
    for (unsigned pattern_a = 0; pattern_a < 16; ++pattern_a)
      for (unsigned pattern_b = 0; pattern_b < 16; ++pattern_b) {
        if ((pattern_a | pattern_b) != 15u) continue;  // out must be the broadcast shape
        const extents ea = pattern_extents(pattern_a, channels), eb = pattern_extents(pattern_b, channels);
        const shape out_dims{out_height, out_width, channels};
        const int extra = strided ? 3 : 0;
        placed_tensor<T> a(ea.dims, ea.batch, extra, strided ? 1 : 0);
        placed_tensor<T> b(eb.dims, eb.batch, strided ? extra + 2 : 0, strided ? 2 : 0);
        placed_tensor<T> out(out_dims, out_batch, strided ? 1 : 0, strided ? 3 : 0);
        placed_tensor<T> expected(out_dims, out_batch, 0, 0);
        a.fill_random(rng);
        b.fill_random(rng);
        if (maps != nullptr) {
          map_values(a, (*maps)[0]);
          map_values(b, (*maps)[1]);
        }
        reference(a.view(), b.view(), expected.view());
        kernel(a.view(), b.view(), out.view());
        CAPTURE(channels);
        CAPTURE(pattern_a);
        CAPTURE(pattern_b);
        CAPTURE(strided);
        CHECK(out.values() == expected.values());
        CHECK(out.first_damaged_canary() == -1);
        CHECK(a.first_damaged_canary() == -1);
        CHECK(b.first_damaged_canary() == -1);
        if (pattern_a == 15u && !strided) {  // in place: out is a
          kernel(a.view(), b.view(), a.view());
          CHECK(a.values() == expected.values());
          CHECK(a.first_damaged_canary() == -1);
        }
      }
}

/// Which code a broadcast run of a kernel takes, as the kernel chooses it at load from its quantization and activation
/// (not from shapes or data): add's arithmetic (linear form, exact tables, pipeline: its own linear_form() and
/// uses_tables(), which operator() branches on), MUL's output step (the path's folded step where usable, its 16-bit
/// products where narrow, with or without the negative-product correction: mul_kernels and mul_folded_regs::span ask
/// the same mul_fold), whether the clamp is narrower than T's range where kernels branch on it (the x86 linear form,
/// folded MUL and held-line columns; the lane kernels always clamp), and per held side whether none, some or all of
/// its values have an exact held line and whether the lines need the split point (held_lines.hpp). Scalar builds run
/// the reference's one walk: one path.
struct broadcast_path {
  int arithmetic = 0;
  bool correction = false;
  bool clamps = false;
  std::array<int, 2> lines{};
  bool operator==(const broadcast_path&) const = default;
};

inline std::array<int, 2> held_line_classes(const mosaiq::detail::eltwise::held_line_sides* sides) {
  if (sides == nullptr) return {};
  const auto of = [](const mosaiq::detail::eltwise::held_lines& lines) {
    const int exact = lines.exact_count == 0 ? 0 : lines.exact_count < 256 ? 1 : 2;
    return exact + (lines.has_split() ? 3 : 0);
  };
  return {of(sides->held_a), of(sides->held_b)};
}

/// Whether the clamp is narrower than T's range on a level whose kernels branch on it.
template <class T>
bool clamp_branch(const mosaiq::clamp_range& clamp) {
  using path = mosaiq::detail::eltwise::native_path;
  if constexpr (!path::linear_add && !mosaiq::detail::eltwise::folds_mul<path>) return false;
  return clamp.min != element_traits<T>::min || clamp.max != element_traits<T>::max;
}

template <class T, rounding R>
broadcast_path path_of(const mosaiq::add<T, R>& kernel) {
  if constexpr (!mosaiq::detail::eltwise::vector_kernels) return {};
  const int linear = kernel.linear_form() != nullptr ? 2 : 0;
  return {linear + (kernel.uses_tables() ? 1 : 0), false, clamp_branch<T>(kernel.params().clamp),
          held_line_classes(kernel.held_lines())};
}

template <class T, rounding R>
broadcast_path path_of(const mosaiq::mul<T, R>& kernel) {
  if constexpr (!mosaiq::detail::eltwise::vector_kernels) return {};
  broadcast_path result{0, false, clamp_branch<T>(kernel.params().clamp), held_line_classes(kernel.held_lines())};
  if constexpr (mosaiq::detail::eltwise::folds_mul<mosaiq::detail::eltwise::native_path>) {
    const auto fold = mosaiq::detail::eltwise::mul_fold::of<R>(kernel.params());
    result.arithmetic = !fold.usable ? 0 : fold.narrow() ? 2 : 1;
    result.correction = fold.narrow() && fold.threshold == 0;
  }
  return result;
}

/// Records `path` in `paths`; whether it was new. With MOSAIQ_TEST_BROADCAST_PATH_GRIDS=1 a grid runs only the first
/// kernel of each path.
inline bool first_of_path(std::vector<broadcast_path>& paths, const broadcast_path& path) {
  const bool new_path = std::find(paths.begin(), paths.end(), path) == paths.end();
  if (new_path) paths.push_back(path);
  return new_path;
}

/// Maps each input's values to the nearest values (upwards, by byte) whose held lines are exact, or are not, where that
/// input's lines are partly exact: its held pixels then always run on their lines, or always on terms.
template <class T>
value_maps<T> held_line_maps(const mosaiq::detail::eltwise::held_line_sides& sides, bool exact) {
  value_maps<T> maps{};
  const std::array<const mosaiq::detail::eltwise::held_lines*, 2> side_lines{&sides.held_a, &sides.held_b};
  for (std::size_t side = 0; side < 2; ++side) {
    const auto& lines = side_lines[side]->lines;
    const bool partial = side_lines[side]->exact_count > 0 && side_lines[side]->exact_count < 256;
    for (std::size_t v = 0; v < 256; ++v) {
      std::size_t w = v;
      while (partial && lines[w % 256].exact != exact) ++w;
      maps[side][v] = static_cast<T>(static_cast<std::uint8_t>(w % 256));
    }
  }
  return maps;
}

/// The broadcast grid of one op: every (quantization, activation) kernel over check_patterns, each kernel's data from
/// its own seed. MOSAIQ_TEST_BROADCAST_PATH_GRIDS=1 (tests/CMakeLists.txt, MOSAIQ_TEST_BROADCAST_PATH_GRID_ISAS) runs
/// the first kernel of each distinct broadcast_path only: every path still runs every pattern pair, channel count
/// and view (docs/decisions.md, "The test suite, part 5").
template <class T, template <class, rounding> class Op, rounding R>
void check_broadcast_grid(const std::vector<std::array<quant_params, 3>>& quantizations,
                          std::initializer_list<activation> acts, std::uint32_t seed) {
  std::vector<broadcast_path> paths;
  int kernels = 0, run = 0, grids = 0;
  for (const auto& q : quantizations)
    for (const activation act : acts) {
      const Op<T, R> kernel(q[0], q[1], q[2], act);
      REQUIRE(kernel.valid());
      std::mt19937 rng(seed + static_cast<std::uint32_t>(kernels++));
      const broadcast_path path = path_of(kernel);
      if (!first_of_path(paths, path) && MOSAIQ_TEST_BROADCAST_PATH_GRIDS) continue;
      ++run;
      const auto reference = [&kernel](tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> out) {
        if constexpr (std::is_same_v<Op<T, R>, mosaiq::add<T, R>>)
          ref::add<R, T>(a, b, out, kernel.params());
        else
          ref::mul<R, T>(a, b, out, kernel.params());
      };
      CAPTURE(q[0].scale);
      CAPTURE(q[1].scale);
      CAPTURE(q[2].scale);
      CAPTURE(static_cast<int>(act));
      if (MOSAIQ_TEST_BROADCAST_PATH_GRIDS && (path.lines[0] % 3 == 1 || path.lines[1] % 3 == 1)) {
        // Partly exact lines: whether a held pixel runs on its lines depends on its values, so both ways, each on
        // every pattern and view (the full grid's random values take one or the other by chance).
        for (const bool exact : {true, false}) {
          const value_maps<T> maps = held_line_maps<T>(*kernel.held_lines(), exact);
          for (const bool strided : {false, true}) check_patterns<T>(kernel, reference, rng, strided, &maps);
          ++grids;
        }
        continue;
      }
      for (const bool strided : {false, true}) check_patterns<T>(kernel, reference, rng, strided);
      ++grids;
    }
  MESSAGE(run, " of ", kernels, " kernels run (", grids, " pattern grids), ", paths.size(), " distinct paths");
}

template <class T, rounding R>
void check_mul_broadcast() {
  std::mt19937 rng(7);
  check_broadcast_grid<T, mosaiq::mul, R>(mul_quantizations<T>(rng), {activation::none, activation::relu6}, 700);
}

template <class T, rounding R>
void check_add_broadcast() {
  std::mt19937 rng(8);
  check_broadcast_grid<T, mosaiq::add, R>(add_quantizations_with_ties<T>(rng), {activation::none, activation::relu},
                                          800);
}

TEST_CASE("broadcast mul equals the reference: u8, TFLite reference rounding") {
  check_mul_broadcast<u8, rounding::tflite_reference>();
}
TEST_CASE("broadcast mul equals the reference: i8, TFLite reference rounding") {
  check_mul_broadcast<i8, rounding::tflite_reference>();
}
TEST_CASE("broadcast mul equals the reference: u8, single rounding") {
  check_mul_broadcast<u8, rounding::single_round>();
}
TEST_CASE("broadcast mul equals the reference: i8, single rounding") {
  check_mul_broadcast<i8, rounding::single_round>();
}
TEST_CASE("broadcast add equals the reference: u8, TFLite reference rounding") {
  check_add_broadcast<u8, rounding::tflite_reference>();
}
TEST_CASE("broadcast add equals the reference: i8, TFLite reference rounding") {
  check_add_broadcast<i8, rounding::tflite_reference>();
}
TEST_CASE("broadcast add equals the reference: u8, single rounding") {
  check_add_broadcast<u8, rounding::single_round>();
}
TEST_CASE("broadcast add equals the reference: i8, single rounding") {
  check_add_broadcast<i8, rounding::single_round>();
}

/// The same-shape add grid: every (quantization, activation) kernel over every layout, channel count and size, in
/// place too, each kernel's data from its own seed. A same-shape run has no held input, so its path is the kernel's
/// arithmetic and clamp branch alone (broadcast_path without the held lines): MOSAIQ_TEST_BROADCAST_PATH_GRIDS=1 runs
/// the first kernel of each such path on the whole grid (docs/decisions.md, "The test suite, part 6").
template <class T, rounding R>
void check_add() {
  std::mt19937 quantization_rng(99);
  std::vector<broadcast_path> paths;
  int kernels = 0, run = 0;
  for (const auto& q : add_quantizations_with_ties<T>(quantization_rng))
    for (const activation act : activations) {
      const mosaiq::add<T, R> kernel(q[0], q[1], q[2], act);
      REQUIRE(kernel.valid());
      std::mt19937 rng(1000 + static_cast<std::uint32_t>(kernels++));
      broadcast_path path = path_of(kernel);
      path.lines = {};
      if (!first_of_path(paths, path) && MOSAIQ_TEST_BROADCAST_PATH_GRIDS) continue;
      ++run;
      for (const layout l : layouts)
        for (const int channels : channel_counts)
          for (shape size : sizes) {
            size.channels = channels;
            placed_tensor<T> a(size, l.batch, l.extra, l.misalign);
            placed_tensor<T> b(size, l.batch, l.extra == 0 ? 0 : l.extra + 2, l.misalign + 1);
            placed_tensor<T> out(size, l.batch, l.extra == 0 ? 0 : 1, l.misalign + 2);
            placed_tensor<T> expected(size, l.batch, 0, 0);
            a.fill_random(rng);
            b.fill_random(rng);
            ref::add<R, T>(a.view(), b.view(), expected.view(), kernel.params());
            kernel(a.view(), b.view(), out.view());
            CAPTURE(channels);
            CAPTURE(size.height);
            CAPTURE(size.width);
            CAPTURE(l.batch);
            CAPTURE(l.extra);
            CAPTURE(static_cast<int>(act));
            CHECK(out.values() == expected.values());
            CHECK(out.first_damaged_canary() == -1);
            CHECK(a.first_damaged_canary() == -1);
            CHECK(b.first_damaged_canary() == -1);
            // In place: out is a.
            kernel(a.view(), b.view(), a.view());
            CHECK(a.values() == expected.values());
            CHECK(a.first_damaged_canary() == -1);
          }
    }
  MESSAGE(run, " of ", kernels, " kernels run, ", paths.size(), " distinct paths");
}

TEST_CASE("add equals the reference: u8, TFLite reference rounding") { check_add<u8, rounding::tflite_reference>(); }
TEST_CASE("add equals the reference: i8, TFLite reference rounding") { check_add<i8, rounding::tflite_reference>(); }
TEST_CASE("add equals the reference: u8, single rounding") { check_add<u8, rounding::single_round>(); }
TEST_CASE("add equals the reference: i8, single rounding") { check_add<i8, rounding::single_round>(); }

TEST_CASE_TEMPLATE("mul over every pair of values equals the reference, element-wise and held", T, u8, i8) {
  // 256 x 256 pairs as one dense 256 x 256 x 1 tensor; then each b value held as a 1x1x1 scalar over a 1x256 row of
  // every a value, and every a value as a per-channel 1x1x256 vector held over pixels of one b value each.
  std::vector<T> a(65536), b(65536), out(65536), expected(65536);
  for (int i = 0; i < 65536; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<T>(i & 255);
    b[static_cast<std::size_t>(i)] = static_cast<T>(i >> 8);
  }
  std::mt19937 rng(11);
  for (const auto& q : mul_quantizations<T>(rng)) {
    const mosaiq::mul<T> kernel(q[0], q[1], q[2]);
    const shape dims{256, 256, 1};
    ref::mul<rounding::tflite_reference, T>(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims),
                                            tensor_view<T>(expected.data(), dims), kernel.params());
    kernel(tensor_view<const T>(a.data(), dims), tensor_view<const T>(b.data(), dims),
           tensor_view<T>(out.data(), dims));
    CHECK(out == expected);
    // Row y of a (all values) times the scalar y: the same pairs through the held-scalar kernel.
    for (int y = 0; y < 256; ++y) {
      const std::size_t row = static_cast<std::size_t>(y) * 256;
      kernel(tensor_view<const T>(a.data(), shape{1, 256, 1}), tensor_view<const T>(b.data() + row, shape{1, 1, 1}),
             tensor_view<T>(out.data() + row, shape{1, 256, 1}));
    }
    CHECK(out == expected);
    // Per-channel: a 1x1x256 vector of every value held (as terms) over a 1x256x256 map whose pixel x holds x.
    const shape wide{1, 256, 256};
    kernel(tensor_view<const T>(a.data(), shape{1, 1, 256}), tensor_view<const T>(b.data(), wide),
           tensor_view<T>(out.data(), wide));
    CHECK(out == expected);
  }
}

TEST_CASE_TEMPLATE("mul over every pair: a grid of zero points and multipliers, both roundings, relu6, tails", T, u8,
                   i8) {
  // Every (a, b) pair as one flat run, then the same pairs from an odd offset with a length that leaves a tail, for
  // multipliers the element-wise kernels fold (powers of two, tiny, near 1) and ones at or above 1 that run the general
  // lane multiply, under zero points at both ends of T's range.
  std::vector<T> a(65536 + 64), b(65536 + 64), out(65536 + 64), expected(65536 + 64);
  for (int i = 0; i < 65536 + 64; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<T>(i & 255);
    b[static_cast<std::size_t>(i)] = static_cast<T>((i >> 8) & 255);
  }
  const int lo = mosaiq::element_traits<T>::min, hi = mosaiq::element_traits<T>::max, mid = (lo + hi) / 2;
  const std::array<std::array<int, 3>, 3> zero_points{{{lo, hi, mid}, {hi, lo, lo}, {mid + 7, mid - 30, hi}}};
  // Output scales for s_a = 0.05, s_b = 1/256: multipliers from 2^-20 to above 1 (left shifts).
  const std::array<float, 7> out_scales{40.0f, 0.07f, 0.05f / 64, 0.05f / 256, 1.3e-4f, 0.5e-4f, 1e-6f};
  for (const auto& zp : zero_points)
    for (const float out_scale : out_scales)
      for (const activation act : {activation::none, activation::relu6}) {
        const quant_params qa{0.05f, zp[0]}, qb{1.0f / 256, zp[1]}, qo{out_scale, zp[2]};
        CAPTURE(zp[0]);
        CAPTURE(zp[1]);
        CAPTURE(zp[2]);
        CAPTURE(out_scale);
        const auto check = [&](const auto& kernel, auto round) {
          if (!kernel.valid()) return;
          constexpr rounding R = decltype(round)::value;
          for (const std::size_t first : {std::size_t{0}, std::size_t{13}}) {
            const shape dims{1, 65536 - static_cast<int>(first) * 3, 1};
            const tensor_view<const T> va(a.data() + first, dims), vb(b.data() + first, dims);
            std::fill(out.begin(), out.end(), T{});
            std::fill(expected.begin(), expected.end(), T{});
            ref::mul<R, T>(va, vb, tensor_view<T>(expected.data(), dims), kernel.params());
            kernel(va, vb, tensor_view<T>(out.data(), dims));
            CHECK(out == expected);
          }
        };
        check(mosaiq::mul<T, rounding::tflite_reference>(qa, qb, qo, act),
              std::integral_constant<rounding, rounding::tflite_reference>{});
        check(mosaiq::mul<T, rounding::single_round>(qa, qb, qo, act),
              std::integral_constant<rounding, rounding::single_round>{});
      }
}

/// Every (a, b) pair through a per-channel vector held over a map: the vector holds every byte value (channel c is c)
/// and map pixel x holds x in every channel, so output pixel x, channel c is op(x, c) (held b) or op(c, x) (held a).
/// Both sides, both rounding modes, an activation; the held lines (held_lines.hpp) carry every value they fit exactly.
template <class T, rounding R, class Op>
void check_every_pair_held(const Op& op, const char* name) {
  std::vector<T> vector(256), map(65536), out(65536), expected(65536);
  for (int i = 0; i < 256; ++i) vector[static_cast<std::size_t>(i)] = static_cast<T>(i);
  for (int i = 0; i < 65536; ++i) map[static_cast<std::size_t>(i)] = static_cast<T>(i >> 8);
  const shape wide{1, 256, 256}, channels{1, 1, 256};
  const tensor_view<const T> v(vector.data(), channels), m(map.data(), wide);
  const tensor_view<T> o(out.data(), wide), e(expected.data(), wide);
  CAPTURE(name);
  for (const bool held_b : {true, false}) {
    CAPTURE(held_b);
    std::fill(out.begin(), out.end(), T{});
    if (held_b) {
      op(m, v, o);
      if constexpr (std::is_same_v<Op, mosaiq::add<T, R>>)
        ref::add<R, T>(m, v, e, op.params());
      else
        ref::mul<R, T>(m, v, e, op.params());
    } else {
      op(v, m, o);
      if constexpr (std::is_same_v<Op, mosaiq::add<T, R>>)
        ref::add<R, T>(v, m, e, op.params());
      else
        ref::mul<R, T>(v, m, e, op.params());
    }
    CHECK(out == expected);
  }
}

template <class T, rounding R>
void check_held_lines_every_pair() {
  std::mt19937 rng(21);
  for (const activation act : {activation::none, activation::relu6}) {
    for (const auto& q : add_quantizations<T>(rng))
      check_every_pair_held<T, R>(mosaiq::add<T, R>(q[0], q[1], q[2], act), "add");
    for (const auto& q : mul_quantizations<T>(rng)) {
      const mosaiq::mul<T, R> kernel(q[0], q[1], q[2], act);
      if (kernel.valid()) check_every_pair_held<T, R>(kernel, "mul");
    }
  }
}

TEST_CASE_TEMPLATE("held lines: every pair through a per-channel vector, TFLite reference rounding", T, u8, i8) {
  check_held_lines_every_pair<T, rounding::tflite_reference>();
}
TEST_CASE_TEMPLATE("held lines: every pair through a per-channel vector, single rounding", T, u8, i8) {
  check_held_lines_every_pair<T, rounding::single_round>();
}

TEST_CASE_TEMPLATE("held lines: every value of a gate or a residual branch has an exact line", T, u8, i8) {
  // The quantizations of bench_eltwise's broadcast rows (a logistic gate and an add of two activations): the run
  // kernels must take the lines for every held value, so the pair tests above exercise them and not the fallback.
  const int zp = std::is_same_v<T, u8> ? 128 : 0;
  const quant_params map{0.05f, zp - 3}, out{0.07f, zp + 2}, gate{1.0f / 256, zp - 128}, branch{0.03f, zp + 9};
  for (const activation act : {activation::none, activation::relu6}) {
    const mosaiq::mul<T> mul(map, gate, out, act);
    const mosaiq::add<T> add(map, branch, out, act);
#if MOSAIQ_TARGET_SIMD
    REQUIRE(mul.held_lines() != nullptr);
    REQUIRE(add.held_lines() != nullptr);
    CHECK(mul.held_lines()->held_a.exact_count == 256);
    CHECK(mul.held_lines()->held_b.exact_count == 256);
    CHECK(add.held_lines()->held_a.exact_count == 256);
    CHECK(add.held_lines()->held_b.exact_count == 256);
#else
    CHECK(mul.held_lines() == nullptr);  // scalar builds run the reference
    CHECK(add.held_lines() == nullptr);
#endif
  }
}

TEST_CASE("held lines: a line is fitted only where it reproduces every output") {
  using namespace mosaiq::detail::eltwise;
  const mosaiq::clamp_range clamp{0, 255};
  std::array<std::int32_t, 256> outputs{};
  // floor(x / 3 + 10): exact with a slope near 1/3.
  for (int x = 0; x < 256; ++x) outputs[static_cast<std::size_t>(x)] = x / 3 + 10;
  held_line line = fit_line(outputs, 0, 1.0 / 3, std::numeric_limits<std::int32_t>::min(), clamp);
  REQUIRE(line.exact);
  for (int x = 0; x < 256; ++x)
    CHECK(line_output(line, x, std::numeric_limits<std::int32_t>::min(), clamp) == x / 3 + 10);
  // A jump of one step at x = 100 cannot be one line, but is two pieces split there.
  for (int x = 100; x < 256; ++x) outputs[static_cast<std::size_t>(x)] += 1;
  CHECK_FALSE(fit_line(outputs, 0, 1.0 / 3, std::numeric_limits<std::int32_t>::min(), clamp).exact);
  line = fit_line(outputs, 0, 1.0 / 3, 100, clamp);
  REQUIRE(line.exact);
  for (int x = 0; x < 256; ++x) CHECK(line_output(line, x, 100, clamp) == outputs[static_cast<std::size_t>(x)]);
  // Not monotone: no line.
  outputs[7] = 200;
  CHECK_FALSE(fit_line(outputs, 0, 1.0 / 3, 100, clamp).exact);
  // Clamped outputs only bound the line from one side; a steep line saturating on both ends fits.
  for (int x = 0; x < 256; ++x) outputs[static_cast<std::size_t>(x)] = std::clamp(3 * (x - 120) / 2, 0, 255);
  line = fit_line(outputs, 0, 1.5, std::numeric_limits<std::int32_t>::min(), clamp);
  REQUIRE(line.exact);
  for (int x = 0; x < 256; ++x)
    CHECK(line_output(line, x, std::numeric_limits<std::int32_t>::min(), clamp) ==
          outputs[static_cast<std::size_t>(x)]);
}

TEST_CASE("broadcast kernels: a wide per-channel vector is held in chunks of channels") {
  // 600 channels cross the 256-channel term chunk twice.
  std::mt19937 rng(3);
  const shape dims{2, 3, 600};
  placed_tensor<u8> a(dims, 1, 0, 1), b(shape{1, 1, 600}, 1, 0, 2), out(dims, 1, 0, 0), expected(dims, 1, 0, 0);
  a.fill_random(rng);
  b.fill_random(rng);
  const mosaiq::mul<u8> mul(quant_params{0.02f, 120}, quant_params{0.004f, 0}, quant_params{0.03f, 110});
  ref::mul<rounding::tflite_reference, u8>(a.view(), b.view(), expected.view(), mul.params());
  mul(a.view(), b.view(), out.view());
  CHECK(out.values() == expected.values());
  const mosaiq::add<u8> add(quant_params{0.02f, 120}, quant_params{0.004f, 0}, quant_params{0.03f, 110});
  add(b.view(), a.view(), out.view());  // b first: the held input is a, the run is b
  ref::add<rounding::tflite_reference, u8>(b.view(), a.view(), expected.view(), add.params());
  CHECK(out.values() == expected.values());
}

/// A per-channel vector (1x1xC) or a column (Hx1xC, batch 2) held over a map, against the reference for channel counts
/// 1..72: whole blocks, the flat rows of held_lines.hpp's line_flat where C is not a whole number of blocks (its
/// planes repeated over lcm(C, 16), block offsets modulo that period, a tail where W C is not a whole number of
/// blocks) and the pixel-by-pixel rows where the period is too long or the pixels are not dense; odd maps, the held
/// input on either side, dense, strided (map, out or both) and misaligned views with canaries, and in place.
template <class T, class Op, class Reference>
void check_held_channel_counts(const Op& op, Reference reference, std::mt19937& rng) {
  constexpr std::array<int, 2> strides[] = {{0, 0}, {0, 2}, {3, 4}};  // extra elements per pixel: map, out
  for (int channels = 1; channels <= 72; ++channels)
    for (const shape map_dims : {shape{3, 5, channels}, shape{1, 7, channels}, shape{4, 4, channels}})
      for (const bool column : {false, true})
        for (const bool held_a : {false, true})
          for (const auto& extra : strides) {
            const int batch = column ? 2 : 1;
            placed_tensor<T> map(map_dims, batch, extra[0], extra[0] != 0 ? 1 : 0);
            placed_tensor<T> held(shape{column ? map_dims.height : 1, 1, channels}, 1, extra[1], 2);
            placed_tensor<T> out(map_dims, batch, extra[1], extra[1] != 0 ? 3 : 0);
            placed_tensor<T> expected(map_dims, batch, 0, 0);
            map.fill_random(rng);
            held.fill_random(rng);
            const tensor_view<T> a = held_a ? held.view() : map.view(), b = held_a ? map.view() : held.view();
            reference(a, b, expected.view());
            op(a, b, out.view());
            CAPTURE(channels);
            CAPTURE(map_dims.height);
            CAPTURE(map_dims.width);
            CAPTURE(column);
            CAPTURE(held_a);
            CAPTURE(extra[0]);
            CAPTURE(extra[1]);
            CHECK(out.values() == expected.values());
            CHECK(out.first_damaged_canary() == -1);
            CHECK(map.first_damaged_canary() == -1);
            if (extra[0] == 0) {  // in place: out is the map
              op(a, b, map.view());
              CHECK(map.values() == expected.values());
              CHECK(map.first_damaged_canary() == -1);
            }
          }
}

/// The gate multiply, a random multiply and a residual add, each with and without relu6, each run's data from its own
/// seed; with MOSAIQ_TEST_BROADCAST_PATH_GRIDS=1 only the first kernel of each broadcast_path (docs/decisions.md, "The
/// test suite, part 6").
template <class T, rounding R>
void check_held_channel_counts_ops() {
  std::mt19937 quantization_rng(24);
  const int zp = std::is_same_v<T, u8> ? 128 : 0;
  const quant_params map{0.05f, zp - 3}, out{0.07f, zp + 2}, gate{1.0f / 256, zp - 128}, branch{0.03f, zp + 9};
  mosaiq::test::random_quant<T> random(quantization_rng);
  std::vector<broadcast_path> paths;
  std::uint32_t seed = 24;
  const auto check = [&](const auto& op, auto reference) {
    std::mt19937 rng(seed++);
    if (first_of_path(paths, path_of(op)) || !MOSAIQ_TEST_BROADCAST_PATH_GRIDS)
      check_held_channel_counts<T>(op, reference, rng);
  };
  for (const activation act : {activation::none, activation::relu6}) {
    const mosaiq::mul<T, R> gated(map, gate, out, act), mul(random(), random(), random(), act);
    const mosaiq::add<T, R> add(map, branch, out, act);
    const auto mul_reference = [](const mosaiq::mul<T, R>& op) {
      return [&op](tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> o) {
        ref::mul<R, T>(a, b, o, op.params());
      };
    };
    check(gated, mul_reference(gated));
    if (mul.valid()) check(mul, mul_reference(mul));
    check(add, [&add](tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> o) {
      ref::add<R, T>(a, b, o, add.params());
    });
  }
}

TEST_CASE_TEMPLATE("held lines: channel counts 1..72 over odd maps, flat and pixel rows, strided, in place", T, u8,
                   i8) {
  check_held_channel_counts_ops<T, rounding::tflite_reference>();
  check_held_channel_counts_ops<T, rounding::single_round>();
}

TEST_CASE("mul kernel: misuse is reported and writes nothing") {
  mosaiq::test::recording_handler errors;
  std::vector<u8> a(24, 1), b(24, 2), out(24, 9);
  const mosaiq::mul<u8> kernel(quant_params{0.1f, 0}, quant_params{0.1f, 0}, quant_params{0.2f, 0});
  // b's height 2 neither equals the output's 3 nor is 1.
  kernel(tensor_view<const u8>(a.data(), shape{3, 2, 4}), tensor_view<const u8>(b.data(), shape{2, 1, 4}),
         tensor_view<u8>(out.data(), shape{3, 2, 4}));
  CHECK(errors.calls() == 1);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  // out larger than the broadcast shape of a and b.
  kernel(tensor_view<const u8>(a.data(), shape{1, 2, 4}), tensor_view<const u8>(b.data(), shape{1, 1, 4}),
         tensor_view<u8>(out.data(), shape{3, 2, 4}));
  CHECK(errors.calls() == 2);
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  const mosaiq::mul<u8> invalid;
  invalid(tensor_view<const u8>(a.data(), shape{2, 3, 4}), tensor_view<const u8>(b.data(), shape{2, 3, 4}),
          tensor_view<u8>(out.data(), shape{2, 3, 4}));
  CHECK(errors.calls() == 3);
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  // Params quantized for the other rounding mode.
  const mosaiq::mul<u8, rounding::single_round> other(kernel.params());
  CHECK_FALSE(other.valid());
  other(tensor_view<const u8>(a.data(), shape{2, 3, 4}), tensor_view<const u8>(b.data(), shape{2, 3, 4}),
        tensor_view<u8>(out.data(), shape{2, 3, 4}));
  CHECK(errors.calls() == 4);
  CHECK(std::count(out.begin(), out.end(), u8{9}) == 24);
}

}  // namespace
