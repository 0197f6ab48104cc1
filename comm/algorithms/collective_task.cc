#include "algorithms/collective_task.h"
#include "transport/copy_bytes.h"

#include <cstring>

#include "algorithms/reduction.h"

namespace ftcomm::algorithms {

Result<bool> TaskBase::stepDone() const {
  for (const auto& request : step_) {
    if (!request->done()) return false;
    if (!request->status().ok()) return request->status();
  }
  return true;
}

void TaskBase::copyInput() const {
  if (args_.send != args_.recv && args_.count > 0) {
    transport::copyBytes(args_.recv, args_.send, args_.count * elementBytes_);
  }
}

Result<bool> TaskBase::finishReduction(void* data, std::size_t count) const {
  if (args_.op == ReduceOp::kAvg) {
    FTCOMM_RETURN_IF_ERROR(finishAverage(args_.dtype, data, count, transport_.size()));
  }
  return true;
}

}  // namespace ftcomm::algorithms
