// Every allreduce algorithm's schedule, run in one process over the in-memory transport, against
// a reference: world sizes 1 to 8 (powers of two and not), counts from 0 to past a chunk per
// rank, several types and operators, in place and out of place.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "algorithms/reduction.h"
#include "algorithms/registry.h"
#include "local_transport.h"

using namespace ftcomm;
using namespace ftcomm::algorithms;
using namespace ftcomm::testing;

namespace {

template <typename T>
T inputOf(int rank, std::size_t i) {
  return static_cast<T>((static_cast<int>(i % 13) + 1) * (rank + 1) - static_cast<int>(i % 5));
}

template <typename T>
void checkAllReduce(const AlgorithmInfo& algorithm, DataType type, ReduceOp op, int ranks,
                    std::size_t count, bool inPlace, std::size_t segmentBytes = 0,
                    bool mappedPeers = false, const std::vector<int>& hosts = {}) {
  LocalFabric fabric(ranks, mappedPeers);
  std::vector<std::vector<T>> in(static_cast<std::size_t>(ranks)), out(in.size());
  std::vector<std::unique_ptr<CollectiveTask>> tasks;
  for (int r = 0; r < ranks; ++r) {
    auto& mine = in[static_cast<std::size_t>(r)];
    mine.resize(count);
    for (std::size_t i = 0; i < count; ++i) mine[i] = inputOf<T>(r, i);
    out[static_cast<std::size_t>(r)] = inPlace ? mine : std::vector<T>(count, T{});
    CollectiveArgs args;
    args.dtype = type;
    args.op = op;
    args.count = count;
    args.recv = out[static_cast<std::size_t>(r)].data();
    args.send = inPlace ? args.recv : mine.data();
    args.tag = {7, 42};
    args.segmentBytes = segmentBytes;
    args.hosts = hosts;
    tasks.push_back(algorithm.make(fabric.transport(r), args));
  }
  INFO(algorithm.name << " hosts=" << hosts.size() << " " << dataTypeName(type) << " "
                      << reduceOpName(op) << " ranks=" << ranks << " count=" << count
                      << (inPlace ? " in place" : "") << " segment=" << segmentBytes
                      << (mappedPeers ? " mapped" : ""));
  Status status = runAll(fabric, tasks);
  REQUIRE(status.toString() == "OK");
  // The reference: rank 0's input folded with each other rank's, in rank order.
  std::vector<T> expected = in[0];
  for (int r = 1; r < ranks; ++r) {
    REQUIRE(reduceInto(type, op == ReduceOp::kAvg ? ReduceOp::kSum : op, expected.data(),
                       in[static_cast<std::size_t>(r)].data(), count)
                .ok());
  }
  if (op == ReduceOp::kAvg) REQUIRE(finishAverage(type, expected.data(), count, ranks).ok());
  for (int r = 0; r < ranks; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      if (out[static_cast<std::size_t>(r)][i] != expected[i]) {
        FAIL("rank " << r << " element " << i << ": " << +out[static_cast<std::size_t>(r)][i]
                     << " instead of " << +expected[i]);
      }
    }
  }
}

}  // namespace

TEST_CASE("every allreduce algorithm matches the reference on 1 to 8 ranks") {
  for (const auto& algorithm : allAlgorithms()) {
    if (algorithm.collective != Collective::kAllReduce) continue;
    for (int ranks = 1; ranks <= 8; ++ranks) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1023},
                                std::size_t{100003}}) {
        for (bool inPlace : {false, true}) {
          checkAllReduce<std::int32_t>(algorithm, DataType::kInt32, ReduceOp::kSum, ranks, count,
                                       inPlace);
        }
      }
      checkAllReduce<std::int64_t>(algorithm, DataType::kInt64, ReduceOp::kMax, ranks, 1023, false);
      checkAllReduce<std::uint8_t>(algorithm, DataType::kUint8, ReduceOp::kBxor, ranks, 77, true);
      checkAllReduce<double>(algorithm, DataType::kFloat64, ReduceOp::kMin, ranks, 513, false);
      checkAllReduce<float>(algorithm, DataType::kFloat32, ReduceOp::kAvg, ranks, 4096, false);
    }
  }
}

