// bench_eltwise: the element-wise and pooling ops of the portrait network, `<op>/<impl>/<case>`, one thread.
// mosaiq's add and mul (element-wise and per-channel broadcast), global_average_pool, average_pool and max_pool
// against XNNPACK's operators (add_nd_qu8/qs8, multiply_nd_qu8/qs8 with the same broadcast shapes,
// global_average_pooling_nwc_qu8/qs8, average_pooling2d_nhwc_qu8 (XNNPACK has no qs8 average pool),
// max_pooling2d_nhwc_u8/s8), and a memcpy of the op's input bytes: the bandwidth floor of a one-pass op.
// Every implementation's output is first checked against mosaiq::reference (mosaiq exact, XNNPACK within 1 LSB:
// it requantizes with its own fixed-point or float formulas). The `_i16x8` rows: mosaiq's 16x8 add and mul
// (int16 activations, ops/eltwise16x8.hpp) and its 16x8 average pool and MEAN (ops/pool16x8.hpp) on the shapes of
// the 8-bit rows beside them.
#include "mosaiq/ops/eltwise.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "baselines.hpp"
#include "common.hpp"
#include "mosaiq/ops/eltwise16x8.hpp"
#include "mosaiq/ops/pool.hpp"
#include "mosaiq/ops/pool16x8.hpp"
#include "mosaiq/reference/eltwise.hpp"
#include "mosaiq/reference/int16.hpp"
#include "mosaiq/reference/pool.hpp"

