#include "algorithms/direct/staging.h"

#include <mutex>
#include <utility>

#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

struct Kept {
  std::mutex mu;
  Staging::Buffer data;
  std::size_t bytes = 0;
  StagingMemory memory;
};

Kept& kept() {
  static Kept* k = new Kept();  // never destroyed: tasks may outlive static destruction
  return *k;
}

}  // namespace

void StagingFree::operator()(std::byte* data) const {
  if (release != nullptr) {
    release(data);
  } else {
    delete[] data;
  }
}

void setStagingMemory(StagingMemory memory) {
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mu);
  k.memory = memory;
}

Staging Staging::take(std::size_t bytes) {
  Staging s;
  if (bytes == 0) return s;
  StagingMemory memory;
  {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mu);
    if (k.data && k.bytes >= bytes) {
      s.data_ = std::move(k.data);
      s.bytes_ = std::exchange(k.bytes, 0);
      return s;
    }
    memory = k.memory;
  }
  void* mapped = memory.allocate != nullptr ? memory.allocate(bytes) : nullptr;
  if (mapped != nullptr) {
    s.data_ = Buffer(static_cast<std::byte*>(mapped), StagingFree{memory.release});
  } else {
    s.data_ = Buffer(new std::byte[bytes], StagingFree{});
  }
  s.bytes_ = bytes;
  return s;
}

Staging& Staging::operator=(Staging&& other) noexcept {
  if (this != &other) {
    giveBack();
    data_ = std::move(other.data_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Staging::~Staging() {
  giveBack();
}

void Staging::giveBack() {
  if (!data_) return;
  Kept& k = kept();
  {
    std::lock_guard<std::mutex> lock(k.mu);
    // The larger of the two is kept; the other is freed below, outside the lock.
    if (!k.data || k.bytes < bytes_) {
      std::swap(k.data, data_);
      std::swap(k.bytes, bytes_);
    }
  }
  data_.reset();
  bytes_ = 0;
}

void copyStagedBlocks(std::byte* recv, const std::byte* staged, std::size_t block, int n,
                      int self) {
  for (int p = 0; p < n; ++p) {
    const auto at = static_cast<std::size_t>(p) * block;
    if (p != self) transport::copyBytes(recv + at, staged + at, block);
  }
}

}  // namespace ftcomm::algorithms
