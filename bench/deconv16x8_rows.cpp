// bench_deconv's `deconvolution/mosaiq/<case>_i16x8` rows (see bench/deconv.cpp): mosaiq::transpose_conv16x8 on the
// 2x2 stride-2 cases.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common.hpp"
#include "mosaiq/ops/transpose_conv.hpp"
#include "mosaiq/ops/transpose_conv16x8.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
#include "problem_16x8.hpp"

namespace mosaiq::bench {
namespace {

/// A transposed convolution's case: `<H>x<W>x<Cin>to<Cout>_k<K>s<S>_<type>` (square kernels and strides).
inline std::string deconv_case_name(shape in, int out_channels, hw kernel, hw stride, std::string_view type) {
  std::string name;
  name += std::to_string(in.height) + "x" + std::to_string(in.width) + "x" + std::to_string(in.channels);
  name += "to" + std::to_string(out_channels) + "_k" + std::to_string(kernel.h) + "s" + std::to_string(stride.h) + "_";
  name += type;
  return name;
}

/// A 16x8 transposed convolution workload (kernel == stride, no overlapping taps: one Cin-term sum per output).
template <transpose_conv_config Cfg>
struct deconv_problem_16x8 : operands_16x8 {
  shape in, out;
  /// TensorFlow's output extents with kernel == stride: input * stride.
  static constexpr shape op_shape(shape input_shape) noexcept {
    return {input_shape.height * Cfg.stride.h, input_shape.width * Cfg.stride.w, Cfg.out_channels};
  }
  explicit deconv_problem_16x8(shape input_shape)
      : operands_16x8(input_shape.elements(),
                      static_cast<std::size_t>(Cfg.out_channels) * Cfg.kernel.h * Cfg.kernel.w * input_shape.channels,
                      op_shape(input_shape).elements(), Cfg.out_channels, input_shape.channels, 7),
        in(input_shape),
        out(op_shape(input_shape)) {
    reference::transpose_conv_16x8(tensor_view<const std::int16_t>(input.data(), in), filter.data(), bias.data(),
                                   tensor_view<std::int16_t>(expected.data(), out),
                                   {.kernel = Cfg.kernel, .stride = Cfg.stride, .padding = Cfg.padding}, requant);
  }
  std::int64_t bytes() const noexcept {
    return static_cast<std::int64_t>(2 * in.elements() + filter.size() + 2 * out.elements());
  }
};

/// `deconvolution/mosaiq/<case>_i16x8`: the layer and its workspace, checked against the reference on the row's
/// first run.
template <transpose_conv_config Cfg>
void register_16x8(shape in) {
  using op_type = transpose_conv16x8<transpose_conv16x8_config{
      .out_channels = Cfg.out_channels, .kernel = Cfg.kernel, .stride = Cfg.stride, .pad = Cfg.padding}>;
  struct layer {
    op_type op;
    aligned_buffer<std::byte> workspace;
    bool uses_int32_path() const noexcept { return op.uses_int32_path(); }
  };
  const std::int64_t macs =
      static_cast<std::int64_t>(in.pixels()) * Cfg.kernel.h * Cfg.kernel.w * in.channels * Cfg.out_channels;
  register_checked_16x8_row(
      "deconvolution", deconv_case_name(in, Cfg.out_channels, Cfg.kernel, Cfg.stride, "i16x8"), macs,
      "mosaiq::transpose_conv16x8 (pointwise16x8 + depth-to-space)",
      [in] { return std::make_unique<deconv_problem_16x8<Cfg>>(in); },
      [](const deconv_problem_16x8<Cfg>& p) {
        return std::make_unique<layer>(op_type(p.filter.data(), p.bias.data(), p.in.channels, p.requant),
                                       aligned_buffer<std::byte>(op_type::workspace_bytes(p.in)));
      },
      [](layer& l, deconv_problem_16x8<Cfg>& p) {
        l.op(tensor_view<const std::int16_t>(p.input.data(), p.in), tensor_view<std::int16_t>(p.output.data(), p.out),
             l.workspace.span());
      });
}

}  // namespace

void register_deconv16x8_rows() {
  register_16x8<transpose_conv_config{.out_channels = 1}>({128, 128, 16});
  register_16x8<transpose_conv_config{.out_channels = 16}>({64, 64, 32});
}

}  // namespace mosaiq::bench