TEST_CASE("both node-aware allreduces match the reference with the ranks spread over hosts") {
  // Blocks of hosts, interleaved hosts, uneven hosts, one host, every rank a host of its own.
  const std::vector<std::vector<int>> layouts = {{0, 0, 1, 1},       {0, 1, 0, 1},
                                                 {0, 0, 0, 1, 1},    {5, 5, 5, 5},
                                                 {0, 1, 2},          {0, 0, 1, 1, 2, 2, 3, 3},
                                                 {3, 1, 3, 1, 2, 2}, {0, 1, 2, 0, 1, 2}};
  for (const char* name : {"hierarchical", "hierarchical_split"}) {
    const AlgorithmInfo* algorithm = findAlgorithm(Collective::kAllReduce, name);
    REQUIRE(algorithm != nullptr);
    for (const auto& hosts : layouts) {
      const int ranks = static_cast<int>(hosts.size());
      for (std::size_t count :
           {std::size_t{0}, std::size_t{1}, std::size_t{1023}, std::size_t{100003}}) {
        for (bool inPlace : {false, true}) {
          checkAllReduce<std::int32_t>(*algorithm, DataType::kInt32, ReduceOp::kSum, ranks, count,
                                       inPlace, 0, false, hosts);
        }
      }
      checkAllReduce<float>(*algorithm, DataType::kFloat32, ReduceOp::kAvg, ranks, 4096, false, 0,
                            false, hosts);
      checkAllReduce<std::int64_t>(*algorithm, DataType::kInt64, ReduceOp::kMax, ranks, 513, true,
                                   0, false, hosts);
    }
  }
}

TEST_CASE("the direct allreduce reduces mapped peers' inputs in place to the same result") {
  // Counts past one 128 KiB piece per rank's slice, so that pieces follow one another.
  for (const auto& algorithm : allAlgorithms()) {
    if (algorithm.collective != Collective::kAllReduce || !algorithm.readsPeers) continue;
    for (int ranks = 1; ranks <= 5; ++ranks) {
      for (bool inPlace : {false, true}) {
        checkAllReduce<std::int32_t>(algorithm, DataType::kInt32, ReduceOp::kSum, ranks, 300007,
                                     inPlace, 0, true);
      }
      checkAllReduce<float>(algorithm, DataType::kFloat32, ReduceOp::kAvg, ranks, 100003, false, 0,
                            true);
    }
  }
}

TEST_CASE("a direct allreduce that read a mapped peer's buffer taken back meanwhile fails") {
  for (const auto& algorithm : allAlgorithms()) {
    if (algorithm.collective != Collective::kAllReduce || !algorithm.readsPeers) continue;
    LocalFabric fabric(3, /*mappedPeers=*/true);
    fabric.takeBackLoans(1);
    std::vector<std::vector<float>> data(3, std::vector<float>(100000, 1.0f));
    std::vector<std::unique_ptr<CollectiveTask>> tasks;
    for (int r = 0; r < 3; ++r) {
      CollectiveArgs args;
      args.dtype = DataType::kFloat32;
      args.count = data[0].size();
      args.send = args.recv = data[static_cast<std::size_t>(r)].data();
      tasks.push_back(algorithm.make(fabric.transport(r), args));
    }
    INFO(algorithm.name);
    const Status status = runAll(fabric, tasks);
    CHECK(status.code() == StatusCode::kRevoked);
    CHECK_THAT(status.message(), Catch::Contains("rank 1 took back the buffer"));
  }
}

