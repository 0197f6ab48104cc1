#include "algorithms/scratch.h"

#include <algorithm>
#include <cstdlib>
#include <list>
#include <mutex>
#include <new>
#include <utility>

namespace ftcomm::algorithms {
namespace {

// Smaller blocks come from malloc's own free lists cheaply; only large ones are kept.
constexpr std::size_t kCachedFrom = std::size_t{1} << 20;
// A block is reused for requests down to half its size, and the cache holds a few blocks,
// at most kMaxCachedBytes, dropping the least recently returned first.
constexpr std::size_t kMaxBlocks = 8;
constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;
constexpr std::size_t kRounding = std::size_t{64} << 10;

struct Block {
  std::byte* data;
  std::size_t bytes;
};

struct Cache {
  std::mutex mu;
  std::list<Block> blocks;  // most recently returned first
  std::size_t bytes = 0;
};

Cache& cache() {
  // Never destroyed: tasks may end during static destruction.
  static Cache* c = new Cache();
  return *c;
}

std::byte* allocate(std::size_t bytes) {
  return static_cast<std::byte*>(::operator new (bytes, std::align_val_t{64}));
}

void deallocate(std::byte* data) {
  ::operator delete (data, std::align_val_t{64});
}

}  // namespace

Scratch::Scratch(Scratch&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

Scratch& Scratch::operator=(Scratch&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void Scratch::resize(std::size_t bytes) {
  if (bytes <= capacity_) {
    size_ = bytes;
    return;
  }
  release();
  if (bytes == 0) return;
  if (bytes >= kCachedFrom) {
    Cache& c = cache();
    std::lock_guard lock(c.mu);
    for (auto it = c.blocks.begin(); it != c.blocks.end(); ++it) {
      if (it->bytes >= bytes && it->bytes / 2 <= bytes) {
        data_ = it->data;
        capacity_ = it->bytes;
        size_ = bytes;
        c.bytes -= it->bytes;
        c.blocks.erase(it);
        return;
      }
    }
  }
  const std::size_t rounded =
      bytes >= kCachedFrom ? (bytes + kRounding - 1) / kRounding * kRounding : bytes;
  data_ = allocate(rounded);
  capacity_ = rounded;
  size_ = bytes;
}

void Scratch::release() {
  if (data_ == nullptr) return;
  std::byte* data = std::exchange(data_, nullptr);
  const std::size_t bytes = std::exchange(capacity_, 0);
  size_ = 0;
  if (bytes < kCachedFrom || bytes > kMaxCachedBytes) {
    deallocate(data);
    return;
  }
  std::list<Block> evicted;
  {
    Cache& c = cache();
    std::lock_guard lock(c.mu);
    c.blocks.push_front({data, bytes});
    c.bytes += bytes;
    while (c.blocks.size() > kMaxBlocks || c.bytes > kMaxCachedBytes) {
      c.bytes -= c.blocks.back().bytes;
      evicted.splice(evicted.end(), c.blocks, std::prev(c.blocks.end()));
    }
  }
  for (const Block& b : evicted) deallocate(b.data);
}

void Scratch::dropCache() {
  std::list<Block> all;
  {
    Cache& c = cache();
    std::lock_guard lock(c.mu);
    all.swap(c.blocks);
    c.bytes = 0;
  }
  for (const Block& b : all) deallocate(b.data);
}

std::size_t Scratch::cachedBytes() {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  return c.bytes;
}

}  // namespace ftcomm::algorithms
