// Broadcast, allgather and barrier schedules, run in one process over the in-memory transport,
// on 1 to 8 ranks, against the obvious reference.
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <span>
#include <vector>

#include "algorithms/registry.h"
#include "local_transport.h"

using namespace ftcomm;
using namespace ftcomm::algorithms;
using namespace ftcomm::testing;

namespace {

// Every algorithm of a collective: the message-based ones and, over this in-process fabric
// (which can read its peers' memory), the direct ones.
std::vector<const AlgorithmInfo*> algorithmsOf(Collective collective) {
  std::vector<const AlgorithmInfo*> found;
  for (const AlgorithmInfo& algorithm : allAlgorithms()) {
    if (algorithm.collective == collective) found.push_back(&algorithm);
  }
  REQUIRE_FALSE(found.empty());
  return found;
}

// Runs `algorithm` as an allgather of `count` floats a rank and checks every rank's result;
// `hosts` places the ranks on hosts for the node-aware algorithms.
void checkAllGather(const AlgorithmInfo& algorithm, int ranks, std::size_t count, bool inPlace,
                    std::span<const int> hosts = {}) {
  LocalFabric fabric(ranks);
  const std::size_t total = count * static_cast<std::size_t>(ranks);
  std::vector<std::vector<float>> out(static_cast<std::size_t>(ranks),
                                      std::vector<float>(total, -1.0f));
  std::vector<std::vector<float>> own(static_cast<std::size_t>(ranks));
  std::vector<float> expected(total);
  std::vector<std::unique_ptr<CollectiveTask>> tasks;
  for (int r = 0; r < ranks; ++r) {
    auto& mine = own[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < count; ++i) {
      mine.push_back(static_cast<float>(r) * 1000.0f + static_cast<float>(i));
      expected[static_cast<std::size_t>(r) * count + i] = mine.back();
    }
    auto& result = out[static_cast<std::size_t>(r)];
    if (inPlace)
      std::copy(mine.begin(), mine.end(),
                result.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * count));
    CollectiveArgs args;
    args.dtype = DataType::kFloat32;
    args.count = count;
    args.hosts = hosts;
    args.recv = result.data();
    args.send = inPlace ? result.data() + static_cast<std::size_t>(r) * count : mine.data();
    tasks.push_back(algorithm.make(fabric.transport(r), args));
  }
  INFO(algorithm.name << " ranks=" << ranks << " count=" << count << (inPlace ? " in place" : ""));
  REQUIRE(runAll(fabric, tasks).toString() == "OK");
  for (const auto& result : out) CHECK(result == expected);
}

// Runs `algorithm` as a reduce-scatter (an average) of `count` doubles a rank and checks that
// rank r holds block r; `hosts` places the ranks on hosts for the node-aware algorithms.
void checkReduceScatter(const AlgorithmInfo& algorithm, int ranks, std::size_t count,
                        std::span<const int> hosts = {}) {
  LocalFabric fabric(ranks);
  const std::size_t total = count * static_cast<std::size_t>(ranks);
  std::vector<std::vector<double>> in(static_cast<std::size_t>(ranks)), out(in.size());
  std::vector<double> sum(total, 0.0);
  std::vector<std::unique_ptr<CollectiveTask>> tasks;
  for (int r = 0; r < ranks; ++r) {
    auto& mine = in[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < total; ++i) {
      mine.push_back(static_cast<double>(i) + 0.5 * r);
      sum[i] += mine.back();
    }
    out[static_cast<std::size_t>(r)].assign(count, -1.0);
    CollectiveArgs args;
    args.dtype = DataType::kFloat64;
    args.op = ReduceOp::kAvg;
    args.count = count;
    args.hosts = hosts;
    args.send = mine.data();
    args.recv = out[static_cast<std::size_t>(r)].data();
    tasks.push_back(algorithm.make(fabric.transport(r), args));
  }
  INFO(algorithm.name << " ranks=" << ranks << " count=" << count);
  REQUIRE(runAll(fabric, tasks).toString() == "OK");
  for (int r = 0; r < ranks; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      CHECK(out[static_cast<std::size_t>(r)][i] ==
            Approx(sum[static_cast<std::size_t>(r) * count + i] / ranks));
    }
  }
}

