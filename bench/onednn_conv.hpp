// oneDNN baseline: a forward-inference convolution_forward per workload, NHWC activations
// (u8 or s8), s8 weights in whatever blocked layout oneDNN prefers (format any, reordered once),
// s32 bias, output scales (per tensor for u8, per output channel for i8) and src/dst zero points.
// Depthwise is a grouped convolution with groups = C. oneDNN has no weight zero point, so the u8
// workload's filter is handed over as `filter - zero point`, which conv_problem keeps inside int8.
// oneDNN rounds the float-scaled accumulator to nearest even, TFLite's reference rounds in fixed
// point: outputs may differ by one step.
//
// On a CPU without VNNI (AVX2, AVX-512 before VNNI) oneDNN's int8 kernels compute something else
// (docs/decisions.md, "Benchmarks' baseline checks"): for an s8 source its weight reorder halves the
// weights (rne(w / 2), scales doubled) so that vpmaddubsw cannot saturate, and for a u8 source its
// dense kernels add pairs of u8 x s8 products in saturating int16. Its depthwise kernel widens to
// 16 bits (vpmaddwd) and is exact for a u8 source, so the i8 depthwise workload is handed over as
// u8 (input + 128 once at setup, zero point + 128): the same computation. The dense rows on such a
// CPU are refused with that reason.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.hpp"

namespace mosaiq::bench::onednn {

inline const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// oneDNN's weight dimensions: goihw [G][M][1][KH][KW] for depthwise, oihw [Cout][Cin][KH][KW] for dense.
inline dnnl::memory::dims weight_dims(const conv_shape& s) {
  return s.is_depthwise() ? dnnl::memory::dims{s.groups(), s.group_output_channels(), 1, s.kernel.h, s.kernel.w}
                          : dnnl::memory::dims{s.output_channels, s.input_channels, s.kernel.h, s.kernel.w};
}

/// The filter in oneDNN's plain layout (weight_dims), minus the filter zero point.
template <quantized_element T>
std::vector<std::int8_t> plain_filter(const conv_problem<T>& p) {
  const conv_shape& s = p.shape;
  const int kh = s.kernel.h, kw = s.kernel.w, cin = s.group_input_channels(), cout = s.output_channels;
  std::vector<std::int8_t> plain(s.filter_elements());
  for (int oc = 0; oc < cout; ++oc)
    for (int ic = 0; ic < cin; ++ic)
      for (int y = 0; y < kh; ++y)
        for (int x = 0; x < kw; ++x) {
          // TFLite: depthwise [KH][KW][C*M], dense [Cout][KH][KW][Cin].
          const std::size_t from = s.is_depthwise() ? static_cast<std::size_t>((y * kw + x) * cout + oc)
                                                    : static_cast<std::size_t>(((oc * kh + y) * kw + x) * cin + ic);
          const std::size_t to = static_cast<std::size_t>(((oc * cin + ic) * kh + y) * kw + x);
          plain[to] = static_cast<std::int8_t>(static_cast<int>(p.filter.data()[from]) - p.filter_zero_point);
        }
  return plain;
}

/// Whether oneDNN's int8 kernels on this CPU multiply bytes with VNNI (vpdpbusd), i.e. exactly.
inline bool cpu_has_vnni() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto includes = [isa](dnnl::cpu_isa level) {
    const auto bits = static_cast<unsigned>(level);
    return (isa & bits) == bits;
  };
  return includes(dnnl::cpu_isa::avx512_core_vnni) || includes(dnnl::cpu_isa::avx2_vnni);
}

/// Whether the primitive's weight reorder scales the weights (s8 source without VNNI: by 0.5).
inline bool adjusts_weights(const dnnl::convolution_forward::primitive_desc& pd) {
  const dnnl_memory_extra_desc_t& extra = pd.weights_desc().data.extra;
  return (extra.flags & dnnl_memory_extra_flag_scale_adjust) != 0 && extra.scale_adjust != 1.0f;
}

/// What the primitive computes differently from the workload, or empty: printed when its output is refused.
inline std::string known_difference(const dnnl::convolution_forward::primitive_desc& pd, bool depthwise) {
  if (adjusts_weights(pd)) {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%g", static_cast<double>(pd.weights_desc().data.extra.scale_adjust));
    return "oneDNN without VNNI scales s8-source weights by " + std::string(scale) +
           " (weight scale_adjust: rne(w / 2), output scales doubled), so odd weights lose their low bit";
  }
  const std::string impl = pd.impl_info_str();
  if (!depthwise && !cpu_has_vnni() && !impl.starts_with("ref"))
    return "oneDNN without VNNI (" + impl + ") adds u8 x s8 products in pairs saturated to int16 (vpmaddubsw)";
  return {};
}

