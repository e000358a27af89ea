// mosaiq::add16x8, mul16x8, hard_swish16x8, logistic16x8 and resize_bilinear16x8 (the compiled-for ISA's path)
// against reference::add_16, mul_16, hard_swish_16, logistic_16 and resize_bilinear_16, bit for bit, for both
// roundings: multipliers over their whole domain (and those Prepare makes from scales), inputs at -32768 / 32767,
// channel tails, odd sizes, batches, pixel strides and unaligned views, in place, the per-channel broadcast on either
// side, the other broadcasts (reference fallback), and misuse. Hard swish and logistic over every int16 input. The
// vector spans against the scalar twin directly, for every run length up to 70.
#include "mosaiq/ops/eltwise16x8.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "mosaiq/core.hpp"
#include "mosaiq/reference/int16.hpp"
#include "support.hpp"
#include "support16x8.hpp"

namespace {

using namespace mosaiq;
using test::canary;
using test::stored_tensor;
using i16 = std::int16_t;

/// int16 values, a quarter of them at the extremes.
std::vector<i16> random_values(std::mt19937& rng, std::size_t count) {
  std::uniform_int_distribution<int> value(-32768, 32767), kind(0, 7);
  std::vector<i16> values(count);
  for (i16& v : values) {
    const int k = kind(rng);
    v = static_cast<i16>(k == 0 ? -32768 : k == 1 ? 32767 : value(rng));
  }
  return values;
}

void fill(const tensor_view<i16>& v, const std::vector<i16>& values) {
  std::size_t i = 0;
  for (int n = 0; n < v.batch(); ++n)
    for (int y = 0; y < v.height(); ++y)
      for (int x = 0; x < v.width(); ++x)
        for (int c = 0; c < v.channels(); ++c) v(n, y, x, c) = values[i++ % values.size()];
}

std::int32_t draw(std::mt19937& rng, std::int32_t lo, std::int32_t hi) {
  return std::uniform_int_distribution<std::int32_t>(lo, hi)(rng);
}

/// A Q31 multiplier: 0, the top, or normalized.
std::int32_t random_q31(std::mt19937& rng) {
  const int kind = draw(rng, 0, 9);
  return kind == 0 ? 0 : kind == 1 ? std::numeric_limits<std::int32_t>::max() : draw(rng, 1 << 30, 0x7FFFFFFF);
}

clamp_range random_clamp(std::mt19937& rng) {
  const int kind = draw(rng, 0, 2);
  return kind == 0 ? clamp_range{-32768, 32767} : kind == 1 ? clamp_range{0, 32767} : clamp_range{-1000, 6000};
}

/// Add params anywhere in their domain (shifts in [-31, 0]), or from random scales through Prepare.
reference::add_params_16 random_add_params(std::mt19937& rng, int variant) {
  if (variant % 2 == 0) {
    const float a = std::uniform_real_distribution<float>(1e-5f, 1e-3f)(rng);
    const float b = variant % 4 == 0 ? a : std::uniform_real_distribution<float>(1e-5f, 1e-3f)(rng);
    const float out = std::max(a, b) * std::uniform_real_distribution<float>(0.5f, 3.0f)(rng);
    return reference::make_add_params_16(a, b, out, variant % 3 == 0 ? activation::relu : activation::none);
  }
  const auto multiplier = [&] { return quantized_multiplier{random_q31(rng), draw(rng, -31, 0)}; };
  return {
      .input1_multiplier = {draw(rng, 1 << 30, 0x7FFFFFFF), draw(rng, -16, -1)},
      .input2_multiplier = variant % 5 == 1 ? multiplier() : quantized_multiplier{draw(rng, 1 << 30, 0x7FFFFFFF), -1},
      .output_multiplier =
          variant % 3 == 1 ? multiplier() : quantized_multiplier{draw(rng, 1 << 30, 0x7FFFFFFF), draw(rng, -20, -12)},
      .clamp = random_clamp(rng),
      .valid = true};
}

/// Mul params anywhere in the domain of rounding R (shifts in [-31, 30]: products shifted left wrap as TFLite's), or
/// from random scales.
template <rounding R>
reference::mul_params_16 random_mul_params(std::mt19937& rng, int variant) {
  if (variant % 2 == 0) {
    const float a = std::uniform_real_distribution<float>(1e-5f, 1e-3f)(rng);
    const float b = std::uniform_real_distribution<float>(1.0f / 32768, 1e-3f)(rng);
    const float out = a * b * std::uniform_real_distribution<float>(4096.0f, 65536.0f)(rng);
    return reference::make_mul_params_16<R>(a, b, out, variant % 3 == 0 ? activation::relu6 : activation::none);
  }
  const int shift = variant % 3 == 1 ? draw(rng, -31, 30) : draw(rng, -20, -12);
  return {.output_multiplier = {random_q31(rng), shift}, .clamp = random_clamp(rng), .round = R, .valid = true};
}

/// Hard swish params from scales (exponents both sides of 0) or anywhere in the domain.
reference::hard_swish_params_16 random_hard_swish_params(std::mt19937& rng, int variant) {
  if (variant % 2 == 0) {
    const float in = std::uniform_real_distribution<float>(1e-5f, 1e-2f)(rng);
    const float out = in * std::uniform_real_distribution<float>(variant % 4 == 0 ? 0.01f : 0.3f, 3.0f)(rng);
    return reference::make_hard_swish_params_16(in, out);
  }
  const auto q15 = [&] { return static_cast<std::int16_t>(draw(rng, 16384, 32767)); };
  return {.reluish_multiplier = q15(),
          .reluish_exponent = draw(rng, -31, 15),
          .output_multiplier = q15(),
          .output_exponent = draw(rng, -31, 15),
          .valid = true};
}

/// A test tensor: random values, pixel stride channels + pad, one element past an aligned start (stored_tensor).
struct operand {
  stored_tensor<i16> storage;
  operand(std::mt19937& rng, shape s, int batch, int pad) : storage(s, batch, s.channels + pad, canary) {
    fill(storage.view, random_values(rng, s.elements() * static_cast<std::size_t>(batch)));
  }
  tensor_view<const i16> view() const { return storage.view; }
};

/// A copy of t whose view points into the copy's buffer.
stored_tensor<i16> copy_of(const stored_tensor<i16>& t) {
  stored_tensor<i16> copy = t;
  copy.view = tensor_view<i16>(copy.buffer.data() + (t.view.data() - t.buffer.data()), t.view.dims(), t.view.batch(),
                               t.view.pixel_stride());
  return copy;
}

/// The kernel's and the reference's outputs in separate canary-filled tensors of one layout: equal, gaps included.
template <class Kernel, class Reference>
void check_binary(std::mt19937& rng, const Kernel& kernel, Reference reference_op, shape a_shape, shape b_shape,
                  shape out_shape, int batch, int pad) {
  const operand a(rng, a_shape, a_shape.height == 1 && a_shape.width == 1 ? 1 : batch, pad);
  const operand b(rng, b_shape, batch, pad + 1);
  stored_tensor<i16> expected(out_shape, batch, out_shape.channels + pad, canary),
      got(out_shape, batch, out_shape.channels + pad, canary);
  reference_op(a.view(), b.view(), expected.view);
  kernel(a.view(), b.view(), got.view);
  CHECK(got.buffer == expected.buffer);
}

const shape shapes[] = {{1, 1, 1}, {3, 5, 7}, {2, 3, 16}, {5, 3, 24}, {1, 9, 33}, {4, 4, 40}, {2, 7, 70}};

/// Every shape, batch and pixel padding of the grid, equal shapes and the per-channel vector on either side: params
/// from draw(variant), run by Kernel and by reference_op(a, b, out, params).
template <class Kernel, class Draw, class Reference>
void check_binary_grid(std::mt19937& rng, Draw draw, Reference reference_op) {
  int variant = 0;
  for (const shape s : shapes)
    for (const int batch : {1, 2})
      for (const int pad : {0, 3}) {
        const auto p = draw(variant++);
        REQUIRE(p.valid);
        const Kernel kernel(p);
        const auto run_reference = [&](auto a, auto b, auto out) { reference_op(a, b, out, p); };
        const shape vector{1, 1, s.channels};
        check_binary(rng, kernel, run_reference, s, s, s, batch, pad);
        check_binary(rng, kernel, run_reference, vector, s, s, batch, pad);
        check_binary(rng, kernel, run_reference, s, vector, s, batch, pad);
      }
}

}  // namespace

