// Float weights files: a network's float twin weights (tools/float_network.hpp), as mosaiq-import writes them for a
// float TFLite model and the calibrator mosaiq_add_model generates reads them. Layout, native byte order:
//   "MOSAIQFW", uint32 version (1), uint32 byte order (0x01020304), uint32 layer count, int32 input H, W, C;
//   per layer: uint32 kind length, the kind ("conv2d", "tap", ...), int32 output H, W, C, uint64 filter values,
//   uint64 bias values (0 and 0 for layers without float weights);
//   then per layer its filter values, then its bias values, float32.
// The header is what the network type computes from its layers, so a file for another layer list, shape or
// weight size is refused (errc::blob_mismatch) before any value is read.
//
//   auto fw = std::make_unique<mosaiq::tools::float_weights<net>>();
//   mosaiq::tools::load_float_weights<net>(bytes, *fw);
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "mosaiq/core/error.hpp"
#include "mosaiq/simd/target.hpp"
#include "mosaiq/tools/float_network.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools {

namespace detail {

struct float_blob_writer {
  std::vector<std::byte>& out;
  void put(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const std::byte*>(data);
    out.insert(out.end(), p, p + bytes);
  }
  template <class V>
  void value(V v) {
    put(&v, sizeof v);
  }
};

/// Filter and bias value counts of layer I's float weights (0, 0 for layers without).
template <class Net, std::size_t I>
constexpr std::pair<std::uint64_t, std::uint64_t> float_weight_counts() {
  using W = mosaiq::detail::element_type<I, decltype(float_weights<Net>::layers)>;
  if constexpr (std::is_same_v<W, no_float_weights>)
    return {0, 0};
  else
    return {W::filter_elements, W::output_channels};
}

/// The header Net's float weights file must start with.
template <class Net>
std::vector<std::byte> float_blob_header() {
  std::vector<std::byte> header;
  float_blob_writer out{header};
  const char magic[8] = {'M', 'O', 'S', 'A', 'I', 'Q', 'F', 'W'};
  out.put(magic, sizeof magic);
  for (const std::uint32_t v : {std::uint32_t{1}, std::uint32_t{0x01020304}, std::uint32_t(Net::layer_count)})
    out.value(v);
  const auto put_shape = [&](shape s) {
    for (const std::int32_t v : {s.height, s.width, s.channels}) out.value(v);
  };
  put_shape(Net::input_shape);
  mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          constexpr std::string_view kind = Net::template layer<I>::kind;
          out.value(static_cast<std::uint32_t>(kind.size()));
          out.put(kind.data(), kind.size());
          put_shape(Net::layer_shapes[I]);
          constexpr auto counts = float_weight_counts<Net, I>();
          out.value(counts.first);
          out.value(counts.second);
        }(),
        ...);
  });
  return header;
}

/// Every layer's filter then bias, in order: `visit(values, size the layer gives them)` on each float vector.
template <class Weights, class Visit>
void for_each_float_vector(Weights& w, Visit visit) {
  mosaiq::detail::for_each_element(w.layers, [&]<class L>(L& l) {
    using plain = std::remove_const_t<L>;
    if constexpr (!std::is_same_v<plain, no_float_weights>) {
      visit(l.filter, plain::filter_elements);
      visit(l.bias, plain::output_channels);
    }
  });
}

}  // namespace detail

/// The float weights file of `w` (the layout above).
/// Empty (reported) when a filter or bias was resized away from its layer's size.
template <class Net>
std::vector<std::byte> save_float_weights(const float_weights<Net>& w) {
  bool sizes_ok = true;
  detail::for_each_float_vector(w, [&](const std::vector<float>& v, std::size_t n) { sizes_ok &= v.size() == n; });
  if (!require(sizes_ok, errc::shape_mismatch,
               "save_float_weights: a filter or bias has another size than its layer's"))
    return {};
  std::vector<std::byte> blob = detail::float_blob_header<Net>();
  detail::float_blob_writer out{blob};
  detail::for_each_float_vector(
      w, [&](const std::vector<float>& v, std::size_t) { out.put(v.data(), v.size() * sizeof(float)); });
  return blob;
}

/// Reads a float weights file for Net into `w`. A file for another network (header or size) is reported as
/// errc::blob_mismatch and leaves `w` untouched.
template <class Net>
bool load_float_weights(std::span<const std::byte> blob, float_weights<Net>& w) {
  const std::vector<std::byte> header = detail::float_blob_header<Net>();
  std::size_t values = 0;
  detail::for_each_float_vector(w, [&](const std::vector<float>&, std::size_t n) { values += n; });
  if (!require(blob.size() == header.size() + values * sizeof(float), errc::blob_mismatch,
               "load_float_weights: the file size differs from this network's float weights") ||
      !require(std::memcmp(blob.data(), header.data(), header.size()) == 0, errc::blob_mismatch,
               "load_float_weights: the file names another layer list, shape or weight size"))
    return false;
  std::size_t position = header.size();
  detail::for_each_float_vector(w, [&](std::vector<float>& v, std::size_t n) {
    v.resize(n);
    std::memcpy(v.data(), blob.data() + position, n * sizeof(float));
    position += v.size() * sizeof(float);
  });
  return true;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::tools
