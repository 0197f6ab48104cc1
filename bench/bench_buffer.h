// A benchmark's buffer: heap memory, or ftcomm::allocMem's (ftcomm-bench --memory allocmem),
// which same-host peers read from a mapping instead of with cross-memory attach.
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
  BenchBuffer(std::size_t count, T value, bool allocMem) : allocMem_(allocMem) {
    const std::size_t bytes = std::max<std::size_t>(count * sizeof(T), 1);
    if (allocMem_) {
      auto memory = ftcomm::allocMem(bytes);
      if (!memory.ok()) {
        std::cerr << "ftcomm-bench: " << memory.status().toString() << "\n";
        std::exit(1);
      }
      data_ = *memory;
    } else {
      data_ = ::operator new (bytes, std::align_val_t{64});
    }
    std::fill_n(static_cast<T*>(data_), count, value);
  }
  ~BenchBuffer() {
    if (allocMem_) {
      (void)ftcomm::freeMem(data_);
    } else {
      ::operator delete (data_, std::align_val_t{64});
    }
  }
  BenchBuffer(const BenchBuffer&) = delete;
  BenchBuffer& operator=(const BenchBuffer&) = delete;

  void* data() const { return data_; }

 private:
  bool allocMem_;
  void* data_ = nullptr;
};

}  // namespace ftcomm::bench
