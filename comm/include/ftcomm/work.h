// The handle of one nonblocking operation (as NCCL's or torchcomms' work objects). Every
// operation of a Communicator returns one at once; the operation runs in the background (the
// engine's progress thread, or the thread that waits on it) and ends in one terminal state:
// Ok, or failed with PeerFailed, Revoked, Timeout, Mismatch, InvalidArgument or Internal.
//
// No wait is without a deadline: every operation has one (its OpOptions::timeout, else its
// communicator's), and the operation fails with Timeout when it passes.
//
// Thread-safety: a Work may be tested and waited on from any thread; copies share one state.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

#include "ftcomm/export.h"
#include "ftcomm/status.h"

namespace ftcomm {

namespace detail {
class WorkState;
}

class FTCOMM_API Work {
 public:
  Work() = default;  // not an operation: status() says so
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  bool valid() const { return state_ != nullptr; }
  // True once the operation ended; drives progress a little first.
  bool test();
  // Waits until the operation ends; bounded by the operation's own deadline.
  Status wait();
  // Waits at most `timeout`. Timeout (saying the operation goes on) if it had not ended by
  // then; the operation itself is not cancelled and may be waited on again.
  Status wait(std::chrono::milliseconds timeout);
  // The terminal status once ended; Unavailable ("still running") before.
  Status status() const;
  // Calls `callback` once the operation has ended: at once, on this thread, when it has; else on
  // the thread that ends it (the engine's progress thread, or a waiter). It runs where ftcomm's
  // locks may be held, so it must be short and must not call into ftcomm: it hands the news on
  // (a framework's completion thread, a condition variable), as torch's futures need.
  void onDone(std::function<void()> callback);
  // Bytes received, for recv once it completed; 0 otherwise.
  std::size_t bytes() const;

 private:
  // Until done or `until` (Timeout).
  Status waitUntil(std::chrono::steady_clock::time_point until);

  std::shared_ptr<detail::WorkState> state_;
};

}  // namespace ftcomm
