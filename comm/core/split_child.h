// The last step of every way of making a child communicator (split, createGroup): the child's
// state from its members, channels and inline areas, attached to the engine and the recorder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/comm_state.h"
#include "ftcomm/communicator.h"

namespace ftcomm::detail {

// The child of `parent` whose members are `members` (parent ranks, in child rank order), with
// each member's receive channel and inline area; this member's own channel is `proposed`. Its
// transport reuses the parent's endpoints, so it is connected on return.
Result<std::unique_ptr<Communicator>> makeChild(const std::shared_ptr<CommState>& parent,
                                                const std::string& suffix, std::uint64_t id,
                                                const std::vector<int>& members,
                                                const std::vector<std::uint16_t>& channels,
                                                const std::vector<int>& areas,
                                                std::uint16_t proposed);

}  // namespace ftcomm::detail
