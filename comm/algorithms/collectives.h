// The factories of every collective algorithm; each algorithm's file opens with what it does and
// what it costs, and registry.cc lists them with their names.
#pragma once

#include <cstring>
#include <memory>

#include "algorithms/collective_task.h"

namespace ftcomm::algorithms {

std::unique_ptr<CollectiveTask> makeRingAllReduce(transport::Transport& transport,
                                                  const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeRecursiveDoublingAllReduce(transport::Transport& transport,
                                                               const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeHierarchicalAllReduce(transport::Transport& transport,
                                                          const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeSplitAllReduce(transport::Transport& transport,
                                                   const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeHierarchicalAllGather(transport::Transport& transport,
                                                          const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeHierarchicalReduceScatter(transport::Transport& transport,
                                                              const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeRabenseifnerAllReduce(transport::Transport& transport,
                                                          const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeBruckAllGather(transport::Transport& transport,
                                                   const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeHierarchicalBroadcast(transport::Transport& transport,
                                                          const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeBinomialBroadcast(transport::Transport& transport,
                                                      const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeRingAllGather(transport::Transport& transport,
                                                  const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeDisseminationBarrier(transport::Transport& transport,
                                                         const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeBinomialReduce(transport::Transport& transport,
                                                   const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeRingReduceScatter(transport::Transport& transport,
                                                      const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makePairwiseAllToAll(transport::Transport& transport,
                                                     const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeLinearGather(transport::Transport& transport,
                                                 const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeLinearScatter(transport::Transport& transport,
                                                  const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeRingAllGatherV(transport::Transport& transport,
                                                   const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makePairwiseAllToAllV(transport::Transport& transport,
                                                      const CollectiveArgs& args);

// Shared memory only (algorithms/direct/): the peers' buffers are read, not sent.
std::unique_ptr<CollectiveTask> makeDirectAllReduce(transport::Transport& transport,
                                                    const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeDirectBroadcast(transport::Transport& transport,
                                                    const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeDirectAllGather(transport::Transport& transport,
                                                    const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeDirectReduceScatter(transport::Transport& transport,
                                                        const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeDirectReduce(transport::Transport& transport,
                                                 const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeDirectAllToAll(transport::Transport& transport,
                                                   const CollectiveArgs& args);

}  // namespace ftcomm::algorithms
