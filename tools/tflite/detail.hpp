// Shared by the reader's and the graph's sources (not installed, not part of the public headers).
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mosaiq/tflite/model.hpp"

namespace mosaiq::tflite {
namespace schema {
struct Operator;
}
namespace detail {

/// Thrown inside the importer, caught at its public functions and turned into a failed result.
struct import_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream message;
  (message << ... << parts);
  throw import_error(message.str());
}

/// "[1,256,256,3]".
std::string shape_string(const std::vector<std::int32_t>& shape);

/// The number of elements of a shape; fails (naming `where`) past 2^40 so that byte counts never overflow.
std::uint64_t element_count(const std::vector<std::int32_t>& shape, const std::string& where);

/// "operator 7 (CONV_2D; inputs: 'x' [1,8,8,3], 'w' [4,3,3,3]; outputs: 'y' [1,8,8,4])".
std::string describe_operator(std::size_t index, const std::string& op_name, const operation& op,
                              const subgraph& graph);

/// Checks an operator's code, arity and builtin options and stores the options into `op` (inputs and outputs are
/// read and range-checked already).
void read_operation(const schema::Operator& source, const operator_code& code, std::size_t index, const subgraph& graph,
                    operation& op);

}  // namespace detail
}  // namespace mosaiq::tflite
