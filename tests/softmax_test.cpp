// ops/softmax.hpp against reference/softmax.hpp, bit for bit: two-class softmax over every pair of inputs at input
// scales whose clamp window spans 1 to 4 lookups, every other channel count path (1..32 across pixels, 33+ along
// channels, sums past 2^30 scalar) at several scales and betas, and logistic over
// every input byte; log-softmax on the same grids (two classes, across pixels, along channels) at input scales from
// 0.004 to 40; u8 and i8, odd sizes, batch 2, unaligned and strided views, canaries around every output.
#include "mosaiq/ops/softmax.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "mosaiq/reference/softmax.hpp"
#include "placed_tensor.hpp"
#include "support.hpp"

namespace {

using mosaiq::i8;
using mosaiq::quant_params;
using mosaiq::shape;
using mosaiq::softmax_config;
using mosaiq::tensor_view;
using mosaiq::u8;
using mosaiq::test::placed_tensor;
namespace ref = mosaiq::reference;

// Window sizes: 0.5 -> ~24 entries, 0.1 -> 114 (one 128-entry lookup), 0.05 -> ~230, 0.02 -> ~570 clamped to 511,
// 0.004 -> all 511.
constexpr float input_scales[] = {0.5f, 0.1f, 0.05f, 0.02f, 0.004f};

using mosaiq::test::layout;
constexpr layout layouts[] = {{1, 0, 0}, {2, 0, 1}, {1, 3, 1}, {2, 1, 0}};
constexpr shape sizes[] = {{1, 1, 0}, {1, 3, 0}, {7, 5, 0}, {3, 33, 0}, {9, 16, 0}};

/// Runs `kernel` and `reference` on the same random input placed with `l`; checks equality and canaries.
template <class T, class Kernel, class Reference>
void check_layout(const Kernel& kernel, Reference reference, shape dims, layout l, std::mt19937& rng) {
  placed_tensor<T> in(dims, l.batch, l.extra, l.misalign);
  placed_tensor<T> out(dims, l.batch, l.extra, l.misalign + 1);
  placed_tensor<T> expected(dims, l.batch, 0, 0);
  in.fill_random(rng);
  reference(tensor_view<const T>(in.view()), expected.view());
  kernel(in.view(), out.view());
  CAPTURE(dims.height);
  CAPTURE(dims.width);
  CAPTURE(dims.channels);
  CAPTURE(l.batch);
  CAPTURE(l.extra);
  CAPTURE(l.misalign);
  CHECK(out.values() == expected.values());
  CHECK(out.first_damaged_canary() == -1);
  CHECK(in.first_damaged_canary() == -1);
}

/// Rows whose values lie within `spreads` of the maximum (one row offset per image row): large sums and outputs next
/// to every rounding boundary.
template <class T, int Channels, class Kernel, class Reference>
void check_narrow_ranges(const Kernel& kernel, Reference reference, std::initializer_list<int> spreads,
                         std::mt19937& rng) {
  for (const int spread : spreads) {
    CAPTURE(spread);
    placed_tensor<T> in(shape{3, 7, Channels}, 1, 2, 1), out(shape{3, 7, Channels}, 1, 2, 0);
    placed_tensor<T> expected(shape{3, 7, Channels}, 1, 0, 0);
    std::uniform_int_distribution<int> offset(0, spread);
    const auto v = in.view();
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 7; ++x)
        for (int c = 0; c < Channels; ++c)
          v(0, y, x, c) = static_cast<T>(mosaiq::element_traits<T>::max - offset(rng) - 9 * y);
    reference(tensor_view<const T>(v), expected.view());
    kernel(v, out.view());
    CHECK(out.values() == expected.values());
    CHECK(out.first_damaged_canary() == -1);
  }
}

