// 16x8 (i16) static networks (net/executor_16x8.hpp, tools/quantize_16x8.hpp) against their oracle, the 16x8
// reference runner tools::reference_16x8 on the same network type: every tensor the network returns equal to the
// runner's bit for bit, on a network of every layer kind of the MediaPipe selfie model. Also the weights' types, the
// blob round trip, the zero-point rule and the plan (int16 tensors: twice the bytes of the i8 network's).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "allocation_counter.hpp"
#include "mosaiq/net.hpp"
#include "mosaiq/tools.hpp"
#include "support.hpp"

namespace {

using namespace mosaiq;
using tools::float_range;

/// Every selfie layer kind: the 3x3 stride-2 stem, hard swish, a squeeze-and-excitation gate (whole-map average
/// pool, 1x1 with relu, 1x1, logistic, per-channel broadcast mul), a 1x1 expansion, a 5x5 depthwise with relu, a
/// residual add, 2x half-pixel bilinear upsampling, an attention gate on the upsampled map, the 2x2 stride-2
/// transposed convolution to one channel and the final logistic. "mid" is also an extra output. With `Mean` the two
/// whole-map pools are MEAN (global_average_pool), as in the landscape model. `Upsampling` is the transposed
/// convolution's kernel (stride 2): 2x2 runs the SIMD GEMM, a larger one (overlapping taps) the reference.
template <class Input, bool Mean = false, hw Upsampling = hw{2, 2}>
using selfie_kinds = network<
    Input,  //
    layers::conv2d<layers::conv2d_config{
        .out_channels = 8, .kernel = {3, 3}, .stride = {2, 2}, .pad = padding::same()}>,
    layers::hard_swish<>,  //
    layers::tap<"h">,      //
    std::conditional_t<Mean, layers::global_average_pool<>,
                       layers::average_pool<layers::pool_config{.kernel = {6, 5}, .stride = {6, 5}}>>,
    layers::pointwise<layers::pointwise_config{.out_channels = 4, .act = activation::relu}>,  //
    layers::pointwise<layers::pointwise_config{.out_channels = 8}>,                           //
    layers::logistic<>,                                                                       //
    layers::mul<"h">,                                                                         //
    layers::pointwise<layers::pointwise_config{.out_channels = 12}>,                          //
    layers::tap<"e">,                                                                         //
    layers::depthwise<layers::depthwise_config{.kernel = {5, 5}, .pad = padding::same(), .act = activation::relu}>,
    layers::add<"e">,                                                                             //
    layers::output<"mid">,                                                                        //
    layers::resize_bilinear<layers::resize_config{.scale = 2, .mode = resize_mode::half_pixel}>,  //
    layers::tap<"u">,                                                                             //
    std::conditional_t<Mean, layers::global_average_pool<>,
                       layers::average_pool<layers::pool_config{.kernel = {12, 10}, .stride = {12, 10}}>>,
    layers::pointwise<layers::pointwise_config{.out_channels = 12}>,                                 //
    layers::logistic<>,                                                                              //
    layers::mul<"u">,                                                                                //
    layers::transpose_conv<layers::transpose_conv_config{.out_channels = 1, .kernel = Upsampling}>,  //
    layers::logistic<>>;
using net8 = selfie_kinds<input<i8, 12, 10, 3>>;
using net16 = net8::with_element<i16>;
/// The network's rounding reaches every 16x8 layer that has two (mul, add, hard swish, resize).
using net16_single = selfie_kinds<input<i16, 12, 10, 3, rounding::single_round>>;
/// The squeeze pools as MEAN (their own output scale, TFLite's int16 MEAN), under both roundings.
using net16_mean = selfie_kinds<input<i16, 12, 10, 3>, true>;
using net16_mean_single = selfie_kinds<input<i16, 12, 10, 3, rounding::single_round>, true>;
/// A 3x3 stride-2 transposed convolution: its taps overlap, so it runs reference::transpose_conv_16x8.
using net16_overlapping = selfie_kinds<input<i16, 12, 10, 3>, false, hw{3, 3}>;
/// Every kind on maps large enough to split into row bands (MEAN squeezes: the pools' windows need not follow the
/// size), planned for up to `Threads` threads.
template <int Threads>
using net16_wide = selfie_kinds<input<i16, 64, 46, 3>::with_max_threads<Threads>, true>;

static_assert(std::same_as<net16::element_type, i16>);
static_assert(net16::output_shape == shape{24, 20, 1});
// Filters int8, biases int64, one filter scale per output channel.
static_assert(std::same_as<std::remove_cvref_t<decltype(net16::layer_weights<0>{}.filter[0])>, i8>);
static_assert(std::same_as<std::remove_cvref_t<decltype(net16::layer_weights<0>{}.bias[0])>, std::int64_t>);
static_assert(std::tuple_size_v<decltype(net16::layer_weights<0>::filter_scales)> == 8);
static_assert(net16::weight_bytes == [] {
  std::uint64_t bytes = 0;
  for (const layer_cost& c : net8::layer_costs) bytes += c.filter_elements + 8 * c.bias_elements;
  return bytes;
}());
// The same plan for the tensors (the same buffers, in place where the i8 network is), each twice the bytes; the
// workspaces are the 16x8 executors' own (the stem's patches, the transposed convolution's GEMM sums).
static_assert(test::tensors_twice_the_bytes<net8, net16>());
static_assert(net16::macs == net8::macs);

/// Random float weights and ranges calibrated on random inputs: a realistic spread of scales.
template <class Net = net16>
struct fixture {
  std::unique_ptr<tools::float_weights<Net>> fw = std::make_unique<tools::float_weights<Net>>();
  std::vector<std::vector<float>> samples;
  std::array<float_range, Net::tensor_count> ranges{};

