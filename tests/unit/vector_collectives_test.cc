// Gather, scatter, allgatherv and alltoallv schedules, run in one process over the in-memory
// transport on 1 to 8 ranks, against the obvious reference.
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

std::int32_t value(int owner, int peer, std::size_t i) {
  return owner * 10000 + peer * 100 + static_cast<std::int32_t>(i);
}

CollectiveArgs int32Args(void* recv, const void* send, std::size_t count, int root = 0) {
  CollectiveArgs args;
  args.dtype = DataType::kInt32;
  args.recv = recv;
  args.send = send;
  args.count = count;
  args.root = root;
  args.tag = {1, 9};
  return args;
}

}  // namespace

TEST_CASE("linear gather and scatter move each rank's block to and from any root") {
  for (int ranks = 1; ranks <= 8; ++ranks) {
    const auto n = static_cast<std::size_t>(ranks);
    for (int root = 0; root < ranks; ++root) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{77}}) {
        INFO("ranks=" << ranks << " root=" << root << " count=" << count);
        LocalFabric gatherFabric(ranks), scatterFabric(ranks);
        std::vector<std::vector<std::int32_t>> own(n),
            gathered(n, std::vector<std::int32_t>(n * count, -1));
        std::vector<std::vector<std::int32_t>> source(n),
            scattered(n, std::vector<std::int32_t>(count, -1));
        std::vector<std::unique_ptr<CollectiveTask>> gathers, scatters;
        for (int r = 0; r < ranks; ++r) {
          const auto ur = static_cast<std::size_t>(r);
          for (std::size_t i = 0; i < count; ++i) own[ur].push_back(value(r, 0, i));
          for (int p = 0; p < ranks; ++p)
            for (std::size_t i = 0; i < count; ++i) source[ur].push_back(value(r, p, i));
          gathers.push_back(only(Collective::kGather)
                                .make(gatherFabric.transport(r),
                                      int32Args(gathered[ur].data(), own[ur].data(), count, root)));
          scatters.push_back(
              only(Collective::kScatter)
                  .make(scatterFabric.transport(r),
                        int32Args(scattered[ur].data(), source[ur].data(), count, root)));
        }
        REQUIRE(runAll(gatherFabric, gathers).toString() == "OK");
        REQUIRE(runAll(scatterFabric, scatters).toString() == "OK");
        for (int r = 0; r < ranks; ++r) {
          for (std::size_t i = 0; i < count; ++i) {
            CHECK(
                gathered[static_cast<std::size_t>(root)][static_cast<std::size_t>(r) * count + i] ==
                value(r, 0, i));
            CHECK(scattered[static_cast<std::size_t>(r)][i] == value(root, r, i));
          }
        }
      }
    }
  }
}

TEST_CASE("ring allgatherv and pairwise alltoallv place blocks of every size where they belong") {
  for (int ranks = 1; ranks <= 8; ++ranks) {
    const auto n = static_cast<std::size_t>(ranks);
    // Rank r owns r % 3 * 5 elements (zero included), placed in reverse rank order.
    std::vector<std::size_t> counts(n), displs(n);
    std::size_t total = 0;
    for (int r = ranks - 1; r >= 0; --r) {
      counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(r % 3) * 5;
      displs[static_cast<std::size_t>(r)] = total;
      total += counts[static_cast<std::size_t>(r)];
    }
    LocalFabric fabric(ranks);
    std::vector<std::vector<std::int32_t>> own(n), out(n, std::vector<std::int32_t>(total, -1));
    std::vector<std::unique_ptr<CollectiveTask>> tasks;
    for (int r = 0; r < ranks; ++r) {
      const auto ur = static_cast<std::size_t>(r);
      for (std::size_t i = 0; i < counts[ur]; ++i) own[ur].push_back(value(r, 0, i));
      auto args = int32Args(out[ur].data(), own[ur].data(), counts[ur]);
      args.recvCounts = counts;
      args.recvDispls = displs;
      tasks.push_back(only(Collective::kAllGatherV).make(fabric.transport(r), args));
    }
    REQUIRE(runAll(fabric, tasks).toString() == "OK");
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t owner = 0; owner < n; ++owner)
        for (std::size_t i = 0; i < counts[owner]; ++i)
          CHECK(out[r][displs[owner] + i] == value(static_cast<int>(owner), 0, i));

    // alltoallv: rank s sends rank d (s + d) % 4 elements.
    LocalFabric fabric2(ranks);
    std::vector<std::vector<std::size_t>> sc(n), sd(n), rc(n), rd(n);
    std::vector<std::vector<std::int32_t>> in(n), res(n);
    std::vector<std::unique_ptr<CollectiveTask>> tasks2;
    for (std::size_t r = 0; r < n; ++r) {
      std::size_t so = 0, ro = 0;
      for (std::size_t p = 0; p < n; ++p) {
        sc[r].push_back((r + p) % 4);
        sd[r].push_back(so);
        so += sc[r].back();
        rc[r].push_back((p + r) % 4);
        rd[r].push_back(ro);
        ro += rc[r].back();
        for (std::size_t i = 0; i < sc[r].back(); ++i)
          in[r].push_back(value(static_cast<int>(r), static_cast<int>(p), i));
      }
      res[r].assign(ro, -1);
      auto args = int32Args(res[r].data(), in[r].data(), 0);
      args.sendCounts = sc[r];
      args.sendDispls = sd[r];
      args.recvCounts = rc[r];
      args.recvDispls = rd[r];
      tasks2.push_back(
          only(Collective::kAllToAllV).make(fabric2.transport(static_cast<int>(r)), args));
    }
    REQUIRE(runAll(fabric2, tasks2).toString() == "OK");
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t p = 0; p < n; ++p)
        for (std::size_t i = 0; i < rc[r][p]; ++i)
          CHECK(res[r][rd[r][p] + i] == value(static_cast<int>(p), static_cast<int>(r), i));
  }
}

TEST_CASE("pairwise alltoallv refuses a block whose sizes disagree between its two ends") {
  LocalFabric fabric(2);
  std::vector<std::int32_t> in(8, 1), out0(8), out1(8);
  std::vector<std::size_t> sc0{1, 3}, sc1{1, 1}, rc0{1, 1}, rc1{2, 1}, displs{0, 4};
  std::vector<std::unique_ptr<CollectiveTask>> tasks;
  auto a0 = int32Args(out0.data(), in.data(), 0);
  a0.sendCounts = sc0;
  a0.sendDispls = displs;
  a0.recvCounts = rc0;
  a0.recvDispls = displs;
  auto a1 = int32Args(out1.data(), in.data(), 0);
  a1.sendCounts = sc1;
  a1.sendDispls = displs;
  a1.recvCounts = rc1;
  a1.recvDispls = displs;
  tasks.push_back(only(Collective::kAllToAllV).make(fabric.transport(0), a0));
  tasks.push_back(only(Collective::kAllToAllV).make(fabric.transport(1), a1));
  CHECK_THAT(runAll(fabric, tasks).toString(), Catch::StartsWith("Mismatch"));
}
