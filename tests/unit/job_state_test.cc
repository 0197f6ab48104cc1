// The membership state machine, driven directly with an injected clock: no server, no sockets.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <utility>

#include "rendezvous/job_state.h"

using namespace ftcomm::rendezvous;
using namespace std::chrono_literals;

namespace {

constexpr auto kLease = 2000ms;

// A job plus the bookkeeping a test needs: a clock it moves by hand, and the effects of the last
// call.
struct Harness {
  JobState job{"job-a", kLease};
  Clock::time_point now{};  // the clock starts at the epoch of steady_clock and moves by hand
  WaiterId nextWaiter = 1;
  Effects effects;

  Effects take() { return std::exchange(effects, Effects{}); }

  ftcomm::Status join(WaiterId waiter, int worldSize, const std::string& instance, int pid,
                      std::optional<int> desiredRank = std::nullopt,
                      std::uint32_t timeoutMs = 5000) {
    pb::JoinRequest request;
    request.set_job_id("job-a");
    request.set_world_size(worldSize);
    request.mutable_process()->set_host("host");
    request.mutable_process()->set_pid(static_cast<std::uint32_t>(pid));
    request.mutable_process()->set_instance_id(instance);
    if (desiredRank) request.set_desired_rank(*desiredRank);
    request.set_timeout_ms(timeoutMs);
    return job.join(waiter, request, now, effects);
  }

  // Joins n members and returns their member ids by rank.
  std::vector<std::uint64_t> form(int n) {
    for (int i = 0; i < n; ++i)
      REQUIRE(join(nextWaiter++, n, "inst-" + std::to_string(i), 100 + i).ok());
    Effects e = take();
    REQUIRE(e.replies.size() == static_cast<std::size_t>(n));
    std::vector<std::uint64_t> ids(n);
    for (const auto& reply : e.replies) {
      const auto& response = std::get<pb::JoinResponse>(reply.body);
      ids[response.rank()] = response.member_id();
    }
    return ids;
  }

  pb::Caller caller(std::uint64_t memberId, std::uint64_t epoch = 0) const {
    pb::Caller c;
    c.set_job_id("job-a");
    c.set_member_id(memberId);
    c.set_epoch(epoch == 0 ? job.epoch() : epoch);
    return c;
  }

  ftcomm::Status reconfigure(WaiterId waiter, std::uint64_t memberId, std::uint64_t epoch = 0) {
    pb::ReconfigureRequest request;
    *request.mutable_caller() = caller(memberId, epoch);
    request.set_timeout_ms(5000);
    return job.reconfigure(waiter, request, now, effects);
  }

  ftcomm::Status report(std::uint64_t reporter, int suspectRank, std::uint64_t epoch = 0) {
    pb::ReportFailureRequest request;
    *request.mutable_caller() = caller(reporter, epoch);
    request.set_suspect_rank(suspectRank);
    request.set_reason("peer error");
    return job.reportFailure(request, now, effects);
  }

  void heartbeatAll(const std::vector<std::uint64_t>& ids) {
    for (auto id : ids) {
      pb::HeartbeatResponse response;
      REQUIRE(job.heartbeat(caller(id), now, response).ok());
    }
  }
};

std::vector<std::uint64_t> idsOf(const pb::MembershipView& view) {
  std::vector<std::uint64_t> ids;
  for (const auto& m : view.members()) ids.push_back(m.member_id());
  return ids;
}

std::vector<std::uint64_t> idsOf(const pb::ReconfigureResponse& response) {
  return {response.member_ids().begin(), response.member_ids().end()};
}

bool hasEvent(const Effects& e, pb::Event::Kind kind, std::uint64_t memberId = 0) {
  return std::any_of(e.events.begin(), e.events.end(), [&](const pb::Event& ev) {
    return ev.kind() == kind && (memberId == 0 || ev.member_id() == memberId);
  });
}

}  // namespace

