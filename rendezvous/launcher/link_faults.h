// Faults on simulated hosts' links, asked for by the ranks themselves (FTCOMM_FAULT actions
// cut-link[:MS] and silent, comm/core/fault_injection.h), so that they strike at a chosen
// operation: a rank writes request.RANK ("cut-link MS" or "silent") in the control folder
// (FTCOMM_RUN_CONTROL), the launcher acts on the rank's host and writes done.RANK.
//   cut-link MS  the host's data link goes down at the bridge (both directions), and comes back
//                after MS ms unless MS is 0; the control link stays up, so mpirun keeps the job
//   silent       the data link goes down, then every rank of the host is killed (SIGKILL), its
//                daemon spared: the host dies without closing a connection
//   kill-host    every rank of the host is killed at once, the link left up
//   lose-host    every process of the host is killed, its mpirun daemon or agent included
//   cut-rendezvous MS  the head's data link (the rendezvous's) goes down for MS ms
// Each act is logged on stderr with its CLOCK_MONOTONIC time in nanoseconds ("at NS"), which
// ftcomm-bench-recovery measures from.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "rendezvous/launcher/sim_hosts.h"

namespace ftcomm::launcher {

class LinkFaults {
 public:
  LinkFaults(SimulatedHosts& hosts, std::string folder, int ranksPerHost)
      : hosts_(hosts), folder_(std::move(folder)), ranksPerHost_(ranksPerHost) {}

  // Acts on new requests and restores links that are due; cheap when there is nothing to do.
  void poll();

 private:
  struct Restore {
    int host;
    std::chrono::steady_clock::time_point at;
  };

  SimulatedHosts& hosts_;
  std::string folder_;
  int ranksPerHost_;
  std::vector<Restore> restores_;
};

}  // namespace ftcomm::launcher
