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
#include "algorithms/registry.h"

namespace ftcomm::algorithms {

namespace {

class HierarchicalAllReduce final : public TaskBase {
 public:
  HierarchicalAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args) {
    HostGroups groups = groupByHost(transport, args.hosts);
    local_ = std::move(groups.local);
    leaders_ = std::move(groups.leaders);
    // The phases work in place on recv, and sum an average.
    phaseArgs_ = args;
    phaseArgs_.send = args.recv;
    phaseArgs_.root = 0;
    phaseArgs_.hosts = {};
    if (phaseArgs_.op == ReduceOp::kAvg) phaseArgs_.op = ReduceOp::kSum;
  }

  Result<bool> advance() override {
    while (true) {
      if (phase_ == Phase::kStart) {
        copyInput();
        FTCOMM_RETURN_IF_ERROR(startNext());
        continue;
      }
      if (phase_ == Phase::kDone) return finishReduction(args_.recv, args_.count);
      auto done = current_->advance();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      FTCOMM_RETURN_IF_ERROR(startNext());
    }
  }

  bool hasMoreWork() const override { return current_ && current_->hasMoreWork(); }

 private:
  enum class Phase { kStart, kReduce, kAcross, kBroadcast, kDone };

  // Moves to the next phase this rank takes part in, and makes its task.
  Status startNext() {
    current_.reset();
    while (!current_ && phase_ != Phase::kDone) {
      phase_ = static_cast<Phase>(static_cast<int>(phase_) + 1);
      const bool together = local_->size() > 1;
      if (phase_ == Phase::kReduce && together) {
        current_ = makeBinomialReduce(*local_, phaseArgs_);
      } else if (phase_ == Phase::kAcross && leaders_ && leaders_->size() > 1) {
        auto chosen = defaultAlgorithm(Collective::kAllReduce, args_.count * elementBytes_,
                                       leaders_->size(), false);
        if (!chosen.ok()) return chosen.status();
        current_ = (*chosen)->make(*leaders_, phaseArgs_);
      } else if (phase_ == Phase::kBroadcast && together) {
        current_ = makeBinomialBroadcast(*local_, phaseArgs_);
      }
    }
    return Status::Ok();
  }

  std::unique_ptr<SubTransport> local_;
  std::unique_ptr<SubTransport> leaders_;  // null unless this rank leads its host
  CollectiveArgs phaseArgs_;
  Phase phase_ = Phase::kStart;
  std::unique_ptr<CollectiveTask> current_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeHierarchicalAllReduce(transport::Transport& transport,
                                                          const CollectiveArgs& args) {
  return std::make_unique<HierarchicalAllReduce>(transport, args);
}

}  // namespace ftcomm::algorithms