  explicit fixture(unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> weight(0.0f, 0.3f);
    std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
    mosaiq::detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
      (fill(fw->template layer<I>(), rng, weight), ...);
    });
    samples.assign(4, std::vector<float>(Net::input_shape.elements()));
    for (auto& sample : samples) std::generate(sample.begin(), sample.end(), [&] { return pixel(rng); });
    ranges = tools::calibrate(*fw, samples);
  }
  template <class Layer, class Rng, class Dist>
  static void fill(Layer& layer, Rng& rng, Dist& dist) {
    if constexpr (requires { layer.filter; }) {
      for (auto& w : layer.filter) w = dist(rng);
      for (auto& b : layer.bias) b = dist(rng);
    }
  }
};

/// Runs an i16 network on `input` (floats quantized to its input scale) and returns the output and extra output.
struct network_run {
  std::vector<i16> output = std::vector<i16>(net16::output_shape.elements());
  std::vector<i16> mid = std::vector<i16>(net16::tensor_shape<"mid">.elements());
};
template <class Net = net16>
network_run run_network(const typename Net::prepared& p, const typename Net::weights& w, std::span<const float> input) {
  test::aligned_arena arena(Net::arena_bytes);
  const std::vector<i16> q = tools::quantize_input<Net>(w, input);
  network_run r;
  Net::run(p, tensor_view<const i16>(q.data(), Net::input_shape), tensor_view<i16>(r.output.data(), Net::output_shape),
           arena.bytes);
  const tensor_view<const i16> mid = Net::template output_view<"mid">(arena.bytes);
  for (int y = 0, i = 0; y < mid.height(); ++y)
    for (int x = 0; x < mid.width(); ++x)
      for (int c = 0; c < mid.channels(); ++c) r.mid[std::size_t(i++)] = mid(0, y, x, c);
  return r;
}

}  // namespace

