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

Job::Job(std::string jobId, std::chrono::milliseconds lease,
         std::optional<std::filesystem::path> stateDir, std::atomic<bool>& shuttingDown)
    : state_(jobId, lease), shuttingDown_(shuttingDown) {
  if (stateDir) journalPath_ = JobJournal::pathFor(*stateDir, jobId);
}

Status Job::restore(const JournalContents& contents, Clock::time_point now) {
  std::lock_guard lock(mu_);
  for (const auto& record : contents.records) state_.apply(record);
  state_.restartLeases(now);
  // Keep the journal's intact records (cutting a torn tail) until the snapshot that replaces
  // them has been renamed into place: a crash in between loses nothing.
  auto journal = JobJournal::open(*journalPath_, contents.validBytes);
  if (!journal.ok()) return journal.status();
  journal_ = std::move(journal).value();
  return journal_->compact(state_.snapshot());
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

grpc::ServerWriteReactor<pb::Event>* Job::openWatch(const pb::Caller& caller) {
  std::lock_guard lock(mu_);
  auto token = state_.watchOpened(caller, Clock::now());
  if (!token.ok()) return new RefusedWatch(toGrpc(token.status()));
  auto* stream = new WatchStream(this, caller.member_id(), *token);
  auto [it, inserted] = watchers_.try_emplace(caller.member_id(), stream);
  if (!inserted) {
    it->second->finish(grpc::Status(grpc::StatusCode::CANCELLED, "superseded by a newer Watch"));
    it->second = stream;
  }
  stream->push(state_.snapshotEvent());
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

std::size_t Job::memberCount() {
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(state_.view().members_size());
}

void Job::carryOut(Effects& effects, std::vector<ReadyReply>& ready) {
  if (!effects.journal.empty() && journalPath_) {
    Status status = Status::Ok();
    if (!journal_) {
      auto journal = JobJournal::open(*journalPath_, 0);
      status = journal.status();
      if (journal.ok()) journal_ = std::move(journal).value();
    }
    if (status.ok()) status = journal_->append(effects.journal);
    if (status.ok() && journal_->wantsCompaction()) status = journal_->compact(state_.snapshot());
    if (!status.ok()) {
      // The state in memory is ahead of the disk: answering now could hand out an epoch that a
      // restarted server would not know. Stop; clients reconnect to the restarted server.
      std::cerr << "ftcomm-rendezvous: fatal: job " << state_.jobId()
                << ": cannot write the journal: " << status.toString() << std::endl;
      std::_Exit(70);
    }
  }
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
