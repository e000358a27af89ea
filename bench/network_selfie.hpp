// bench_network's selfie rows (bench/network_selfie.cpp, built when CMake found the selfie models and photos).
#pragma once

#include <vector>

namespace mosaiq::bench {

/// `network/{mosaiq,xnnpack}/selfie_{256,144x256}_{i8,u8}` for each thread count (`_t<N>` for N > 1) and the
/// one-thread `_banded` row.
void register_selfie(const std::vector<int>& thread_counts);
/// The selfie models' rows of `--memory_table`.
void print_selfie_memory_rows();

}  // namespace mosaiq::bench
