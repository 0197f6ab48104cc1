// JobState, part 3 of 3: callers and epochs, leases, watch streams, the key-value store, time,
// and the durable state (apply, snapshot).
#include "rendezvous/job_state.h"

#include <algorithm>

#include "rendezvous/limits.h"

namespace ftcomm::rendezvous {

JobState::JobState(std::string jobId, std::chrono::milliseconds lease)
    : jobId_(std::move(jobId)), lease_(lease), kv_(jobId_) {}

// ---- Callers, liveness, failures ----

bool JobState::isLive(std::uint64_t memberId) const {
  return rankOf_.contains(memberId) && !failed_.contains(memberId) && !left_.contains(memberId);
}

Status JobState::checkMember(std::uint64_t memberId) const {
  const std::string who = "member " + std::to_string(memberId) + " of job " + jobId_;
  if (auto it = failed_.find(memberId); it != failed_.end()) {
    return failedPrecondition(who + " was declared failed (" + it->second +
                              "): it is expelled and must stop");
  }
  if (left_.contains(memberId)) return failedPrecondition(who + " has left the job");
  if (!rankOf_.contains(memberId)) return notFound("job " + jobId_ + " has no " + who);
  return Status::Ok();
}

Status JobState::checkEpoch(const pb::Caller& caller, const char* operation) const {
  const std::string at = "; job " + jobId_ + " is at epoch " + std::to_string(epoch());
  if (caller.epoch() == 0)
    return invalidArgument(std::string(operation) + " needs the caller's epoch");
  if (caller.epoch() < epoch()) {
    return failedPrecondition(std::string(operation) + ": stale epoch " +
                              std::to_string(caller.epoch()) + at);
  }
  if (caller.epoch() > epoch()) {
    return invalidArgument(std::string(operation) + ": epoch " + std::to_string(caller.epoch()) +
                           " has not been committed" + at);
  }
  return Status::Ok();
}

Status JobState::heartbeat(const pb::Caller& caller, Clock::time_point now,
                           pb::HeartbeatResponse& out) {
  FTCOMM_RETURN_IF_ERROR(checkCaller(caller));
  leaseExpiry_[caller.member_id()] = now + lease_;
  out.set_epoch(epoch());
  out.set_lease_ms(static_cast<std::uint32_t>(lease_.count()));
  out.set_revoked(revoked_);
  return Status::Ok();
}

// ---- Key-value store ----

Status JobState::kvSet(const pb::KvSetRequest& request, Effects& out) {
  FTCOMM_RETURN_IF_ERROR(checkCaller(request.caller()));
  return kv_.set(request.key(), request.value(), out);
}

Status JobState::kvGet(const pb::KvGetRequest& request, pb::KvGetResponse& out) const {
  FTCOMM_RETURN_IF_ERROR(checkCaller(request.caller()));
  FTCOMM_RETURN_IF_ERROR(validateKey(request.key()));
  const std::string* value = kv_.get(request.key());
  out.set_found(value != nullptr);
  if (value != nullptr) out.set_value(*value);
  return Status::Ok();
}

Status JobState::kvUpdate(const pb::KvUpdateRequest& request, pb::KvUpdateResponse& answer,
                          Effects& out) {
  FTCOMM_RETURN_IF_ERROR(checkCaller(request.caller()));
  return kv_.update(request, answer, out);
}

Status JobState::kvCount(const pb::KvCountRequest& request, pb::KvCountResponse& out) const {
  FTCOMM_RETURN_IF_ERROR(checkCaller(request.caller()));
  out.set_count(kv_.count(request.prefix()));
  return Status::Ok();
}

Status JobState::kvWait(WaiterId waiter, const pb::KvWaitRequest& request, Clock::time_point now,
                        Effects& out) {
  FTCOMM_RETURN_IF_ERROR(checkCaller(request.caller()));
  FTCOMM_RETURN_IF_ERROR(validateTimeout(request.timeout_ms()));
  std::vector<std::string> keys(request.keys().begin(), request.keys().end());
  return kv_.wait(waiter, keys, now + std::chrono::milliseconds(request.timeout_ms()), out);
}

// ---- Watch streams ----

Result<std::uint64_t> JobState::watchOpened(const pb::Caller& caller, Clock::time_point now) {
  FTCOMM_RETURN_IF_ERROR(checkCaller(caller));
  const std::uint64_t token = nextWatchToken_++;
  watchToken_[caller.member_id()] = token;
  leaseExpiry_[caller.member_id()] = now + lease_;
  return token;
}

void JobState::watchClosed(std::uint64_t memberId, std::uint64_t token, Clock::time_point now,
                           Effects& out) {
  auto it = watchToken_.find(memberId);
  if (it == watchToken_.end() || it->second != token) return;
  watchToken_.erase(it);
  if (!isLive(memberId)) return;
  declareFailed(memberId, "watch stream closed: the process exited or lost its connection", 0, out);
  maybeCommitRound(now, out);
}

pb::Event JobState::snapshotEvent() const {
  pb::Event event;
  event.set_kind(pb::Event::SNAPSHOT);
  event.set_epoch(epoch());
  *event.mutable_view() = view_;
  for (const auto& member : view_.members()) {
    if (failed_.contains(member.member_id()) || left_.contains(member.member_id())) {
      event.add_failed_member_ids(member.member_id());
    }
  }
  event.set_revoked(revoked_);
  event.set_reason(revokeReason_);
  event.set_replacements_waiting(static_cast<std::uint32_t>(pendingJoins_.size()));
  return event;
}

// ---- Time ----

void JobState::tick(Clock::time_point now, Effects& out) {
  std::vector<std::uint64_t> expired;
  for (const auto& [memberId, expiry] : leaseExpiry_) {
    if (expiry <= now && isLive(memberId)) expired.push_back(memberId);
  }
  std::sort(expired.begin(), expired.end());
  for (std::uint64_t memberId : expired) {
    declareFailed(memberId,
                  "lease expired: no heartbeat for " + std::to_string(lease_.count()) + " ms", 0,
                  out);
  }
  if (!expired.empty()) maybeCommitRound(now, out);

  std::string joinTimeout;  // built only when a join has expired: this runs every tick
  std::erase_if(pendingJoins_, [&](const PendingJoin& p) {
    if (p.deadline > now) return false;
    if (joinTimeout.empty()) {
      joinTimeout = forming() ? describeMissingJoins()
                              : "job " + jobId_ +
                                    ": not admitted before the deadline; no reconfiguration "
                                    "of epoch " +
                                    std::to_string(epoch()) + " completed";
    }
    out.replies.push_back({p.waiter, timeoutError(joinTimeout), {}});
    return true;
  });
  if (pendingJoins_.empty()) formingSize_ = 0;

  std::string roundTimeout;
  std::erase_if(round_, [&](const auto& entry) {
    if (entry.second.deadline > now) return false;
    if (roundTimeout.empty()) roundTimeout = describeMissingRoundCalls();
    out.replies.push_back({entry.second.waiter, timeoutError(roundTimeout), {}});
    return true;
  });
  kv_.expireWaiters(now, out);
}

void JobState::cancelWaiter(WaiterId waiter, Effects& out) {
  const Status why = cancelled("the call was cancelled by its client");
  auto join = std::find_if(pendingJoins_.begin(), pendingJoins_.end(),
                           [&](const PendingJoin& p) { return p.waiter == waiter; });
  if (join != pendingJoins_.end()) {
    out.replies.push_back({waiter, why, {}});
    pendingJoins_.erase(join);
    if (pendingJoins_.empty()) formingSize_ = 0;
    return;
  }
  for (auto it = round_.begin(); it != round_.end(); ++it) {
    if (it->second.waiter != waiter) continue;
    out.replies.push_back({waiter, why, {}});
    round_.erase(it);
    return;
  }
  kv_.cancel(waiter, why, out);
}

void JobState::restartLeases(Clock::time_point now) {
  for (const auto& member : view_.members()) {
    if (isLive(member.member_id())) leaseExpiry_[member.member_id()] = now + lease_;
  }
}

// ---- Durable state ----

void JobState::apply(const pb::JournalRecord& record) {
  auto adoptView = [&](const pb::MembershipView& view) {
    view_ = view;
    rankOf_.clear();
    for (const auto& member : view_.members()) {
      rankOf_[member.member_id()] = member.rank();
      nextMemberId_ = std::max(nextMemberId_, member.member_id() + 1);
    }
  };
  auto recountLive = [&] {
    liveCount_ = 0;
    for (const auto& [memberId, rank] : rankOf_) liveCount_ += isLive(memberId) ? 1 : 0;
  };
  switch (record.record_case()) {
    case pb::JournalRecord::kSnapshot: {
      const pb::JobSnapshot& s = record.snapshot();
      adoptView(s.view());
      failed_.clear();
      for (const auto& f : s.failed()) failed_[f.member_id()] = f.reason();
      left_ = std::set<std::uint64_t>(s.left().begin(), s.left().end());
      revoked_ = s.revoked();
      revokeReason_ = s.revoke_reason();
      kv_ = KvStore(jobId_);
      for (const auto& entry : s.kv()) kv_.apply(entry);
      nextMemberId_ = std::max(nextMemberId_, s.next_member_id());
      recountLive();
      break;
    }
    case pb::JournalRecord::kEpochCommitted:
      adoptView(record.epoch_committed());
      revoked_ = false;
      revokeReason_.clear();
      recountLive();
      break;
    case pb::JournalRecord::kMemberFailed:
      if (isLive(record.member_failed().member_id())) --liveCount_;
      failed_[record.member_failed().member_id()] = record.member_failed().reason();
      break;
    case pb::JournalRecord::kMemberLeft:
      if (isLive(record.member_left())) --liveCount_;
      left_.insert(record.member_left());
      break;
    case pb::JournalRecord::kEpochRevoked:
      revoked_ = true;
      revokeReason_ = record.epoch_revoked();
      break;
    case pb::JournalRecord::kKvSet:
      kv_.apply(record.kv_set());
      break;
    case pb::JournalRecord::kKvRemoved:
      kv_.applyRemoval(record.kv_removed());
      break;
    case pb::JournalRecord::kKvCleared:
      kv_ = KvStore(jobId_);
      break;
    case pb::JournalRecord::kEvent:  // kept by the Job for resuming streams; no state
    case pb::JournalRecord::RECORD_NOT_SET:
      break;
  }
}

pb::JobSnapshot JobState::snapshot() const {
  pb::JobSnapshot s;
  *s.mutable_view() = view_;
  for (const auto& [memberId, reason] : failed_) {
    pb::MemberFailure* f = s.add_failed();
    f->set_member_id(memberId);
    f->set_reason(reason);
  }
  for (std::uint64_t memberId : left_) s.add_left(memberId);
  s.set_revoked(revoked_);
  s.set_revoke_reason(revokeReason_);
  kv_.appendTo(s);
  s.set_next_member_id(nextMemberId_);
  return s;
}

}  // namespace ftcomm::rendezvous
