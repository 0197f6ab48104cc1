// One job on the server: its JobState behind a mutex, its log in the state store, its open watch
// streams and its pending calls. Job turns the state machine's Effects into actions, in this
// order: the log first, then events and expulsions (under the mutex, so a stream sees events in
// commit order), then the replies (after the mutex is released).
//
// Events are numbered (Event.revision) and logged with the records, and the latest of them are
// kept in memory, so a watch stream that reconnects, here or on a replica that loaded the log,
// resumes after the last event it saw; a SNAPSHOT replaces the events that are gone.
//
// Thread-safety: every public method may be called from any gRPC callback thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rendezvous/job_state.h"
#include "rendezvous/state_store.h"

namespace ftcomm::rendezvous {

class WatchStream;

// A unary call answered later (Join, KvWait, Reconfigure). Deleted by gRPC's OnDone.
class PendingCall : public grpc::ServerUnaryReactor {
 public:
  PendingCall(class Job* job, WaiterId id) : job_(job), id_(id) {}
  WaiterId id() const { return id_; }
  // Fills the response (when the reply is Ok) and finishes the call; called exactly once.
  virtual void complete(Reply&& reply) = 0;

 private:
  void OnCancel() override;
  void OnDone() override { delete this; }

  class Job* job_;
  WaiterId id_;
};

class Job {
 public:
  // `store` null: the job's state lives in memory only.
  Job(std::string jobId, std::chrono::milliseconds lease, StateStore* store,
      std::atomic<bool>& shuttingDown);
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Replays the records a store held at server start; leases restart from now.
  Status restore(const std::vector<pb::JournalRecord>& records, Clock::time_point now);

  using Mutation = std::function<Status(JobState&, Clock::time_point, Effects&)>;
  using PendingMutation = std::function<Status(JobState&, WaiterId, Clock::time_point, Effects&)>;
  using Inspection = std::function<Status(JobState&, Clock::time_point)>;
  using Action = std::function<void(JobState&, Clock::time_point, Effects&)>;

  // Runs a state change and carries out its effects; returns the call's own status.
  Status mutate(const Mutation& mutation);
  // Runs a change whose only outcome is its effects (ticks, cancellations).
  void act(const Action& action);
  // Reads or refreshes state without effects (KvGet, Heartbeat).
  Status inspect(const Inspection& inspection);
  // Registers `call`, runs the mutation, and finishes the call at once if it fails.
  void startPending(PendingCall* call, const PendingMutation& mutation);
  WaiterId nextWaiterId() { return nextWaiterId_.fetch_add(1); }

  // Opens a watch stream for the caller. It starts with the events after `afterRevision` where
  // they are all still held, and with a SNAPSHOT otherwise.
  grpc::ServerWriteReactor<pb::Event>* openWatch(const pb::Caller& caller,
                                                 std::uint64_t afterRevision);
  void watchDone(std::uint64_t memberId, std::uint64_t token, WatchStream* stream);
  void cancelWaiter(WaiterId waiter);

  void tick(Clock::time_point now);
  void restartLeases(Clock::time_point now);
  std::size_t memberCount();

 private:
  using ReadyReply = std::pair<PendingCall*, Reply>;
  // Requires mu_; moves the replies it resolves into `ready`, to be finished after unlocking.
  void carryOut(Effects& effects, std::vector<ReadyReply>& ready);
  static void finish(std::vector<ReadyReply>& ready);
  // Requires mu_. Adds an event to the kept ones, dropping the oldest beyond kKeptEvents.
  void keep(const pb::Event& event);
  // Requires mu_. Numbers the events, keeps them, and adds them to the records to log.
  void recordEvents(Effects& effects);
  // Requires mu_. Writes the records; drops the stored state of a job that is over.
  void persist(const std::vector<pb::JournalRecord>& records);
  pb::JobSnapshot durableSnapshot() const;

  // Events kept for resuming streams.
  static constexpr std::size_t kKeptEvents = 4096;

  std::mutex mu_;
  JobState state_;
  StateStore* store_;
  std::unique_ptr<JobLog> log_;  // opened at the first record
  bool dropped_ = false;         // the store holds nothing of this job (it was over)
  std::uint64_t lastRevision_ = 0;
  std::deque<pb::Event> kept_;   // the latest events, by revision
  std::uint64_t keptAfter_ = 0;  // kept_ holds every event whose revision is above this
  std::unordered_map<WaiterId, PendingCall*> waiters_;
  std::unordered_map<std::uint64_t, WatchStream*> watchers_;
  std::atomic<WaiterId> nextWaiterId_{1};
  std::atomic<bool>& shuttingDown_;
};

// A unary call whose answer is a `Response` message.
template <typename Response>
class PendingReply final : public PendingCall {
 public:
  PendingReply(Job* job, Response* response)
      : PendingCall(job, job->nextWaiterId()), response_(response) {}
  void complete(Reply&& reply) override;

 private:
  Response* response_;
};

}  // namespace ftcomm::rendezvous
