// Reads a TensorFlow.js weights manifest (model-weights_manifest.json + its .bin shards) into named
// float tensors. tfjs stores weights as float32 or, quantized, as uint8/uint16 with
// value = q * scale + min; both are returned as float. Used offline by the face converter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace face {

struct named_tensor {
  std::vector<int> shape;
  std::vector<float> values;
};

using weight_map = std::map<std::string, named_tensor>;

inline std::vector<char> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Every tensor of the manifest, dequantized to float (int32 tensors are converted too).
inline weight_map read_tfjs_weights(const std::filesystem::path& manifest_path) {
  const std::vector<char> manifest_text = read_file(manifest_path);
  const nlohmann::json manifest = nlohmann::json::parse(manifest_text.begin(), manifest_text.end());
  weight_map tensors;
  for (const auto& group : manifest) {
    std::vector<char> data;
    for (const auto& shard : group.at("paths")) {
      const std::vector<char> bytes = read_file(manifest_path.parent_path() / shard.get<std::string>());
      data.insert(data.end(), bytes.begin(), bytes.end());
    }
    std::size_t offset = 0;
    for (const auto& entry : group.at("weights")) {
      named_tensor t;
      std::size_t count = 1;
      for (const auto& d : entry.at("shape")) {
        t.shape.push_back(d.get<int>());
        count *= static_cast<std::size_t>(d.get<int>());
      }
      t.values.resize(count);
      const std::string dtype = entry.at("dtype").get<std::string>();
      if (entry.contains("quantization")) {
        const auto& q = entry.at("quantization");
        const std::string qtype = q.at("dtype").get<std::string>();
        const double scale = q.at("scale").get<double>(), min = q.at("min").get<double>();
        const std::size_t width = qtype == "uint8" ? 1 : qtype == "uint16" ? 2 : 0;
        if (width == 0) throw std::runtime_error("unsupported tfjs quantization " + qtype);
        if (offset + count * width > data.size()) throw std::runtime_error("tfjs weights: .bin is too short");
        for (std::size_t i = 0; i < count; ++i) {
          std::uint32_t q_value = 0;
          std::memcpy(&q_value, data.data() + offset + i * width, width);  // little endian
          t.values[i] = static_cast<float>(q_value * scale + min);
        }
        offset += count * width;
      } else if (dtype == "float32" || dtype == "int32") {
        if (offset + count * 4 > data.size()) throw std::runtime_error("tfjs weights: .bin is too short");
        for (std::size_t i = 0; i < count; ++i) {
          if (dtype == "float32") {
            std::memcpy(&t.values[i], data.data() + offset + i * 4, 4);
          } else {
            std::int32_t v = 0;
            std::memcpy(&v, data.data() + offset + i * 4, 4);
            t.values[i] = static_cast<float>(v);
          }
        }
        offset += count * 4;
      } else {
        throw std::runtime_error("unsupported tfjs dtype " + dtype);
      }
      tensors.emplace(entry.at("name").get<std::string>(), std::move(t));
    }
  }
  return tensors;
}

inline const named_tensor& need(const weight_map& weights, const std::string& name, std::size_t elements) {
  const auto it = weights.find(name);
  if (it == weights.end()) throw std::runtime_error("tfjs weights: missing " + name);
  if (it->second.values.size() != elements)
    throw std::runtime_error("tfjs weights: " + name + " has " + std::to_string(it->second.values.size()) +
                             " values, expected " + std::to_string(elements));
  return it->second;
}

}  // namespace face