// Blocks of hosts, interleaved hosts, uneven hosts, one host, every rank a host of its own.
const std::vector<std::vector<int>> kHostLayouts = {
    {0, 0, 1, 1}, {0, 1, 0, 1},       {0, 0, 0, 1, 1},         {5, 5, 5, 5},
    {0, 1, 2},    {3, 1, 3, 1, 2, 2}, {0, 0, 1, 1, 2, 2, 3, 3}};

}  // namespace

TEST_CASE("binomial broadcast delivers the root's buffer to every rank, from any root") {
  for (const AlgorithmInfo* each : algorithmsOf(Collective::kBroadcast)) {
    const AlgorithmInfo& algorithm = *each;
    INFO(algorithm.name);
    for (int ranks = 1; ranks <= 8; ++ranks) {
      for (int root = 0; root < ranks; ++root) {
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1027}}) {
          LocalFabric fabric(ranks);
          std::vector<std::vector<std::int64_t>> buffers(static_cast<std::size_t>(ranks),
                                                         std::vector<std::int64_t>(count, -1));
          std::vector<std::int64_t> input(count);
          for (std::size_t i = 0; i < count; ++i)
            input[i] = static_cast<std::int64_t>(i * 3 + root);
          std::vector<std::unique_ptr<CollectiveTask>> tasks;
          for (int r = 0; r < ranks; ++r) {
            CollectiveArgs args;
            args.dtype = DataType::kInt64;
            args.count = count;
            args.root = root;
            args.recv = buffers[static_cast<std::size_t>(r)].data();
            args.send = r == root ? input.data() : args.recv;
            tasks.push_back(algorithm.make(fabric.transport(r), args));
          }
          INFO("ranks=" << ranks << " root=" << root << " count=" << count);
          REQUIRE(runAll(fabric, tasks).toString() == "OK");
          for (const auto& buffer : buffers) CHECK(buffer == input);
        }
      }
    }
  }
}

TEST_CASE(
    "the hierarchical broadcast delivers the root's buffer with the ranks spread over hosts") {
  const AlgorithmInfo* hierarchical = findAlgorithm(Collective::kBroadcast, "hierarchical");
  REQUIRE(hierarchical != nullptr);
  for (const auto& hosts : kHostLayouts) {
    const int ranks = static_cast<int>(hosts.size());
    for (int root = 0; root < ranks; ++root) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{100003}}) {
        LocalFabric fabric(ranks);
        std::vector<std::vector<std::int32_t>> buffers(static_cast<std::size_t>(ranks),
                                                       std::vector<std::int32_t>(count, -1));
        std::vector<std::int32_t> input(count);
        for (std::size_t i = 0; i < count; ++i) input[i] = static_cast<std::int32_t>(i * 7 + root);
        std::vector<std::unique_ptr<CollectiveTask>> tasks;
        for (int r = 0; r < ranks; ++r) {
          CollectiveArgs args;
          args.dtype = DataType::kInt32;
          args.count = count;
          args.root = root;
          args.hosts = hosts;
          args.recv = buffers[static_cast<std::size_t>(r)].data();
          args.send = r == root ? input.data() : args.recv;
          tasks.push_back(hierarchical->make(fabric.transport(r), args));
        }
        INFO("hosts of " << ranks << " ranks, root=" << root << " count=" << count);
        REQUIRE(runAll(fabric, tasks).toString() == "OK");
        for (const auto& buffer : buffers) CHECK(buffer == input);
      }
    }
  }
}

TEST_CASE(
    "every allgather algorithm puts each block in rank order on every rank, in place or not") {
  for (const AlgorithmInfo* algorithm : algorithmsOf(Collective::kAllGather)) {
    for (int ranks = 1; ranks <= 8; ++ranks) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{333}}) {
        for (bool inPlace : {false, true}) checkAllGather(*algorithm, ranks, count, inPlace);
      }
    }
  }
}

