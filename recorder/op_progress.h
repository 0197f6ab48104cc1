// The changing half of a flight-recorder entry: the operation's state and the time of each
// change. Written without a lock by whichever thread advances the operation (the caller, the
// progress thread) and read at any time by a dump; the ring that holds the entry is never
// touched here, so recording completion costs the progress thread a few atomic stores.
//
// Thread-safety: every method may be called from any thread. The first terminal transition
// (completed or failed) wins; later ones are ignored.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "ftcomm/proto/recorder.pb.h"

namespace ftcomm::recorder {

namespace pb = ::ftcomm::recorder::v1;

std::int64_t monotonicNs();

class OpProgress {
 public:
  OpProgress() : scheduledNs_(monotonicNs()) {}

  void markStarted();
  // An operation that ran within the call that scheduled it: started when scheduled, completed
  // now (one clock read instead of two).
  void markStartedAtScheduling();
  void markCompleted();
  void markFailed(std::string error);

  pb::OpState state() const;
  // Fills the state, timestamps and error of `entry`.
  void copyTo(pb::Entry& entry) const;

 private:
  // kFinishing: a terminal transition is being written; readers still see the operation as
  // started until the state is published (release), so error_ is never read half-written.
  static constexpr int kFinishing = 100;
  bool beginFinish();

  std::atomic<int> state_{pb::SCHEDULED};
  std::int64_t scheduledNs_;
  std::atomic<std::int64_t> startedNs_{0};
  std::atomic<std::int64_t> endedNs_{0};
  std::string error_;
};

}  // namespace ftcomm::recorder
