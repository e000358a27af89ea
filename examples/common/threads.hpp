// Threads in the examples and bench_network: the most threads their networks plan workspace for,
// and the `--threads N` flag they all take.
#pragma once

#include <cstdlib>
#include <string_view>

namespace mosaiq_examples {

/// The example networks are built for runs on up to this many threads (input<...>::with_max_threads).
inline constexpr int max_threads = 4;

/// Removes `--threads N` from argv and returns N: 1 when the flag is absent, 0 when N is not in
/// 1..max_threads (the caller prints its usage).
inline int take_threads_flag(int& argc, char** argv) {
  int threads = 1;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      if (threads < 1 || threads > max_threads) threads = 0;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return threads;
}

}  // namespace mosaiq_examples