TEST_CASE("the first epoch commits once the expected number of members have joined") {
  Harness h;
  REQUIRE(h.join(1, 3, "a", 1).ok());
  REQUIRE(h.join(2, 3, "b", 2).ok());
  CHECK(h.take().replies.empty());
  CHECK(h.job.epoch() == 0);
  REQUIRE(h.join(3, 3, "c", 3).ok());
  Effects e = h.take();
  CHECK(h.job.epoch() == 1);
  REQUIRE(e.replies.size() == 3);
  REQUIRE(e.journal.size() == 1);
  CHECK(e.journal[0].has_epoch_committed());
  CHECK(hasEvent(e, pb::Event::EPOCH_COMMITTED));
  // Ranks in join order, and everybody gets the same view.
  for (const auto& reply : e.replies) {
    const auto& r = std::get<pb::JoinResponse>(reply.body);
    CHECK(r.epoch() == 1);
    CHECK(r.view().members_size() == 3);
    CHECK(idsOf(r.view()) == idsOf(h.job.view()));
    CHECK(r.lease_ms() == 2000);
  }
  CHECK(h.job.view().members(0).process().instance_id() == "a");
  CHECK(h.job.view().members(2).process().instance_id() == "c");
}

TEST_CASE("desired ranks are honoured and a rank claimed twice is refused") {
  Harness h;
  REQUIRE(h.join(1, 3, "a", 1, 2).ok());
  CHECK(h.join(2, 3, "b", 2, 2).code() == ftcomm::StatusCode::kAlreadyExists);
  CHECK(h.join(3, 3, "x", 9, 3).code() == ftcomm::StatusCode::kInvalidArgument);
  CHECK(h.join(4, 3, "y", 8, -5).code() == ftcomm::StatusCode::kInvalidArgument);
  REQUIRE(h.join(5, 3, "b", 2).ok());
  REQUIRE(h.join(6, 3, "c", 3, 0).ok());
  CHECK(h.job.epoch() == 1);
  CHECK(h.job.view().members(0).process().instance_id() == "c");
  CHECK(h.job.view().members(1).process().instance_id() == "b");
  CHECK(h.job.view().members(2).process().instance_id() == "a");
}

TEST_CASE("joins that disagree on the world size, or come twice from one process, are refused") {
  Harness h;
  REQUIRE(h.join(1, 3, "a", 1).ok());
  auto wrongSize = h.join(2, 4, "b", 2);
  CHECK(wrongSize.code() == ftcomm::StatusCode::kInvalidArgument);
  CHECK_THAT(wrongSize.message(), Catch::Contains("world size 3"));
  CHECK(h.join(3, 3, "other-instance", 1).code() == ftcomm::StatusCode::kAlreadyExists);
  CHECK(h.join(4, 0, "c", 3).code() == ftcomm::StatusCode::kInvalidArgument);
  CHECK(h.join(5, 3, "", 4).code() == ftcomm::StatusCode::kInvalidArgument);
  CHECK(h.join(6, 3, "d", 5, std::nullopt, 0).code() == ftcomm::StatusCode::kInvalidArgument);
}

TEST_CASE("a retried join takes over the pending one, and a retry after the commit is answered") {
  Harness h;
  REQUIRE(h.join(1, 2, "a", 1).ok());
  REQUIRE(h.join(2, 2, "a", 1).ok());  // the same instance: a retry
  Effects e = h.take();
  REQUIRE(e.replies.size() == 1);
  CHECK(e.replies[0].waiter == 1);
  CHECK(e.replies[0].status.code() == ftcomm::StatusCode::kCancelled);
  REQUIRE(h.join(3, 2, "b", 2).ok());
  e = h.take();
  REQUIRE(e.replies.size() == 2);
  CHECK(std::any_of(e.replies.begin(), e.replies.end(),
                    [](const Reply& r) { return r.waiter == 2; }));
  // The answer got lost; the retry gets the same member back.
  const auto firstId = h.job.view().members(0).member_id();
  REQUIRE(h.join(4, 2, "a", 1).ok());
  e = h.take();
  REQUIRE(e.replies.size() == 1);
  CHECK(std::get<pb::JoinResponse>(e.replies[0].body).member_id() == firstId);
  CHECK(h.job.epoch() == 1);
}