TEST_CASE_TEMPLATE("add16x8 == reference::add_16: equal shapes, strides, the per-channel broadcast", Round,
                   std::integral_constant<rounding, rounding::tflite_reference>,
                   std::integral_constant<rounding, rounding::single_round>) {
  constexpr rounding R = Round::value;
  std::mt19937 rng(61);
  check_binary_grid<add16x8<R>>(
      rng, [&](int variant) { return random_add_params(rng, variant); },
      [](auto a, auto b, auto out, const auto& p) { reference::add_16<R>(a, b, out, p); });
}

TEST_CASE_TEMPLATE("mul16x8 == reference::mul_16: equal shapes, strides, the per-channel broadcast", Round,
                   std::integral_constant<rounding, rounding::tflite_reference>,
                   std::integral_constant<rounding, rounding::single_round>) {
  constexpr rounding R = Round::value;
  std::mt19937 rng(62);
  check_binary_grid<mul16x8<R>>(
      rng, [&](int variant) { return random_mul_params<R>(rng, variant); },
      [](auto a, auto b, auto out, const auto& p) { reference::mul_16<R>(a, b, out, p); });
}

TEST_CASE("add16x8, mul16x8: other broadcasts (the reference's), the vector per image, in place") {
  std::mt19937 rng(63);
  const reference::add_params_16 ap = random_add_params(rng, 0);
  const reference::mul_params_16 mp = random_mul_params<rounding::tflite_reference>(rng, 0);
  const add16x8<> add(ap);
  const mul16x8<> mul(mp);
  const auto add_ref = [&](auto a, auto b, auto out) { reference::add_16<rounding::tflite_reference>(a, b, out, ap); };
  const auto mul_ref = [&](auto a, auto b, auto out) { reference::mul_16<rounding::tflite_reference>(a, b, out, mp); };
  const shape full{3, 4, 5};
  for (const shape other : {shape{1, 1, 1}, shape{1, 4, 5}, shape{3, 1, 5}, shape{3, 4, 1}}) {
    check_binary(rng, add, add_ref, other, full, full, 2, 1);
    check_binary(rng, mul, mul_ref, full, other, full, 2, 0);
  }
  // A 1 x 1 x C vector per image of a batch of 2 (check_binary's b has the batch).
  check_binary(rng, add, add_ref, full, shape{1, 1, 5}, full, 2, 2);
  check_binary(rng, mul, mul_ref, full, shape{1, 1, 5}, full, 2, 2);

  for (const int pad : {0, 2}) {
    const operand a(rng, full, 2, pad), b(rng, full, 2, pad);
    stored_tensor<i16> expected = copy_of(b.storage), in_place = copy_of(b.storage);
    reference::add_16<rounding::tflite_reference>(a.view(), b.view(), expected.view, ap);
    add(a.view(), in_place.view, in_place.view);  // out is b
    CHECK(in_place.buffer == expected.buffer);
    expected = copy_of(a.storage);
    in_place = copy_of(a.storage);
    reference::mul_16<rounding::tflite_reference>(a.view(), b.view(), expected.view, mp);
    mul(in_place.view, b.view(), in_place.view);  // out is a
    CHECK(in_place.buffer == expected.buffer);
  }
}