namespace mosaiq::bench {
namespace {

/// One workload: inputs, the reference output, and the byte count of its inputs (the memcpy row copies as many).
template <quantized_element T>
struct problem {
  std::string op, case_name;
  aligned_buffer<T> a, b, expected;
  std::int64_t input_bytes = 0;
};

template <quantized_element T>
std::string dims_name(shape s) {
  return std::to_string(s.height) + "x" + std::to_string(s.width) + "x" + std::to_string(s.channels);
}

/// Times `run` after checking `out` against the reference once (at most `tolerance` LSB apart).
template <quantized_element T>
void register_checked(std::string_view impl, std::shared_ptr<problem<T>> p, std::shared_ptr<aligned_buffer<T>> out,
                      std::function<void()> run, int tolerance, std::string label) {
  register_row(p->op, impl, p->case_name, [p, out, run, tolerance, label](benchmark::State& state) {
    run();
    const output_match m = compare_outputs<T>(out->span(), p->expected.span());
    if (m.max_abs_diff > tolerance) {
      state.SkipWithError(("output differs from mosaiq::reference: " + m.text()).c_str());
      return;
    }
    for (auto _ : state) {
      run();
      benchmark::ClobberMemory();
    }
    // MB/s counts input bytes, so rates compare directly with the memcpy row.
    state.SetBytesProcessed(state.iterations() * p->input_bytes);
    state.SetLabel(label + (label.empty() ? "" : "; ") + "vs reference: " + m.text());
  });
}

template <quantized_element T>
void register_memcpy(std::shared_ptr<problem<T>> p) {
  const auto bytes = static_cast<std::size_t>(p->input_bytes);
  auto source = std::make_shared<aligned_buffer<std::uint8_t>>(bytes);
  auto target = std::make_shared<aligned_buffer<std::uint8_t>>(bytes);
  register_row(p->op, "memcpy", p->case_name, [p, source, target, bytes](benchmark::State& state) {
    for (auto _ : state) {
      std::memcpy(target->data(), source->data(), bytes);
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * p->input_bytes);
    state.SetLabel("input bytes copied");
  });
}

const std::string isa_label(simd::to_string(simd::native_isa));

template <quantized_element T>
constexpr std::int32_t zero_point(int offset) {
  return std::same_as<T, u8> ? 128 + offset : offset;
}

// ---------------------------------------------------------------------------------------------------------------
// add and mul, element-wise and broadcast (b of shape b_dims over a of shape dims)
// ---------------------------------------------------------------------------------------------------------------

enum class binary_op { add, mul };

#if MOSAIQ_BENCH_XNNPACK
/// XNNPACK's add_nd / multiply_nd entry points for T.
template <quantized_element T>
struct xnnpack_binary_api;
template <>
struct xnnpack_binary_api<u8> {
  static constexpr auto create_add = xnn_create_add_nd_qu8;
  static constexpr auto setup_add = xnn_setup_add_nd_qu8;
  static constexpr auto create_multiply = xnn_create_multiply_nd_qu8;
  static constexpr auto setup_multiply = xnn_setup_multiply_nd_qu8;
};
template <>
struct xnnpack_binary_api<i8> {
  static constexpr auto create_add = xnn_create_add_nd_qs8;
  static constexpr auto setup_add = xnn_setup_add_nd_qs8;
  static constexpr auto create_multiply = xnn_create_multiply_nd_qs8;
  static constexpr auto setup_multiply = xnn_setup_multiply_nd_qs8;
};

/// XNNPACK's add_nd / multiply_nd operator for T, created and set up once (shapes as 4-d NHWC).
template <quantized_element T>
xnn_operator_t create_xnnpack_binary(binary_op op, quant_params qa, quant_params qb, quant_params qo,
                                     const std::array<std::size_t, 4>& shape_a,
                                     const std::array<std::size_t, 4>& shape_b, const T* a, const T* b, T* out) {
  using api = xnnpack_binary_api<T>;
  const bool is_add = op == binary_op::add;
  const auto zp = [](quant_params q) { return static_cast<T>(q.zero_point); };
  const T lo = element_traits<T>::min, hi = element_traits<T>::max;
  xnn_operator_t created = nullptr;
  xnnpack::check((is_add ? api::create_add : api::create_multiply)(zp(qa), qa.scale, zp(qb), qb.scale, zp(qo), qo.scale,
                                                                   lo, hi, 0, &created),
                 "create add/multiply");
  xnnpack::check((is_add ? api::setup_add : api::setup_multiply)(created, 4, shape_a.data(), 4, shape_b.data(), a, b,
                                                                 out, nullptr),
                 "setup add/multiply");
  return created;
}
#endif

/// mosaiq's add or mul of a (dims) and b (b_dims, dims or a TFLite broadcast of it) beside XNNPACK's operator and
/// a memcpy of the input bytes. mul's b is quantized like a gate in [0, 1) (scale 1/256), as squeeze-and-excitation
/// and attention gates feed it. Case: the shapes, then the element type; element-wise cases keep the add rows' names.
template <quantized_element T>
void register_binary(binary_op op, shape dims, shape b_dims) {
  const bool is_add = op == binary_op::add;
  const quant_params qa{0.05f, zero_point<T>(-3)}, qo{0.07f, zero_point<T>(2)};
  const quant_params qb =
      is_add ? quant_params{0.03f, zero_point<T>(9)} : quant_params{1.0f / 256, zero_point<T>(-128)};
  auto p = std::make_shared<problem<T>>();
  p->op = is_add ? "add" : "mul";
  p->case_name =
      dims_name<T>(dims) + (b_dims == dims ? "" : "_by_" + dims_name<T>(b_dims)) + "_" + std::string(element_name<T>());
  p->a = aligned_buffer<T>(dims.elements());
  p->b = aligned_buffer<T>(b_dims.elements());
  p->expected = aligned_buffer<T>(dims.elements());
  p->input_bytes = static_cast<std::int64_t>(dims.elements() + b_dims.elements());
  std::mt19937 rng(42);
  fill_uniform(p->a.span(), element_traits<T>::min, element_traits<T>::max, rng);
  fill_uniform(p->b.span(), element_traits<T>::min, element_traits<T>::max, rng);
  const auto a_view = [p, dims] { return tensor_view<const T>(p->a.data(), dims); };
  const auto b_view = [p, b_dims] { return tensor_view<const T>(p->b.data(), b_dims); };
  const tensor_view<T> expected(p->expected.data(), dims);
  auto out = std::make_shared<aligned_buffer<T>>(dims.elements());
  const auto out_view = [out, dims] { return tensor_view<T>(out->data(), dims); };
  if (is_add) {
    const add<T> kernel(qa, qb, qo, activation::none);
    reference::add<rounding::tflite_reference, T>(a_view(), b_view(), expected, kernel.params());
    register_checked<T>(
        "mosaiq", p, out, [=] { kernel(a_view(), b_view(), out_view()); }, 0, isa_label);
  } else {
    const mul<T> kernel(qa, qb, qo, activation::none);
    reference::mul<rounding::tflite_reference, T>(a_view(), b_view(), expected, kernel.params());
    register_checked<T>(
        "mosaiq", p, out, [=] { kernel(a_view(), b_view(), out_view()); }, 0, isa_label);
  }
#if MOSAIQ_BENCH_XNNPACK
  xnnpack::initialize();
  auto xout = std::make_shared<aligned_buffer<T>>(dims.elements());
  const auto nhwc = [](shape s) {
    return std::array<std::size_t, 4>{1, static_cast<std::size_t>(s.height), static_cast<std::size_t>(s.width),
                                      static_cast<std::size_t>(s.channels)};
  };
  auto owned = std::shared_ptr<xnn_operator>(
      create_xnnpack_binary<T>(op, qa, qb, qo, nhwc(dims), nhwc(b_dims), p->a.data(), p->b.data(), xout->data()),
      xnnpack::operator_deleter{});
  register_checked<T>(
      "xnnpack", p, xout, [owned] { xnnpack::check(xnn_run_operator(owned.get(), nullptr), "run"); }, 1, "");
#endif
  register_memcpy<T>(p);
}

/// A 16x8 row: `run` writes `out`, checked equal to `expected` (the reference's output) once, then timed; MB/s
/// counts `input_bytes`. `inputs` keeps the buffers the run's views point into.
template <class Inputs>
void register_exact_i16x8(std::string_view op, const std::string& case_name, std::function<void()> run,
                          std::shared_ptr<aligned_buffer<i16>> out, std::shared_ptr<aligned_buffer<i16>> expected,
                          std::int64_t input_bytes, Inputs inputs) {
  register_row(op, "mosaiq", case_name, [=, keep = std::move(inputs)](benchmark::State& state) {
    run();
    if (!std::equal(out->span().begin(), out->span().end(), expected->span().begin())) {
      state.SkipWithError("output differs from mosaiq::reference");
      return;
    }
    for (auto _ : state) {
      run();
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * input_bytes);
    state.SetLabel(isa_label + "; vs reference: exact");
  });
}

/// mosaiq's 16x8 add or mul (ops/eltwise16x8.hpp) on the shapes of an 8-bit row, case `<shapes>_i16x8`: int16
/// inputs over the whole range, scales as a 16x8 network's (add: two maps into a sum; mul: a gate of scale 1/32768, as
/// the logistic before it gives). Checked exact against reference::add_16 / mul_16 once. XNNPACK has no 16x8
/// operators, so the 8-bit rows of the same shapes are the neighbours; MB/s counts input bytes (twice the 8-bit rows').
void register_binary_i16x8(binary_op op, shape dims, shape b_dims) {
  const bool is_add = op == binary_op::add;
  const float a_scale = 6.0f / 32768, b_scale = is_add ? 4.0f / 32768 : 1.0f / 32768, out_scale = 8.0f / 32768;
  const std::string case_name = dims_name<i8>(dims) + (b_dims == dims ? "" : "_by_" + dims_name<i8>(b_dims)) + "_i16x8";
  auto a = std::make_shared<aligned_buffer<i16>>(dims.elements());
  auto b = std::make_shared<aligned_buffer<i16>>(b_dims.elements());
  auto out = std::make_shared<aligned_buffer<i16>>(dims.elements());
  auto expected = std::make_shared<aligned_buffer<i16>>(dims.elements());
  std::mt19937 rng(42);
  fill_uniform(a->span(), -32768, 32767, rng);
  fill_uniform(b->span(), is_add ? -32768 : 0, 32767, rng);
  const tensor_view<const i16> a_view(a->data(), dims), b_view(b->data(), b_dims);
  const tensor_view<i16> out_view(out->data(), dims), expected_view(expected->data(), dims);
  std::function<void()> run;
  if (is_add) {
    const add16x8<> kernel(a_scale, b_scale, out_scale);
    reference::add_16<rounding::tflite_reference>(a_view, b_view, expected_view, kernel.params());
    run = [=] { kernel(a_view, b_view, out_view); };
  } else {
    const mul16x8<> kernel(a_scale, b_scale, out_scale);
    reference::mul_16<rounding::tflite_reference>(a_view, b_view, expected_view, kernel.params());
    run = [=] { kernel(a_view, b_view, out_view); };
  }
  const auto input_bytes = static_cast<std::int64_t>((dims.elements() + b_dims.elements()) * sizeof(i16));
  register_exact_i16x8(is_add ? "add" : "mul", case_name, run, out, expected, input_bytes, std::make_pair(a, b));
}

// ---------------------------------------------------------------------------------------------------------------
// global average pool
// ---------------------------------------------------------------------------------------------------------------

template <quantized_element T>
void register_global_average_pool(shape dims) {
  const quant_params qi{0.05f, zero_point<T>(-5)}, qo{0.02f, zero_point<T>(4)};
  auto p = std::make_shared<problem<T>>();
  p->op = "global_average_pool";
  p->case_name = dims_name<T>(dims) + "_" + std::string(element_name<T>());
  p->a = aligned_buffer<T>(dims.elements());
  p->expected = aligned_buffer<T>(static_cast<std::size_t>(dims.channels));
  p->input_bytes = static_cast<std::int64_t>(dims.elements());
  std::mt19937 rng(42);
  fill_uniform(p->a.span(), element_traits<T>::min, element_traits<T>::max, rng);
  const shape out_dims{1, 1, dims.channels};
  reference::global_average_pool<rounding::tflite_reference, T>(tensor_view<const T>(p->a.data(), dims),
                                                                tensor_view<T>(p->expected.data(), out_dims), qi, qo);

  auto out = std::make_shared<aligned_buffer<T>>(out_dims.elements());
  const global_pool_params params =
      reference::make_global_average_pool_params<rounding::tflite_reference, T>(qi, qo, dims.height * dims.width);
  register_checked<T>(
      "mosaiq", p, out,
      [p, out, params, dims, out_dims] {
        global_average_pool<rounding::tflite_reference, T>(tensor_view<const T>(p->a.data(), dims),
                                                           tensor_view<T>(out->data(), out_dims), params);
      },
      0, isa_label);
#if MOSAIQ_BENCH_XNNPACK
  xnnpack::initialize();
  auto xout = std::make_shared<aligned_buffer<T>>(out_dims.elements());
  const auto channels = static_cast<std::size_t>(dims.channels);
  const auto pixels = static_cast<std::size_t>(dims.height) * static_cast<std::size_t>(dims.width);
  xnn_operator_t op = nullptr;
  if constexpr (std::same_as<T, u8>) {
    xnnpack::check(xnn_create_global_average_pooling_nwc_qu8(
                       channels, channels, channels, static_cast<std::uint8_t>(qi.zero_point), qi.scale,
                       static_cast<std::uint8_t>(qo.zero_point), qo.scale, 0, 255, 0, &op),
                   "create global average pooling qu8");
    xnnpack::check(xnn_setup_global_average_pooling_nwc_qu8(op, 1, pixels, p->a.data(), xout->data(), nullptr),
                   "setup global average pooling qu8");
  } else {
    xnnpack::check(xnn_create_global_average_pooling_nwc_qs8(
                       channels, channels, channels, static_cast<std::int8_t>(qi.zero_point), qi.scale,
                       static_cast<std::int8_t>(qo.zero_point), qo.scale, -128, 127, 0, &op),
                   "create global average pooling qs8");
    xnnpack::check(xnn_setup_global_average_pooling_nwc_qs8(op, 1, pixels, p->a.data(), xout->data(), nullptr),
                   "setup global average pooling qs8");
  }
  auto owned = std::shared_ptr<xnn_operator>(op, xnnpack::operator_deleter{});
  register_checked<T>(
      "xnnpack", p, xout, [owned] { xnnpack::check(xnn_run_operator(owned.get(), nullptr), "run"); }, 1, "");
#endif
  register_memcpy<T>(p);
}

// ---------------------------------------------------------------------------------------------------------------
// average and max pool (VALID padding: XNNPACK's average pool counts padded taps, TFLite does not)
// ---------------------------------------------------------------------------------------------------------------

template <bool Max, quantized_element T>
void register_window_pool(shape dims, hw kernel, hw stride) {
  const quant_params q{0.05f, zero_point<T>(-7)};
  const pool_params params{.kernel = kernel, .stride = stride, .pad = padding::valid()};
  const window_geometry g = resolve_window(dims.height, dims.width, kernel, stride, hw{1, 1}, params.pad);
  const shape out_dims{g.y.output, g.x.output, dims.channels};
  auto p = std::make_shared<problem<T>>();
  p->op = Max ? "max_pool" : "average_pool";
  p->case_name = dims_name<T>(dims) + "_k" + std::to_string(kernel.h) + "s" + std::to_string(stride.h) + "_" +
                 std::string(element_name<T>());
  p->a = aligned_buffer<T>(dims.elements());
  p->expected = aligned_buffer<T>(out_dims.elements());
  p->input_bytes = static_cast<std::int64_t>(dims.elements());
  std::mt19937 rng(42);
  fill_uniform(p->a.span(), element_traits<T>::min, element_traits<T>::max, rng);
  const tensor_view<const T> in(p->a.data(), dims);
  if constexpr (Max)
    reference::max_pool<T>(in, tensor_view<T>(p->expected.data(), out_dims), params, q);
  else
    reference::average_pool<T>(in, tensor_view<T>(p->expected.data(), out_dims), params, q);

  auto out = std::make_shared<aligned_buffer<T>>(out_dims.elements());
  register_checked<T>(
      "mosaiq", p, out,
      [p, out, params, q, dims, out_dims] {
        const tensor_view<const T> view(p->a.data(), dims);
        if constexpr (Max)
          max_pool<T>(view, tensor_view<T>(out->data(), out_dims), params, q);
        else
          average_pool<T>(view, tensor_view<T>(out->data(), out_dims), params, q);
      },
      0, isa_label);
#if MOSAIQ_BENCH_XNNPACK
  xnnpack::initialize();
  auto xout = std::make_shared<aligned_buffer<T>>(out_dims.elements());
  const auto channels = static_cast<std::size_t>(dims.channels);
  const auto kh = static_cast<std::uint32_t>(kernel.h), kw = static_cast<std::uint32_t>(kernel.w);
  const auto sh = static_cast<std::uint32_t>(stride.h), sw = static_cast<std::uint32_t>(stride.w);
  const auto height = static_cast<std::size_t>(dims.height), width = static_cast<std::size_t>(dims.width);
  xnn_operator_t op = nullptr;
  bool available = true;
  if constexpr (Max && std::same_as<T, u8>) {
    xnnpack::check(xnn_create_max_pooling2d_nhwc_u8(0, 0, 0, 0, kh, kw, sh, sw, 1, 1, channels, channels, channels, 0,
                                                    255, 0, &op),
                   "create max pooling u8");
    xnnpack::check(xnn_setup_max_pooling2d_nhwc_u8(op, 1, height, width, p->a.data(), xout->data(), nullptr),
                   "setup max pooling u8");
  } else if constexpr (Max) {
    xnnpack::check(xnn_create_max_pooling2d_nhwc_s8(0, 0, 0, 0, kh, kw, sh, sw, 1, 1, channels, channels, channels,
                                                    -128, 127, 0, &op),
                   "create max pooling s8");
    xnnpack::check(xnn_setup_max_pooling2d_nhwc_s8(op, 1, height, width, p->a.data(), xout->data(), nullptr),
                   "setup max pooling s8");
  } else if constexpr (std::same_as<T, u8>) {
    xnnpack::check(
        xnn_create_average_pooling2d_nhwc_qu8(0, 0, 0, 0, kh, kw, sh, sw, channels, channels, channels,
                                              static_cast<std::uint8_t>(q.zero_point), q.scale,
                                              static_cast<std::uint8_t>(q.zero_point), q.scale, 0, 255, 0, &op),
        "create average pooling qu8");
    xnnpack::check(xnn_setup_average_pooling2d_nhwc_qu8(op, 1, height, width, p->a.data(), xout->data(), nullptr),
                   "setup average pooling qu8");
  } else {
    available = false;
    register_unavailable(p->op, "xnnpack", p->case_name, "XNNPACK (2022 snapshot) has no qs8 average pooling");
  }
  if (available) {
    auto owned = std::shared_ptr<xnn_operator>(op, xnnpack::operator_deleter{});
    register_checked<T>(
        "xnnpack", p, xout, [owned] { xnnpack::check(xnn_run_operator(owned.get(), nullptr), "run"); }, Max ? 0 : 1,
        "");
  }
#endif
  register_memcpy<T>(p);
}

/// mosaiq's 16x8 average pool (VALID, `kernel` and `stride`) or, without a kernel, MEAN (ops/pool16x8.hpp) on the
/// shape of an 8-bit row, case `<shape>[_k<k>s<s>]_i16x8`: int16 inputs over the whole range, MEAN's output scale
/// a third of its input's. Checked exact against reference::average_pool_16 / mean_16 once. XNNPACK has no 16x8
/// pooling; MB/s counts input bytes (twice the 8-bit rows').
void register_pool_i16x8(shape dims, std::optional<hw> kernel, hw stride = {1, 1}) {
  const pool_params params{.kernel = kernel.value_or(hw{1, 1}), .stride = stride, .pad = padding::valid()};
  const window_geometry g = resolve_window(dims.height, dims.width, params.kernel, stride, hw{1, 1}, params.pad);
  const shape out_dims = kernel ? shape{g.y.output, g.x.output, dims.channels} : shape{1, 1, dims.channels};
  auto in = std::make_shared<aligned_buffer<i16>>(dims.elements());
  auto out = std::make_shared<aligned_buffer<i16>>(out_dims.elements());
  auto expected = std::make_shared<aligned_buffer<i16>>(out_dims.elements());
  std::mt19937 rng(42);
  fill_uniform(in->span(), -32768, 32767, rng);
  const tensor_view<const i16> in_view(in->data(), dims);
  const tensor_view<i16> out_view(out->data(), out_dims), expected_view(expected->data(), out_dims);
  std::function<void()> run;
  std::string case_name = dims_name<i8>(dims);
  if (kernel) {
    case_name += "_k" + std::to_string(kernel->h) + "s" + std::to_string(stride.h);
    reference::average_pool_16(in_view, expected_view, params);
    run = [=] { average_pool16x8(in_view, out_view, params); };
  } else {
    const reference::mean_params_16 mean =
        reference::make_mean_params_16<rounding::tflite_reference>(0.003f, 0.001f, dims.height * dims.width);
    reference::mean_16<rounding::tflite_reference>(in_view, expected_view, mean);
    run = [=] { mean16x8<rounding::tflite_reference>(in_view, out_view, mean); };
  }
  const auto input_bytes = static_cast<std::int64_t>(dims.elements() * sizeof(i16));
  register_exact_i16x8(kernel ? "average_pool" : "global_average_pool", case_name + "_i16x8", run, out, expected,
                       input_bytes, in);
}

void register_all() {
  for (const shape dims : {shape{64, 64, 16}, shape{32, 32, 32}, shape{16, 16, 128}, shape{64, 64, 2}}) {
    register_binary<u8>(binary_op::add, dims, dims);
    register_binary<i8>(binary_op::add, dims, dims);
    register_binary_i16x8(binary_op::add, dims, dims);
  }
  // Per-channel broadcast (squeeze-and-excitation, attention gates) and element-wise mul.
  for (const shape dims : {shape{64, 64, 32}, shape{16, 16, 128}}) {
    const shape vector{1, 1, dims.channels};
    for (const binary_op op : {binary_op::add, binary_op::mul}) {
      register_binary<u8>(op, dims, vector);
      register_binary<i8>(op, dims, vector);
      register_binary_i16x8(op, dims, vector);
    }
    register_binary<u8>(binary_op::mul, dims, dims);
    register_binary<i8>(binary_op::mul, dims, dims);
    register_binary_i16x8(binary_op::mul, dims, dims);
  }
  // The selfie models' attention gates: a 1x1x24 gate over a 32x32x24 map (24 channels, not a whole number of blocks).
  register_binary<u8>(binary_op::mul, shape{32, 32, 24}, shape{1, 1, 24});
  register_binary<i8>(binary_op::mul, shape{32, 32, 24}, shape{1, 1, 24});
  register_binary_i16x8(binary_op::mul, shape{32, 32, 24}, shape{1, 1, 24});
  register_global_average_pool<u8>(shape{16, 16, 128});
  register_global_average_pool<i8>(shape{16, 16, 128});
  register_global_average_pool<u8>(shape{32, 32, 24});  // the selfie models' 24-channel squeeze-and-excitation
  register_global_average_pool<i8>(shape{32, 32, 24});
  register_pool_i16x8(shape{16, 16, 128}, std::nullopt);
  register_pool_i16x8(shape{32, 32, 24}, std::nullopt);
  register_window_pool<false, u8>(shape{64, 64, 32}, hw{2, 2}, hw{2, 2});
  register_window_pool<false, i8>(shape{64, 64, 32}, hw{2, 2}, hw{2, 2});
  register_window_pool<false, u8>(shape{32, 32, 32}, hw{3, 3}, hw{2, 2});
  register_window_pool<false, u8>(shape{32, 32, 24}, hw{32, 32}, hw{32, 32});  // the selfie models' whole-map pool
  register_pool_i16x8(shape{64, 64, 32}, hw{2, 2}, hw{2, 2});
  register_pool_i16x8(shape{32, 32, 32}, hw{3, 3}, hw{2, 2});
  register_pool_i16x8(shape{32, 32, 24}, hw{32, 32}, hw{32, 32});
  register_pool_i16x8(shape{128, 128, 16}, hw{128, 128}, hw{128, 128});  // the 256x256 model's largest squeeze pool
  register_window_pool<true, u8>(shape{64, 64, 32}, hw{2, 2}, hw{2, 2});
  register_window_pool<true, i8>(shape{64, 64, 32}, hw{2, 2}, hw{2, 2});
  register_window_pool<true, u8>(shape{32, 32, 32}, hw{3, 3}, hw{2, 2});
}

}  // namespace
}  // namespace mosaiq::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  mosaiq::bench::setup_baselines(
      "mosaiq::add / mosaiq::mul / mosaiq::global_average_pool / mosaiq::average_pool / mosaiq::max_pool");
  mosaiq::bench::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
