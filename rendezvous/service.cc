#include "rendezvous/service.h"

#include <iostream>

#include "rendezvous/grpc_status.h"
#include "rendezvous/limits.h"
#include "rendezvous/watch_stream.h"

namespace ftcomm::rendezvous {

RendezvousService::RendezvousService(ServiceOptions options)
    : options_(std::move(options)), store_(options_.store) {
  if (!store_ && options_.stateDir) store_ = makeFileStore(*options_.stateDir);
}

void RendezvousService::standBy(const std::string& leader) {
  std::lock_guard lock(standbyMu_);
  leader_ = leader;
  serving_.store(false);
}

Result<std::size_t> RendezvousService::restoreState() {
  if (!store_) return std::size_t{0};
  auto stored = store_->load();
  if (!stored.ok()) return stored.status();
  std::size_t restored = 0;
  for (const auto& job : *stored) {
    auto restoredJob =
        std::make_unique<Job>(job.jobId, options_.lease, store_.get(), shuttingDown_);
    FTCOMM_RETURN_IF_ERROR(restoredJob->restore(job.records, Clock::now()));
    std::cerr << "ftcomm-rendezvous: restored job " << job.jobId << " ("
              << restoredJob->memberCount() << " members)\n";
    std::lock_guard lock(jobsMu_);
    jobs_[job.jobId] = std::move(restoredJob);
    ++restored;
  }
  return restored;
}

std::vector<Job*> RendezvousService::allJobs() {
  std::vector<Job*> jobs;
  std::lock_guard lock(jobsMu_);
  for (auto& [id, job] : jobs_) jobs.push_back(job.get());
  return jobs;
}

void RendezvousService::resumeServing() {
  const auto now = Clock::now();
  for (Job* job : allJobs()) job->restartLeases(now);
  serving_.store(true);
}

void RendezvousService::tick() {
  // A standby or suspended replica refuses heartbeats, so it must not expire leases either.
  if (!serving_.load()) return;
  const auto now = Clock::now();
  for (Job* job : allJobs()) job->tick(now);
}

Result<Job*> RendezvousService::authorize(const std::string& jobId, const std::string& token,
                                          bool create) {
  if (!serving_.load()) {
    std::lock_guard lock(standbyMu_);
    return unavailable(std::string(kStandbyRefusal) + "; the one serving is " + leader_);
  }
  FTCOMM_RETURN_IF_ERROR(validateJobId(jobId));
  FTCOMM_RETURN_IF_ERROR(options_.tokens.check(jobId, token));
  std::lock_guard lock(jobsMu_);
  auto it = jobs_.find(jobId);
  if (it != jobs_.end()) return it->second.get();
  if (!create) return notFound("no job " + jobId + " on this server");
  if (jobs_.size() >= kMaxJobs) {
    return resourceExhausted("the server already holds " + std::to_string(jobs_.size()) +
                             " jobs, the limit");
  }
  auto job = std::make_unique<Job>(jobId, options_.lease, store_.get(), shuttingDown_);
  Job* raw = job.get();
  jobs_.emplace(jobId, std::move(job));
  return raw;
}

grpc::ServerUnaryReactor* RendezvousService::answer(grpc::CallbackServerContext* context,
                                                    const std::function<Status()>& body) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(toGrpc(body()));
  return reactor;
}

grpc::ServerUnaryReactor* RendezvousService::answerMutation(grpc::CallbackServerContext* context,
                                                            const pb::Caller& caller,
                                                            const Job::Mutation& mutation) {
  return answer(context, [&]() -> Status {
    auto job = authorize(caller);
    if (!job.ok()) return job.status();
    return (*job)->mutate(mutation);
  });
}

template <typename Response>
grpc::ServerUnaryReactor* RendezvousService::startPending(Job* job, Response* response,
                                                          const Job::PendingMutation& mutation) {
  auto* call = new PendingReply<Response>(job, response);
  job->startPending(call, mutation);
  return call;
}

grpc::ServerUnaryReactor* RendezvousService::Join(grpc::CallbackServerContext* context,
                                                  const pb::JoinRequest* request,
                                                  pb::JoinResponse* response) {
  auto job = authorize(request->job_id(), request->token(), true);
  if (!job.ok()) return answer(context, [&] { return job.status(); });
  return startPending(*job, response,
                      [&](JobState& state, WaiterId waiter, Clock::time_point now, Effects& out) {
                        return state.join(waiter, *request, now, out);
                      });
}

