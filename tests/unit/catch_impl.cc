// Catch2's implementation, compiled once for every test binary (the largest of the tests'
// compilations). Each binary brings its own main, which calls runCatch: unit/main.cc, or
// gpu/main.cc, which skips without a CUDA device.
#define CATCH_CONFIG_RUNNER
#include "catch_impl.h"

#include <catch2/catch.hpp>

int runCatch(int argc, char** argv) {
  return Catch::Session().run(argc, argv);
}
