// Ring allgatherv: as the ring allgather, with each rank's block of its own size at its own
// displacement (recvCounts, recvDispls; the same on every rank). Cost: n-1 steps; each rank
// sends and receives every block but its own once: bandwidth-optimal.
#include "algorithms/collectives.h"

namespace ftcomm::algorithms {

namespace {

class RingAllGatherV final : public TaskBase {
 public:
  RingAllGatherV(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      std::byte* own = block(rank_);
      if (args_.send != own && blockBytes(rank_) > 0) {
        std::memmove(own, args_.send, blockBytes(rank_));
      }
      if (n_ == 1) return true;
      postStep();
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      if (++step_ == n_ - 1) return true;
      postStep();
    }
  }

 private:
  std::size_t blockBytes(int owner) const {
    return args_.recvCounts[static_cast<std::size_t>(owner)] * elementBytes_;
  }
  std::byte* block(int owner) const {
    return recvBytes(args_.recvDispls[static_cast<std::size_t>(owner)]);
  }
  void postStep() {
    nextStep();
    const int incoming = wrap(rank_ - step_ - 1), outgoing = wrap(rank_ - step_);
    post(transport_.recv(wrap(rank_ - 1), args_.tag, block(incoming), blockBytes(incoming)));
    post(transport_.send(wrap(rank_ + 1), args_.tag, block(outgoing), blockBytes(outgoing)));
  }

  const int n_;
  const int rank_;
  bool started_ = false;
  int step_ = 0;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeRingAllGatherV(transport::Transport& transport,
                                                   const CollectiveArgs& args) {
  return std::make_unique<RingAllGatherV>(transport, args);
}

}  // namespace ftcomm::algorithms
