// How a node-aware collective sees a communicator that spans hosts: the members of this rank's
// host, one member per host (its leader), and the members at this rank's place on every host,
// each as a SubTransport. The leader of a host is its lowest rank, except that `leaderOf` ranks
// (a broadcast's root) lead their own host. `hosts[r]` is rank r's host (CollectiveArgs::hosts);
// without it every rank is a host of its own, and the leaders are everybody.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "algorithms/sub_transport.h"

namespace ftcomm::algorithms {

struct HostGroups {
  std::unique_ptr<SubTransport> local;    // this rank's host; always set
  std::unique_ptr<SubTransport> leaders;  // one rank per host; null unless this rank leads
  // The members at this rank's index in `local` on every host, in the leaders' order; null
  // unless every host has as many members.
  std::unique_ptr<SubTransport> column;
  int localLeader = 0;  // the index of this host's leader in `local`
  // Every host's ranks in rank order, the hosts in the leaders' order (by their leader's rank).
  std::vector<std::vector<int>> members;
};

HostGroups groupByHost(transport::Transport& transport, std::span<const int> hosts,
                       int leaderOf = -1);

// Whether the ranks of `hosts` are on several hosts with more than one on some: where the
// node-aware collectives apply.
bool spansHosts(std::span<const int> hosts);

// Whether the ranks of `hosts` are on more than one host: some messages cross the network.
bool severalHosts(std::span<const int> hosts);

}  // namespace ftcomm::algorithms