TEST_CASE(
    "the hierarchical allgather puts each block in rank order with the ranks spread over "
    "hosts") {
  const AlgorithmInfo* hierarchical = findAlgorithm(Collective::kAllGather, "hierarchical");
  REQUIRE(hierarchical != nullptr);
  for (const auto& hosts : kHostLayouts) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{10007}}) {
      for (bool inPlace : {false, true}) {
        INFO("hosts of " << hosts.size() << " ranks");
        checkAllGather(*hierarchical, static_cast<int>(hosts.size()), count, inPlace, hosts);
      }
    }
  }
}

TEST_CASE("the dissemination barrier completes on 1 to 8 ranks, and not while a rank is missing") {
  for (const AlgorithmInfo* each : algorithmsOf(Collective::kBarrier)) {
    const AlgorithmInfo& algorithm = *each;
    INFO(algorithm.name);
    for (int ranks = 1; ranks <= 8; ++ranks) {
      LocalFabric fabric(ranks);
      std::vector<std::unique_ptr<CollectiveTask>> tasks;
      for (int r = 0; r < ranks; ++r)
        tasks.push_back(algorithm.make(fabric.transport(r), CollectiveArgs{}));
      INFO("ranks=" << ranks);
      REQUIRE(runAll(fabric, tasks).toString() == "OK");
    }
    // With rank 2 of 4 absent, nobody else may get through.
    LocalFabric fabric(4);
    std::vector<std::unique_ptr<CollectiveTask>> tasks;
    for (int r : {0, 1, 3}) tasks.push_back(algorithm.make(fabric.transport(r), CollectiveArgs{}));
    Status status = runAll(fabric, tasks);
    CHECK_THAT(status.message(), Catch::Contains("deadlock"));
  }
}

TEST_CASE("binomial reduce leaves the reduction on the root only, from any root") {
  for (const AlgorithmInfo* each : algorithmsOf(Collective::kReduce)) {
    const AlgorithmInfo& algorithm = *each;
    INFO(algorithm.name);
    for (int ranks = 1; ranks <= 8; ++ranks) {
      for (int root = 0; root < ranks; ++root) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
          const std::size_t count = 257;
          LocalFabric fabric(ranks);
          std::vector<std::vector<std::int32_t>> in(static_cast<std::size_t>(ranks)),
              out(in.size());
          std::vector<std::int32_t> expected(count, op == ReduceOp::kSum ? 0 : INT32_MIN);
          std::vector<std::unique_ptr<CollectiveTask>> tasks;
          for (int r = 0; r < ranks; ++r) {
            auto& mine = in[static_cast<std::size_t>(r)];
            for (std::size_t i = 0; i < count; ++i) {
              mine.push_back(
                  static_cast<std::int32_t>((i * 7 + static_cast<std::size_t>(r) * 13) % 101));
              expected[i] =
                  op == ReduceOp::kSum ? expected[i] + mine[i] : std::max(expected[i], mine[i]);
            }
            out[static_cast<std::size_t>(r)].assign(count, -1);
            CollectiveArgs args;
            args.dtype = DataType::kInt32;
            args.op = op;
            args.count = count;
            args.root = root;
            args.send = mine.data();
            args.recv = out[static_cast<std::size_t>(r)].data();
            tasks.push_back(algorithm.make(fabric.transport(r), args));
          }
          INFO("ranks=" << ranks << " root=" << root << " op=" << reduceOpName(op));
          REQUIRE(runAll(fabric, tasks).toString() == "OK");
          for (int r = 0; r < ranks; ++r) {
            if (r == root)
              CHECK(out[static_cast<std::size_t>(r)] == expected);
            else
              CHECK(out[static_cast<std::size_t>(r)] == std::vector<std::int32_t>(count, -1));
          }
        }
      }
    }
  }
}