template <class T>
void check_two_classes(float input_scale, float beta) {
  CAPTURE(input_scale);
  CAPTURE(beta);
  const quant_params input{input_scale, 3};
  const mosaiq::softmax<softmax_config{.channels = 2}, T> kernel(input, beta);
  REQUIRE(kernel.valid());
  const ref::softmax_table table(input, beta);
  const auto reference = [&](tensor_view<const T> in, tensor_view<T> out) { ref::softmax<T>(table, in, out); };

  // Every (x0, x1) pair, dense, aligned and not.
  for (const int misalign : {0, 1}) {
    placed_tensor<T> in(shape{256, 256, 2}, 1, 0, misalign), out(shape{256, 256, 2}, 1, 0, misalign + 1);
    placed_tensor<T> expected(shape{256, 256, 2}, 1, 0, 0);
    const auto v = in.view();
    for (int a = 0; a < 256; ++a)
      for (int b = 0; b < 256; ++b) {
        v(0, a, b, 0) = static_cast<T>(a);
        v(0, a, b, 1) = static_cast<T>(b);
      }
    reference(tensor_view<const T>(v), expected.view());
    kernel(v, out.view());
    CHECK(out.values() == expected.values());
    CHECK(out.first_damaged_canary() == -1);
  }
  std::mt19937 rng(99);
  for (const layout l : layouts)
    for (shape dims : sizes) {
      dims.channels = 2;
      check_layout<T>(kernel, reference, dims, l, rng);
    }
}

/// Any channel count (the vector paths: transposed for 1..32, along the channels above; the reference in scalar
/// builds) against the reference, at several input scales and betas, random inputs of full and narrow range.
template <class T, int Channels>
void check_channels() {
  CAPTURE(Channels);
  static_assert(mosaiq::softmax<softmax_config{.channels = Channels}, T>::specialized ==
                (mosaiq::simd::native_isa != mosaiq::simd::isa::scalar || Channels == 2));
  std::mt19937 rng(5 + Channels);
  const struct {
    float scale, beta;
  } params[] = {{0.05f, 1.0f}, {0.5f, 1.0f}, {0.004f, 1.0f}, {0.1f, 0.37f}, {0.3f, 2.5f}};
  for (const auto p : params) {
    CAPTURE(p.scale);
    CAPTURE(p.beta);
    const quant_params input{p.scale, -7};
    const mosaiq::softmax<softmax_config{.channels = Channels}, T> kernel(input, p.beta);
    REQUIRE(kernel.valid());
    const ref::softmax_table table(input, p.beta);
    const auto reference = [&](tensor_view<const T> in, tensor_view<T> out) { ref::softmax<T>(table, in, out); };
    const shape few[] = {{1, 1, 0}, {1, 3, 0}, {7, 5, 0}, {3, 33, 0}};
    for (const layout l : layouts)
      for (shape dims : few) {
        if (Channels > 100 && dims.pixels() > 20) continue;
        dims.channels = Channels;
        check_layout<T>(kernel, reference, dims, l, rng);
      }
    // Narrow ranges: many channels near the maximum (large sums, exact-division boundaries).
    check_narrow_ranges<T, Channels>(kernel, reference, {0, 1, 3, 12}, rng);
  }
}

template <class T>
void check_logistic(quant_params input) {
  CAPTURE(input.scale);
  CAPTURE(input.zero_point);
  const mosaiq::logistic<T> kernel(input);
  REQUIRE(kernel.valid());
  const ref::logistic_table<T> table(input);
  const auto reference = [&](tensor_view<const T> in, tensor_view<T> out) { ref::logistic<T>(table, in, out); };
  // Every byte, in a long dense run (vector body and tail).
  placed_tensor<T> in(shape{1, 301, 1}, 1, 0, 1), out(shape{1, 301, 1}, 1, 0, 0), expected(shape{1, 301, 1}, 1, 0, 0);
  for (int i = 0; i < 301; ++i) in.view()(0, 0, i, 0) = static_cast<T>(i * 7);
  reference(tensor_view<const T>(in.view()), expected.view());
  kernel(in.view(), out.view());
  CHECK(out.values() == expected.values());
  CHECK(out.first_damaged_canary() == -1);
  std::mt19937 rng(17);
  for (const layout l : layouts)
    for (const int channels : {1, 2, 3, 8, 15, 16, 17, 64, 100})
      for (shape dims : {shape{1, 1, 0}, shape{3, 5, 0}, shape{2, 33, 0}}) {
        dims.channels = channels;
        check_layout<T>(kernel, reference, dims, l, rng);
      }
}

}  // namespace

TEST_CASE("two-class softmax: the table reproduces the reference for every pair") {
  for (const float scale : input_scales) {
    check_two_classes<u8>(scale, 1.0f);
    check_two_classes<i8>(scale, 1.0f);
  }
  check_two_classes<u8>(0.1f, 0.37f);  // beta scales the input scale
  check_two_classes<i8>(0.3f, 2.5f);
}

TEST_CASE("two-class softmax: the clamp window spans one to four 128-entry lookups across the tested scales") {
  int narrowest = 511, widest = 0;
  for (const float scale : input_scales) {
    // The window is private; its effect is visible as the range of d where out0 changes.
    const mosaiq::softmax<softmax_config{.channels = 2}, u8> kernel(quant_params{scale, 0}, 1.0f);
    std::vector<u8> in(2 * 511), out(2 * 511);
    for (int i = 0; i < 511; ++i) {
      in[2 * static_cast<std::size_t>(i)] = static_cast<u8>(std::max(i - 255, 0));
      in[2 * static_cast<std::size_t>(i) + 1] = static_cast<u8>(std::max(255 - i, 0));
    }
    kernel(tensor_view<const u8>(in.data(), shape{1, 511, 2}), tensor_view<u8>(out.data(), shape{1, 511, 2}));
    int first = 0, last = 510;
    while (first < 510 && out[2 * static_cast<std::size_t>(first) + 2] == out[0]) ++first;
    while (last > first && out[2 * static_cast<std::size_t>(last) - 2] == out[2 * 510]) --last;
    narrowest = std::min(narrowest, last - first + 1);
    widest = std::max(widest, last - first + 1);
    // out1(d) == out0(-d), and out0 + out1 is not always 256 (so the kernel must not derive one from the other).
    for (int i = 0; i < 511; ++i)
      CHECK(out[2 * static_cast<std::size_t>(i) + 1] == out[2 * (510 - static_cast<std::size_t>(i))]);
  }
  CHECK(narrowest <= 128);
  CHECK(widest > 384);
}

TEST_CASE("softmax, 1..32 channels (vectorized across pixels) equals the reference") {
  check_channels<u8, 1>();
  check_channels<i8, 3>();
  check_channels<u8, 3>();
  check_channels<u8, 4>();
  check_channels<i8, 5>();
  check_channels<u8, 8>();
  check_channels<i8, 8>();
  check_channels<u8, 15>();
  check_channels<i8, 16>();
  check_channels<u8, 17>();
  check_channels<u8, 21>();
  check_channels<i8, 21>();
  check_channels<u8, 32>();
  check_channels<i8, 32>();
}

TEST_CASE("softmax, 33+ channels (vectorized along channels) equals the reference") {
  check_channels<u8, 33>();
  check_channels<u8, 64>();
  check_channels<i8, 64>();
  check_channels<i8, 100>();
  check_channels<u8, 1001>();
  check_channels<i8, 1001>();
  check_channels<u8, 4100>();  // int32 partial sums flushed more than once
}

