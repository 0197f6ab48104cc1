// The NCCL backend on a real GPU. One rank (every machine with a GPU): every collective with its
// result checked, split, revoke then reconfigure (ncclCommShrink), windows. Several ranks (one
// device each, gated on the device count): results across ranks, point-to-point, and a shrink
// after a member left.
#include <catch2/catch.hpp>

#include <numeric>
#include <thread>

#include "gpu_group.h"

using namespace ftcomm;
using namespace ftcomm::gpu_test;
using namespace std::chrono_literals;

namespace {

std::vector<float> iota(std::size_t count, float start) {
  std::vector<float> v(count);
  std::iota(v.begin(), v.end(), start);
  return v;
}

Reconfiguration agreement(const GpuGroup& g, int rank, int size, std::vector<int> oldToNew) {
  Reconfiguration agreed;
  agreed.epoch = g.group->epoch();
  agreed.rank = rank;
  agreed.size = size;
  agreed.oldToNew = std::move(oldToNew);
  return agreed;
}

}  // namespace

TEST_CASE("One GPU rank runs every NCCL collective with the right result", "[gpu]") {
  GpuGroup g = makeGroup(1);
  NcclCommunicator& c = *g.comms[0];
  const std::size_t n = 1 << 20;
  DeviceBuffer<float> in(0, n), out(0, n);
  const auto values = iota(n, 1.0f);
  in.fill(values);
  const auto reset = [&] { out.fill(std::vector<float>(n, -1.0f)); };

  reset();
  REQUIRE(
      c.allReduce(in.data(), out.data(), n, DataType::kFloat32, ReduceOp::kSum).wait().toString() ==
      "OK");
  CHECK(out.read() == values);
  reset();
  REQUIRE(
      c.allReduce(in.data(), out.data(), n, DataType::kFloat32, ReduceOp::kAvg).wait().toString() ==
      "OK");
  CHECK(out.read() == values);
  reset();
  REQUIRE(
      c.reduce(in.data(), out.data(), n, DataType::kFloat32, ReduceOp::kMax, 0).wait().toString() ==
      "OK");
  CHECK(out.read() == values);
  reset();
  REQUIRE(c.allGather(in.data(), out.data(), n, DataType::kFloat32).wait().toString() == "OK");
  CHECK(out.read() == values);
  reset();
  REQUIRE(c.reduceScatter(in.data(), out.data(), n, DataType::kFloat32, ReduceOp::kSum)
              .wait()
              .toString() == "OK");
  CHECK(out.read() == values);
  reset();
  REQUIRE(c.allToAll(in.data(), out.data(), n, DataType::kFloat32).wait().toString() == "OK");
  CHECK(out.read() == values);
  reset();
  REQUIRE(c.gather(in.data(), out.data(), n, DataType::kFloat32, 0).wait().toString() == "OK");
  CHECK(out.read() == values);
  reset();
  REQUIRE(c.scatter(in.data(), out.data(), n, DataType::kFloat32, 0).wait().toString() == "OK");
  CHECK(out.read() == values);
  reset();
  const std::vector<std::size_t> counts{n - 8}, displs{8};
  REQUIRE(
      c.allGatherV(in.data(), out.data(), counts, displs, DataType::kFloat32).wait().toString() ==
      "OK");
  auto got = out.read();
  CHECK(got[7] == -1.0f);
  CHECK(std::equal(got.begin() + 8, got.end(), values.begin()));
  reset();
  REQUIRE(c.allToAllV(in.data(), counts, displs, out.data(), counts, displs, DataType::kFloat32)
              .wait()
              .toString() == "OK");
  got = out.read();
  CHECK(std::equal(got.begin() + 8, got.end(), values.begin() + 8));
  out.fill(values);
  REQUIRE(c.broadcast(out.data(), n, DataType::kFloat32, 0).wait().toString() == "OK");
  CHECK(out.read() == values);
  REQUIRE(c.barrier().wait().toString() == "OK");
}

