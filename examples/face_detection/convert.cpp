// face_convert <face-api package dir> <output dir>: converts @vladmandic/face-api's
// SSD-MobileNetV1 weights into mosaiq face models (face_u8.mosaiq, face_i8.mosaiq), calibrating
// activation ranges on the package's six demo photos with the float network.
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>

#include "converter.hpp"

template <mosaiq::quantized_element T>
void convert(const std::filesystem::path& package, const face::calibration& ranges,
             const std::vector<std::vector<float>>& inputs, const std::filesystem::path& out) {
  const auto source = face::read_face_api<T>(package);
  const auto model = face::quantize_face_model<T>(*source, ranges, true, &inputs);
  face::save_model(*model, out.string());
  std::printf("wrote %s (weights blob %zu bytes)\n", out.c_str(), face::ssd_mobilenet_v1<T>::blob_bytes);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <face-api package dir> <output dir>\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path package = argv[1], out = argv[2];
    std::filesystem::create_directories(out);
    const auto start = std::chrono::steady_clock::now();
    const auto source = face::read_face_api<mosaiq::u8>(package);
    const auto inputs = face::calibration_inputs(package);
    std::printf("read %s; calibrating on %zu photos with the float network\n",
                (package / face::manifest_in_package).c_str(), inputs.size());
    const face::calibration ranges = face::calibrate_face_model(*source, inputs);
    convert<mosaiq::u8>(package, ranges, inputs, out / "face_u8.mosaiq");
    convert<mosaiq::i8>(package, ranges, inputs, out / "face_i8.mosaiq");
    std::printf("converted in %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "face_convert: %s\n", e.what());
    return 1;
  }
  return 0;
}
