// Node-aware reduce-scatter for a communicator that spans hosts: each host reduces the whole
// input to its first member (binomial, over shared memory); those leaders, with the blocks
// packed host after host, reduce-scatter one host's blocks to each (ring) when the hosts are of
// one size, or allreduce them all otherwise; each leader then scatters its host's blocks to
// their members (linear). The data crosses the network once per host instead of once per member
// on it. An average is summed throughout and divided once, by the whole communicator's size.
#include <memory>

#include "algorithms/collectives.h"
#include "algorithms/host_groups.h"
#include "algorithms/phased_task.h"
#include "algorithms/registry.h"
#include "algorithms/scratch.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

class HierarchicalReduceScatter final : public PhasedTask {
 public:
  HierarchicalReduceScatter(transport::Transport& transport, const CollectiveArgs& args)
      : PhasedTask(transport, args), groups_(groupByHost(transport, args.hosts)) {
    phaseArgs_ = args;
    phaseArgs_.hosts = {};
    if (phaseArgs_.op == ReduceOp::kAvg) phaseArgs_.op = ReduceOp::kSum;
  }

 private:
  int phases() const override { return 3; }
  Result<std::unique_ptr<CollectiveTask>> makePhase(int index) override {
    const std::size_t n = static_cast<std::size_t>(transport_.size());
    const bool leads = groups_.local->rank() == groups_.localLeader;
    CollectiveArgs phase = phaseArgs_;
    if (index == 0) {
      if (leads) summed_.resize(n * blockBytes());
      phase.count = n * args_.count;
      phase.recv = summed_.data();
      phase.root = groups_.localLeader;
      return makeBinomialReduce(*groups_.local, phase);
    }
    if (index == 1) {
      if (!leads) return std::unique_ptr<CollectiveTask>();
      pack();
      if (groups_.leaders->size() == 1) return std::unique_ptr<CollectiveTask>();
      const std::size_t hostBlocks = static_cast<std::size_t>(groups_.local->size());
      if (groups_.column) {
        // One host's blocks to each leader, in the leaders' order: the packed order.
        phase.send = packed_.data();
        phase.recv = summed_.data();
        phase.count = hostBlocks * args_.count;
        mine_ = summed_.data();
        return makeRingReduceScatter(*groups_.leaders, phase);
      }
      phase.send = phase.recv = packed_.data();
      phase.count = n * args_.count;
      auto chosen = defaultAlgorithm(Collective::kAllReduce, phase.count * elementBytes_,
                                     groups_.leaders->size(), false);
      if (!chosen.ok()) return chosen.status();
      return (*chosen)->make(*groups_.leaders, phase);
    }
    phase.send = mine_;
    phase.root = groups_.localLeader;
    return makeLinearScatter(*groups_.local, phase);
  }
  Result<bool> finish() override { return finishReduction(args_.recv, args_.count); }

  std::size_t blockBytes() const { return args_.count * elementBytes_; }
  // The host's sums in rank order, packed host after host (the leaders' order); mine_ points at
  // this host's blocks among them.
  void pack() {
    packed_.resize(summed_.size());
    std::byte* out = packed_.data();
    for (std::size_t h = 0; h < groups_.members.size(); ++h) {
      if (static_cast<int>(h) == groups_.leaders->rank()) mine_ = out;
      for (int rank : groups_.members[h]) {
        if (blockBytes() > 0) {
          transport::copyBytes(out, summed_.data() + static_cast<std::size_t>(rank) * blockBytes(),
                               blockBytes());
        }
        out += blockBytes();
      }
    }
  }

  HostGroups groups_;
  CollectiveArgs phaseArgs_;
  Scratch summed_;             // the leader's: its host's sum of the whole input, in rank order
  Scratch packed_;             // the leader's: the same, host after host
  std::byte* mine_ = nullptr;  // the leader's: its host's reduced blocks, in rank order
};

}  // namespace

std::unique_ptr<CollectiveTask> makeHierarchicalReduceScatter(transport::Transport& transport,
                                                              const CollectiveArgs& args) {
  return std::make_unique<HierarchicalReduceScatter>(transport, args);
}

}  // namespace ftcomm::algorithms
