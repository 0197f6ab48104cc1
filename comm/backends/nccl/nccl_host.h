// NcclCommunicator::create() with the vendor API given: the tests drive the whole host-side path
// (the rendezvous's key-value store, revocation, reconfigure) with the scripted FakeNcclApi.
//
// Thread-safety: as NcclCommunicator::create().
#pragma once

#include <memory>

#include "backends/nccl/nccl_api.h"
#include "ftcomm/nccl_communicator.h"

namespace ftcomm::nccl {

Result<std::unique_ptr<NcclCommunicator>> createOverHost(Communicator& host,
                                                         const NcclOptions& options,
                                                         std::shared_ptr<NcclApi> api);

}  // namespace ftcomm::nccl
