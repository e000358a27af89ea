// The AMX path of mosaiq::pointwise (and of mosaiq::conv2d, which runs pointwise's GEMM on gathered
// patches) against reference::pointwise_conv / reference::conv2d and against the AVX-512 VNNI path
// of the same build, bit for bit: output channels 1, 8, 17, 64, 100 (compile time) x input
// channels 1, 3, 17, 64, 100, 255, 1024 (K tails below, at and above one 64-byte tile row) x pixel
// counts that are not multiples of the 16/32-row tiles (and more than one workspace block), u8 with
// zero points 0 and 255 and weights that do and do not fit int8 (split weights), i8, both rounding
// modes, strided and unaligned views; plus the MobileNet stem (3x3 s2, 224x224x3 -> 32) and a deep
// 3x3 s2 layer (16x16x256 -> 512). Where the build, the CPU or the OS lacks AMX, every test prints
// "skipped: AMX not available (<reason>)" and a warning instead of passing silently (builds without
// the AMX path compile only that message).
#include "mosaiq/simd/amx.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "mosaiq/core.hpp"
#include "mosaiq/ops/conv.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/reference/conv.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/reference/pointwise.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;
using reference::conv_requant;
using test::random_requant;
using test::stored_tensor;

/// True when AMX runs here; otherwise reports why, visibly (message, warning and stdout).
bool amx_or_skip() {
  const simd::amx::availability& s = simd::amx::status();
  if (s.available) return true;
  std::printf("skipped: AMX not available (%s)\n", s.reason);
  const std::string reason = s.reason;
  MESSAGE("skipped: AMX not available (" << reason << ")");
  WARN_MESSAGE(s.available, "AMX test skipped: " << reason);
  return false;
}

#if MOSAIQ_HAS_AMX_PATH
/// A filter for one problem: u8 alternates between weights over the whole range (w - zp leaves
/// int8: split weights) and weights around the zero point; i8 uses the whole range.
template <class T>
std::vector<T> random_filter(std::mt19937& rng, std::size_t count, bool wide, int filter_zp) {
  if (std::same_as<T, u8> && !wide) return test::random_values<T>(rng, count, filter_zp - 100, filter_zp + 100);
  return test::random_values<T>(rng, count);
}

template <pointwise_config C>
struct config_case {
  static constexpr pointwise_config value = C;
};

constexpr rounding single = rounding::single_round;
using configs = std::tuple<
    config_case<pointwise_config{.out_channels = 1}>, config_case<pointwise_config{.out_channels = 1, .round = single}>,
    config_case<pointwise_config{.out_channels = 8}>, config_case<pointwise_config{.out_channels = 8, .round = single}>,
    config_case<pointwise_config{.out_channels = 17}>,
    config_case<pointwise_config{.out_channels = 17, .round = single}>,
    config_case<pointwise_config{.out_channels = 64}>,
    config_case<pointwise_config{.out_channels = 64, .round = single}>,
    config_case<pointwise_config{.out_channels = 100}>,
    config_case<pointwise_config{.out_channels = 100, .round = single}>>;

struct pixels_case {
  int height, width, batch;
};
// 1, 21, 45 x 2 images, 221 and 1517 pixels (several workspace blocks for every input width).
constexpr pixels_case pixel_cases[] = {{1, 1, 1}, {3, 7, 1}, {5, 9, 2}, {13, 17, 1}, {37, 41, 1}};
constexpr int input_channel_cases[] = {1, 3, 17, 64, 100, 255, 1024};

