// MediaPipe Selfie Segmentation end to end from its float .tflite files: mosaiq_add_model imported both models
// (float16 weights widened) and quantized them with the generated calibrator on face-api's six demo photos, as i8
// (per-channel filters) and u8 (per-tensor filters) networks. Each quantized network's person mask is compared with
// the float twin of the same generated network (tools::float_runner on the float weights mosaiq-import wrote) on
// the same six photos: mean IoU of the masks at 0.5 and mean |probability difference|. Calibration clips ranges at
// the 99.9th percentile (tests/CMakeLists.txt), and every range to the values its readers tell apart (the logits and
// gate inputs only logistic reads at its saturation, the pre-activations only hard swish reads at -3).
// i8 144x256 meets issue 19's figures (IoU >= 0.97, |dp| <= 0.02), asserted as they are; the others assert what
// they reach, with margin (measured: i8 256x256 IoU 0.958 |dp| 0.026; u8 256x256 0.938 / 0.036, 144x256
// 0.972 / 0.024): i8 256x256 is still below 0.97 / 0.02, see docs/decisions.md. Both models in TFLite's 16x8 mode
// through the reference kernels (tools::reference_16x8) meet them over the six photos: 256x256 0.9796 / 0.0098,
// 144x256 0.9913 / 0.0058.
//
// Without the npm packages at configure time (MOSAIQ_SELFIE_DIR, MOSAIQ_FACE_API_DIR) the binary is built from
// the MOSAIQ_SELFIE_ABSENT branch, which says so and exits 77 (ctest: skipped).
#ifdef MOSAIQ_SELFIE_ABSENT
#include <cstdio>

int main() {
  std::puts(
      "selfie_accuracy_test: skipped: built without the selfie models and face-api's photos (the CMake build "
      "generates the networks when MOSAIQ_SELFIE_DIR and MOSAIQ_FACE_API_DIR name the npm packages, see "
      "scripts/common.sh fetch_selfie and fetch_face_api; meson does not)");
  return 77;
}
#else
#define STB_IMAGE_IMPLEMENTATION
#include <doctest/doctest.h>
#include <stb/stb_image.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mosaiq/net.hpp"
#include "mosaiq/tools/calibrate_model.hpp"
#include "mosaiq/tools/reference_16x8.hpp"
#include "selfie_144x256_i8.hpp"
#include "selfie_144x256_u8.hpp"
#include "selfie_256_i8.hpp"
#include "selfie_256_u8.hpp"

namespace {

namespace tools = mosaiq::tools;

// banding::automatic() compiles on the 139-layer selfie networks within GCC's constexpr limits (issue 21) and,
// with 8 KiB GEMM blocks, keeps them layer by layer at any overhead bound: no candidate chain lowers the peak,
// the three whole 128x128x16 maps read across a whole-map average pool (docs/decisions.md).
template <class Net>
constexpr bool automatic_keeps_layer_by_layer() {
  using automatic = typename Net::template with_banding<mosaiq::banding::automatic(35).with_gemm_block_bytes(8192)>;
  using bounded = typename Net::template with_banding<mosaiq::banding::off().with_gemm_block_bytes(8192)>;
  return !automatic::banded && automatic::arena_bytes == bounded::arena_bytes &&
         automatic::peak_live_bytes == bounded::peak_live_bytes && automatic::arena_bytes < Net::arena_bytes;
}
// i8 only: the u8 network has the same shapes and so the same plan, and each assert costs the unit (the suite's
// longest) seconds of compile time.
#ifndef __clang__  // clang's default constexpr step limit (2^20) is below what the choice takes here
static_assert(automatic_keeps_layer_by_layer<selfie_256_i8::network>());
#endif

tools::rgb_image load_photo(int index) {
  const std::string path = std::string(MOSAIQ_SELFIE_PHOTOS_DIR) + "/sample" + std::to_string(index) + ".jpg";
  int width = 0, height = 0, channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &width, &height, &channels, 3);
  REQUIRE_MESSAGE(data != nullptr, "cannot read ", path);
  tools::rgb_image image{width, height,
                         std::vector<mosaiq::u8>(data, data + std::size_t(width) * std::size_t(height) * 3)};
  stbi_image_free(data);
  return image;
}

