// Node-aware allreduce for a communicator that spans hosts with several members on some: each
// host reduces to its first member (binomial reduce over shared memory), those leaders allreduce
// across hosts (the registry's default for their count and the size: only one vector per host
// crosses the network), and each leader broadcasts the result to its host. The members' host of
// each rank comes in CollectiveArgs::hosts; without it every rank is its own host and this is
// the flat default. An average is summed throughout and divided once at the end, by the whole
// communicator's size.
#include <memory>

#include "algorithms/collectives.h"
#include "algorithms/host_groups.h"
#include "algorithms/phased_task.h"
#include "algorithms/registry.h"

namespace ftcomm::algorithms {

namespace {

class HierarchicalAllReduce final : public PhasedTask {
 public:
  HierarchicalAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : PhasedTask(transport, args), groups_(groupByHost(transport, args.hosts)) {
    // The phases work in place on recv, and sum an average. The host's leader is its lowest
    // rank, so the local reduce and broadcast have their root at 0.
    phaseArgs_ = args;
    phaseArgs_.send = args.recv;
    phaseArgs_.root = 0;
    phaseArgs_.hosts = {};
    if (phaseArgs_.op == ReduceOp::kAvg) phaseArgs_.op = ReduceOp::kSum;
  }

 private:
  void start() override { copyInput(); }
  int phases() const override { return 3; }
  Result<std::unique_ptr<CollectiveTask>> makePhase(int index) override {
    const bool together = groups_.local->size() > 1;
    if (index == 0 && together) return makeBinomialReduce(*groups_.local, phaseArgs_);
    if (index == 1 && groups_.leaders && groups_.leaders->size() > 1) {
      auto chosen = defaultAlgorithm(Collective::kAllReduce, args_.count * elementBytes_,
                                     groups_.leaders->size(), false);
      if (!chosen.ok()) return chosen.status();
      return (*chosen)->make(*groups_.leaders, phaseArgs_);
    }
    if (index == 2 && together) return makeBinomialBroadcast(*groups_.local, phaseArgs_);
    return std::unique_ptr<CollectiveTask>();
  }
  Result<bool> finish() override { return finishReduction(args_.recv, args_.count); }

  HostGroups groups_;
  CollectiveArgs phaseArgs_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeHierarchicalAllReduce(transport::Transport& transport,
                                                          const CollectiveArgs& args) {
  return std::make_unique<HierarchicalAllReduce>(transport, args);
}

}  // namespace ftcomm::algorithms
