// Pairwise-exchange all-to-all: in step s (1..n-1) a rank sends its block for rank r+s and
// receives the block from rank r-s, so every pair meets exactly once and no rank is flooded.
// Cost: n-1 steps, each rank sends and receives (n-1)/n of its buffer. In place is allowed: the
// input is copied first.
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/scratch.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

class PairwiseAllToAll final : public TaskBase {
 public:
  PairwiseAllToAll(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      const std::byte* source = static_cast<const std::byte*>(args_.send);
      if (args_.send == args_.recv) {  // in place: keep the input while the output is written
        input_.resize(blockBytes() * static_cast<std::size_t>(n_));
        if (!input_.empty()) transport::copyBytes(input_.data(), source, input_.size());
        source = input_.data();
      }
      source_ = source;
      if (blockBytes() > 0) std::memmove(outBlock(rank_), inBlock(rank_), blockBytes());
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
  std::size_t blockBytes() const { return args_.count * elementBytes_; }
  const std::byte* inBlock(int peer) const {
    return source_ + static_cast<std::size_t>(peer) * blockBytes();
  }
  std::byte* outBlock(int peer) const {
    return recvBytes(static_cast<std::size_t>(peer) * args_.count);
  }

  void postStep() {
    nextStep();
    const int to = (rank_ + step_) % n_, from = (rank_ - step_ + n_) % n_;
    post(transport_.recv(from, args_.tag, outBlock(from), blockBytes()));
    post(transport_.send(to, args_.tag, inBlock(to), blockBytes()));
  }

  const int n_;
  const int rank_;
  bool started_ = false;
  int step_ = 1;
  const std::byte* source_ = nullptr;
  Scratch input_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makePairwiseAllToAll(transport::Transport& transport,
                                                     const CollectiveArgs& args) {
  return std::make_unique<PairwiseAllToAll>(transport, args);
}

}  // namespace ftcomm::algorithms
