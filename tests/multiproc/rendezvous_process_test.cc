// The rendezvous service with real processes on loopback: a real ftcomm-rendezvous server and
// member processes that join, get killed, stopped, replaced, and outlive a server restart.
// Deadlines here are generous (the machine is small and shared); the code under test uses tight
// ones, and what a test asserts is which mechanism acted, not how fast.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "child_process.h"
#include "raw_rendezvous.h"
#include "rendezvous_server_process.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

constexpr auto kPatience = 30s;

std::unique_ptr<LineProcess> startMember(const RendezvousServerProcess& server,
                                         const std::string& job, int world,
                                         std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{
      binary("ftcomm-test-member"), "--rendezvous", server.address(), "--job", job, "--world",
      std::to_string(world)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<LineProcess>(argv);
}

// Starts n members and waits until each has joined; returns them ordered by rank.
std::vector<std::unique_ptr<LineProcess>> formJob(const RendezvousServerProcess& server,
                                                  const std::string& job, int n) {
  std::vector<std::unique_ptr<LineProcess>> started;
  for (int i = 0; i < n; ++i) started.push_back(startMember(server, job, n));
  std::vector<std::unique_ptr<LineProcess>> byRank(n);
  for (auto& member : started) {
    auto joined = member->waitFor("JOINED", kPatience);
    INFO(member->transcript() << server.log());
    REQUIRE(joined);
    int rank = std::stoi(field(*joined, "rank"));
    REQUIRE(rank >= 0);
    REQUIRE(rank < n);
    REQUIRE(byRank[rank] == nullptr);
    byRank[rank] = std::move(member);
  }
  return byRank;
}

}  // namespace

TEST_CASE("member processes join and all hold the same first epoch") {
  RendezvousServerProcess server;
  std::vector<std::unique_ptr<LineProcess>> members;
  for (int i = 0; i < 4; ++i) members.push_back(startMember(server, "join4", 4));
  std::set<std::string> views;
  std::set<std::string> ranks;
  for (auto& member : members) {
    auto joined = member->waitFor("JOINED", kPatience);
    INFO(member->transcript() << server.log());
    REQUIRE(joined);
    CHECK(field(*joined, "epoch") == "1");
    CHECK(field(*joined, "size") == "4");
    views.insert(field(*joined, "members"));
    ranks.insert(field(*joined, "rank"));
  }
  CHECK(views.size() == 1);
  CHECK(ranks == std::set<std::string>{"0", "1", "2", "3"});
}

TEST_CASE("a join that waits past its deadline is told how many members are missing") {
  RendezvousServerProcess server;
  auto lonely = startMember(server, "short", 3, {"--join-timeout-ms", "500"});
  auto error = lonely->waitFor("ERROR", kPatience);
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("code=Timeout"));
  CHECK_THAT(*error, Catch::Contains("1 of 3 members joined"));
  CHECK_THAT(*error, Catch::Contains("2 missing"));
}

TEST_CASE("a process killed while its join is pending is not counted as a member") {
  RendezvousServerProcess server;
  RawRendezvous raw(server.address());
  auto doomed = startMember(server, "pending", 2);
  // A probe claiming the doomed process's host:pid: ALREADY_EXISTS while its join is pending,
  // INVALID_ARGUMENT (world size 0) otherwise. The probe itself never becomes a pending join.
  auto doomedJoinPending = [&] {
    pb::JoinRequest probe;
    probe.set_job_id("pending");
    probe.set_timeout_ms(1000);
    probe.mutable_process()->set_host(hostName());
    probe.mutable_process()->set_pid(static_cast<std::uint32_t>(doomed->child().pid()));
    probe.mutable_process()->set_instance_id("probe");
    pb::JoinResponse ignored;
    return raw.call(&pb::Rendezvous::Stub::Join, probe, &ignored).error_code() ==
           grpc::StatusCode::ALREADY_EXISTS;
  };
  bool pending = false;
  for (int i = 0; i < 1500 && !pending; ++i) {
    pending = doomedJoinPending();
    if (!pending) std::this_thread::sleep_for(20ms);
  }
  REQUIRE(pending);
  doomed->child().signal(SIGKILL);
  REQUIRE(doomed->child().waitExit(kPatience));
  for (int i = 0; i < 1500 && pending; ++i) {
    pending = doomedJoinPending();
    if (pending) std::this_thread::sleep_for(20ms);
  }
  REQUIRE_FALSE(pending);
  // Two fresh members form the job by themselves; the dead join left no seat behind.
  auto members = formJob(server, "pending", 2);
  INFO(server.log());
  for (auto& m : members) CHECK(m->ask("standing", kPatience) == "STANDING OK");
}

