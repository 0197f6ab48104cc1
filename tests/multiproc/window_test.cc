// RMA windows under real mpirun with a real rendezvous server: ftcomm-test-rma members
// (tests/fixtures/rma_peer.cc) run one scenario each and report one line per rank. ctest runs
// these twice: on shared memory (the default here) and with FTCOMM_TRANSPORT=ucx (UCX RMA).
#include <catch2/catch.hpp>

#include "mpi_job.h"
#include "rendezvous_server_process.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> run(const std::string& scenario, int ranks, bool keepSurvivors = false) {
  MpiJob job;
  job.ranks = ranks;
  job.command = {binary("ftcomm-test-rma"), "--scenario", scenario};
  job.timeout = 240s;
  job.keepSurvivors = keepSurvivors;
  return runMpiJob(job);
}

}  // namespace

TEST_CASE("window: put, get and fence move 1 B to 64 MiB between ranks, checked at both ends") {
  for (const auto& result : run("sizes", 3)) CHECK(result == "OK sizes");
}

TEST_CASE("window: an access outside the target's window is refused before anything moves") {
  for (const auto& result : run("bounds", 3)) CHECK(result == "OK bounds");
}

TEST_CASE("window: every rank puts to its own offset of one target at once, and atomics add up") {
  for (const auto& result : run("concurrent", 4)) CHECK(result == "OK concurrent");
}

TEST_CASE("window: a signal is seen only after the data put before it") {
  for (const auto& result : run("ordering", 3)) CHECK(result == "OK ordering");
}

TEST_CASE("window: registered memory is reached with process_vm_writev and readv") {
  for (const auto& result : run("registered", 3)) CHECK(result == "OK registered");
}

TEST_CASE("window: a get from registered allocMem memory on this host copies from a mapping") {
  for (const auto& result : run("registered-allocmem", 3))
    CHECK(result == "OK registered-allocmem");
}

TEST_CASE("window: a window over each half of a split world works like one over the world") {
  for (const auto& result : run("split", 4)) CHECK(result == "OK split");
}

TEST_CASE("window: a dead target fails puts and waits, and the window goes on after reconfigure") {
  const auto results = run("kill", 3, true);
  REQUIRE(results.size() == 3);
  CHECK(results[0] == "OK kill size=2");
  CHECK(results[1] == "OK kill size=2");
  CHECK(results[2] == "missing");
}
