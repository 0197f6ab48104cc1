// The engine's spin bookkeeping: which threads poll by themselves (Work::wait, an inline
// collective's spin), so that shared-memory peers and UCX's events need not wake the progress
// thread meanwhile, and when it takes polling back; and whether the progress thread polls on at
// once, and yields its core first.
#include <algorithm>

#include "core/engine.h"

namespace ftcomm::detail {

namespace {

// How long after a waiting thread stopped polling the progress thread still counts on it to be
// back soon (the next operation of a tight loop), so that shared-memory peers do not wake it for
// every message (Engine::beginSpin).
constexpr std::chrono::microseconds kSpinGrace{200};
// While a collective streams, the progress thread yields its core this often (yieldsLocked): an
// application thread woken meanwhile waits at most about this long for a core the progress
// thread holds, and a yield (about a microsecond here) costs about 1% of it.
constexpr std::chrono::microseconds kStreamYieldEvery{100};

}  // namespace

void Engine::beginSpin(bool drivesWorker) {
  std::lock_guard<std::mutex> lock(mu_);
  ++spinning_;
  if (drivesWorker) ++driving_;
  if (spinHeld_) return;
  spinHeld_ = true;
  for (const auto& weak : domains_) {
    if (auto domain = weak.lock()) domain->spin(+1);
  }
  // Peers no longer wake the progress thread: it must not sleep for long meanwhile.
  if (sleepingUntil_ != Clock::time_point{} && sleepingUntil_ > Clock::now() + kSpinGrace) wake();
}

void Engine::endSpin(bool done, Clock::time_point now, bool drivesWorker) {
  std::lock_guard<std::mutex> lock(mu_);
  --spinning_;
  // The last thread that polled the worker goes to sleep: the progress thread watches UCX's
  // events again from now, not from its next slice.
  if (drivesWorker && --driving_ == 0 && !done && sleepingUntil_ != Clock::time_point{}) wake();
  spinEnded_ = done ? now : Clock::time_point{};
  // A thread that goes to sleep hands polling back to the progress thread at once.
  if (!done && spinning_ == 0 && spinHeld_) {
    auto until = Clock::time_point::max();
    if (!releaseSpinLocked(Clock::now(), until)) pollLocked();
  }
}

bool Engine::releaseSpinLocked(Clock::time_point now, Clock::time_point& until, bool handedOver) {
  if (polledToCompletion_.exchange(false, std::memory_order_relaxed))
    spinEnded_ = std::max(spinEnded_, now);
  if (!spinHeld_) return true;
  if (spinning_ > 0 || (!handedOver && now < spinEnded_ + kSpinGrace)) {
    until = std::min(until, now + kSpinGrace);
    return true;
  }
  spinHeld_ = false;
  bool missed = false;
  for (const auto& weak : domains_) {
    if (auto domain = weak.lock()) missed |= domain->spin(-1);
  }
  return !missed;
}

bool Engine::pollsOnLocked(bool moved) const {
  return moved && !(streaming_ && spinning_ > 0);
}

bool Engine::yieldsLocked() {
  if (oversubscribed()) return true;
  if (!streaming_) return false;
  const auto now = Clock::now();
  if (now - lastYield_ < kStreamYieldEvery) return false;
  lastYield_ = now;
  return true;
}

}  // namespace ftcomm::detail
