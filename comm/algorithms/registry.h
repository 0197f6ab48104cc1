// The one table of collective algorithms: each has a name and a description (so it can be
// chosen by name at run time, e.g. FTCOMM_ALGO_ALLREDUCE=ring) and a factory. Adding an
// algorithm is one file and one row here.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "algorithms/collective_task.h"

namespace ftcomm::algorithms {

enum class Collective {
  kAllReduce,
  kBroadcast,
  kAllGather,
  kBarrier,
  kReduce,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kAllGatherV,
  kAllToAllV,
};

using TaskFactory = std::unique_ptr<CollectiveTask> (*)(transport::Transport&,
                                                        const CollectiveArgs&);

struct AlgorithmInfo {
  Collective collective;
  std::string_view name;
  std::string_view description;
  TaskFactory make;
  // Reads the peers' memory (Transport::readPeer): only where the transport can.
  bool readsPeers = false;
};

std::span<const AlgorithmInfo> allAlgorithms();
const AlgorithmInfo* findAlgorithm(Collective collective, std::string_view name);

// The algorithm for a call: the one named by FTCOMM_ALGO_<COLLECTIVE> if set (an unknown name is
// an error naming the known ones), else the default for the message size. `peersReadable`: the
// transport reads every peer's memory (Transport::readPeer), so the direct algorithms apply.
// The collectives whose algorithm FTCOMM_ALGO_<COLLECTIVE> names now: bit (1 << Collective).
std::uint32_t forcedAlgorithms();

// From this many bytes (as chooseAlgorithm counts them) on, a collective with every peer on this
// host reads the peers' buffers (the "direct" algorithms) by default.
std::size_t directFromBytes(int ranks);

Result<const AlgorithmInfo*> chooseAlgorithm(Collective collective, std::size_t bytes, int ranks,
                                             bool peersReadable = false);
// chooseAlgorithm without the environment: the default for the message size. For callers that
// know FTCOMM_ALGO_<COLLECTIVE> is unset (forcedAlgorithms(), read once per communicator):
// getenv scans the whole environment, about a tenth of a small collective's time under mpirun.
Result<const AlgorithmInfo*> defaultAlgorithm(Collective collective, std::size_t bytes, int ranks,
                                              bool peersReadable = false);

}  // namespace ftcomm::algorithms
