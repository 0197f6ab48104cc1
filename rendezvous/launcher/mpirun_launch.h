// How `ftcomm-run` runs a job under OpenMPI's mpirun (its default launch mode): each rank under
// the rank wrapper (rank_wrapper.h); with simulated hosts, mpirun in the head namespace reaching
// the hosts through --host-agent, and the ranks' link faults acted on (link_faults.h).
#pragma once

#include <string>
#include <vector>

#include "rendezvous/launcher/sim_hosts.h"

namespace ftcomm::launcher {

struct MpirunLaunch {
  int ranks = 0;
  int nodes = 0;         // simulated hosts (0: none)
  std::string hostfile;  // real hosts (mpirun's hostfile; empty: none)
  std::vector<std::string> program;
  std::string work;  // ftcomm-run's temporary folder: the ranks' endings, the hostfile
  std::string self;  // ftcomm-run's own path
};

// The job's exit status: 0 when every rank ended in a way the job survives; else the first
// error exit of a rank, or mpirun's own when it ended the job itself; 1 when no rank ran.
int launchWithMpirun(const MpirunLaunch& o, SimulatedHosts& hosts);

}  // namespace ftcomm::launcher