TEST_CASE("float sums come out bitwise identical on every rank") {
  for (const auto& algorithm : allAlgorithms()) {
    if (algorithm.collective != Collective::kAllReduce) continue;
    for (int ranks : {3, 5, 8}) {
      LocalFabric fabric(ranks);
      const std::size_t count = 999;
      std::vector<std::vector<float>> data(static_cast<std::size_t>(ranks),
                                           std::vector<float>(count));
      std::vector<std::unique_ptr<CollectiveTask>> tasks;
      for (int r = 0; r < ranks; ++r) {
        for (std::size_t i = 0; i < count; ++i) {
          data[static_cast<std::size_t>(r)][i] = 1.0f / static_cast<float>(r * 7 + i + 3);
        }
        CollectiveArgs args;
        args.dtype = DataType::kFloat32;
        args.count = count;
        args.send = args.recv = data[static_cast<std::size_t>(r)].data();
        tasks.push_back(algorithm.make(fabric.transport(r), args));
      }
      REQUIRE(runAll(fabric, tasks).ok());
      for (int r = 1; r < ranks; ++r) {
        INFO(algorithm.name << " ranks=" << ranks << " rank " << r);
        CHECK(std::memcmp(data[0].data(), data[static_cast<std::size_t>(r)].data(), count * 4) ==
              0);
      }
    }
  }
}

TEST_CASE("the allreduce algorithm is chosen by size, or by name through FTCOMM_ALGO_ALLREDUCE") {
  auto small = chooseAlgorithm(Collective::kAllReduce, 8, 8);
  REQUIRE(small.ok());
  CHECK((*small)->name == "recursive_doubling");
  auto medium = chooseAlgorithm(Collective::kAllReduce, 1 << 20, 8);
  REQUIRE(medium.ok());
  CHECK((*medium)->name == "rabenseifner");
  auto large = chooseAlgorithm(Collective::kAllReduce, 16 << 20, 8);
  REQUIRE(large.ok());
  CHECK((*large)->name == "ring");
  ::setenv("FTCOMM_ALGO_ALLREDUCE", "ring", 1);
  auto forced = chooseAlgorithm(Collective::kAllReduce, 8, 8);
  ::setenv("FTCOMM_ALGO_ALLREDUCE", "bogus", 1);
  auto unknown = chooseAlgorithm(Collective::kAllReduce, 8, 8);
  ::unsetenv("FTCOMM_ALGO_ALLREDUCE");
  REQUIRE(forced.ok());
  CHECK((*forced)->name == "ring");
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.status().message(),
             Catch::Contains("known: ring recursive_doubling rabenseifner"));
}

TEST_CASE("the ring allreduce pipelines many segments per chunk, uneven last segments included") {
  const AlgorithmInfo* ring = findAlgorithm(Collective::kAllReduce, "ring");
  REQUIRE(ring != nullptr);
  for (int ranks : {2, 3, 5, 8}) {
    // 12-byte segments: 3 int32 each, so chunks of 1..40 elements end in short or empty segments.
    for (std::size_t count :
         {std::size_t{1}, std::size_t{5}, std::size_t{17}, std::size_t{64}, std::size_t{321}}) {
      for (bool inPlace : {false, true}) {
        checkAllReduce<std::int32_t>(*ring, DataType::kInt32, ReduceOp::kSum, ranks, count, inPlace,
                                     12);
      }
    }
    checkAllReduce<double>(*ring, DataType::kFloat64, ReduceOp::kMin, ranks, 1000, false, 64);
  }
}

TEST_CASE("the direct algorithms are chosen for large messages only where every peer can be read") {
  auto readable = chooseAlgorithm(Collective::kAllReduce, 16 << 20, 4, true);
  REQUIRE(readable.ok());
  CHECK((*readable)->name == "direct");
  auto small = chooseAlgorithm(Collective::kAllReduce, 8, 4, true);
  REQUIRE(small.ok());
  CHECK((*small)->name == "recursive_doubling");
  auto remote = chooseAlgorithm(Collective::kAllReduce, 16 << 20, 4, false);
  REQUIRE(remote.ok());
  CHECK((*remote)->name == "ring");
  ::setenv("FTCOMM_ALGO_BROADCAST", "direct", 1);
  auto forced = chooseAlgorithm(Collective::kBroadcast, 8, 4, false);
  ::unsetenv("FTCOMM_ALGO_BROADCAST");
  REQUIRE_FALSE(forced.ok());
  CHECK_THAT(forced.status().message(), Catch::Contains("needs every member on this host"));
}
