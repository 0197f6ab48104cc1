// The shared state behind a Work: completed once by the engine (or at once, for a call refused
// before it started), waited on by any number of threads. Completion also ends the operation's
// flight-recorder entry, so that no path can finish an operation without recording how.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "ftcomm/status.h"
#include "recorder/op_progress.h"

namespace ftcomm::detail {

class Engine;
using Clock = std::chrono::steady_clock;

class WorkState {
 public:
  WorkState(std::shared_ptr<Engine> engine, std::shared_ptr<recorder::OpProgress> progress,
            Clock::time_point deadline)
      : engine_(std::move(engine)), progress_(std::move(progress)), deadline_(deadline) {}

  bool done() const { return done_.load(std::memory_order_acquire); }
  // First completion wins.
  void complete(Status status, std::size_t bytes = 0);
  void markStarted() {
    if (progress_) progress_->markStarted();
  }
  // Started when it was scheduled (an operation that runs within its call).
  void markStartedAtScheduling() {
    if (progress_) progress_->markStartedAtScheduling();
  }
  // Writes a failure into the flight-recorder entry ahead of complete(), so that a dump taken in
  // between shows it; complete() then finishes the Work (its recorder transition is ignored).
  void recordFailure(const Status& status) {
    if (progress_) progress_->markFailed(status.toString());
  }
  // Valid once done().
  const Status& result() const { return status_; }
  std::size_t bytes() const { return bytes_; }
  Clock::time_point deadline() const { return deadline_; }
  Engine* engine() const { return engine_.get(); }
  // The operation moves `bytes` between the members (Work::wait then polls longer before it
  // sleeps: the peers are likely still copying).
  void expectBytes(std::size_t bytes) { expectedBytes_ = bytes; }
  std::size_t expectedBytes() const { return expectedBytes_; }
  // The operation waits on messages across the network.
  void expectNetwork() { network_ = true; }
  bool expectsNetwork() const { return network_; }
  // Calls `callback` once done: at once when it is, else on the thread that completes it.
  void onDone(std::function<void()> callback);
  // Sleeps until done or `until`; true when done.
  bool sleepUntil(Clock::time_point until);

 private:
  std::shared_ptr<Engine> engine_;  // null for a call refused at once
  std::shared_ptr<recorder::OpProgress> progress_;
  const Clock::time_point deadline_;
  std::atomic<bool> done_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  Status status_;
  std::size_t bytes_ = 0;
  std::size_t expectedBytes_ = 0;
  bool network_ = false;
  std::vector<std::function<void()>> callbacks_;
};

// One completed, successful state shared by every operation that succeeded within its call and
// reports no bytes: no allocation, no lock, no reference count (a weak_ptr to it is always
// expired). Marks `progress` (its recorder entry, may be null) completed within the call.
const std::shared_ptr<WorkState>& succeededWorkState(recorder::OpProgress* progress);

}  // namespace ftcomm::detail