TEST_CASE("a join that waits past its deadline names how many members are missing") {
  Harness h;
  REQUIRE(h.join(1, 4, "a", 1, 0, 1000).ok());
  REQUIRE(h.join(2, 4, "b", 2, 3, 1000).ok());
  h.now += 999ms;
  h.job.tick(h.now, h.effects);
  CHECK(h.take().replies.empty());
  h.now += 1ms;
  h.job.tick(h.now, h.effects);
  Effects e = h.take();
  REQUIRE(e.replies.size() == 2);
  CHECK(e.replies[0].status.code() == ftcomm::StatusCode::kTimeout);
  CHECK_THAT(e.replies[0].status.message(), Catch::Contains("2 of 4 members joined"));
  CHECK_THAT(e.replies[0].status.message(), Catch::Contains("2 missing"));
  CHECK_THAT(e.replies[0].status.message(), Catch::Contains("ranks not claimed: 1 2"));
  // The job can form afresh afterwards, even with another size.
  REQUIRE(h.join(3, 1, "c", 3).ok());
  CHECK(h.job.epoch() == 1);
}

TEST_CASE(
    "a member whose lease expires is declared failed and every later call from it is refused") {
  Harness h;
  auto ids = h.form(3);
  h.now += kLease - 1ms;
  h.heartbeatAll({ids[0], ids[2]});
  h.job.tick(h.now, h.effects);
  CHECK(h.take().events.empty());
  h.now += 1ms;
  h.job.tick(h.now, h.effects);
  Effects e = h.take();
  REQUIRE(hasEvent(e, pb::Event::MEMBER_FAILED, ids[1]));
  CHECK(e.events[0].rank() == 1);
  CHECK_THAT(e.events[0].reason(), Catch::Contains("lease expired"));
  REQUIRE(e.expelled.size() == 1);
  CHECK(e.expelled[0].memberId == ids[1]);
  CHECK(e.journal.size() == 1);

  pb::HeartbeatResponse hb;
  auto refused = h.job.heartbeat(h.caller(ids[1]), h.now, hb);
  CHECK(refused.code() == ftcomm::StatusCode::kFailedPrecondition);
  CHECK_THAT(refused.message(), Catch::Contains("expelled"));
}

TEST_CASE("reconfigure gives every survivor the identical ordered membership") {
  Harness h;
  auto ids = h.form(5);
  REQUIRE(h.report(ids[0], 2).ok());
  CHECK(hasEvent(h.take(), pb::Event::MEMBER_FAILED, ids[2]));
  REQUIRE(h.reconfigure(10, ids[4]).ok());
  REQUIRE(h.reconfigure(11, ids[0]).ok());
  REQUIRE(h.reconfigure(12, ids[3]).ok());
  CHECK(h.take().replies.empty());
  REQUIRE(h.reconfigure(13, ids[1]).ok());
  Effects e = h.take();
  REQUIRE(e.replies.size() == 4);
  const std::vector<std::uint64_t> expected{ids[0], ids[1], ids[3], ids[4]};
  for (const auto& reply : e.replies) {
    const auto& r = std::get<pb::ReconfigureResponse>(reply.body);
    CHECK(r.epoch() == 2);
    CHECK(idsOf(r) == expected);
    CHECK(r.member_ids(r.rank()) == expected[r.rank()]);
    CHECK(r.admitted_size() == 0);  // nobody new: the survivors know every process already
  }
  CHECK(h.job.epoch() == 2);
  for (int rank = 0; rank < 4; ++rank) CHECK(h.job.view().members(rank).rank() == rank);
}

