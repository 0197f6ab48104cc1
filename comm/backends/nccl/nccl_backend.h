// One NCCL communicator and the operations in flight on it: the state machine behind
// NcclCommunicator (comm/include/ftcomm/nccl_communicator.h).
//
// Life: create() exchanges the unique id through the bootstrap and initializes a nonblocking
// NCCL communicator, polling it under the setup deadline. submit() issues a group of NCCL calls
// on the internal stream behind the work queued so far on the default stream, records an event
// after them and returns a Work; the progress thread completes Works in order as their events
// fire. The first failure breaks the communicator for good (until reconfigure()):
//   - an asynchronous NCCL error (ncclCommGetAsyncError) or a failed event: that error;
//   - an operation past its deadline: Timeout, and the bootstrap's epoch is revoked so every
//     member learns of it;
//   - the bootstrap's epoch failing or moving on: its status (PeerFailed, Revoked).
// Breaking revokes the NCCL communicator (ncclCommRevoke), so kernels waiting for a dead peer
// stop, and fails every pending Work with the same status; later calls fail with it at once.
//
// Thread-safety: every method may be called from any thread. One mutex serializes the calls on
// the NCCL communicator (NCCL requires it) and guards the pending queue; Works are completed by
// the progress thread without it held for long.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/nccl/nccl_api.h"
#include "backends/nccl/nccl_bootstrap.h"
#include "core/work_state.h"
#include "ftcomm/communicator.h"
#include "ftcomm/status.h"
#include "ftcomm/work.h"
#include "recorder/flight_recorder.h"

namespace ftcomm::nccl {

using Clock = std::chrono::steady_clock;

struct NcclSetup {
  std::shared_ptr<NcclApi> api;
  std::shared_ptr<NcclBootstrap> bootstrap;
  int device = 0;
  int rank = 0;
  int size = 1;
  std::string name = "nccl";
  std::uint64_t id = 0;         // the flight recorder's communicator id
  std::uint64_t parentId = 0;   // 0: a root communicator
  std::vector<int> worldRanks;  // by rank, as ranks of the host world
  // Bootstrap keys of this communicator start with it; the same on every member.
  std::string keyPrefix;
  std::chrono::milliseconds setupTimeout{60000};
  std::chrono::milliseconds opTimeout{300000};
};

class NcclBackend : public std::enable_shared_from_this<NcclBackend> {
 public:
  // Collective over the members: the unique id through the bootstrap, then the communicator.
  static Result<std::shared_ptr<NcclBackend>> create(NcclSetup setup);
  ~NcclBackend();
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  // Issues `calls` as one group (one call: no group). `checked` is the facade's verdict on the
  // arguments: a failure completes the Work at once, as does a broken communicator.
  Work submit(const char* opName, const recorder::OpDescriptor& descriptor,
              std::vector<NcclOpCall> calls, Status checked, std::chrono::milliseconds timeout);
  // Recorded like an operation and refused: a call this backend cannot carry out.
  Work refuse(const recorder::OpDescriptor& descriptor, Status why);

  Status health() const;
  Status revoke(const std::string& reason);
  void abort(const std::string& reason);
  Result<Reconfiguration> reconfigure(const Reconfiguration& agreed,
                                      std::chrono::milliseconds timeout);
  // Null for kNoColor.
  Result<std::shared_ptr<NcclBackend>> split(int color, int key, std::chrono::milliseconds timeout);
  Result<WindowRef> registerWindow(void* buffer, std::size_t bytes,
                                   std::chrono::milliseconds timeout);
  // A no-op for a window of an earlier epoch (it went with that communicator).
  Status deregisterWindow(WindowRef window, std::uint64_t epoch);

  // Fixed between reconfigurations.
  int rank() const;
  int size() const;
  std::uint64_t epoch() const;
  int device() const { return setup_.device; }
  std::uint64_t id() const { return setup_.id; }
  const std::string& name() const { return setup_.name; }
  std::vector<int> worldRanks() const;
  NcclApi& api() const { return *setup_.api; }
  // One int32 of device memory, for barrier().
  void* barrierBuffer() const { return barrierBuffer_; }
  std::uint64_t nextCollectiveSeq();
  std::uint64_t nextPointToPointSeq();

 private:
  struct Pending {
    std::shared_ptr<detail::WorkState> work;
    EventRef event = nullptr;
    Clock::time_point deadline;
    std::string what;       // "allReduce #3 of nccl (epoch 1)"
    std::size_t bytes = 0;  // what Work::bytes() reports: a receive's size
  };

  explicit NcclBackend(NcclSetup setup);
  Status start(CommRef comm);  // the stream, events and progress thread of a ready communicator
  // Polls `comm` until it is no longer in progress; Timeout at `deadline` (the bootstrap's
  // failure first, when it has one).
  Status waitReady(CommRef comm, Clock::time_point deadline, const std::string& what,
                   bool watchBootstrap);
  Result<CommRef> initFresh(const std::string& key, int rank, int size, Clock::time_point deadline);
  Status issueLocked(const std::vector<NcclOpCall>& calls, EventRef event,
                     Clock::time_point deadline);
  void breakLocked(const Status& why);
  void releaseCommLocked();
  void progressLoop();
  // One pass of the progress thread; true when work is pending. Sets *revokeEpoch when the
  // bootstrap's epoch should be revoked (after the lock is dropped).
  bool pollLocked(std::string* revokeEpoch);
  Result<EventRef> takeEventLocked();
  void recordConfig() const;
  std::string describe(const char* what) const;

  NcclSetup setup_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  CommRef comm_ = nullptr;
  StreamRef stream_ = nullptr;
  EventRef marker_ = nullptr;  // orders the stream after the default stream
  void* barrierBuffer_ = nullptr;
  std::vector<EventRef> freeEvents_;
  std::deque<Pending> pending_;
  Status broken_;
  bool aborted_ = false;
  bool unrevoked_ = false;  // broken, but this NCCL could not revoke it
  bool stopping_ = false;
  std::uint64_t epoch_ = 0;
  std::uint64_t collectiveSeq_ = 0;
  std::uint64_t pointToPointSeq_ = 0;
  std::uint64_t splits_ = 0;
  Clock::time_point nextHealthCheck_{};
  std::thread progress_;
};

}  // namespace ftcomm::nccl
