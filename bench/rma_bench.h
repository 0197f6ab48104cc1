// ftcomm-bench --op put|get: rank 0's one-sided operations on rank 1's window, beside raw UCX
// in the same run (--compare ucx, ucx-peer; raw_ucx_peer.h).
#pragma once

#include "bench_options.h"
#include "ftcomm/communicator.h"

namespace ftcomm::bench {

bool isOneSided(const std::string& op);
// Prints the table (or JSON lines) on rank 0; the number of failures.
int runRmaBench(Communicator& comm, const Options& options);

}  // namespace ftcomm::bench
