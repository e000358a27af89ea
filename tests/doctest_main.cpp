// The doctest runner shared by every test binary: compiled once, for the baseline ISA (it depends on no
// ISA level), so each binary compiles only its own tests and tests/main.cpp (its ISA check).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "native_isa.hpp"

int main(int argc, char** argv) {
  if (!mosaiq::test::cpu_runs_this_binary()) return 77;
  doctest::Context context(argc, argv);
  return context.run();
}