TEST_CASE_TEMPLATE("hard_swish16x8 == reference::hard_swish_16 on every int16 input, and on strided views", Round,
                   std::integral_constant<rounding, rounding::tflite_reference>,
                   std::integral_constant<rounding, rounding::single_round>) {
  constexpr rounding R = Round::value;
  std::mt19937 rng(64);
  std::vector<i16> all(65536);
  for (int i = 0; i < 65536; ++i) all[static_cast<std::size_t>(i)] = static_cast<i16>(i - 32768);
  const shape whole{1, 1, 65536};
  bool exponents_above_zero = false, exponents_at_most_zero = false;
  for (int variant = 0; variant < 24; ++variant) {
    const reference::hard_swish_params_16 p = random_hard_swish_params(rng, variant);
    REQUIRE(p.valid);
    (p.output_exponent > 0 ? exponents_above_zero : exponents_at_most_zero) = true;
    const hard_swish16x8<R> kernel(p);
    std::vector<i16> expected(all.size()), got(all.size());
    reference::hard_swish_16<R>(tensor_view<const i16>(all.data(), whole), tensor_view<i16>(expected.data(), whole), p);
    kernel(tensor_view<const i16>(all.data(), whole), tensor_view<i16>(got.data(), whole));
    CHECK(got == expected);

    const shape s = shapes[variant % std::size(shapes)];
    const int pad = variant % 3;
    const operand in(rng, s, 1 + variant % 2, pad);
    stored_tensor<i16> ref_out(s, in.view().batch(), s.channels + pad + 1, canary),
        out(s, in.view().batch(), s.channels + pad + 1, canary);
    reference::hard_swish_16<R>(in.view(), ref_out.view, p);
    kernel(in.view(), out.view);
    CHECK(out.buffer == ref_out.buffer);
    stored_tensor<i16> in_place = copy_of(in.storage), expected_in_place = copy_of(in.storage);  // out is in
    kernel(in_place.view, in_place.view);
    reference::hard_swish_16<R>(in.view(), expected_in_place.view, p);
    CHECK(in_place.buffer == expected_in_place.buffer);
  }
  CHECK(exponents_above_zero);
  CHECK(exponents_at_most_zero);
}

