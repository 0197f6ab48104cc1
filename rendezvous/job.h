// One job on the server: its JobState behind a mutex, its journal, its open watch streams and
// its pending calls. Job turns the state machine's Effects into actions, in this order: journal
// first, then events and expulsions (under the mutex, so a stream sees events in commit order),
// then the replies (after the mutex is released).
//
// Thread-safety: every public method may be called from any gRPC callback thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rendezvous/job_journal.h"
#include "rendezvous/job_state.h"

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
  Job(std::string jobId, std::chrono::milliseconds lease,
      std::optional<std::filesystem::path> stateDir, std::atomic<bool>& shuttingDown);
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Replays a journal read at server start; leases restart from now.
  Status restore(const JournalContents& contents, Clock::time_point now);

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

  // Opens a watch stream for the caller; the stream's first event is the snapshot.
  grpc::ServerWriteReactor<pb::Event>* openWatch(const pb::Caller& caller);
  void watchDone(std::uint64_t memberId, std::uint64_t token, WatchStream* stream);
  void cancelWaiter(WaiterId waiter);

  void tick(Clock::time_point now);
  std::size_t memberCount();

 private:
  using ReadyReply = std::pair<PendingCall*, Reply>;
  // Requires mu_; moves the replies it resolves into `ready`, to be finished after unlocking.
  void carryOut(Effects& effects, std::vector<ReadyReply>& ready);
  static void finish(std::vector<ReadyReply>& ready);

  std::mutex mu_;
  JobState state_;
  std::optional<std::filesystem::path> journalPath_;
  std::unique_ptr<JobJournal> journal_;  // opened at the first record
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
