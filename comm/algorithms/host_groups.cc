#include "algorithms/host_groups.h"

#include <algorithm>
#include <map>

namespace ftcomm::algorithms {

HostGroups groupByHost(transport::Transport& transport, std::span<const int> hosts, int leaderOf) {
  const int n = transport.size();
  const int me = transport.rank();
  auto hostOf = [&](int r) {
    return hosts.size() == static_cast<std::size_t>(n) ? hosts[static_cast<std::size_t>(r)]
                                                       : -1 - r;
  };
  // Each host's ranks, and its leader: its lowest rank, or `leaderOf` on that rank's host.
  std::map<int, std::vector<int>> byHost;
  for (int r = 0; r < n; ++r) byHost[hostOf(r)].push_back(r);
  std::vector<std::pair<int, const std::vector<int>*>> byLeader;
  for (const auto& [host, onHost] : byHost) {
    const bool rootHere = leaderOf >= 0 && leaderOf < n && hostOf(leaderOf) == host;
    byLeader.emplace_back(rootHere ? leaderOf : onHost.front(), &onHost);
  }
  std::sort(byLeader.begin(), byLeader.end());
  std::vector<int> leaders;
  int leaderRank = -1;
  HostGroups groups;
  for (const auto& [leader, onHost] : byLeader) {
    if (leader == me) leaderRank = static_cast<int>(leaders.size());
    leaders.push_back(leader);
    groups.members.push_back(*onHost);
  }
  int localRank = 0, myHost = 0;
  for (std::size_t h = 0; h < groups.members.size(); ++h) {
    const auto& onHost = groups.members[h];
    const auto mine = std::find(onHost.begin(), onHost.end(), me);
    if (mine == onHost.end()) continue;
    myHost = static_cast<int>(h);
    localRank = static_cast<int>(mine - onHost.begin());
    groups.localLeader =
        static_cast<int>(std::find(onHost.begin(), onHost.end(), leaders[h]) - onHost.begin());
  }
  const auto& local = groups.members[static_cast<std::size_t>(myHost)];
  const bool even = std::all_of(groups.members.begin(), groups.members.end(),
                                [&](const auto& onHost) { return onHost.size() == local.size(); });
  if (even) {
    std::vector<int> column;
    for (const auto& onHost : groups.members) {
      column.push_back(onHost[static_cast<std::size_t>(localRank)]);
    }
    groups.column = std::make_unique<SubTransport>(transport, std::move(column), myHost);
  }
  groups.local = std::make_unique<SubTransport>(transport, local, localRank);
  if (leaderRank >= 0) {
    groups.leaders = std::make_unique<SubTransport>(transport, std::move(leaders), leaderRank);
  }
  return groups;
}

bool severalHosts(std::span<const int> hosts) {
  return std::any_of(hosts.begin(), hosts.end(), [&](int host) { return host != hosts.front(); });
}

bool spansHosts(std::span<const int> hosts) {
  std::map<int, int> members;
  for (int host : hosts) ++members[host];
  return members.size() > 1 &&
         std::any_of(members.begin(), members.end(), [](const auto& m) { return m.second > 1; });
}

}  // namespace ftcomm::algorithms
