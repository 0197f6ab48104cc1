// The Rendezvous gRPC service over the callback API: no thread is held by a waiting call or an
// open Watch stream, so thousands of members cost memory, not threads. Every handler checks the
// job id and token, finds the job, and hands the request to the job's state machine.
//
// Thread-safety: handlers run on gRPC's callback threads; jobs_ is guarded by jobsMu_, each job
// by its own mutex. tick() runs on the server's ticker thread.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "ftcomm/proto/rendezvous.grpc.pb.h"
#include "rendezvous/job.h"
#include "rendezvous/state_store.h"
#include "rendezvous/token_store.h"

namespace ftcomm::rendezvous {

struct ServiceOptions {
  std::chrono::milliseconds lease{2000};
  std::optional<std::filesystem::path> stateDir;  // a FileStore there, unless `store` is set
  std::shared_ptr<StateStore> store;              // null and no stateDir: memory only
  TokenStore tokens;
};

class RendezvousService final : public pb::Rendezvous::CallbackService {
 public:
  static constexpr std::size_t kMaxJobs = 65536;

  explicit RendezvousService(ServiceOptions options);

  // Loads every job the store holds; returns how many jobs it restored.
  Result<std::size_t> restoreState();
  void tick();
  void beginShutdown() { shuttingDown_.store(true); }
  StateStore* store() const { return store_.get(); }
  // A standby replica answers every call UNAVAILABLE, naming the replica that serves.
  void standBy(const std::string& leader);
  void serve() { serving_.store(true); }
  // After a suspension: members could not reach this server, so every lease restarts now.
  void resumeServing();

  grpc::ServerUnaryReactor* Join(grpc::CallbackServerContext* context,
                                 const pb::JoinRequest* request,
                                 pb::JoinResponse* response) override;
  grpc::ServerUnaryReactor* KvSet(grpc::CallbackServerContext* context,
                                  const pb::KvSetRequest* request,
                                  pb::KvSetResponse* response) override;
  grpc::ServerUnaryReactor* KvGet(grpc::CallbackServerContext* context,
                                  const pb::KvGetRequest* request,
                                  pb::KvGetResponse* response) override;
  grpc::ServerUnaryReactor* KvUpdate(grpc::CallbackServerContext* context,
                                     const pb::KvUpdateRequest* request,
                                     pb::KvUpdateResponse* response) override;
  grpc::ServerUnaryReactor* KvCount(grpc::CallbackServerContext* context,
                                    const pb::KvCountRequest* request,
                                    pb::KvCountResponse* response) override;
  grpc::ServerUnaryReactor* KvWait(grpc::CallbackServerContext* context,
                                   const pb::KvWaitRequest* request,
                                   pb::KvWaitResponse* response) override;
  grpc::ServerWriteReactor<pb::Event>* Watch(grpc::CallbackServerContext* context,
                                             const pb::WatchRequest* request) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const pb::HeartbeatRequest* request,
                                      pb::HeartbeatResponse* response) override;
  grpc::ServerUnaryReactor* ReportFailure(grpc::CallbackServerContext* context,
                                          const pb::ReportFailureRequest* request,
                                          pb::ReportFailureResponse* response) override;
  grpc::ServerUnaryReactor* Revoke(grpc::CallbackServerContext* context,
                                   const pb::RevokeRequest* request,
                                   pb::RevokeResponse* response) override;
  grpc::ServerUnaryReactor* Reconfigure(grpc::CallbackServerContext* context,
                                        const pb::ReconfigureRequest* request,
                                        pb::ReconfigureResponse* response) override;
  grpc::ServerUnaryReactor* Leave(grpc::CallbackServerContext* context,
                                  const pb::LeaveRequest* request,
                                  pb::LeaveResponse* response) override;

 private:
  // Every job, for work done on each outside jobsMu_ (jobs are never removed).
  std::vector<Job*> allJobs();
  // The job named by a request, after the id and token checks; created only by Join.
  Result<Job*> authorize(const std::string& jobId, const std::string& token, bool create);
  Result<Job*> authorize(const pb::Caller& caller) {
    return authorize(caller.job_id(), caller.token(), false);
  }
  // Runs `body` and finishes the call with its status at once.
  grpc::ServerUnaryReactor* answer(grpc::CallbackServerContext* context,
                                   const std::function<Status()>& body);
  // Authorizes the caller, then runs a mutation of its job and answers with its status.
  grpc::ServerUnaryReactor* answerMutation(grpc::CallbackServerContext* context,
                                           const pb::Caller& caller, const Job::Mutation& mutation);
  template <typename Response>
  static grpc::ServerUnaryReactor* startPending(Job* job, Response* response,
                                                const Job::PendingMutation& mutation);

  ServiceOptions options_;
  std::shared_ptr<StateStore> store_;
  std::atomic<bool> shuttingDown_{false};
  std::atomic<bool> serving_{true};
  std::mutex standbyMu_;
  std::string leader_;  // while standing by
  std::mutex jobsMu_;
  std::map<std::string, std::unique_ptr<Job>> jobs_;
};

}  // namespace ftcomm::rendezvous
