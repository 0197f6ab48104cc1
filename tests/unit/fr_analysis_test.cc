// ftcomm-fr analyze on crafted dumps: one test per finding it must make.
#include <catch2/catch.hpp>

#include <sstream>

#include "crafted_dumps.h"
#include "recorder/cli/analysis.h"

using namespace ftcomm::recorder;
using namespace ftcomm::testing;

namespace {

// Every rank completed seq 1..done; `build` adds what comes after.
DumpSet job(int worldSize, int done, const std::function<void(int, fr::Dump&)>& build = {}) {
  DumpSet set;
  for (int rank = 0; rank < worldSize; ++rank) {
    fr::Dump dump = craftedDump(rank, worldSize);
    for (int seq = 1; seq <= done; ++seq)
      addCollective(dump, static_cast<std::uint64_t>(seq), fr::COMPLETED);
    if (build) build(rank, dump);
    set.dumps.push_back(dump);
  }
  return set;
}

std::string text(const Analysis& analysis) {
  std::ostringstream out;
  printText(analysis, out);
  return out.str();
}

}  // namespace

TEST_CASE("dumps in which everything completed are reported clean with exit 0") {
  Analysis analysis = analyze(job(4, 5));
  CHECK_FALSE(analysis.problem());
  CHECK(analysis.exitCode() == 0);
  CHECK_THAT(text(analysis), Catch::Contains("no problem found"));
}

TEST_CASE("a rank that never entered a collective is named as the likely culprit") {
  Analysis analysis = analyze(job(4, 5, [](int rank, fr::Dump& dump) {
    if (rank != 2) addCollective(dump, 6, fr::STARTED);
  }));
  CHECK(analysis.exitCode() == 1);
  REQUIRE(analysis.jobs.size() == 1);
  REQUIRE(analysis.jobs[0].collectives.size() == 1);
  const CollectiveFinding& f = analysis.jobs[0].collectives[0];
  CHECK(f.seq == 6);
  CHECK(f.commName == "world");
  CHECK(f.neverEntered == std::vector<int>{2});
  CHECK(f.stuck == std::vector<int>{0, 1, 3});
  CHECK(f.signature == "all_reduce float32 x1024 sum");
  CHECK_THAT(text(analysis), Catch::Contains("never entered it (likely culprits): rank 2"));
}

TEST_CASE("ranks that disagree on the count are reported as a mismatch with both signatures") {
  Analysis analysis = analyze(job(3, 2, [](int rank, fr::Dump& dump) {
    addCollective(dump, 3, fr::FAILED, fr::ALL_REDUCE, rank == 1 ? 512 : 1024)
        .set_error("Mismatch: rank 1 called all_reduce float32 x512 sum");
  }));
  REQUIRE(analysis.jobs[0].collectives.size() == 1);
  const CollectiveFinding& f = analysis.jobs[0].collectives[0];
  REQUIRE(f.mismatched.size() == 1);
  CHECK(f.mismatched[0].rank == 1);
  CHECK(f.mismatched[0].text == "all_reduce float32 x512 sum");
  CHECK(f.signature == "all_reduce float32 x1024 sum");
  CHECK(f.failed.size() == 3);
  CHECK_THAT(text(analysis),
             Catch::Contains("mismatch: rank 1 called all_reduce float32 x512 sum (the others: "
                             "all_reduce float32 x1024 sum)"));
}

TEST_CASE("a different root or operation counts as a mismatch too") {
  Analysis analysis = analyze(job(2, 0, [](int rank, fr::Dump& dump) {
    addCollective(dump, 1, fr::STARTED, fr::BROADCAST, 8).set_root(rank == 0 ? 0 : 1);
  }));
  REQUIRE(analysis.jobs[0].collectives.size() == 1);
  CHECK(analysis.jobs[0].collectives[0].mismatched.size() == 1);
  CHECK_THAT(analysis.jobs[0].collectives[0].mismatched[0].text, Catch::Contains("root"));
}

