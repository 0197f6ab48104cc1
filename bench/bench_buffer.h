// A benchmark's buffer: heap memory, or ftcomm::allocMem's (ftcomm-bench --memory allocmem),
// which same-host peers read from a mapping instead of with cross-memory attach; optionally
// `offset` bytes past a 64-byte boundary (ftcomm-bench --offset).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "ftcomm/memory.h"

namespace ftcomm::bench {

class BenchBuffer {
 public:
  template <typename T>
  BenchBuffer(std::size_t count, T value, bool allocMem, std::size_t offset = 0)
      : allocMem_(allocMem) {
    const std::size_t bytes = std::max<std::size_t>(count * sizeof(T), 1) + offset;
    if (allocMem_) {
      auto memory = ftcomm::allocMem(bytes);
      if (!memory.ok()) {
        std::cerr << "ftcomm-bench: " << memory.status().toString() << "\n";
        std::exit(1);
      }
      base_ = *memory;
    } else {
      base_ = ::operator new (bytes, std::align_val_t{64});
    }
    data_ = static_cast<char*>(base_) + offset;
    std::fill_n(static_cast<T*>(data_), count, value);
  }
  ~BenchBuffer() {
    if (allocMem_) {
      (void)ftcomm::freeMem(base_);
    } else {
      ::operator delete (base_, std::align_val_t{64});
    }
  }
  BenchBuffer(const BenchBuffer&) = delete;
  BenchBuffer& operator=(const BenchBuffer&) = delete;

  void* data() const { return data_; }

 private:
  bool allocMem_;
  void* base_ = nullptr;  // what was allocated
  void* data_ = nullptr;  // offset bytes into it
};

// --rewrite-inputs: a load and a store of the same value in every cache line of `bytes` at
// `buffer`, which leaves each line modified in this core's cache, as a freshly computed input is.
inline void rewriteLines(void* buffer, std::size_t bytes) {
  auto* p = static_cast<volatile unsigned char*>(buffer);
  for (std::size_t i = 0; i < bytes; i += 64) p[i] = p[i];
}

}  // namespace ftcomm::bench
