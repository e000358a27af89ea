// Per-layer timing of a static network, printed like MACE's model benchmark: one row per op layer
// (op, output shape, MACs, average ms, share of the total, cumulative share, GMAC/s) and a summary.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string_view>
#include <utility>

#include "mosaiq/core/parallel.hpp"
#include "mosaiq/core/tensor.hpp"
#include "mosaiq/net/network.hpp"
#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE {

/// The `kind` of layer `index` of Net ("conv2d", "add", ...).
template <class Net>
constexpr std::string_view layer_kind(std::size_t index) noexcept {
  std::string_view kind;
  detail::for_index_chunks<Net::layer_count>([&]<std::size_t... I>(std::index_sequence<I...>) {
    ((I == index ? (kind = Net::template layer<I>::kind, 0) : 0), ...);
  });
  return kind;
}

template <std::size_t LayerCount>
struct profile_report {
  std::array<double, LayerCount> layer_ms{};  ///< average per run; 0 for tap and from
  double total_ms = 0;                        ///< average per run, sum of the layers
  int runs = 0;
};

/// Runs `net` `runs` times (after one warm-up run) and prints the table to `out` (nullptr: no print).
template <class Net>
profile_report<Net::layer_count> profile(const typename Net::prepared& prepared,
                                         tensor_view<const typename Net::element_type> input,
                                         tensor_view<typename Net::element_type> output, std::span<std::byte> arena,
                                         int runs, std::FILE* out = stdout) {
  serial_executor serial;
  return profile<Net>(prepared, input, output, arena, runs, out, serial);
}

/// The same with the layers running on `exec`'s threads: a layer's time runs from before its
/// parallel_for to after its barrier. Layers of a band chain add up their time over the bands; a row
/// run (network.hpp) in more than one band is one parallel_for, timed on its last layer (0 on the others).
template <class Net, parallel_executor E>
profile_report<Net::layer_count> profile(const typename Net::prepared& prepared,
                                         tensor_view<const typename Net::element_type> input,
                                         tensor_view<typename Net::element_type> output, std::span<std::byte> arena,
                                         int runs, std::FILE* out, E& exec) {
  using clock = std::chrono::steady_clock;
  struct timer {
    std::array<double, Net::layer_count>* total_ms;
    clock::time_point start{};
    void before(std::size_t) noexcept { start = clock::now(); }
    void after(std::size_t layer, std::span<std::byte>) noexcept {
      (*total_ms)[layer] += std::chrono::duration<double, std::milli>(clock::now() - start).count();
    }
  };
  profile_report<Net::layer_count> report;
  report.runs = runs < 1 ? 1 : runs;
  std::array<double, Net::layer_count> warm_up{};
  Net::run_observed(prepared, input, output, arena, timer{&warm_up}, exec);
  for (int r = 0; r < report.runs; ++r)
    Net::run_observed(prepared, input, output, arena, timer{&report.layer_ms}, exec);
  for (double& ms : report.layer_ms) {
    ms /= report.runs;
    report.total_ms += ms;
  }
  if (out == nullptr) return report;

  std::fprintf(out, "%-4s %-20s %-16s %14s %10s %7s %7s %8s\n", "#", "op", "output", "MACs", "avg ms", "%", "cdf %",
               "GMAC/s");
  double cumulative = 0;
  for (std::size_t i = 0; i < Net::layer_count; ++i) {
    if (Net::topology.layers[i].role != layer_role::op) continue;
    const shape s = Net::layer_shapes[i];
    const double ms = report.layer_ms[i];
    const double share = report.total_ms > 0 ? 100.0 * ms / report.total_ms : 0.0;
    cumulative += share;
    const double gmacs = ms > 0 ? static_cast<double>(Net::layer_macs[i]) / (ms * 1e6) : 0.0;
    char dims[32];
    std::snprintf(dims, sizeof dims, "%dx%dx%d", s.height, s.width, s.channels);
    std::fprintf(out, "%-4zu %-20.*s %-16s %14llu %10.4f %7.2f %7.2f %8.3f\n", i,
                 static_cast<int>(layer_kind<Net>(i).size()), layer_kind<Net>(i).data(), dims,
                 static_cast<unsigned long long>(Net::layer_macs[i]), ms, share, cumulative, gmacs);
  }
  std::fprintf(out,
               "total: %llu MACs, %.4f ms, %.3f GMAC/s, arena %zu bytes (peak live %zu, efficiency %.3f), weights "
               "%llu bytes, %d runs\n",
               static_cast<unsigned long long>(Net::macs), report.total_ms,
               report.total_ms > 0 ? static_cast<double>(Net::macs) / (report.total_ms * 1e6) : 0.0, Net::arena_bytes,
               Net::peak_live_bytes, Net::plan_efficiency, static_cast<unsigned long long>(Net::weight_bytes),
               report.runs);
  if constexpr (Net::banded) {
    for (int c = 0; c < Net::band_chain_count; ++c) {
      const auto& chain = Net::band_chains[std::size_t(c)];
      std::fprintf(out, "bands: layers %d..%d in %d bands of %d rows\n", chain.first, chain.last, chain.count,
                   chain.rows);
    }
    std::fprintf(out, "bands: overhead figure %.1f%%, arena %zu bytes, layer by layer %zu (%zu saved)\n",
                 Net::band_overhead_percent, Net::arena_bytes, Net::layer_by_layer_arena_bytes, Net::band_saved_bytes);
  }
  return report;
}

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE
