// Node-aware allreduce in three bandwidth-shared phases, for a communicator that spans hosts
// with as many members on each: each host reduce-scatters the vector among its members (ring,
// over shared memory), the members at the same place on every host allreduce their piece across
// hosts (the registry's default for their count and the piece's size), and each host allgathers
// the pieces (ring). Every member of a host drives a share of the traffic between hosts, where
// the reduce-broadcast form ("hierarchical") sends it all through one member. With hosts of
// different sizes there are no such columns, and this is the reduce-broadcast form.
//
// The vector is cut into one equal piece per member of a host, rounded up; the pieces work in a
// padded scratch copy, and the result is copied out at the end. An average is summed throughout
// and divided once, by the whole communicator's size.
#include <algorithm>
#include <cstring>
#include <memory>

#include "algorithms/collectives.h"
#include "algorithms/host_groups.h"
#include "algorithms/phased_task.h"
#include "algorithms/registry.h"
#include "algorithms/scratch.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

class SplitAllReduce final : public PhasedTask {
 public:
  SplitAllReduce(transport::Transport& transport, const CollectiveArgs& args, HostGroups groups)
      : PhasedTask(transport, args), groups_(std::move(groups)) {
    const auto k = static_cast<std::size_t>(groups_.local->size());
    piece_ = (args.count + k - 1) / k;
    pieceArgs_ = args;
    pieceArgs_.hosts = {};
    pieceArgs_.count = piece_;
    if (pieceArgs_.op == ReduceOp::kAvg) pieceArgs_.op = ReduceOp::kSum;
  }

 private:
  void start() override {
    const std::size_t k = static_cast<std::size_t>(groups_.local->size());
    const std::size_t bytes = args_.count * elementBytes_;
    padded_.resize(k * piece_ * elementBytes_);
    mine_.resize(piece_ * elementBytes_);
    if (bytes > 0) transport::copyBytes(padded_.data(), args_.send, bytes);
    // The padding's reductions are thrown away; zeros keep them from reading uninitialized memory.
    if (padded_.size() > bytes) std::memset(padded_.data() + bytes, 0, padded_.size() - bytes);
  }
  int phases() const override { return 3; }
  Result<std::unique_ptr<CollectiveTask>> makePhase(int index) override {
    CollectiveArgs phase = pieceArgs_;
    if (index == 0) {
      phase.send = padded_.data();
      phase.recv = mine_.data();
      return makeRingReduceScatter(*groups_.local, phase);
    }
    if (index == 1) {
      if (groups_.column->size() == 1) return std::unique_ptr<CollectiveTask>();
      phase.send = phase.recv = mine_.data();
      auto chosen = defaultAlgorithm(Collective::kAllReduce, piece_ * elementBytes_,
                                     groups_.column->size(), false);
      if (!chosen.ok()) return chosen.status();
      return (*chosen)->make(*groups_.column, phase);
    }
    phase.send = mine_.data();
    phase.recv = padded_.data();
    return makeRingAllGather(*groups_.local, phase);
  }
  Result<bool> finish() override {
    if (args_.count > 0) {
      transport::copyBytes(args_.recv, padded_.data(), args_.count * elementBytes_);
    }
    return finishReduction(args_.recv, args_.count);
  }

  HostGroups groups_;
  std::size_t piece_ = 0;
  CollectiveArgs pieceArgs_;
  Scratch padded_;
  Scratch mine_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeSplitAllReduce(transport::Transport& transport,
                                                   const CollectiveArgs& args) {
  HostGroups groups = groupByHost(transport, args.hosts);
  if (!groups.column) return makeHierarchicalAllReduce(transport, args);
  return std::make_unique<SplitAllReduce>(transport, args, std::move(groups));
}

}  // namespace ftcomm::algorithms