TEST_CASE("a SIGKILLed member is declared failed through its watch stream, not its lease") {
  // A lease far longer than the test's patience: only the stream can explain the detection.
  RendezvousServerProcess server({"--lease-ms", "600000"});
  auto members = formJob(server, "kill3", 3);
  // Both watch streams must be open before the kill, or there is no stream to close.
  for (auto& m : members) REQUIRE(m->waitFor("EVENT kind=SNAPSHOT", kPatience));

  const auto killedAt = std::chrono::steady_clock::now();
  members[1]->child().signal(SIGKILL);
  auto seen = members[0]->waitFor("EVENT kind=MEMBER_FAILED", kPatience);
  const auto detection = std::chrono::steady_clock::now() - killedAt;
  INFO(members[0]->transcript() << server.log());
  REQUIRE(seen);
  CHECK(field(*seen, "rank") == "1");
  CHECK_THAT(*seen, Catch::Contains("watch stream closed"));
  WARN("kill to MEMBER_FAILED seen by a survivor: "
       << std::chrono::duration_cast<std::chrono::microseconds>(detection).count() << " us");
  REQUIRE(members[2]->waitFor("EVENT kind=MEMBER_FAILED", kPatience));

  // The survivors agree on epoch 2 without the dead member, ranks renumbered in order.
  members[2]->child().writeLine("reconfigure 20000");
  std::string epoch0 = members[0]->ask("reconfigure 20000", kPatience);
  auto epoch2 = members[2]->waitFor("> ", kPatience);
  REQUIRE(epoch2);
  CHECK_THAT(epoch0, Catch::StartsWith("EPOCH epoch=2"));
  CHECK(field(epoch0, "size") == "2");
  CHECK(field(epoch0, "rank") == "0");
  CHECK(field(epoch2->substr(2), "rank") == "1");
  CHECK(field(epoch0, "members") == field(epoch2->substr(2), "members"));
}

TEST_CASE(
    "a SIGSTOPped member is declared failed when its lease expires and is fenced when it wakes") {
  RendezvousServerProcess server({"--lease-ms", "600"});
  auto members = formJob(server, "stop3", 3);
  for (auto& m : members) REQUIRE(m->waitFor("EVENT kind=SNAPSHOT", kPatience));
  members[2]->child().signal(SIGSTOP);
  auto seen = members[0]->waitFor("EVENT kind=MEMBER_FAILED", kPatience);
  INFO(members[0]->transcript() << server.log());
  REQUIRE(seen);
  CHECK(field(*seen, "rank") == "2");
  CHECK_THAT(*seen, Catch::Contains("lease expired"));

  members[2]->child().signal(SIGCONT);
  // Once awake it learns from the server that it was expelled, and every call is refused.
  std::string standing;
  for (int i = 0; i < 300; ++i) {
    standing = members[2]->ask("standing", kPatience);
    if (standing != "STANDING OK") break;
    std::this_thread::sleep_for(100ms);
  }
  CHECK_THAT(standing, Catch::Contains("FailedPrecondition"));
  CHECK_THAT(members[2]->ask("kvset k v", kPatience), Catch::Contains("FailedPrecondition"));
  // The healthy members were never suspected.
  CHECK_THAT(members[1]->ask("standing", kPatience), Catch::Equals("STANDING OK"));
}

TEST_CASE(
    "a server restarted with the same state directory keeps epochs and keys and declares nobody "
    "dead") {
  RendezvousServerProcess server({"--lease-ms", "1000"});
  auto members = formJob(server, "restart3", 3);
  for (auto& m : members) REQUIRE(m->waitFor("EVENT kind=SNAPSHOT", kPatience));
  REQUIRE(members[0]->ask("kvset model-step 41", kPatience) == "OK");
  // Move to epoch 2 first, so that the restart has a non-trivial epoch to keep.
  for (auto& m : members) m->child().writeLine("reconfigure 20000");
  for (auto& m : members) {
    auto answer = m->waitFor("> EPOCH", kPatience);
    REQUIRE(answer);
    CHECK(field(*answer, "epoch") == "2");
  }

  server.restart();
  // Longer than the lease: members must have reconnected and heartbeated by themselves.
  std::this_thread::sleep_for(2500ms);
  INFO(server.log());
  CHECK(members[1]->ask("kvget model-step", kPatience) == "VALUE 41");
  for (auto& m : members) CHECK(m->ask("standing", kPatience) == "STANDING OK");
  for (auto& m : members) m->child().writeLine("reconfigure 20000");
  for (auto& m : members) {
    auto answer = m->waitFor("> EPOCH", kPatience);
    INFO(m->transcript());
    REQUIRE(answer);
    CHECK(field(*answer, "epoch") == "3");
    CHECK(field(*answer, "size") == "3");
  }
  for (auto& m : members) {
    CHECK_FALSE(m->waitFor("EVENT kind=MEMBER_FAILED", 10ms));
  }
  CHECK_THAT(server.log(), Catch::Contains("restored job restart3"));
}

TEST_CASE("a replacement process is admitted by the next reconfiguration with the next rank") {
  RendezvousServerProcess server;
  auto members = formJob(server, "grow", 3);
  for (auto& m : members) REQUIRE(m->waitFor("EVENT kind=SNAPSHOT", kPatience));
  members[0]->child().signal(SIGKILL);
  REQUIRE(members[1]->waitFor("EVENT kind=MEMBER_FAILED", kPatience));
  auto replacement = startMember(server, "grow", 0);
  auto waiting = members[1]->waitFor("EVENT kind=REPLACEMENT_WAITING", kPatience);
  REQUIRE(waiting);
  CHECK(field(*waiting, "waiting") == "1");
  members[1]->child().writeLine("reconfigure 20000");
  members[2]->child().writeLine("reconfigure 20000");
  auto joined = replacement->waitFor("JOINED", kPatience);
  INFO(replacement->transcript() << server.log());
  REQUIRE(joined);
  CHECK(field(*joined, "replacement") == "1");
  CHECK(field(*joined, "epoch") == "2");
  CHECK(field(*joined, "rank") == "2");
  auto survivor = members[1]->waitFor("> EPOCH", kPatience);
  REQUIRE(survivor);
  CHECK(field(*survivor, "members") == field(*joined, "members"));
  CHECK(field(*survivor, "rank") == "0");
}

TEST_CASE(
    "with a token file, a request without the job's token is refused and the token is never "
    "logged") {
  RendezvousServerProcess plain;  // only for a scratch directory
  const auto tokens = plain.stateDir() / "tokens";
  std::ofstream(tokens) << "secure-job s3cr3t-t0ken\n";
  RendezvousServerProcess server({"--token-file", tokens.string()});
  auto intruder = startMember(server, "secure-job", 1, {"--token", "wrong"});
  auto refused = intruder->waitFor("ERROR", kPatience);
  REQUIRE(refused);
  CHECK_THAT(*refused, Catch::Contains("code=PermissionDenied"));
  auto tokenless = startMember(server, "secure-job", 1);
  REQUIRE(tokenless->waitFor("ERROR code=PermissionDenied", kPatience));
  auto member = startMember(server, "secure-job", 1, {"--token", "s3cr3t-t0ken"});
  REQUIRE(member->waitFor("JOINED", kPatience));
  CHECK_THAT(server.log(), !Catch::Contains("s3cr3t"));
}

TEST_CASE("a server restart in the middle of an agreement round loses nothing: callers retry") {
  RendezvousServerProcess server({"--lease-ms", "2000"});
  auto members = formJob(server, "restart-round", 3);
  for (auto& m : members) REQUIRE(m->waitFor("EVENT kind=SNAPSHOT", kPatience));
  // Two members are waiting in Reconfigure when the server dies; the round is in no journal.
  members[0]->child().writeLine("reconfigure 30000");
  members[1]->child().writeLine("reconfigure 30000");
  std::this_thread::sleep_for(300ms);
  server.restart();
  members[2]->child().writeLine("reconfigure 30000");
  for (auto& m : members) {
    auto answer = m->waitFor("> ", kPatience);
    INFO(m->transcript() << server.log());
    REQUIRE(answer);
    CHECK_THAT(*answer, Catch::StartsWith("> EPOCH epoch=2"));
    CHECK(field(*answer, "size") == "3");
  }
}

TEST_CASE(
    "a server restart while members are still joining: their joins are retried and the job forms") {
  RendezvousServerProcess server;
  auto first = startMember(server, "restart-join", 3);
  auto second = startMember(server, "restart-join", 3);
  std::this_thread::sleep_for(300ms);
  server.restart();
  auto third = startMember(server, "restart-join", 3);
  std::set<std::string> views;
  for (auto* m : {first.get(), second.get(), third.get()}) {
    auto joined = m->waitFor("JOINED", kPatience);
    INFO(m->transcript() << server.log());
    REQUIRE(joined);
    CHECK(field(*joined, "epoch") == "1");
    CHECK(field(*joined, "size") == "3");
    views.insert(field(*joined, "members"));
  }
  CHECK(views.size() == 1);
}

TEST_CASE("eight oversubscribed members lose two at once and the six survivors agree") {
  RendezvousServerProcess server;
  auto members = formJob(server, "eight", 8);
  for (auto& m : members) REQUIRE(m->waitFor("EVENT kind=SNAPSHOT", kPatience));
  members[0]->child().signal(SIGKILL);  // rank 0 is no special rank
  members[5]->child().signal(SIGKILL);
  for (int rank : {1, 2, 3, 4, 6, 7}) {
    REQUIRE(members[rank]->waitFor("EVENT kind=MEMBER_FAILED", kPatience));
    REQUIRE(members[rank]->waitFor("EVENT kind=MEMBER_FAILED", kPatience));
  }
  for (int rank : {1, 2, 3, 4, 6, 7}) members[rank]->child().writeLine("reconfigure 30000");
  std::set<std::string> views;
  std::map<int, std::string> newRank;  // old rank -> new rank
  for (int rank : {1, 2, 3, 4, 6, 7}) {
    auto answer = members[rank]->waitFor("> EPOCH", kPatience);
    INFO(members[rank]->transcript() << server.log());
    REQUIRE(answer);
    CHECK(field(*answer, "epoch") == "2");
    CHECK(field(*answer, "size") == "6");
    views.insert(field(*answer, "members"));
    newRank[rank] = field(*answer, "rank");
  }
  CHECK(views.size() == 1);
  // Survivors keep their relative order, renumbered contiguously.
  CHECK(newRank ==
        std::map<int, std::string>{{1, "0"}, {2, "1"}, {3, "2"}, {4, "3"}, {6, "4"}, {7, "5"}});
}
