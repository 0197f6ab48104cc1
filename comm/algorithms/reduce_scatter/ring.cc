// Ring reduce-scatter: the input holds one block per rank; in each of n-1 steps a rank sends one
// partially reduced block to its right neighbour and folds the one from its left into its own
// copy, so that block r ends fully reduced on rank r. Cost: n-1 steps, each rank sends and
// receives (n-1)/n of the input: bandwidth-optimal.
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/reduction.h"
#include "algorithms/scratch.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

class RingReduceScatter final : public TaskBase {
 public:
  RingReduceScatter(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      accumulator_.resize(blockBytes() * static_cast<std::size_t>(n_));
      if (!accumulator_.empty())
        transport::copyBytes(accumulator_.data(), args_.send, accumulator_.size());
      scratch_.resize(blockBytes());
      if (n_ == 1) return finish();
      postStep();
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      FTCOMM_RETURN_IF_ERROR(reduceInto(args_.dtype, args_.op, block(wrap(rank_ - step_ - 2)),
                                        scratch_.data(), args_.count));
      if (++step_ == n_ - 1) return finish();
      postStep();
    }
  }

 private:
  std::size_t blockBytes() const { return args_.count * elementBytes_; }
  std::byte* block(int index) {
    return accumulator_.data() + static_cast<std::size_t>(index) * blockBytes();
  }

  // Sends block r-s-1 and receives block r-s-2: after n-1 steps rank r holds block r reduced.
  void postStep() {
    nextStep();
    post(transport_.recv(wrap(rank_ - 1), args_.tag, scratch_.data(), blockBytes()));
    post(transport_.send(wrap(rank_ + 1), args_.tag, block(wrap(rank_ - step_ - 1)), blockBytes()));
  }

  Result<bool> finish() {
    if (blockBytes() > 0) transport::copyBytes(args_.recv, block(rank_), blockBytes());
    return finishReduction(args_.recv, args_.count);
  }

  const int n_;
  const int rank_;
  bool started_ = false;
  int step_ = 0;
  Scratch accumulator_;
  Scratch scratch_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeRingReduceScatter(transport::Transport& transport,
                                                      const CollectiveArgs& args) {
  return std::make_unique<RingReduceScatter>(transport, args);
}

}  // namespace ftcomm::algorithms
