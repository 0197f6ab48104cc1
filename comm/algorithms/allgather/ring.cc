// Ring allgather: each rank's block travels once around the ring; in each of n-1 steps a rank
// forwards to its right neighbour the block it received in the previous step. Cost: n-1 steps,
// each rank sends and receives (n-1)/n of the result: bandwidth-optimal.
#include "algorithms/collectives.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

class RingAllGather final : public TaskBase {
 public:
  RingAllGather(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      // This rank's own block goes to its place in the result (unless it is there already).
      std::byte* own = block(rank_);
      if (args_.send != own && blockBytes() > 0)
        transport::copyBytes(own, args_.send, blockBytes());
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
  std::size_t blockBytes() const { return args_.count * elementBytes_; }
  std::byte* block(int owner) const {
    return recvBytes(static_cast<std::size_t>(owner) * args_.count);
  }

  void postStep() {
    nextStep();
    post(transport_.recv(wrap(rank_ - 1), args_.tag, block(wrap(rank_ - step_ - 1)), blockBytes()));
    post(transport_.send(wrap(rank_ + 1), args_.tag, block(wrap(rank_ - step_)), blockBytes()));
  }

  const int n_;
  const int rank_;
  bool started_ = false;
  int step_ = 0;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeRingAllGather(transport::Transport& transport,
                                                  const CollectiveArgs& args) {
  return std::make_unique<RingAllGather>(transport, args);
}

}  // namespace ftcomm::algorithms
