// JobState, part 2 of 3: failures, revocation, departures, and the reconfiguration round.
#include "rendezvous/job_state.h"

#include <algorithm>

#include "rendezvous/limits.h"

namespace ftcomm::rendezvous {

Status JobState::reportFailure(const pb::ReportFailureRequest& request, Clock::time_point now,
                               Effects& out) {
  const pb::Caller& caller = request.caller();
  FTCOMM_RETURN_IF_ERROR(checkCaller(caller));
  FTCOMM_RETURN_IF_ERROR(checkEpoch(caller, "ReportFailure"));
  FTCOMM_RETURN_IF_ERROR(validateReason(request.reason()));
  const int rank = request.suspect_rank();
  if (rank < 0 || rank >= view_.members_size()) {
    return invalidArgument("ReportFailure: rank " + std::to_string(rank) +
                           " is out of range for epoch " + std::to_string(epoch()) + " of size " +
                           std::to_string(view_.members_size()));
  }
  const std::uint64_t suspect = view_.members(rank).member_id();
  if (suspect == caller.member_id()) {
    return invalidArgument("ReportFailure: a member cannot report itself; call Leave");
  }
  if (!isLive(suspect)) return Status::Ok();  // first report wins
  declareFailed(suspect,
                "reported by rank " + std::to_string(rankOf_.at(caller.member_id())) + ": " +
                    request.reason(),
                caller.member_id(), out);
  maybeCommitRound(now, out);
  return Status::Ok();
}

void JobState::declareFailed(std::uint64_t memberId, const std::string& reason,
                             std::uint64_t reporter, Effects& out) {
  pb::JournalRecord& record = out.journal.emplace_back();
  record.mutable_member_failed()->set_member_id(memberId);
  record.mutable_member_failed()->set_reason(reason);
  apply(record);
  emitMemberEvent(pb::Event::MEMBER_FAILED, memberId, reason, reporter, out);
  out.expelled.push_back({memberId, reason});
  forgetMember(memberId,
               failedPrecondition("member " + std::to_string(memberId) + " of job " + jobId_ +
                                  " was declared failed (" + reason + ")"),
               out);
  dismissReplacementsIfEmpty(out);
}

void JobState::dismissReplacementsIfEmpty(Effects& out) {
  if (liveCount_ > 0 || epoch() == 0) return;
  for (const auto& pending : pendingJoins_) {
    out.replies.push_back(
        {pending.waiter,
         failedPrecondition("every member of job " + jobId_ +
                            " is gone, so nobody can admit a replacement; join again to start "
                            "the job afresh"),
         {}});
  }
  pendingJoins_.clear();
  formingSize_ = 0;
}

void JobState::forgetMember(std::uint64_t memberId, const Status& why, Effects& out) {
  if (auto it = round_.find(memberId); it != round_.end()) {
    out.replies.push_back({it->second.waiter, why, {}});
    round_.erase(it);
  }
  leaseExpiry_.erase(memberId);
  watchToken_.erase(memberId);
}

void JobState::emitMemberEvent(pb::Event::Kind kind, std::uint64_t memberId,
                               const std::string& reason, std::uint64_t reporter,
                               Effects& out) const {
  pb::Event& event = out.events.emplace_back();
  event.set_kind(kind);
  event.set_epoch(epoch());
  event.set_member_id(memberId);
  event.set_rank(rankOf_.at(memberId));
  event.set_reason(reason);
  event.set_reporter_member_id(reporter);
}

Status JobState::revoke(const pb::RevokeRequest& request, Effects& out) {
  FTCOMM_RETURN_IF_ERROR(checkCaller(request.caller()));
  FTCOMM_RETURN_IF_ERROR(checkEpoch(request.caller(), "Revoke"));
  FTCOMM_RETURN_IF_ERROR(validateReason(request.reason()));
  if (revoked_) return Status::Ok();
  const std::string reason = "revoked by rank " +
                             std::to_string(rankOf_.at(request.caller().member_id())) + ": " +
                             request.reason();
  pb::JournalRecord& record = out.journal.emplace_back();
  record.set_epoch_revoked(reason);
  apply(record);
  pb::Event& event = out.events.emplace_back();
  event.set_kind(pb::Event::EPOCH_REVOKED);
  event.set_epoch(epoch());
  event.set_reason(reason);
  event.set_reporter_member_id(request.caller().member_id());
  return Status::Ok();
}

Status JobState::leave(const pb::Caller& caller, Clock::time_point now, Effects& out) {
  FTCOMM_RETURN_IF_ERROR(checkCaller(caller));
  pb::JournalRecord& record = out.journal.emplace_back();
  record.set_member_left(caller.member_id());
  apply(record);
  emitMemberEvent(pb::Event::MEMBER_LEFT, caller.member_id(), "left the job", 0, out);
  forgetMember(caller.member_id(),
               failedPrecondition("member " + std::to_string(caller.member_id()) + " left"), out);
  dismissReplacementsIfEmpty(out);
  maybeCommitRound(now, out);
  return Status::Ok();
}

// ---- Agreement ----

Status JobState::reconfigure(WaiterId waiter, const pb::ReconfigureRequest& request,
                             Clock::time_point now, Effects& out) {
  const pb::Caller& caller = request.caller();
  FTCOMM_RETURN_IF_ERROR(validateTimeout(request.timeout_ms()));
  FTCOMM_RETURN_IF_ERROR(checkCaller(caller));
  if (caller.epoch() != 0 && caller.epoch() + 1 == epoch()) {
    // A retry after the commit: the caller is in the new epoch, so answer with it.
    pb::ReconfigureResponse response = reconfigureResponse(nullptr);
    response.set_rank(rankOf_.at(caller.member_id()));
    out.replies.push_back({waiter, Status::Ok(), std::move(response)});
    return Status::Ok();
  }
  FTCOMM_RETURN_IF_ERROR(checkEpoch(caller, "Reconfigure"));
  RoundCall call{waiter, now + std::chrono::milliseconds(request.timeout_ms())};
  auto [it, inserted] = round_.try_emplace(caller.member_id(), call);
  if (!inserted) {
    out.replies.push_back(
        {it->second.waiter, cancelled("superseded by a retry of Reconfigure"), {}});
    it->second = call;
  }
  maybeCommitRound(now, out);
  return Status::Ok();
}

void JobState::maybeCommitRound(Clock::time_point now, Effects& out) {
  // round_ holds live members only (a failure or departure removes its entry), so equal sizes
  // mean every live member has called in.
  if (!round_.empty() && round_.size() == liveCount_) commit(now, out);
}

std::string JobState::describeMissingRoundCalls() const {
  std::string ranks;
  for (const auto& member : view_.members()) {
    if (isLive(member.member_id()) && !round_.contains(member.member_id())) {
      ranks += (ranks.empty() ? "" : " ") + std::to_string(member.rank());
    }
  }
  return "job " + jobId_ + " epoch " + std::to_string(epoch()) +
         ": reconfiguration not agreed before the deadline; live ranks that never called "
         "Reconfigure: " +
         ranks;
}

}  // namespace ftcomm::rendezvous
