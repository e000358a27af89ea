// Quantized transposed convolution (TFLite TRANSPOSE_CONV with bias, u8 per-tensor / i8 per-channel), bit-exact with
// reference/transpose_conv.hpp:
//
//   mosaiq::transpose_conv<{.out_channels = 1, .kernel = {2, 2}, .stride = {2, 2}}, mosaiq::i8> up(
//       filter /*[Cout][KH][KW][Cin]*/, bias /*Cout or nullptr*/, input_channels, requant);  // load time
//   std::vector<std::byte> scratch(up.workspace_bytes(input.dims()));                    // or an arena slice
//   up(input, output, scratch);                                                          // run: no heap
//
// Stride phases. Output row oy with t = oy + pad = q * s + r (0 <= r < s) receives the taps fy = j * s + r < KH from
// input rows iy = q - j, j = 0, 1, ...: for a fixed phase r that is an ordinary stride-1 convolution of the input with
// the sub-filter rows r, r + s, ... in reverse order, and every phase reads the same input rows q - J + 1 .. q with
// J = ceil(KH / s) (a phase with fewer taps has zero rows at the far end). Columns alike. So the layer is ONE stride-1
// convolution with a J_h x J_w kernel and explicit pads, from Cin to s_h * s_w * Cout channels (channel
// (r_y * s_w + r_x) * Cout + oc, tap (a, b) = w[oc][(J_h - 1 - a) * s_h + r_y][(J_w - 1 - b) * s_w + r_x], taps past
// the kernel = the filter zero point, bias and per-channel scales repeated per phase), whose output pixel (m_y, m_x)
// is the s_h x s_w block of output pixels ((m_y + pad_h / s_h) * s_h + r_y - pad_h, ...), followed by depth-to-space
// that drops the block pixels outside the output. The convolution runs ops/conv.hpp (its patch gather and the pointwise
// GEMM's AVX-512 VNNI / AVX2 / NEON / scalar microkernels and requantization) into the workspace. Taps outside the
// input read the input zero point and taps past the kernel have weight w - filter_zp = 0, so every int32 sum equals
// the reference's scatter and the requantization is the same per element: bit-exact. The pads are constants of the
// config (TFLite's leading pad is max(k - s, 0) / 2 for SAME, 0 for VALID, whatever the input extent): before
// J - 1 - pad / s, after ceil((pad + extra) / s) with extra the VALID rows max(k - s, 0).
// kernel == stride (no two taps land on one output pixel, pads 0, J = 1) is the same with a 1x1 kernel and runs
// ops/pointwise.hpp directly. The cost: J_h * J_w * s_h * s_w taps per block where KH * KW are useful, i.e. 16 for 9
// (3x3 s2) and none wasted for 4x4 s2 and kernel == stride.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/conv.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/reference/conv_common.hpp"
#include "mosaiq/reference/transpose_conv.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// Compile-time description of one transposed convolution.
struct transpose_conv_config {
  int out_channels = 0;
  hw kernel{2, 2};
  hw stride{2, 2};
  mosaiq::padding padding = mosaiq::padding::same();
  activation act = activation::none;
  rounding round = rounding::tflite_reference;
  friend constexpr bool operator==(const transpose_conv_config&, const transpose_conv_config&) = default;
};

/// A transposed convolution specialized for Cfg; see the file comment.
template <transpose_conv_config Cfg, quantized_element T>
class transpose_conv {
  static_assert(Cfg.out_channels >= 1, "transpose_conv: out_channels must be at least 1");
  static_assert(Cfg.kernel.h >= 1 && Cfg.kernel.w >= 1 && Cfg.stride.h >= 1 && Cfg.stride.w >= 1,
                "transpose_conv: kernel and stride must be positive");
  static_assert(Cfg.padding.mode != padding_mode::explicit_pads,
                "transpose_conv: padding must be padding::same() or padding::valid() (TFLite's two modes)");

  static constexpr int kh = Cfg.kernel.h, kw = Cfg.kernel.w, sh = Cfg.stride.h, sw = Cfg.stride.w;
  static constexpr int cout = Cfg.out_channels, phases = sh * sw;
  static constexpr reference::transpose_conv_params params{
      .kernel = Cfg.kernel, .stride = Cfg.stride, .padding = Cfg.padding};
  /// TFLite's leading pads; the same for every input extent (see the file comment).
  static constexpr hw lead =
      reference::transpose_conv_pads({reference::transpose_conv_output_extent(1, kh, sh, Cfg.padding.mode),
                                      reference::transpose_conv_output_extent(1, kw, sw, Cfg.padding.mode), cout},
                                     params);

  /// One axis of the phase convolution: its taps J, its pads, and the block of its first output pixel.
  struct phase_axis {
    int taps, before, after, first_block;
  };
  static constexpr phase_axis axis_of(int k, int s, int pad) noexcept {
    const int taps = (k + s - 1) / s;
    const int extra = Cfg.padding.mode == padding_mode::valid ? std::max(k - s, 0) : 0;
    return {taps, taps - 1 - pad / s, (pad + extra + s - 1) / s, pad / s};
  }
  static constexpr phase_axis ay = axis_of(kh, sh, lead.h), ax = axis_of(kw, sw, lead.w);
  static_assert(ay.before >= 0 && ax.before >= 0, "transpose_conv: the leading pad exceeds the phase kernel");

