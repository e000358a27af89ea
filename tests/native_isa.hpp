// Test entry points: which ISA a binary was compiled for, and whether this CPU runs it.
#pragma once

#include <cstdio>

#include "mosaiq/simd/arch.hpp"

namespace mosaiq::test {

/// Prints "<what>, isa = <isa>" and returns true, or prints why the binary is skipped and returns
/// false (the caller then exits 77, which ctest and meson report as skipped).
inline bool announce_native_isa(const char* what) {
  const auto name = simd::to_string(simd::native_isa);
  if (!simd::cpu_supports_native_isa()) {
    std::printf("skipped: this CPU cannot run the %.*s build\n", static_cast<int>(name.size()), name.data());
    return false;
  }
  std::printf("%s, isa = %.*s\n", what, static_cast<int>(name.size()), name.data());
  return true;
}

/// announce_native_isa for the ISA level of this test binary (tests/main.cpp, compiled for it); called by the runner
/// (tests/doctest_main.cpp, compiled once for the baseline ISA).
bool cpu_runs_this_binary();

}  // namespace mosaiq::test
