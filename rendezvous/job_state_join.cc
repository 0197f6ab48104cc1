// JobState, part 1 of 3: joining, and committing an epoch (the first, or the next one with its
// replacements). Failures and the agreement round are in job_state_agreement.cc; callers,
// leases, streams, key-value and the journal in job_state.cc.
#include "rendezvous/job_state.h"

#include <algorithm>

#include "rendezvous/limits.h"

namespace ftcomm::rendezvous {

namespace {

std::string processName(const pb::ProcessInfo& p) {
  return p.host() + ":" + std::to_string(p.pid()) +
         (p.address().empty() ? "" : " (" + p.address() + ")");
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
  if (p.address().size() > kMaxHostBytes) {
    return invalidArgument("join: process.address exceeds " + std::to_string(kMaxHostBytes) +
                           " bytes");
  }
  if (p.transport_address().size() > kMaxTransportAddressBytes) {
    return invalidArgument("join: process.transport_address exceeds " +
                           std::to_string(kMaxTransportAddressBytes) + " bytes");
  }
  return Status::Ok();
}

}  // namespace

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
  if (!forming()) return joinRunningJob(waiter, request, now, out);

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
  if (forming()) {
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
  const bool replacements = !forming();
  if (forming() && epoch() > 0) {
    // A fresh start of a job whose members are all gone: nothing of the old run carries over.
    pb::JournalRecord cleared;
    cleared.set_kv_cleared(true);
    apply(cleared);
    out.journal.push_back(std::move(cleared));
  }
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

}  // namespace ftcomm::rendezvous
