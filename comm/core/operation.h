// One operation in flight on the engine: a collective's schedule or a point-to-point request,
// its Work, its deadline, and what its schedule points into (counts of the V collectives).
//
// Thread-safety: owned by the engine, under its mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/collective_task.h"
#include "core/work_state.h"
#include "transport/transport.h"

namespace ftcomm::detail {

class CommState;

struct Operation {
  std::shared_ptr<CommState> comm;
  std::shared_ptr<WorkState> work;
  Clock::time_point deadline;
  std::chrono::milliseconds timeout{0};  // what the deadline was set from, for the error
  // What it is, for errors (what()): the call's name and sequence number, and for a send or
  // receive its peer and tag. Kept as parts: most operations never need the text.
  const char* name = "";
  std::uint64_t seq = 0;
  int peer = -1;
  int tag = 0;
  bool send = false;
  bool collective = true;
  // Its task waits on shared memory that no message announces (an inline collective).
  bool watchesSharedMemory = false;
  std::unique_ptr<algorithms::CollectiveTask> task;  // collectives
  transport::RequestPtr request;                     // send / recv
  std::vector<std::size_t> counts;                   // storage the task's spans point into
  // Set once the operation failed while receives into its buffers may still be landing
  // (Transport::settled): the Work completes with it once they have, or at settleBy.
  std::optional<Status> failing;
  Clock::time_point settleBy{};

  // "allReduce #7 of world (epoch 1)", "send #3 of world (epoch 1) to rank 2 tag 5".
  std::string what() const;
};

}  // namespace ftcomm::detail