TEST_CASE("logistic16x8 == reference::logistic_16 on every int16 input, and on strided views") {
  std::mt19937 rng(66);
  std::vector<i16> all(65536);
  for (int i = 0; i < 65536; ++i) all[static_cast<std::size_t>(i)] = static_cast<i16>(i - 32768);
  const shape whole{1, 1, 65536};
  // 2^-12 (the power-of-two case), scales that saturate early or never, and random ones.
  std::vector<float> scales = {1.0f / 4096, 2.66f, 1e-9f, 1.0f / 32768, 6.0f / 32768};
  for (int i = 0; i < 12; ++i) scales.push_back(std::uniform_real_distribution<float>(1e-6f, 2.0f)(rng));
  for (std::size_t variant = 0; variant < scales.size(); ++variant) {
    const reference::logistic_params_16 p = reference::make_logistic_params_16(scales[variant]);
    REQUIRE(p.valid);
    const logistic16x8 kernel(p);
    std::vector<i16> expected(all.size()), got(all.size());
    reference::logistic_16(tensor_view<const i16>(all.data(), whole), tensor_view<i16>(expected.data(), whole), p);
    kernel(tensor_view<const i16>(all.data(), whole), tensor_view<i16>(got.data(), whole));
    CHECK(got == expected);

    const shape s = shapes[variant % std::size(shapes)];
    const int pad = static_cast<int>(variant % 3);
    const operand in(rng, s, 1 + static_cast<int>(variant % 2), pad);
    stored_tensor<i16> ref_out(s, in.view().batch(), s.channels + pad + 1, canary),
        out(s, in.view().batch(), s.channels + pad + 1, canary);
    reference::logistic_16(in.view(), ref_out.view, p);
    kernel(in.view(), out.view);
    CHECK(out.buffer == ref_out.buffer);
    stored_tensor<i16> in_place = copy_of(in.storage), expected_in_place = copy_of(in.storage);  // out is in
    kernel(in_place.view, in_place.view);
    reference::logistic_16(in.view(), expected_in_place.view, p);
    CHECK(in_place.buffer == expected_in_place.buffer);
  }
}

TEST_CASE_TEMPLATE("resize_bilinear16x8 == reference::resize_bilinear_16: up, down, both modes, edges, strides", Round,
                   std::integral_constant<rounding, rounding::tflite_reference>,
                   std::integral_constant<rounding, rounding::single_round>) {
  constexpr rounding R = Round::value;
  std::mt19937 rng(67);
  struct sizes {
    shape in, out;
  };
  const sizes grid[] = {{{16, 16, 128}, {32, 32, 128}}, {{8, 8, 24}, {16, 16, 24}}, {{3, 5, 7}, {6, 10, 7}},
                        {{1, 1, 3}, {4, 5, 3}},         {{5, 4, 17}, {11, 9, 17}},  {{9, 7, 33}, {4, 3, 33}},
                        {{6, 6, 16}, {6, 6, 16}},       {{2, 9, 1}, {7, 2, 1}}};
  int variant = 0;
  for (const auto& [in_shape, out_shape] : grid)
    for (const resize_mode mode : {resize_mode::half_pixel, resize_mode::align_corners, resize_mode::legacy})
      for (const int batch : {1, 2}) {
        const int pad = variant++ % 3;
        const operand in(rng, in_shape, batch, pad);
        stored_tensor<i16> expected(out_shape, batch, out_shape.channels + pad, canary),
            got(out_shape, batch, out_shape.channels + pad, canary);
        reference::resize_bilinear_16<R>(in.view(), expected.view, mode);
        resize_bilinear16x8<R>(in.view(), got.view, mode);
        CHECK(got.buffer == expected.buffer);
        test::check_row_splits(expected, canary, [&](row_band band, const tensor_view<i16>& out) {
          resize_bilinear16x8_rows<R>(in.view(), out, mode, band);
        });
      }
  // Every tap at an extreme: sums of +-32768 * 2^20 and ties.
  for (const i16 value : {i16{-32768}, i16{32767}, i16{-1}, i16{1}}) {
    std::vector<i16> in(5 * 5 * 3, value);
    in[7] = static_cast<i16>(-value);
    std::vector<i16> expected(10 * 9 * 3), got(expected.size());
    reference::resize_bilinear_16<R>(tensor_view<const i16>(in.data(), {5, 5, 3}),
                                     tensor_view<i16>(expected.data(), {10, 9, 3}), resize_mode::half_pixel);
    resize_bilinear16x8<R>(tensor_view<const i16>(in.data(), {5, 5, 3}), tensor_view<i16>(got.data(), {10, 9, 3}),
                           resize_mode::half_pixel);
    CHECK(got == expected);
  }
}

