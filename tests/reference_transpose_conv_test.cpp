// Reference transposed convolution: hand-computed scatter-adds (non-overlapping and overlapping kernels, SAME pads
// taken from the output extents, zero points, requantization rounding, clamps, the float twin), and random grids
// against an independent route: the forward reference conv2d with the kernel flipped, run on the input with stride - 1
// zeros (the input zero point) inserted between pixels, which is what a transposed convolution is.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "mosaiq/reference/conv.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
#include "support.hpp"

namespace {

using mosaiq::hw;
using mosaiq::i8;
using mosaiq::padding;
using mosaiq::quant_params;
using mosaiq::shape;
using mosaiq::tensor_view;
using mosaiq::u8;
namespace ref = mosaiq::reference;
constexpr auto R = mosaiq::rounding::tflite_reference;

/// Scales 1, 1, out_scale: the multiplier is 1 / out_scale.
template <class T>
ref::conv_requant unit_requant(float out_scale = 1.0f, int in_zp = 0, int filter_zp = 0, int out_zp = 0) {
  const float filter_scale = 1.0f;
  return ref::make_conv_requant<R, T>({1.0f, in_zp}, std::span<const float>(&filter_scale, 1), filter_zp,
                                      {out_scale, out_zp}, mosaiq::activation::none);
}

template <class T>
std::vector<int> run(const std::vector<int>& input, shape in, const std::vector<int>& filter,
                     const ref::conv_requant& q, shape out, const ref::transpose_conv_params& p,
                     const std::int32_t* bias = nullptr) {
  std::vector<T> x(input.begin(), input.end()), w(filter.begin(), filter.end()), y(out.elements(), T{99});
  ref::transpose_conv<R, T>(tensor_view<const T>(x.data(), in), w.data(), bias, tensor_view<T>(y.data(), out), p, q);
  return {y.begin(), y.end()};
}

}  // namespace

TEST_CASE("transpose_conv: output extents and pads as TensorFlow and TFLite compute them") {
  using mosaiq::padding_mode;
  CHECK(ref::transpose_conv_output_extent(5, 2, 2, padding_mode::same) == 10);
  CHECK(ref::transpose_conv_output_extent(5, 3, 2, padding_mode::valid) == 11);  // 5 * 2 + 1
  CHECK(ref::transpose_conv_output_extent(5, 2, 2, padding_mode::valid) == 10);
  CHECK(ref::transpose_conv_output_extent(5, 1, 2, padding_mode::valid) == 10);  // max(k - s, 0)
  // SAME, output 10 from input 5: the forward conv 10 -> 5 pads max(4 * 2 + k - 10, 0) / 2: k 2 -> 0, 3 -> 0, 4 -> 1.
  CHECK(ref::transpose_conv_pads({10, 10, 1}, {.kernel = {2, 2}, .stride = {2, 2}}) == hw{0, 0});
  CHECK(ref::transpose_conv_pads({10, 10, 1}, {.kernel = {3, 3}, .stride = {2, 2}}) == hw{0, 0});
  CHECK(ref::transpose_conv_pads({10, 10, 1}, {.kernel = {4, 4}, .stride = {2, 2}}) == hw{1, 1});
  CHECK(ref::transpose_conv_pads({5, 5, 1}, {.kernel = {3, 3}, .stride = {1, 1}}) == hw{1, 1});
  CHECK(ref::transpose_conv_pads({11, 11, 1}, {.kernel = {3, 3}, .stride = {2, 2}, .padding = padding::valid()}) ==
        hw{0, 0});
}

