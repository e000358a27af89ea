// bench_network's selfie rows (bench/network_selfie.cpp, built when CMake found the selfie models and photos).
#pragma once

#include <vector>

namespace mosaiq::bench {

/// `network/{mosaiq,xnnpack}/selfie_{256,144x256}_{i8,u8}` and the `_banded` rows, one thread.
void register_selfie();
/// The selfie models' rows of `--memory_table`.
void print_selfie_memory_rows();

}  // namespace mosaiq::bench
