// The NCCL backend's membership changes on CPU (see nccl_backend_test.cc): reconfigure's shrink,
// its fallback to a fresh communicator, grow, split and windows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <thread>
#include <vector>

#include "backends/nccl/nccl_backend.h"
#include "backends/nccl/nccl_status.h"
#include "backends/nccl/unique_id_text.h"
#include "ftcomm/nccl_communicator.h"
#include "nccl_test_group.h"
#include "recorder/flight_recorder.h"

using namespace ftcomm;
using namespace ftcomm::nccl;
using namespace ftcomm::nccl::testing;
using namespace std::chrono_literals;

TEST_CASE("NCCL reconfigure shrinks without the failed ranks when every survivor shrank",
          "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(3, group);
  REQUIRE(group->revoke("rank 1 died").ok());
  group->advance();
  Reconfiguration agreed;
  agreed.epoch = group->epoch();
  agreed.size = 2;
  agreed.oldToNew = {0, -1, 1};
  for (const Status& s : reconfigureAll(members, agreed, {0, 2})) REQUIRE(s.toString() == "OK");
  CHECK(members[2].api->called("commShrink 1"));
  CHECK_FALSE(members[2].api->called("commInitRank rank 1"));
  CHECK(members[2].comm->rank() == 1);
  CHECK(members[2].comm->size() == 2);
  CHECK(members[2].comm->epoch() == agreed.epoch);
  auto buffer = deviceBuffer(*members[2].api, 4);
  CHECK(members[2]
            .comm->allReduce(buffer.data(), buffer.data(), 4, DataType::kFloat32, ReduceOp::kSum)
            .wait(5000ms)
            .ok());
}

TEST_CASE("NCCL reconfigure starts a fresh communicator everywhere when one shrink failed",
          "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(3, group);
  members[0].api->shrinkFails = true;
  REQUIRE(group->revoke("rank 2 died").ok());
  group->advance();
  Reconfiguration agreed;
  agreed.epoch = group->epoch();
  agreed.size = 2;
  agreed.oldToNew = {0, 1, -1};
  for (const Status& s : reconfigureAll(members, agreed, {0, 1})) REQUIRE(s.toString() == "OK");
  CHECK(members[0].api->called("commShrink failed 2"));
  CHECK(members[1].api->called("commShrink 2"));
  // Both abandoned the shrink and joined a fresh communicator of two.
  const auto calls = members[1].api->calls();
  CHECK(std::count_if(calls.begin(), calls.end(),
                      [](const std::string& c) { return c.rfind("commInitRank", 0) == 0; }) == 2);
  CHECK(members[1].comm->size() == 2);
}

TEST_CASE("NCCL reconfigure that keeps every member starts afresh without trying to shrink",
          "[nccl]") {
  // A revoke without a failure: NCCL refuses a shrink that excludes nobody.
  const bool revokeMissing = GENERATE(false, true);
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(2, group);
  for (auto& m : members) m.api->revokeMissing = revokeMissing;
  REQUIRE(group->revoke("revoked, nobody died").ok());
  group->advance();
  Reconfiguration agreed;
  agreed.epoch = group->epoch();
  agreed.size = 2;
  agreed.oldToNew = {0, 1};
  for (const Status& s : reconfigureAll(members, agreed, {0, 1})) REQUIRE(s.toString() == "OK");
  const auto isInit = [](const std::string& c) { return c.rfind("commInitRank", 0) == 0; };
  for (auto& m : members) {
    CHECK_FALSE(m.api->called("commShrink"));
    const auto calls = m.api->calls();
    REQUIRE(std::count_if(calls.begin(), calls.end(), isInit) == 2);
    // The old communicator, revoked or not, is aborted before the fresh one is made.
    const auto fresh =
        std::find_if(std::find_if(calls.begin(), calls.end(), isInit) + 1, calls.end(), isInit);
    const auto abort = std::find(calls.begin(), calls.end(), "commAbort");
    REQUIRE(abort != calls.end());
    CHECK(abort < fresh);
    CHECK(m.comm->epoch() == agreed.epoch);
  }
}

TEST_CASE("NCCL reconfigure that admits a replacement starts a fresh communicator it joins",
          "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(2, group);
  REQUIRE(group->revoke("a replacement is waiting").ok());
  group->advance();
  Reconfiguration agreed;
  agreed.epoch = group->epoch();
  agreed.size = 3;
  agreed.oldToNew = {0, 1};
  agreed.admitted = {2};
  auto survivors = std::async(std::launch::async, [&] {
    return reconfigureAll(members, agreed, {0, 1});
  });
  // The newcomer creates its communicator in the new epoch, under the same keys.
  auto newcomerApi = std::make_shared<FakeNcclApi>();
  auto newcomer = NcclBackend::create(setupOf(newcomerApi, group, 2, 3));
  for (const Status& s : survivors.get()) REQUIRE(s.toString() == "OK");
  REQUIRE(newcomer.ok());
  CHECK(newcomerApi->lastId() == members[0].api->lastId());
  CHECK_FALSE(members[0].api->called("commShrink"));  // a grow is never a shrink
  CHECK(members[1].comm->size() == 3);
  CHECK((*newcomer)->epoch() == agreed.epoch);
}

TEST_CASE("Without ncclCommRevoke a broken communicator is shrunk with NCCL_SHRINK_ABORT",
          "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(2, group);
  for (auto& m : members) {
    m.api->revokeMissing = true;
    m.api->eventsFire = false;
  }
  auto buffer = deviceBuffer(*members[0].api, 4);
  Work pending = members[0].comm->allReduce(buffer.data(), buffer.data(), 4, DataType::kFloat32,
                                            ReduceOp::kSum);
  REQUIRE(group->revoke("rank 1 died").ok());
  CHECK(pending.wait(5000ms).code() == StatusCode::kRevoked);
  group->advance();
  Reconfiguration agreed;
  agreed.epoch = group->epoch();
  agreed.size = 1;
  agreed.oldToNew = {0, -1};
  for (const Status& s : reconfigureAll(members, agreed, {0})) REQUIRE(s.toString() == "OK");
  CHECK(members[0].api->called("commShrink abort 1"));
  const auto calls = members[0].api->calls();
  CHECK(std::count_if(calls.begin(), calls.end(), [](const std::string& c) {
          return c.rfind("commInitRank", 0) == 0;
        }) == 1);  // creation only: no fresh communicator
  members[0].api->eventsFire = true;
  CHECK(members[0].comm->barrier().wait(5000ms).ok());
}

TEST_CASE("NCCL reconfigure refuses an agreement of another epoch, and split children", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(1, group);
  Reconfiguration stale;
  stale.epoch = group->epoch();
  stale.size = 1;
  stale.rank = 0;
  stale.oldToNew = {0};
  auto r = members[0].comm->reconfigure(stale);
  CHECK(r.status().code() == StatusCode::kFailedPrecondition);
  auto child = members[0].comm->split(0, 0);
  REQUIRE(child.ok());
  REQUIRE(*child != nullptr);
  group->advance();
  stale.epoch = group->epoch();
  CHECK((*child)->reconfigure(stale).status().code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("NCCL split orders members by key and gives kNoColor nothing", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(3, group);
  // Ranks 0 and 2 form a child with rank 2 first (key 0 < key 5); rank 1 takes no part.
  members[0].api->splitRank = 1;
  members[2].api->splitRank = 0;
  const int colors[] = {7, Communicator::kNoColor, 7};
  const int keys[] = {5, 0, 0};
  std::vector<std::future<Result<std::unique_ptr<NcclCommunicator>>>> done;
  for (int r = 0; r < 3; ++r) {
    done.push_back(std::async(std::launch::async, [&, r] {
      return members[static_cast<std::size_t>(r)].comm->split(colors[r], keys[r]);
    }));
  }
  auto child0 = done[0].get();
  auto child1 = done[1].get();
  auto child2 = done[2].get();
  REQUIRE(child0.ok());
  REQUIRE(child1.ok());
  REQUIRE(child2.ok());
  CHECK(*child1 == nullptr);
  REQUIRE(*child0 != nullptr);
  CHECK((*child0)->rank() == 1);
  CHECK((*child0)->size() == 2);
  CHECK((*child0)->worldRanks() == std::vector<int>{2, 0});
  CHECK((*child2)->rank() == 0);
}

TEST_CASE("NCCL windows register collectively and refuse one-sided put", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(1, group);
  {
    auto window = members[0].comm->allocateWindow(1 << 16);
    REQUIRE(window.ok());
    CHECK(members[0].api->called("windowRegister"));
    const Status put = (*window)->put(nullptr, 8, 0, 0).wait();
    CHECK(put.code() == StatusCode::kFailedPrecondition);
    CHECK(put.message().find("not supported by this NCCL") != std::string::npos);
  }
  CHECK(members[0].api->called("windowDeregister"));
  std::vector<char> host(8192);
  CHECK(members[0].comm->registerWindow(host.data(), 4096).status().code() ==
        StatusCode::kInvalidArgument);
}
