// mosaiq-import MODEL.tflite --out-header NET.hpp (--out-weights NET.mosaiq | --out-float-weights NET.float.mosaiq)
//               [--type i8|u8|i16x8] [--name NAME] [--max-threads N]
// Reads a TFLite model, applies the pattern passes and writes the header that defines its static network type and
// its weights. Quantized (uint8/int8) models keep their scales and zero points and give the weights blob the
// network's load() reads (--out-weights); --type, when given, must name their element type. Float models give the
// float weights file (--out-float-weights) that a calibrator built against the header quantizes on images into that
// blob (mosaiq_add_model's CALIBRATION; --type i8 by default, u8 for per-tensor uint8, i16x8 for TFLite's 16x8 mode:
// int16 activations, int8 filters, the header's element mosaiq::i16). Errors name the operator
// index, its op and the reason. --max-threads N (1 by default) builds the network for runs on up to N threads.
#include <charconv>
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
  std::string model, header, weights, float_weights, type, name;
  tfl::header_options header_options;
};

/// A whole decimal number in [1, header_options::max_supported_threads].
bool parse_threads(std::string_view text, int& threads) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < 1 ||
      value > tfl::header_options::max_supported_threads)
    return false;
  threads = value;
  return true;
}

int usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s MODEL.tflite --out-header NET.hpp (--out-weights NET.mosaiq | --out-float-weights FILE)\n"
               "       [--type i8|u8|i16x8] [--name NAME] [--max-threads N]\n"
               "  --out-weights        quantized models: the weights blob NET::network::load reads\n"
               "  --out-float-weights  float models: the float weights a calibrator quantizes (mosaiq_add_model)\n"
               "  --max-threads        the network runs on up to N threads (1..%d; default 1)\n",
               program, tfl::header_options::max_supported_threads);
  return 2;
}

/// False on an unknown option or a missing value.
bool parse(int argc, char** argv, arguments& args) {
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
    else if (arg == "--out-float-weights")
      ok = value(args.float_weights);
    else if (arg == "--type")
      ok = value(args.type);
    else if (arg == "--name")
      ok = value(args.name);
    else if (arg == "--max-threads")
      ok = i + 1 < argc && parse_threads(argv[++i], args.header_options.max_threads);
    else if (arg.starts_with("--"))
      ok = false;
    else if (args.model.empty())
      args.model = arg;
    else
      ok = false;
    if (!ok) return false;
  }
  return !args.model.empty() && !args.header.empty() && (args.weights.empty() != args.float_weights.empty()) &&
         (args.type.empty() || args.type == "i8" || args.type == "u8" || args.type == "i16x8");
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
  const auto& inputs = graph.value().inputs;
  const bool float_model =
      !inputs.empty() && graph.value().tensors[std::size_t(inputs[0])].type == tfl::element_type::float32;
  if (float_model) {
    if (args.float_weights.empty())
      return failure::failure(
          "the model is float: it needs calibration images to be quantized (mosaiq_add_model ... CALIBRATION "
          "images...; on the command line --out-float-weights, then the calibrator)");
    if (args.type == "i16x8") return tfl::lower_float_16x8(graph.value());
    return tfl::lower_float(graph.value(), args.type == "u8" ? tfl::element_type::uint8 : tfl::element_type::int8);
  }
  if (args.weights.empty())
    return failure::failure(
        "the model is already quantized: its own scales and zero points are used, so it needs no calibration "
        "images (--out-weights, not --out-float-weights)");
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
  const bool from_float = net.value().from_float;
  const std::string& weights_path = from_float ? args.float_weights : args.weights;
  const std::filesystem::path model_path(args.model);
  const std::string name = tfl::identifier_from(args.name.empty() ? model_path.stem().string() : args.name);
  // The network's blob is NAME.mosaiq beside the header (a float model's calibrator writes it there).
  const std::string blob_name = from_float ? name + ".mosaiq" : std::filesystem::path(args.weights).filename().string();
  const std::string header =
      tfl::emit_header(net.value(), name, model_path.filename().string(), blob_name, args.header_options);
  const std::vector<std::uint8_t> blob =
      from_float ? tfl::emit_float_weights(net.value()) : tfl::emit_blob(net.value());
  if (!write_file(args.header, header.data(), header.size()) || !write_file(weights_path, blob.data(), blob.size())) {
    std::fprintf(stderr, "mosaiq-import: cannot write %s or %s\n", args.header.c_str(), weights_path.c_str());
    return 1;
  }
  for (const std::string& note : net.value().notes)
    std::fprintf(stderr, "%s: note: %s\n", args.model.c_str(), note.c_str());
  std::printf("%s: %zu layers -> %s, %zu bytes%s -> %s\n", args.model.c_str(), net.value().layers.size(),
              args.header.c_str(), blob.size(), from_float ? " of float weights" : "", weights_path.c_str());
  return 0;
}
