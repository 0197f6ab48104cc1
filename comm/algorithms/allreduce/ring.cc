// Ring allreduce: a reduce-scatter around the ring, then an allgather around it. The vector is
// cut into one chunk per rank; in each of n-1 steps a rank sends one chunk to its right
// neighbour and folds the chunk from its left one into its own. Cost: 2(n-1) steps, each rank
// sends and receives 2(n-1)/n of the vector: bandwidth-optimal, for large messages.
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/reduction.h"

namespace ftcomm::algorithms {

namespace {

class RingAllReduce final : public TaskBase {
 public:
  RingAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {}

  Result<bool> advance() override {
    if (phase_ == Phase::kStart) {
      copyInput();
      if (n_ == 1 || args_.count == 0) return finishReduction(args_.recv, args_.count);
      scratch_.resize(chunkCount(0) * elementBytes_);  // chunk 0 is the largest
      phase_ = Phase::kReduceScatter;
      postReduceScatter();
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      if (phase_ == Phase::kReduceScatter) {
        const int chunk = wrap(rank_ - stepIndex_ - 1);
        FTCOMM_RETURN_IF_ERROR(reduceInto(args_.dtype, args_.op, recvBytes(chunkStart(chunk)),
                                          scratch_.data(), chunkCount(chunk)));
        if (++stepIndex_ < n_ - 1) {
          postReduceScatter();
        } else {
          phase_ = Phase::kAllGather;
          stepIndex_ = 0;
          postAllGather();
        }
      } else {
        if (++stepIndex_ < n_ - 1) {
          postAllGather();
        } else {
          return finishReduction(args_.recv, args_.count);
        }
      }
    }
  }

 private:
  enum class Phase { kStart, kReduceScatter, kAllGather };

  std::size_t chunkCount(int chunk) const {
    const std::size_t n = static_cast<std::size_t>(n_);
    return args_.count / n + (static_cast<std::size_t>(chunk) < args_.count % n ? 1 : 0);
  }
  std::size_t chunkStart(int chunk) const {
    const std::size_t c = static_cast<std::size_t>(chunk), n = static_cast<std::size_t>(n_);
    return c * (args_.count / n) + std::min(c, args_.count % n);
  }
  int right() const { return wrap(rank_ + 1); }
  int left() const { return wrap(rank_ - 1); }

  void postReduceScatter() {
    nextStep();
    const int out = wrap(rank_ - stepIndex_), in = wrap(rank_ - stepIndex_ - 1);
    post(transport_.recv(left(), args_.tag, scratch_.data(), chunkCount(in) * elementBytes_));
    post(transport_.send(right(), args_.tag, recvBytes(chunkStart(out)),
                         chunkCount(out) * elementBytes_));
  }

  void postAllGather() {
    nextStep();
    const int out = wrap(rank_ + 1 - stepIndex_), in = wrap(rank_ - stepIndex_);
    post(transport_.recv(left(), args_.tag, recvBytes(chunkStart(in)),
                         chunkCount(in) * elementBytes_));
    post(transport_.send(right(), args_.tag, recvBytes(chunkStart(out)),
                         chunkCount(out) * elementBytes_));
  }

  const int n_;
  const int rank_;
  Phase phase_ = Phase::kStart;
  int stepIndex_ = 0;
  std::vector<std::byte> scratch_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeRingAllReduce(transport::Transport& transport,
                                                  const CollectiveArgs& args) {
  return std::make_unique<RingAllReduce>(transport, args);
}

}  // namespace ftcomm::algorithms