TEST_CASE("One GPU rank reduces every element type NCCL takes", "[gpu]") {
  GpuGroup g = makeGroup(1);
  const std::size_t bytes = 4096;
  DeviceBuffer<std::uint8_t> in(0, bytes), out(0, bytes);
  std::vector<std::uint8_t> pattern(bytes);
  for (std::size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<std::uint8_t>(i % 61);
  in.fill(pattern);
  for (const auto& t : kDataTypes) {
    INFO(t.name);
    out.fill(std::vector<std::uint8_t>(bytes, 0xff));
    REQUIRE(g.comms[0]
                ->allReduce(in.data(), out.data(), bytes / t.bytes, t.type, ReduceOp::kSum)
                .wait()
                .toString() == "OK");
    CHECK(out.read() == pattern);  // one contributor: the sum is the input, bit for bit
  }
}

TEST_CASE("A GPU communicator refuses host memory and bitwise reductions", "[gpu]") {
  GpuGroup g = makeGroup(1);
  std::vector<float> host(16);
  DeviceBuffer<float> device(0, 16);
  CHECK(g.comms[0]
            ->allReduce(host.data(), device.data(), 16, DataType::kFloat32, ReduceOp::kSum)
            .wait()
            .code() == StatusCode::kInvalidArgument);
  CHECK(g.comms[0]
            ->allReduce(device.data(), device.data(), 16, DataType::kInt32, ReduceOp::kBor)
            .wait()
            .code() == StatusCode::kInvalidArgument);
  CHECK(g.comms[0]->health().ok());
}

TEST_CASE("A GPU communicator splits through ncclCommSplit", "[gpu]") {
  GpuGroup g = makeGroup(1);
  auto none = g.comms[0]->split(Communicator::kNoColor, 0);
  REQUIRE(none.status().toString() == "OK");
  CHECK(*none == nullptr);
  auto child = g.comms[0]->split(3, 0);
  REQUIRE(child.status().toString() == "OK");
  REQUIRE(*child != nullptr);
  CHECK((*child)->size() == 1);
  DeviceBuffer<float> buffer(0, 1024);
  buffer.fill(iota(1024, 0.0f));
  REQUIRE((*child)
              ->allReduce(buffer.data(), buffer.data(), 1024, DataType::kFloat32, ReduceOp::kSum)
              .wait()
              .toString() == "OK");
  CHECK(buffer.read() == iota(1024, 0.0f));
}

// Nobody is excluded here, so reconfigure starts a fresh communicator (NCCL shrinks only when it
// leaves a rank out); the multi-rank test below shrinks.
TEST_CASE("A revoked GPU communicator fails its operations, then reconfigures in place", "[gpu]") {
  GpuGroup g = makeGroup(1);
  NcclCommunicator& c = *g.comms[0];
  REQUIRE(c.revoke("test").ok());
  DeviceBuffer<float> buffer(0, 256);
  CHECK(c.allReduce(buffer.data(), buffer.data(), 256, DataType::kFloat32, ReduceOp::kSum)
            .wait()
            .code() == StatusCode::kRevoked);
  g.group->advance();
  auto r = c.reconfigure(agreement(g, 0, 1, {0}));
  REQUIRE(r.status().toString() == "OK");
  CHECK(c.epoch() == g.group->epoch());
  CHECK(c.health().ok());
  buffer.fill(iota(256, 2.0f));
  REQUIRE(c.allReduce(buffer.data(), buffer.data(), 256, DataType::kFloat32, ReduceOp::kSum)
              .wait()
              .toString() == "OK");
  CHECK(buffer.read() == iota(256, 2.0f));
}

TEST_CASE("A GPU window registers, serves a collective and refuses put", "[gpu]") {
  GpuGroup g = makeGroup(1);
  auto window = g.comms[0]->allocateWindow(1 << 20);
  REQUIRE(window.status().toString() == "OK");
  auto* data = static_cast<float*>((*window)->data());
  const auto values = iota(1024, 5.0f);
  cudaMemcpy(data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice);
  REQUIRE(g.comms[0]
              ->allReduce(data, data, 1024, DataType::kFloat32, ReduceOp::kSum)
              .wait()
              .toString() == "OK");
  std::vector<float> back(1024);
  cudaMemcpy(back.data(), data, back.size() * sizeof(float), cudaMemcpyDeviceToHost);
  CHECK(back == values);
  CHECK((*window)->put(data, 16, 0, 0).wait().code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("GPU ranks on separate devices reduce, exchange and shrink after one leaves",
          "[gpu][multi]") {
  const int n = multiRankSize();
  if (n < 2) {
    WARN(
        "skipped: this test needs 2 CUDA devices (or FTCOMM_GPU_TEST_RANKS=2 with an NCCL that "
        "takes NCCL_MULTI_RANK_GPU_ENABLE=1), "
        << deviceCount() << " present");
    return;
  }
  GpuGroup g = makeGroup(n);
  const std::size_t count = 1 << 18;
  std::vector<std::future<Status>> done;
  for (int r = 0; r < n; ++r) {
    done.push_back(std::async(std::launch::async, [&g, r, n, count] {
      NcclCommunicator& c = *g.comms[static_cast<std::size_t>(r)];
      DeviceBuffer<float> buffer(deviceOf(r), count), peer(deviceOf(r), count);
      buffer.fill(std::vector<float>(count, static_cast<float>(r + 1)));
      FTCOMM_RETURN_IF_ERROR(
          c.allReduce(buffer.data(), buffer.data(), count, DataType::kFloat32, ReduceOp::kSum)
              .wait());
      if (buffer.read()[count - 1] != static_cast<float>(n * (n + 1) / 2)) {
        return internalError("wrong allreduce sum");
      }
      // A ring: even ranks send first, odd ones receive first.
      const int next = (r + 1) % n, prev = (r + n - 1) % n;
      Work a = r % 2 == 0 ? c.send(buffer.data(), count, DataType::kFloat32, next)
                          : c.recv(peer.data(), count, DataType::kFloat32, prev);
      Work b = r % 2 == 0 ? c.recv(peer.data(), count, DataType::kFloat32, prev)
                          : c.send(buffer.data(), count, DataType::kFloat32, next);
      FTCOMM_RETURN_IF_ERROR(a.wait());
      FTCOMM_RETURN_IF_ERROR(b.wait());
      return Status::Ok();
    }));
  }
  for (auto& d : done) REQUIRE(d.get().toString() == "OK");

  // The last rank leaves; the others revoke the epoch and shrink without it.
  g.comms.back()->abort("leaving");
  g.group->advance();
  std::vector<int> oldToNew(static_cast<std::size_t>(n));
  std::iota(oldToNew.begin(), oldToNew.end(), 0);
  oldToNew.back() = -1;
  done.clear();
  for (int r = 0; r + 1 < n; ++r) {
    done.push_back(std::async(std::launch::async, [&g, r, n, oldToNew, count] {
      NcclCommunicator& c = *g.comms[static_cast<std::size_t>(r)];
      auto agreed = c.reconfigure(agreement(g, r, n - 1, oldToNew));
      if (!agreed.ok()) return agreed.status();
      DeviceBuffer<float> buffer(deviceOf(r), count);
      buffer.fill(std::vector<float>(count, 1.0f));
      FTCOMM_RETURN_IF_ERROR(
          c.allReduce(buffer.data(), buffer.data(), count, DataType::kFloat32, ReduceOp::kSum)
              .wait());
      return buffer.read()[0] == static_cast<float>(n - 1) ? Status::Ok()
                                                           : internalError("wrong sum after");
    }));
  }
  for (auto& d : done) REQUIRE(d.get().toString() == "OK");
}

TEST_CASE("A GPU call NCCL refuses fails with its reason and revokes the epoch", "[gpu]") {
  GpuGroup g = makeGroup(1);
  NcclCommunicator& c = *g.comms[0];
  DeviceBuffer<float> buffer(0, 1024);
  // NCCL refuses a receive from itself with no matching send, and keeps the error.
  const Status refused = c.recv(buffer.data(), 1024, DataType::kFloat32, 0).wait();
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message().find("ncclInvalidUsage") != std::string::npos);
  CHECK(c.allReduce(buffer.data(), buffer.data(), 1024, DataType::kFloat32, ReduceOp::kSum)
            .wait()
            .code() == StatusCode::kRevoked);
  CHECK(g.group->health().code() == StatusCode::kRevoked);
  g.group->advance();
  REQUIRE(c.reconfigure(agreement(g, 0, 1, {0})).status().toString() == "OK");
  buffer.fill(iota(1024, 1.0f));
  REQUIRE(c.allReduce(buffer.data(), buffer.data(), 1024, DataType::kFloat32, ReduceOp::kSum)
              .wait()
              .toString() == "OK");
  CHECK(buffer.read() == iota(1024, 1.0f));
}

TEST_CASE("GPU operations past their deadline fail with Timeout, and the rank recovers", "[gpu]") {
  GpuGroup g = makeGroup(1);
  NcclCommunicator& c = *g.comms[0];
  const std::size_t count = std::size_t{1} << 28;  // 1 GiB of float32
  DeviceBuffer<float> in(0, count), out(0, count);
  OpOptions quick;
  quick.timeout = 1ms;
  std::vector<Work> works;
  for (int i = 0; i < 20; ++i) {
    works.push_back(
        c.allReduce(in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum, quick));
  }
  int timedOut = 0;
  for (Work& w : works) {
    const Status s = w.wait();
    if (s.code() == StatusCode::kTimeout) ++timedOut;
    CHECK((s.ok() || s.code() == StatusCode::kTimeout));
  }
  CHECK(timedOut > 0);
  for (int i = 0; i < 200 && g.group->health().ok(); ++i) std::this_thread::sleep_for(10ms);
  CHECK(g.group->health().code() == StatusCode::kRevoked);  // every member learns of it
  g.group->advance();
  REQUIRE(c.reconfigure(agreement(g, 0, 1, {0})).status().toString() == "OK");
  DeviceBuffer<float> small(0, 1024);
  small.fill(iota(1024, 1.0f));
  REQUIRE(c.allReduce(small.data(), small.data(), 1024, DataType::kFloat32, ReduceOp::kSum)
              .wait()
              .toString() == "OK");
  CHECK(small.read() == iota(1024, 1.0f));
}
