// The membership state machine: joining, forming epochs, replacements, fresh starts.
#include <catch2/catch.hpp>

#include "job_state_harness.h"

using namespace ftcomm::testing;

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