namespace {

/// Net against tools::reference_16x8<Net> on three weight draws and four inputs each: every scale, every value of
/// the output and of the extra output.
template <class Net>
void check_against_oracle() {
  for (const unsigned seed : {1u, 2u, 3u}) {
    INFO("seed ", seed);
    const fixture<Net> f(seed);
    tools::reference_16x8<Net> oracle;
    REQUIRE(oracle.quantize(*f.fw, f.ranges));
    const auto w = tools::quantize_network<Net>(*f.fw, f.ranges);
    REQUIRE(w != nullptr);
    const auto p = std::make_unique<typename Net::prepared>(Net::prepare(*w));
    // The same scales, tensor by tensor, as the runner's rules give them.
    const auto quant = tools::tensor_quant<Net>(*w);
    for (std::size_t t = 0; t < Net::tensor_count; ++t) {
      INFO("tensor ", t);
      CHECK(quant[t].scale == oracle.scale(t));
      CHECK(quant[t].zero_point == 0);
      CHECK(p->tensor_quant(t).scale == oracle.scale(t));
    }
    std::mt19937 rng(seed + 100);
    std::uniform_real_distribution<float> pixel(-1.2f, 1.2f);  // beyond the calibrated range too: saturation
    for (int sample = 0; sample < 4; ++sample) {
      std::vector<float> input(Net::input_shape.elements());
      std::generate(input.begin(), input.end(), [&] { return pixel(rng); });
      REQUIRE(oracle.run(input));
      const network_run r = run_network<Net>(*p, *w, input);
      CHECK(std::ranges::equal(r.output, oracle.values(Net::tensor_count - 1)));
      CHECK(std::ranges::equal(r.mid, oracle.values(Net::template tensor_named<"mid">)));
      // Not a constant output: the mask varies over the image.
      const auto [low, high] = std::ranges::minmax(r.output);
      CHECK(low < high);
    }
  }
}

}  // namespace

TEST_CASE("network 16x8: the i16 network equals tools::reference_16x8 bit for bit on every selfie layer kind") {
  check_against_oracle<net16>();
}

TEST_CASE("network 16x8: the same under single rounding (input<..., rounding::single_round>)") {
  check_against_oracle<net16_single>();
}

TEST_CASE("network 16x8: a transposed convolution with overlapping taps (3x3 stride 2, the reference executor)") {
  check_against_oracle<net16_overlapping>();
}

TEST_CASE("network 16x8: the squeeze pools as MEAN (global_average_pool), both roundings") {
  check_against_oracle<net16_mean>();
  check_against_oracle<net16_mean_single>();
}

TEST_CASE("network 16x8: a run poisoning dead memory gives the same output (the plan keeps what each layer reads)") {
  const fixture<> f(4);
  const auto w = tools::quantize_network<net16>(*f.fw, f.ranges);
  REQUIRE(w != nullptr);
  const auto p = std::make_unique<net16::prepared>(net16::prepare(*w));
  const network_run plain = run_network(*p, *w, f.samples[0]);
  test::aligned_arena arena(net16::arena_bytes);
  const std::vector<i16> q = tools::quantize_input<net16>(*w, f.samples[0]);
  std::vector<i16> out(net16::output_shape.elements());
  net16::run_poisoning_dead_memory(*p, tensor_view<const i16>(q.data(), net16::input_shape),
                                   tensor_view<i16>(out.data(), net16::output_shape), arena.bytes);
  CHECK(out == plain.output);
}

