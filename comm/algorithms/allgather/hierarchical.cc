// Node-aware allgather for a communicator that spans hosts: each host gathers its members'
// blocks to its first member (linear, over shared memory), those leaders allgather the hosts'
// blocks across hosts (ring allgatherv: hosts may differ in size), and each leader broadcasts the
// whole result within its host (binomial). Every block crosses the network once per host instead
// of once per member on it. The hosts' blocks travel packed, host after host; the leader puts
// them in rank order before its broadcast.
#include <memory>
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/host_groups.h"
#include "algorithms/phased_task.h"
#include "algorithms/scratch.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

class HierarchicalAllGather final : public PhasedTask {
 public:
  HierarchicalAllGather(transport::Transport& transport, const CollectiveArgs& args)
      : PhasedTask(transport, args), groups_(groupByHost(transport, args.hosts)) {
    std::size_t start = 0;
    for (const auto& onHost : groups_.members) {
      hostCounts_.push_back(onHost.size() * args.count);
      hostDispls_.push_back(start);
      start += hostCounts_.back();
    }
  }

 private:
  int phases() const override { return 3; }
  Result<std::unique_ptr<CollectiveTask>> makePhase(int index) override {
    const bool leads = groups_.local->rank() == groups_.localLeader;
    CollectiveArgs phase = args_;
    phase.hosts = {};
    if (index == 0) {
      // The leader's own block goes straight to its place in the host's blocks.
      if (leads) gathered_.resize(static_cast<std::size_t>(groups_.local->size()) * blockBytes());
      phase.recv = gathered_.data();
      phase.root = groups_.localLeader;
      return makeLinearGather(*groups_.local, phase);
    }
    if (index == 1) {
      if (!groups_.leaders || groups_.leaders->size() == 1)
        return std::unique_ptr<CollectiveTask>();
      everyone_.resize(static_cast<std::size_t>(transport_.size()) * blockBytes());
      phase.send = gathered_.data();
      phase.recv = everyone_.data();
      phase.count = hostCounts_[static_cast<std::size_t>(groups_.leaders->rank())];
      phase.recvCounts = hostCounts_;
      phase.recvDispls = hostDispls_;
      return makeRingAllGatherV(*groups_.leaders, phase);
    }
    if (leads) unpack(groups_.leaders->size() == 1 ? gathered_.data() : everyone_.data());
    phase.send = phase.recv;
    phase.count = args_.count * static_cast<std::size_t>(transport_.size());
    phase.root = groups_.localLeader;
    return makeBinomialBroadcast(*groups_.local, phase);
  }

  std::size_t blockBytes() const { return args_.count * elementBytes_; }
  // The hosts' blocks, packed host after host, into rank order in recv.
  void unpack(const std::byte* packed) {
    if (blockBytes() == 0) return;
    for (const auto& onHost : groups_.members) {
      for (int rank : onHost) {
        transport::copyBytes(recvBytes(static_cast<std::size_t>(rank) * args_.count), packed,
                             blockBytes());
        packed += blockBytes();
      }
    }
  }

  HostGroups groups_;
  std::vector<std::size_t> hostCounts_, hostDispls_;  // elements, by host in the leaders' order
  Scratch gathered_;  // the leader's: its host's blocks in rank order
  Scratch everyone_;  // the leader's: every host's blocks, host after host
};

}  // namespace

std::unique_ptr<CollectiveTask> makeHierarchicalAllGather(transport::Transport& transport,
                                                          const CollectiveArgs& args) {
  return std::make_unique<HierarchicalAllGather>(transport, args);
}

}  // namespace ftcomm::algorithms
