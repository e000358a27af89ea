// An op-by-op interpreter of a quantized TFLite graph (as read, before any pattern pass) on mosaiq's reference ops,
// which the reference tests check against TFLite's kernels: the oracle the generated networks are compared with.
// It knows nothing of the emitter: it reads each op's tensors, shapes, options and quantization from the graph.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "mosaiq/reference.hpp"
#include "mosaiq/tflite/graph.hpp"

namespace mosaiq::test {

template <quantized_element T>
class reference_interpreter {
 public:
  explicit reference_interpreter(const tflite::graph& g) : g_(g) {}

  /// The graph's first output for `input` (NHWC, the input tensor's shape); output(k) has every output of this run.
  std::vector<T> run(const std::vector<T>& input) {
    values_.clear();
    values_[g_.inputs.at(0)] = input;
    for (const tflite::graph_op& op : g_.ops) run_op(op);
    return output(0);
  }

  /// Graph output k of the last run.
  const std::vector<T>& output(std::size_t k) const { return values_.at(g_.outputs.at(k)); }

 private:
  using tensor_index = std::int32_t;

  const tflite::graph_tensor& tensor(tensor_index t) const { return g_.tensors.at(static_cast<std::size_t>(t)); }

  static shape dims(const tflite::graph_tensor& t) {
    if (t.shape.size() == 4) return {t.shape[1], t.shape[2], t.shape[3]};
    if (t.shape.size() == 2) return {1, 1, t.shape[1]};
    throw std::runtime_error("interpreter: tensor '" + t.name + "' is neither [1,H,W,C] nor [1,C]");
  }
  quant_params quant(tensor_index t) const {
    const auto& q = tensor(t).quant;
    return {q.scale.at(0), static_cast<std::int32_t>(q.zero_point.at(0))};
  }
  tensor_view<const T> in(tensor_index t) const { return tensor_view<const T>(values_.at(t).data(), dims(tensor(t))); }
  tensor_view<T> make(tensor_index t) {
    std::vector<T>& v = values_[t];
    v.assign(dims(tensor(t)).elements(), T{0});
    return tensor_view<T>(v.data(), dims(tensor(t)));
  }
  const std::vector<T>& filter(tensor_index t) const { return std::get<std::vector<T>>(tensor(t).constant); }
  const std::int32_t* bias(const tflite::graph_op& op, std::size_t slot) const {
    if (slot >= op.inputs.size() || op.inputs[slot] < 0) return nullptr;
    return std::get<std::vector<std::int32_t>>(tensor(op.inputs[slot]).constant).data();
  }

  static activation act(tflite::activation a) {
    switch (a) {
      case tflite::activation::relu:
        return activation::relu;
      case tflite::activation::relu6:
        return activation::relu6;
      case tflite::activation::relu_n1_to_1:
        return activation::relu_n1_to_1;
      case tflite::activation::none:
        break;
    }
    return activation::none;
  }
  static padding pad(tflite::padding p) { return p == tflite::padding::same ? padding::same() : padding::valid(); }

  reference::conv_requant requant(const tflite::graph_op& op, tflite::activation a) const {
    const auto& fq = tensor(op.inputs[1]).quant;
    const auto filter_zero = static_cast<std::int32_t>(fq.zero_point.empty() ? 0 : fq.zero_point[0]);
    return reference::make_conv_requant<R, T>(quant(op.inputs[0]), std::span<const float>(fq.scale), filter_zero,
                                              quant(op.outputs[0]), act(a));
  }

