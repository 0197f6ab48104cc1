#include "rendezvous/job.h"

#include <iostream>

#include "rendezvous/grpc_status.h"
#include "rendezvous/watch_stream.h"

namespace ftcomm::rendezvous {

void PendingCall::OnCancel() {
  job_->cancelWaiter(id_);
}

template <typename Response>
void PendingReply<Response>::complete(Reply&& reply) {
  if (reply.status.ok()) *response_ = std::get<Response>(std::move(reply.body));
  Finish(toGrpc(reply.status));
}

template class PendingReply<pb::JoinResponse>;
template class PendingReply<pb::ReconfigureResponse>;
template class PendingReply<pb::KvWaitResponse>;

Job::Job(std::string jobId, std::chrono::milliseconds lease, StateStore* store,
         std::atomic<bool>& shuttingDown)
    : state_(jobId, lease), store_(store), shuttingDown_(shuttingDown) {}

Status Job::restore(const std::vector<pb::JournalRecord>& records, Clock::time_point now) {
  std::lock_guard lock(mu_);
  for (const auto& record : records) {
    if (record.has_snapshot()) {
      // Events before the snapshot are gone: a stream older than it starts with a SNAPSHOT.
      lastRevision_ = keptAfter_ = std::max(lastRevision_, record.snapshot().last_revision());
      kept_.clear();
    }
    if (record.has_event()) {
      lastRevision_ = std::max(lastRevision_, record.event().revision());
      keep(record.event());
      continue;
    }
    state_.apply(record);
  }
  state_.restartLeases(now);
  // The old records stay until the snapshot that replaces them is in place: a crash in between
  // loses nothing.
  auto log = store_->openLog(state_.jobId());
  if (!log.ok()) return log.status();
  log_ = std::move(log).value();
  return log_->compact(durableSnapshot());
}

pb::JobSnapshot Job::durableSnapshot() const {
  pb::JobSnapshot snapshot = state_.snapshot();
  snapshot.set_last_revision(lastRevision_);
  return snapshot;
}

Status Job::mutate(const Mutation& mutation) {
  Status status;
  act([&](JobState& state, Clock::time_point now, Effects& effects) {
    status = mutation(state, now, effects);
  });
  return status;
}

Status Job::inspect(const Inspection& inspection) {
  std::lock_guard lock(mu_);
  return inspection(state_, Clock::now());
}

void Job::startPending(PendingCall* call, const PendingMutation& mutation) {
  std::vector<ReadyReply> ready;
  {
    std::lock_guard lock(mu_);
    waiters_[call->id()] = call;
    Effects effects;
    Status status = mutation(state_, call->id(), Clock::now(), effects);
    if (!status.ok()) {
      waiters_.erase(call->id());
      ready.emplace_back(call, Reply{call->id(), status, {}});
    }
    carryOut(effects, ready);
  }
  finish(ready);
}

void Job::act(const Action& action) {
  std::vector<ReadyReply> ready;
  {
    std::lock_guard lock(mu_);
    Effects effects;
    action(state_, Clock::now(), effects);
    carryOut(effects, ready);
  }
  finish(ready);
}

void Job::cancelWaiter(WaiterId waiter) {
  act([&](JobState& state, Clock::time_point, Effects& effects) {
    state.cancelWaiter(waiter, effects);
  });
}

grpc::ServerWriteReactor<pb::Event>* Job::openWatch(const pb::Caller& caller,
                                                    std::uint64_t afterRevision) {
  std::lock_guard lock(mu_);
  auto token = state_.watchOpened(caller, Clock::now());
  if (!token.ok()) return new RefusedWatch(toGrpc(token.status()));
  auto* stream = new WatchStream(this, caller.member_id(), *token);
  auto [it, inserted] = watchers_.try_emplace(caller.member_id(), stream);
  if (!inserted) {
    it->second->finish(grpc::Status(grpc::StatusCode::CANCELLED, "superseded by a newer Watch"));
    it->second = stream;
  }
  if (afterRevision > 0 && afterRevision >= keptAfter_ && afterRevision <= lastRevision_) {
    for (const auto& event : kept_) {
      if (event.revision() > afterRevision) stream->push(event);
    }
  } else {
    pb::Event snapshot = state_.snapshotEvent();
    snapshot.set_revision(lastRevision_);
    stream->push(snapshot);
  }
  return stream;
}

void Job::watchDone(std::uint64_t memberId, std::uint64_t token, WatchStream* stream) {
  std::vector<ReadyReply> ready;
  {
    std::lock_guard lock(mu_);
    auto it = watchers_.find(memberId);
    if (it != watchers_.end() && it->second == stream) watchers_.erase(it);
    // A server going down closes every stream; that says nothing about the members.
    if (shuttingDown_.load()) return;
    Effects effects;
    state_.watchClosed(memberId, token, Clock::now(), effects);
    carryOut(effects, ready);
  }
  finish(ready);
}

void Job::tick(Clock::time_point now) {
  act([&](JobState& state, Clock::time_point, Effects& effects) { state.tick(now, effects); });
}

void Job::restartLeases(Clock::time_point now) {
  std::lock_guard lock(mu_);
  state_.restartLeases(now);
}

std::size_t Job::memberCount() {
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(state_.view().members_size());
}

void Job::keep(const pb::Event& event) {
  kept_.push_back(event);
  if (kept_.size() > kKeptEvents) {
    keptAfter_ = kept_.front().revision();
    kept_.pop_front();
  }
}

void Job::recordEvents(Effects& effects) {
  for (auto& event : effects.events) {
    event.set_revision(++lastRevision_);
    keep(event);
    if (store_ != nullptr) *effects.journal.emplace_back().mutable_event() = event;
  }
}

void Job::persist(const std::vector<pb::JournalRecord>& records) {
  if (store_ == nullptr) return;
  Status status = Status::Ok();
  if (!records.empty()) {
    if (!log_) {
      auto log = store_->openLog(state_.jobId());
      status = log.status();
      if (log.ok()) log_ = std::move(log).value();
    }
    if (status.ok() && dropped_) {
      // The store forgot the job when it was over: it starts again from the whole state.
      status = log_->compact(durableSnapshot());
      dropped_ = !status.ok();
    } else if (status.ok()) {
      status = log_->append(records, [this] { return durableSnapshot(); });
    }
  }
  if (status.ok() && log_ && !dropped_ && state_.over()) {
    status = log_->drop();
    dropped_ = status.ok();
  }
  if (!status.ok()) {
    // The state in memory is ahead of the store: answering now could hand out an epoch that a
    // restarted server (or another replica) would not know. Stop; clients reconnect to the
    // restarted server or move on to another replica.
    std::cerr << "ftcomm-rendezvous: fatal: job " << state_.jobId()
              << ": cannot write its state: " << status.toString() << std::endl;
    std::_Exit(70);
  }
}

void Job::carryOut(Effects& effects, std::vector<ReadyReply>& ready) {
  recordEvents(effects);
  persist(effects.journal);
  for (const auto& event : effects.events) {
    if (event.kind() == pb::Event::MEMBER_FAILED) {
      std::cerr << "ftcomm-rendezvous: job " << state_.jobId() << " epoch " << event.epoch()
                << ": member " << event.member_id() << " (rank " << event.rank()
                << ") failed: " << event.reason() << std::endl;
    }
    for (auto& [memberId, stream] : watchers_) stream->push(event);
  }
  for (const auto& expulsion : effects.expelled) {
    auto it = watchers_.find(expulsion.memberId);
    if (it == watchers_.end()) continue;
    it->second->finish(
        grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                     "expelled from job " + state_.jobId() + ": " + expulsion.reason));
    watchers_.erase(it);
  }
  for (auto& reply : effects.replies) {
    auto it = waiters_.find(reply.waiter);
    if (it == waiters_.end()) continue;
    ready.emplace_back(it->second, std::move(reply));
    waiters_.erase(it);
  }
}

void Job::finish(std::vector<ReadyReply>& ready) {
  for (auto& [call, reply] : ready) call->complete(std::move(reply));
}

}  // namespace ftcomm::rendezvous