 public:
  static constexpr transpose_conv_config config = Cfg;
  /// kernel == stride: the phase convolution has a 1x1 kernel and runs as ops/pointwise.hpp's GEMM.
  static constexpr bool is_pointwise = Cfg.kernel == Cfg.stride;
  /// The convolution to s_h * s_w * Cout channels whose output pixels are blocks of output pixels.
  using gemm = std::conditional_t<
      is_pointwise, pointwise<pointwise_config{.out_channels = phases * cout, .act = Cfg.act, .round = Cfg.round}, T>,
      conv2d<conv2d_config{.out_channels = phases * cout,
                           .kernel = {ay.taps, ax.taps},
                           .stride = {1, 1},
                           .pad = padding::explicit_pads(ay.before, ay.after, ax.before, ax.after),
                           .act = Cfg.act,
                           .round = Cfg.round},
             T>>;

  /// `filter` [Cout][KH][KW][Cin] (TFLite layout), `bias` Cout entries or nullptr, `q` built by
  /// reference::make_conv_requant for Cfg.round and T (its clamp is the fused activation). Misuse is reported and the
  /// layer refuses to run.
  transpose_conv(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    if (!require(filter != nullptr && input_channels >= 1, errc::invalid_argument,
                 "transpose_conv: need a filter and at least one input channel") ||
        !reference::check_conv_requant<Cfg.round, T>(q, cout))
      return;
    channels_ = input_channels;
    load(filter, bias, q);
    ready_ = true;
  }

  bool valid() const noexcept { return ready_; }
  int input_channels() const noexcept { return channels_; }

  /// TensorFlow's output extents: SAME in * s, VALID in * s + max(k - s, 0).
  static constexpr shape output_shape(shape in) noexcept {
    return {reference::transpose_conv_output_extent(in.height, kh, sh, Cfg.padding.mode),
            reference::transpose_conv_output_extent(in.width, kw, sw, Cfg.padding.mode), cout};
  }

  /// Scratch bytes a run on `in` needs: the convolution's workspace and its s_h * s_w * Cout channels of one image.
  static constexpr std::size_t workspace_bytes(shape in) noexcept {
    return gemm::workspace_bytes(in) +
           gemm::output_shape(in).pixels() * static_cast<std::size_t>(phases * cout) * sizeof(T);
  }

