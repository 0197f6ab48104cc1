// A process that ends normally (exit code 0) leaves every job it is still a member of, even
// where a communicator outlives main (held by a static, or by the engine while a failed
// operation settles): without it the server sees the watch stream close and declares the member
// failed, and the dumps call a clean exit a crash. Its communicators that are still usable tell
// their other members first that it leaves (Engine::leaveAtExit), as their destruction would. A
// process that exits with another code, or is killed, does not leave: the server finds it failed,
// as it should. Where FTCOMM_FR_DIR keeps flight-recorder dumps and the process wrote none, it
// writes one whose reason says it finished normally (recorder::kFinishedNormally).
//
// Thread-safety: any thread.
#pragma once

#include <memory>

#include "core/engine.h"
#include "rendezvous/client.h"

namespace ftcomm::detail {

// Leave `client`'s job at a normal exit unless it left before (the last reference's Leave), and
// leave `engine`'s communicators that are still usable.
void leaveAtNormalExit(const std::shared_ptr<rendezvous::RendezvousClient>& client,
                       const std::shared_ptr<Engine>& engine);

}  // namespace ftcomm::detail
