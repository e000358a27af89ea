// Quantized transposed convolution (TFLite TRANSPOSE_CONV with bias, u8 per-tensor / i8 per-channel), bit-exact with
// reference/transpose_conv.hpp:
//
//   mosaiq::transpose_conv<{.out_channels = 1, .kernel = {2, 2}, .stride = {2, 2}}, mosaiq::i8> up(
//       filter /*[Cout][KH][KW][Cin]*/, bias /*Cout or nullptr*/, input_channels, requant);  // load time
//   std::vector<std::byte> scratch(up.workspace_bytes(input.dims()));                    // or an arena slice
//   up(input, output, scratch);                                                          // run: no heap
//
// Two paths, chosen at compile time from the config:
// - kernel == stride (no two taps land on one output pixel; the pads are 0 for SAME and VALID): every input pixel
//   owns one KH x KW block of output pixels, so the layer is a 1x1 convolution to KH * KW * Cout channels (filter row
//   (fy * KW + fx) * Cout + oc is w[oc][fy][fx], bias and per-channel scales repeated per tap) followed by
//   depth-to-space. It runs ops/pointwise.hpp's GEMM (its AVX-512 VNNI / AVX2 / NEON / scalar microkernels and
//   requantization) into the workspace, then copies each tap's Cout channels to its output pixel.
// - overlapping kernels (kernel > stride): output pixel by output pixel, the taps that land on it are gathered (input
//   rows iy with fy = oy + pad - iy * s in [0, KH), columns alike), each adding (x - input_zp) * (w - filter_zp) over
//   its input channels into Cout int32 accumulators, then the reference requantization per element. AVX2 packs the
//   filter as int16 [KH][KW][Cin/2][Cout rounded to 8][2] and multiplies pairs of input channels with vpmaddwd into
//   8 output channels per register; other targets pack [KH][KW][Cin][Cout] and leave the inner loop over contiguous
//   output channels to the compiler's vectorizer. int32 sums are exact, so the gather equals the reference's scatter.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "mosaiq/core/activation.hpp"
#include "mosaiq/core/allocator.hpp"
#include "mosaiq/core/error.hpp"
#include "mosaiq/core/padding.hpp"
#include "mosaiq/core/quant.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/core/types.hpp"
#include "mosaiq/ops/pointwise.hpp"
#include "mosaiq/ops/transpose_conv/path.hpp"
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

  static constexpr int kh = Cfg.kernel.h, kw = Cfg.kernel.w, cout = Cfg.out_channels;
  static constexpr int taps = kh * kw;
  static constexpr reference::transpose_conv_params params{
      .kernel = Cfg.kernel, .stride = Cfg.stride, .padding = Cfg.padding};

 public:
  static constexpr transpose_conv_config config = Cfg;
  /// kernel == stride: the pointwise GEMM to KH * KW * Cout channels plus depth-to-space.
  static constexpr bool depth_to_space = Cfg.kernel == Cfg.stride;
  using gemm = pointwise<pointwise_config{.out_channels = taps * cout, .act = Cfg.act, .round = Cfg.round}, T>;

  /// `filter` [Cout][KH][KW][Cin] (TFLite layout), `bias` Cout entries or nullptr, `q` built by
  /// reference::make_conv_requant for Cfg.round and T (its clamp is the fused activation). Misuse is reported and the
  /// layer refuses to run.
  transpose_conv(const T* filter, const std::int32_t* bias, int input_channels, const reference::conv_requant& q) {
    if (!require(filter != nullptr && input_channels >= 1, errc::invalid_argument,
                 "transpose_conv: need a filter and at least one input channel") ||
        !reference::check_conv_requant<Cfg.round, T>(q, cout))
      return;
    channels_ = input_channels;
    if constexpr (depth_to_space)
      load_gemm(filter, bias, q);
    else
      load_gather(filter, bias, q);
    ready_ = true;
  }

  bool valid() const noexcept { return ready_; }
  int input_channels() const noexcept { return channels_; }

  /// TensorFlow's output extents: SAME in * s, VALID in * s + max(k - s, 0).
  static constexpr shape output_shape(shape in) noexcept {
    return {reference::transpose_conv_output_extent(in.height, kh, Cfg.stride.h, Cfg.padding.mode),
            reference::transpose_conv_output_extent(in.width, kw, Cfg.stride.w, Cfg.padding.mode), cout};
  }

  /// Scratch bytes a run on `in` needs: the GEMM's workspace and its KH * KW * Cout channels of one image.
  static constexpr std::size_t workspace_bytes(shape in) noexcept {
    if constexpr (depth_to_space)
      return gemm::workspace_bytes(in) + in.pixels() * static_cast<std::size_t>(taps * cout) * sizeof(T);
    return 0;
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
      if constexpr (depth_to_space)
        run_gemm(image, result, workspace);
      else
        run_gather(image, result);
    }
  }

  // --- kernel == stride ---

  void load_gemm(const T* filter, const std::int32_t* bias, const reference::conv_requant& q) {
    const auto cin = static_cast<std::size_t>(channels_);
    detail::vector<T> rows(static_cast<std::size_t>(taps * cout) * cin);
    detail::vector<std::int32_t> biases(static_cast<std::size_t>(taps * cout), 0);
    reference::conv_requant repeated = q;
    if (q.scales.size() > 1) repeated.scales.clear();
    for (int tap = 0; tap < taps; ++tap)
      for (int oc = 0; oc < cout; ++oc) {
        const auto row = static_cast<std::size_t>(tap * cout + oc);
        std::memcpy(rows.data() + row * cin, filter + (static_cast<std::size_t>(oc) * taps + tap) * cin, cin);
        if (bias != nullptr) biases[row] = bias[oc];
        if (q.scales.size() > 1) repeated.scales.push_back(q.scales[static_cast<std::size_t>(oc)]);
      }
    gemm_.emplace_back(rows.data(), biases.data(), channels_, repeated);
  }

  void run_gemm(const tensor_view<const T>& in, const tensor_view<T>& out, std::span<std::byte> workspace) const {
    const std::size_t gemm_bytes = gemm::workspace_bytes(in.dims());
    T* blocks = reinterpret_cast<T*>(workspace.data() + gemm_bytes);
    const tensor_view<T> staged(blocks, gemm::output_shape(in.dims()));
    gemm_.front()(in, staged, workspace.first(gemm_bytes));
    // Depth-to-space: tap (fy, fx) of input pixel (iy, ix) goes to output pixel (iy * KH + fy, ix * KW + fx).
    constexpr std::size_t tap_bytes = cout * sizeof(T);
    for (int iy = 0; iy < in.height(); ++iy)
      for (int ix = 0; ix < in.width(); ++ix) {
        const T* source = staged.pixel(0, iy, ix);
        for (int fy = 0; fy < kh; ++fy) {
          if (out.is_dense()) {
            std::memcpy(out.pixel(0, iy * kh + fy, ix * kw), source + fy * kw * cout, kw * tap_bytes);
            continue;
          }
          for (int fx = 0; fx < kw; ++fx)
            std::memcpy(out.pixel(0, iy * kh + fy, ix * kw + fx), source + (fy * kw + fx) * cout, tap_bytes);
        }
      }
  }

  // --- overlapping kernels ---

  /// The input indices i (first..last, inclusive) whose taps f = o + pad - i * stride fall in [0, kernel).
  struct tap_range {
    int first, last;
  };
  static constexpr tap_range taps_onto(int o, int pad, int stride, int kernel, int input_extent) noexcept {
    const int high = o + pad, low = high - kernel + 1;  // i * stride in [low, high]; high >= 0
    const int first = low <= 0 ? 0 : (low + stride - 1) / stride;
    return {first, std::min(high / stride, input_extent - 1)};
  }

  void load_gather(const T* filter, const std::int32_t* bias, const reference::conv_requant& q) {
    const auto cin = static_cast<std::size_t>(channels_);
    packed_.assign(static_cast<std::size_t>(taps) * cin * cout, 0);
    for (int oc = 0; oc < cout; ++oc)
      for (int tap = 0; tap < taps; ++tap)
        for (std::size_t ic = 0; ic < cin; ++ic)
          packed_[(static_cast<std::size_t>(tap) * cin + ic) * cout + static_cast<std::size_t>(oc)] =
              static_cast<std::int16_t>(filter[(static_cast<std::size_t>(oc) * taps + tap) * cin + ic] -
                                        q.filter_zero_point);
    for (int oc = 0; oc < cout; ++oc) bias_[static_cast<std::size_t>(oc)] = bias != nullptr ? bias[oc] : 0;
    requant_ = q;
    if constexpr (path::packs_pairs) pack_pairs();
  }

  // The gather's path (ops/transpose_conv/path.hpp); the members below that differ per path are defined out of class
  // in ops/transpose_conv/scalar.hpp (gather_path) and ops/transpose_conv/avx2.hpp (pairs_path).
  using path = kernels::tconv::native_path;
  using lane = typename path::lane;
  static constexpr int lane_blocks = (cout + 7) / 8;  // pairs_path: 8 output channels per register

  /// pairs_path: packed_ regrouped as [tap][input channel pair][Cout rounded to 8][2] (missing channels: 0).
  void pack_pairs();
  /// pairs_path: acc += (x - input_zp) * w for one input pixel and one tap's pair block, two input channels per
  /// vpmaddwd.
  void accumulate_pairs(const T* x, const std::int16_t* w, lane (&acc)[lane_blocks]) const noexcept;
  /// Every tap landing on output pixel (oy, ox), summed into `sums` (Cout entries, bias included).
  void gather_pixel(const tensor_view<const T>& in, int oy, int ox, hw pad, std::array<std::int32_t, cout>& sums) const;

  /// acc += (x - input_zp) * w over one input pixel's channels, w one tap's [Cin][Cout] block.
  void accumulate(const T* x, const std::int16_t* w, std::array<std::int32_t, cout>& acc) const noexcept {
    for (int ic = 0; ic < channels_; ++ic) {
      const std::int32_t value = std::int32_t{x[ic]} - requant_.input_zero_point;
      const std::int16_t* row = w + static_cast<std::ptrdiff_t>(ic) * cout;
      for (int oc = 0; oc < cout; ++oc) acc[static_cast<std::size_t>(oc)] += value * row[oc];
    }
  }

  void run_gather(const tensor_view<const T>& in, const tensor_view<T>& out) const {
    const hw pad = reference::transpose_conv_pads(out.dims(), params);
    std::array<std::int32_t, cout> acc;
    for (int oy = 0; oy < out.height(); ++oy)
      for (int ox = 0; ox < out.width(); ++ox) {
        gather_pixel(in, oy, ox, pad, acc);
        T* result = out.pixel(0, oy, ox);
        for (int oc = 0; oc < cout; ++oc)
          result[oc] = requantize<Cfg.round, T>(acc[static_cast<std::size_t>(oc)], requant_.scale_for(oc),
                                                requant_.output_zero_point, requant_.clamp.min, requant_.clamp.max);
      }
  }

  int channels_ = 0;
  bool ready_ = false;
  detail::vector<gemm> gemm_;  // one, when depth_to_space (built at load; pointwise has no empty state)
  detail::vector<std::int16_t> packed_;
  [[no_unique_address]] typename path::pairs_type pairs_;  // pairs_path: the filter as pair blocks
  std::array<std::int32_t, cout> bias_{};
  reference::conv_requant requant_;
};

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE

#include "mosaiq/ops/transpose_conv/avx2.hpp"
#include "mosaiq/ops/transpose_conv/scalar.hpp"