  void run_op(const tflite::graph_op& op) {
    using tflite::builtin;
    const tensor_index x = op.inputs.empty() ? -1 : op.inputs[0], y = op.outputs.at(0);
    switch (op.op) {
      case builtin::conv_2d: {
        const auto& o = std::get<tflite::conv2d_options>(op.options);
        const auto& s = tensor(op.inputs[1]).shape;
        const reference::conv2d_params p{
            {s[1], s[2]}, {o.stride_h, o.stride_w}, {o.dilation_h, o.dilation_w}, pad(o.pad)};
        reference::conv2d<R, T>(in(x), filter(op.inputs[1]).data(), bias(op, 2), make(y), p, requant(op, o.fused));
        return;
      }
      case builtin::depthwise_conv_2d: {
        const auto& o = std::get<tflite::depthwise_options>(op.options);
        const auto& s = tensor(op.inputs[1]).shape;
        const reference::depthwise_params p{{s[1], s[2]},
                                            {o.stride_h, o.stride_w},
                                            {o.dilation_h, o.dilation_w},
                                            pad(o.pad),
                                            s[3] / dims(tensor(x)).channels};
        reference::depthwise_conv<R, T>(in(x), filter(op.inputs[1]).data(), bias(op, 2), make(y), p,
                                        requant(op, o.fused));
        return;
      }
      case builtin::fully_connected: {
        const auto& o = std::get<tflite::fully_connected_options>(op.options);
        reference::pointwise_conv<R, T>(in(x), filter(op.inputs[1]).data(), bias(op, 2), make(y), requant(op, o.fused));
        return;
      }
      case builtin::average_pool_2d:
      case builtin::max_pool_2d: {
        const auto& o = std::get<tflite::pool2d_options>(op.options);
        const reference::pool_params p{{o.filter_h, o.filter_w}, {o.stride_h, o.stride_w}, pad(o.pad), act(o.fused)};
        if (op.op == builtin::average_pool_2d)
          reference::average_pool<T>(in(x), make(y), p, quant(x));
        else
          reference::max_pool<T>(in(x), make(y), p, quant(x));
        return;
      }
      case builtin::mean:
        reference::global_average_pool<R, T>(in(x), make(y), quant(x), quant(y));
        return;
      case builtin::resize_bilinear:
      case builtin::resize_nearest_neighbor:
        run_resize(op);
        return;
      case builtin::softmax:
        reference::softmax<T>(reference::softmax_table(quant(x), std::get<tflite::softmax_options>(op.options).beta),
                              in(x), make(y));
        return;
      case builtin::logistic:
        reference::logistic<T>(reference::logistic_table<T>(quant(x)), in(x), make(y));
        return;
      case builtin::add:
      case builtin::mul:
        run_binary(op);
        return;
      case builtin::concatenation:
        run_concat(op);
        return;
      case builtin::reshape:
        values_[y] = values_.at(x);
        return;
      default:
        throw std::runtime_error("interpreter: no reference for " + tflite::builtin_name(op.op));
    }
  }

  void run_resize(const tflite::graph_op& op) {
    const auto& o = std::get<tflite::resize_options>(op.options);
    const resize_mode mode = o.align_corners        ? resize_mode::align_corners
                             : o.half_pixel_centers ? resize_mode::half_pixel
                                                    : resize_mode::legacy;
    const tensor_index x = op.inputs[0], y = op.outputs[0];
    if (op.op == tflite::builtin::resize_nearest_neighbor)
      reference::resize_nearest<T>(in(x), make(y), mode);
    else if constexpr (std::same_as<T, i8>)
      // TFLite's own int8 algorithm, as a TFLITE_SINGLE_ROUNDING build runs it (see the emitter's note).
      reference::resize_bilinear_tflite_int8<rounding::single_round>(in(x), make(y), mode);
    else
      reference::resize_bilinear<T>(in(x), make(y), mode);
  }

  void run_binary(const tflite::graph_op& op) {
    const auto a = act(std::get<tflite::elementwise_options>(op.options).fused);
    const tensor_index x0 = op.inputs[0], x1 = op.inputs[1], y = op.outputs[0];
    if (op.op == tflite::builtin::add)
      reference::add<R, T>(in(x0), in(x1), make(y), reference::make_add_params<T>(quant(x0), quant(x1), quant(y), a));
    else
      reference::mul<R, T>(in(x0), in(x1), make(y),
                           reference::make_mul_params<T, R>(quant(x0), quant(x1), quant(y), a));
  }

  void run_concat(const tflite::graph_op& op) {
    std::vector<reference::concat_input<T>> parts;
    for (const tensor_index t : op.inputs) parts.push_back({in(t), quant(t)});
    const tensor_index y = op.outputs[0];
    reference::concat<T>(std::span<const reference::concat_input<T>>(parts), make(y), quant(y));
  }

  static constexpr rounding R = rounding::tflite_reference;
  const tflite::graph& g_;
  std::map<tensor_index, std::vector<T>> values_;
};

}  // namespace mosaiq::test