// The folded forms of the 16x8 add, mul and hard swish (ops/eltwise16x8/scales.hpp) against the references' steps
// over their domains: every int16 input on one side, edges and random values on the other.

/// x values of the fold's domain (|x| <= 2^30): the ends, small values (ties at every exponent), random.
std::vector<std::int32_t> folded_domain(std::mt19937& rng) {
  std::vector<std::int32_t> xs = {1 << 30, -(1 << 30), (1 << 30) - 1, -(1 << 30) + 1, 0};
  for (std::int32_t x = -4100; x <= 4100; ++x) xs.push_back(x);
  for (int i = 0; i < 4000; ++i) xs.push_back(draw(rng, -(1 << 30), 1 << 30));
  return xs;
}

TEST_CASE_TEMPLATE("fold_scale: one rounding == multiply_by_quantized_multiplier for |x| <= 2^30", Round,
                   std::integral_constant<rounding, rounding::tflite_reference>,
                   std::integral_constant<rounding, rounding::single_round>) {
  constexpr rounding R = Round::value;
  std::mt19937 rng(70);
  const std::vector<std::int32_t> xs = folded_domain(rng);
  for (int shift = -31; shift <= 0; ++shift)
    for (const std::int32_t m : {0, 1, 1 << 30, (1 << 30) + 1, 0x7FFFFFFF, draw(rng, 1 << 30, 0x7FFFFFFF)}) {
      const requant_scale s = prepare_scale<R>(quantized_multiplier{m, shift});
      CHECK(kernels::eltwise16::folds<R>(s) == (shift > -31));
      if (!kernels::eltwise16::folds<R>(s)) continue;
      const kernels::eltwise16::folded_scale f = kernels::eltwise16::fold_scale<R>(s);
      std::size_t wrong = 0;
      for (const std::int32_t x : xs)
        wrong += kernels::eltwise16::multiply_folded(x, f) != multiply_by_quantized_multiplier<R>(x, s);
      CHECK_MESSAGE(wrong == 0, "shift ", shift, " multiplier ", m);
    }
  CHECK_FALSE(kernels::eltwise16::folds<R>(prepare_scale<R>(quantized_multiplier{1 << 30, 1})));  // a left shift
}

/// Every int16 against a few values (edges and random) on the other side, both orders.
template <class Check>
void every_pair_against_some(std::mt19937& rng, Check check) {
  std::vector<i16> some = {-32768, -32767, -1, 0, 1, 32766, 32767};
  for (int i = 0; i < 9; ++i) some.push_back(static_cast<i16>(draw(rng, -32768, 32767)));
  for (int a = -32768; a <= 32767; ++a)
    for (const i16 b : some) {
      check(static_cast<i16>(a), b);
      check(b, static_cast<i16>(a));
    }
}

