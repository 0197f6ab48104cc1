// The fault-tolerance contract end to end: ftcomm-test-fault members (fault_peer.cc) under real
// mpirun beside a real rendezvous server; victims SIGKILL or SIGSTOP themselves at a chosen step
// and the survivors must reconfigure in place and go on with correct results.
#include <catch2/catch.hpp>

#include <random>

#include "child_process.h"
#include "mpi_job.h"
#include "rendezvous_server_process.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

struct Scenario {
  std::string name;
  int ranks;
  std::string victims;  // mpirun ranks, comma-separated
  std::vector<std::string> env = {};
};

std::vector<std::string> run(const Scenario& s, int step) {
  MpiJob job;
  job.ranks = s.ranks;
  job.command = {
      binary("ftcomm-test-fault"), "--scenario", s.name, "--victims", s.victims, "--step",
      std::to_string(step),        "--steps",    "24"};
  job.env = s.env;
  job.keepSurvivors = true;
  job.timeout = 240s;
  return runMpiJob(job);
}

bool isVictim(const Scenario& s, int rank) {
  return ("," + s.victims + ",").find("," + std::to_string(rank) + ",") != std::string::npos;
}

// Every survivor finished every step at the expected final size; victims printed nothing.
void checkSurvivors(const Scenario& s, const std::vector<std::string>& results, int finalSize) {
  for (int r = 0; r < s.ranks; ++r) {
    const auto& result = results[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << result);
    if (isVictim(s, r)) {
      CHECK(result == "missing");
      continue;
    }
    REQUIRE_THAT(result, Catch::StartsWith("OK steps=24"));
    CHECK(field(result, "sizes").substr(field(result, "sizes").rfind('>') + 1) ==
          std::to_string(finalSize));
    CHECK(std::stoi(field(result, "failures")) >= 1);
    // The error names a victim (its rank in epoch 1 is its launch rank).
    const std::string error = result.substr(result.find("first_error="));
    bool named = false;
    for (int v = 0; v < s.ranks; ++v) {
      if (isVictim(s, v))
        named |= error.find("rank " + std::to_string(v) + " failed") != std::string::npos;
    }
    CHECK(named);
  }
}

int randomStep() {
  std::random_device device;
  return std::uniform_int_distribution<int>(1, 20)(device);
}

}  // namespace

TEST_CASE("fault: one rank SIGKILLed at a random step and the survivors reconfigure and go on") {
  for (int ranks : {4, 8}) {
    const int step = randomStep();
    std::mt19937 pick(static_cast<unsigned>(step));
    const int victim = std::uniform_int_distribution<int>(0, ranks - 1)(pick);
    INFO("ranks=" << ranks << " victim=" << victim << " step=" << step);
    Scenario s{"kill", ranks, std::to_string(victim)};
    checkSurvivors(s, run(s, step), ranks - 1);
  }
}

TEST_CASE("fault: rank 0 dies too: there is no special rank") {
  Scenario s{"kill", 4, "0"};
  checkSurvivors(s, run(s, 5), 3);
}

TEST_CASE("fault: two ranks SIGKILLed at once") {
  Scenario s{"kill", 5, "1,3"};
  checkSurvivors(s, run(s, 7), 3);
}

TEST_CASE("fault: a rank killed during the reconfigure leads to another round, not a hang") {
  Scenario s{"kill-in-reconfigure", 5, "1,2"};
  checkSurvivors(s, run(s, 6), 3);
}

TEST_CASE("fault: a SIGSTOPped rank is found by its lease and fenced when it wakes") {
  Scenario s{"stop", 4, "2"};
  auto results = run(s, 4);
  for (int r = 0; r < 4; ++r) {
    const auto& result = results[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << result);
    if (r == 2) {
      CHECK_THAT(result, Catch::StartsWith("OK fenced"));
    } else {
      CHECK_THAT(result, Catch::StartsWith("OK steps=24 sizes=4>3"));
    }
  }
}