TEST_CASE(
    "network 16x8: the 1x1s, the depthwise layers, the stem and the 2x2 transposed convolution run SIMD 16x8 "
    "kernels' int32 paths; a run does not allocate") {
  const fixture<> f(7);
  const auto w = tools::quantize_network<net16>(*f.fw, f.ranges);
  REQUIRE(w != nullptr);
  const auto p = std::make_unique<net16::prepared>(net16::prepare(*w));
  // Layers 4, 5, 8 and 16 are the 1x1s: prepared kernels (packed weights in the state), accumulating in int32.
  static_assert(std::same_as<decltype(p->state<4>().kernel), pointwise16x8<pointwise16x8_config{.out_channels = 4}>>);
  CHECK(p->state<4>().kernel.uses_int32_path());
  CHECK(p->state<5>().kernel.uses_int32_path());
  CHECK(p->state<8>().kernel.uses_int32_path());
  CHECK(p->state<16>().kernel.uses_int32_path());
  CHECK(p->state<16>().kernel.input_channels() == 12);
  // Layer 10 is the 5x5 depthwise: ops/depthwise16x8.hpp's kernel, prepared the same way.
  static_assert(std::same_as<decltype(p->state<10>().kernel),
                             depthwise16x8<depthwise16x8_config{.kernel = {5, 5}, .pad = padding::same()}>>);
  CHECK(p->state<10>().kernel.uses_int32_path());
  CHECK(p->state<10>().kernel.channels() == 12);
  // Layer 0, the 3x3 stride-2 stem (im2col bands and the GEMM), and layer 19, the 2x2 stride-2 transposed
  // convolution (the GEMM to 4 columns and depth-to-space); their buffers are the layers' planned workspaces.
  static_assert(std::same_as<decltype(p->state<0>().kernel),
                             conv2d16x8<conv2d16x8_config{.out_channels = 8, .kernel = {3, 3}, .stride = {2, 2}}>>);
  static_assert(
      std::same_as<decltype(p->state<19>().kernel), transpose_conv16x8<transpose_conv16x8_config{.out_channels = 1}>>);
  CHECK(p->state<0>().kernel.uses_int32_path());
  CHECK(p->state<19>().kernel.uses_int32_path());

  test::aligned_arena arena(net16::arena_bytes);
  const std::vector<i16> q = tools::quantize_input<net16>(*w, f.samples[2]);
  std::vector<i16> out(net16::output_shape.elements());
  const long before = test::heap_allocations();
  net16::run(*p, tensor_view<const i16>(q.data(), net16::input_shape),
             tensor_view<i16>(out.data(), net16::output_shape), arena.bytes);
  CHECK(test::heap_allocations() == before);
  CHECK(out == run_network(*p, *w, f.samples[2]).output);
}

// On 4 threads: the stem, the 1x1s and the depthwise layer on the full maps, the resize, the attention gate's broadcast
// mul and the transposed convolution split into 4 bands; hard swish, the SE gate's mul, the residual add and the last
// logistic join the layer before them in row runs (one barrier each). The pools (MEAN) and the 1x1 layers of the
// squeeze vectors run whole.
using net16_four = net16_wide<4>;
using row_run16 = net16_four::row_run;
static_assert(net16_four::layer_bands<0>(4) == 4 && net16_four::layer_bands<8>(4) == 4 &&
              net16_four::layer_bands<10>(4) == 4 && net16_four::layer_bands<13>(4) == 4 &&
              net16_four::layer_bands<18>(4) == 4 && net16_four::layer_bands<19>(4) == 4);
static_assert(net16_four::active_row_runs[1] == row_run16{0, 1} && net16_four::active_row_runs[8] == row_run16{7, 8} &&
              net16_four::active_row_runs[11] == row_run16{10, 11} &&
              net16_four::active_row_runs[20] == row_run16{19, 20});
static_assert(net16_four::layer_bands<3>(4) == 1 && net16_four::layer_bands<15>(4) == 1);
static_assert(net16_four::parallel_steps(4) == 6 && net16_four::parallel_steps(1) == 0);
// A workspace slice per thread for the stem's patches and the transposed convolution's sums.
static_assert(net16_four::arena_bytes > net16_wide<1>::arena_bytes);

