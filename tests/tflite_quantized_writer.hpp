// Writes small TFLite-quantized models (uint8 per-tensor, int8 with per-channel filters) op by op, for the importer's
// emitter tests: pseudo-random filters and biases, scales chosen so that activations spread over the 8-bit range
// rather than saturate.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tflite_builder.hpp"

namespace mosaiq::test::tflite_files {

class quantized_writer {
 public:
  using index = std::int32_t;

  /// `int8`: int8 activations and per-channel int8 filters; otherwise uint8 throughout.
  explicit quantized_writer(bool int8, unsigned seed = 1) : int8_(int8), rng_(seed) {}

  model_spec spec;

  index input(const std::string& name, std::vector<std::int32_t> shape, float scale, int zero_point) {
    const index t = activation_tensor(name, std::move(shape), scale, zero_point);
    spec.inputs.push_back(t);
    return t;
  }
  void output(index t) { spec.outputs.push_back(t); }

  /// An activation with the given quantization (zero point given for uint8; int8 uses it - 128).
  index activation_tensor(const std::string& name, std::vector<std::int32_t> shape, float scale, int zero_point) {
    tensor_spec t = activation(name, std::move(shape), int8_ ? i8 : u8);
    t.scale = {scale};
    t.zero_point = {int8_ ? zero_point - 128 : zero_point};
    return add(std::move(t));
  }

  /// An activation quantized like `like` (pools, resizes, reshapes keep their input's quantization).
  index same_quant(const std::string& name, std::vector<std::int32_t> shape, index like) {
    tensor_spec t = activation(name, std::move(shape), int8_ ? i8 : u8);
    t.scale = at(like).scale;
    t.zero_point = at(like).zero_point;
    return add(std::move(t));
  }

  /// SOFTMAX's and LOGISTIC's fixed output quantization.
  index probability(const std::string& name, std::vector<std::int32_t> shape) {
    return activation_tensor(name, std::move(shape), 1.0f / 256.0f, 0);
  }

  /// A filter of `shape`, output channels along `channel_axis`: int8 per channel (scales vary by channel) or uint8
  /// per tensor with a zero point.
  index filter(const std::string& name, std::vector<std::int32_t> shape, int channel_axis) {
    tensor_spec t{.name = name, .type = int8_ ? i8 : u8, .shape = shape};
    const std::size_t n = count(shape);
    const auto channels = static_cast<std::size_t>(shape[static_cast<std::size_t>(channel_axis)]);
    std::uniform_int_distribution<int> value(int8_ ? -127 : 0, int8_ ? 127 : 255);
    t.data.resize(n);
    for (auto& byte : t.data) byte = static_cast<std::uint8_t>(value(rng_));
    if (int8_) {
      for (std::size_t c = 0; c < channels; ++c) t.scale.push_back(0.004f * (1.0f + 0.15f * static_cast<float>(c % 5)));
      t.zero_point.assign(channels, 0);
      t.quantized_dimension = channel_axis;
    } else {
      t.scale = {0.005f};
      t.zero_point = {121};
    }
    return add(std::move(t));
  }

  /// An int32 bias of `channels` values in [-range, range].
  index bias(const std::string& name, std::int32_t channels, int range = 600) {
    std::vector<std::int32_t> values(static_cast<std::size_t>(channels));
    std::uniform_int_distribution<int> value(-range, range);
    for (auto& v : values) v = value(rng_);
    tensor_spec t{.name = name, .type = i32, .shape = {channels}, .data = bytes_of(values)};
    return add(std::move(t));
  }

  index int_vector(const std::string& name, std::vector<std::int32_t> values) {
    return add(int_constant(name, std::move(values)));
  }

  index op(std::int32_t code, std::vector<index> inputs, index out, fb::BuiltinOptions type = fb::BuiltinOptions_NONE,
           options_writer options = {}) {
    spec.ops.push_back({.code = code,
                        .inputs = std::move(inputs),
                        .outputs = {out},
                        .options_type = type,
                        .options = std::move(options)});
    return out;
  }

  const tensor_spec& at(index t) const { return spec.tensors[static_cast<std::size_t>(t)]; }
  const std::vector<std::int32_t>& shape(index t) const { return at(t).shape; }
  bool int8() const { return int8_; }

 private:
  index add(tensor_spec t) {
    spec.tensors.push_back(std::move(t));
    return static_cast<index>(spec.tensors.size() - 1);
  }

  bool int8_;
  std::mt19937 rng_;
};

/// TFLite BuiltinOperator codes the emitter tests use.
namespace codes {
inline constexpr std::int32_t add = 0, average_pool = 1, concatenation = 2, conv = 3, depthwise = 4,
                              fully_connected = 9, logistic = 14, max_pool = 17, mul = 18, relu = 19, reshape = 22,
                              resize_bilinear = 23, softmax = 25, pad = 34, mean = 40, sub = 41, resize_nearest = 97;
}

}  // namespace mosaiq::test::tflite_files
