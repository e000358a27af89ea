// Test entry point: prints the ISA this binary was compiled for and skips (exit 77, which ctest
// reports as "skipped") when the CPU cannot run it.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "native_isa.hpp"

int main(int argc, char** argv) {
  if (!mosaiq::test::announce_native_isa("mosaiq tests")) return 77;
  doctest::Context context(argc, argv);
  return context.run();
}
