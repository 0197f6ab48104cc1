// Node-aware broadcast for a communicator that spans hosts: the root broadcasts to one member of
// every other host (the registry's default broadcast among those leaders, the root leading its
// own host), then each leader broadcasts to its host (binomial, over shared memory). The data
// crosses the network once per host instead of once per member on it.
#include <memory>

#include "algorithms/collectives.h"
#include "algorithms/host_groups.h"
#include "algorithms/registry.h"

namespace ftcomm::algorithms {

namespace {

class HierarchicalBroadcast final : public TaskBase {
 public:
  HierarchicalBroadcast(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args) {
    HostGroups groups = groupByHost(transport, args.hosts, args.root);
    local_ = std::move(groups.local);
    leaders_ = std::move(groups.leaders);
    // Both phases work in place on recv; the root's data is copied there first.
    acrossArgs_ = args;
    acrossArgs_.send = args.recv;
    acrossArgs_.hosts = {};
    localArgs_ = acrossArgs_;
    localArgs_.root = groups.localLeader;
    if (leaders_) {
      // The root leads its host, so it is a leader; find its index among them.
      acrossArgs_.root = 0;
      for (int i = 0; i < leaders_->size(); ++i) {
        if (leaders_->member(i) == args.root) acrossArgs_.root = i;
      }
    }
  }

  Result<bool> advance() override {
    while (true) {
      if (phase_ == Phase::kStart) {
        if (transport_.rank() == args_.root) copyInput();
        FTCOMM_RETURN_IF_ERROR(startNext());
        continue;
      }
      if (phase_ == Phase::kDone) return true;
      auto done = current_->advance();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      FTCOMM_RETURN_IF_ERROR(startNext());
    }
  }

  bool hasMoreWork() const override { return current_ && current_->hasMoreWork(); }

 private:
  enum class Phase { kStart, kAcross, kLocal, kDone };

  // Moves to the next phase this rank takes part in, and makes its task.
  Status startNext() {
    current_.reset();
    while (!current_ && phase_ != Phase::kDone) {
      phase_ = static_cast<Phase>(static_cast<int>(phase_) + 1);
      if (phase_ == Phase::kAcross && leaders_ && leaders_->size() > 1) {
        auto chosen = defaultAlgorithm(Collective::kBroadcast, args_.count * elementBytes_,
                                       leaders_->size(), false);
        if (!chosen.ok()) return chosen.status();
        current_ = (*chosen)->make(*leaders_, acrossArgs_);
      } else if (phase_ == Phase::kLocal && local_->size() > 1) {
        current_ = makeBinomialBroadcast(*local_, localArgs_);
      }
    }
    return Status::Ok();
  }

  std::unique_ptr<SubTransport> local_;
  std::unique_ptr<SubTransport> leaders_;  // null unless this rank leads its host
  CollectiveArgs acrossArgs_;
  CollectiveArgs localArgs_;
  Phase phase_ = Phase::kStart;
  std::unique_ptr<CollectiveTask> current_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeHierarchicalBroadcast(transport::Transport& transport,
                                                          const CollectiveArgs& args) {
  return std::make_unique<HierarchicalBroadcast>(transport, args);
}

}  // namespace ftcomm::algorithms
