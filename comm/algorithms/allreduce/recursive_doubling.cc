// Recursive-doubling allreduce: in log2(p) steps each rank swaps its whole vector with the
// partner whose rank differs in one bit and reduces. For a rank count n that is not a power of
// two, the first 2(n-p) ranks pair up first (even ones hand their vector to the odd ones and sit
// out), and get the result back at the end. Cost: log2(p) (+2) steps of the whole vector: the
// latency-optimal choice for small messages. Every rank combines the same two partial results
// at each step, so all ranks end with bitwise-identical values.
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/reduction.h"

namespace ftcomm::algorithms {

namespace {

class RecursiveDoublingAllReduce final : public TaskBase {
 public:
  RecursiveDoublingAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {
    p_ = 1;
    while (p_ * 2 <= n_) p_ *= 2;
    extra_ = n_ - p_;
  }

  Result<bool> advance() override {
    if (phase_ == Phase::kStart) {
      copyInput();
      if (n_ == 1) return finish();
      scratch_.resize(bytes());
      startPairing();
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      switch (phase_) {
        case Phase::kPairing:
          if (rank_ < 2 * extra_ && rank_ % 2 == 1) FTCOMM_RETURN_IF_ERROR(foldScratch());
          if (rank_ < 2 * extra_ && rank_ % 2 == 0) {
            phase_ = Phase::kCollect;
            nextStep();
            post(transport_.recv(rank_ + 1, args_.tag, args_.recv, bytes()));
            break;
          }
          phase_ = Phase::kDoubling;
          mask_ = 1;
          if (!postExchange()) startHandBack();
          break;
        case Phase::kDoubling:
          FTCOMM_RETURN_IF_ERROR(foldScratch());
          mask_ <<= 1;
          if (!postExchange()) startHandBack();
          break;
        case Phase::kHandBack:
        case Phase::kCollect:
          return finish();
        case Phase::kStart:
          break;
      }
    }
  }

 private:
  enum class Phase { kStart, kPairing, kDoubling, kHandBack, kCollect };

  std::size_t bytes() const { return args_.count * elementBytes_; }
  // Position among the p ranks that take part in the doubling; -1 for those sitting out.
  int virtualRank() const {
    if (rank_ < 2 * extra_) return rank_ % 2 == 1 ? rank_ / 2 : -1;
    return rank_ - extra_;
  }
  int realRank(int virtualRank) const {
    return virtualRank < extra_ ? 2 * virtualRank + 1 : virtualRank + extra_;
  }

  void startPairing() {
    phase_ = Phase::kPairing;
    nextStep();
    if (rank_ < 2 * extra_) {
      if (rank_ % 2 == 0)
        post(transport_.send(rank_ + 1, args_.tag, args_.recv, bytes()));
      else
        post(transport_.recv(rank_ - 1, args_.tag, scratch_.data(), bytes()));
    }
  }

  // Posts the exchange of the current mask; false when the doubling is over.
  bool postExchange() {
    nextStep();
    if (mask_ >= p_) return false;
    const int partner = realRank(virtualRank() ^ mask_);
    post(transport_.recv(partner, args_.tag, scratch_.data(), bytes()));
    post(transport_.send(partner, args_.tag, args_.recv, bytes()));
    return true;
  }

  void startHandBack() {
    phase_ = Phase::kHandBack;
    nextStep();
    if (rank_ < 2 * extra_ && rank_ % 2 == 1) {
      post(transport_.send(rank_ - 1, args_.tag, args_.recv, bytes()));
    }
  }

  Status foldScratch() {
    return reduceInto(args_.dtype, args_.op, args_.recv, scratch_.data(), args_.count);
  }

  Result<bool> finish() {
    if (args_.op == ReduceOp::kAvg) {
      FTCOMM_RETURN_IF_ERROR(finishAverage(args_.dtype, args_.recv, args_.count, n_));
    }
    return true;
  }

  const int n_;
  const int rank_;
  int p_ = 1;
  int extra_ = 0;
  int mask_ = 1;
  Phase phase_ = Phase::kStart;
  std::vector<std::byte> scratch_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeRecursiveDoublingAllReduce(transport::Transport& transport,
                                                               const CollectiveArgs& args) {
  return std::make_unique<RecursiveDoublingAllReduce>(transport, args);
}

}  // namespace ftcomm::algorithms
