// QuantizeMultiplier and requantization: hand-computed TFLite cases, gemmlowp's own fixedpoint
// functions where the header is installed, and the SIMD requantization of the ISA this binary
// was built for proven equal to the scalar twin over 10^7 random and all edge inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "mosaiq/core.hpp"
#include "mosaiq/simd.hpp"

#if __has_include(<gemmlowp/fixedpoint/fixedpoint.h>)
#include <gemmlowp/fixedpoint/fixedpoint.h>
#define MOSAIQ_HAVE_GEMMLOWP 1
#endif

using namespace mosaiq;

namespace {
constexpr std::int32_t int_min = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t int_max = std::numeric_limits<std::int32_t>::max();
}  // namespace

TEST_CASE("quantize_multiplier follows TFLite: frexp, round half away, 2^31 carry, flush") {
  CHECK(quantize_multiplier(0.0) == quantized_multiplier{0, 0});
  CHECK(quantize_multiplier(0.5) == quantized_multiplier{1 << 30, 0});
  CHECK(quantize_multiplier(1.0) == quantized_multiplier{1 << 30, 1});
  CHECK(quantize_multiplier(0.25) == quantized_multiplier{1 << 30, -1});
  CHECK(quantize_multiplier(0.75) == quantized_multiplier{3 << 29, 0});
  // 0.0123 = 0.7872 * 2^-6; 0.7872 * 2^31 = 1690499127.7... rounds up.
  CHECK(quantize_multiplier(0.0123) == quantized_multiplier{1690499128, -6});
  // q * 2^31 rounds to exactly 2^31: TFLite halves it and bumps the shift.
  CHECK(quantize_multiplier(1.0 - std::ldexp(1.0, -40)) == quantized_multiplier{1 << 30, 1});
  // A tie in q * 2^31 (fraction exactly .5) rounds away from zero.
  CHECK(quantize_multiplier(std::ldexp((std::ldexp(1.0, 30) + 0.5), -31)).multiplier == (1 << 30) + 1);
  // Below 2^-32 the shift would fall under -31: flushed to zero.
  CHECK(quantize_multiplier(std::ldexp(1.0, -40)) == quantized_multiplier{0, 0});
  CHECK(quantize_multiplier(std::ldexp(1.0, -32)) == quantized_multiplier{1 << 30, -31});
  // Large multipliers: reference mode keeps the exponent, single-round saturates at (2^31-1, 30).
  CHECK(quantize_multiplier(std::ldexp(1.0, 40)) == quantized_multiplier{1 << 30, 41});
  CHECK(quantize_multiplier<rounding::single_round>(std::ldexp(1.0, 40)) == quantized_multiplier{int_max, 30});
}

TEST_CASE("conv multipliers: uint8 multiplies the scales in float first, per-channel in double") {
  const float in = 0.1f, filt = 0.3f, out = 0.7f;
  CHECK(conv_real_multiplier_per_tensor(in, filt, out) == double(in * filt) / double(out));
  CHECK(conv_real_multiplier_per_channel(in, filt, out) == double(in) * double(filt) / double(out));
  CHECK(conv_real_multiplier_per_tensor(in, filt, out) != conv_real_multiplier_per_channel(in, filt, out));
}

TEST_CASE("SaturatingRoundingDoublingHighMul and RoundingDivideByPOT hand cases") {
  CHECK(saturating_rounding_doubling_high_mul(int_min, int_min) == int_max);
  CHECK(saturating_rounding_doubling_high_mul(3, 1 << 30) == 2);    // 1.5 -> 2 (ties up)
  CHECK(saturating_rounding_doubling_high_mul(-3, 1 << 30) == -1);  // -1.5 -> -1 (ties up)
  CHECK(saturating_rounding_doubling_high_mul(int_max, int_max) == int_max - 1);
  CHECK(rounding_divide_by_pot(3, 1) == 2);    // 1.5 -> 2
  CHECK(rounding_divide_by_pot(-3, 1) == -2);  // -1.5 -> -2 (away from zero)
  CHECK(rounding_divide_by_pot(-5, 2) == -1);  // -1.25 -> -1
  CHECK(rounding_divide_by_pot(-6, 2) == -2);  // -1.5 -> -2
  CHECK(rounding_divide_by_pot(int_min, 31) == -1);
  CHECK(rounding_divide_by_pot(int_max, 31) == 1);
  CHECK(rounding_divide_by_pot(12345, 0) == 12345);
}

