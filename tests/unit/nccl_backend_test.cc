// The NCCL backend's bookkeeping on CPU, over the scripted FakeNcclApi and a LocalBootstrap
// whose ranks are threads: setup and its deadline, Works completed by events, the failure paths
// (deadline, asynchronous error, the epoch's end), argument checks, reconfigure's shrink and its
// fallback, split and windows. The GPU tests (tests/gpu/) run the same code on NCCL.
#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <thread>
#include <vector>

#include "backends/nccl/nccl_backend.h"
#include "backends/nccl/nccl_status.h"
#include "backends/nccl/unique_id_text.h"
#include "fake_nccl_api.h"
#include "ftcomm/nccl_communicator.h"
#include "recorder/flight_recorder.h"

using namespace ftcomm;
using namespace ftcomm::nccl;
using ftcomm::nccl::testing::FakeNcclApi;
using namespace std::chrono_literals;

namespace {

struct Member {
  std::shared_ptr<FakeNcclApi> api = std::make_shared<FakeNcclApi>();
  std::unique_ptr<NcclCommunicator> comm;
};

NcclSetup setupOf(const std::shared_ptr<FakeNcclApi>& api, const std::shared_ptr<LocalGroup>& group,
                  int rank, int size) {
  NcclSetup setup;
  setup.api = api;
  setup.bootstrap = std::make_shared<LocalBootstrap>(group);
  setup.rank = rank;
  setup.size = size;
  setup.name = "fake";
  setup.id = 4242;
  for (int r = 0; r < size; ++r) setup.worldRanks.push_back(r);
  setup.keyPrefix = "test/nccl";
  setup.setupTimeout = 5s;
  setup.opTimeout = 5s;
  return setup;
}

// Creates `size` members, each on its own thread as real ranks would.
std::vector<Member> createGroup(int size, const std::shared_ptr<LocalGroup>& group,
                                std::vector<Status>* statuses = nullptr) {
  std::vector<Member> members(static_cast<std::size_t>(size));
  std::vector<std::future<Status>> done;
  for (int r = 0; r < size; ++r) {
    done.push_back(std::async(std::launch::async, [&, r] {
      Member& m = members[static_cast<std::size_t>(r)];
      auto backend = NcclBackend::create(setupOf(m.api, group, r, size));
      if (!backend.ok()) return backend.status();
      m.comm = std::make_unique<NcclCommunicator>(std::move(*backend));
      return Status::Ok();
    }));
  }
  for (auto& d : done) {
    Status s = d.get();
    if (statuses != nullptr) statuses->push_back(s);
  }
  return members;
}

// A buffer the fake calls device memory.
std::vector<float> deviceBuffer(FakeNcclApi& api, std::size_t count) {
  std::vector<float> buffer(count);
  api.markDevice(buffer.data());
  return buffer;
}

}  // namespace

TEST_CASE("NCCL results map to the error model by what the caller should do", "[nccl]") {
  CHECK(toStatus({NcclCode::kRemoteError, "peer gone"}, "allReduce").code() ==
        StatusCode::kPeerFailed);
  CHECK(toStatus({NcclCode::kSystemError, "socket"}, "x").code() == StatusCode::kPeerFailed);
  CHECK(toStatus({NcclCode::kInvalidUsage, ""}, "x").code() == StatusCode::kInvalidArgument);
  CHECK(toStatus({NcclCode::kCudaError, "cudaMalloc"}, "x").code() == StatusCode::kInternal);
  CHECK(toStatus({NcclCode::kNotSupported, ""}, "x").code() == StatusCode::kFailedPrecondition);
  const Status s = toStatus({NcclCode::kRemoteError, "peer gone"}, "allReduce #3");
  CHECK(s.message().find("allReduce #3") != std::string::npos);
  CHECK(s.message().find("ncclRemoteError") != std::string::npos);
  CHECK(checkNcclReduction(DataType::kInt32, ReduceOp::kBand).code() ==
        StatusCode::kInvalidArgument);
  CHECK(checkNcclReduction(DataType::kInt32, ReduceOp::kAvg).code() ==
        StatusCode::kInvalidArgument);
  CHECK(checkNcclReduction(DataType::kBFloat16, ReduceOp::kAvg).ok());
}

TEST_CASE("An NCCL unique id survives its text form and malformed text is refused", "[nccl]") {
  std::string id(128, '\0');
  for (int i = 0; i < 128; ++i) id[static_cast<std::size_t>(i)] = static_cast<char>(255 - i);
  auto back = uniqueIdFromText(uniqueIdToText(id));
  REQUIRE(back.ok());
  CHECK(*back == id);
  CHECK(uniqueIdFromText("nccl-id:0g").status().code() == StatusCode::kInvalidArgument);
  CHECK(uniqueIdFromText("nccl-id:abc").status().code() == StatusCode::kInvalidArgument);
  CHECK(uniqueIdFromText("deadbeef").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("NCCL communicators come up after polling their nonblocking init, sharing rank 0's id",
          "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  std::vector<Status> statuses;
  auto members = createGroup(3, group, &statuses);
  for (const Status& s : statuses) REQUIRE(s.ok());
  CHECK(members[0].api->lastId().size() == 128);
  CHECK(members[1].api->lastId() == members[0].api->lastId());
  CHECK(members[2].comm->rank() == 2);
  CHECK(members[2].comm->size() == 3);
  CHECK(members[1].comm->health().ok());
}

TEST_CASE("NCCL setup that never finishes fails at its deadline and aborts the communicator",
          "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto api = std::make_shared<FakeNcclApi>();
  api->neverReady = true;
  NcclSetup setup = setupOf(api, group, 0, 2);
  setup.setupTimeout = 200ms;
  auto backend = NcclBackend::create(setup);
  REQUIRE_FALSE(backend.ok());
  CHECK(backend.status().code() == StatusCode::kTimeout);
  CHECK(api->called("commAbort"));
}

TEST_CASE("NCCL setup without rank 0's unique id fails at its deadline naming it", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  NcclSetup setup = setupOf(std::make_shared<FakeNcclApi>(), group, 1, 2);
  setup.setupTimeout = 200ms;
  auto backend = NcclBackend::create(setup);
  REQUIRE_FALSE(backend.ok());
  CHECK(backend.status().code() == StatusCode::kTimeout);
  CHECK(backend.status().message().find("unique id") != std::string::npos);
}

TEST_CASE("An NCCL Work completes when its event fires, and the flight recorder sees it",
          "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(1, group);
  Member& m = members[0];
  m.api->eventsFire = false;
  auto buffer = deviceBuffer(*m.api, 16);
  Work work =
      m.comm->allReduce(buffer.data(), buffer.data(), 16, DataType::kFloat32, ReduceOp::kSum);
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(work.test());
  m.api->fireAll();
  REQUIRE(work.wait(5000ms).ok());
  const auto dump = recorder::FlightRecorder::process().snapshot("test");
  bool found = false;
  for (const auto& e : dump.entries()) {
    if (e.comm_id() == m.comm->id() && e.op() == recorder::v1::ALL_REDUCE &&
        e.algorithm() == "nccl" && e.state() == recorder::v1::COMPLETED && e.count_in() == 16) {
      found = true;
    }
  }
  CHECK(found);
}

TEST_CASE("An NCCL operation past its deadline fails with Timeout and revokes the epoch",
          "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(1, group);
  Member& m = members[0];
  m.api->eventsFire = false;
  auto buffer = deviceBuffer(*m.api, 4);
  OpOptions quick;
  quick.timeout = 100ms;
  Work late =
      m.comm->allReduce(buffer.data(), buffer.data(), 4, DataType::kFloat32, ReduceOp::kSum, quick);
  const Status s = late.wait(5000ms);
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK(s.message().find("allReduce #") != std::string::npos);
  CHECK(m.api->called("commRevoke"));
  // The other members learn of it through the epoch.
  for (int i = 0; i < 100 && group->health().ok(); ++i) std::this_thread::sleep_for(10ms);
  CHECK(group->health().code() == StatusCode::kRevoked);
  // Later operations fail at once with the first failure.
  m.api->eventsFire = true;
  CHECK(m.comm->barrier().wait(1000ms).code() == StatusCode::kTimeout);
}

TEST_CASE("An asynchronous NCCL error fails the pending Work with PeerFailed", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(1, group);
  Member& m = members[0];
  m.api->eventsFire = false;
  auto buffer = deviceBuffer(*m.api, 4);
  Work work = m.comm->broadcast(buffer.data(), 4, DataType::kFloat32, 0);
  m.api->asyncError = NcclCode::kRemoteError;
  const Status s = work.wait(5000ms);
  CHECK(s.code() == StatusCode::kPeerFailed);
  CHECK(m.comm->health().code() == StatusCode::kPeerFailed);
}

TEST_CASE("A failure elsewhere in the epoch fails the pending NCCL Work", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(2, group);
  Member& m = members[1];
  m.api->eventsFire = false;
  auto buffer = deviceBuffer(*m.api, 4);
  Work work = m.comm->allGather(buffer.data(), buffer.data(), 2, DataType::kFloat32);
  REQUIRE(group->revoke("rank 0 saw its peer die").ok());
  const Status s = work.wait(5000ms);
  CHECK(s.code() == StatusCode::kRevoked);
  CHECK(s.message().find("rank 0 saw its peer die") != std::string::npos);
  CHECK(m.api->called("commRevoke"));
}

TEST_CASE("Bad NCCL calls are refused at once and leave the communicator usable", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(2, group);
  Member& m = members[0];
  auto device = deviceBuffer(*m.api, 8);
  std::vector<float> host(8);
  const Status hostMemory =
      m.comm->allReduce(host.data(), device.data(), 8, DataType::kFloat32, ReduceOp::kSum).wait();
  CHECK(hostMemory.code() == StatusCode::kInvalidArgument);
  CHECK(hostMemory.message().find("not memory of CUDA device") != std::string::npos);
  CHECK(m.comm->allReduce(device.data(), device.data(), 8, DataType::kInt32, ReduceOp::kBxor)
            .wait()
            .code() == StatusCode::kInvalidArgument);
  CHECK(m.comm->broadcast(device.data(), 8, DataType::kFloat32, 2).wait().code() ==
        StatusCode::kInvalidArgument);
  CHECK(m.comm->send(device.data(), 8, DataType::kFloat32, 1, -3).wait().code() ==
        StatusCode::kInvalidArgument);
  const std::vector<std::size_t> counts{1, 2, 3};  // three counts for two members
  CHECK(m.comm->allGatherV(device.data(), device.data(), counts, counts, DataType::kFloat32)
            .wait()
            .code() == StatusCode::kInvalidArgument);
  CHECK(m.comm->health().ok());
}

TEST_CASE("Vector NCCL collectives become one group of sends and receives", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(2, group);
  Member& m = members[1];
  auto buffer = deviceBuffer(*m.api, 8);
  m.api->markDevice(buffer.data() + 3);
  const std::vector<std::size_t> counts{3, 2}, displs{0, 3};
  REQUIRE(m.comm->allGatherV(buffer.data() + 3, buffer.data(), counts, displs, DataType::kFloat32)
              .wait(5000ms)
              .ok());
  const auto calls = m.api->calls();
  // In place: rank 1 sends its block to rank 0 and receives rank 0's; nothing to itself.
  int issued = 0;
  for (const auto& c : calls) issued += c.rfind("issue", 0) == 0 ? 1 : 0;
  CHECK(issued == 2);
  CHECK(m.api->called("groupStart"));
  CHECK(m.api->called("groupEnd"));
  // A receive reports its size, as on the host.
  Work received = m.comm->recv(buffer.data(), 8, DataType::kFloat32, 0, 5);
  REQUIRE(received.wait(5000ms).ok());
  CHECK(received.bytes() == 32);
}

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
  std::vector<std::future<Result<Reconfiguration>>> done;
  for (int old : {0, 2}) {
    Reconfiguration mine = agreed;
    mine.rank = agreed.oldToNew[static_cast<std::size_t>(old)];
    done.push_back(std::async(std::launch::async, [&members, old, mine] {
      return members[static_cast<std::size_t>(old)].comm->reconfigure(mine);
    }));
  }
  for (auto& d : done) REQUIRE(d.get().ok());
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
  std::vector<std::future<Result<Reconfiguration>>> done;
  for (int old : {0, 1}) {
    Reconfiguration mine = agreed;
    mine.rank = old;
    done.push_back(std::async(std::launch::async, [&members, old, mine] {
      return members[static_cast<std::size_t>(old)].comm->reconfigure(mine);
    }));
  }
  for (auto& d : done) REQUIRE(d.get().ok());
  CHECK(members[0].api->called("commShrink failed 2"));
  CHECK(members[1].api->called("commShrink 2"));
  // Both abandoned the shrink and joined a fresh communicator of two.
  const auto calls = members[1].api->calls();
  CHECK(std::count_if(calls.begin(), calls.end(),
                      [](const std::string& c) { return c.rfind("commInitRank", 0) == 0; }) == 2);
  CHECK(members[1].comm->size() == 2);
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
  std::vector<std::future<Status>> done;
  for (int old : {0, 1}) {
    Reconfiguration mine = agreed;
    mine.rank = old;
    done.push_back(std::async(std::launch::async, [&members, old, mine] {
      return members[static_cast<std::size_t>(old)].comm->reconfigure(mine).status();
    }));
  }
  // The newcomer creates its communicator in the new epoch, under the same keys.
  auto newcomerApi = std::make_shared<FakeNcclApi>();
  auto newcomer = NcclBackend::create(setupOf(newcomerApi, group, 2, 3));
  for (auto& d : done) REQUIRE(d.get().toString() == "OK");
  REQUIRE(newcomer.ok());
  CHECK(newcomerApi->lastId() == members[0].api->lastId());
  CHECK_FALSE(members[0].api->called("commShrink"));  // a grow is never a shrink
  CHECK(members[1].comm->size() == 3);
  CHECK((*newcomer)->epoch() == agreed.epoch);
}

TEST_CASE("Without ncclCommRevoke a broken communicator is aborted and reconfigure starts afresh",
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
  CHECK(members[0].api->called("commAbort"));
  group->advance();
  Reconfiguration agreed;
  agreed.epoch = group->epoch();
  agreed.size = 1;
  agreed.rank = 0;
  agreed.oldToNew = {0, -1};
  REQUIRE(members[0].comm->reconfigure(agreed).status().toString() == "OK");
  CHECK_FALSE(members[0].api->called("commShrink"));
  const auto calls = members[0].api->calls();
  CHECK(std::count_if(calls.begin(), calls.end(), [](const std::string& c) {
          return c.rfind("commInitRank", 0) == 0;
        }) == 2);  // creation, then the fresh communicator
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

TEST_CASE("An aborted NCCL communicator refuses every later operation", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(1, group);
  members[0].comm->abort("test");
  CHECK(members[0].api->called("commAbort"));
  CHECK(members[0].comm->barrier().wait(1000ms).code() == StatusCode::kFailedPrecondition);
  CHECK(members[0].comm->health().code() == StatusCode::kFailedPrecondition);
  CHECK(group->health().code() == StatusCode::kRevoked);
}