std::vector<std::byte> file_bytes(const char* path) {
  const auto bytes = tools::detail::read_bytes(path);
  REQUIRE_MESSAGE(bytes.has_value(), "cannot read ", path);
  return *bytes;
}

/// Person masks at 0.5: intersection over union (1 when both are empty), and the mean |difference| of the
/// probabilities.
struct agreement {
  double iou = 0, mean_abs_difference = 0;
};

agreement compare_masks(std::span<const float> expected, std::span<const float> actual) {
  REQUIRE(expected.size() == actual.size());
  std::size_t both = 0, either = 0;
  double difference = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const bool a = expected[i] > 0.5f, b = actual[i] > 0.5f;
    both += a && b ? 1 : 0;
    either += a || b ? 1 : 0;
    difference += std::fabs(double(expected[i]) - double(actual[i]));
  }
  return {either == 0 ? 1.0 : double(both) / double(either), difference / double(expected.size())};
}

/// The quantized network Net (weights from mosaiq_add_model's blob) against its float twin on the six photos;
/// prints each photo's figures and returns the means.
template <class Net>
agreement measure(const char* name, const char* float_weights_path, const char* blob_path) {
  using T = typename Net::element_type;
  auto float_weights = std::make_unique<tools::float_weights<Net>>();
  REQUIRE(tools::load_float_weights<Net>(file_bytes(float_weights_path), *float_weights));
  auto weights = std::make_unique<typename Net::weights>();
  REQUIRE(Net::load(file_bytes(blob_path), *weights));
  const auto prepared = std::make_unique<typename Net::prepared>(Net::prepare(*weights));
  auto runner = std::make_unique<tools::float_runner<Net>>();
  std::vector<std::byte> arena_storage(Net::arena_bytes + 64);
  auto* aligned = reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(arena_storage.data()) + 63) / 64 * 64);

  agreement mean;
  constexpr int photos = 6;
  for (int photo = 1; photo <= photos; ++photo) {
    const std::vector<float> input = tools::input_from_rgb<Net>(load_photo(photo));
    REQUIRE(runner->run(*float_weights, std::span<const float>(input)));
    const std::vector<T> quantized_input = tools::quantize_input<Net>(*weights, input);
    std::vector<T> output(Net::output_shape.elements());
    Net::run(*prepared, mosaiq::tensor_view<const T>(quantized_input.data(), Net::input_shape),
             mosaiq::tensor_view<T>(output.data(), Net::output_shape), std::span<std::byte>(aligned, Net::arena_bytes));
    const std::vector<float> probabilities = tools::dequantize_output<Net>(*weights, output);
    const agreement a = compare_masks(runner->values(Net::tensor_count - 1), probabilities);
    std::printf("%s sample%d.jpg: IoU %.4f, mean |dp| %.4f\n", name, photo, a.iou, a.mean_abs_difference);
    mean.iou += a.iou / photos;
    mean.mean_abs_difference += a.mean_abs_difference / photos;
  }
  std::printf("%s mean over %d photos: IoU %.4f, mean |dp| %.4f\n", name, photos, mean.iou, mean.mean_abs_difference);
  return mean;
}

/// Net in TFLite's 16x8 quantization through the reference kernels (tools::reference_16x8), calibrated min/max on
/// the six photos as the converter's 16x8 mode would be, against the float twin on the same six; prints each photo's
/// figures and returns the means.
template <class Net>
agreement measure_16x8(const char* name, const char* float_weights_path) {
  auto float_weights = std::make_unique<tools::float_weights<Net>>();
  REQUIRE(tools::load_float_weights<Net>(file_bytes(float_weights_path), *float_weights));
  constexpr int photos = 6;
  std::vector<std::vector<float>> inputs;
  for (int photo = 1; photo <= photos; ++photo) inputs.push_back(tools::input_from_rgb<Net>(load_photo(photo)));
  auto network_16x8 = std::make_unique<tools::reference_16x8<Net>>();
  REQUIRE(network_16x8->quantize(*float_weights, tools::calibrate<Net>(*float_weights, inputs)));
  auto runner = std::make_unique<tools::float_runner<Net>>();
  agreement mean;
  for (int photo = 1; photo <= photos; ++photo) {
    const std::vector<float>& input = inputs[std::size_t(photo - 1)];
    REQUIRE(runner->run(*float_weights, std::span<const float>(input)));
    REQUIRE(network_16x8->run(input));
    const agreement a = compare_masks(runner->values(Net::tensor_count - 1), network_16x8->output());
    std::printf("%s sample%d.jpg: IoU %.4f, mean |dp| %.4f\n", name, photo, a.iou, a.mean_abs_difference);
    mean.iou += a.iou / photos;
    mean.mean_abs_difference += a.mean_abs_difference / photos;
  }
  std::printf("%s mean over %d photos: IoU %.4f, mean |dp| %.4f\n", name, photos, mean.iou, mean.mean_abs_difference);
  return mean;
}