TEST_CASE("the two rounding modes differ exactly where the notes say: ties after the second rounding") {
  const auto quarter = quantize_multiplier(0.25);  // (2^30, -1)
  // Reference: SRDHM(-6, 2^30) = -3 (exact), then -3 / 2 = -1.5 -> -2 (away from zero).
  CHECK(multiply_by_quantized_multiplier<rounding::tflite_reference>(-6, quarter) == -2);
  // Single rounding: (-6 * 2^30 + 2^31) >> 32 = -1 (ties up).
  CHECK(multiply_by_quantized_multiplier<rounding::single_round>(-6, quarter) == -1);
  CHECK(multiply_by_quantized_multiplier<rounding::tflite_reference>(6, quarter) == 2);
  CHECK(multiply_by_quantized_multiplier<rounding::single_round>(6, quarter) == 2);
  // Left shift (multiplier > 1): 100 * 1.5 = 150 in both modes.
  const auto one_and_half = quantize_multiplier(1.5);
  CHECK(multiply_by_quantized_multiplier<rounding::tflite_reference>(100, one_and_half) == 150);
  CHECK(multiply_by_quantized_multiplier<rounding::single_round>(100, one_and_half) == 150);
  // Full requantize: + zero point, then clamp.
  CHECK(requantize<rounding::tflite_reference, u8>(1000, prepare_scale<rounding::tflite_reference>(quarter), 10, 0,
                                                   255) == 255);
  CHECK(requantize<rounding::tflite_reference, i8>(-1000, prepare_scale<rounding::tflite_reference>(quarter), 3, -128,
                                                   127) == -128);
  CHECK(requantize<rounding::tflite_reference, u8>(400, prepare_scale<rounding::tflite_reference>(quarter), 10, 0,
                                                   255) == 110);
}

#if defined(MOSAIQ_HAVE_GEMMLOWP)
TEST_CASE("scalar fixed-point primitives equal gemmlowp's fixedpoint header") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> any(int_min, int_max);
  std::uniform_int_distribution<int> exponent(0, 31);
  for (int i = 0; i < 1'000'000; ++i) {
    const std::int32_t a = any(rng), b = any(rng);
    REQUIRE(saturating_rounding_doubling_high_mul(a, b) == gemmlowp::SaturatingRoundingDoublingHighMul(a, b));
    const int e = exponent(rng);
    REQUIRE(rounding_divide_by_pot(a, e) == gemmlowp::RoundingDivideByPOT(a, e));
  }
  for (std::int32_t a : {int_min, int_min + 1, -1, 0, 1, int_max})
    for (std::int32_t b : {int_min, int_min + 1, -1, 0, 1, int_max, 1 << 30}) {
      CHECK(saturating_rounding_doubling_high_mul(a, b) == gemmlowp::SaturatingRoundingDoublingHighMul(a, b));
      for (int e : {0, 1, 30, 31}) CHECK(rounding_divide_by_pot(a, e) == gemmlowp::RoundingDivideByPOT(a, e));
    }
}
#endif

namespace {

// Inputs for one equality sweep: accumulators and per-lane scales in structure-of-arrays form.
struct requant_inputs {
  std::vector<std::int32_t> x, multiplier, left, right;
  void push(std::int32_t xv, std::int32_t m, std::int32_t l, std::int32_t r) {
    x.push_back(xv);
    multiplier.push_back(m);
    left.push_back(l);
    right.push_back(r);
  }
  simd::requant_scales_view scales(std::size_t offset = 0) const {
    return {multiplier.data() + offset, left.data() + offset, right.data() + offset};
  }
};

template <rounding Mode>
requant_inputs make_requant_inputs(std::size_t random_count) {
  requant_inputs in;
  const std::array<std::int32_t, 9> edge_values{int_min, int_min + 1, -65536, -1, 0, 1, 65535, int_max - 1, int_max};
  const std::array<std::int32_t, 7> edge_multipliers{int_min, -(1 << 30), 0, 1, 1 << 30, int_max - 1, int_max};
  // Shifts at both ends of each mode's domain.
  const std::vector<std::pair<int, int>> edge_shifts =
      Mode == rounding::tflite_reference
          ? std::vector<std::pair<int, int>>{{0, 0}, {31, 0}, {0, 31}, {1, 1}, {30, 0}, {0, 30}, {31, 31}}
          : std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {0, 31}, {0, 32}, {0, 33}, {0, 61}, {0, 62}};
  for (auto x : edge_values)
    for (auto m : edge_multipliers)
      for (auto [l, r] : edge_shifts) in.push(x, m, l, r);
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<std::int32_t> any(int_min, int_max);
  std::uniform_int_distribution<std::int32_t> accumulator(-(1 << 20), 1 << 20);
  std::uniform_int_distribution<std::int32_t> normalized(1 << 30, int_max);
  std::uniform_int_distribution<int> shift31(0, 31), shift62(1, 62), realistic_shift(-20, 2);
  for (std::size_t i = 0; i < random_count; ++i) {
    // Half realistic layers (normalized multiplier, small accumulators), half anything in the domain.
    const bool realistic = (i & 1) != 0;
    const std::int32_t x = realistic ? accumulator(rng) : any(rng);
    const std::int32_t m = realistic ? normalized(rng) : any(rng);
    const auto q = prepare_scale<Mode>(quantized_multiplier{m, realistic_shift(rng)});
    if (realistic)
      in.push(x, m, q.left_shift, q.right_shift);
    else if constexpr (Mode == rounding::tflite_reference)
      in.push(x, m, shift31(rng), shift31(rng));
    else
      in.push(x, m, 0, shift62(rng));
  }
  return in;
}