TEST_CASE("a request that names a stale epoch is refused with a clear status") {
  Harness h;
  auto ids = h.form(2);
  REQUIRE(h.reconfigure(1, ids[0]).ok());
  REQUIRE(h.reconfigure(2, ids[1]).ok());
  REQUIRE(h.job.epoch() == 2);
  h.take();
  auto stale = h.report(ids[0], 1, 1);
  CHECK(stale.code() == ftcomm::StatusCode::kFailedPrecondition);
  CHECK_THAT(stale.message(), Catch::Contains("stale epoch 1"));
  CHECK_THAT(stale.message(), Catch::Contains("epoch 2"));
  auto future = h.report(ids[0], 1, 7);
  CHECK(future.code() == ftcomm::StatusCode::kInvalidArgument);
  // A retry of the reconfiguration that produced epoch 2 is answered with epoch 2, not refused.
  REQUIRE(h.reconfigure(3, ids[1], 1).ok());
  Effects e = h.take();
  REQUIRE(e.replies.size() == 1);
  const auto& retried = std::get<pb::ReconfigureResponse>(e.replies[0].body);
  CHECK(retried.epoch() == 2);
  CHECK(retried.admitted_size() == 2);  // a retry cannot know what the caller knew: all of them
  // Epochs only increase.
  REQUIRE(h.reconfigure(4, ids[0]).ok());
  REQUIRE(h.reconfigure(5, ids[1]).ok());
  CHECK(h.job.epoch() == 3);
}

TEST_CASE("a replacement waits until the next reconfiguration admits it with the next rank") {
  Harness h;
  auto ids = h.form(3);
  REQUIRE(h.report(ids[0], 1).ok());
  h.take();
  REQUIRE(h.join(50, 3, "replacement", 999).ok());
  Effects e = h.take();
  CHECK(e.replies.empty());
  CHECK(hasEvent(e, pb::Event::REPLACEMENT_WAITING));
  REQUIRE(h.reconfigure(51, ids[0]).ok());
  REQUIRE(h.reconfigure(52, ids[2]).ok());
  e = h.take();
  REQUIRE(e.replies.size() == 3);
  auto join = std::find_if(e.replies.begin(), e.replies.end(),
                           [](const Reply& r) { return r.waiter == 50; });
  REQUIRE(join != e.replies.end());
  const auto& admitted = std::get<pb::JoinResponse>(join->body);
  CHECK(admitted.replacement());
  CHECK(admitted.epoch() == 2);
  CHECK(admitted.rank() == 2);
  CHECK(admitted.member_id() > ids[2]);
  CHECK(idsOf(h.job.view()) == std::vector<std::uint64_t>{ids[0], ids[2], admitted.member_id()});
  // Survivors are told only who the newcomer is; the members they already know come brief.
  auto survivor = std::find_if(e.replies.begin(), e.replies.end(),
                               [](const Reply& r) { return r.waiter == 51; });
  REQUIRE(survivor != e.replies.end());
  const auto& next = std::get<pb::ReconfigureResponse>(survivor->body);
  CHECK(idsOf(next) == idsOf(h.job.view()));
  REQUIRE(next.admitted_size() == 1);
  CHECK(next.admitted(0).process().instance_id() == "replacement");
}

TEST_CASE("a replacement whose join deadline passes is dropped and never admitted") {
  Harness h;
  auto ids = h.form(2);
  REQUIRE(h.join(50, 0, "late", 999, std::nullopt, 1000).ok());
  h.now += 1000ms;
  h.heartbeatAll(ids);
  h.job.tick(h.now, h.effects);
  Effects e = h.take();
  REQUIRE(e.replies.size() == 1);
  CHECK(e.replies[0].status.code() == ftcomm::StatusCode::kTimeout);
  CHECK_THAT(e.replies[0].status.message(), Catch::Contains("not admitted"));
  REQUIRE(h.reconfigure(1, ids[0]).ok());
  REQUIRE(h.reconfigure(2, ids[1]).ok());
  CHECK(h.job.view().members_size() == 2);
}