/// measure(), then the means against `bound`: IoU at least bound.iou, mean |dp| at most bound.mean_abs_difference.
template <class Net>
void check_against_float_twin(const char* name, const char* float_weights_path, const char* blob_path,
                              agreement bound) {
  const agreement a = measure<Net>(name, float_weights_path, blob_path);
  CHECK(a.iou >= bound.iou);
  CHECK(a.mean_abs_difference <= bound.mean_abs_difference);
}

}  // namespace

TEST_CASE("selfie segmentation 256x256, i8 per-channel: the mask agrees with the float twin") {
  check_against_float_twin<selfie_256_i8::network>("selfie_256_i8", MOSAIQ_MODEL_SELFIE_256_I8_FLOAT_WEIGHTS,
                                                   MOSAIQ_MODEL_SELFIE_256_I8_WEIGHTS, {0.94, 0.035});
}

TEST_CASE("selfie segmentation 144x256, i8 per-channel: the mask agrees with the float twin") {
  check_against_float_twin<selfie_144x256_i8::network>("selfie_144x256_i8",
                                                       MOSAIQ_MODEL_SELFIE_144X256_I8_FLOAT_WEIGHTS,
                                                       MOSAIQ_MODEL_SELFIE_144X256_I8_WEIGHTS, {0.97, 0.02});
}

// TFLite's 16x8 mode (int16 activations, int8 per-channel filters, int64 biases) on the 256x256 model through the
// reference kernels: the oracle a 16x8 network type will be checked against, and the accuracy it reaches (IoU 0.9796,
// mean |dp| 0.0098), asserted with issue 19's bounds. All six photos (2.4 s of CPU): sample1 alone still passes them
// with activations on 11-bit grids, which the six-photo means do not (0.9316 / 0.0252; docs/decisions.md).
TEST_CASE("selfie segmentation 256x256, 16x8 reference kernels: the mask agrees with the float twin") {
  const agreement a = measure_16x8<selfie_256_i8::network>("selfie_256_16x8", MOSAIQ_MODEL_SELFIE_256_I8_FLOAT_WEIGHTS);
  CHECK(a.iou >= 0.97);
  CHECK(a.mean_abs_difference <= 0.02);
}

// The landscape model's squeeze pools are MEAN over height and width (global_average_pool), run through TFLite's int16
// MEAN (reference::mean_16): IoU 0.9913, mean |dp| 0.0058, asserted with the same bounds over the same six photos.
TEST_CASE("selfie segmentation 144x256, 16x8 reference kernels: the mask agrees with the float twin") {
  const agreement a =
      measure_16x8<selfie_144x256_i8::network>("selfie_144x256_16x8", MOSAIQ_MODEL_SELFIE_144X256_I8_FLOAT_WEIGHTS);
  CHECK(a.iou >= 0.97);
  CHECK(a.mean_abs_difference <= 0.02);
}

TEST_CASE("selfie segmentation 256x256, u8 per-tensor: the mask agrees with the float twin") {
  check_against_float_twin<selfie_256_u8::network>("selfie_256_u8", MOSAIQ_MODEL_SELFIE_256_U8_FLOAT_WEIGHTS,
                                                   MOSAIQ_MODEL_SELFIE_256_U8_WEIGHTS, {0.92, 0.045});
}

TEST_CASE("selfie segmentation 144x256, u8 per-tensor: the mask agrees with the float twin") {
  check_against_float_twin<selfie_144x256_u8::network>("selfie_144x256_u8",
                                                       MOSAIQ_MODEL_SELFIE_144X256_U8_FLOAT_WEIGHTS,
                                                       MOSAIQ_MODEL_SELFIE_144X256_U8_WEIGHTS, {0.96, 0.03});
}
#endif