#if MOSAIQ_TARGET_SIMD
TEST_CASE("softmax: the vector normalization is the exact quotient at remainders 0, 1, d - 2 and d - 1") {
  // min(255, (256 e + d/2) / d) for 0 <= e <= d < 2^30, at numerators next to multiples of d, where a float
  // estimate off by one is only caught by the remainder correction.
  namespace vec = mosaiq::detail::probability::vec;
  std::mt19937 rng(23);
  std::uniform_int_distribution<std::int32_t> divisor(1, (1 << 30) - 1);
  std::uint32_t e[16], d[16], got[16];
  int checked = 0;
  while (checked < 200000) {
    for (int i = 0; i < 16; ++i) {
      d[i] = static_cast<std::uint32_t>(divisor(rng) >> (rng() % 24));
      if (d[i] < 2) d[i] = 2;
      const std::uint64_t q = rng() % 257;
      const std::uint64_t r = std::array<std::uint64_t, 4>{0, 1, d[i] - 2, d[i] - 1}[rng() % 4];
      // Solve 256 e + d/2 = q d + r for e when it is an integer in [0, d]; else use a random e.
      const std::int64_t target = static_cast<std::int64_t>(q * d[i] + r) - d[i] / 2;
      e[i] = target >= 0 && target % 256 == 0 && target / 256 <= d[i] ? static_cast<std::uint32_t>(target / 256)
                                                                      : static_cast<std::uint32_t>(rng() % (d[i] + 1));
    }
    namespace lanes = mosaiq::lanes;
    alignas(64) std::int32_t ev[16], dv[16], qv[16];
    for (int i = 0; i < 16; ++i) {
      ev[i] = static_cast<std::int32_t>(e[i]);
      dv[i] = static_cast<std::int32_t>(d[i]);
    }
    lanes::reg er[lanes::regs], dr[lanes::regs], q[lanes::regs];
    lanes::load(ev, er);
    lanes::load(dv, dr);
    for (int r = 0; r < lanes::regs; ++r)
      q[r] = vec::normalize(er[r], dr[r], dr[r] - lanes::reg(1), dr[r] >> 1, lanes::reciprocal(dr[r]));
    lanes::store(qv, q);
    for (int i = 0; i < 16; ++i) got[i] = static_cast<std::uint32_t>(qv[i]);
    for (int i = 0; i < 16; ++i) {
      const std::uint64_t expected = std::min<std::uint64_t>(255, (std::uint64_t{e[i]} * 256 + d[i] / 2) / d[i]);
      if (got[i] != expected) {
        CAPTURE(e[i]);
        CAPTURE(d[i]);
        CHECK(got[i] == expected);
      }
    }
    checked += 16;
  }
}
#endif

TEST_CASE("softmax: misuse is reported") {
  mosaiq::test::recording_handler errors;
  const mosaiq::softmax<softmax_config{.channels = 2}, u8> invalid(quant_params{0.0f, 0}, 1.0f);
  CHECK(errors.calls() == 1);
  CHECK(!invalid.valid());
  std::vector<u8> in(12, 3), out(12, 1);
  invalid(tensor_view<const u8>(in.data(), shape{2, 3, 2}), tensor_view<u8>(out.data(), shape{2, 3, 2}));
  CHECK(errors.calls() == 2);
  const mosaiq::softmax<softmax_config{.channels = 2}, u8> kernel(quant_params{0.1f, 0}, 1.0f);
  kernel(tensor_view<const u8>(in.data(), shape{2, 2, 3}), tensor_view<u8>(out.data(), shape{2, 2, 3}));
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  CHECK(std::count(out.begin(), out.end(), u8{1}) == 12);
}

TEST_CASE("logistic: vectorized lookups equal the reference table") {
  for (const quant_params input : {quant_params{0.1f, 128}, quant_params{0.02f, 3}, quant_params{0.5f, 200}})
    check_logistic<u8>(input);
  for (const quant_params input : {quant_params{0.1f, 0}, quant_params{0.03f, -100}, quant_params{0.7f, 50}})
    check_logistic<i8>(input);
}

// ---------------------------------------------------------------------------------------------------------------
// Log-softmax: every path against reference::log_softmax.

