#include "algorithms/host_groups.h"

#include <map>
#include <vector>

namespace ftcomm::algorithms {

HostGroups groupByHost(transport::Transport& transport, std::span<const int> hosts, int leaderOf) {
  const int n = transport.size();
  const int me = transport.rank();
  auto hostOf = [&](int r) {
    return hosts.size() == static_cast<std::size_t>(n) ? hosts[static_cast<std::size_t>(r)]
                                                       : -1 - r;
  };
  // Each host's leader: its lowest rank, or `leaderOf` on that rank's host.
  std::map<int, int> leaderOfHost;
  for (int r = n - 1; r >= 0; --r) leaderOfHost[hostOf(r)] = r;
  if (leaderOf >= 0 && leaderOf < n) leaderOfHost[hostOf(leaderOf)] = leaderOf;
  std::vector<int> local, leaders;
  int localRank = 0, leaderRank = -1;
  HostGroups groups;
  for (int r = 0; r < n; ++r) {
    if (hostOf(r) == hostOf(me)) {
      if (r == me) localRank = static_cast<int>(local.size());
      if (r == leaderOfHost[hostOf(me)]) groups.localLeader = static_cast<int>(local.size());
      local.push_back(r);
    }
    if (leaderOfHost[hostOf(r)] == r) {
      if (r == me) leaderRank = static_cast<int>(leaders.size());
      leaders.push_back(r);
    }
  }
  groups.local = std::make_unique<SubTransport>(transport, std::move(local), localRank);
  if (leaderRank >= 0) {
    groups.leaders = std::make_unique<SubTransport>(transport, std::move(leaders), leaderRank);
  }
  return groups;
}

}  // namespace ftcomm::algorithms