  /// Runs on every image of the batch; views may have any pixel strides. Misuse is reported through
  /// mosaiq::require and leaves `out` untouched.
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<const T, InExtents> in, tensor_view<T, OutExtents> out,
                  std::span<std::byte> workspace) const {
    run(tensor_view<const T>(in), tensor_view<T>(out), workspace);
  }
  template <class InExtents, class OutExtents>
  void operator()(tensor_view<T, InExtents> in, tensor_view<T, OutExtents> out, std::span<std::byte> workspace) const {
    run(tensor_view<const T>(in), tensor_view<T>(out), workspace);
  }

 private:
  void run(tensor_view<const T> in, tensor_view<T> out, std::span<std::byte> workspace) const {
    if (!require(ready_, errc::invalid_argument, "transpose_conv: layer was not loaded (construction failed)") ||
        !check_view(in, "transpose_conv: invalid input view") ||
        !check_view(out, "transpose_conv: invalid output view"))
      return;
    if (!require(in.channels() == channels_, errc::shape_mismatch,
                 "transpose_conv: input channels differ from the weights") ||
        !require(out.dims() == output_shape(in.dims()) && out.batch() == in.batch(), errc::shape_mismatch,
                 "transpose_conv: output extents differ from output_shape(input)") ||
        !require(workspace.size() >= workspace_bytes(in.dims()), errc::invalid_argument,
                 "transpose_conv: workspace smaller than workspace_bytes(input)"))
      return;
    for (int n = 0; n < in.batch(); ++n) {
      const tensor_view<const T> image(in.pixel(n, 0, 0), in.dims(), 1, in.pixel_stride());
      const tensor_view<T> result(out.pixel(n, 0, 0), out.dims(), 1, out.pixel_stride());
      run_image(image, result, workspace);
    }
  }

  /// The phase convolution's filter, biases and per-channel scales (see the file comment), loaded into gemm_.
  void load(const T* filter, const std::int32_t* bias, const reference::conv_requant& q) {
    const auto cin = static_cast<std::size_t>(channels_);
    constexpr int jh = ay.taps, jw = ax.taps;
    detail::vector<T> rows(static_cast<std::size_t>(phases * cout * jh * jw) * cin,
                           static_cast<T>(q.filter_zero_point));
    detail::vector<std::int32_t> biases(static_cast<std::size_t>(phases * cout), 0);
    reference::conv_requant repeated = q;
    if (q.scales.size() > 1) repeated.scales.clear();
    for (int phase = 0; phase < phases; ++phase)
      for (int oc = 0; oc < cout; ++oc) {
        const int row = phase * cout + oc, ry = phase / sw, rx = phase % sw;
        if (bias != nullptr) biases[static_cast<std::size_t>(row)] = bias[oc];
        if (q.scales.size() > 1) repeated.scales.push_back(q.scales[static_cast<std::size_t>(oc)]);
        for (int a = 0; a < jh; ++a)
          for (int b = 0; b < jw; ++b) {
            const int fy = (jh - 1 - a) * sh + ry, fx = (jw - 1 - b) * sw + rx;
            if (fy >= kh || fx >= kw) continue;  // past the kernel: the filter zero point, weight 0
            std::memcpy(rows.data() + static_cast<std::size_t>((row * jh + a) * jw + b) * cin,
                        filter + static_cast<std::size_t>((oc * kh + fy) * kw + fx) * cin, cin * sizeof(T));
          }
      }
    gemm_.emplace_back(rows.data(), biases.data(), channels_, repeated);
  }

  /// The phase convolution into the workspace, then depth-to-space: channels (r_y * s_w + r_x) * Cout of block
  /// (m_y, m_x) go to output pixel ((m_y + first_block_h) * s_h + r_y - pad_h, ...) when that is inside the output.
  void run_image(const tensor_view<const T>& in, const tensor_view<T>& out, std::span<std::byte> workspace) const {
    const std::size_t gemm_bytes = gemm::workspace_bytes(in.dims());
    const tensor_view<T> staged(reinterpret_cast<T*>(workspace.data() + gemm_bytes), gemm::output_shape(in.dims()));
    gemm_.front()(in, staged, workspace.first(gemm_bytes));
    const int blocks = staged.width(), width = out.width();
    // Blocks whose s_w pixels all lie inside an output row: ox = (bx + first_block) * s_w - pad_w in [0, width - s_w].
    const int inner_first = std::min(blocks, (lead.w + sw - 1) / sw - ax.first_block);
    const int inner_last = std::clamp((width - sw + lead.w) / sw - ax.first_block + 1, inner_first, blocks);
    for (int by = 0; by < staged.height(); ++by) {
      const int oy = (by + ay.first_block) * sh - lead.h;  // of the block's row r_y = 0
      const int ry_first = std::max(0, -oy), ry_last = std::min(sh, out.height() - oy);
      if (ry_first >= ry_last) continue;
      for (int ry = ry_first; ry < ry_last; ++ry) {  // blocks with pixels outside the row: each pixel checked
        const auto edge = [&](int bx) {
          const int ox = (bx + ax.first_block) * sw - lead.w;
          const T* source = staged.pixel(0, by, bx) + ry * sw * cout;
          for (int rx = std::max(0, -ox); rx < std::min(sw, width - ox); ++rx)
            std::memcpy(out.pixel(0, oy + ry, ox + rx), source + rx * cout, cout * sizeof(T));
        };
        for (int bx = 0; bx < inner_first; ++bx) edge(bx);
        for (int bx = inner_last; bx < blocks; ++bx) edge(bx);
      }
      const T* source = staged.pixel(0, by, inner_first);
      T* target = out.pixel(0, oy + ry_first, (inner_first + ax.first_block) * sw - lead.w);
      const int count = inner_last - inner_first;
      if (!out.is_dense())
        copy_blocks<false, false>(source, target, count, out, ry_first, ry_last);
      else if (ry_first == 0 && ry_last == sh)
        copy_blocks<true, true>(source, target, count, out, 0, sh);
      else
        copy_blocks<true, false>(source, target, count, out, ry_first, ry_last);
    }
  }

  /// Rows [ry_first, ry_last) of `count` staged blocks from `source` to output pixels from `target` (row ry_first),
  /// s_w pixels per block and row; Dense: one copy per block and row, Full: all s_h rows (a compile-time count).
  template <bool Dense, bool Full>
  static void copy_blocks(const T* source, T* target, int count, const tensor_view<T>& out, int ry_first,
                          int ry_last) noexcept {
    const std::ptrdiff_t step = Dense ? cout : out.pixel_stride(), row_step = out.row_stride();
    const int first = Full ? 0 : ry_first, last = Full ? sh : ry_last;
    for (int bx = 0; bx < count; ++bx)
      for (int ry = first; ry < last; ++ry) {
        const T* from = source + bx * phases * cout + ry * sw * cout;
        T* to = target + (ry - first) * row_step + bx * sw * step;
        if constexpr (Dense) {
          std::memcpy(to, from, sw * cout * sizeof(T));
        } else {
          for (int rx = 0; rx < sw; ++rx) std::memcpy(to + rx * step, from + rx * cout, cout * sizeof(T));
        }
      }
  }

  int channels_ = 0;
  bool ready_ = false;
  detail::vector<gemm> gemm_;  // one, built at load (pointwise and conv2d have no empty state)
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
