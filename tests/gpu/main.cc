// The GPU tests' entry point: without a CUDA device they skip as a whole, saying so, with the
// exit code ctest reads as skipped (SKIP_RETURN_CODE 77). Catch2's implementation is
// unit/catch_impl.cc.
#include <cuda_runtime.h>

#include <cstdio>

#include "../unit/catch_impl.h"

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t rc = cudaGetDeviceCount(&devices);
  if (rc != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping the GPU tests (%s)\n",
                rc == cudaSuccess ? "none present" : cudaGetErrorString(rc));
    return 77;
  }
  std::printf("%d CUDA device(s)\n", devices);
  return runCatch(argc, argv);
}
