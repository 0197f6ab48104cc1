#include "algorithms/registry.h"

#include <array>
#include <cstdlib>
#include <string>

#include "algorithms/collectives.h"

namespace ftcomm::algorithms {

namespace {

const std::array kAlgorithms{
    AlgorithmInfo{Collective::kAllReduce, "ring",
                  "reduce-scatter then allgather around a ring; 2(n-1) steps, bandwidth-optimal",
                  &makeRingAllReduce},
    AlgorithmInfo{Collective::kAllReduce, "recursive_doubling",
                  "whole-vector exchanges with partners 1, 2, 4... apart; log2(n) steps, "
                  "latency-optimal",
                  &makeRecursiveDoublingAllReduce},
    AlgorithmInfo{Collective::kAllReduce, "rabenseifner",
                  "reduce-scatter by recursive halving, allgather by recursive doubling; "
                  "2 log2(n) steps, bandwidth-efficient",
                  &makeRabenseifnerAllReduce},
    AlgorithmInfo{Collective::kAllReduce, "hierarchical",
                  "reduce to each host's first member, allreduce among those across hosts, "
                  "broadcast within each host: one vector per host crosses the network",
                  &makeHierarchicalAllReduce},
    AlgorithmInfo{Collective::kBroadcast, "binomial",
                  "binomial tree from the root; ceil(log2 n) steps", &makeBinomialBroadcast},
    AlgorithmInfo{Collective::kBroadcast, "hierarchical",
                  "the root to one member per host, then each of those within its host: the data "
                  "crosses the network once per host",
                  &makeHierarchicalBroadcast},
    AlgorithmInfo{Collective::kAllGather, "ring",
                  "each block once around a ring; n-1 steps, bandwidth-optimal",
                  &makeRingAllGather},
    AlgorithmInfo{Collective::kAllGather, "bruck",
                  "blocks gathered so far sent 1, 2, 4... ranks back; ceil(log2 n) steps",
                  &makeBruckAllGather},
    AlgorithmInfo{Collective::kBarrier, "dissemination",
                  "signals to ranks 1, 2, 4... ahead; ceil(log2 n) steps, any n",
                  &makeDisseminationBarrier},
    AlgorithmInfo{Collective::kReduce, "binomial",
                  "binomial tree towards the root; ceil(log2 n) steps", &makeBinomialReduce},
    AlgorithmInfo{Collective::kReduceScatter, "ring",
                  "partial blocks around a ring; n-1 steps, bandwidth-optimal",
                  &makeRingReduceScatter},
    AlgorithmInfo{Collective::kAllToAll, "pairwise",
                  "step s pairs rank r with r+s and r-s; n-1 steps", &makePairwiseAllToAll},
    AlgorithmInfo{Collective::kGather, "linear",
                  "every rank sends its block straight to the root; 1 step, root receives n-1",
                  &makeLinearGather},
    AlgorithmInfo{Collective::kScatter, "linear",
                  "the root sends each rank its block; 1 step, root sends n-1", &makeLinearScatter},
    AlgorithmInfo{Collective::kAllGatherV, "ring",
                  "each rank's block, of its own size, once around a ring; n-1 steps",
                  &makeRingAllGatherV},
    AlgorithmInfo{Collective::kAllReduce, "direct",
                  "each rank reduces its slice straight from the peers' buffers, then reads "
                  "theirs; shared memory only",
                  &makeDirectAllReduce, true},
    AlgorithmInfo{Collective::kBroadcast, "direct",
                  "every rank reads the root's buffer; shared memory only", &makeDirectBroadcast,
                  true},
    AlgorithmInfo{Collective::kAllGather, "direct",
                  "every rank reads each peer's block; shared memory only", &makeDirectAllGather,
                  true},
    AlgorithmInfo{Collective::kReduceScatter, "direct",
                  "each rank reduces its block straight from the peers' inputs; shared memory "
                  "only",
                  &makeDirectReduceScatter, true},
    AlgorithmInfo{Collective::kReduce, "direct",
                  "each rank reduces its slice straight from every input, the root reads "
                  "the others' slices; shared memory only",
                  &makeDirectReduce, true},
    AlgorithmInfo{Collective::kAllToAll, "direct",
                  "each rank reads its block from every peer's input; shared memory only",
                  &makeDirectAllToAll, true},
    AlgorithmInfo{Collective::kAllToAllV, "pairwise",
                  "step s pairs rank r with r+s and r-s, blocks of any size; n-1 steps",
                  &makePairwiseAllToAllV},
    AlgorithmInfo{Collective::kAllReduce, "hierarchical_split",
                  "reduce-scatter within each host, allreduce of each piece across hosts by the "
                  "members at its place, allgather within each host: every member carries a "
                  "share between hosts (hosts of one size; otherwise as hierarchical)",
                  &makeSplitAllReduce},
    AlgorithmInfo{Collective::kAllGather, "hierarchical",
                  "gather to each host's first member, allgather among those across hosts, "
                  "broadcast within each host: each block crosses the network once per host",
                  &makeHierarchicalAllGather},
    AlgorithmInfo{Collective::kReduceScatter, "hierarchical",
                  "reduce to each host's first member, reduce-scatter of the hosts' blocks among "
                  "those across hosts, scatter within each host",
                  &makeHierarchicalReduceScatter},
};

// Below kAllReduceSmallBytes a whole-vector exchange per step beats the ring's 2(n-1) steps; up
// to kAllReduceMediumBytes Rabenseifner's log steps win; above, the ring's neighbour-only
// traffic does. Two ranks exchange whole vectors up to kTwoRankExchangeBytes: beyond it the
// ring's segments, which overlap the reduction with the transfer and keep UCX on its
// pipelined protocol, win over a link between hosts (docs/BENCHMARKS.md, "Between hosts").
constexpr std::size_t kAllReduceSmallBytes = 64 * 1024;
constexpr std::size_t kAllReduceMediumBytes = 4 << 20;
constexpr std::size_t kTwoRankExchangeBytes = 512 * 1024;
// From here, with every peer on this host, reading the peers' buffers beats messages (2 ranks;
// 4x this beyond).
constexpr std::size_t kDirectBytes = 32 * 1024;
constexpr std::size_t kAllGatherSmallBytes = 64 * 1024;  // the bytes of the whole result

}  // namespace

std::size_t directFromBytes(int ranks) {
  // Beyond two ranks, the direct algorithms' notice rounds cost more (each waits for every
  // rank), so messages take over for longer (measured at 4 ranks on 2 cores).
  return ranks <= 2 ? kDirectBytes : 4 * kDirectBytes;
}

namespace {

// The variable that names a collective's algorithm, by Collective's value.
constexpr std::array<const char*, 11> kAlgorithmVariables{
    "FTCOMM_ALGO_ALLREDUCE",  "FTCOMM_ALGO_BROADCAST", "FTCOMM_ALGO_ALLGATHER",
    "FTCOMM_ALGO_BARRIER",    "FTCOMM_ALGO_REDUCE",    "FTCOMM_ALGO_REDUCESCATTER",
    "FTCOMM_ALGO_ALLTOALL",   "FTCOMM_ALGO_GATHER",    "FTCOMM_ALGO_SCATTER",
    "FTCOMM_ALGO_ALLGATHERV", "FTCOMM_ALGO_ALLTOALLV"};

static_assert(kAlgorithmVariables.size() == static_cast<std::size_t>(Collective::kAllToAllV) + 1,
              "one FTCOMM_ALGO_ variable per Collective");

const char* environmentVariable(Collective collective) {
  return kAlgorithmVariables[static_cast<std::size_t>(collective)];
}

}  // namespace

std::span<const AlgorithmInfo> allAlgorithms() {
  return kAlgorithms;
}

const AlgorithmInfo* findAlgorithm(Collective collective, std::string_view name) {
  for (const auto& algorithm : kAlgorithms) {
    if (algorithm.collective == collective && algorithm.name == name) return &algorithm;
  }
  return nullptr;
}

std::uint32_t forcedAlgorithms() {
  std::uint32_t forced = 0;
  for (std::size_t c = 0; c < kAlgorithmVariables.size(); ++c) {
    const char* chosen = std::getenv(kAlgorithmVariables[c]);
    if (chosen != nullptr && *chosen != '\0') forced |= 1u << c;
  }
  return forced;
}

Result<const AlgorithmInfo*> chooseAlgorithm(Collective collective, std::size_t bytes, int ranks,
                                             bool peersReadable) {
  const char* variable = environmentVariable(collective);
  if (const char* chosen = std::getenv(variable); chosen != nullptr && *chosen != '\0') {
    if (const AlgorithmInfo* algorithm = findAlgorithm(collective, chosen)) {
      if (algorithm->readsPeers && !peersReadable && ranks > 1) {
        return invalidArgument(std::string(variable) + "=" + chosen +
                               " reads the peers' memory: it needs every member on this host, "
                               "over shared memory");
      }
      return algorithm;
    }
    std::string known;
    for (const auto& algorithm : kAlgorithms) {
      if (algorithm.collective == collective) known += " " + std::string(algorithm.name);
    }
    return invalidArgument(std::string(variable) + "=" + chosen +
                           " names no algorithm; known:" + known);
  }
  return defaultAlgorithm(collective, bytes, ranks, peersReadable);
}

Result<const AlgorithmInfo*> defaultAlgorithm(Collective collective, std::size_t bytes, int ranks,
                                              bool peersReadable) {
  if (peersReadable && ranks > 1 && bytes >= directFromBytes(ranks)) {
    if (const AlgorithmInfo* direct = findAlgorithm(collective, "direct")) return direct;
  }
  if (collective == Collective::kAllReduce) {
    const char* name = ranks <= 2 ? (bytes <= kTwoRankExchangeBytes ? "recursive_doubling" : "ring")
                       : bytes <= kAllReduceSmallBytes  ? "recursive_doubling"
                       : bytes <= kAllReduceMediumBytes ? "rabenseifner"
                                                        : "ring";
    return findAlgorithm(collective, name);
  }
  if (collective == Collective::kAllGather) {
    return findAlgorithm(collective, bytes <= kAllGatherSmallBytes ? "bruck" : "ring");
  }
  // The other collectives have one algorithm so far: the one registered.
  for (const auto& algorithm : kAlgorithms) {
    if (algorithm.collective == collective) return &algorithm;
  }
  return internalError("no algorithm registered for this collective");
}

}  // namespace ftcomm::algorithms
