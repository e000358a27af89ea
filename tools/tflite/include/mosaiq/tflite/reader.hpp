// The importer's first stage: a .tflite file's bytes -> mosaiq::tflite::model. Every buffer goes through the
// flatbuffers verifier before any field is read; bad input (truncated or corrupt bytes, unsupported ops, types or
// options, indices out of range, constants whose size does not match their shape) is a failed result whose message
// names what is wrong and where, never a crash.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mosaiq/tflite/model.hpp"

namespace mosaiq::tflite {

/// Reads a model from its bytes, which must stay alive while the model is used (buffers are views into them) and
/// start at an 8-byte aligned address (std::vector's storage does).
result<model> read_model(std::span<const std::uint8_t> bytes);

/// The bytes of a file, for read_model.
result<std::vector<std::uint8_t>> read_file(const std::string& path);

}  // namespace mosaiq::tflite