namespace {

/// Input scales from steep (most differences below the cutoff, multiplier capped) to flat (every term counts).
constexpr float log_softmax_scales[] = {0.004f, 0.02f, 20.0f / 255.0f, 0.1f, 0.5f, 3.0f, 40.0f};

template <class T, int Channels>
void check_log_softmax() {
  CAPTURE(Channels);
  static_assert(mosaiq::log_softmax<softmax_config{.channels = Channels}, T>::specialized ==
                (mosaiq::simd::native_isa != mosaiq::simd::isa::scalar || Channels == 2));
  std::mt19937 rng(71 + Channels);
  for (const float scale : log_softmax_scales) {
    CAPTURE(scale);
    const quant_params input{scale, 5};
    const mosaiq::log_softmax<softmax_config{.channels = Channels}, T> kernel(input);
    REQUIRE(kernel.valid());
    const ref::log_softmax_params params(input);
    const auto reference = [&](tensor_view<const T> in, tensor_view<T> out) { ref::log_softmax<T>(params, in, out); };
    const shape few[] = {{1, 1, 0}, {1, 3, 0}, {7, 5, 0}, {3, 33, 0}};
    for (const layout l : layouts)
      for (shape dims : few) {
        if (Channels > 100 && dims.pixels() > 20) continue;
        dims.channels = Channels;
        check_layout<T>(kernel, reference, dims, l, rng);
      }
    // Narrow ranges: every channel near the maximum (large sums, outputs near the cutoff and the clamp).
    check_narrow_ranges<T, Channels>(kernel, reference, {0, 1, 3, 12, 60}, rng);
  }
}

template <class T>
void check_log_softmax_pairs(float scale) {
  CAPTURE(scale);
  const quant_params input{scale, 3};
  const mosaiq::log_softmax<softmax_config{.channels = 2}, T> kernel(input);
  REQUIRE(kernel.valid());
  const ref::log_softmax_params params(input);
  for (const int misalign : {0, 1}) {
    placed_tensor<T> in(shape{256, 256, 2}, 1, 0, misalign), out(shape{256, 256, 2}, 1, 0, misalign + 1);
    placed_tensor<T> expected(shape{256, 256, 2}, 1, 0, 0);
    const auto v = in.view();
    for (int a = 0; a < 256; ++a)
      for (int b = 0; b < 256; ++b) {
        v(0, a, b, 0) = static_cast<T>(a);
        v(0, a, b, 1) = static_cast<T>(b);
      }
    ref::log_softmax<T>(params, tensor_view<const T>(v), expected.view());
    kernel(v, out.view());
    CHECK(out.values() == expected.values());
    CHECK(out.first_damaged_canary() == -1);
  }
  std::mt19937 rng(73);
  const auto reference = [&](tensor_view<const T> in, tensor_view<T> out) { ref::log_softmax<T>(params, in, out); };
  for (const layout l : layouts)
    for (shape dims : sizes) {
      dims.channels = 2;
      check_layout<T>(kernel, reference, dims, l, rng);
    }
}

}  // namespace

TEST_CASE("log-softmax, two classes: the difference table reproduces the reference for every pair") {
  for (const float scale : log_softmax_scales) {
    check_log_softmax_pairs<u8>(scale);
    check_log_softmax_pairs<i8>(scale);
  }
}

TEST_CASE("log-softmax, 1..32 channels (vectorized across pixels) equals the reference") {
  check_log_softmax<u8, 1>();
  check_log_softmax<i8, 3>();
  check_log_softmax<u8, 4>();
  check_log_softmax<i8, 5>();
  check_log_softmax<u8, 8>();
  check_log_softmax<u8, 15>();
  check_log_softmax<i8, 16>();
  check_log_softmax<u8, 17>();
  check_log_softmax<i8, 21>();
  check_log_softmax<u8, 32>();
  check_log_softmax<i8, 32>();
}

TEST_CASE("log-softmax, 33+ channels (vectorized along channels) equals the reference") {
  check_log_softmax<u8, 33>();
  check_log_softmax<i8, 64>();
  check_log_softmax<u8, 100>();
  check_log_softmax<i8, 1001>();
  check_log_softmax<u8, 4095>();  // the largest sum that fits
}

TEST_CASE("log-softmax: misuse is reported and leaves the output untouched") {
  mosaiq::test::recording_handler errors;
  const mosaiq::log_softmax<softmax_config{.channels = 3}, u8> invalid(quant_params{1e-9f, 0});
  CHECK(errors.calls() == 1);
  CHECK(!invalid.valid());
  std::vector<u8> in(12, 3), out(12, 1);
  invalid(tensor_view<const u8>(in.data(), shape{2, 2, 3}), tensor_view<u8>(out.data(), shape{2, 2, 3}));
  CHECK(errors.calls() == 2);
  const mosaiq::log_softmax<softmax_config{.channels = 3}, u8> kernel(quant_params{0.1f, 0});
  kernel(tensor_view<const u8>(in.data(), shape{2, 3, 2}), tensor_view<u8>(out.data(), shape{2, 3, 2}));
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  kernel(tensor_view<const u8>(in.data(), shape{2, 2, 3}), tensor_view<u8>(out.data(), shape{1, 2, 3}));
  CHECK(errors.calls() == 4);
  CHECK(std::count(out.begin(), out.end(), u8{1}) == 12);
}
