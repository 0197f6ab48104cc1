// ftcomm-bench's calls of ftcomm's collectives by name, and --overlap: how much of a nonblocking
// collective runs while the application thread does something else.
#pragma once

#include <string>

#include "bench_options.h"
#include "ftcomm/communicator.h"

namespace ftcomm::bench {

// Posts `op` (allreduce, broadcast from rank 0, reduce to rank 0, allgather, reducescatter,
// alltoall) on `c`; runFtcomm also waits for it.
Work postFtcomm(Communicator& c, const std::string& op, DataType dtype, const void* send,
                void* recv, std::size_t count, ReduceOp reduceOp = ReduceOp::kSum);
Status runFtcomm(Communicator& c, const std::string& op, DataType dtype, const void* send,
                 void* recv, std::size_t count, ReduceOp reduceOp = ReduceOp::kSum);

// --overlap: prints T (post and wait), M (post, sleep T, wait) and the overlap (2T - M) / T per
// size on rank 0; 1 where a call failed, else 0.
int runOverlap(Communicator& c, const Options& o, int rank, int n);

}  // namespace ftcomm::bench
