// The ISA check of a test binary, compiled for the binary's ISA level: prints the ISA and skips (exit 77, which
// ctest reports as "skipped") when the CPU cannot run it. main() is tests/doctest_main.cpp's.
#include <cstdio>
#include <cstdlib>

#include "native_isa.hpp"

// Every translation unit of a test binary is compiled for its ISA level, and the compiler may use
// that level's instructions in their static initializers (doctest's test registrations), which run
// before main: on a CPU without them the binary would fault instead of skipping. A constructor of
// priority 101 runs before every default-priority initializer.
[[gnu::constructor(101)]] static void skip_before_static_initialization() {
  if (mosaiq::simd::cpu_supports_native_isa()) return;
  mosaiq::test::announce_native_isa("mosaiq tests");  // prints why it skips
  std::fflush(stdout);
  std::_Exit(77);
}

bool mosaiq::test::cpu_runs_this_binary() { return announce_native_isa("mosaiq tests"); }
