// Which transport a communicator uses for each peer. FTCOMM_TRANSPORT=auto (the default) reaches
// members on this host through shared memory and the others through UCX; `shm` insists on
// shared memory (a member elsewhere is an error); `ucx` uses UCX for everyone.
//
// Thread-safety: makeTransportLocked needs the engine's mutex; the rest is values.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/engine.h"
#include "transport/shm/shm_domain.h"
#include "transport/transport.h"

namespace ftcomm::detail {

enum class TransportMode { kAuto, kUcx, kShm };

// FTCOMM_TRANSPORT, or a clear error for anything but auto, ucx and shm.
Result<TransportMode> transportModeFromEnv();
const char* transportModeName(TransportMode mode);

// A communicator's transport: shared memory to the members that `domain` reaches (by their
// domain member, `members[rank]`), UCX to the rest. Without a domain, UCX to everyone.
Result<std::unique_ptr<transport::Transport>> makeTransportLocked(
    Engine& engine, const std::shared_ptr<shm::ShmDomain>& domain, const std::vector<int>& members,
    int rank, const std::vector<std::string>& addresses,
    const std::vector<std::uint16_t>& channels);

// Whether `transport` can read the memory of every member (Transport::readPeer).
bool everyPeerReadable(const transport::Transport& transport);

}  // namespace ftcomm::detail