TEST_CASE("every reduce algorithm leaves the average on the root, split among the ranks or not") {
  for (const AlgorithmInfo* each : algorithmsOf(Collective::kReduce)) {
    const AlgorithmInfo& algorithm = *each;
    INFO(algorithm.name);
    // 131075 floats pass the size from which the direct reduce splits the work among the ranks.
    for (std::size_t count : {std::size_t{257}, std::size_t{131075}}) {
      for (int ranks = 1; ranks <= 5; ++ranks) {
        for (int root : {0, ranks - 1}) {
          LocalFabric fabric(ranks);
          std::vector<std::vector<float>> in(static_cast<std::size_t>(ranks)), out(in.size());
          std::vector<float> sum(count, 0.0f);  // small integers: every order of adding is exact
          std::vector<std::unique_ptr<CollectiveTask>> tasks;
          for (int r = 0; r < ranks; ++r) {
            auto& mine = in[static_cast<std::size_t>(r)];
            for (std::size_t i = 0; i < count; ++i) {
              mine.push_back(static_cast<float>((i * 7 + static_cast<std::size_t>(r) * 13) % 101));
              sum[i] += mine.back();
            }
            out[static_cast<std::size_t>(r)].assign(count, -1.0f);
            CollectiveArgs args;
            args.dtype = DataType::kFloat32;
            args.op = ReduceOp::kAvg;
            args.count = count;
            args.root = root;
            args.send = mine.data();
            args.recv = out[static_cast<std::size_t>(r)].data();
            tasks.push_back(algorithm.make(fabric.transport(r), args));
          }
          INFO("ranks=" << ranks << " root=" << root << " count=" << count);
          REQUIRE(runAll(fabric, tasks).toString() == "OK");
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < count; ++i) {
            if (out[static_cast<std::size_t>(root)][i] != sum[i] / static_cast<float>(ranks))
              ++wrong;
          }
          CHECK(wrong == 0);
        }
      }
    }
  }
}

TEST_CASE("every reduce-scatter algorithm leaves block r of the reduction on rank r") {
  for (const AlgorithmInfo* algorithm : algorithmsOf(Collective::kReduceScatter)) {
    for (int ranks = 1; ranks <= 8; ++ranks) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{300}}) {
        checkReduceScatter(*algorithm, ranks, count);
      }
    }
  }
}

TEST_CASE(
    "the hierarchical reduce-scatter leaves block r on rank r with the ranks spread over "
    "hosts") {
  const AlgorithmInfo* hierarchical = findAlgorithm(Collective::kReduceScatter, "hierarchical");
  REQUIRE(hierarchical != nullptr);
  for (const auto& hosts : kHostLayouts) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{10007}}) {
      INFO("hosts of " << hosts.size() << " ranks");
      checkReduceScatter(*hierarchical, static_cast<int>(hosts.size()), count, hosts);
    }
  }
}

TEST_CASE("pairwise all-to-all sends block j of rank i to block i of rank j, in place or not") {
  for (const AlgorithmInfo* each : algorithmsOf(Collective::kAllToAll)) {
    const AlgorithmInfo& algorithm = *each;
    INFO(algorithm.name);
    for (int ranks = 1; ranks <= 8; ++ranks) {
      for (bool inPlace : {false, true}) {
        const std::size_t count = 5;
        LocalFabric fabric(ranks);
        const std::size_t total = count * static_cast<std::size_t>(ranks);
        std::vector<std::vector<std::uint16_t>> in(static_cast<std::size_t>(ranks)), out(in.size());
        std::vector<std::unique_ptr<CollectiveTask>> tasks;
        for (int r = 0; r < ranks; ++r) {
          auto& mine = in[static_cast<std::size_t>(r)];
          for (std::size_t i = 0; i < total; ++i)
            mine.push_back(static_cast<std::uint16_t>(r * 1000 + i));
          out[static_cast<std::size_t>(r)] = inPlace ? mine : std::vector<std::uint16_t>(total, 0);
          CollectiveArgs args;
          args.dtype = DataType::kBFloat16;  // any 2-byte type: all-to-all moves bytes
          args.count = count;
          args.recv = out[static_cast<std::size_t>(r)].data();
          args.send = inPlace ? args.recv : mine.data();
          tasks.push_back(algorithm.make(fabric.transport(r), args));
        }
        INFO("ranks=" << ranks << (inPlace ? " in place" : ""));
        REQUIRE(runAll(fabric, tasks).toString() == "OK");
        for (int j = 0; j < ranks; ++j) {
          for (int i = 0; i < ranks; ++i) {
            for (std::size_t k = 0; k < count; ++k) {
              CHECK(out[static_cast<std::size_t>(j)][static_cast<std::size_t>(i) * count + k] ==
                    in[static_cast<std::size_t>(i)][static_cast<std::size_t>(j) * count + k]);
            }
          }
        }
      }
    }
  }
}
