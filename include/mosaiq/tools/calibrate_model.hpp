// Quantizing a network imported from a float model: what the calibrator mosaiq_add_model generates does
// (cmake/MosaiqCalibrator.cpp.in), as functions programs and tests share:
//   photo (RGB bytes, any size) -> input_from_rgb: bilinear (half-pixel) resize to the network input, values / 255
//   -> calibrate: the float twin on every sample, min/max range of every tensor (or percentiles)
//   -> quantize_network: i8 per-channel or u8 per-tensor filters, input quantization of [0, 1] exactly; an i16
//      network by the 16x8 rules (tools/quantize_16x8.hpp: int16 activations with zero point 0, int8 filters)
//   -> Net::save: the weights blob Net::load reads.
// Image decoding stays outside (the calibrator uses stb_image), so the library needs no image library.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mosaiq/core/error.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/reference/resize.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/tools/calibrate.hpp"
#include "mosaiq/tools/float_blob.hpp"
#include "mosaiq/tools/float_network.hpp"
#include "mosaiq/tools/quantize.hpp"
#include "mosaiq/tools/quantize_16x8.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools {

/// An 8-bit RGB image, rows top to bottom, pixels R, G, B.
struct rgb_image {
  int width = 0, height = 0;
  std::vector<u8> pixels;
};

/// The float input of Net (H x W x 3) from a photo: bilinear resize with half-pixel centers (the photo stretched
/// to the input, as MediaPipe's selfie graph does), then / 255. Empty (reported) for a network without three
/// input channels or an image whose size does not match its pixels.
template <class Net>
std::vector<float> input_from_rgb(const rgb_image& image) {
  constexpr shape input = Net::input_shape;
  if (!require(input.channels == 3, errc::shape_mismatch, "input_from_rgb: the network input needs 3 channels") ||
      !require(image.width > 0 && image.height > 0 &&
                   image.pixels.size() == std::size_t(image.width) * std::size_t(image.height) * 3,
               errc::shape_mismatch, "input_from_rgb: the image size does not match its pixels"))
    return {};
  std::vector<u8> resized(input.elements());
  reference::resize_bilinear<u8>(tensor_view<const u8>(image.pixels.data(), {image.height, image.width, 3}),
                                 tensor_view<u8>(resized.data(), input), resize_mode::half_pixel);
  std::vector<float> out(resized.size());
  for (std::size_t i = 0; i < resized.size(); ++i) out[i] = static_cast<float>(resized[i]) / 255.0f;
  return out;
}

struct model_calibration_options {
  calibration_options ranges{};
  /// u8 filters: min/max or the MSE-best range (int8 filters are per channel, always min/max).
  weight_range u8_filters = weight_range::min_max;
  /// Ranges clipped to the values their readers tell apart (clip_to_readers: logistic, hard swish). 8-bit networks
  /// only: the windows are those of 8-bit outputs, finer in a 16x8 network.
  bool clip_to_readers = true;
};

/// Net's quantized weights from its float weights and calibration samples (inputs of Net::input_shape, e.g.
/// input_from_rgb's): ranges from the float twin, the input quantized as [0, 1] (the /255 pixels). Null (reported)
/// without samples or when quantization fails.
template <class Net>
std::unique_ptr<typename Net::weights> calibrate_model(const float_weights<Net>& fw,
                                                       const std::vector<std::vector<float>>& samples,
                                                       const model_calibration_options& options = {}) {
  if (!require(!samples.empty(), errc::invalid_argument, "calibrate_model: no calibration samples")) return nullptr;
  using T = typename Net::element_type;
  auto ranges = calibrate<Net>(fw, samples, options.ranges);
  if constexpr (std::same_as<T, i16>) {
    return quantize_network<Net>(fw, ranges, {.input = activation_quant_16({0.0f, 1.0f})});
  } else {
    if (options.clip_to_readers) clip_to_readers<Net>(ranges);
    return quantize_network<Net>(fw, ranges,
                                 {.input = activation_quant<T>({0.0f, 1.0f}), .u8_filters = options.u8_filters});
  }
}

namespace detail {

inline std::optional<std::vector<std::byte>> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) bytes[i] = static_cast<std::byte>(chars[i]);
  return bytes;
}

}  // namespace detail

/// A photo decoder: the image, or nullopt after printing why.
using rgb_loader = std::function<std::optional<rgb_image>(const std::string& path)>;

/// The calibrator's command line: FLOAT_WEIGHTS OUT_BLOB [--percentile P] [--mse-u8-filters] [--keep-saturated-ranges]
/// IMAGE... Reads the float weights mosaiq-import wrote for Net, calibrates on the images and writes Net's weights
/// blob. Returns the process exit code (0 on success); says what failed on stderr. An i16 (16x8) network refuses
/// --mse-u8-filters and --keep-saturated-ranges: its filters are int8 per channel and its ranges are not clipped.
template <class Net>
int calibrator_main(int argc, char** argv, const rgb_loader& load) {
  const auto fail = [](const std::string& what) {
    std::fprintf(stderr, "mosaiq calibrator: %s\n", what.c_str());
    return 1;
  };
  if (argc < 4)
    return fail("usage: FLOAT_WEIGHTS OUT_BLOB [--percentile P] [--mse-u8-filters] [--keep-saturated-ranges] IMAGE...");
  model_calibration_options options;
  std::vector<std::string> images;
  for (int i = 3; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--percentile" && i + 1 < argc) {
      options.ranges.method = range_method::percentile;
      options.ranges.percentile = std::stod(argv[++i]);
    } else if (arg == "--mse-u8-filters") {
      options.u8_filters = weight_range::mse;
    } else if (arg == "--keep-saturated-ranges") {
      options.clip_to_readers = false;
    } else {
      images.emplace_back(arg);
    }
  }
  if (std::same_as<typename Net::element_type, i16> &&
      (options.u8_filters != weight_range::min_max || !options.clip_to_readers))
    return fail("--mse-u8-filters and --keep-saturated-ranges are for 8-bit networks; this one is 16x8 (i16)");
  const auto float_file = detail::read_bytes(argv[1]);
  if (!float_file) return fail(std::string("cannot read ") + argv[1]);
  auto fw = std::make_unique<float_weights<Net>>();
  if (!load_float_weights<Net>(*float_file, *fw)) return fail(std::string(argv[1]) + " is not this network's");
  std::vector<std::vector<float>> samples;
  for (const std::string& path : images) {
    const std::optional<rgb_image> image = load(path);
    if (!image) return fail("cannot read the calibration image " + path);
    samples.push_back(input_from_rgb<Net>(*image));
    if (samples.back().empty()) return fail("cannot use the calibration image " + path);
  }
  const auto weights = calibrate_model<Net>(*fw, samples, options);
  if (!weights) return fail("quantization failed");
  std::vector<std::byte> blob(Net::blob_bytes);
  if (Net::save(*weights, blob) != blob.size()) return fail("cannot write the weights blob");
  std::ofstream out(argv[2], std::ios::binary);
  out.write(reinterpret_cast<const char*>(blob.data()), static_cast<std::streamsize>(blob.size()));
  if (!out) return fail(std::string("cannot write ") + argv[2]);
  std::printf("mosaiq calibrator: %zu images -> %zu bytes -> %s\n", samples.size(), blob.size(), argv[2]);
  return 0;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools
