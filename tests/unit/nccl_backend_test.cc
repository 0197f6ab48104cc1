// The NCCL backend's bookkeeping on CPU, over the scripted FakeNcclApi and a LocalBootstrap
// whose ranks are threads: the error mapping, setup and its deadline, Works completed by events,
// the failure paths (deadline, asynchronous error, the epoch's end), argument checks. Membership
// changes are in nccl_membership_test.cc; the GPU tests (tests/gpu/) run the same code on NCCL.
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

TEST_CASE("An aborted NCCL communicator refuses every later operation", "[nccl]") {
  auto group = std::make_shared<LocalGroup>();
  auto members = createGroup(1, group);
  members[0].comm->abort("test");
  CHECK(members[0].api->called("commAbort"));
  CHECK(members[0].comm->barrier().wait(1000ms).code() == StatusCode::kFailedPrecondition);
  CHECK(members[0].comm->health().code() == StatusCode::kFailedPrecondition);
  CHECK(group->health().code() == StatusCode::kRevoked);
}
