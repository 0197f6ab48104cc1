// Pairwise-exchange all-to-allv: as the pairwise all-to-all, with blocks of any size at any
// displacement (sendCounts/sendDispls and recvCounts/recvDispls, by peer). Every pair meets once
// in n-1 steps; a block whose sizes disagree between its sender and receiver fails with
// Mismatch (the transport checks that a message fills its receive exactly). Not in place.
#include "algorithms/collectives.h"

namespace ftcomm::algorithms {

namespace {

class PairwiseAllToAllV final : public TaskBase {
 public:
  PairwiseAllToAllV(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      const std::size_t own = sendBytes(rank_);
      if (own != recvBytesOf(rank_)) {
        return Status(StatusCode::kMismatch, "allToAllV: rank " + std::to_string(rank_) +
                                                 " sends itself " + std::to_string(own) +
                                                 " bytes but expects " +
                                                 std::to_string(recvBytesOf(rank_)));
      }
      if (own > 0) std::memmove(outBlock(rank_), inBlock(rank_), own);
      if (n_ == 1) return true;
      postStep();
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      if (++step_ == n_) return true;
      postStep();
    }
  }

 private:
  std::size_t sendBytes(int peer) const {
    return args_.sendCounts[static_cast<std::size_t>(peer)] * elementBytes_;
  }
  std::size_t recvBytesOf(int peer) const {
    return args_.recvCounts[static_cast<std::size_t>(peer)] * elementBytes_;
  }
  const std::byte* inBlock(int peer) const {
    return static_cast<const std::byte*>(args_.send) +
           args_.sendDispls[static_cast<std::size_t>(peer)] * elementBytes_;
  }
  std::byte* outBlock(int peer) const {
    return recvBytes(args_.recvDispls[static_cast<std::size_t>(peer)]);
  }

  void postStep() {
    nextStep();
    const int to = (rank_ + step_) % n_, from = (rank_ - step_ + n_) % n_;
    post(transport_.recv(from, args_.tag, outBlock(from), recvBytesOf(from)));
    post(transport_.send(to, args_.tag, inBlock(to), sendBytes(to)));
  }

  const int n_;
  const int rank_;
  bool started_ = false;
  int step_ = 1;
};

}  // namespace

std::unique_ptr<CollectiveTask> makePairwiseAllToAllV(transport::Transport& transport,
                                                      const CollectiveArgs& args) {
  return std::make_unique<PairwiseAllToAllV>(transport, args);
}

}  // namespace ftcomm::algorithms