/// Ten param draws: `folded_element(a, b, params)` against `reference_element` on every_pair_against_some; returns how
/// many draws took the folded form (`is_folded(params)`).
template <class Draw, class Folded, class Reference, class IsFolded>
int check_folded_pairs(std::mt19937& rng, Draw draw_params, Folded folded_element, Reference reference_element,
                       IsFolded is_folded) {
  int folded = 0;
  for (int variant = 0; variant < 10; ++variant) {
    const auto params = draw_params(variant);
    folded += is_folded(params);
    std::size_t wrong = 0;
    every_pair_against_some(
        rng, [&](i16 a, i16 b) { wrong += folded_element(a, b, params) != reference_element(a, b, params); });
    CHECK_MESSAGE(wrong == 0, "variant ", variant);
  }
  return folded;
}

TEST_CASE_TEMPLATE("add16x8, mul16x8: the folded steps == the references' elements, every input against some", Round,
                   std::integral_constant<rounding, rounding::tflite_reference>,
                   std::integral_constant<rounding, rounding::single_round>) {
  constexpr rounding R = Round::value;
  namespace kernels16 = kernels::eltwise16;
  std::mt19937 rng(71);
  const int added = check_folded_pairs(
      rng,
      [&](int variant) {
        const kernels16::add_scales_16x8 s = kernels16::add_scales_16x8_of<R>(random_add_params(rng, variant));
        if (variant % 2 == 0) REQUIRE(s.folded);  // Prepare's params always fold
        return s;
      },
      [](i16 a, i16 b, const auto& s) { return kernels16::scalar::add_element<R>(a, b, s); },
      [](i16 a, i16 b, const auto& s) { return reference::add_16_element<R>(a, b, s.general); },
      [](const auto& s) { return s.folded; });
  CHECK(added >= 5);
  const int multiplied = check_folded_pairs(
      rng, [&](int variant) { return kernels16::mul_scales_16_of<R>(random_mul_params<R>(rng, variant)); },
      [](i16 a, i16 b, const auto& s) { return kernels16::scalar::mul_element<R>(a, b, s); },
      [](i16 a, i16 b, const auto& s) { return reference::mul_16_element<R>(a, b, s.output, s.clamp); },
      [](const auto& s) { return s.output_folds; });
  CHECK(multiplied >= 5);
}

TEST_CASE_TEMPLATE("hard_swish16x8's folded steps == reference::hard_swish_16_element: every exponent, every input",
                   Round, std::integral_constant<rounding, rounding::tflite_reference>,
                   std::integral_constant<rounding, rounding::single_round>) {
  constexpr rounding R = Round::value;
  std::mt19937 rng(73);
  const auto q15 = [&] { return static_cast<std::int16_t>(draw(rng, 16384, 32767)); };
  for (int reluish_exponent = -31; reluish_exponent <= 15; ++reluish_exponent)
    for (const int output_exponent : {0, 1, -2, draw(rng, -31, 15)}) {  // large left shifts saturate most outputs
      const reference::hard_swish_params_16 p{
          .reluish_multiplier = reluish_exponent % 5 == 0 ? std::int16_t{32767} : q15(),
          .reluish_exponent = reluish_exponent,
          .output_multiplier = q15(),
          .output_exponent = output_exponent,
          .valid = true};
      const kernels::eltwise16::hard_swish_scales_16 s = kernels::eltwise16::hard_swish_scales_16_of<R>(p);
      REQUIRE(s.folds);
      std::size_t wrong = 0;
      for (int x = -32768; x <= 32767; ++x)
        wrong += kernels::eltwise16::scalar::hard_swish_folded_element(static_cast<i16>(x), s.folded) !=
                 reference::hard_swish_16_element<R>(static_cast<i16>(x), p);
      CHECK_MESSAGE(wrong == 0, "reluish exponent ", reluish_exponent, " output exponent ", output_exponent);
    }
}

