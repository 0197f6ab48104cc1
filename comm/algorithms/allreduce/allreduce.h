// The allreduce algorithms; each file opens with what it does and what it costs.
#pragma once

#include <memory>

#include "algorithms/collective_task.h"

namespace ftcomm::algorithms {

std::unique_ptr<CollectiveTask> makeRingAllReduce(transport::Transport& transport,
                                                  const CollectiveArgs& args);
std::unique_ptr<CollectiveTask> makeRecursiveDoublingAllReduce(transport::Transport& transport,
                                                               const CollectiveArgs& args);

}  // namespace ftcomm::algorithms