TEST_CASE(
    "counts that differ by rank by design (allgatherv, all-to-all-v, scatter) are no mismatch, "
    "and the counts every member passes alike still are compared") {
  // As the communicator records them (comm/core/communicator.cc): an allgatherv's input is each
  // member's own block and its output the whole; an all-to-all-v's counts are each member's own
  // both ways; a scatter's input is the root's alone. Rank r of 3 gives r + 1 elements.
  auto record = [](int rank, fr::Dump& dump, std::uint64_t total) {
    const auto own = static_cast<std::uint64_t>(rank + 1);
    addCollective(dump, 1, fr::COMPLETED, fr::ALL_GATHER_V, own).set_count_out(total);
    addCollective(dump, 2, fr::COMPLETED, fr::ALL_TO_ALL_V, own).set_count_out(own * 2);
    fr::Entry& scatter = addCollective(dump, 3, fr::STARTED, fr::SCATTER, rank == 2 ? 12 : 0);
    scatter.set_count_out(4);
    scatter.set_root(2);
  };
  Analysis clean = analyze(job(3, 0, [&](int rank, fr::Dump& dump) { record(rank, dump, 6); }));
  REQUIRE(clean.jobs[0].collectives.size() == 1);
  const CollectiveFinding& stuck = clean.jobs[0].collectives[0];
  CHECK(stuck.seq == 3);  // the scatter, stuck: the two before it completed without a finding
  CHECK(stuck.mismatched.empty());
  CHECK(stuck.signature == "scatter float32 x4 root 2");

  // Rank 1 thinks the allgatherv's result holds 7 elements: that is a mismatch.
  Analysis wrong =
      analyze(job(3, 0, [&](int rank, fr::Dump& dump) { record(rank, dump, rank == 1 ? 7 : 6); }));
  REQUIRE(wrong.jobs[0].collectives.size() == 1);
  const CollectiveFinding& f = wrong.jobs[0].collectives[0];
  CHECK(f.seq == 1);
  REQUIRE(f.mismatched.size() == 1);
  CHECK(f.mismatched[0].rank == 1);
  CHECK(f.mismatched[0].text == "all_gather_v float32 x7 in all");
  CHECK(f.signature == "all_gather_v float32 x6 in all");
}

TEST_CASE("a failed collective is reported with the error each rank saw") {
  Analysis analysis = analyze(job(2, 1, [](int rank, fr::Dump& dump) {
    if (rank == 0)
      addCollective(dump, 2, fr::FAILED).set_error("PeerFailed: rank 1 died");
    else
      addCollective(dump, 2, fr::COMPLETED);
  }));
  REQUIRE(analysis.jobs[0].collectives.size() == 1);
  const auto& failed = analysis.jobs[0].collectives[0].failed;
  REQUIRE(failed.size() == 1);
  CHECK(failed[0].rank == 0);
  CHECK(failed[0].text == "PeerFailed: rank 1 died");
}

TEST_CASE("ranks whose dumps are missing are named, and not also blamed for never entering") {
  DumpSet set = job(4, 3, [](int, fr::Dump& dump) { addCollective(dump, 4, fr::STARTED); });
  set.dumps.erase(set.dumps.begin() + 3);
  Analysis analysis = analyze(set);
  REQUIRE(analysis.jobs.size() == 1);
  CHECK(analysis.jobs[0].missingDumps == std::vector<int>{3});
  REQUIRE(analysis.jobs[0].collectives.size() == 1);
  CHECK(analysis.jobs[0].collectives[0].neverEntered.empty());
  CHECK(analysis.exitCode() == 1);
}

TEST_CASE("entries dropped by a full ring are not mistaken for a rank that never entered") {
  DumpSet set = job(2, 10);
  // Rank 1's ring only kept seq 8..10.
  auto& entries = *set.dumps[1].mutable_entries();
  entries.erase(entries.begin(), entries.begin() + 7);
  set.dumps[1].set_dropped_entries(7);
  Analysis analysis = analyze(set);
  CHECK(analysis.jobs[0].collectives.empty());
  CHECK_FALSE(analysis.problem());
  CHECK_THAT(text(analysis), Catch::Contains("dropped its 7 oldest entries"));
}

TEST_CASE("an incomplete point-to-point operation is reported with its peer and tag") {
  Analysis analysis = analyze(job(2, 1, [](int rank, fr::Dump& dump) {
    if (rank != 0) return;
    fr::Entry& e = *dump.add_entries();
    e.set_comm_id(1);
    e.set_epoch(1);
    e.set_op(fr::RECV);
    e.set_peer(1);
    e.set_tag(7);
    e.set_dtype(fr::INT32);
    e.set_count_in(4);
    e.set_state(fr::STARTED);
  }));
  REQUIRE(analysis.jobs[0].pointToPoint.size() == 1);
  CHECK(analysis.jobs[0].pointToPoint[0].description ==
        "recv from rank 1 tag 7, 4 x int32, STARTED");
}

TEST_CASE("unreadable input is listed, the rest is still analyzed, and the exit code is 2") {
  DumpSet set = job(2, 1, [](int rank, fr::Dump& dump) {
    if (rank == 0) addCollective(dump, 2, fr::STARTED);
  });
  set.unreadable.push_back({"bad.ftfr", "bad.ftfr: not an ftcomm flight-recorder dump"});
  Analysis analysis = analyze(set);
  CHECK(analysis.exitCode() == 2);
  CHECK(analysis.problem());
  CHECK_THAT(text(analysis), Catch::Contains("unreadable: bad.ftfr"));
  CHECK_THAT(text(analysis), Catch::Contains("likely culprits): rank 1"));
}