TEST_CASE("add16x8, mul16x8, hard_swish16x8: params outside the folded forms run the general path, exactly") {
  std::mt19937 rng(74);
  constexpr rounding R = rounding::tflite_reference;
  std::vector<i16> all(65536), other(65536);
  for (int i = 0; i < 65536; ++i) all[static_cast<std::size_t>(i)] = static_cast<i16>(i - 32768);
  std::vector<i16> got(all.size()), expected(all.size());
  const shape whole{1, 1, 65536};
  const tensor_view<const i16> in(all.data(), whole), b(other.data(), whole);
  const tensor_view<i16> got_view(got.data(), whole), expected_view(expected.data(), whole);
  for (i16& v : other) v = static_cast<i16>(draw(rng, -32768, 32767));

  // Hard swish with a reluish mantissa <= 0 (not from Prepare, inside the reference's domain).
  for (const std::int16_t m : {std::int16_t{0}, std::int16_t{-1}, std::int16_t{-32768}}) {
    const reference::hard_swish_params_16 p{.reluish_multiplier = m,
                                            .reluish_exponent = -16,
                                            .output_multiplier = 20000,
                                            .output_exponent = -1,
                                            .valid = true};
    REQUIRE_FALSE(kernels::eltwise16::hard_swish_scales_16_of<R>(p).folds);
    const hard_swish16x8<R> kernel(p);
    kernel(in, got_view);
    reference::hard_swish_16<R>(in, expected_view, p);
    CHECK(got == expected);
  }
  // Mul with a multiplier of 1 or more (a left shift) and add with an input multiplier above 1/2 or a left shift.
  const reference::mul_params_16 mp{
      .output_multiplier = {1 << 30, 3}, .clamp = {-32768, 32767}, .round = R, .valid = true};
  REQUIRE_FALSE(kernels::eltwise16::mul_scales_16_of<R>(mp).output_folds);
  const mul16x8<R> mul(mp);
  mul(in, b, got_view);
  reference::mul_16<R>(in, b, expected_view, mp);
  CHECK(got == expected);
  const reference::add_params_16 sums_too_wide{.input1_multiplier = {0x7FFFFFFF, 0},
                                               .input2_multiplier = {0x7FFFFFFF, 0},
                                               .output_multiplier = {1 << 30, -14},
                                               .clamp = {-32768, 32767},
                                               .valid = true};
  REQUIRE_FALSE(kernels::eltwise16::add_scales_16x8_of<R>(sums_too_wide).folded);
  const add16x8<R> add(sums_too_wide);
  add(in, b, got_view);
  reference::add_16<R>(in, b, expected_view, sums_too_wide);
  CHECK(got == expected);
}

#if MOSAIQ_TARGET_SIMD
TEST_CASE("eltwise16x8: the vector spans == the scalar twin for every run length up to 70") {
  namespace vector = kernels::eltwise16::vector;
  namespace scalar = kernels::eltwise16::scalar;
  std::mt19937 rng(65);
  constexpr rounding R = rounding::tflite_reference, S = rounding::single_round;
  std::array<int, 3> shifted_inputs{};  // add's vector forms: neither input, the first, the second a << 14
  for (std::size_t n = 0; n <= 70; ++n) {
    const std::vector<i16> a = random_values(rng, n + 1), b = random_values(rng, n + 1);
    std::vector<i16> got(n + 1, canary), expected(n + 1, canary);
    const auto same = [&](auto run_vector, auto run_scalar) {
      std::fill(got.begin(), got.end(), canary);
      std::fill(expected.begin(), expected.end(), canary);
      run_vector(got.data());
      run_scalar(expected.data());
      return got == expected;  // the element past n keeps its canary in both
    };
    const kernels::eltwise16::add_scales_16x8 as =
        kernels::eltwise16::add_scales_16x8_of<S>(random_add_params(rng, static_cast<int>(n)));
    ++shifted_inputs[static_cast<std::size_t>(as.shifted_input)];
    CHECK(same([&](i16* o) { vector::add_span<S>(a.data() + 1, b.data(), o, n, as); },
               [&](i16* o) { scalar::add_span<S>(a.data() + 1, b.data(), o, n, as); }));
    const kernels::eltwise16::mul_scales_16 ms =
        kernels::eltwise16::mul_scales_16_of<R>(random_mul_params<R>(rng, static_cast<int>(n)));
    CHECK(same([&](i16* o) { vector::mul_span<R>(a.data(), b.data() + 1, o, n, ms); },
               [&](i16* o) { scalar::mul_span<R>(a.data(), b.data() + 1, o, n, ms); }));
    const kernels::eltwise16::hard_swish_scales_16 hs =
        kernels::eltwise16::hard_swish_scales_16_of<R>(random_hard_swish_params(rng, static_cast<int>(n)));
    CHECK(same([&](i16* o) { vector::hard_swish_span<R>(a.data() + 1, o + 1, n, hs); },
               [&](i16* o) { scalar::hard_swish_span<R>(a.data() + 1, o + 1, n, hs); }));
    const kernels::eltwise16::logistic_table_16 lt = kernels::eltwise16::logistic_table_16_of(
        reference::make_logistic_params_16(std::uniform_real_distribution<float>(1e-5f, 2.0f)(rng)));
    CHECK(same([&](i16* o) { vector::logistic_span(a.data(), o, n, lt); },
               [&](i16* o) { scalar::logistic_span(a.data(), o, n, lt); }));
    const std::vector<i16> c = random_values(rng, n + 1), d = random_values(rng, n + 1);
    // A weight below 0 (a half-pixel edge) only ever weighs a tap against itself, which keeps the result in int16.
    const std::int32_t wy = draw(rng, -512, 1024), wx = draw(rng, -512, 1024);
    const i16* top_left = a.data();
    const i16* bottom_left = wy < 0 ? top_left : b.data() + 1;
    const i16* top_right = wx < 0 ? top_left : c.data();
    const i16* bottom_right = wx < 0 ? bottom_left : wy < 0 ? top_right : d.data() + 1;
    const kernels::eltwise16::bilinear_taps taps{top_left, bottom_left, top_right, bottom_right};
    const kernels::eltwise16::bilinear_weights w{1024 - wy, wy, 1024 - wx, wx};
    CHECK(same([&](i16* o) { vector::bilinear_span<R>(taps, w, o, n); },
               [&](i16* o) { scalar::bilinear_span<R>(taps, w, o, n); }));
    CHECK(same([&](i16* o) { vector::bilinear_span<S>(taps, w, o, n); },
               [&](i16* o) { scalar::bilinear_span<S>(taps, w, o, n); }));
  }
  for (const int count : shifted_inputs) CHECK(count > 0);
}
#endif

