// Broadcast, allgather and barrier schedules, run in one process over the in-memory transport,
// on 1 to 8 ranks, against the obvious reference.
#include <catch2/catch.hpp>

#include <vector>

#include "algorithms/registry.h"
#include "local_transport.h"

using namespace ftcomm;
using namespace ftcomm::algorithms;
using namespace ftcomm::testing;

namespace {

const AlgorithmInfo& only(Collective collective) {
  auto chosen = chooseAlgorithm(collective, 0, 2);
  REQUIRE(chosen.ok());
  return **chosen;
}

}  // namespace

TEST_CASE("binomial broadcast delivers the root's buffer to every rank, from any root") {
  const AlgorithmInfo& algorithm = only(Collective::kBroadcast);
  for (int ranks = 1; ranks <= 8; ++ranks) {
    for (int root = 0; root < ranks; ++root) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1027}}) {
        LocalFabric fabric(ranks);
        std::vector<std::vector<std::int64_t>> buffers(static_cast<std::size_t>(ranks),
                                                       std::vector<std::int64_t>(count, -1));
        std::vector<std::int64_t> input(count);
        for (std::size_t i = 0; i < count; ++i) input[i] = static_cast<std::int64_t>(i * 3 + root);
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

TEST_CASE("ring allgather puts every rank's block in rank order on every rank, in place or not") {
  const AlgorithmInfo& algorithm = only(Collective::kAllGather);
  for (int ranks = 1; ranks <= 8; ++ranks) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{333}}) {
      for (bool inPlace : {false, true}) {
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
            std::copy(
                mine.begin(), mine.end(),
                result.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * count));
          CollectiveArgs args;
          args.dtype = DataType::kFloat32;
          args.count = count;
          args.recv = result.data();
          args.send = inPlace ? result.data() + static_cast<std::size_t>(r) * count : mine.data();
          tasks.push_back(algorithm.make(fabric.transport(r), args));
        }
        INFO("ranks=" << ranks << " count=" << count << (inPlace ? " in place" : ""));
        REQUIRE(runAll(fabric, tasks).toString() == "OK");
        for (const auto& result : out) CHECK(result == expected);
      }
    }
  }
}

TEST_CASE("the dissemination barrier completes on 1 to 8 ranks, and not while a rank is missing") {
  const AlgorithmInfo& algorithm = only(Collective::kBarrier);
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
