// The membership state machine: watch streams, the key-value store, and journal replay.
#include <catch2/catch.hpp>

#include "job_state_harness.h"

using namespace ftcomm::testing;

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