TEST_CASE("eltwise16x8: misuse is reported and leaves the output untouched") {
  test::recording_handler errors;
  const add16x8<> bad_add(0.0f, 1.0f, 1.0f);
  CHECK(errors.last() == errc::invalid_argument);
  CHECK_FALSE(bad_add.valid());
  errors.reset();
  const mul16x8<rounding::single_round> wrong_round(
      reference::make_mul_params_16<rounding::tflite_reference>(0.01f, 0.01f, 0.01f));
  CHECK_FALSE(wrong_round.valid());
  const hard_swish16x8<> bad_swish(1.0f, -1.0f);
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();

  const add16x8<> add(0.01f, 0.02f, 0.05f);
  const mul16x8<> mul(0.01f, 0.02f, 0.05f);
  const hard_swish16x8<> swish(0.01f, 0.02f);
  REQUIRE(errors.calls() == 0);
  std::vector<i16> in(2 * 3 * 4, 7), out(2 * 3 * 4, canary);
  const std::vector<i16> untouched = out;
  const tensor_view<const i16> a(in.data(), {2, 3, 4});
  const tensor_view<i16> o(out.data(), {2, 3, 4});
  add(a, tensor_view<const i16>(in.data(), {2, 2, 4}), o);  // not a broadcast of out
  CHECK(errors.last() == errc::shape_mismatch);
  errors.reset();
  mul(a, tensor_view<const i16>(nullptr, {2, 3, 4}), o);
  CHECK(errors.last() == errc::null_pointer);
  errors.reset();
  swish(a, tensor_view<i16>(out.data(), {3, 2, 4}));
  CHECK(errors.last() == errc::shape_mismatch);
  errors.reset();
  bad_add(a, a, o);
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  wrong_round(a, a, o);
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  bad_swish(a, o);
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  const logistic16x8 bad_logistic(0.0f);
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  bad_logistic(a, o);
  CHECK(errors.last() == errc::invalid_argument);
  errors.reset();
  logistic16x8(0.01f)(a, tensor_view<i16>(out.data(), {3, 2, 4}));
  CHECK(errors.last() == errc::shape_mismatch);
  errors.reset();
  resize_bilinear16x8(a, tensor_view<i16>(out.data(), {2, 3, 3}), resize_mode::half_pixel);  // channels
  CHECK(errors.last() == errc::shape_mismatch);
  errors.reset();
  for (const row_band band : {row_band{-1, 1}, row_band{2, 1}, row_band{0, 3}}) {  // outside the 2 output rows
    resize_bilinear16x8_rows<rounding::tflite_reference>(a, tensor_view<i16>(out.data(), {2, 3, 4}),
                                                         resize_mode::half_pixel, band);
    CHECK(errors.last() == errc::invalid_argument);
    errors.reset();
  }
  CHECK(out == untouched);
}
