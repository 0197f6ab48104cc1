// Scratch memory for the message algorithms, reused from call to call. A training loop reduces
// the same bucket sizes over and over, and a fresh allocation of 32 MiB or more is a fresh mmap
// whose first touch faults every page in: on a VM measured in docs/BENCHMARKS.md that cost more
// than the transfer itself. Blocks of 1 MiB or more therefore go back to a small process-wide
// cache when a task ends, and the next task of a similar size takes them from there.
//
// Thread-safety: a Scratch belongs to one task; the cache behind it is locked.
#pragma once

#include <cstddef>

namespace ftcomm::algorithms {

class Scratch {
 public:
  Scratch() = default;
  ~Scratch() { release(); }
  Scratch(Scratch&& other) noexcept;
  Scratch& operator=(Scratch&& other) noexcept;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // At least `bytes` of uninitialized memory; what was there before is not kept.
  void resize(std::size_t bytes);
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Frees every cached block (tests, and a process that wants its memory back).
  static void dropCache();
  // Bytes held by the cache now.
  static std::size_t cachedBytes();

 private:
  void release();

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;      // what the user asked for
  std::size_t capacity_ = 0;  // the block's real size
};

}  // namespace ftcomm::algorithms
