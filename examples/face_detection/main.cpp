// face_detection <model.mosaiq> <photo.jpg> [annotated.png|.jpg]: runs face-api's SSD-MobileNetV1
// face detector (converted by face_convert) as a mosaiq static network on one photo, prints the
// faces (score, box in pixels), the per-layer profile and the memory figures, and writes the photo
// with the boxes drawn (a .jpg path writes a preview at most 960 pixels wide).
//
// One portable binary: the network is built once per target (face_network.cpp) and the best one
// this CPU runs is picked at start (face_dispatch.hpp); the first line says which.
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "face_dispatch.hpp"
#include "image.hpp"

template <mosaiq::quantized_element T>
int run(const std::string& model_path, const std::string& photo, const std::string& annotated, int threads) {
  using net = face::ssd_mobilenet_v1<T>;
  auto detector = std::make_unique<face::dispatched_detector<T>>(face::read_model_file<T>(model_path));
  const mosaiq::dispatched_network& network = detector->network();
  std::printf("target: %.*s%s (the best of the linked targets this CPU runs)\n", int(network.target().size()),
              network.target().data(), network.uses_amx() ? " with AMX" : "");

  face::rgb_image image = face::load_rgb(photo);
  const std::vector<T> input = face::to_network_elements<T>(face::network_input(image));
  const mosaiq::tensor_view<const T> view(input.data(), net::input_shape);

  std::array<face::detection, 100> faces{};
  const face::detect_options options{};
  mosaiq::thread_pool pool(threads);
  std::size_t count = detector->detect(view, options, faces, pool);  // warm-up
  constexpr int frames = 10;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < frames; ++i) count = detector->detect(view, options, faces, pool);
  const double frame_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / frames;

  std::printf("%s: %dx%d, %zu face(s) with score > %.2f\n", photo.c_str(), image.width, image.height, count,
              double(options.min_confidence));
  for (std::size_t i = 0; i < count; ++i) {
    const face::pixel_box b = face::to_pixels(faces[i], image);
    std::printf("  score %.3f  box x %.0f..%.0f  y %.0f..%.0f\n", double(faces[i].score), double(b.left),
                double(b.right), double(b.top), double(b.bottom));
    face::draw_box(image, b);
  }
  std::printf("\nframe (network + post-processing, %s, %d thread%s): %.2f ms over %d runs\n\nper-layer profile:\n",
              std::is_same_v<T, mosaiq::u8> ? "u8" : "i8", threads, threads == 1 ? "" : "s", frame_ms, frames);
  detector->profile(view, 5, stdout, pool);
  std::printf(
      "arena %zu bytes (peak live %zu, plan efficiency %.3f), weights %zu bytes, post-processing scratch %zu "
      "bytes\n",
      network.arena_bytes(), network.peak_live_bytes(),
      double(network.peak_live_bytes()) / double(network.arena_bytes()), std::size_t(network.weight_bytes()),
      sizeof(face::postprocess_scratch));
  if (!annotated.empty()) {
    face::write_image(image, annotated);
    std::printf("wrote %s\n", annotated.c_str());
  }
  return 0;
}

int main(int argc, char** argv) {
  const int threads = mosaiq_examples::take_threads_flag(argc, argv);
  if (argc < 3 || threads == 0) {
    std::fprintf(stderr, "usage: %s [--threads 1..%d] <face_u8.mosaiq|face_i8.mosaiq> <photo> [annotated.png]\n",
                 argv[0], mosaiq_examples::max_threads);
    return 2;
  }
  try {
    const std::string model = argv[1], photo = argv[2], annotated = argc > 3 ? argv[3] : "";
    if (model.find("_i8") != std::string::npos) return run<mosaiq::i8>(model, photo, annotated, threads);
    return run<mosaiq::u8>(model, photo, annotated, threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "face_detection: %s\n", e.what());
    return 1;
  }
}
