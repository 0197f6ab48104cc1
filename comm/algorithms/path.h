// The one place that chooses how a collective call runs: through the shared-memory slots (the
// inline collectives, algorithms/shm/) or by one of the registry's algorithms
// (algorithms/registry.h), as the communicator's tuning profile says for the collective, its
// rank count and its size (tuning/plan_table.h). FTCOMM_ALGO_<COLLECTIVE> still forces a
// registry algorithm by name, for measuring and for tests.
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <cstddef>

#include "algorithms/registry.h"
#include "algorithms/shm/inline_collective.h"
#include "tuning/plan_table.h"

namespace ftcomm::algorithms {

struct Path {
  // chunks > 0: the inline slots, in these chunks (or their direct form).
  detail::InlineChunking chunking;
  // Otherwise the registry's algorithm.
  const AlgorithmInfo* algorithm = nullptr;
  // The algorithm's pipeline segment from the profile (CollectiveArgs::segmentBytes; 0: its own).
  std::size_t segmentBytes = 0;
};

struct PathQuery {
  Collective collective = Collective::kAllReduce;
  std::size_t count = 0;  // the call's count argument
  DataType dtype = DataType::kFloat32;
  std::size_t bytes = 0;  // as the algorithm choice counts them (CollectiveCall::choiceBytes)
  int ranks = 1;
  bool peersReadable = false;  // the transport reads every peer's memory
  bool hasInline = false;      // the communicator has inline slots on every member
  bool forced = false;         // FTCOMM_ALGO_<COLLECTIVE> names this collective's algorithm
  // The members are on several hosts, and some host has more than one of them.
  bool spansHosts = false;
};

Result<Path> choosePath(const tuning::PlanTable& plan, const PathQuery& query);

}  // namespace ftcomm::algorithms
