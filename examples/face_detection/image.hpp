// Image input and output for the face detector: stb_image loading, face-api's preprocessing
// (pad to a square at the bottom/right with black, bilinear resize to 512x512 as
// tf.image.resizeBilinear without align_corners / half-pixel centers), and drawing boxes.
#pragma once

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "face_model.hpp"
#include "mosaiq/reference/resize.hpp"

namespace face {

struct rgb_image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  ///< RGB, row-major
};

inline rgb_image load_rgb(const std::string& path) {
  int w = 0, h = 0, channels = 0;
  std::uint8_t* data = stbi_load(path.c_str(), &w, &h, &channels, 3);
  if (data == nullptr) throw std::runtime_error("cannot read image " + path + ": " + stbi_failure_reason());
  rgb_image image{w, h, std::vector<std::uint8_t>(data, data + std::size_t(w) * std::size_t(h) * 3)};
  stbi_image_free(data);
  return image;
}

/// The square the image is padded to before resizing (face-api's padToSquare, not centered).
inline int padded_side(const rgb_image& image) { return std::max(image.width, image.height); }

/// face-api's toBatchTensor(512): zero padding to a square at the bottom or right, bilinear resize.
inline std::vector<std::uint8_t> network_input(const rgb_image& image) {
  const int side = padded_side(image);
  std::vector<std::uint8_t> square(std::size_t(side) * std::size_t(side) * 3, 0);
  for (int y = 0; y < image.height; ++y)
    std::copy_n(image.pixels.data() + std::size_t(y) * std::size_t(image.width) * 3, std::size_t(image.width) * 3,
                square.data() + std::size_t(y) * std::size_t(side) * 3);
  std::vector<std::uint8_t> resized(std::size_t(input_size) * input_size * 3);
  mosaiq::reference::resize_bilinear<mosaiq::u8>(
      mosaiq::tensor_view<const mosaiq::u8>(square.data(), {side, side, 3}),
      mosaiq::tensor_view<mosaiq::u8>(resized.data(), {input_size, input_size, 3}), mosaiq::resize_mode::legacy);
  return resized;
}

/// Pixels in the network's element type: u8 as is (zero point 128), i8 shifted by -128 (zero point 0).
template <mosaiq::quantized_element T>
std::vector<T> to_network_elements(const std::vector<std::uint8_t>& pixels) {
  std::vector<T> out(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i)
    out[i] = static_cast<T>(std::is_same_v<T, mosaiq::u8> ? pixels[i] : pixels[i] - 128);
  return out;
}

/// The float network's input: x / 127.5 - 1.
inline std::vector<float> to_float_input(const std::vector<std::uint8_t>& pixels) {
  std::vector<float> out(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) out[i] = static_cast<float>(pixels[i]) / 127.5f - 1.0f;
  return out;
}

/// A detection's box in image pixels (face-api clips to [0, 1] and undoes the padding).
struct pixel_box {
  float left, top, right, bottom;
};
inline pixel_box to_pixels(const detection& d, const rgb_image& image) {
  const float side = static_cast<float>(padded_side(image));
  const auto clip = [](float v) { return std::clamp(v, 0.0f, 1.0f); };
  return {clip(d.box.xmin) * side, clip(d.box.ymin) * side, std::min(clip(d.box.xmax) * side, float(image.width)),
          std::min(clip(d.box.ymax) * side, float(image.height))};
}

inline void draw_box(rgb_image& image, const pixel_box& b, int thickness = 3) {
  const int x0 = std::clamp(int(b.left), 0, image.width - 1), x1 = std::clamp(int(b.right), 0, image.width - 1);
  const int y0 = std::clamp(int(b.top), 0, image.height - 1), y1 = std::clamp(int(b.bottom), 0, image.height - 1);
  const auto paint = [&](int x, int y) {
    if (x < 0 || y < 0 || x >= image.width || y >= image.height) return;
    std::uint8_t* p = image.pixels.data() + (std::size_t(y) * std::size_t(image.width) + std::size_t(x)) * 3;
    p[0] = 40, p[1] = 255, p[2] = 60;
  };
  for (int t = 0; t < thickness; ++t) {
    for (int x = x0; x <= x1; ++x) paint(x, y0 + t), paint(x, y1 - t);
    for (int y = y0; y <= y1; ++y) paint(x0 + t, y), paint(x1 - t, y);
  }
}

/// Writes PNG (full size) or, for a .jpg path, a JPEG at most 960 pixels wide (a small preview).
inline void write_image(const rgb_image& image, const std::string& path) {
  const bool jpeg = path.size() >= 4 && path.compare(path.size() - 4, 4, ".jpg") == 0;
  int written = 0;
  if (!jpeg) {
    written = stbi_write_png(path.c_str(), image.width, image.height, 3, image.pixels.data(), image.width * 3);
  } else {
    const int width = std::min(image.width, 960);
    const int height = std::max(1, image.height * width / image.width);
    std::vector<std::uint8_t> small(std::size_t(width) * std::size_t(height) * 3);
    mosaiq::reference::resize_bilinear<mosaiq::u8>(
        mosaiq::tensor_view<const mosaiq::u8>(image.pixels.data(), {image.height, image.width, 3}),
        mosaiq::tensor_view<mosaiq::u8>(small.data(), {height, width, 3}), mosaiq::resize_mode::half_pixel);
    written = stbi_write_jpg(path.c_str(), width, height, 3, small.data(), 85);
  }
  if (written == 0) throw std::runtime_error("cannot write " + path);
}

}  // namespace face
