// The inside of a PendingCommunicator: a creation running on its own thread, or a split whose
// collective is in flight on the parent.
#pragma once

#include <chrono>
#include <memory>

#include "ftcomm/communicator.h"

namespace ftcomm {

class PendingCommunicator::Impl {
 public:
  virtual ~Impl() = default;
  virtual bool ready() = 0;
  // Called once; Timeout while not ready after `timeout`.
  virtual Result<std::unique_ptr<Communicator>> take(std::chrono::milliseconds timeout) = 0;
};

}  // namespace ftcomm