TEST_CASE_TEMPLATE("transpose_conv: hand-computed scatter-adds", T, u8, i8) {
  const int zp = std::same_as<T, u8> ? 100 : 0;
  // 2x2 stride 2 (no overlap): one input pixel x = 3 spreads x * w + bias over a 2x2 block.
  const std::int32_t bias_one = 1;
  CHECK(run<T>({zp + 3}, {1, 1, 1}, {1, 2, 3, 4}, unit_requant<T>(1.0f, zp, 0, zp), {2, 2, 1},
               {.kernel = {2, 2}, .stride = {2, 2}}, &bias_one) == std::vector<int>{zp + 4, zp + 7, zp + 10, zp + 13});
  // 1x3 stride 2 VALID (overlap of one column): x = {1, 2}, w = {1, 5, 20}: {1, 5, 20} at 0..2, {2, 10, 40} at 2..4.
  const ref::transpose_conv_params valid13{.kernel = {1, 3}, .stride = {1, 2}, .padding = padding::valid()};
  CHECK(run<T>({zp + 1, zp + 2}, {1, 2, 1}, {1, 5, 20}, unit_requant<T>(1.0f, zp, 0, zp), {1, 5, 1}, valid13) ==
        std::vector<int>{zp + 1, zp + 5, zp + 22, zp + 10, zp + 40});
  // The same SAME: output 4, pad 0: the first four.
  CHECK(run<T>({zp + 1, zp + 2}, {1, 2, 1}, {1, 5, 20}, unit_requant<T>(1.0f, zp, 0, zp), {1, 4, 1},
               {.kernel = {1, 3}, .stride = {1, 2}}) == std::vector<int>{zp + 1, zp + 5, zp + 22, zp + 10});
  // 1x4 stride 2 SAME: pad 1, so x0 = 1 lands w[1..3] = {2, 3, 4} on 0..2 and x1 = 2 lands 2 * w[0..2] on 1..3.
  CHECK(run<T>({zp + 1, zp + 2}, {1, 2, 1}, {1, 2, 3, 4}, unit_requant<T>(1.0f, zp, 0, zp), {1, 4, 1},
               {.kernel = {1, 4}, .stride = {1, 2}}) == std::vector<int>{zp + 2, zp + 5, zp + 8, zp + 6});
  // Two input channels sum into each output; two output channels read their own filter rows.
  // x = (1, 2); w[oc=0] = (3, 4), w[oc=1] = (-1, 1): 1x1 kernel, stride 1 -> (11, 1).
  CHECK(run<T>({zp + 1, zp + 2}, {1, 1, 2}, {zp + 3, zp + 4, zp - 1, zp + 1}, unit_requant<T>(1.0f, zp, zp, zp),
               {1, 1, 2}, {.kernel = {1, 1}, .stride = {1, 1}}) == std::vector<int>{zp + 11, zp + 1});
  // Output scale 2: multiplier 2^30 with shift 0, so the doubling high multiply rounds the ties 2.5 and -2.5 up
  // (3, -2); output scale 4 adds a rounding shift by 1 whose ties go away from zero: 6 -> 3 -> 2, -6 -> -3 -> -2.
  CHECK(run<T>({zp + 5, zp - 5}, {1, 2, 1}, {1}, unit_requant<T>(2.0f, zp, 0, zp), {1, 2, 1},
               {.kernel = {1, 1}, .stride = {1, 1}}) == std::vector<int>{zp + 3, zp - 2});
  CHECK(run<T>({zp + 6, zp - 6}, {1, 2, 1}, {1}, unit_requant<T>(4.0f, zp, 0, zp), {1, 2, 1},
               {.kernel = {1, 1}, .stride = {1, 1}}) == std::vector<int>{zp + 2, zp - 2});
  // Saturation at the element range: 100 * 3 clamps.
  CHECK(run<T>({zp + 100}, {1, 1, 1}, {3}, unit_requant<T>(1.0f, zp, 0, zp), {1, 1, 1},
               {.kernel = {1, 1}, .stride = {1, 1}}) == std::vector<int>{mosaiq::element_traits<T>::max});
}

