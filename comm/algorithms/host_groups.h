// How a node-aware collective sees a communicator that spans hosts: the members of this rank's
// host, and one member per host (its leader), each as a SubTransport. The leader of a host is
// its lowest rank, except that `leaderOf` ranks (a broadcast's root) lead their own host.
// `hosts[r]` is rank r's host (CollectiveArgs::hosts); without it every rank is a host of its
// own, and the leaders are everybody.
#pragma once

#include <memory>
#include <span>

#include "algorithms/sub_transport.h"

namespace ftcomm::algorithms {

struct HostGroups {
  std::unique_ptr<SubTransport> local;    // this rank's host; always set
  std::unique_ptr<SubTransport> leaders;  // one rank per host; null unless this rank leads
  int localLeader = 0;                    // the index of this host's leader in `local`
};

HostGroups groupByHost(transport::Transport& transport, std::span<const int> hosts,
                       int leaderOf = -1);

}  // namespace ftcomm::algorithms
