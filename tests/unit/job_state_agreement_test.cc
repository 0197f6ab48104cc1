// The membership state machine: failures, leases, revocation, departures, agreement rounds.
#include <catch2/catch.hpp>

#include "job_state_harness.h"

using namespace ftcomm::testing;

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