TEST_CASE("network 16x8: on 1..4 threads (and a wider pool) every output equals the serial run's; no heap running") {
  using serial_net = net16_wide<1>;
  const fixture<serial_net> f(11);
  tools::reference_16x8<serial_net> oracle;
  REQUIRE(oracle.quantize(*f.fw, f.ranges));
  const auto w = tools::quantize_network<serial_net>(*f.fw, f.ranges);
  REQUIRE(w != nullptr);
  std::vector<std::byte> blob(serial_net::blob_bytes);
  REQUIRE(serial_net::save(*w, blob) == blob.size());
  const auto tw = std::make_unique<net16_four::weights>();
  REQUIRE(net16_four::load(blob, *tw));  // the same weights, planned for four threads
  const auto serial_p = std::make_unique<serial_net::prepared>(serial_net::prepare(*w));
  const auto p = std::make_unique<net16_four::prepared>(net16_four::prepare(*tw));
  for (int sample = 0; sample < 2; ++sample) {
    CAPTURE(sample);
    const std::vector<i16> q = tools::quantize_input<serial_net>(*w, f.samples[std::size_t(sample)]);
    const auto in = tensor_view<const i16>(q.data(), serial_net::input_shape);
    std::vector<i16> serial(serial_net::output_shape.elements());
    test::aligned_arena serial_arena(serial_net::arena_bytes);
    serial_net::run(*serial_p, in, tensor_view<i16>(serial.data(), serial_net::output_shape), serial_arena.bytes);
    REQUIRE(oracle.run(f.samples[std::size_t(sample)]));
    CHECK(std::ranges::equal(serial, oracle.values(serial_net::tensor_count - 1)));
    const tensor_view<const i16> serial_mid = serial_net::output_view<"mid">(serial_arena.bytes);

    test::aligned_arena arena(net16_four::arena_bytes);
    for (const int threads : {1, 2, 3, 4, 6}) {  // 6: more threads than the plan's 4, which idle
      CAPTURE(threads);
      thread_pool pool(threads);
      for (int repeat = 0; repeat < 2; ++repeat) {
        std::vector<i16> got(serial.size(), i16{0x5A5A});
        const long before = test::heap_allocations();
        net16_four::run(*p, in, tensor_view<i16>(got.data(), net16_four::output_shape), arena.bytes, pool);
        CHECK(test::heap_allocations() == before);
        CHECK(got == serial);
        const tensor_view<const i16> mid = net16_four::output_view<"mid">(arena.bytes);
        bool mid_equal = true;
        for (int y = 0; y < mid.height(); ++y)
          for (int x = 0; x < mid.width(); ++x)
            for (int c = 0; c < mid.channels(); ++c) mid_equal = mid_equal && mid(0, y, x, c) == serial_mid(0, y, x, c);
        CHECK(mid_equal);
      }
    }
  }
}

TEST_CASE("network 16x8: weights blob round trip; a blob of the i8 network is refused") {
  const fixture<> f(5);
  const auto w = tools::quantize_network<net16>(*f.fw, f.ranges);
  REQUIRE(w != nullptr);
  std::vector<std::byte> blob(net16::blob_bytes);
  REQUIRE(net16::save(*w, blob) == net16::blob_bytes);
  auto loaded = std::make_unique<net16::weights>();
  REQUIRE(net16::load(blob, *loaded));
  CHECK(loaded->layer<0>().bias == w->layer<0>().bias);
  CHECK(loaded->layer<0>().filter == w->layer<0>().filter);
  const auto p = std::make_unique<net16::prepared>(net16::prepare(*loaded));
  const auto expected = std::make_unique<net16::prepared>(net16::prepare(*w));
  for (const auto& sample : f.samples) {
    const network_run got = run_network(*p, *loaded, sample), want = run_network(*expected, *w, sample);
    CHECK(got.output == want.output);
    CHECK(got.mid == want.mid);
  }

  // The i8 network's blob has the same layer list and shapes but another element type (and sizes), and the other
  // way round: each names the blob's element.
  test::recording_handler errors;
  std::vector<std::byte> blob8(net8::blob_bytes);
  const auto w8 = std::make_unique<net8::weights>();
  REQUIRE(net8::save(*w8, blob8) == net8::blob_bytes);
  CHECK_FALSE(net16::load(blob8, *loaded));
  CHECK(errors.last() == errc::blob_mismatch);
  CHECK(errors.last_message() == "network::load: the blob is for an i8 network, not this network's element type");
  CHECK_FALSE(net8::load(blob, *w8));
  CHECK(errors.last_message() ==
        "network::load: the blob is for an i16 (16x8) network, not this network's element type");
  CHECK_FALSE(net16_single::load(blob, *std::make_unique<net16_single::weights>()));
  CHECK(errors.last_message() == "network::load: blob for another rounding mode");
  CHECK(loaded->layer<0>().bias == w->layer<0>().bias);  // untouched by the refusals
}

