// The memory behind a window on one host: a memfd holding a header page (the signal slots) and,
// for Window::allocate(), the data region. The owner creates it; the other members on the host
// map it through /proc/<pid>/fd/<fd>, after which the owner closes the descriptor.
//
// renew() moves the owner's region to a fresh memfd mapped at the same address, contents kept:
// after a reconfigure, a member declared dead that still maps the old memfd writes only into
// pages that nobody maps any more.
//
// Thread-safety: the signal slots and data are shared memory (atomics for the slots); the
// object itself is used by one thread at a time.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ftcomm/status.h"

namespace ftcomm::rma {

class WindowRegion {
 public:
  // Zero-filled: `slots` signal counters, then `dataBytes` of data (0 for registered memory).
  static Result<WindowRegion> create(std::size_t slots, std::size_t dataBytes);
  // The region of the process `pid`, through its descriptor `fd`; checks its header.
  static Result<WindowRegion> open(pid_t pid, int fd, std::size_t slots, std::size_t dataBytes);

  WindowRegion() = default;
  WindowRegion(WindowRegion&& other) noexcept { *this = std::move(other); }
  WindowRegion& operator=(WindowRegion&& other) noexcept;
  ~WindowRegion();

  int fd() const { return fd_; }
  void closeFd();
  std::atomic<std::uint64_t>* signals() const;
  std::byte* data() const;
  bool mapped() const { return base_ != nullptr; }
  Status renew();

 private:
  static std::size_t headerBytes(std::size_t slots);

  void* base_ = nullptr;
  std::size_t length_ = 0;
  std::size_t slots_ = 0;
  int fd_ = -1;
};

}  // namespace ftcomm::rma