TEST_CASE("concurrent failure reports during agreement: the first report wins") {
  Harness h;
  auto ids = h.form(4);
  REQUIRE(h.reconfigure(1, ids[0]).ok());
  // Ranks 1 and 2 report each other: the first report expels 2, whose own report is refused.
  REQUIRE(h.report(ids[1], 2).ok());
  auto second = h.report(ids[2], 1);
  CHECK(second.code() == ftcomm::StatusCode::kFailedPrecondition);
  REQUIRE(h.report(ids[3], 2).ok());  // a duplicate report of the same member is harmless
  Effects e = h.take();
  CHECK(std::count_if(e.events.begin(), e.events.end(), [](const pb::Event& ev) {
          return ev.kind() == pb::Event::MEMBER_FAILED;
        }) == 1);
  REQUIRE(h.reconfigure(2, ids[1]).ok());
  REQUIRE(h.reconfigure(3, ids[3]).ok());
  CHECK(idsOf(h.job.view()) == std::vector<std::uint64_t>{ids[0], ids[1], ids[3]});
}

TEST_CASE("a second failure in the middle of an agreement round still completes the round") {
  Harness h;
  auto ids = h.form(4);
  REQUIRE(h.report(ids[0], 3).ok());
  REQUIRE(h.reconfigure(1, ids[0]).ok());
  REQUIRE(h.reconfigure(2, ids[1]).ok());
  h.take();
  // Rank 2 never calls in: its lease runs out while the others wait.
  h.now += kLease;
  h.heartbeatAll({ids[0], ids[1]});
  h.job.tick(h.now, h.effects);
  Effects e = h.take();
  CHECK(hasEvent(e, pb::Event::MEMBER_FAILED, ids[2]));
  REQUIRE(e.replies.size() == 2);
  for (const auto& reply : e.replies) {
    CHECK(idsOf(std::get<pb::ReconfigureResponse>(reply.body)) ==
          std::vector<std::uint64_t>{ids[0], ids[1]});
  }
  CHECK(h.job.epoch() == 2);
}

TEST_CASE("a member that fails after calling reconfigure is told it was expelled") {
  Harness h;
  auto ids = h.form(3);
  REQUIRE(h.reconfigure(1, ids[2]).ok());
  REQUIRE(h.report(ids[0], 2).ok());
  Effects e = h.take();
  auto answer = std::find_if(e.replies.begin(), e.replies.end(),
                             [](const Reply& r) { return r.waiter == 1; });
  REQUIRE(answer != e.replies.end());
  CHECK(answer->status.code() == ftcomm::StatusCode::kFailedPrecondition);
}

TEST_CASE("a reconfiguration nobody completes times out naming the ranks that never called") {
  Harness h;
  auto ids = h.form(3);
  REQUIRE(h.reconfigure(1, ids[0]).ok());
  h.now += 5000ms;
  h.job.restartLeases(h.now);
  h.job.tick(h.now, h.effects);
  Effects e = h.take();
  REQUIRE(e.replies.size() == 1);
  CHECK(e.replies[0].status.code() == ftcomm::StatusCode::kTimeout);
  CHECK_THAT(e.replies[0].status.message(), Catch::Contains("never called Reconfigure: 1 2"));
}

TEST_CASE("a closed watch stream fails its member, unless a newer stream replaced it") {
  Harness h;
  auto ids = h.form(2);
  auto first = h.job.watchOpened(h.caller(ids[0]), h.now);
  REQUIRE(first.ok());
  auto second = h.job.watchOpened(h.caller(ids[0]), h.now);
  REQUIRE(second.ok());
  h.job.watchClosed(ids[0], *first, h.now, h.effects);
  CHECK(h.take().events.empty());
  h.job.watchClosed(ids[0], *second, h.now, h.effects);
  Effects e = h.take();
  REQUIRE(hasEvent(e, pb::Event::MEMBER_FAILED, ids[0]));
  CHECK_THAT(e.events[0].reason(), Catch::Contains("watch stream closed"));
}

