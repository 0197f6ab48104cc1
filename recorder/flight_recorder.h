// The flight recorder: one bounded ring of operation entries per process, always on. The
// communicator facade records every operation it schedules (backends never do), keeps the
// returned OpProgress with the operation and marks it started / completed / failed. A dump
// writes the ring, the process identity and the communicator tree to one file per rank.
//
// When the ring is full the oldest entry is overwritten and counted in dropped().
//
// Thread-safety: every method may be called from any thread. record() and dumps share one short
// mutex over the ring; the progress thread never takes it (it only touches OpProgress).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ftcomm/status.h"
#include "ftcomm/types.h"
#include "recorder/op_descriptor.h"
#include "recorder/op_progress.h"
#include "recorder/recorder_clock.h"
#include "recorder/thread_lane.h"

namespace ftcomm::recorder {

// Who this process is, for the dump's header.
struct ProcessIdentity {
  std::string job = "ftcomm";
  std::int32_t rank = 0;
  std::int32_t worldSize = 1;
  std::uint64_t epoch = 0;
};

class FlightRecorder {
 public:
  static constexpr std::size_t kDefaultCapacity = 4096;

  // Capacity 0 turns recording off: record() returns null and dumps hold no entries. It exists
  // to measure what the recorder costs (ftcomm-bench --recorder off), not for production.
  explicit FlightRecorder(std::size_t capacity = kDefaultCapacity);
  ~FlightRecorder();

  // The process's recorder: capacity from FTCOMM_FR_CAPACITY, dumps to FTCOMM_FR_DIR
  // (default ./ftcomm-fr).
  static FlightRecorder& process();

  // Null when recording is off; callers keep the progress and treat null as "nothing to mark".
  std::shared_ptr<OpProgress> record(const OpDescriptor& op);

  // An operation that completed within the call that scheduled it, recorded complete at once
  // (scheduled, started and ended at one clock reading) into the calling thread's own lane
  // (thread_lane.h): no lock and no locked instruction, except once every kIdBlock entries to
  // take record ids. Dumps hold each thread's last `capacity` such entries besides the ring's.
  // Inline, so that the descriptor goes from the caller's registers into the lane.
  [[gnu::always_inline]] void recordCompletedWithinCall(const OpDescriptor& op) {
    if (slots_.empty() || !recording_.load(std::memory_order_relaxed)) return;
    ThreadLane& lane = laneCache_.recorder == instance_ ? *laneCache_.lane : adoptLane();
    if (lane.nextId == lane.endId) takeIds(lane);
    lane.append(op, lane.nextId++, recorderTicks());
  }
  static constexpr std::uint64_t kIdBlock = 64;

  // Turns recording off and on at run time, so that a benchmark can time the same operation
  // both ways in one run. Off is for measurement only: a dump then misses operations.
  void setRecording(bool on) { recording_.store(on, std::memory_order_relaxed); }

  void setIdentity(ProcessIdentity identity);
  // Adds or replaces a communicator of the tree written into dumps.
  void upsertCommunicator(const pb::Communicator& communicator);
  void setDumpDirectory(std::filesystem::path dir);

  std::size_t capacity() const { return slots_.size(); }
  std::uint64_t dropped() const;

  // The dump as it would be written now.
  pb::Dump snapshot(const std::string& reason) const;
  // Writes <dir>/<job>.<rank>.ftfr (earlier dumps of the rank are kept, numbered).
  Result<std::filesystem::path> dump(const std::string& reason) const;
  // Whether dump() wrote a file in this process.
  bool hasDumped() const { return dumped_.load(std::memory_order_relaxed); }

  // Dumps on SIGUSR1: the handler only posts a semaphore; a thread of the recorder writes the
  // dump. Idempotent; only the process() recorder may enable it.
  Status enableSignalDump();

 private:
  struct Slot {
    std::uint64_t recordId = 0;  // 0: empty
    OpDescriptor op;
    std::shared_ptr<OpProgress> progress;
  };

  // Gives the calling thread a lane of this recorder: a free one, or a new one.
  ThreadLane& adoptLane();
  // The next block of record ids for `lane`.
  void takeIds(ThreadLane& lane);

  // The calling thread's lane, and the recorder it belongs to (flight_recorder.cc keeps the
  // reference that hands it back when the thread ends).
  struct LaneCache {
    std::uint64_t recorder = 0;
    ThreadLane* lane = nullptr;
  };
  static thread_local LaneCache laneCache_;

  std::atomic<bool> recording_{true};
  const std::uint64_t instance_;  // tells the recorders apart in the threads' lane caches
  mutable std::mutex ringMu_;
  std::vector<Slot> slots_;
  std::uint64_t nextRecordId_ = 1;  // ids of the ring's entries and the lanes' blocks
  std::uint64_t ringRecorded_ = 0;  // entries the ring took
  std::size_t nextSlot_ = 0;        // ringRecorded_ % capacity

  mutable std::mutex lanesMu_;
  std::vector<std::shared_ptr<ThreadLane>> lanes_;

  mutable std::mutex infoMu_;
  ProcessIdentity identity_;
  std::map<std::uint64_t, pb::Communicator> communicators_;
  std::filesystem::path dumpDir_ = "ftcomm-fr";
  mutable std::atomic<bool> dumped_{false};
};

// The reason of the dump a process writes when it exits with 0 having written none before
// (where FTCOMM_FR_DIR keeps dumps): ftcomm-fr then reports the rank as finished normally
// rather than as a crash without a dump.
inline constexpr const char* kFinishedNormally = "finished normally (exit 0)";

}  // namespace ftcomm::recorder
