// The lock of the flight recorder's ring. record() holds it for a few dozen nanoseconds on every
// operation; a dump holds it while it copies the ring. A std::mutex costs record() two locked
// instructions and two calls into libpthread; this lock takes one exchange and gives the lock
// back with a plain store. A thread that finds it taken spins briefly, then yields (to a dump
// that holds it on the same core); nothing sleeps while holding it.
//
// Thread-safety: a lock; lock() and unlock() from any thread, unlock() by the holder.
#pragma once

#include <atomic>

namespace ftcomm::recorder {

class RingLock {
 public:
  void lock() {
    if (!taken_.exchange(true, std::memory_order_acquire)) return;
    lockContended();
  }
  void unlock() { taken_.store(false, std::memory_order_release); }

 private:
  void lockContended();

  std::atomic<bool> taken_{false};
};

}  // namespace ftcomm::recorder