TEST_CASE("revocation is broadcast once and cleared by the next epoch") {
  Harness h;
  auto ids = h.form(2);
  pb::RevokeRequest revoke;
  *revoke.mutable_caller() = h.caller(ids[1]);
  revoke.set_reason("timeout in allreduce");
  REQUIRE(h.job.revoke(revoke, h.effects).ok());
  REQUIRE(h.job.revoke(revoke, h.effects).ok());
  Effects e = h.take();
  REQUIRE(e.events.size() == 1);
  CHECK(e.events[0].kind() == pb::Event::EPOCH_REVOKED);
  CHECK_THAT(e.events[0].reason(), Catch::Contains("timeout in allreduce"));
  CHECK(h.job.snapshotEvent().revoked());
  REQUIRE(h.reconfigure(1, ids[0]).ok());
  REQUIRE(h.reconfigure(2, ids[1]).ok());
  CHECK_FALSE(h.job.snapshotEvent().revoked());
}

TEST_CASE("a member that leaves is not waited for and is not reported failed") {
  Harness h;
  auto ids = h.form(3);
  REQUIRE(h.reconfigure(1, ids[0]).ok());
  REQUIRE(h.reconfigure(2, ids[1]).ok());
  REQUIRE(h.job.leave(h.caller(ids[2]), h.now, h.effects).ok());
  Effects e = h.take();
  CHECK(hasEvent(e, pb::Event::MEMBER_LEFT, ids[2]));
  CHECK_FALSE(hasEvent(e, pb::Event::MEMBER_FAILED));
  CHECK(h.job.epoch() == 2);
  CHECK(h.job.view().members_size() == 2);
}

TEST_CASE(
    "the key-value store answers waiters when the last key arrives, or names what is missing") {
  Harness h;
  auto ids = h.form(2);
  pb::KvWaitRequest wait;
  *wait.mutable_caller() = h.caller(ids[0]);
  wait.add_keys("addr/0");
  wait.add_keys("addr/1");
  wait.set_timeout_ms(1000);
  REQUIRE(h.job.kvWait(7, wait, h.now, h.effects).ok());
  pb::KvWaitRequest other = wait;
  REQUIRE(h.job.kvWait(8, other, h.now, h.effects).ok());
  pb::KvSetRequest set;
  *set.mutable_caller() = h.caller(ids[1]);
  set.set_key("addr/1");
  set.set_value(std::string("\0\x01", 2));
  REQUIRE(h.job.kvSet(set, h.effects).ok());
  CHECK(h.take().replies.empty());
  set.set_key("addr/0");
  set.set_value("zero");
  REQUIRE(h.job.kvSet(set, h.effects).ok());
  Effects e = h.take();
  REQUIRE(e.replies.size() == 2);
  const auto& values = std::get<pb::KvWaitResponse>(e.replies[0].body);
  REQUIRE(values.entries_size() == 2);
  CHECK(values.entries(0).value() == "zero");
  CHECK(values.entries(1).value() == std::string("\0\x01", 2));

  wait.clear_keys();
  wait.add_keys("never");
  REQUIRE(h.job.kvWait(9, wait, h.now, h.effects).ok());
  h.now += 1000ms;
  h.job.restartLeases(h.now);
  h.job.tick(h.now, h.effects);
  e = h.take();
  REQUIRE(e.replies.size() == 1);
  CHECK(e.replies[0].status.code() == ftcomm::StatusCode::kTimeout);
  CHECK_THAT(e.replies[0].status.message(), Catch::Contains("'never'"));
}

TEST_CASE("key-value input beyond the limits is refused") {
  Harness h;
  auto ids = h.form(1);
  pb::KvSetRequest set;
  *set.mutable_caller() = h.caller(ids[0]);
  set.set_key("");
  CHECK(h.job.kvSet(set, h.effects).code() == ftcomm::StatusCode::kInvalidArgument);
  set.set_key(std::string(257, 'k'));
  CHECK(h.job.kvSet(set, h.effects).code() == ftcomm::StatusCode::kInvalidArgument);
  set.set_key("big");
  set.set_value(std::string((1 << 20) + 1, 'v'));
  CHECK(h.job.kvSet(set, h.effects).code() == ftcomm::StatusCode::kInvalidArgument);
  pb::KvGetRequest get;
  *get.mutable_caller() = h.caller(12345);
  get.set_key("x");
  pb::KvGetResponse got;
  CHECK(h.job.kvGet(get, got).code() == ftcomm::StatusCode::kNotFound);
}

