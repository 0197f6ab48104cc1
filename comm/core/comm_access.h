// The state behind a Communicator, for the library's parts beside the facade that build on it:
// the NCCL backend's bootstrap (the rendezvous) and RMA windows (the engine, the UCX endpoints).
//
// Thread-safety: as CommState's.
#pragma once

#include <memory>

#include "core/comm_state.h"
#include "ftcomm/communicator.h"

namespace ftcomm::detail {

struct CommAccess {
  static const std::shared_ptr<CommState>& state(const Communicator& comm) { return comm.state_; }
};

}  // namespace ftcomm::detail
