#include <sched.h>

#include "core/engine.h"
#include "core/work_state.h"
#include "ftcomm/work.h"

namespace ftcomm {

namespace detail {

void WorkState::complete(Status status, std::size_t bytes) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_.load(std::memory_order_relaxed)) return;
    if (progress_) {
      if (status.ok()) {
        progress_->markCompleted();
      } else {
        progress_->markFailed(status.toString());
      }
    }
    status_ = std::move(status);
    bytes_ = bytes;
    done_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  for (auto& callback : callbacks) callback();
}

void WorkState::onDone(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_.load(std::memory_order_relaxed)) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

const std::shared_ptr<WorkState>& succeededWorkState(recorder::OpProgress* progress) {
  if (progress != nullptr) progress->markCompletedWithinCall();
  // Never destroyed, and shared without a reference count (an aliasing pointer with no owner):
  // a Work of an operation done within its call costs no atomic operations on a count that every
  // thread of the process would share.
  static WorkState* const state = [] {
    auto* done = new WorkState(nullptr, nullptr, Clock::time_point{});
    done->complete(Status::Ok());
    return done;
  }();
  static const std::shared_ptr<WorkState> succeeded(std::shared_ptr<void>(), state);
  return succeeded;
}

bool WorkState::sleepUntil(Clock::time_point until) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, until, [&] { return done_.load(std::memory_order_relaxed); });
}

}  // namespace detail

namespace {

// How long a waiting thread drives progress itself before it sleeps and leaves the rest to the
// progress thread: long enough for a small operation's round trips, short enough that ranks
// oversubscribed on few cores do not starve each other (it yields between rounds).
constexpr auto kSpin = std::chrono::microseconds(50);
// With more ranks than cores the thread yields after every empty poll, so polling longer costs
// the other processes little, while going to sleep hands the rest of the operation to the
// progress thread: one more thread to schedule on a crowded core. At 4 ranks on 2 cores, 500 us
// took the 1 MiB allreduce from 1379-1484 us to 1152-1188 us and the 2 MiB allgather from 1082
// to 830 us (medians of 4-6 alternating runs); small collectives did not move (BENCHMARKS.md).
constexpr auto kSpinOversubscribed = std::chrono::microseconds(500);
constexpr unsigned kPollsPerYield = 8;
// An operation of at most this many bytes that waits on the network yields after every empty
// poll instead: between two simulated hosts, each on a core of its own, an 8-byte allreduce took
// 20.9-21.8 us so, against 22.1-22.7 with a yield every 8 polls and 22.8-25.6 with none; where
// a core is shared, a thread that polls without yielding holds it from what the reply needs.
// Larger transfers keep the 8: yielding after every poll cost them 5-10% of the link.
constexpr std::size_t kYieldEveryPollBytes = std::size_t{64} << 10;
// A large operation's peers are busy copying for a while, and going to sleep meanwhile costs a
// wake-up (tens of microseconds on these VMs) at the end: the budget grows by the time the
// peers plausibly need for the operation's bytes, at kPatienceBytesPerUs (below what one core
// copies through cross-memory attach here), up to kSpinMost. On the Intel VMs, a 1 MiB broadcast
// at 2 ranks took 162 us with 50 us of idle polling and 94 us with 200 us; 2 and 4 MiB gained
// 22% and 21% with 1 ms (3 alternating runs, BENCHMARKS.md).
constexpr std::size_t kPatienceBytesPerUs = 4096;
constexpr auto kSpinMost = std::chrono::microseconds(2000);

std::chrono::microseconds spinBudget(bool crowded, std::size_t bytes) {
  const auto base = crowded ? kSpinOversubscribed : kSpin;
  const auto copying = std::chrono::microseconds(bytes / kPatienceBytesPerUs);
  return std::max(base, std::min(base + copying, kSpinMost));
}

}  // namespace

bool Work::test() {
  if (!state_) return true;
  if (!state_->done() && state_->engine() != nullptr) state_->engine()->tryProgress();
  return state_->done();
}

Status Work::wait() {
  if (!state_) return status();
  if (state_->done()) return state_->result();  // no clock to read
  // The operation fails at its deadline; the margin covers the progress thread's reaction.
  Status s = waitUntil(state_->deadline() + std::chrono::seconds(5));
  if (s.code() == StatusCode::kTimeout && !state_->done()) {
    return internalError("the operation outlived its deadline by 5 s");
  }
  return s;
}

Status Work::wait(std::chrono::milliseconds timeout) {
  if (!state_) return status();
  if (state_->done()) return state_->result();
  Status s = waitUntil(detail::Clock::now() + timeout);
  if (s.code() == StatusCode::kTimeout && !state_->done()) {
    return timeoutError("wait gave up after " + std::to_string(timeout.count()) +
                        " ms; the operation goes on");
  }
  return s;
}

Status Work::waitUntil(std::chrono::steady_clock::time_point until) {
  const auto start = detail::Clock::now();
  detail::Engine* engine = state_->engine();
  const bool crowded = engine != nullptr && engine->oversubscribed();
  auto spinUntil = start + spinBudget(crowded, state_->expectedBytes());
  bool spinning = false;
  unsigned idle = 0, polls = 0;
  const bool everyPoll =
      state_->expectsNetwork() && state_->expectedBytes() <= kYieldEveryPollBytes;
  const unsigned yieldEvery = crowded || everyPoll ? 1 : kPollsPerYield;
  if (engine != nullptr && !state_->done()) {
    engine->beginSpin(/*drivesWorker=*/true);
    spinning = true;
  }
  auto now = start;
  while (!state_->done()) {
    // While spinning, the clock is read every few polls only (it costs as much as a poll); the
    // engine checks its deadlines against the same reading.
    if (!spinning || ++polls % kPollsPerYield == 0) now = detail::Clock::now();
    if (spinning && now < spinUntil && now < until) {
      // Yield now and then, not after every empty poll: a yield is a system call, and the
      // message may land meanwhile.
      if (engine->tryProgress(now)) {
        // Time spent doing the work (a direct collective's copies run here) is not waiting:
        // the spin budget counts idle polling only, so the thread that just did the work is
        // still polling when the peers' last notices land, instead of asleep behind a
        // wake-up of the progress thread and then one of its own.
        const auto after = detail::Clock::now();
        spinUntil += after - now;
        now = after;
        continue;
      }
      // More processes than cores: the one this thread waits for may need this core now.
      if (++idle % yieldEvery == 0) ::sched_yield();
      continue;
    }
    if (spinning) {
      engine->endSpin(false, now, /*drivesWorker=*/true);
      spinning = false;
      continue;
    }
    if (now >= until) return timeoutError("waited until the deadline");
    state_->sleepUntil(std::min(until, now + std::chrono::milliseconds(100)));
  }
  if (spinning) engine->endSpin(true, now, /*drivesWorker=*/true);
  return state_->result();
}

void Work::onDone(std::function<void()> callback) {
  if (!state_) {
    callback();
    return;
  }
  state_->onDone(std::move(callback));
}

Status Work::status() const {
  if (!state_) return failedPrecondition("an empty Work (no operation)");
  if (!state_->done()) return unavailable("still running");
  return state_->result();
}

std::size_t Work::bytes() const {
  return state_ && state_->done() ? state_->bytes() : 0;
}

}  // namespace ftcomm
