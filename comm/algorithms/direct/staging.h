// Staging buffers for the direct algorithms (a non-root's reduced slice, a result that must not
// overwrite an input the peers still read), kept between operations. A large buffer allocated
// per operation is a fresh mapping each time (glibc maps anything from 32 MiB on), and touching
// it costs a page fault per 4 KiB: for a 64 MiB reduce at 2 ranks, 8192 faults, about as long
// as the copies themselves. The process keeps the largest buffer it has staged through, and an
// operation takes it when it is large enough and no other operation holds it.
//
// Thread-safety: take() and the destructor may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>

namespace ftcomm::algorithms {

// Where staging memory comes from: the heap, unless the communicator layer installs memory that
// same-host peers map (ftcomm::allocMem's), which they then read without cross-memory attach (a
// direct reduce's root reads each non-root's staged slice). `allocate` may return null (the heap
// is used then). Installed before the first collective; later installs apply to new buffers.
struct StagingMemory {
  void* (*allocate)(std::size_t bytes) = nullptr;
  void (*release)(void* memory) = nullptr;
};
void setStagingMemory(StagingMemory memory);

// How a staging buffer is freed: the heap's delete[], or StagingMemory's release.
struct StagingFree {
  void (*release)(void*) = nullptr;
  void operator()(std::byte* data) const;
};

class Staging {
 public:
  Staging() = default;
  // At least `bytes` uninitialized bytes (none for 0).
  static Staging take(std::size_t bytes);
  Staging(Staging&&) = default;
  Staging& operator=(Staging&& other) noexcept;
  ~Staging();

  std::byte* get() const { return data_.get(); }
  explicit operator bool() const { return data_ != nullptr; }

  using Buffer = std::unique_ptr<std::byte[], StagingFree>;

 private:
  void giveBack();

  Buffer data_;
  std::size_t bytes_ = 0;
};

// An all-to-all in place, once no peer reads its input any more: copies every block but
// `self`'s (which stayed where it was) from `staged` into `recv`, `block` bytes each.
void copyStagedBlocks(std::byte* recv, const std::byte* staged, std::size_t block, int n, int self);

}  // namespace ftcomm::algorithms