TEST_CASE("network 16x8: a truncated or corrupt blob is refused with what differs, and leaves the weights untouched") {
  const fixture<> f(7);
  const auto w = tools::quantize_network<net16>(*f.fw, f.ranges);
  REQUIRE(w != nullptr);
  std::vector<std::byte> blob(net16::blob_bytes);
  REQUIRE(net16::save(*w, blob) == net16::blob_bytes);
  const auto loaded = std::make_unique<net16::weights>(*w);
  test::recording_handler errors;
  const auto refused = [&](std::span<const std::byte> bytes, std::string_view message) {
    errors.reset();
    CHECK_FALSE(net16::load(bytes, *loaded));
    CHECK(errors.calls() == 1);
    CHECK(errors.last() == errc::blob_mismatch);
    CHECK(errors.last_message() == message);
  };
  const std::string_view not_a_blob = "network::load: not a mosaiq weights blob (no MOSAIQNW header)";
  refused({}, not_a_blob);
  refused(std::span(blob).first(20), not_a_blob);
  refused(std::span(blob).first(blob.size() - 1),
          "network::load: blob size differs from blob_bytes (truncated, or for another layer list)");
  std::vector<std::byte> longer = blob;
  longer.push_back(std::byte{0});
  refused(longer, "network::load: blob size differs from blob_bytes (truncated, or for another layer list)");
  const auto flipped = [&](std::size_t at) {
    std::vector<std::byte> bytes = blob;
    bytes[at] ^= std::byte{0x20};
    return bytes;
  };
  refused(flipped(0), not_a_blob);                                                        // the magic
  refused(flipped(8), "network::load: blob of another format version");                   // the version
  refused(flipped(12), "network::load: blob written in another byte order");              // the byte order
  refused(flipped(16), "network::load: blob of an unknown element type");                 // the element
  refused(flipped(20), "network::load: blob for another rounding mode");                  // the rounding
  refused(flipped(24), "network::load: blob header names another layer list or shapes");  // the layer count
  refused(flipped(48), "network::load: blob header names another layer list or shapes");  // the first layer's kind
  CHECK(loaded->layer<0>().bias == w->layer<0>().bias);
  CHECK(loaded->input == w->input);

  // A payload the header checks cannot see: a non-zero zero point, a NaN or zero scale. load() takes the bytes;
  // prepare() refuses the quantization (its kernels then refuse to run).
  for (const auto& corrupt : {+[](net16::weights& c) { c.layer<0>().output.zero_point = 1; },
                              +[](net16::weights& c) { c.layer<0>().filter_scales[2] = std::nanf(""); },
                              +[](net16::weights& c) { c.layer<1>().output.scale = 0.0f; },
                              +[](net16::weights& c) { c.input.scale = -1.0f; }}) {
    auto bad = std::make_unique<net16::weights>(*w);
    corrupt(*bad);
    REQUIRE(net16::save(*bad, blob) == net16::blob_bytes);
    errors.reset();
    REQUIRE(net16::load(blob, *loaded));
    const auto p = std::make_unique<net16::prepared>(net16::prepare(*loaded));
    CHECK(errors.calls() >= 1);
    CHECK(errors.last() == errc::invalid_argument);
  }
}

TEST_CASE("network 16x8: a non-zero zero point is refused at quantize and at prepare") {
  test::recording_handler errors;
  const fixture<> f(6);
  tools::quantize_options options;
  options.input = quant_params{1.0f / 256.0f, 3};
  CHECK(tools::quantize_network<net16>(*f.fw, f.ranges, options) == nullptr);
  CHECK(errors.last() == errc::invalid_argument);

  const auto w = tools::quantize_network<net16>(*f.fw, f.ranges);
  REQUIRE(w != nullptr);
  errors.reset();
  w->layer<1>().output.zero_point = 5;  // hard swish's output
  const auto p = std::make_unique<net16::prepared>(net16::prepare(*w));
  CHECK(errors.calls() >= 1);
  CHECK(errors.last() == errc::invalid_argument);
}
