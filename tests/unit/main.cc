// The test binaries' entry point (the GPU tests have their own, gpu/main.cc).
#include "catch_impl.h"

int main(int argc, char** argv) {
  return runCatch(argc, argv);
}
