// Helpers of the GPU tests: NCCL communicators whose ranks are threads of this process, one
// device each (NCCL refuses two ranks on one GPU unless NCCL_MULTI_RANK_GPU_ENABLE=1 where that
// NCCL has it), and device buffers filled from and read back to host vectors.
//
// Thread-safety: DeviceBuffer is used by one thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/nccl/nccl_backend.h"
#include "ftcomm/nccl_communicator.h"

namespace ftcomm::gpu_test {

inline int deviceCount() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess ? devices : 0;
}

// Rank r's device: one per rank, round-robin when there are more ranks than devices.
inline int deviceOf(int rank) {
  return rank % std::max(1, deviceCount());
}

// The multi-rank test's ranks: one per device, or FTCOMM_GPU_TEST_RANKS of them sharing the
// devices (for an NCCL run with NCCL_MULTI_RANK_GPU_ENABLE=1).
inline int multiRankSize() {
  const char* ranks = std::getenv("FTCOMM_GPU_TEST_RANKS");
  return ranks != nullptr ? std::atoi(ranks) : deviceCount();
}

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer(int device, std::size_t count) : count_(count) {
    cudaSetDevice(device);
    if (cudaMalloc(&data_, std::max<std::size_t>(count, 1) * sizeof(T)) != cudaSuccess) {
      throw std::runtime_error("cudaMalloc failed");
    }
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return static_cast<T*>(data_); }
  void fill(const std::vector<T>& values) {
    cudaMemcpy(data_, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  std::vector<T> read() const {
    std::vector<T> out(count_);
    cudaMemcpy(out.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost);
    return out;
  }

 private:
  void* data_ = nullptr;
  std::size_t count_;
};

struct GpuGroup {
  std::shared_ptr<nccl::LocalGroup> group = std::make_shared<nccl::LocalGroup>();
  std::vector<std::unique_ptr<NcclCommunicator>> comms;
};

// `size` ranks on deviceOf(0..size-1), created concurrently as NCCL requires.
inline GpuGroup makeGroup(int size) {
  GpuGroup g;
  g.comms.resize(static_cast<std::size_t>(size));
  std::vector<std::future<Status>> done;
  for (int r = 0; r < size; ++r) {
    done.push_back(std::async(std::launch::async, [&g, r, size] {
      std::string why;
      nccl::NcclSetup setup;
      setup.api = nccl::makeVendorApi(&why);
      if (setup.api == nullptr) return failedPrecondition(why);
      setup.bootstrap = std::make_shared<nccl::LocalBootstrap>(g.group);
      setup.device = deviceOf(r);
      setup.rank = r;
      setup.size = size;
      setup.name = "gpu-test";
      setup.id = 77;
      for (int w = 0; w < size; ++w) setup.worldRanks.push_back(w);
      setup.keyPrefix = "gpu-test";
      setup.setupTimeout = std::chrono::seconds(60);
      setup.opTimeout = std::chrono::seconds(60);
      auto backend = nccl::NcclBackend::create(std::move(setup));
      if (!backend.ok()) return backend.status();
      g.comms[static_cast<std::size_t>(r)] = std::make_unique<NcclCommunicator>(*backend);
      return Status::Ok();
    }));
  }
  for (auto& d : done) {
    Status s = d.get();
    if (!s.ok()) throw std::runtime_error("NCCL group setup failed: " + s.toString());
  }
  return g;
}

}  // namespace ftcomm::gpu_test
