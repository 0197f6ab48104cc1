// Bringing up one epoch of a world communicator from the rendezvous's view of it: at creation,
// for a replacement the rendezvous admitted, and after every reconfigure(). Each member picks a
// new receive channel (so that no message of an older epoch can ever match), publishes it under
// ftcomm/channel/<epoch>/<rank>, connects to every member (live endpoints are reused: the
// worker keeps one per address) and exchanges one message with each (eager wire-up).
//
// Thread-safety: any thread; takes the engine's mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/comm_state.h"
#include "core/transport_choice.h"
#include "rendezvous/client.h"
#include "tuning/profile.h"

namespace ftcomm::detail {

// What stays the same across the epochs of one world communicator.
struct WorldIdentity {
  std::shared_ptr<Engine> engine;
  std::shared_ptr<rendezvous::RendezvousClient> rendezvous;
  std::shared_ptr<JobWatch> watch;
  std::string job;
  std::string name;
  std::uint64_t id = 0;
  std::chrono::milliseconds opTimeout{300000};
  int minSize = 1;
  // Who this process is in flight-recorder dumps, for the job's whole life: its rank and world
  // size at launch (ranks change with every reconfigure; dump files must not).
  int launchRank = 0;
  int launchSize = 1;
  std::chrono::milliseconds reconfigureTimeout{60000};
  // One agreement round's wait for every live member to call in; then the members that did not
  // (hung, yet heartbeating) are reported failed and the others agree without them.
  std::chrono::milliseconds agreementTimeout{10000};
  TransportMode transport = TransportMode::kAuto;
  // This process's own tuning profile (FTCOMM_TUNING or CommOptions::tuning); each epoch plans
  // with rank 0's.
  tuning::Profile tuning;
};

// A connected, wired-up state for `view`, attached to the engine and known to the recorder.
// `keepIfPeerFailed` (creation): a member that dies during the wire-up leaves the state revoked
// instead of failing, so that the survivors reconfigure() without it. The wire-up's last message
// from a member that died right after its own wire-up completed may never arrive (UCX over
// TCP): failing creation for it would leave nothing to recover.
Result<std::shared_ptr<CommState>> connectEpoch(const WorldIdentity& world,
                                                const rendezvous::EpochView& view,
                                                Clock::time_point deadline,
                                                bool keepIfPeerFailed = false);

inline std::chrono::milliseconds timeLeft(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

}  // namespace ftcomm::detail
