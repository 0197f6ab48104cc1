// The membership state machine of one job: joins, leases, failures, revocation and epoch
// agreement, plus the job's key-value store. Pure logic: time comes in as an argument (tests
// inject it), and every change the server must act on comes back as Effects.
//
// The model. Members join until world_size are in; then epoch 1 commits with ranks 0..n-1.
// A member fails when its watch stream closes, its lease expires, or a peer reports it; it then
// stays failed for good (fencing: every later call from it is refused). Reconfigure: every live
// member of epoch e calls in; when all have (failed ones excluded, even mid-round), epoch e+1
// commits with the survivors in their old rank order followed by the waiting replacements.
//
// Durable state (the view, failures, departures, revocation, KV) changes only in apply(), from
// journal records that live calls emit and that a restarted server replays. Leases, open
// streams and pending calls are transient: after a restart every member gets a fresh lease.
//
// Thread-safety: none; the server holds the job's mutex around every call.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "rendezvous/effects.h"
#include "rendezvous/kv_store.h"

namespace ftcomm::rendezvous {

class JobState {
 public:
  JobState(std::string jobId, std::chrono::milliseconds lease);

  const std::string& jobId() const { return jobId_; }
  // True while the job has no live members: joins form an epoch from scratch (the first one, or
  // a fresh start after every member is gone) instead of waiting as replacements.
  bool forming() const { return epoch() == 0 || liveCount_ == 0; }
  std::uint64_t epoch() const { return view_.epoch(); }
  // True once the job has run and nobody is left in it or waiting to join: its stored state may
  // go (a later join starts it afresh).
  bool over() const { return epoch() > 0 && liveCount_ == 0 && pendingJoins_.empty(); }
  const pb::MembershipView& view() const { return view_; }

  // Ok with no reply in `out`: the join waits. Errors are immediate answers.
  Status join(WaiterId waiter, const pb::JoinRequest& request, Clock::time_point now, Effects& out);

  // Checks that the caller is a live member of this job (fencing).
  Status checkCaller(const pb::Caller& caller) const { return checkMember(caller.member_id()); }
  Status checkMember(std::uint64_t memberId) const;

  Status heartbeat(const pb::Caller& caller, Clock::time_point now, pb::HeartbeatResponse& out);
  Status reportFailure(const pb::ReportFailureRequest& request, Clock::time_point now,
                       Effects& out);
  Status revoke(const pb::RevokeRequest& request, Effects& out);
  Status reconfigure(WaiterId waiter, const pb::ReconfigureRequest& request, Clock::time_point now,
                     Effects& out);
  Status leave(const pb::Caller& caller, Clock::time_point now, Effects& out);

  Status kvSet(const pb::KvSetRequest& request, Effects& out);
  Status kvGet(const pb::KvGetRequest& request, pb::KvGetResponse& out) const;
  Status kvUpdate(const pb::KvUpdateRequest& request, pb::KvUpdateResponse& answer, Effects& out);
  Status kvCount(const pb::KvCountRequest& request, pb::KvCountResponse& out) const;
  Status kvWait(WaiterId waiter, const pb::KvWaitRequest& request, Clock::time_point now,
                Effects& out);

  // A watch stream opened for the caller: returns a token that names this stream, so that the
  // close of an older stream of the same member is not mistaken for its death.
  Result<std::uint64_t> watchOpened(const pb::Caller& caller, Clock::time_point now);
  void watchClosed(std::uint64_t memberId, std::uint64_t token, Clock::time_point now,
                   Effects& out);
  pb::Event snapshotEvent() const;

  // Lease expiry and pending-call deadlines.
  void tick(Clock::time_point now, Effects& out);
  // The pending call went away (client cancelled or deadline): answer it Cancelled.
  void cancelWaiter(WaiterId waiter, Effects& out);
  // After a server restart: every member gets a full lease from now.
  void restartLeases(Clock::time_point now);

  void apply(const pb::JournalRecord& record);
  pb::JobSnapshot snapshot() const;

 private:
  struct PendingJoin {
    WaiterId waiter;
    pb::JoinRequest request;
    Clock::time_point deadline;
  };
  struct RoundCall {
    WaiterId waiter;
    Clock::time_point deadline;
  };

  bool isLive(std::uint64_t memberId) const;
  Status checkEpoch(const pb::Caller& caller, const char* operation) const;
  Status joinRunningJob(WaiterId waiter, const pb::JoinRequest& request, Clock::time_point now,
                        Effects& out);
  void declareFailed(std::uint64_t memberId, const std::string& reason, std::uint64_t reporter,
                     Effects& out);
  void forgetMember(std::uint64_t memberId, const Status& why, Effects& out);
  // After the last live member went: waiting replacements have nobody left to admit them.
  void dismissReplacementsIfEmpty(Effects& out);
  void maybeCommitRound(Clock::time_point now, Effects& out);
  void commit(Clock::time_point now, Effects& out);
  std::vector<pb::Member> nextMembers() const;
  pb::JoinResponse joinResponseFor(const pb::Member& member, bool replacement) const;
  // The answer to every caller of the round: who is in the epoch, and the ProcessInfo of those
  // not in `previous` (nullptr: of everybody).
  pb::ReconfigureResponse reconfigureResponse(
      const std::unordered_map<std::uint64_t, int>* previous) const;
  std::string describeMissingJoins() const;
  std::string describeMissingRoundCalls() const;
  void emitMemberEvent(pb::Event::Kind kind, std::uint64_t memberId, const std::string& reason,
                       std::uint64_t reporter, Effects& out) const;

  std::string jobId_;
  std::chrono::milliseconds lease_;

  // Durable (changed in apply() only).
  pb::MembershipView view_;
  std::map<std::uint64_t, std::string> failed_;  // every member ever declared failed
  std::set<std::uint64_t> left_;
  bool revoked_ = false;
  std::string revokeReason_;
  std::uint64_t nextMemberId_ = 1;
  KvStore kv_;

  // Derived from view_, failed_ and left_.
  std::unordered_map<std::uint64_t, int> rankOf_;
  std::size_t liveCount_ = 0;  // members of view_ neither failed nor left

  // Transient.
  std::int32_t formingSize_ = 0;              // world size of the first epoch while it forms
  std::vector<PendingJoin> pendingJoins_;     // forming members, or replacements once running
  std::map<std::uint64_t, RoundCall> round_;  // members that called Reconfigure for epoch()
  std::unordered_map<std::uint64_t, Clock::time_point> leaseExpiry_;
  std::unordered_map<std::uint64_t, std::uint64_t> watchToken_;
  std::uint64_t nextWatchToken_ = 1;
};

}  // namespace ftcomm::rendezvous
