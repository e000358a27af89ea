// The multi-target link test: this program links the objects of tests/multitarget/network.cpp built
// for scalar, AVX2 and AVX-512 VNNI (and AVX-VNNI where the compiler has it). Each object exports
// the same three networks (u8, i8, i16) under target-named entries; every target the CPU runs must give the scalar
// build's output bit for bit, and runtime dispatch must pick the best of them. That the objects
// share no mosaiq symbol is checked on the objects themselves (multitarget/check_symbols.cmake).
// This file is compiled for the x86-64 baseline, as a dispatching program is.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "allocation_counter.hpp"
#include "mosaiq/dispatch.hpp"
#include "mosaiq/tools/calibrate.hpp"
#include "mosaiq/tools/quantize_16x8.hpp"
#include "multitarget/networks.hpp"
#include "network16x8_support.hpp"
#include "support.hpp"

MOSAIQ_DECLARE_NETWORK_ENTRIES(mt_u8_net)
MOSAIQ_DECLARE_NETWORK_ENTRIES(mt_i8_net)
MOSAIQ_DECLARE_NETWORK_ENTRIES(mt_i16_net)

namespace {

using namespace mosaiq;
namespace mt = mosaiq::test::multitarget;

/// Fills every field of a conv-like layer's weights; `output` is its output quantization.
template <class T, class W>
void fill_filtered(W& w, std::mt19937& rng, quant_params output) {
  const auto filter = test::random_values<T>(rng, w.filter.size());
  std::copy(filter.begin(), filter.end(), w.filter.begin());
  std::uniform_int_distribution<int> bias(-3000, 3000);
  for (auto& b : w.bias) b = bias(rng);
  std::uniform_real_distribution<float> scale(0.002f, 0.006f);
  for (auto& s : w.filter_scales) s = scale(rng);
  w.filter_zero_point = std::is_same_v<T, u8> ? std::uniform_int_distribution<int>(100, 160)(rng) : 0;
  w.output = output;
}

mt::u8_net::weights u8_weights(std::uint32_t seed) {
  std::mt19937 rng(seed);
  test::random_quant<u8> quant(rng);
  mt::u8_net::weights w;
  w.input = quant();
  fill_filtered<u8>(w.layer<0>(), rng, quant());
  fill_filtered<u8>(w.layer<2>(), rng, quant());
  w.layer<3>().output = quant();
  fill_filtered<u8>(w.layer<5>(), rng, quant());
  fill_filtered<u8>(w.layer<7>(), rng, quant());
  return w;
}

mt::i8_net::weights i8_weights(std::uint32_t seed) {
  std::mt19937 rng(seed);
  test::random_quant<i8> quant(rng);
  mt::i8_net::weights w;
  w.input = quant();
  fill_filtered<i8>(w.layer<0>(), rng, quant());
  fill_filtered<i8>(w.layer<1>(), rng, quant());
  fill_filtered<i8>(w.layer<2>(), rng, quant());
  fill_filtered<i8>(w.layer<3>(), rng, quant());
  return w;
}

/// 16x8 weights as a user gets them: random float weights, ranges calibrated on random inputs, the 16x8 rules
/// (tools/quantize_16x8.hpp), so every scale is one the 16x8 kernels take.
mt::i16_net::weights i16_weights(std::uint32_t seed) { return *test::random_16x8_weights<mt::i16_net>(seed).weights; }

/// The blob of `w`, written by this unit's (baseline) build of the network type.
template <class Net>
std::vector<std::byte> blob_of(const typename Net::weights& w) {
  std::vector<std::byte> blob(Net::blob_bytes);
  REQUIRE(Net::save(w, blob) == Net::blob_bytes);
  return blob;
}

/// A tensor of `dims` with `extra` unused elements after each pixel, filled from `seed`.
template <class T>
struct strided_tensor {
  shape dims;
  std::ptrdiff_t pixel_stride;
  std::vector<T> values;
  strided_tensor(shape s, int extra, std::uint32_t seed) : dims(s), pixel_stride(s.channels + extra) {
    std::mt19937 rng(seed);
    values = test::random_values<T>(rng, s.pixels() * std::size_t(pixel_stride) + 1);
  }
  // One element in: the data start is not aligned to anything wider than the element.
  tensor_view<T> view() { return tensor_view<T>(values.data() + 1, dims, 1, pixel_stride); }
  tensor_view<const T> cview() const { return tensor_view<const T>(values.data() + 1, dims, 1, pixel_stride); }
};

/// Prepares `entry` from `blob` and runs it on `input`; returns the output (every element of the
/// buffer, padding included, so a write outside the view shows up too).
template <class T>
std::vector<T> run_entry(const dispatch::network_entry& entry, std::span<const std::byte> blob,
                         const strided_tensor<T>& input, shape output_dims) {
  // The storage outlives the network: its destructor destroys the state kept there.
  std::vector<std::byte> state_storage(entry.state_bytes + entry.state_alignment);
  dispatched_network net(entry);
  void* state_start = state_storage.data();
  std::size_t space = state_storage.size();
  REQUIRE(std::align(net.state_alignment(), net.state_bytes(), state_start, space) != nullptr);
  REQUIRE(net.prepare(blob, std::span<std::byte>(static_cast<std::byte*>(state_start), net.state_bytes())).ok());
  strided_tensor<T> output(output_dims, 3, 77);
  test::aligned_arena arena(net.arena_bytes());
  const long allocations_before = test::heap_allocations();
  const status s = net.run(input.cview(), output.view(), arena.bytes);
  CHECK(test::heap_allocations() == allocations_before);
  REQUIRE(s.ok());
  return output.values;
}

/// A dispatched network prepared from `blob` in storage of its own (declared first: it outlives the
/// network, whose destructor destroys the state kept there).
struct prepared_entry {
  test::aligned_arena state;
  dispatched_network net;
  prepared_entry(const dispatch::network_entry& entry, std::span<const std::byte> blob)
      : state(entry.state_bytes), net(entry) {
    REQUIRE(net.prepare(blob, state.bytes).ok());
  }
};

/// The lines of what `print(file)` writes to a temporary file.
template <class Print>
std::vector<std::string> printed_lines(Print&& print) {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  print(file);
  std::rewind(file);
  std::vector<std::string> lines;
  char line[512];
  while (std::fgets(line, sizeof line, file) != nullptr) lines.emplace_back(line);
  std::fclose(file);
  return lines;
}

/// Runs every linked entry this CPU supports and compares it with the scalar one; returns the
/// names of the targets that ran.
template <class Net>
std::string check_targets_agree(const dispatch::entry_list& entries, const typename Net::weights& w,
                                std::uint32_t input_seed) {
  using T = typename Net::element_type;
  const dispatch::network_entry* scalar = entries[std::size_t(dispatch::target::scalar)];
  REQUIRE(scalar != nullptr);
  const std::vector<std::byte> blob = blob_of<Net>(w);
  const strided_tensor<T> input(Net::input_shape, 2, input_seed);
  const std::vector<T> expected = run_entry(*scalar, blob, input, Net::output_shape);
  std::string ran;
  for (const dispatch::network_entry* entry : entries) {
    if (entry == nullptr || !cpu_supports(entry->isa)) continue;
    CAPTURE(to_string(entry->isa));
    CHECK(run_entry(*entry, blob, input, Net::output_shape) == expected);
    ran += std::string(to_string(entry->isa)) + " ";
  }
  return ran;
}

TEST_CASE("multitarget: the linked entries are the ones built, each naming its own target") {
  const dispatch::entry_list u8_entries = MOSAIQ_NETWORK_ENTRIES(mt_u8_net);
  const dispatch::entry_list i8_entries = MOSAIQ_NETWORK_ENTRIES(mt_i8_net);
  const dispatch::entry_list i16_entries = MOSAIQ_NETWORK_ENTRIES(mt_i16_net);
  for (std::size_t i = 0; i < dispatch::target_count; ++i) {
    CAPTURE(i);
    CHECK((u8_entries[i] == nullptr) == (i8_entries[i] == nullptr));
    CHECK((u8_entries[i] == nullptr) == (i16_entries[i] == nullptr));
    if (u8_entries[i] == nullptr) continue;
    CHECK(u8_entries[i]->isa == dispatch::target(i));
    CHECK(i8_entries[i]->isa == dispatch::target(i));
    CHECK(i16_entries[i]->isa == dispatch::target(i));
    CHECK(u8_entries[i]->type == dispatch::element::u8);
    CHECK(i8_entries[i]->type == dispatch::element::i8);
    CHECK(i16_entries[i]->type == dispatch::element::i16);
    CHECK(i16_entries[i]->blob_bytes == mt::i16_net::blob_bytes);
    CHECK(i16_entries[i]->arena_bytes == mt::i16_net::arena_bytes);
    CHECK(u8_entries[i]->macs == mt::u8_net::macs);
    CHECK(u8_entries[i]->blob_bytes == mt::u8_net::blob_bytes);
  }
  // The three the CMake test builds (AVX-512 VNNI left out only where MOSAIQ_MULTITARGET_TEST_SKIP says so).
  for (auto t : {dispatch::target::scalar, dispatch::target::avx2}) CHECK(u8_entries[std::size_t(t)] != nullptr);
#ifndef MOSAIQ_MULTITARGET_WITHOUT_AVX512_VNNI
  CHECK(u8_entries[std::size_t(dispatch::target::avx512_vnni)] != nullptr);
#endif
  // Each target's entry runs different code: the functions are distinct instantiations.
  const bool distinct_code =
      u8_entries[std::size_t(dispatch::target::scalar)]->run != u8_entries[std::size_t(dispatch::target::avx2)]->run;
  CHECK(distinct_code);
}

TEST_CASE("multitarget: every target this CPU runs gives the scalar build's output bit for bit") {
  for (std::uint32_t seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    const std::string u8_ran =
        check_targets_agree<mt::u8_net>(MOSAIQ_NETWORK_ENTRIES(mt_u8_net), u8_weights(seed), seed * 7);
    const std::string i8_ran =
        check_targets_agree<mt::i8_net>(MOSAIQ_NETWORK_ENTRIES(mt_i8_net), i8_weights(seed), seed * 11);
    const std::string i16_ran =
        check_targets_agree<mt::i16_net>(MOSAIQ_NETWORK_ENTRIES(mt_i16_net), i16_weights(seed), seed * 13);
    MESSAGE("targets run: " << u8_ran);
    CHECK(u8_ran == i8_ran);
    CHECK(u8_ran == i16_ran);
    if (cpu_supports(dispatch::target::avx2)) CHECK(u8_ran.find("avx2 ") != std::string::npos);
  }
}

TEST_CASE("multitarget: the scalar entry equals the network run directly") {
  const mt::u8_net::weights w = u8_weights(5);
  const std::vector<std::byte> blob = blob_of<mt::u8_net>(w);
  const strided_tensor<u8> input(mt::u8_net::input_shape, 0, 9);
  const auto via_entry = run_entry(*MOSAIQ_NETWORK_ENTRIES(mt_u8_net)[std::size_t(dispatch::target::scalar)], blob,
                                   input, mt::u8_net::output_shape);
  const mt::u8_net::prepared p = mt::u8_net::prepare(w);
  strided_tensor<u8> direct(mt::u8_net::output_shape, 3, 77);
  test::aligned_arena arena(mt::u8_net::arena_bytes);
  mt::u8_net::run(p, input.cview(), direct.view(), arena.bytes);
  CHECK(via_entry == direct.values);
}

TEST_CASE("multitarget: dispatch picks the best linked target the CPU runs") {
  const dispatch::entry_list entries = MOSAIQ_NETWORK_ENTRIES(mt_u8_net);
  const dispatched_network net(entries);
  REQUIRE(net.selected());
  std::string_view best = "none";
  for (const dispatch::network_entry* entry : entries)
    if (entry != nullptr && cpu_supports(entry->isa)) {
      best = to_string(entry->isa);
      break;
    }
  CHECK(net.target() == best);
  MESSAGE("dispatch picked " << std::string(net.target()) << std::string(net.uses_amx() ? " with AMX" : ""));
  CHECK(net.input_shape() == mt::u8_net::input_shape);
  CHECK(net.output_shape() == mt::u8_net::output_shape);
  // Without the best targets linked, the next best is taken; with none, nothing is.
  dispatch::entry_list scalar_only{};
  scalar_only[std::size_t(dispatch::target::scalar)] = entries[std::size_t(dispatch::target::scalar)];
  CHECK(dispatched_network(scalar_only).target() == "scalar");
  CHECK_FALSE(dispatched_network(dispatch::entry_list{}).selected());
}

TEST_CASE("multitarget: thread pools, extra outputs and the profile cross the boundary") {
  const mt::u8_net::weights w = u8_weights(6);
  const std::vector<std::byte> blob = blob_of<mt::u8_net>(w);
  const strided_tensor<u8> input(mt::u8_net::input_shape, 1, 13);
  // The network run directly by this (baseline) unit: main and extra output.
  const mt::u8_net::prepared direct = mt::u8_net::prepare(w);
  // Every output buffer starts from the same bytes (seed 3): the element before the view must stay.
  strided_tensor<u8> expected(mt::u8_net::output_shape, 0, 3);
  test::aligned_arena direct_arena(mt::u8_net::arena_bytes);
  mt::u8_net::run(direct, input.cview(), expected.view(), direct_arena.bytes);
  const tensor_view<const u8> expected_sum = mt::u8_net::output_view<"sum">(direct_arena.bytes);
  const std::vector<u8> expected_sum_values(expected_sum.data(), expected_sum.data() + expected_sum.dims().elements());
  std::size_t op_layers = 0;
  for (const layer_node& node : mt::u8_net::topology.layers) op_layers += node.role == layer_role::op;

  thread_pool pool(3);
  for (const dispatch::network_entry* entry : MOSAIQ_NETWORK_ENTRIES(mt_u8_net)) {
    if (entry == nullptr || !cpu_supports(entry->isa)) continue;
    CAPTURE(to_string(entry->isa));
    prepared_entry p(*entry, blob);
    test::aligned_arena arena(p.net.arena_bytes());
    strided_tensor<u8> output(mt::u8_net::output_shape, 0, 3);
    const long allocations_before = test::heap_allocations();
    REQUIRE(p.net.run(input.cview(), output.view(), arena.bytes, pool).ok());
    CHECK(test::heap_allocations() == allocations_before);
    CHECK(output.values == expected.values);

    const tensor_view<const u8> sum = p.net.extra_output<u8>("sum", arena.bytes);
    REQUIRE(sum.data() != nullptr);
    CHECK(sum.dims() == mt::u8_net::tensor_shape<"sum">);
    CHECK(std::vector<u8>(sum.data(), sum.data() + sum.dims().elements()) == expected_sum_values);
    CHECK(p.net.extra_output_quant("sum") == direct.tensor_quant(mt::u8_net::tensor_named<"sum">));
    CHECK(p.net.output_quant() == direct.tensor_quant(mt::u8_net::tensor_count - 1));

    // The profile runs the network (the output is written again) and prints one row per op layer.
    strided_tensor<u8> profiled(mt::u8_net::output_shape, 0, 3);
    const std::vector<std::string> lines = printed_lines([&](std::FILE* file) {
      CHECK(p.net.profile(input.cview(), profiled.view(), arena.bytes, 2, file, pool).ok());
    });
    CHECK(profiled.values == expected.values);
    REQUIRE(lines.size() == op_layers + 2);  // header, rows, total
    CHECK(lines.back().starts_with("total: "));
  }
}

TEST_CASE("multitarget: an i16 (16x8) network crosses the boundary as int16 views, its element checked") {
  const mt::i16_net::weights w = i16_weights(8);
  const std::vector<std::byte> blob = blob_of<mt::i16_net>(w);
  const strided_tensor<i16> input(mt::i16_net::input_shape, 1, 17);
  // The network run directly by this (baseline) unit: main and extra output.
  const auto direct = std::make_unique<mt::i16_net::prepared>(mt::i16_net::prepare(w));
  strided_tensor<i16> expected(mt::i16_net::output_shape, 0, 3);
  test::aligned_arena direct_arena(mt::i16_net::arena_bytes);
  mt::i16_net::run(*direct, input.cview(), expected.view(), direct_arena.bytes);
  const tensor_view<const i16> expected_gate = mt::i16_net::output_view<"gate">(direct_arena.bytes);
  const std::vector<i16> expected_gate_values(expected_gate.data(),
                                              expected_gate.data() + expected_gate.dims().elements());
  // Not a constant map: the weights reach the output.
  const auto [low, high] = std::ranges::minmax(expected.values);
  CHECK(low < high);

  thread_pool pool(2);
  for (const dispatch::network_entry* entry : MOSAIQ_NETWORK_ENTRIES(mt_i16_net)) {
    if (entry == nullptr || !cpu_supports(entry->isa)) continue;
    CAPTURE(to_string(entry->isa));
    prepared_entry p(*entry, blob);
    CHECK(p.net.element() == "i16");
    CHECK(p.net.input_quant() == direct->tensor_quant(0));
    CHECK(p.net.output_quant() == direct->tensor_quant(mt::i16_net::tensor_count - 1));
    test::aligned_arena arena(p.net.arena_bytes());
    strided_tensor<i16> output(mt::i16_net::output_shape, 0, 3);
    const long allocations_before = test::heap_allocations();
    REQUIRE(p.net.run(input.cview(), output.view(), arena.bytes, pool).ok());
    CHECK(test::heap_allocations() == allocations_before);
    CHECK(output.values == expected.values);
    const tensor_view<const i16> gate = p.net.extra_output<i16>("gate", arena.bytes);
    REQUIRE(gate.data() != nullptr);
    CHECK(std::vector<i16>(gate.data(), gate.data() + gate.dims().elements()) == expected_gate_values);
    CHECK(p.net.extra_output_quant("gate") == direct->tensor_quant(mt::i16_net::tensor_named<"gate">));

    strided_tensor<i16> profiled(mt::i16_net::output_shape, 0, 3);
    const std::vector<std::string> lines = printed_lines([&](std::FILE* file) {
      CHECK(p.net.profile(input.cview(), profiled.view(), arena.bytes, 2, file, pool).ok());
    });
    CHECK(profiled.values == expected.values);
    REQUIRE_FALSE(lines.empty());
    CHECK(lines.back().starts_with("total: "));

    // 8-bit views are refused before anything runs, and an 8-bit extra output is not handed out.
    std::vector<i8> i8_output(mt::i16_net::output_shape.elements(), 5);
    const std::vector<i8> i8_input(mt::i16_net::input_shape.elements());
    CHECK(p.net
              .run(tensor_view<const i8>(i8_input.data(), mt::i16_net::input_shape),
                   tensor_view<i8>(i8_output.data(), mt::i16_net::output_shape), arena.bytes)
              .code == errc::invalid_argument);
    CHECK(std::ranges::all_of(i8_output, [](i8 v) { return v == 5; }));
    test::recording_handler errors;
    CHECK(p.net.extra_output<i8>("gate", arena.bytes).data() == nullptr);
    CHECK(errors.calls() == 1);
  }
  // And the reverse: an 8-bit network takes no int16 views.
  const dispatch::network_entry& i8_entry = *MOSAIQ_NETWORK_ENTRIES(mt_i8_net)[std::size_t(dispatch::target::scalar)];
  prepared_entry p8(i8_entry, blob_of<mt::i8_net>(i8_weights(8)));
  CHECK(p8.net.element() == "i8");
  test::aligned_arena arena8(p8.net.arena_bytes());
  const strided_tensor<i16> input16(mt::i8_net::input_shape, 0, 1);
  strided_tensor<i16> output16(mt::i8_net::output_shape, 0, 2);
  CHECK(p8.net.run(input16.cview(), output16.view(), arena8.bytes).code == errc::invalid_argument);
  CHECK(dispatched_network(dispatch::entry_list{}).element() == "none");
}

TEST_CASE("multitarget: extra outputs and executors are checked at the boundary") {
  const dispatch::network_entry& entry = *MOSAIQ_NETWORK_ENTRIES(mt_u8_net)[std::size_t(dispatch::target::scalar)];
  prepared_entry p(entry, blob_of<mt::u8_net>(u8_weights(7)));
  test::aligned_arena arena(p.net.arena_bytes());
  test::recording_handler errors;
  CHECK(p.net.extra_output<u8>("no such output", arena.bytes).data() == nullptr);
  CHECK(errors.calls() == 1);
  CHECK(p.net.extra_output<i8>("sum", arena.bytes).data() == nullptr);
  CHECK(errors.calls() == 2);
  CHECK(p.net.extra_output<u8>("sum", arena.bytes.first(16)).data() == nullptr);
  CHECK(errors.calls() == 3);
  CHECK(p.net.extra_output_quant("no such output") == quant_params{});

  // An executor_ref without parallel_for is refused before anything runs.
  const strided_tensor<u8> input(mt::u8_net::input_shape, 0, 1);
  strided_tensor<u8> output(mt::u8_net::output_shape, 0, 2);
  const std::vector<u8> untouched = output.values;
  const dispatch::tensor_ref in{input.cview().data(), 23, 29, 3, 3};
  const dispatch::tensor_ref out{output.view().data(), 24, 30, 5, 5};
  test::aligned_arena state(entry.state_bytes);
  REQUIRE(entry.prepare(blob_of<mt::u8_net>(u8_weights(7)).data(), entry.blob_bytes, state.bytes.data()).code == 0);
  CHECK(entry.run(state.bytes.data(), in, out, arena.bytes.data(), arena.bytes.size(), {nullptr, 1, nullptr}).code ==
        int(errc::invalid_argument));
  entry.destroy(state.bytes.data());
  CHECK(output.values == untouched);
}

TEST_CASE("multitarget: misuse at the boundary is a status, nothing is written") {
  const dispatch::network_entry& entry = *MOSAIQ_NETWORK_ENTRIES(mt_u8_net)[std::size_t(dispatch::target::scalar)];
  const std::vector<std::byte> blob = blob_of<mt::u8_net>(u8_weights(4));
  test::aligned_arena state(entry.state_bytes + 64);  // outlives the network, which destroys its state
  dispatched_network net(entry);
  const strided_tensor<u8> input(mt::u8_net::input_shape, 0, 1);
  strided_tensor<u8> output(mt::u8_net::output_shape, 0, 2);
  const std::vector<u8> untouched = output.values;
  test::aligned_arena arena(net.arena_bytes() + 64);
  CHECK(net.run(input.cview(), output.view(), arena.bytes).code == errc::invalid_argument);  // not prepared

  CHECK(net.prepare(blob, state.bytes.first(net.state_bytes() - 1)).code == errc::invalid_argument);
  if (net.state_alignment() > 1) CHECK(net.prepare(blob, state.bytes.subspan(1)).code == errc::bad_alignment);
  CHECK(net.prepare(std::span(blob).first(blob.size() - 1), state.bytes).code == errc::blob_mismatch);
  REQUIRE(net.prepare(blob, state.bytes).ok());

  const strided_tensor<u8> wrong_input(shape{23, 28, 3}, 0, 1);
  CHECK(net.run(wrong_input.cview(), output.view(), arena.bytes).code == errc::shape_mismatch);
  CHECK(net.run(input.cview(), tensor_view<u8>(nullptr, mt::u8_net::output_shape), arena.bytes).code ==
        errc::null_pointer);
  CHECK(net.run(input.cview(), output.view(), arena.bytes.first(net.arena_bytes() - 1)).code == errc::invalid_argument);
  CHECK(net.run(input.cview(), output.view(), arena.bytes.subspan(32, net.arena_bytes())).code == errc::bad_alignment);
  std::vector<i8> i8_output(mt::u8_net::output_shape.elements());
  const std::vector<i8> i8_input(mt::u8_net::input_shape.elements());
  CHECK(net.run(tensor_view<const i8>(i8_input.data(), mt::u8_net::input_shape),
                tensor_view<i8>(i8_output.data(), mt::u8_net::output_shape), arena.bytes)
            .code == errc::invalid_argument);
  CHECK(output.values == untouched);
  CHECK(net.run(input.cview(), output.view(), arena.bytes).ok());
  CHECK(output.values != untouched);
}

}  // namespace
