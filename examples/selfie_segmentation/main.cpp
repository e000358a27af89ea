// MediaPipe Selfie Segmentation, a trained model, as mosaiq static networks generated at build time from its two
// .tflite files (256x256 and 144x256 "landscape"): mosaiq_add_model imported the float models (float16 weights) and
// quantized them on face-api's six demo photos (examples/CMakeLists.txt), twice: int8, and TFLite's 16x8 mode (int16
// activations, int8 filters: the more accurate one, about 1.3x the int8 frame's time). Runs one on a photo, prints
// the per-layer profile, and writes the person mask (grayscale, the photo's size) and a composite with the
// background blurred.
//
//   selfie_segmentation [--type i8|i16] [--model square|landscape] [--threads N] [--runs N] photo.(jpg|png|...)
//                       [output prefix]
//
// --type picks the element (default i8). The model is the landscape one for photos wider than tall, else the square
// one, unless --model says. Writes <prefix>_mask.png and <prefix>_blurred.jpg (prefix: the photo's name without
// extension, in the current directory).
//
// One portable binary: every network is built once per target (selfie_networks.cpp, selfie_networks_16x8.cpp) and
// the best target this CPU runs is picked at start; the "target" line says which, and with which element.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <mosaiq/dispatch.hpp>
#include <mosaiq/mosaiq.hpp>
#include <mosaiq/tools.hpp>

#include "../common/aligned_bytes.hpp"
#include "../common/threads.hpp"
#include "selfie_landscape.hpp"
#include "selfie_landscape_i16.hpp"
#include "selfie_square.hpp"
#include "selfie_square_i16.hpp"

MOSAIQ_DECLARE_NETWORK_ENTRIES(selfie_square_net)
MOSAIQ_DECLARE_NETWORK_ENTRIES(selfie_landscape_net)
MOSAIQ_DECLARE_NETWORK_ENTRIES(selfie_square_i16_net)
MOSAIQ_DECLARE_NETWORK_ENTRIES(selfie_landscape_i16_net)