template <rounding Mode>
void check_simd_equals_scalar(std::size_t random_count) {
  const requant_inputs in = make_requant_inputs<Mode>(random_count);
  const std::size_t n = in.x.size();
  // Offset by one element so the vector loads are unaligned, and n is not a multiple of any width.
  std::vector<std::int32_t> simd_out(n + 1), scalar_out(n + 1);
  simd::multiply_by_quantized_multiplier<Mode>(in.x.data() + 1, in.scales(1), simd_out.data() + 1, n - 1);
  simd::scalar::multiply_by_quantized_multiplier<Mode>(in.x.data() + 1, in.scales(1), scalar_out.data() + 1, n - 1);
  std::size_t mismatches = 0, first = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (simd_out[i] != scalar_out[i] && mismatches++ == 0) first = i;
  INFO("first mismatch at x=" << in.x[first] << " m=" << in.multiplier[first] << " l=" << in.left[first] << " r="
                              << in.right[first] << " simd=" << simd_out[first] << " scalar=" << scalar_out[first]);
  CHECK(mismatches == 0);
}

template <rounding Mode, quantized_element T>
void check_requantize_to_elements() {
  const requant_inputs in = make_requant_inputs<Mode>(200'000);
  const std::size_t n = in.x.size();
  for (std::int32_t zp : {element_traits<T>::min, std::int32_t{0}, std::int32_t{3}, element_traits<T>::max}) {
    std::vector<T> simd_out(n), scalar_out(n);
    const std::int32_t lo = element_traits<T>::min + 5, hi = element_traits<T>::max - 7;
    simd::requantize<Mode, T>(in.x.data() + 3, in.scales(3), zp, lo, hi, simd_out.data() + 3, n - 3);
    simd::scalar::requantize<Mode, T>(in.x.data() + 3, in.scales(3), zp, lo, hi, scalar_out.data() + 3, n - 3);
    CHECK(simd_out == scalar_out);
  }
}

}  // namespace

TEST_CASE("SIMD multiply_by_quantized_multiplier equals the scalar twin bit for bit (10^7 + edges)") {
  INFO("isa = " << simd::to_string(simd::native_isa));
  SUBCASE("tflite_reference") { check_simd_equals_scalar<rounding::tflite_reference>(10'000'000); }
  SUBCASE("single_round") { check_simd_equals_scalar<rounding::single_round>(10'000'000); }
}

TEST_CASE("SIMD requantize to u8/i8 equals the scalar twin with zero points and clamps") {
  check_requantize_to_elements<rounding::tflite_reference, u8>();
  check_requantize_to_elements<rounding::tflite_reference, i8>();
  check_requantize_to_elements<rounding::single_round, u8>();
  check_requantize_to_elements<rounding::single_round, i8>();
}

#if MOSAIQ_TARGET_AVX2  // the lane kernels below: AVX2, and AVX-512 (which implies it)
namespace {

// multiply_by_nonnegative_multiplier's domain under reference rounding: the edge and random inputs with multipliers
// >= 0 (the random negative ones folded over), plus ties of the second rounding for both signs at every right shift:
// SRDHM(x, 2^30) = floor((x + 1) / 2) and SRDHM(x, 2^31 - 1) is about x, so these x land on and next to
// (2k + 1) * 2^(e-1).
requant_inputs nonnegative_multiplier_inputs(std::size_t random_count) {
  requant_inputs in = make_requant_inputs<rounding::tflite_reference>(random_count);
  for (auto& m : in.multiplier) m = m < 0 ? ~m : m;
  for (int e = 1; e <= 31; ++e)
    for (std::int64_t k = -3; k <= 2; ++k) {
      const std::int64_t tie = (2 * k + 1) * (std::int64_t{1} << (e - 1));
      for (std::int64_t d = -2; d <= 2; ++d) {
        const std::int64_t near_double = 2 * tie + d, near = tie + d;
        if (near_double >= int_min && near_double <= int_max)
          in.push(static_cast<std::int32_t>(near_double), 1 << 30, 0, e);
        if (near >= int_min && near <= int_max) in.push(static_cast<std::int32_t>(near), int_max, 0, e);
      }
    }
  return in;
}

// Runs a lane kernel over `in`, Lanes lanes at a time (each lane with its own scale): set(i, scale) gives lane i its
// scale, run(x, out, any_left_shift) computes the lanes; counts the lanes that differ from the scalar
// multiply_by_quantized_multiplier<Mode>.
template <rounding Mode, int Lanes, class Set, class Run>
std::size_t lane_mismatches(const requant_inputs& in, Set set, Run run) {
  std::size_t mismatches = 0;
  alignas(64) std::int32_t lanes_in[Lanes], lanes_out[Lanes];
  for (std::size_t base = 0; base < in.x.size(); base += Lanes) {
    const std::size_t count = std::min<std::size_t>(Lanes, in.x.size() - base);
    bool any_left_shift = false;
    for (std::size_t i = 0; i < Lanes; ++i) {
      const std::size_t at = base + (i < count ? i : 0);
      const requant_scale s{in.multiplier[at], in.left[at], in.right[at]};
      set(static_cast<int>(i), s);
      lanes_in[i] = in.x[at];
      any_left_shift = any_left_shift || s.left_shift != 0;
    }
    run(lanes_in, lanes_out, any_left_shift);
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t at = base + i;
      const std::int32_t expected =
          multiply_by_quantized_multiplier<Mode>(in.x[at], requant_scale{in.multiplier[at], in.left[at], in.right[at]});
      if (lanes_out[i] != expected && mismatches++ == 0)
        FAIL_CHECK("first mismatch at x=" << in.x[at] << " m=" << in.multiplier[at] << " l=" << in.left[at] << " r="
                                          << in.right[at] << " simd=" << lanes_out[i] << " scalar=" << expected);
    }
  }
  return mismatches;
}

}  // namespace

TEST_CASE("AVX2 multiply_by_nonnegative_multiplier equals the scalar twin in its domain (10^7 + edges)") {
  simd::avx2::requant_lanes8 constants{};
  const auto set = [&](int lane, requant_scale s) {
    REQUIRE(simd::avx2::requant_lanes8::supports(s));
    constants.set_lane(lane, s);
  };
  const auto run = [&](const std::int32_t* x, std::int32_t* out, bool) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(x));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), simd::avx2::multiply_by_nonnegative_multiplier(v, constants));
  };
  CHECK(lane_mismatches<rounding::tflite_reference, 8>(nonnegative_multiplier_inputs(10'000'000), set, run) == 0);
}
#endif

#if defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && !defined(MOSAIQ_FORCE_SCALAR)
namespace {

// Runs multiply_by_nonnegative_multiplier on `in` (16 lanes at a time, each lane with its own
// scale) and counts the lanes that differ from the scalar multiply_by_quantized_multiplier.
template <rounding Mode>
std::size_t nonnegative_multiplier_mismatches(const requant_inputs& in) {
  simd::avx512::requant_lanes constants{};
  const auto set = [&](int lane, requant_scale s) {
    REQUIRE(simd::avx512::requant_lanes::supports<Mode>(s));
    constants.set_lane<Mode>(lane, s);
  };
  const auto run = [&](const std::int32_t* lanes_in, std::int32_t* lanes_out, bool any_left_shift) {
    const __m512i x = _mm512_load_si512(lanes_in);
    const __m512i result = any_left_shift ? simd::avx512::multiply_by_nonnegative_multiplier<true>(x, constants)
                                          : simd::avx512::multiply_by_nonnegative_multiplier<false>(x, constants);
    _mm512_store_si512(lanes_out, result);
  };
  return lane_mismatches<Mode, 16>(in, set, run);
}

}  // namespace

TEST_CASE("AVX-512 multiply_by_nonnegative_multiplier equals the scalar twin in its domain (10^7 + edges)") {
  SUBCASE("tflite_reference, multipliers >= 0") {
    const requant_inputs in = nonnegative_multiplier_inputs(10'000'000);
    CHECK(nonnegative_multiplier_mismatches<rounding::tflite_reference>(in) == 0);
  }
  SUBCASE("single_round, any multiplier") {
    const requant_inputs in = make_requant_inputs<rounding::single_round>(10'000'000);
    CHECK(nonnegative_multiplier_mismatches<rounding::single_round>(in) == 0);
  }
}
#endif