grpc::ServerUnaryReactor* RendezvousService::KvSet(grpc::CallbackServerContext* context,
                                                   const pb::KvSetRequest* request,
                                                   pb::KvSetResponse* /*response*/) {
  return answerMutation(
      context, request->caller(),
      [&](JobState& state, Clock::time_point, Effects& out) { return state.kvSet(*request, out); });
}

grpc::ServerUnaryReactor* RendezvousService::KvGet(grpc::CallbackServerContext* context,
                                                   const pb::KvGetRequest* request,
                                                   pb::KvGetResponse* response) {
  return answer(context, [&]() -> Status {
    auto job = authorize(request->caller());
    if (!job.ok()) return job.status();
    return (*job)->inspect(
        [&](JobState& state, Clock::time_point) { return state.kvGet(*request, *response); });
  });
}

grpc::ServerUnaryReactor* RendezvousService::KvUpdate(grpc::CallbackServerContext* context,
                                                      const pb::KvUpdateRequest* request,
                                                      pb::KvUpdateResponse* response) {
  return answerMutation(context, request->caller(),
                        [&](JobState& state, Clock::time_point, Effects& out) {
                          return state.kvUpdate(*request, *response, out);
                        });
}

grpc::ServerUnaryReactor* RendezvousService::KvCount(grpc::CallbackServerContext* context,
                                                     const pb::KvCountRequest* request,
                                                     pb::KvCountResponse* response) {
  return answer(context, [&]() -> Status {
    auto job = authorize(request->caller());
    if (!job.ok()) return job.status();
    return (*job)->inspect(
        [&](JobState& state, Clock::time_point) { return state.kvCount(*request, *response); });
  });
}

grpc::ServerUnaryReactor* RendezvousService::KvWait(grpc::CallbackServerContext* context,
                                                    const pb::KvWaitRequest* request,
                                                    pb::KvWaitResponse* response) {
  auto job = authorize(request->caller());
  if (!job.ok()) return answer(context, [&] { return job.status(); });
  return startPending(*job, response,
                      [&](JobState& state, WaiterId waiter, Clock::time_point now, Effects& out) {
                        return state.kvWait(waiter, *request, now, out);
                      });
}

grpc::ServerWriteReactor<pb::Event>* RendezvousService::Watch(grpc::CallbackServerContext*,
                                                              const pb::WatchRequest* request) {
  auto job = authorize(request->caller());
  if (!job.ok()) return new RefusedWatch(toGrpc(job.status()));
  return (*job)->openWatch(request->caller(), request->after_revision());
}

grpc::ServerUnaryReactor* RendezvousService::Heartbeat(grpc::CallbackServerContext* context,
                                                       const pb::HeartbeatRequest* request,
                                                       pb::HeartbeatResponse* response) {
  return answer(context, [&]() -> Status {
    auto job = authorize(request->caller());
    if (!job.ok()) return job.status();
    return (*job)->inspect([&](JobState& state, Clock::time_point now) {
      return state.heartbeat(request->caller(), now, *response);
    });
  });
}

grpc::ServerUnaryReactor* RendezvousService::ReportFailure(
    grpc::CallbackServerContext* context, const pb::ReportFailureRequest* request,
    pb::ReportFailureResponse* /*response*/) {
  return answerMutation(context, request->caller(),
                        [&](JobState& state, Clock::time_point now, Effects& out) {
                          return state.reportFailure(*request, now, out);
                        });
}

grpc::ServerUnaryReactor* RendezvousService::Revoke(grpc::CallbackServerContext* context,
                                                    const pb::RevokeRequest* request,
                                                    pb::RevokeResponse* /*response*/) {
  return answerMutation(context, request->caller(),
                        [&](JobState& state, Clock::time_point, Effects& out) {
                          return state.revoke(*request, out);
                        });
}

grpc::ServerUnaryReactor* RendezvousService::Reconfigure(grpc::CallbackServerContext* context,
                                                         const pb::ReconfigureRequest* request,
                                                         pb::ReconfigureResponse* response) {
  auto job = authorize(request->caller());
  if (!job.ok()) return answer(context, [&] { return job.status(); });
  return startPending(*job, response,
                      [&](JobState& state, WaiterId waiter, Clock::time_point now, Effects& out) {
                        return state.reconfigure(waiter, *request, now, out);
                      });
}

grpc::ServerUnaryReactor* RendezvousService::Leave(grpc::CallbackServerContext* context,
                                                   const pb::LeaveRequest* request,
                                                   pb::LeaveResponse* /*response*/) {
  return answerMutation(context, request->caller(),
                        [&](JobState& state, Clock::time_point now, Effects& out) {
                          return state.leave(request->caller(), now, out);
                        });
}

}  // namespace ftcomm::rendezvous
