#include "algorithms/registry.h"

#include <array>
#include <cstdlib>
#include <string>

#include "algorithms/allreduce/allreduce.h"

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
};

// Below this a whole-vector exchange per step beats the ring's 2(n-1) steps.
constexpr std::size_t kAllReduceSmallBytes = 64 * 1024;

const char* environmentVariable(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "FTCOMM_ALGO_ALLREDUCE";
  }
  return "";
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

Result<const AlgorithmInfo*> chooseAlgorithm(Collective collective, std::size_t bytes, int ranks) {
  const char* variable = environmentVariable(collective);
  if (const char* chosen = std::getenv(variable); chosen != nullptr && *chosen != '\0') {
    if (const AlgorithmInfo* algorithm = findAlgorithm(collective, chosen)) return algorithm;
    std::string known;
    for (const auto& algorithm : kAlgorithms) {
      if (algorithm.collective == collective) known += " " + std::string(algorithm.name);
    }
    return invalidArgument(std::string(variable) + "=" + chosen +
                           " names no algorithm; known:" + known);
  }
  switch (collective) {
    case Collective::kAllReduce:
      return findAlgorithm(
          collective, bytes <= kAllReduceSmallBytes || ranks <= 2 ? "recursive_doubling" : "ring");
  }
  return internalError("no algorithm for this collective");
}

}  // namespace ftcomm::algorithms
