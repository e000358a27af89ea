// MediaPipe Selfie Segmentation, a trained model, as a mosaiq static network generated at build time from its
// .tflite: mosaiq_add_model imported the float model (float16 weights) and quantized it to int8 on face-api's six
// demo photos (examples/CMakeLists.txt). Runs it on a photo, prints the per-layer profile, and writes the person
// mask (grayscale, the photo's size) and a composite with the background blurred.
//
//   selfie_segmentation [--runs N] photo.(jpg|png|...) [output prefix]
//
// Writes <prefix>_mask.png and <prefix>_blurred.jpg (prefix: the photo's name without extension, in the current
// directory).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <mosaiq/mosaiq.hpp>
#include <mosaiq/tools.hpp>

#include "selfie_segmentation.hpp"

namespace {

namespace mq = mosaiq;
using net = selfie_segmentation::network;
using T = net::element_type;

bool load_photo(const char* path, mq::tools::rgb_image& image) {
  int width = 0, height = 0, channels = 0;
  unsigned char* pixels = stbi_load(path, &width, &height, &channels, 3);
  if (pixels == nullptr) {
    std::fprintf(stderr, "cannot read %s: %s\n", path, stbi_failure_reason());
    return false;
  }
  image = {width, height, std::vector<mq::u8>(pixels, pixels + std::size_t(width) * std::size_t(height) * 3)};
  stbi_image_free(pixels);
  return true;
}

std::vector<std::byte> read_file(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return {};
  std::vector<std::byte> bytes;
  std::byte buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) bytes.insert(bytes.end(), buffer, buffer + n);
  std::fclose(f);
  return bytes;
}

/// One pass of a horizontal then vertical box blur of radius r (clamped at the borders), in place.
void box_blur(std::vector<float>& rgb, int width, int height, int r) {
  std::vector<float> line;
  const auto blur_line = [&](float* first, int count, std::ptrdiff_t step) {
    line.clear();
    for (int i = 0; i < count; ++i) line.push_back(first[i * step]);
    for (int i = 0; i < count; ++i) {
      float sum = 0;
      for (int k = -r; k <= r; ++k) sum += line[std::size_t(std::clamp(i + k, 0, count - 1))];
      first[i * step] = sum / float(2 * r + 1);
    }
  };
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < height; ++y) blur_line(rgb.data() + (std::ptrdiff_t(y) * width * 3 + c), width, 3);
    for (int x = 0; x < width; ++x)
      blur_line(rgb.data() + (std::ptrdiff_t(x) * 3 + c), height, std::ptrdiff_t(width) * 3);
  }
}

/// The photo with the background (probability < 1) blended toward a blurred copy: out = p x + (1 - p) blur(x).
std::vector<mq::u8> blur_background(const mq::tools::rgb_image& photo, std::span<const float> person) {
  std::vector<float> blurred(photo.pixels.begin(), photo.pixels.end());
  const int radius = std::max(2, std::max(photo.width, photo.height) / 80);
  for (int pass = 0; pass < 3; ++pass) box_blur(blurred, photo.width, photo.height, radius);  // about a Gaussian
  std::vector<mq::u8> out(photo.pixels.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float p = person[i / 3];
    out[i] = static_cast<mq::u8>(std::lround(p * float(photo.pixels[i]) + (1.0f - p) * blurred[i]));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 20;
  const char* photo_path = nullptr;
  std::string prefix;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (photo_path == nullptr && !arg.starts_with("--"))
      photo_path = argv[i];
    else if (prefix.empty() && !arg.starts_with("--"))
      prefix = argv[i];
    else
      photo_path = nullptr, i = argc;
  }
  if (photo_path == nullptr) {
    std::fprintf(stderr, "usage: %s [--runs N] photo [output prefix]\n", argv[0]);
    return 2;
  }
  if (prefix.empty()) prefix = std::filesystem::path(photo_path).stem().string();

  // The weights blob the build's calibrator wrote; the load-time packing.
  auto weights = std::make_unique<net::weights>();
  if (!net::load(read_file(MOSAIQ_MODEL_SELFIE_SEGMENTATION_WEIGHTS), *weights)) return 1;
  const auto prepared = std::make_unique<net::prepared>(net::prepare(*weights));

  mq::tools::rgb_image photo;
  if (!load_photo(photo_path, photo)) return 1;
  const std::vector<T> input = mq::tools::quantize_input<net>(*weights, mq::tools::input_from_rgb<net>(photo));
  std::vector<T> output(net::output_shape.elements());
  alignas(64) static std::byte arena[net::arena_bytes];

  std::printf("mosaiq: MediaPipe Selfie Segmentation (generated from selfie_segmentation.tflite), int8, ISA %s\n",
              mq::simd::to_string(mq::simd::native_isa).data());
  std::printf("photo     %s (%dx%d, stretched to %dx%d, / 255)\n", photo_path, photo.width, photo.height,
              net::input_shape.width, net::input_shape.height);
  std::printf("network   %zu layers, %.2f M MACs, arena %zu bytes, weights %llu bytes\n\n", net::layer_count,
              double(net::macs) / 1e6, net::arena_bytes, static_cast<unsigned long long>(net::weight_bytes));
  mq::profile<net>(*prepared, mq::tensor_view<const T>(input.data(), net::input_shape),
                   mq::tensor_view<T>(output.data(), net::output_shape), arena, runs, stdout);

  // The person probability, resized to the photo (bilinear, half-pixel).
  const std::vector<float> probability = mq::tools::dequantize_output<net>(*weights, output);
  std::vector<float> person(std::size_t(photo.width) * std::size_t(photo.height));
  mq::reference::resize_bilinear(mq::tensor_view<const float>(probability.data(), net::output_shape),
                                 mq::tensor_view<float>(person.data(), {photo.height, photo.width, 1}),
                                 mq::resize_mode::half_pixel);
  std::vector<mq::u8> mask(person.size());
  std::size_t inside = 0;
  for (std::size_t i = 0; i < person.size(); ++i) {
    mask[i] = static_cast<mq::u8>(std::lround(std::clamp(person[i], 0.0f, 1.0f) * 255.0f));
    inside += person[i] > 0.5f;
  }
  const std::string mask_path = prefix + "_mask.png", composite_path = prefix + "_blurred.jpg";
  const std::vector<mq::u8> composite = blur_background(photo, person);
  if (stbi_write_png(mask_path.c_str(), photo.width, photo.height, 1, mask.data(), photo.width) == 0 ||
      stbi_write_jpg(composite_path.c_str(), photo.width, photo.height, 3, composite.data(), 90) == 0) {
    std::fprintf(stderr, "cannot write %s or %s\n", mask_path.c_str(), composite_path.c_str());
    return 1;
  }
  std::printf("\nmask      %s (person probability x 255; %.1f%% of the photo above 0.5)\ncomposite %s\n",
              mask_path.c_str(), 100.0 * double(inside) / double(person.size()), composite_path.c_str());
  return 0;
}
