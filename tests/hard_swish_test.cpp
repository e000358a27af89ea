// ops/hard_swish.hpp against reference/hard_swish.hpp, bit for bit: every input byte at a grid of scale pairs and zero
// points (u8 and i8) in a long dense run (vector body and tail), then random data over channel tails, odd sizes,
// batch 2, unaligned and strided views with canaries around every output, in place, and misuse.
#include "mosaiq/ops/hard_swish.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "mosaiq/reference/hard_swish.hpp"
#include "placed_tensor.hpp"
#include "support.hpp"

namespace {

using mosaiq::i8;
using mosaiq::quant_params;
using mosaiq::shape;
using mosaiq::tensor_view;
using mosaiq::u8;
using mosaiq::test::placed_tensor;
namespace ref = mosaiq::reference;

using mosaiq::test::layout;
constexpr layout layouts[] = {{1, 0, 0}, {2, 0, 1}, {1, 3, 1}, {2, 1, 0}};

template <class T>
void check_every_byte(const mosaiq::hard_swish<T>& kernel, const ref::hard_swish_params& params) {
  // 301 elements: each byte at least once (i * 7 runs through all residues mod 256), body and tail of every width.
  placed_tensor<T> in(shape{1, 301, 1}, 1, 0, 1), out(shape{1, 301, 1}, 1, 0, 0), expected(shape{1, 301, 1}, 1, 0, 0);
  for (int i = 0; i < 301; ++i) in.view()(0, 0, i, 0) = static_cast<T>(i * 7);
  ref::hard_swish<T>(tensor_view<const T>(in.view()), expected.view(), params);
  kernel(in.view(), out.view());
  CHECK(out.values() == expected.values());
  CHECK(out.first_damaged_canary() == -1);
}

template <class T>
void check_layouts(const mosaiq::hard_swish<T>& kernel, const ref::hard_swish_params& params, std::mt19937& rng) {
  for (const layout l : layouts)
    for (const int channels : {1, 3, 8, 15, 16, 17, 31, 33, 64, 100})
      for (shape dims : {shape{1, 1, 0}, shape{3, 5, 0}, shape{2, 33, 0}}) {
        dims.channels = channels;
        placed_tensor<T> in(dims, l.batch, l.extra, l.misalign), out(dims, l.batch, l.extra, l.misalign + 1);
        placed_tensor<T> expected(dims, l.batch, 0, 0);
        in.fill_random(rng);
        ref::hard_swish<T>(tensor_view<const T>(in.view()), expected.view(), params);
        kernel(in.view(), out.view());
        CAPTURE(channels);
        CAPTURE(l.batch);
        CAPTURE(l.extra);
        CHECK(out.values() == expected.values());
        CHECK(out.first_damaged_canary() == -1);
        CHECK(in.first_damaged_canary() == -1);
        // In place: the same view as input and output.
        kernel(in.view(), in.view());
        CHECK(in.values() == expected.values());
        CHECK(in.first_damaged_canary() == -1);
      }
}

template <class T>
void check_grid() {
  std::mt19937 rng(19);
  constexpr float input_scales[] = {0.004f, 0.03f, 0.1f, 0.4f, 3.0f};
  constexpr float output_ratios[] = {0.3f, 1.0f, 2.5f};
  for (const float scale : input_scales)
    for (const float ratio : output_ratios)
      for (const int variant : {0, 1, 2}) {
        const quant_params in_q{scale, mosaiq::test::extreme_zero_point<T>(rng, variant)};
        const quant_params out_q{scale * ratio, mosaiq::test::extreme_zero_point<T>(rng, variant + 1)};
        CAPTURE(scale);
        CAPTURE(ratio);
        const mosaiq::hard_swish<T> kernel(in_q, out_q);
        REQUIRE(kernel.valid());
        const ref::hard_swish_params params = ref::make_hard_swish_params<T>(in_q, out_q);
        CHECK(kernel.params() == params);
        check_every_byte<T>(kernel, params);
        if (variant == 2) check_layouts<T>(kernel, params, rng);
      }
}

}  // namespace

TEST_CASE_TEMPLATE("hard_swish: table lookups equal the reference pipeline", T, u8, i8) { check_grid<T>(); }

TEST_CASE("hard_swish: misuse is reported and writes nothing") {
  mosaiq::test::recording_handler errors;
  std::vector<u8> in(12, 1), out(12, 7);
  const mosaiq::hard_swish<u8> broken({0.0f, 0}, {0.1f, 0});
  CHECK_FALSE(broken.valid());
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  errors.reset();
  broken(tensor_view<const u8>(in.data(), shape{2, 2, 3}), tensor_view<u8>(out.data(), shape{2, 2, 3}));
  CHECK(errors.last() == mosaiq::errc::invalid_argument);
  const mosaiq::hard_swish<u8> kernel({0.1f, 10}, {0.1f, 20});
  kernel(tensor_view<const u8>(in.data(), shape{2, 2, 3}), tensor_view<u8>(out.data(), shape{2, 3, 2}));
  CHECK(errors.last() == mosaiq::errc::shape_mismatch);
  kernel(tensor_view<const u8>(nullptr, shape{2, 2, 3}), tensor_view<u8>(out.data(), shape{2, 2, 3}));
  CHECK(errors.calls() == 3);
  CHECK(std::count(out.begin(), out.end(), u8{7}) == 12);
}
