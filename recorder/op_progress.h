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
#include "recorder/recorder_clock.h"

namespace ftcomm::recorder {

namespace pb = ::ftcomm::recorder::v1;

class OpProgress {
 public:
  OpProgress() : scheduled_(recorderTicks()) {}
  // A new entry in an old one's place (FlightRecorder::record, when nothing else holds this one
  // any more): scheduled now, no times, no error.
  void reset();

  void markStarted();
  // An operation that was started by the call that scheduled it: started when scheduled (no
  // clock read).
  void markStartedAtScheduling();
  // An operation that ran to completion within the call that scheduled it, before anything but
  // a dump could see its entry: started when scheduled, completed now. Plain stores instead of
  // the transitions' compare-and-swaps (nothing else can finish such an operation).
  void markCompletedWithinCall();
  void markCompleted();
  void markFailed(std::string error);
  // The algorithm as it runs, where the operation chose it after it was recorded (an inline
  // collective that lends: algorithms/shm/inline_collective.h). A literal: it must have static
  // storage.
  void setAlgorithm(const char* name) { algorithm_.store(name, std::memory_order_release); }

  pb::OpState state() const;
  // Fills the state, timestamps (converted by `clock`) and error of `entry`, and its algorithm
  // where setAlgorithm() changed it.
  void copyTo(pb::Entry& entry, const TickConverter& clock) const;

 private:
  // kFinishing: a terminal transition is being written; readers still see the operation as
  // started until the state is published (release), so error_ is never read half-written.
  static constexpr int kFinishing = 100;
  bool beginFinish();

  std::atomic<int> state_{pb::SCHEDULED};
  // Recorder clock ticks (recorder_clock.h); 0: not yet.
  std::int64_t scheduled_;
  std::atomic<std::int64_t> started_{0};
  std::atomic<std::int64_t> ended_{0};
  std::string error_;
  std::atomic<const char*> algorithm_{nullptr};  // null: the descriptor's
};

}  // namespace ftcomm::recorder
