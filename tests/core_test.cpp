// core/: padding and output-size formulas, activation clamps, tensor views, the error hook.
#include "mosaiq/core.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "support.hpp"

using namespace mosaiq;

TEST_CASE("output size and padding follow TFLite padding.h") {
  // 112x112, 3x3, stride 2, SAME: out 56, total pad 1 -> 0 before, 1 after.
  static_assert(resolve_axis(112, 3, 2, 1, padding_mode::same) == axis_geometry{56, 0, 1});
  CHECK(resolve_axis(112, 3, 1, 1, padding_mode::same) == axis_geometry{112, 1, 1});
  CHECK(resolve_axis(7, 5, 1, 1, padding_mode::same) == axis_geometry{7, 2, 2});
  CHECK(resolve_axis(7, 3, 3, 1, padding_mode::same) == axis_geometry{3, 1, 1});  // (3-1)*3+3-7 = 2
  // VALID: ceil((in - eff_k + 1) / s).
  CHECK(resolve_axis(112, 3, 2, 1, padding_mode::valid).output == 55);
  CHECK(resolve_axis(3, 3, 1, 1, padding_mode::valid).output == 1);
  CHECK(resolve_axis(2, 3, 1, 1, padding_mode::valid).output == 0);
  // Dilation: eff_k = (k-1)*d + 1. The seed's atrous case: 8 wide, 3 taps, rate 2, stride 2, VALID.
  CHECK(effective_kernel_extent(3, 2) == 5);
  CHECK(resolve_axis(8, 3, 2, 2, padding_mode::valid) == axis_geometry{2, 0, 0});
  // SAME with dilation and stride together: out = ceil(64/2) = 32, total = 31*2 + 5 - 64 = 3.
  CHECK(resolve_axis(64, 3, 2, 2, padding_mode::same) == axis_geometry{32, 1, 2});
  // Explicit pads: floor((in + before + after - eff_k) / s) + 1.
  CHECK(resolve_axis(5, 3, 2, 1, padding_mode::explicit_pads, 1, 1) == axis_geometry{3, 1, 1});
  CHECK(resolve_axis(4, 3, 2, 1, padding_mode::explicit_pads, 0, 0) == axis_geometry{1, 0, 0});
  const auto window = resolve_window(9, 6, {3, 3}, {2, 1}, {1, 2}, padding::same());
  CHECK(window.y == axis_geometry{5, 1, 1});
  CHECK(window.x == axis_geometry{6, 2, 2});
  CHECK(is_valid_window({3, 3}, {1, 1}, {1, 1}, padding::same()));
  CHECK_FALSE(is_valid_window({0, 3}, {1, 1}, {1, 1}, padding::same()));
  CHECK_FALSE(is_valid_window({3, 3}, {1, 1}, {1, 1}, padding::explicit_pads(-1, 0, 0, 0)));
}

TEST_CASE("fused activations clamp in the quantized domain as TFLite computes them") {
  const quant_params u8_out{0.05f, 10};
  CHECK(activation_range<u8>(activation::none, u8_out) == clamp_range{0, 255});
  CHECK(activation_range<u8>(activation::relu, u8_out) == clamp_range{10, 255});
  CHECK(activation_range<u8>(activation::relu6, u8_out) == clamp_range{10, 130});       // 10 + round(6 / 0.05)
  CHECK(activation_range<u8>(activation::relu_n1_to_1, u8_out) == clamp_range{0, 30});  // 10 - 20 -> 0
  const quant_params i8_out{0.1f, -100};
  CHECK(activation_range<i8>(activation::relu6, i8_out) == clamp_range{-100, -40});
  CHECK(activation_range<i8>(activation::relu, quant_params{0.1f, -128}) == clamp_range{-128, 127});
  // relu6 limit above the type range is clamped to it.
  CHECK(activation_range<i8>(activation::relu6, quant_params{0.01f, 0}) == clamp_range{0, 127});
  CHECK(apply_activation(activation::relu6, 7.5f) == 6.0f);
  CHECK(apply_activation(activation::relu, -1.0f) == 0.0f);
}

TEST_CASE("quantize and dequantize single values") {
  const quant_params p{0.5f, 3};
  CHECK(quantize_value<u8>(1.25f, p) == 6);   // 2.5 rounds away -> 3, + 3
  CHECK(quantize_value<u8>(-10.0f, p) == 0);  // saturates
  CHECK(quantize_value<i8>(100.0f, p) == 127);
  CHECK(dequantize_value<u8>(7, p) == 2.0f);
  CHECK(saturate_cast<i8>(-300) == -128);
  CHECK(saturate_cast<u8>(300) == 255);
}

TEST_CASE("tensor views: static and dynamic extents, strides, channel slices") {
  std::array<std::uint8_t, 2 * 3 * 4 * 5> storage{};
  for (std::size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<std::uint8_t>(i);
  tensor_view<std::uint8_t> dyn(storage.data(), shape{3, 4, 5}, 2);
  CHECK(dyn.dims() == shape{3, 4, 5});
  CHECK(dyn.is_dense());
  CHECK(dyn(1, 2, 3, 4) == 60 + 2 * 20 + 3 * 5 + 4);
  tensor_view<std::uint8_t, extents<3, 4, 5>> fixed(storage.data());
  static_assert(decltype(fixed)::extents_type::all_static);
  CHECK(fixed(2, 3, 4) == 59);
  tensor_view<const std::uint8_t> as_const = fixed;  // static -> dynamic, mutable -> const
  CHECK(as_const.width() == 4);
  // Mixed: channels static, spatial dynamic.
  tensor_view<std::uint8_t, extents<dynamic_extent, dynamic_extent, 5>> mixed(storage.data(), shape{6, 4, 5});
  CHECK(mixed.height() == 6);
  const auto slice = dyn.channel_slice(2, 2);
  CHECK(slice.channels() == 2);
  CHECK_FALSE(slice.is_dense());
  CHECK(slice(0, 1, 1, 0) == 20 + 5 + 2);
  CHECK(&slice(1, 0, 0, 1) == &dyn(1, 0, 0, 3));
}

TEST_CASE("misuse goes through the routable error hook") {
  const test::recording_handler errors;
  CHECK(require(true, errc::invalid_argument, "fine"));
  CHECK(errors.calls() == 0);
  CHECK_FALSE(require(false, errc::bad_alignment, "arena"));
  CHECK(errors.last() == errc::bad_alignment);
  // A static extent that disagrees with the runtime shape is reported.
  std::vector<std::uint8_t> data(64);
  tensor_view<std::uint8_t, extents<8, 8, 1>> v(data.data(), shape{8, 7, 1});
  CHECK(errors.last() == errc::shape_mismatch);
  CHECK(v.width() == 8);
  CHECK_FALSE(check_view(tensor_view<const std::uint8_t>(nullptr, shape{2, 2, 2}), "input"));
  CHECK(errors.last() == errc::null_pointer);
  CHECK(errors.calls() == 3);
  CHECK(to_string(errc::blob_mismatch) == "weights blob mismatch");
}