template <pointwise_config Cfg, class T>
void check_pointwise_grid(std::uint32_t seed) {
  std::mt19937 rng(seed);
  constexpr int oc = Cfg.out_channels;
  int variant = 0;
  for (const int ic : input_channel_cases) {
    for (const pixels_case& pc : pixel_cases) {
      // The widest rows with the most pixels cost the reference a lot and add no new case.
      if (ic >= 255 && pc.height * pc.width > 1000) continue;
      ++variant;
      CAPTURE(ic);
      CAPTURE(pc.height);
      CAPTURE(pc.width);
      CAPTURE(variant);
      const shape in_shape{pc.height, pc.width, ic};
      const shape out_shape = pointwise<Cfg, T>::output_shape(in_shape);
      const bool wide = variant % 2 == 0;
      const int filter_zp = std::same_as<T, u8> ? (wide ? test::extreme_zero_point<u8>(rng, variant / 2)
                                                        : 100 + static_cast<int>(rng() % 56))
                                                : 0;
      const int input_zp = test::extreme_zero_point<T>(rng, variant + 1);
      CAPTURE(filter_zp);
      CAPTURE(input_zp);
      const std::vector<T> filter = random_filter<T>(rng, static_cast<std::size_t>(oc) * ic, wide, filter_zp);
      std::vector<std::int32_t> bias(oc);
      for (auto& b : bias) b = std::uniform_int_distribution<std::int32_t>(-20000, 20000)(rng);
      // Mostly no activation (zero point folded, saturating stores); relu6 and multipliers above one
      // (left shifts) for the other requantization variants.
      const activation act = variant % 4 == 1 ? activation::relu6 : activation::none;
      const float amplify = variant % 5 == 2 ? 3000.0f : 1.0f;
      const bool zero_point_at_min = variant % 3 == 1;
      CAPTURE(static_cast<int>(act));
      CAPTURE(amplify);
      CAPTURE(zero_point_at_min);
      const conv_requant q = random_requant<Cfg.round, T>(rng, oc,
                                                          {.input_zero_point = input_zp,
                                                           .filter_zero_point = filter_zp,
                                                           .act = act,
                                                           .output_scale = 0.01f,
                                                           .taps = ic,
                                                           .amplify = amplify,
                                                           .output_zero_point_at_min = zero_point_at_min});
      REQUIRE(!q.scales.empty());

      const bool strided = variant % 3 == 0;
      const int in_stride = ic + (strided ? 5 : 0), out_stride = oc + (strided ? 3 : 0);
      stored_tensor<T> input(in_shape, pc.batch, in_stride, T{0});
      for (T& x : input.buffer) x = test::random_values<T>(rng, 1)[0];
      stored_tensor<T> expected(out_shape, pc.batch, out_stride, T{7});
      stored_tensor<T> amx(out_shape, pc.batch, out_stride, T{7});
      stored_tensor<T> vnni(out_shape, pc.batch, out_stride, T{7});
      const std::int32_t* b = rng() % 4 != 0 ? bias.data() : nullptr;
      reference::pointwise_conv<Cfg.round, T>(input.view, filter.data(), b, expected.view, q);

      const auto run = [&](bool on, stored_tensor<T>& out) {
        const simd::amx::scoped_enabled path(on);
        const pointwise<Cfg, T> layer(filter.data(), b, ic, q);
        CHECK(layer.uses_amx() == on);
        std::vector<std::byte> workspace(layer.workspace_bytes(in_shape) + 3);
        layer(input.view, out.view, std::span(workspace).subspan(3));  // unaligned workspace
      };
      run(true, amx);
      run(false, vnni);
      CHECK(amx.buffer == expected.buffer);
      CHECK(amx.buffer == vnni.buffer);
    }
  }
}

template <conv2d_config Cfg, class T>
void check_conv_problem(std::mt19937& rng, shape in_shape, int variant) {
  constexpr int oc = Cfg.out_channels;
  const int k = Cfg.kernel.h * Cfg.kernel.w * in_shape.channels;
  const shape out_shape = conv2d<Cfg, T>::output_shape(in_shape);
  const bool wide = variant % 2 == 0;
  const int filter_zp =
      std::same_as<T, u8> ? (wide ? test::extreme_zero_point<u8>(rng, variant / 2) : 100 + static_cast<int>(rng() % 56))
                          : 0;
  const int input_zp = test::extreme_zero_point<T>(rng, variant + 1);
  CAPTURE(filter_zp);
  CAPTURE(input_zp);
  const std::vector<T> filter = random_filter<T>(rng, static_cast<std::size_t>(oc) * k, wide, filter_zp);
  std::vector<std::int32_t> bias(oc);
  for (auto& b : bias) b = std::uniform_int_distribution<std::int32_t>(-20000, 20000)(rng);
  const conv_requant q = random_requant<Cfg.round, T>(
      rng, oc, {.input_zero_point = input_zp, .filter_zero_point = filter_zp, .output_scale = 0.01f, .taps = k});
  stored_tensor<T> input(in_shape, 1, in_shape.channels, T{0});
  for (T& x : input.buffer) x = test::random_values<T>(rng, 1)[0];
  stored_tensor<T> expected(out_shape, 1, oc, T{7}), amx(out_shape, 1, oc, T{7}), vnni(out_shape, 1, oc, T{7});
  reference::conv2d<Cfg.round, T>(
      input.view, filter.data(), bias.data(), expected.view,
      {.kernel = Cfg.kernel, .stride = Cfg.stride, .dilation = Cfg.dilation, .pad = Cfg.pad}, q);
  const auto run = [&](bool on, stored_tensor<T>& out) {
    const simd::amx::scoped_enabled path(on);
    const conv2d<Cfg, T> layer(filter.data(), bias.data(), in_shape.channels, q);
    std::vector<std::byte> workspace(layer.workspace_bytes(in_shape) + 1);
    layer(input.view, out.view, std::span(workspace).subspan(1));
  };
  run(true, amx);
  run(false, vnni);
  CHECK(amx.buffer == expected.buffer);
  CHECK(amx.buffer == vnni.buffer);
}

}  // namespace

