// The rendezvous journal on disk: round trips, torn tails, foreign files, compaction.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>

#include "rendezvous/job_journal.h"
#include "temp_dir.h"

using namespace ftcomm::rendezvous;
using ftcomm::testing::TempDir;

namespace {

pb::JournalRecord kvRecord(const std::string& key, const std::string& value) {
  pb::JournalRecord record;
  record.mutable_kv_set()->set_key(key);
  record.mutable_kv_set()->set_value(value);
  return record;
}

}  // namespace

TEST_CASE("journal records read back in the order they were appended") {
  TempDir dir("ftcomm-journal");
  auto path = JobJournal::pathFor(dir.path, "job");
  {
    auto journal = JobJournal::open(path, 0);
    REQUIRE(journal.ok());
    REQUIRE((*journal)->append({kvRecord("a", "1"), kvRecord("b", "2")}).ok());
    REQUIRE((*journal)->append({kvRecord("c", "3")}).ok());
  }
  auto contents = JobJournal::read(path);
  REQUIRE(contents.ok());
  REQUIRE(contents->records.size() == 3);
  CHECK(contents->records[2].kv_set().key() == "c");
  CHECK_FALSE(contents->tornTail);
}

TEST_CASE("a torn last record is dropped and cut off when the journal is reopened") {
  TempDir dir("ftcomm-journal");
  auto path = JobJournal::pathFor(dir.path, "job");
  {
    auto journal = JobJournal::open(path, 0);
    REQUIRE(journal.ok());
    REQUIRE((*journal)->append({kvRecord("a", "1"), kvRecord("b", std::string(100, 'x'))}).ok());
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  auto contents = JobJournal::read(path);
  REQUIRE(contents.ok());
  CHECK(contents->records.size() == 1);
  CHECK(contents->tornTail);
  {
    auto journal = JobJournal::open(path, contents->validBytes);
    REQUIRE(journal.ok());
    REQUIRE((*journal)->append({kvRecord("c", "3")}).ok());
  }
  auto again = JobJournal::read(path);
  REQUIRE(again.ok());
  REQUIRE(again->records.size() == 2);
  CHECK(again->records[1].kv_set().key() == "c");
  CHECK_FALSE(again->tornTail);
}

TEST_CASE("a journal torn inside its magic reads as empty, not as a foreign file") {
  TempDir dir("ftcomm-journal");
  auto path = JobJournal::pathFor(dir.path, "job");
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << "FTRJ";
  auto contents = JobJournal::read(path);
  REQUIRE(contents.ok());
  CHECK(contents->records.empty());
  CHECK(contents->tornTail);
  CHECK(contents->validBytes == 0);
}

TEST_CASE("a flipped byte inside a record is caught by its checksum") {
  TempDir dir("ftcomm-journal");
  auto path = JobJournal::pathFor(dir.path, "job");
  {
    auto journal = JobJournal::open(path, 0);
    REQUIRE(journal.ok());
    REQUIRE((*journal)->append({kvRecord("a", "hello"), kvRecord("b", "world")}).ok());
  }
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(-2, std::ios::end);
  file.put('!');
  file.close();
  auto contents = JobJournal::read(path);
  REQUIRE(contents.ok());
  CHECK(contents->records.size() == 1);
  CHECK(contents->tornTail);
}

TEST_CASE("a file that is not a journal is refused with a message naming it") {
  TempDir dir("ftcomm-journal");
  auto path = dir.path / "foreign.journal";
  std::ofstream(path) << "this is not a journal";
  auto contents = JobJournal::read(path);
  REQUIRE_FALSE(contents.ok());
  CHECK_THAT(contents.status().message(), Catch::Contains("foreign.journal"));
}

TEST_CASE("compaction replaces the journal by one snapshot and appends go on after it") {
  TempDir dir("ftcomm-journal");
  auto path = JobJournal::pathFor(dir.path, "job");
  auto journal = JobJournal::open(path, 0);
  REQUIRE(journal.ok());
  REQUIRE((*journal)->append({kvRecord("a", "1"), kvRecord("a", "2")}).ok());
  pb::JobSnapshot snapshot;
  snapshot.set_next_member_id(42);
  REQUIRE((*journal)->compact(snapshot).ok());
  REQUIRE((*journal)->append({kvRecord("z", "9")}).ok());
  auto contents = JobJournal::read(path);
  REQUIRE(contents.ok());
  REQUIRE(contents->records.size() == 2);
  CHECK(contents->records[0].snapshot().next_member_id() == 42);
  CHECK(contents->records[1].kv_set().key() == "z");
}