namespace {

namespace mq = mosaiq;
// The generated 16x8 networks are the int8 ones with int16 activations: the same layers, compiled once.
static_assert(std::is_same_v<selfie_square_i16::network, selfie_square::network::with_element<mq::i16>> &&
              std::is_same_v<selfie_landscape_i16::network, selfie_landscape::network::with_element<mq::i16>>);
static_assert(std::is_same_v<selfie_square::network::element_type, mq::i8> &&
              std::is_same_v<selfie_landscape::network::element_type, mq::i8>);
// examples/CMakeLists.txt builds them for mosaiq_examples::max_threads threads (MAX_THREADS).
static_assert(selfie_square::network::max_threads == mosaiq_examples::max_threads &&
              selfie_landscape::network::max_threads == mosaiq_examples::max_threads);

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

/// The person probability (the network's output, `shape`) resized to the photo; writes <prefix>_mask.png and
/// <prefix>_blurred.jpg.
int write_results(const mq::tools::rgb_image& photo, const std::vector<float>& probability, mq::shape shape,
                  const std::string& prefix) {
  std::vector<float> person(std::size_t(photo.width) * std::size_t(photo.height));
  mq::reference::resize_bilinear(mq::tensor_view<const float>(probability.data(), shape),
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

/// What the command line asks for.
struct options {
  const char* photo_path = nullptr;
  std::string prefix;
  std::string_view model;        // "square", "landscape" or empty (by the photo's orientation)
  std::string_view type = "i8";  // "i8" or "i16"
  int runs = 20;
  int threads = 1;
};

/// Runs network Net (its per-target builds `entries`, the weights blob at `blob_path`) on the photo and writes the
/// mask and the composite.
template <class Net>
int segment(const mq::dispatch::entry_list& entries, const char* blob_path, const char* model_name,
            const mq::tools::rgb_image& photo, const options& o) {
  using T = typename Net::element_type;
  const mq::dispatch::network_entry* entry = mq::select_entry(entries);
  if (entry == nullptr) {
    std::fprintf(stderr, "no linked target of the %s model runs on this CPU\n", model_name);
    return 1;
  }
  // The state (weights, prepared network) outlives the network, whose destructor destroys it.
  mosaiq_examples::aligned_bytes state(entry->state_bytes, entry->state_alignment);
  mq::dispatched_network network(*entry);
  if (const mq::status s = network.prepare(read_file(blob_path), state.bytes); !s) {
    std::fprintf(stderr, "%s: %s\n", blob_path, s.message);
    return 1;
  }
  const std::vector<T> input = mq::tools::quantize<T>(mq::tools::input_from_rgb<Net>(photo), network.input_quant());
  std::vector<T> output(Net::output_shape.elements());
  mosaiq_examples::aligned_bytes arena(network.arena_bytes(), 64);

  std::printf("mosaiq: MediaPipe Selfie Segmentation, %s model (generated from its .tflite)\n", model_name);
  std::printf("target    %.*s, element %.*s (%s)\n", int(network.target().size()), network.target().data(),
              int(network.element().size()), network.element().data(),
              std::is_same_v<T, mq::i16> ? "16x8: int16 activations, int8 filters" : "int8 activations and filters");
  std::printf("photo     %s (%dx%d, stretched to %dx%d, / 255)\n", o.photo_path, photo.width, photo.height,
              Net::input_shape.width, Net::input_shape.height);
  std::printf("network   %zu layers, %.2f M MACs, arena %zu bytes, weights %llu bytes, %d thread%s\n\n",
              Net::layer_count, double(network.macs()) / 1e6, network.arena_bytes(),
              static_cast<unsigned long long>(network.weight_bytes()), o.threads, o.threads == 1 ? "" : "s");
  mq::thread_pool pool(o.threads);
  const mq::tensor_view<const T> input_view(input.data(), Net::input_shape);
  const mq::tensor_view<T> output_view(output.data(), Net::output_shape);
  if (const mq::status s = network.profile(input_view, output_view, arena.bytes, o.runs, stdout, pool); !s) {
    std::fprintf(stderr, "run: %s\n", s.message);
    return 1;
  }
  return write_results(photo, mq::tools::dequantize(std::span<const T>(output), network.output_quant()),
                       Net::output_shape, o.prefix);
}

/// Parses the command line into `o`; false on a mistake (the caller prints the usage).
bool parse(int argc, char** argv, options& o) {
  o.threads = mosaiq_examples::take_threads_flag(argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--runs" && i + 1 < argc)
      o.runs = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--model" && i + 1 < argc)
      o.model = argv[++i];
    else if (arg == "--type" && i + 1 < argc)
      o.type = argv[++i];
    else if (o.photo_path == nullptr && !arg.starts_with("--"))
      o.photo_path = argv[i];
    else if (o.prefix.empty() && !arg.starts_with("--"))
      o.prefix = argv[i];
    else
      return false;
  }
  if (o.prefix.empty() && o.photo_path != nullptr) o.prefix = std::filesystem::path(o.photo_path).stem().string();
  return o.photo_path != nullptr && o.threads != 0 &&
         (o.model.empty() || o.model == "square" || o.model == "landscape") && (o.type == "i8" || o.type == "i16");
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: %s [--type i8|i16] [--model square|landscape] [--threads 1..%d] [--runs N] photo "
                 "[output prefix]\n",
                 argv[0], mosaiq_examples::max_threads);
    return 2;
  }
  mq::tools::rgb_image photo;
  if (!load_photo(o.photo_path, photo)) return 1;
  const bool landscape = o.model.empty() ? photo.width > photo.height : o.model == "landscape";
  if (o.type == "i16") {
    if (landscape)
      return segment<selfie_landscape_i16::network>(MOSAIQ_NETWORK_ENTRIES(selfie_landscape_i16_net),
                                                    MOSAIQ_MODEL_SELFIE_LANDSCAPE_I16_WEIGHTS, "landscape 144x256",
                                                    photo, o);
    return segment<selfie_square_i16::network>(MOSAIQ_NETWORK_ENTRIES(selfie_square_i16_net),
                                               MOSAIQ_MODEL_SELFIE_SQUARE_I16_WEIGHTS, "square 256x256", photo, o);
  }
  if (landscape)
    return segment<selfie_landscape::network>(MOSAIQ_NETWORK_ENTRIES(selfie_landscape_net),
                                              MOSAIQ_MODEL_SELFIE_LANDSCAPE_WEIGHTS, "landscape 144x256", photo, o);
  return segment<selfie_square::network>(MOSAIQ_NETWORK_ENTRIES(selfie_square_net), MOSAIQ_MODEL_SELFIE_SQUARE_WEIGHTS,
                                         "square 256x256", photo, o);
}