TEST_CASE("fault: a killed rank is replaced by a new process that joins and catches up") {
  Scenario s{"replace", 4, "1"};
  auto results = run(s, 5);
  for (int r = 0; r < 4; ++r) {
    const auto& result = results[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << result);
    // The replacement reports under its victim's rank; everyone ends in epoch 3 at size 4.
    CHECK_THAT(result, Catch::StartsWith("OK steps=24"));
    CHECK_THAT(result, Catch::Contains("epoch=3"));
    if (r != 1) CHECK_THAT(result, Catch::Contains("sizes=4>3>4 "));
  }
}

TEST_CASE("fault: revoke() reaches every member, and all reconfigure at the same size") {
  Scenario s{"revoke", 4, "2"};
  for (const auto& result : run(s, 6)) {
    INFO(result);
    CHECK_THAT(result, Catch::StartsWith("OK steps=24 sizes=4>4 failures=1"));
    CHECK_THAT(result, Catch::Contains("revoked by rank 2"));
  }
}

TEST_CASE("fault: below the minimum world size reconfigure refuses and says so") {
  Scenario s{"kill", 4, "3", {"FTCOMM_MIN_WORLD_SIZE=4"}};
  auto results = run(s, 4);
  for (int r = 0; r < 3; ++r) {
    INFO(results[static_cast<std::size_t>(r)]);
    CHECK_THAT(results[static_cast<std::size_t>(r)],
               Catch::StartsWith("REFUSED") && Catch::Contains("below the minimum world size 4"));
  }
}

TEST_CASE("fault: split children of the old epoch refuse after a reconfigure and new splits work") {
  Scenario s{"split", 5, "1"};
  checkSurvivors(s, run(s, 5), 4);
}

TEST_CASE("fault: FTCOMM_FAULT kill, exit and drop-conn: the survivors go on without the victim") {
  for (const std::string action : {"kill", "exit:3", "drop-conn"}) {
    INFO(action);
    Scenario s{"injected", 4, "2", {"FTCOMM_FAULT=rank=2,op=allreduce,seq=9,action=" + action}};
    auto results = run(s, 100);
    for (int r : {0, 1, 3}) {
      INFO("rank " << r << ": " << results[static_cast<std::size_t>(r)]);
      CHECK_THAT(results[static_cast<std::size_t>(r)], Catch::StartsWith("OK steps=24 sizes=4>3"));
    }
    // A victim that lost its connections is fenced: its reconfigure is refused.
    if (action == "drop-conn") CHECK_THAT(results[2], Catch::StartsWith("REFUSED"));
  }
}

TEST_CASE("fault: a hung rank (alive, heartbeating) is timed out, left out and the rest go on") {
  Scenario s{"injected",
             4,
             "1",
             {"FTCOMM_FAULT=rank=1,op=allreduce,seq=8,action=hang", "FTCOMM_TIMEOUT_MS=2000",
              "FTCOMM_AGREEMENT_TIMEOUT_MS=2000"}};
  auto results = run(s, 100);
  for (int r : {0, 2, 3}) {
    INFO("rank " << r << ": " << results[static_cast<std::size_t>(r)]);
    CHECK_THAT(results[static_cast<std::size_t>(r)], Catch::StartsWith("OK steps=24 sizes=4>3"));
  }
}

TEST_CASE("fault: a slow rank (delay below the deadline) causes no false failure") {
  Scenario s{"injected",
             4,
             "",
             {"FTCOMM_FAULT=rank=1,op=allreduce,seq=8,action=delay:700", "FTCOMM_TIMEOUT_MS=5000"}};
  for (const auto& result : run(s, 100)) {
    INFO(result);
    CHECK_THAT(result, Catch::StartsWith("OK steps=24 sizes=4 failures=0"));
  }
}

TEST_CASE("fault: a malformed FTCOMM_FAULT is refused at creation, naming the spec") {
  Scenario s{"injected", 2, "", {"FTCOMM_FAULT=rank=1,op=allreduce,action=explode"}};
  for (const auto& result : run(s, 100)) {
    CHECK_THAT(result, Catch::StartsWith("ERROR create: InvalidArgument: FTCOMM_FAULT"));
  }
}

TEST_CASE("fault: a message of the old epoch never lands in an operation of the new one") {
  Scenario s{"stale", 3, "2"};
  checkSurvivors(s, run(s, 3), 2);
}