TEST_CASE("amx: availability") {
  const simd::amx::availability& s = simd::amx::status();
  std::printf("AMX: %s (%s)\n", s.available ? "available" : "not available", s.reason);
  const std::string state = s.available ? "available" : "not available", reason = s.reason;
  MESSAGE("AMX: " << state << " (" << reason << ")");
  if (!amx_or_skip()) return;
  // Layers pick the path at load time; turning AMX off affects later loads only.
  const simd::amx::scoped_enabled start(true);  // on even under MOSAIQ_DISABLE_AMX
  const std::vector<u8> filter(17 * 5, 3);
  const conv_requant q = reference::make_conv_requant<rounding::tflite_reference, u8>(
      {0.1f, 2}, std::vector<float>{0.01f}, 3, {0.2f, 5}, activation::none);
  using layer_type = pointwise<pointwise_config{.out_channels = 17}, u8>;
  const layer_type on(filter.data(), nullptr, 5, q);
  CHECK(on.uses_amx());
  simd::amx::set_enabled(false);
  CHECK(!simd::amx::enabled());
  const layer_type off(filter.data(), nullptr, 5, q);
  simd::amx::set_enabled(true);
  CHECK(simd::amx::enabled());
  CHECK(!off.uses_amx());
  CHECK(on.uses_amx());
}

TEST_CASE_TEMPLATE_DEFINE("amx: pointwise equals the reference and the VNNI path", Case, amx_pointwise_id) {
  if (!amx_or_skip()) return;
  constexpr pointwise_config cfg = Case::value;
  SUBCASE("uint8") { check_pointwise_grid<cfg, u8>(401 + cfg.out_channels * 2 + (cfg.round == single)); }
  SUBCASE("int8") { check_pointwise_grid<cfg, i8>(503 + cfg.out_channels * 2 + (cfg.round == single)); }
}
TEST_CASE_TEMPLATE_APPLY(amx_pointwise_id, configs);

TEST_CASE("amx: conv2d MobileNet stem, 3x3 stride 2 SAME, 224x224x3 -> 32") {
  if (!amx_or_skip()) return;
  constexpr conv2d_config stem{.out_channels = 32, .kernel = {3, 3}, .stride = {2, 2}};
  constexpr conv2d_config stem_single{.out_channels = 32, .kernel = {3, 3}, .stride = {2, 2}, .round = single};
  std::mt19937 rng(224);
  for (const shape in_shape : {shape{224, 224, 3}, shape{15, 17, 3}}) {
    CAPTURE(in_shape.height);
    check_conv_problem<stem, u8>(rng, in_shape, 2);  // split weights
    check_conv_problem<stem, u8>(rng, in_shape, 1);
    check_conv_problem<stem_single, u8>(rng, in_shape, 3);
    check_conv_problem<stem, i8>(rng, in_shape, 3);
    check_conv_problem<stem_single, i8>(rng, in_shape, 4);
  }
}

TEST_CASE("amx: conv2d 3x3 stride 2 SAME, 16x16x256 -> 512") {
  if (!amx_or_skip()) return;
  constexpr conv2d_config deep{.out_channels = 512, .kernel = {3, 3}, .stride = {2, 2}};
  constexpr conv2d_config deep_single{.out_channels = 512, .kernel = {3, 3}, .stride = {2, 2}, .round = single};
  std::mt19937 rng(512);
  check_conv_problem<deep, u8>(rng, {16, 16, 256}, 2);  // split weights
  check_conv_problem<deep, u8>(rng, {16, 16, 256}, 1);
  check_conv_problem<deep_single, i8>(rng, {16, 16, 256}, 3);
  check_conv_problem<deep, i8>(rng, {15, 13, 256}, 4);
}

#else
}  // namespace

// This build has no AMX path (simd/amx.hpp: MOSAIQ_HAS_AMX_PATH is 0 outside the x86-64 Linux AVX-512
// VNNI build), so no layer can take it: the grids above are not compiled here (they cost every
// other test binary, qemu and sanitizer builds included, minutes of compile time), and this test
// says so instead of passing silently.
TEST_CASE("amx: availability") { CHECK_FALSE(amx_or_skip()); }
#endif
