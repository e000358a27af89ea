// mosaiq-import MODEL.tflite --out-header NET.hpp --out-weights NET.mosaiq [--type i8|u8] [--name NAME]
// Reads a TFLite model, applies the pattern passes and writes the header that defines its static network type and
// the weights blob that network's load() reads. Quantized (uint8/int8) models keep their scales and zero points;
// --type, when given, must name their element type. Errors name the operator index, its op and the reason.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "mosaiq/tflite/emitter.hpp"
#include "mosaiq/tflite/reader.hpp"

namespace {

namespace tfl = mosaiq::tflite;

struct arguments {
  std::string model, header, weights, type, name;
  std::vector<std::string> calibration;
};

int usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s MODEL.tflite --out-header NET.hpp --out-weights NET.mosaiq [--type i8|u8] [--name NAME]\n"
               "       [--calibration IMAGE...]\n",
               program);
  return 2;
}

/// False on an unknown option or a missing value.
bool parse(int argc, char** argv, arguments& args) {
  bool images = false;  // plain arguments after --calibration are images
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&](std::string& into) {
      if (i + 1 >= argc) return false;
      into = argv[++i];
      return true;
    };
    bool ok = true;
    if (arg == "--out-header")
      ok = value(args.header);
    else if (arg == "--out-weights")
      ok = value(args.weights);
    else if (arg == "--type")
      ok = value(args.type);
    else if (arg == "--name")
      ok = value(args.name);
    else if (arg == "--calibration")
      images = true;
    else if (arg.starts_with("--"))
      ok = false;
    else if (images)
      args.calibration.emplace_back(arg);
    else if (args.model.empty())
      args.model = arg;
    else
      ok = false;
    if (!ok) return false;
  }
  return !args.model.empty() && !args.header.empty() && !args.weights.empty() &&
         (args.type.empty() || args.type == "i8" || args.type == "u8");
}

bool write_file(const std::string& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(out);
}

tfl::result<tfl::emitted_network> import(const arguments& args) {
  using failure = tfl::result<tfl::emitted_network>;
  const auto bytes = tfl::read_file(args.model);
  if (!bytes) return failure::failure(bytes.error());
  const auto model = tfl::read_model(bytes.value());
  if (!model) return failure::failure(model.error());
  auto graph = tfl::build_graph(model.value());
  if (!graph) return failure::failure(graph.error());
  tfl::apply_emitter_patterns(graph.value());
  const auto input = graph.value().tensors[std::size_t(graph.value().inputs.at(0))].type;
  if (input == tfl::element_type::float32)
    return failure::failure(
        "the model is float: quantizing float models from calibration images is not part of "
        "mosaiq-import yet (see README); give a TFLite-quantized (uint8/int8) model");
  if (!args.calibration.empty())
    return failure::failure(
        "the model is already quantized: its own scales and zero points are used, so "
        "--calibration images are not needed");
  auto net = tfl::lower_quantized(graph.value());
  if (!net) return net;
  const char* model_type = net.value().element == tfl::element_type::uint8 ? "u8" : "i8";
  if (!args.type.empty() && args.type != model_type)
    return failure::failure("the model is quantized as " + std::string(model_type) + ", --type asks for " + args.type +
                            "; requantizing a quantized model is not supported");
  return net;
}

}  // namespace

int main(int argc, char** argv) {
  arguments args;
  if (!parse(argc, argv, args)) return usage(argv[0]);
  const auto net = import(args);
  if (!net) {
    std::fprintf(stderr, "%s: %s\n", args.model.c_str(), net.error().c_str());
    return 1;
  }
  const std::filesystem::path model_path(args.model), blob_path(args.weights);
  const std::string name = tfl::identifier_from(args.name.empty() ? model_path.stem().string() : args.name);
  const std::string header =
      tfl::emit_header(net.value(), name, model_path.filename().string(), blob_path.filename().string());
  const std::vector<std::uint8_t> blob = tfl::emit_blob(net.value());
  if (!write_file(args.header, header.data(), header.size()) || !write_file(args.weights, blob.data(), blob.size())) {
    std::fprintf(stderr, "mosaiq-import: cannot write %s or %s\n", args.header.c_str(), args.weights.c_str());
    return 1;
  }
  for (const std::string& note : net.value().notes)
    std::fprintf(stderr, "%s: note: %s\n", args.model.c_str(), note.c_str());
  std::printf("%s: %zu layers -> %s, %zu bytes -> %s\n", args.model.c_str(), net.value().layers.size(),
              args.header.c_str(), blob.size(), args.weights.c_str());
  return 0;
}