/// The convolution primitive for the workload, its source handed over as `source` with `source_zero_point`.
template <quantized_element T>
dnnl::convolution_forward::primitive_desc primitive(const conv_problem<T>& p, dnnl::memory::data_type source,
                                                    std::int32_t source_zero_point) {
  using dnnl::memory;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  const conv_shape& s = p.shape;
  const mosaiq::shape out = s.output_shape();
  const window_geometry g = s.geometry();
  const dt dst = std::same_as<T, u8> ? dt::u8 : dt::s8;

  const memory::desc src_md({1, s.input_channels, s.height, s.width}, source, tag::nhwc);
  const memory::desc dst_md({1, s.output_channels, out.height, out.width}, dst, tag::nhwc);
  const memory::desc wei_any(weight_dims(s), dt::s8, tag::any), bias_md({s.output_channels}, dt::s32, tag::x);
  // oneDNN counts dilation from 0 (0 = dense kernel).
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                             src_md, wei_any, bias_md, dst_md, {s.stride.h, s.stride.w},
                                             {s.dilation.h - 1, s.dilation.w - 1}, {g.y.pad_before, g.x.pad_before},
                                             {g.y.pad_after, g.x.pad_after});

  dnnl::primitive_attr attr;
  std::vector<float> scales;
  for (const float filter_scale : p.filter_scales) scales.push_back(p.input_q.scale * filter_scale / p.output_q.scale);
  attr.set_output_scales(scales.size() == 1 ? 0 : 1 << 1, scales);  // bit 1: the channel axis of dst
  attr.set_zero_points(DNNL_ARG_SRC, 0, {source_zero_point});
  attr.set_zero_points(DNNL_ARG_DST, 0, {p.output_q.zero_point});
  return {desc, attr, cpu_engine()};
}

template <quantized_element T>
conv_runner<T> make_conv(const conv_problem<T>& p) {
  using dnnl::memory;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  const conv_shape& s = p.shape;
  const dnnl::engine& engine = cpu_engine();

  constexpr bool is_i8 = std::same_as<T, i8>;
  dnnl::convolution_forward::primitive_desc pd = primitive(p, is_i8 ? dt::s8 : dt::u8, p.input_q.zero_point);
  // x - zp == (x + 128) - (zp + 128): the u8 source is the same workload without the halved weights.
  const bool u8_source = is_i8 && s.is_depthwise() && adjusts_weights(pd);
  if (u8_source) pd = primitive(p, dt::u8, p.input_q.zero_point + 128);

  struct state {
    dnnl::stream stream;
    dnnl::convolution_forward conv;
    std::unordered_map<int, memory> args;
    aligned_buffer<T> output;
    aligned_buffer<u8> u8_input;
    std::vector<std::int32_t> bias;
  };
  auto st = std::make_shared<state>();
  st->stream = dnnl::stream(engine);
  st->conv = dnnl::convolution_forward(pd);
  st->output = aligned_buffer<T>(s.output_shape().elements());
  st->bias = p.bias;

  std::vector<std::int8_t> plain = plain_filter(p);
  memory user_weights({weight_dims(s), dt::s8, s.is_depthwise() ? tag::goihw : tag::oihw}, engine, plain.data());
  memory weights(pd.weights_desc(), engine);
  dnnl::reorder(user_weights, weights).execute(st->stream, user_weights, weights);
  st->stream.wait();

  // oneDNN only reads the source; its memory object takes a non-const pointer.
  void* source = const_cast<T*>(p.input.data());
  if (u8_source) {
    st->u8_input = aligned_buffer<u8>(p.input.size());
    std::transform(p.input.data(), p.input.data() + p.input.size(), st->u8_input.data(),
                   [](T x) { return static_cast<u8>(x + 128); });
    source = st->u8_input.data();
  }
  st->args = {{DNNL_ARG_SRC, memory(pd.src_desc(), engine, source)},
              {DNNL_ARG_WEIGHTS, weights},
              {DNNL_ARG_BIAS, memory(pd.bias_desc(), engine, st->bias.data())},
              {DNNL_ARG_DST, memory(pd.dst_desc(), engine, st->output.data())}};
  return {.run =
              [st] {
                st->conv.execute(st->stream, st->args);
                st->stream.wait();
              },
          .output = st->output.span(),
          .label = pd.impl_info_str() + std::string(u8_source ? " (s8 input fed as u8 + 128)" : ""),
          .known_difference = known_difference(pd, s.is_depthwise())};
}

}  // namespace mosaiq::bench::onednn
