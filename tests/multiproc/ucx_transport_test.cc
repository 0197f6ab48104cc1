// The UCX transport between real processes on loopback: members publish their worker addresses
// through a real rendezvous server, connect with peer error handling, and exchange messages.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "child_process.h"
#include "rendezvous_server_process.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

// Starts `world` members running `scenario` and returns each one's result line.
std::vector<std::string> runScenario(const std::string& scenario, int world) {
  RendezvousServerProcess server;
  std::vector<std::unique_ptr<LineProcess>> members;
  for (int i = 0; i < world; ++i) {
    members.push_back(std::make_unique<LineProcess>(std::vector<std::string>{
        binary("ftcomm-test-transport"), "--rendezvous", server.address(), "--job", scenario,
        "--world", std::to_string(world), "--scenario", scenario}));
  }
  std::vector<std::string> results;
  for (auto& m : members) {
    auto ok = m->waitFor("OK", 90s);
    results.push_back(ok ? *ok : "no OK line; output:\n" + m->transcript());
  }
  return results;
}

}  // namespace

TEST_CASE(
    "UCX transport: every rank exchanges 0 B to 4 MiB messages with every rank, itself included") {
  for (const auto& result : runScenario("exchange", 3)) CHECK(result == "OK exchange");
}

TEST_CASE("UCX transport: every allreduce algorithm gives the right sums between 5 processes") {
  for (const auto& result : runScenario("allreduce", 5)) CHECK(result == "OK allreduce");
}

TEST_CASE("UCX transport: a message longer than the receive buffer is reported as a mismatch") {
  auto results = runScenario("truncate", 3);
  int truncated = 0;
  for (const auto& r : results) {
    INFO(r);
    CHECK_THAT(r, Catch::StartsWith("OK"));
    if (r.find("longer than the 10-byte receive buffer") != std::string::npos) ++truncated;
  }
  CHECK(truncated == 1);
}

TEST_CASE("UCX transport: a bad peer rank or slot is refused at once") {
  for (const auto& result : runScenario("refuse", 2))
    CHECK_THAT(result, Catch::StartsWith("OK refused"));
}

TEST_CASE(
    "UCX transport: a receive from a SIGKILLed peer fails with PeerFailed instead of hanging") {
  auto results = runScenario("kill", 3);
  // The third member killed itself; the two survivors report.
  for (int i = 0; i < 3; ++i) {
    INFO(results[static_cast<std::size_t>(i)]);
    if (results[static_cast<std::size_t>(i)].rfind("no OK line", 0) == 0) continue;
    CHECK_THAT(results[static_cast<std::size_t>(i)], Catch::Contains("rank 2 failed"));
  }
  int survivors = 0;
  for (const auto& r : results) survivors += r.rfind("OK peer failed", 0) == 0 ? 1 : 0;
  CHECK(survivors == 2);
}
