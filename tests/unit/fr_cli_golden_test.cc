// ftcomm-fr as a user runs it, on crafted dumps written to disk: its text and JSON compared with
// golden files in tests/golden/, its exit codes, and its trace parsed as JSON. To refresh the
// golden files after an intended change: FTCOMM_UPDATE_GOLDEN=1 ftcomm-recorder-tests.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "child_process.h"
#include "crafted_dumps.h"
#include "json_check.h"
#include "recorder/dump_file.h"
#include "rendezvous_server_process.h"
#include "temp_dir.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

struct Run {
  std::string output;
  int exitCode = -1;
};

struct Scenario {
  TempDir scratch{"ftcomm-golden"};
  const std::filesystem::path& dir = scratch.path;

  void write(const fr::Dump& dump) {
    auto written = ftcomm::recorder::writeDumpFile(dump, dir);
    REQUIRE(written.ok());
  }

  // Runs ftcomm-fr; the scenario's directory reads as DIR in the output, so goldens are stable.
  Run fr(std::vector<std::string> args) const {
    args.insert(args.begin(), binary("ftcomm-fr"));
    ChildProcess child(args, (dir / "stderr").string());
    Run run;
    while (auto line = child.readLine(30s)) run.output += *line + "\n";
    auto status = child.waitExit(30s);
    REQUIRE(status);
    run.exitCode = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
    for (std::size_t at; (at = run.output.find(dir.string())) != std::string::npos;) {
      run.output.replace(at, dir.string().size(), "DIR");
    }
    return run;
  }
};

void compareWithGolden(const std::string& name, const std::string& actual) {
  const std::filesystem::path golden =
      std::filesystem::path(FTCOMM_SOURCE_DIR) / "tests/golden" / name;
  if (std::getenv("FTCOMM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << actual;
    WARN("updated " << golden);
    return;
  }
  std::ifstream in(golden);
  REQUIRE(in);
  std::stringstream expected;
  expected << in.rdbuf();
  CHECK(actual == expected.str());
}

// Four ranks; rank 2 never entered allreduce seq 6, the others are stuck in it.
void writeCulpritJob(Scenario& s) {
  for (int rank = 0; rank < 4; ++rank) {
    fr::Dump dump = craftedDump(rank, 4);
    for (int seq = 1; seq <= 5; ++seq)
      addCollective(dump, static_cast<std::uint64_t>(seq), fr::COMPLETED);
    if (rank != 2) addCollective(dump, 6, fr::STARTED);
    s.write(dump);
  }
}

}  // namespace

TEST_CASE("ftcomm-fr analyze names the rank that never entered, in text and JSON") {
  Scenario s;
  writeCulpritJob(s);
  Run text = s.fr({"analyze", s.dir.string()});
  CHECK(text.exitCode == 1);
  compareWithGolden("analyze_culprit.txt", text.output);
  Run json = s.fr({"analyze", "--json", s.dir.string()});
  CHECK(json.exitCode == 1);
  CHECK(JsonCheck::error(json.output).empty());
  compareWithGolden("analyze_culprit.json", json.output);
}

TEST_CASE("ftcomm-fr analyze reports a count mismatch with both signatures") {
  Scenario s;
  for (int rank = 0; rank < 3; ++rank) {
    fr::Dump dump = craftedDump(rank, 3);
    addCollective(dump, 1, fr::COMPLETED, fr::BROADCAST, 16).set_root(0);
    addCollective(dump, 2, fr::FAILED, fr::ALL_REDUCE, rank == 1 ? 1000 : 1024)
        .set_error("Mismatch: all_reduce float32 x1024 sum vs all_reduce float32 x1000 sum");
    s.write(dump);
  }
  Run run = s.fr({"analyze", s.dir.string()});
  CHECK(run.exitCode == 1);
  compareWithGolden("analyze_mismatch.txt", run.output);
}

TEST_CASE("ftcomm-fr analyze names a corrupt file, still analyzes the others, and exits 2") {
  Scenario s;
  for (int rank = 0; rank < 2; ++rank) {
    fr::Dump dump = craftedDump(rank, 2);
    addCollective(dump, 1, fr::COMPLETED);
    s.write(dump);
  }
  std::ofstream(s.dir / "zz-garbage.ftfr") << "garbage bytes, not a dump";
  Run run = s.fr({"analyze", s.dir.string()});
  CHECK(run.exitCode == 2);
  compareWithGolden("analyze_corrupt.txt", run.output);
}

TEST_CASE("ftcomm-fr show prints one dump as a table, newest last") {
  Scenario s;
  writeCulpritJob(s);
  Run run = s.fr({"show", (s.dir / "train-7.0.ftfr").string()});
  CHECK(run.exitCode == 0);
  compareWithGolden("show_rank0.txt", run.output);
}

TEST_CASE("ftcomm-fr trace writes valid JSON with one track per rank") {
  Scenario s;
  writeCulpritJob(s);
  const auto tracePath = s.dir / "trace.json";
  Run run = s.fr({"trace", s.dir.string(), "-o", tracePath.string()});
  CHECK(run.exitCode == 0);
  std::ifstream in(tracePath);
  std::stringstream text;
  text << in.rdbuf();
  const std::string trace = text.str();
  CHECK(JsonCheck::error(trace).empty());
  for (int rank = 0; rank < 4; ++rank) {
    CHECK_THAT(trace, Catch::Contains("\"name\":\"train-7 rank " + std::to_string(rank)));
  }
  std::size_t slices = 0;
  for (std::size_t at = 0; (at = trace.find("\"ph\":\"X\"", at)) != std::string::npos; ++at)
    ++slices;
  CHECK(slices == 4 * 5 + 3);
}

TEST_CASE("ftcomm-fr refuses bad usage with exit 2") {
  Scenario s;
  CHECK(s.fr({}).exitCode == 2);
  CHECK(s.fr({"frobnicate"}).exitCode == 2);
  CHECK(s.fr({"analyze"}).exitCode == 2);
  CHECK(s.fr({"analyze", "--bogus", s.dir.string()}).exitCode == 2);
  CHECK(s.fr({"trace", s.dir.string()}).exitCode == 2);
  CHECK(s.fr({"show", (s.dir / "nope.ftfr").string()}).exitCode == 2);
  CHECK(s.fr({"analyze", (s.dir / "nope").string()}).exitCode == 2);
}
