// The key-value store's atomic updates (c10d's add, compareSet, deleteKey, getNumKeys): their
// answers, their refusals, and a journal replay that reproduces them.
#include "tests/unit/job_state_harness.h"

using namespace ftcomm::testing;

namespace {

pb::KvUpdateRequest add(const pb::Caller& caller, const std::string& key, std::int64_t delta) {
  pb::KvUpdateRequest r;
  *r.mutable_caller() = caller;
  r.set_key(key);
  r.set_add(delta);
  return r;
}

pb::KvUpdateRequest compareSet(const pb::Caller& caller, const std::string& key,
                               const std::string& expected, const std::string& desired) {
  pb::KvUpdateRequest r;
  *r.mutable_caller() = caller;
  r.set_key(key);
  r.mutable_compare_set()->set_expected(expected);
  r.mutable_compare_set()->set_desired(desired);
  return r;
}

pb::KvUpdateRequest remove(const pb::Caller& caller, const std::string& key) {
  pb::KvUpdateRequest r;
  *r.mutable_caller() = caller;
  r.set_key(key);
  r.set_remove(true);
  return r;
}

std::uint64_t count(Harness& h, const pb::Caller& caller, const std::string& prefix) {
  pb::KvCountRequest r;
  *r.mutable_caller() = caller;
  r.set_prefix(prefix);
  pb::KvCountResponse out;
  REQUIRE(h.job.kvCount(r, out).ok());
  return out.count();
}

}  // namespace

TEST_CASE("add counts from an absent key, reads with 0 without journaling, and refuses text") {
  Harness h;
  auto ids = h.form(2);
  const auto c = h.caller(ids[0]);
  pb::KvUpdateResponse out;
  REQUIRE(h.job.kvUpdate(add(c, "n", 3), out, h.effects).ok());
  CHECK(out.value() == "3");
  REQUIRE(h.job.kvUpdate(add(c, "n", -5), out, h.effects).ok());
  CHECK(out.value() == "-2");
  h.take();
  REQUIRE(h.job.kvUpdate(add(c, "n", 0), out, h.effects).ok());
  CHECK(out.value() == "-2");
  CHECK(h.take().journal.empty());

  pb::KvSetRequest set;
  *set.mutable_caller() = c;
  set.set_key("text");
  set.set_value("12abc");
  REQUIRE(h.job.kvSet(set, h.effects).ok());
  CHECK(h.job.kvUpdate(add(c, "text", 1), out, h.effects).code() ==
        ftcomm::StatusCode::kInvalidArgument);
  REQUIRE(h.job.kvUpdate(add(c, "big", INT64_MAX), out, h.effects).ok());
  CHECK(h.job.kvUpdate(add(c, "big", 1), out, h.effects).code() ==
        ftcomm::StatusCode::kInvalidArgument);
}

TEST_CASE("compare-and-set follows c10d: absent and empty set, a mismatch answers the value") {
  Harness h;
  auto ids = h.form(1);
  const auto c = h.caller(ids[0]);
  pb::KvUpdateResponse out;
  REQUIRE(h.job.kvUpdate(compareSet(c, "k", "x", "y"), out, h.effects).ok());
  CHECK((!out.found() && out.value() == "x"));  // absent, expected non-empty: unchanged
  REQUIRE(h.job.kvUpdate(compareSet(c, "k", "", "one"), out, h.effects).ok());
  CHECK((out.found() && out.value() == "one"));
  REQUIRE(h.job.kvUpdate(compareSet(c, "k", "two", "three"), out, h.effects).ok());
  CHECK(out.value() == "one");
  REQUIRE(h.job.kvUpdate(compareSet(c, "k", "one", "two"), out, h.effects).ok());
  CHECK(out.value() == "two");
}

TEST_CASE("remove and count by prefix, and a replay reproduces adds and removals") {
  Harness h;
  auto ids = h.form(2);
  pb::JournalRecord start;
  *start.mutable_snapshot() = h.job.snapshot();
  std::vector<pb::JournalRecord> journal{start};
  const auto c = h.caller(ids[1]);
  pb::KvUpdateResponse out;
  for (const char* key : {"t/a", "t/b", "t/c", "u/a"}) {
    REQUIRE(h.job.kvUpdate(add(c, key, 1), out, h.effects).ok());
  }
  CHECK(count(h, c, "t/") == 3);
  CHECK(count(h, c, "") == 4);
  REQUIRE(h.job.kvUpdate(remove(c, "t/b"), out, h.effects).ok());
  CHECK(out.found());
  REQUIRE(h.job.kvUpdate(remove(c, "t/b"), out, h.effects).ok());
  CHECK(!out.found());
  CHECK(count(h, c, "t/") == 2);
  pb::KvUpdateRequest none;
  *none.mutable_caller() = c;
  none.set_key("t/a");
  CHECK(h.job.kvUpdate(none, out, h.effects).code() == ftcomm::StatusCode::kInvalidArgument);
  CHECK(h.job.kvUpdate(add(h.caller(999), "t/a", 1), out, h.effects).code() !=
        ftcomm::StatusCode::kOk);

  Effects e = h.take();
  journal.insert(journal.end(), e.journal.begin(), e.journal.end());
  JobState restored("job-a", kLease);
  for (const auto& record : journal) restored.apply(record);
  CHECK(restored.snapshot().SerializeAsString() == h.job.snapshot().SerializeAsString());
  pb::KvCountRequest all;
  *all.mutable_caller() = c;
  all.set_prefix("t/");
  pb::KvCountResponse counted;
  REQUIRE(restored.kvCount(all, counted).ok());
  CHECK(counted.count() == 2);
}
