#include "rendezvous/job_state.h"

#include <algorithm>

#include "rendezvous/limits.h"

namespace ftcomm::rendezvous {

namespace {

std::string processName(const pb::ProcessInfo& p) {
  return p.host() + ":" + std::to_string(p.pid());
}

bool sameProcess(const pb::ProcessInfo& a, const pb::ProcessInfo& b) {
  return a.host() == b.host() && a.pid() == b.pid();
}

Status validateProcess(const pb::ProcessInfo& p) {
  if (p.instance_id().empty()) return invalidArgument("join: process.instance_id is empty");
  if (p.instance_id().size() > kMaxInstanceIdBytes) {
    return invalidArgument("join: process.instance_id exceeds " +
                           std::to_string(kMaxInstanceIdBytes) + " bytes");
  }
  if (p.host().size() > kMaxHostBytes) {
    return invalidArgument("join: process.host exceeds " + std::to_string(kMaxHostBytes) +
                           " bytes");
  }
  if (p.transport_address().size() > kMaxTransportAddressBytes) {
    return invalidArgument("join: process.transport_address exceeds " +
                           std::to_string(kMaxTransportAddressBytes) + " bytes");
  }
  return Status::Ok();
}

}  // namespace

JobState::JobState(std::string jobId, std::chrono::milliseconds lease)
    : jobId_(std::move(jobId)), lease_(lease), kv_(jobId_) {}

// ---- Joining ----

Status JobState::join(WaiterId waiter, const pb::JoinRequest& request, Clock::time_point now,
                      Effects& out) {
  const pb::ProcessInfo& process = request.process();
  FTCOMM_RETURN_IF_ERROR(validateProcess(process));
  FTCOMM_RETURN_IF_ERROR(validateTimeout(request.timeout_ms()));
  const auto deadline = now + std::chrono::milliseconds(request.timeout_ms());

  // A retry of a join still pending takes over its place.
  for (auto& pending : pendingJoins_) {
    if (pending.request.process().instance_id() != process.instance_id()) continue;
    out.replies.push_back(
        {pending.waiter, cancelled("superseded by a retry of the same join"), {}});
    pending.waiter = waiter;
    pending.deadline = deadline;
    return Status::Ok();
  }
  // A retry of a join that was answered (the answer was lost, e.g. in a server restart).
  for (const auto& member : view_.members()) {
    if (member.process().instance_id() != process.instance_id()) continue;
    FTCOMM_RETURN_IF_ERROR(checkMember(member.member_id()));
    out.replies.push_back({waiter, Status::Ok(), joinResponseFor(member, epoch() > 1)});
    return Status::Ok();
  }
  for (const auto& pending : pendingJoins_) {
    if (sameProcess(pending.request.process(), process)) {
      return alreadyExists("job " + jobId_ + ": process " + processName(process) +
                           " is already waiting to join under another instance id");
    }
  }
  if (epoch() > 0) return joinRunningJob(waiter, request, now, out);

  if (request.world_size() < 1 || request.world_size() > kMaxWorldSize) {
    return invalidArgument("join: world_size " + std::to_string(request.world_size()) +
                           " is outside 1.." + std::to_string(kMaxWorldSize));
  }
  if (pendingJoins_.empty()) formingSize_ = request.world_size();
  if (request.world_size() != formingSize_) {
    return invalidArgument("job " + jobId_ + " is forming with world size " +
                           std::to_string(formingSize_) + "; this join says " +
                           std::to_string(request.world_size()));
  }
  if (request.has_desired_rank() && request.desired_rank() != -1) {
    const int rank = request.desired_rank();
    if (rank < 0 || rank >= formingSize_) {
      return invalidArgument("join: desired rank " + std::to_string(rank) +
                             " is out of range for world size " + std::to_string(formingSize_));
    }
    for (const auto& pending : pendingJoins_) {
      if (pending.request.has_desired_rank() && pending.request.desired_rank() == rank) {
        return alreadyExists("job " + jobId_ + ": rank " + std::to_string(rank) +
                             " is already claimed by " + processName(pending.request.process()));
      }
    }
  }
  pendingJoins_.push_back({waiter, request, deadline});
  if (static_cast<int>(pendingJoins_.size()) == formingSize_) commit(now, out);
  return Status::Ok();
}

Status JobState::joinRunningJob(WaiterId waiter, const pb::JoinRequest& request,
                                Clock::time_point now, Effects& out) {
  for (const auto& member : view_.members()) {
    if (isLive(member.member_id()) && sameProcess(member.process(), request.process())) {
      return alreadyExists("job " + jobId_ + ": process " + processName(request.process()) +
                           " is already member " + std::to_string(member.member_id()) + " (rank " +
                           std::to_string(member.rank()) + ")");
    }
  }
  pendingJoins_.push_back({waiter, request, now + std::chrono::milliseconds(request.timeout_ms())});
  pb::Event& event = out.events.emplace_back();
  event.set_kind(pb::Event::REPLACEMENT_WAITING);
  event.set_epoch(epoch());
  event.set_replacements_waiting(static_cast<std::uint32_t>(pendingJoins_.size()));
  event.set_reason(processName(request.process()) + " is waiting for admission");
  return Status::Ok();
}

// ---- Callers, liveness, failures ----

bool JobState::isLive(std::uint64_t memberId) const {
  return rankOf_.contains(memberId) && !failed_.contains(memberId) && !left_.contains(memberId);
}

const pb::Member* JobState::findMember(std::uint64_t memberId) const {
  auto it = rankOf_.find(memberId);
  return it == rankOf_.end() ? nullptr : &view_.members(it->second);
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

std::vector<pb::Member> JobState::nextMembers() const {
  std::vector<pb::Member> next;
  std::uint64_t id = nextMemberId_;
  auto admit = [&](const PendingJoin& pending, int rank) {
    pb::Member member;
    member.set_member_id(id++);
    member.set_rank(rank);
    *member.mutable_process() = pending.request.process();
    return member;
  };
  if (epoch() == 0) {
    // Desired ranks first, then the free ranks in join order.
    std::vector<const PendingJoin*> byRank(pendingJoins_.size(), nullptr);
    for (const auto& p : pendingJoins_) {
      if (p.request.has_desired_rank() && p.request.desired_rank() >= 0) {
        byRank[p.request.desired_rank()] = &p;
      }
    }
    std::size_t free = 0;
    for (const auto& p : pendingJoins_) {
      if (p.request.has_desired_rank() && p.request.desired_rank() >= 0) continue;
      while (byRank[free] != nullptr) ++free;
      byRank[free] = &p;
    }
    for (std::size_t rank = 0; rank < byRank.size(); ++rank) {
      next.push_back(admit(*byRank[rank], static_cast<int>(rank)));
    }
    // Member ids follow ranks, so that the first epoch reads naturally.
    return next;
  }
  for (const auto& member : view_.members()) {
    if (!isLive(member.member_id())) continue;
    pb::Member& survivor = next.emplace_back(member);
    survivor.set_rank(static_cast<int>(next.size()) - 1);
  }
  for (const auto& pending : pendingJoins_) {
    next.push_back(admit(pending, static_cast<int>(next.size())));
  }
  return next;
}

void JobState::commit(Clock::time_point now, Effects& out) {
  const bool replacements = epoch() > 0;
  pb::JournalRecord& record = out.journal.emplace_back();
  pb::MembershipView& next = *record.mutable_epoch_committed();
  next.set_epoch(epoch() + 1);
  for (auto& member : nextMembers()) *next.add_members() = std::move(member);
  const auto previous = rankOf_;
  apply(record);

  for (const auto& pending : pendingJoins_) {
    for (const auto& member : view_.members()) {
      if (member.process().instance_id() != pending.request.process().instance_id()) continue;
      out.replies.push_back({pending.waiter, Status::Ok(), joinResponseFor(member, replacements)});
    }
  }
  if (!round_.empty()) {
    const pb::ReconfigureResponse shared = reconfigureResponse(&previous);
    for (const auto& [memberId, call] : round_) {
      pb::ReconfigureResponse response = shared;
      response.set_rank(rankOf_.at(memberId));
      out.replies.push_back({call.waiter, Status::Ok(), std::move(response)});
    }
  }
  pendingJoins_.clear();
  round_.clear();
  formingSize_ = 0;
  // Survivors keep their running lease (a hung one is not granted extra time); newcomers start one.
  for (const auto& member : view_.members()) {
    leaseExpiry_.try_emplace(member.member_id(), now + lease_);
  }
  for (const auto& [id, rank] : previous) {
    if (!rankOf_.contains(id)) {
      leaseExpiry_.erase(id);
      watchToken_.erase(id);
    }
  }

  pb::Event& event = out.events.emplace_back();
  event.set_kind(pb::Event::EPOCH_COMMITTED);
  event.set_epoch(epoch());
}

pb::ReconfigureResponse JobState::reconfigureResponse(
    const std::unordered_map<std::uint64_t, int>* previous) const {
  pb::ReconfigureResponse response;
  response.set_epoch(view_.epoch());
  for (const auto& member : view_.members()) {
    response.add_member_ids(member.member_id());
    if (previous == nullptr || !previous->contains(member.member_id())) {
      *response.add_admitted() = member;
    }
  }
  return response;
}

pb::JoinResponse JobState::joinResponseFor(const pb::Member& member, bool replacement) const {
  pb::JoinResponse response;
  response.set_member_id(member.member_id());
  response.set_rank(member.rank());
  response.set_epoch(epoch());
  response.set_lease_ms(static_cast<std::uint32_t>(lease_.count()));
  *response.mutable_view() = view_;
  response.set_replacement(replacement);
  return response;
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

std::string JobState::describeMissingJoins() const {
  std::string text = "job " + jobId_ + ": " + std::to_string(pendingJoins_.size()) + " of " +
                     std::to_string(formingSize_) + " members joined before the deadline; " +
                     std::to_string(formingSize_ - static_cast<int>(pendingJoins_.size())) +
                     " missing";
  std::vector<bool> claimed(formingSize_, false);
  bool anyClaimed = false;
  for (const auto& p : pendingJoins_) {
    if (p.request.has_desired_rank() && p.request.desired_rank() >= 0) {
      claimed[p.request.desired_rank()] = anyClaimed = true;
    }
  }
  if (anyClaimed) {
    text += " (ranks not claimed:";
    for (int rank = 0; rank < formingSize_; ++rank) {
      if (!claimed[rank]) text += " " + std::to_string(rank);
    }
    text += ")";
  }
  return text;
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

  const std::string joinTimeout =
      epoch() == 0 ? describeMissingJoins()
                   : "job " + jobId_ +
                         ": not admitted before the deadline; no reconfiguration "
                         "of epoch " +
                         std::to_string(epoch()) + " completed";
  std::erase_if(pendingJoins_, [&](const PendingJoin& p) {
    if (p.deadline > now) return false;
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

void JobState::cancelWaiter(WaiterId waiter, Clock::time_point now, Effects& out) {
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
  if (kv_.cancel(waiter, why, out)) return;
  (void)now;
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