TEST_CASE("replaying the journal reproduces the durable state") {
  Harness h;
  auto ids = h.form(3);
  std::vector<pb::JournalRecord> journal;
  // form() consumed the commit's effects; rebuild the journal from a snapshot plus later records.
  pb::JournalRecord start;
  *start.mutable_snapshot() = h.job.snapshot();
  journal.push_back(start);
  pb::KvSetRequest set;
  *set.mutable_caller() = h.caller(ids[0]);
  set.set_key("k");
  set.set_value("v");
  REQUIRE(h.job.kvSet(set, h.effects).ok());
  REQUIRE(h.report(ids[0], 1).ok());
  REQUIRE(h.reconfigure(1, ids[0]).ok());
  REQUIRE(h.reconfigure(2, ids[2]).ok());
  Effects e = h.take();
  journal.insert(journal.end(), e.journal.begin(), e.journal.end());

  JobState restored("job-a", kLease);
  for (const auto& record : journal) restored.apply(record);
  CHECK(restored.epoch() == 2);
  CHECK(idsOf(restored.view()) == idsOf(h.job.view()));
  CHECK(restored.snapshot().SerializeAsString() == h.job.snapshot().SerializeAsString());
  // The expelled member stays expelled after the restart.
  CHECK(restored.checkMember(ids[1]).code() == ftcomm::StatusCode::kFailedPrecondition);
}

TEST_CASE("a job whose members are all gone starts afresh on the next join, with an empty store") {
  Harness h;
  auto ids = h.form(2);
  pb::KvSetRequest set;
  *set.mutable_caller() = h.caller(ids[0]);
  set.set_key("addr/0");
  set.set_value("stale");
  REQUIRE(h.job.kvSet(set, h.effects).ok());
  h.now += kLease;  // nobody heartbeats: both leases run out
  h.job.tick(h.now, h.effects);
  h.take();
  CHECK(h.job.forming());
  REQUIRE(h.join(10, 2, "new-a", 501).ok());
  REQUIRE(h.join(11, 2, "new-b", 502).ok());
  Effects e = h.take();
  REQUIRE(e.replies.size() == 2);
  const auto& first = std::get<pb::JoinResponse>(e.replies[0].body);
  CHECK(first.epoch() == 2);
  CHECK_FALSE(first.replacement());
  CHECK(first.member_id() > ids[1]);
  CHECK(h.job.view().members(0).process().instance_id() == "new-a");
  REQUIRE(e.journal.size() == 2);
  CHECK(e.journal[0].kv_cleared());
  pb::KvGetRequest get;
  *get.mutable_caller() = h.caller(first.member_id());
  get.set_key("addr/0");
  pb::KvGetResponse got;
  REQUIRE(h.job.kvGet(get, got).ok());
  CHECK_FALSE(got.found());
  // The old members stay fenced.
  CHECK(h.job.checkMember(ids[0]).code() == ftcomm::StatusCode::kFailedPrecondition);
}

TEST_CASE("replacements waiting when the last member goes are told to join again") {
  Harness h;
  auto ids = h.form(1);
  REQUIRE(h.join(20, 0, "replacement", 777).ok());
  h.take();
  REQUIRE(h.job.leave(h.caller(ids[0]), h.now, h.effects).ok());
  Effects e = h.take();
  auto told = std::find_if(e.replies.begin(), e.replies.end(),
                           [](const Reply& r) { return r.waiter == 20; });
  REQUIRE(told != e.replies.end());
  CHECK(told->status.code() == ftcomm::StatusCode::kFailedPrecondition);
  CHECK_THAT(told->status.message(), Catch::Contains("join again"));
  REQUIRE(h.join(21, 1, "replacement", 777).ok());
  CHECK(h.job.epoch() == 2);
}
