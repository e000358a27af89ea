// The face detector on the best target the CPU runs: face_network.cpp builds the network once per
// target (mosaiq_add_multitarget), each copy exporting face_u8_net / face_i8_net entries, and
// dispatched_detector picks one when it is constructed. The post-processing (face_model.hpp) runs
// in the including unit, on the extra outputs the chosen target leaves in the arena.
#pragma once

#include <array>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "face_model.hpp"
#include "mosaiq/dispatch.hpp"

MOSAIQ_DECLARE_NETWORK_ENTRIES(face_u8_net)
MOSAIQ_DECLARE_NETWORK_ENTRIES(face_i8_net)

namespace face {

/// The per-target builds of ssd_mobilenet_v1<T> linked into this program.
template <quantized_element T>
dispatch::entry_list network_entries() noexcept {
  if constexpr (std::is_same_v<T, u8>)
    return MOSAIQ_NETWORK_ENTRIES(face_u8_net);
  else
    return MOSAIQ_NETWORK_ENTRIES(face_i8_net);
}

/// detector's twin running the dispatched network: a model file's blob is prepared in storage of
/// its own, with an arena of the chosen target's size; detect() runs a frame with no heap allocation.
template <quantized_element T>
class dispatched_detector {
 public:
  using net = ssd_mobilenet_v1<T>;  ///< for its shapes: the code that runs is the chosen target's

  /// Picks the best linked target (`entries`, by default every one linked) and prepares `file` there.
  explicit dispatched_detector(model_file file, const dispatch::entry_list& entries = network_entries<T>())
      : anchors_(std::move(file.anchors)),
        state_(state_storage(entries)),
        network_(entries),
        arena_(network_.arena_bytes(), arena_alignment) {
    if (const status s = network_.prepare(file.blob, state_.bytes); !s)
      throw std::runtime_error(std::string("face detector: ") + s.message);
  }

  const dispatched_network& network() const noexcept { return network_; }
  /// Quantization the network input expects (pixels map to x / 127.5 - 1).
  quant_params input_quant() const noexcept { return network_.input_quant(); }

  /// Runs the network on a 512x512x3 image (in the input quantization) on the executor's threads
  /// and post-processes on the caller.
  template <parallel_executor E>
  std::size_t detect(tensor_view<const T> image, const detect_options& options, std::span<detection> out, E& exec) {
    check(network_.run(image, last_head(), arena_.bytes, exec));
    return postprocess(options, out);
  }
  std::size_t detect(tensor_view<const T> image, const detect_options& options, std::span<detection> out) {
    serial_executor serial;
    return detect(image, options, out, serial);
  }

  /// Post-processing of the last run alone.
  std::size_t postprocess(const detect_options& options, std::span<detection> out) {
    static constexpr std::array<std::string_view, head_count> boxes{"box0", "box1", "box2", "box3", "box4", "box5"};
    static constexpr std::array<std::string_view, head_count - 1> classes{"cls0", "cls1", "cls2", "cls3", "cls4"};
    std::array<head_view<T>, head_count> heads{};
    for (std::size_t h = 0; h < head_count; ++h) {
      heads[h].boxes = network_.extra_output<T>(boxes[h], arena_.bytes).data();
      heads[h].box_quant = network_.extra_output_quant(boxes[h]);
      const bool last = h + 1 == head_count;  // the last class predictor is the main output
      heads[h].classes = last ? last_head_.data() : network_.extra_output<T>(classes[h], arena_.bytes).data();
      heads[h].class_quant = last ? network_.output_quant() : network_.extra_output_quant(classes[h]);
    }
    return decode_and_suppress<T>(heads, anchors_, options, scratch_, out);
  }

  /// The per-layer profile of the chosen target (mosaiq::profile) on `image`, printed to `out`.
  template <parallel_executor E>
  void profile(tensor_view<const T> image, int runs, std::FILE* out, E& exec) {
    check(network_.profile(image, last_head(), arena_.bytes, runs, out, exec));
  }

 private:
  tensor_view<T> last_head() noexcept { return tensor_view<T>(last_head_.data(), net::output_shape); }
  static aligned_bytes state_storage(const dispatch::entry_list& entries) {
    const dispatch::network_entry* entry = select_entry(entries);
    return entry ? aligned_bytes(entry->state_bytes, entry->state_alignment) : aligned_bytes(0, 1);
  }
  static void check(const status& s) {
    if (!s) throw std::runtime_error(std::string("face detector: ") + s.message);
  }

  std::vector<center_box> anchors_;
  aligned_bytes state_;  // before network_: it outlives the network, whose destructor destroys the state there
  dispatched_network network_;
  aligned_bytes arena_;
  std::array<T, std::size_t(net::output_shape.elements())> last_head_{};
  postprocess_scratch scratch_{};
};

}  // namespace face
