// bench_conv's `conv2d/mosaiq/<case>_i16x8` rows (see bench/conv.cpp): mosaiq::conv2d16x8 on the selfie stems.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common.hpp"
#include "mosaiq/ops/conv16x8.hpp"
#include "problem_16x8.hpp"

namespace mosaiq::bench {
namespace {

/// `conv2d/mosaiq/<case>_i16x8`: the layer and its workspace, checked against the reference on the row's first run.
template <int Height, int Width>
void register_16x8_case(std::uint32_t seed) {
  using op_type = conv2d16x8<conv2d16x8_config{.out_channels = 16, .kernel = {3, 3}, .stride = {2, 2}}>;
  struct layer {
    op_type op;
    aligned_buffer<std::byte> workspace;
    bool uses_int32_path() const noexcept { return op.uses_int32_path(); }
  };
  const conv_shape shape = conv_shape::dense(Height, Width, 3, 16, {3, 3}, {2, 2});
  register_checked_16x8_row(
      "conv2d", case_name_16x8(shape), shape.macs(), "mosaiq::conv2d16x8 (im2col + pointwise16x8)",
      [shape, seed] { return std::make_unique<problem_16x8>(shape, seed); },
      [](const problem_16x8& p) {
        return std::make_unique<layer>(op_type(p.filter.data(), p.bias.data(), 3, p.requant),
                                       aligned_buffer<std::byte>(op_type::workspace_bytes(p.shape.input_shape())));
      },
      [](layer& l, problem_16x8& p) { l.op(p.input_view(), p.output_view(p.output), l.workspace.span()); });
}

}  // namespace

/// The selfie stems, 256x256x3 and 144x256x3 to 16 (3x3 stride 2), in 16x8.
void register_conv16x8_rows(std::uint32_t& seed) {
  register_16x8_case<256, 256>(seed++);
  register_16x8_case<144, 256>(seed++);
}

}  // namespace mosaiq::bench
