#include "core/split_child.h"

#include "algorithms/host_groups.h"
#include "algorithms/shm/inline_collective.h"
#include "core/engine.h"
#include "core/transport_choice.h"

namespace ftcomm::detail {

Result<std::unique_ptr<Communicator>> makeChild(const std::shared_ptr<CommState>& parent,
                                                const std::string& suffix, std::uint64_t id,
                                                const std::vector<int>& members,
                                                const std::vector<std::uint16_t>& channels,
                                                const std::vector<int>& areas,
                                                std::uint16_t proposed) {
  auto child = std::make_shared<CommState>();
  child->engine = parent->engine;
  child->rendezvous = parent->rendezvous;
  child->name = parent->name + suffix;
  child->parentId = parent->id;
  child->id = id;
  child->epoch = parent->epoch;
  child->shm = parent->shm;
  child->size = static_cast<int>(members.size());
  child->channel = proposed;
  child->opTimeout = parent->opTimeout;
  child->launchRank = parent->launchRank;
  for (int childRank = 0; childRank < child->size; ++childRank) {
    const int p = members[static_cast<std::size_t>(childRank)];
    if (p == parent->rank) child->rank = childRank;
    child->parentRanks.push_back(p);
    child->worldRanks.push_back(parent->worldRanks[static_cast<std::size_t>(p)]);
    child->addresses.push_back(parent->addresses[static_cast<std::size_t>(p)]);
    child->channels.push_back(channels[static_cast<std::size_t>(childRank)]);
    if (!parent->hosts.empty()) child->hosts.push_back(parent->hosts[static_cast<std::size_t>(p)]);
    if (parent->shm) child->shmMembers.push_back(parent->shmMembers[static_cast<std::size_t>(p)]);
  }
  // The members keep their hosts, so a child across hosts takes the node-aware collectives too.
  child->spansHosts = algorithms::spansHosts(child->hosts);
  child->severalHosts = algorithms::severalHosts(child->hosts);
  child->tuning = std::make_shared<const tuning::PlanTable>(parent->tuning->profile(), child->size);
  if (parent->inlineGroup) {
    child->inlineGroup = detail::makeInlineGroup(child->tuning, child->shm, child->shmMembers,
                                                 areas, child->channels);
    child->forcedAlgorithms = parent->forcedAlgorithms;
  }
  {
    std::lock_guard<std::mutex> lock(parent->engine->mutex());
    auto transport = detail::makeTransportLocked(*parent->engine, child->shm, child->shmMembers,
                                                 child->rank, child->addresses, child->channels);
    if (!transport.ok()) return transport.status();
    child->transport = std::move(transport).value();
    child->peersReadable = detail::everyPeerReadable(*child->transport);
    parent->engine->attachLocked(child);
  }
  child->registerWithRecorder();
  return std::make_unique<Communicator>(child);
}

}  // namespace ftcomm::detail
