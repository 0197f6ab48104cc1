// Node-aware broadcast for a communicator that spans hosts: the root broadcasts to one member of
// every other host (the registry's default broadcast among those leaders, the root leading its
// own host), then each leader broadcasts to its host (binomial, over shared memory). The data
// crosses the network once per host instead of once per member on it.
#include <memory>

#include "algorithms/collectives.h"
#include "algorithms/host_groups.h"
#include "algorithms/phased_task.h"
#include "algorithms/registry.h"

namespace ftcomm::algorithms {

namespace {

class HierarchicalBroadcast final : public PhasedTask {
 public:
  HierarchicalBroadcast(transport::Transport& transport, const CollectiveArgs& args)
      : PhasedTask(transport, args), groups_(groupByHost(transport, args.hosts, args.root)) {
    // Both phases work in place on recv; the root's data is copied there first.
    acrossArgs_ = args;
    acrossArgs_.send = args.recv;
    acrossArgs_.hosts = {};
    localArgs_ = acrossArgs_;
    localArgs_.root = groups_.localLeader;
    // The root leads its host, so it is among the leaders.
    for (int i = 0; groups_.leaders && i < groups_.leaders->size(); ++i) {
      if (groups_.leaders->member(i) == args.root) acrossArgs_.root = i;
    }
  }

 private:
  void start() override {
    if (transport_.rank() == args_.root) copyInput();
  }
  int phases() const override { return 2; }
  Result<std::unique_ptr<CollectiveTask>> makePhase(int index) override {
    if (index == 0 && groups_.leaders && groups_.leaders->size() > 1) {
      auto chosen = defaultAlgorithm(Collective::kBroadcast, args_.count * elementBytes_,
                                     groups_.leaders->size(), false);
      if (!chosen.ok()) return chosen.status();
      return (*chosen)->make(*groups_.leaders, acrossArgs_);
    }
    if (index == 1 && groups_.local->size() > 1) {
      return makeBinomialBroadcast(*groups_.local, localArgs_);
    }
    return std::unique_ptr<CollectiveTask>();
  }

  HostGroups groups_;
  CollectiveArgs acrossArgs_;
  CollectiveArgs localArgs_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeHierarchicalBroadcast(transport::Transport& transport,
                                                          const CollectiveArgs& args) {
  return std::make_unique<HierarchicalBroadcast>(transport, args);
}

}  // namespace ftcomm::algorithms