TEST_CASE("transpose_conv: the float twin scatters the same way") {
  const std::vector<float> x{1.0f, 2.0f}, w{1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<float> y(4);
  const float bias = 0.5f;
  ref::transpose_conv(tensor_view<const float>(x.data(), shape{1, 2, 1}), w.data(), &bias,
                      tensor_view<float>(y.data(), shape{1, 4, 1}), {.kernel = {1, 4}, .stride = {1, 2}},
                      mosaiq::activation::relu);
  CHECK(y == std::vector<float>{2.5f, 5.5f, 8.5f, 6.5f});
}

TEST_CASE("transpose_conv: misuse is reported and writes nothing") {
  mosaiq::test::recording_handler errors;
  const std::vector<i8> x(4, 1), w(4, 1);
  std::vector<i8> y(16, 7);
  const ref::conv_requant q = unit_requant<i8>();
  const tensor_view<const i8> in(x.data(), shape{2, 2, 1});
  const tensor_view<i8> out(y.data(), shape{4, 4, 1});
  ref::transpose_conv<R, i8>(in, nullptr, nullptr, out, {}, q);
  ref::transpose_conv<R, i8>(in, w.data(), nullptr, tensor_view<i8>(y.data(), shape{2, 4, 1}, 2), {}, q);
  ref::transpose_conv<R, i8>(in, w.data(), nullptr, out, {.padding = padding::explicit_pads(1, 1, 1, 1)}, q);
  ref::transpose_conv<R, i8>(in, w.data(), nullptr, out, {.kernel = {0, 2}}, q);
  ref::transpose_conv<R, i8>(in, w.data(), nullptr, out, {}, ref::conv_requant{});
  CHECK(errors.calls() == 5);
  CHECK(std::count(y.begin(), y.end(), i8{7}) == 16);
}

namespace {

/// The forward route: zeros (the input zero point) inserted between input pixels, the kernel flipped, conv2d with
/// explicit pads k - 1 - pad before and whatever makes the output extent after.
template <class T>
std::vector<T> via_forward_conv(const std::vector<T>& x, shape in, const std::vector<T>& w, const std::int32_t* bias,
                                shape out, const ref::transpose_conv_params& p, const ref::conv_requant& q) {
  const int cin = in.channels, cout = out.channels, kh = p.kernel.h, kw = p.kernel.w;
  const shape up{(in.height - 1) * p.stride.h + 1, (in.width - 1) * p.stride.w + 1, cin};
  std::vector<T> spread(up.elements(), static_cast<T>(q.input_zero_point));
  for (int y = 0; y < in.height; ++y)
    for (int x_ = 0; x_ < in.width; ++x_)
      for (int c = 0; c < cin; ++c)
        spread[((static_cast<std::size_t>(y) * p.stride.h * up.width + x_ * p.stride.w) * cin) + c] =
            x[(static_cast<std::size_t>(y) * in.width + x_) * cin + c];
  std::vector<T> flipped(w.size());
  for (int oc = 0; oc < cout; ++oc)
    for (int fy = 0; fy < kh; ++fy)
      for (int fx = 0; fx < kw; ++fx)
        for (int ic = 0; ic < cin; ++ic)
          flipped[((static_cast<std::size_t>(oc) * kh + fy) * kw + fx) * cin + ic] =
              w[((static_cast<std::size_t>(oc) * kh + (kh - 1 - fy)) * kw + (kw - 1 - fx)) * cin + ic];
  const hw pad = ref::transpose_conv_pads(out, p);
  const int top = kh - 1 - pad.h, left = kw - 1 - pad.w;
  const int bottom = out.height - up.height - top + kh - 1, right = out.width - up.width - left + kw - 1;
  REQUIRE(top >= 0);
  REQUIRE(bottom >= 0);
  REQUIRE(left >= 0);
  REQUIRE(right >= 0);
  std::vector<T> y(out.elements());
  ref::conv2d<R, T>(tensor_view<const T>(spread.data(), up), flipped.data(), bias, tensor_view<T>(y.data(), out),
                    {.kernel = p.kernel, .stride = {1, 1}, .pad = padding::explicit_pads(top, bottom, left, right)}, q);
  return y;
}

}  // namespace

TEST_CASE_TEMPLATE("transpose_conv: random grids equal the flipped forward conv on the zero-inserted input", T, u8,
                   i8) {
  std::mt19937 rng(23);
  int cases = 0;
  for (int k = 1; k <= 4; ++k)
    for (int s = 1; s <= 2; ++s)
      for (const padding pad : {padding::same(), padding::valid()})
        for (const shape in : {shape{3, 4, 5}, shape{1, 1, 3}, shape{4, 2, 17}}) {
          const int cout = 1 + static_cast<int>(rng() % 9);
          const ref::transpose_conv_params p{.kernel = {k, k}, .stride = {s, s}, .padding = pad};
          const shape out{ref::transpose_conv_output_extent(in.height, k, s, pad.mode),
                          ref::transpose_conv_output_extent(in.width, k, s, pad.mode), cout};
          const std::vector<T> x = mosaiq::test::random_values<T>(rng, in.elements());
          const std::vector<T> w =
              mosaiq::test::random_values<T>(rng, static_cast<std::size_t>(cout) * k * k * in.channels);
          std::vector<std::int32_t> bias(static_cast<std::size_t>(cout));
          for (auto& b : bias) b = static_cast<std::int32_t>(rng() % 20001) - 10000;
          std::vector<float> scales(std::same_as<T, u8> ? 1 : static_cast<std::size_t>(cout));
          for (auto& sc : scales) sc = 0.002f + 0.004f * static_cast<float>(rng() % 100) / 100.0f;
          const int filter_zp = std::same_as<T, u8> ? 120 : 0;
          const ref::conv_requant q =
              ref::make_conv_requant<R, T>({0.03f, std::same_as<T, u8> ? 131 : -7}, scales, filter_zp,
                                           {0.4f, std::same_as<T, u8> ? 127 : 3}, mosaiq::activation::relu6);
          std::vector<T> y(out.elements());
          ref::transpose_conv<R, T>(tensor_view<const T>(x.data(), in), w.data(), bias.data(),
                                    tensor_view<T>(y.data(), out), p, q);
          CAPTURE(k);
          CAPTURE(s);
          CAPTURE(in.channels);
          CHECK(y == via_forward_conv<T>(x, in, w, bias.data(), out, p, q));
          ++cases;
        }
  CHECK(cases == 48);
}
