// Rabenseifner allreduce: a reduce-scatter by recursive halving (each step swaps half of the
// current range with a partner and reduces the half kept), then an allgather by recursive
// doubling that retraces the steps. A rank count that is not a power of two is first folded
// into one, as in recursive doubling. Cost: 2 log2(p) steps moving 2(p-1)/p of the vector:
// bandwidth like the ring with log steps, for medium messages. Each element is reduced on one
// rank only, so every rank ends with bitwise-identical values.
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/reduction.h"

namespace ftcomm::algorithms {

namespace {

class RabenseifnerAllReduce final : public TaskBase {
 public:
  RabenseifnerAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {
    while (p_ * 2 <= n_) p_ *= 2;
    extra_ = n_ - p_;
  }

  Result<bool> advance() override {
    if (phase_ == Phase::kStart) {
      copyInput();
      if (n_ == 1) return finish();
      scratch_.resize(args_.count * elementBytes_);
      phase_ = Phase::kFold;
      nextStep();
      if (rank_ < 2 * extra_) {
        if (rank_ % 2 == 0)
          post(transport_.send(rank_ + 1, args_.tag, args_.recv, wholeBytes()));
        else
          post(transport_.recv(rank_ - 1, args_.tag, scratch_.data(), wholeBytes()));
      }
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      switch (phase_) {
        case Phase::kFold:
          if (rank_ < 2 * extra_ && rank_ % 2 == 0) {
            phase_ = Phase::kUnfold;  // sits out; gets the result at the end
            nextStep();
            post(transport_.recv(rank_ + 1, args_.tag, args_.recv, wholeBytes()));
            break;
          }
          if (rank_ < 2 * extra_) {
            FTCOMM_RETURN_IF_ERROR(
                reduceInto(args_.dtype, reduceOp(), args_.recv, scratch_.data(), args_.count));
          }
          phase_ = Phase::kHalving;
          mask_ = p_ / 2;
          lo_ = 0;
          hi_ = p_;
          if (!postHalving()) startDoubling();
          break;
        case Phase::kHalving:
          FTCOMM_RETURN_IF_ERROR(reduceInto(args_.dtype, reduceOp(), recvBytes(elementOf(keptLo_)),
                                            scratch_.data(),
                                            elementOf(keptHi_) - elementOf(keptLo_)));
          ranges_.push_back({lo_, hi_});
          lo_ = keptLo_;
          hi_ = keptHi_;
          mask_ /= 2;
          if (!postHalving()) startDoubling();
          break;
        case Phase::kDoubling:
          if (!postDoubling()) {
            phase_ = Phase::kUnfold;
            nextStep();
            if (rank_ < 2 * extra_ && rank_ % 2 == 1) {
              post(transport_.send(rank_ - 1, args_.tag, args_.recv, wholeBytes()));
            }
          }
          break;
        case Phase::kUnfold:
          return finish();
        case Phase::kStart:
          break;
      }
    }
  }

 private:
  enum class Phase { kStart, kFold, kHalving, kDoubling, kUnfold };
  struct Range {
    int lo, hi;  // in blocks of the vector cut into p_
  };

  ReduceOp reduceOp() const { return args_.op == ReduceOp::kAvg ? ReduceOp::kSum : args_.op; }
  std::size_t wholeBytes() const { return args_.count * elementBytes_; }
  int virtualRank() const { return rank_ < 2 * extra_ ? rank_ / 2 : rank_ - extra_; }
  int realRank(int v) const { return v < extra_ ? 2 * v + 1 : v + extra_; }
  // First element of block b when the vector is cut into p_ nearly equal blocks.
  std::size_t elementOf(int block) const {
    const std::size_t b = static_cast<std::size_t>(block), p = static_cast<std::size_t>(p_);
    return b * (args_.count / p) + std::min(b, args_.count % p);
  }
  std::size_t bytesOf(int lo, int hi) const {
    return (elementOf(hi) - elementOf(lo)) * elementBytes_;
  }

  // Keeps the half of [lo, hi) on this rank's side of the mask, swaps the other half.
  bool postHalving() {
    nextStep();
    if (mask_ < 1) return false;
    const int mid = lo_ + (hi_ - lo_) / 2;
    const bool lower = (virtualRank() & mask_) == 0;
    keptLo_ = lower ? lo_ : mid;
    keptHi_ = lower ? mid : hi_;
    const int sentLo = lower ? mid : lo_, sentHi = lower ? hi_ : mid;
    const int partner = realRank(virtualRank() ^ mask_);
    post(transport_.recv(partner, args_.tag, scratch_.data(), bytesOf(keptLo_, keptHi_)));
    post(
        transport_.send(partner, args_.tag, recvBytes(elementOf(sentLo)), bytesOf(sentLo, sentHi)));
    return true;
  }

  void startDoubling() {
    phase_ = Phase::kDoubling;
    mask_ = 1;
    postDoubling();
  }

  // Retraces the halving: sends the range this rank holds, receives the partner's other half.
  bool postDoubling() {
    nextStep();
    if (ranges_.empty()) return false;
    const Range outer = ranges_.back();
    ranges_.pop_back();
    const int partner = realRank(virtualRank() ^ mask_);
    const int otherLo = lo_ == outer.lo ? hi_ : outer.lo;
    const int otherHi = lo_ == outer.lo ? outer.hi : lo_;
    post(transport_.recv(partner, args_.tag, recvBytes(elementOf(otherLo)),
                         bytesOf(otherLo, otherHi)));
    post(transport_.send(partner, args_.tag, recvBytes(elementOf(lo_)), bytesOf(lo_, hi_)));
    lo_ = outer.lo;
    hi_ = outer.hi;
    mask_ *= 2;
    return true;
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
  int mask_ = 0;
  int lo_ = 0, hi_ = 0;
  int keptLo_ = 0, keptHi_ = 0;
  std::vector<Range> ranges_;
  Phase phase_ = Phase::kStart;
  std::vector<std::byte> scratch_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeRabenseifnerAllReduce(transport::Transport& transport,
                                                          const CollectiveArgs& args) {
  return std::make_unique<RabenseifnerAllReduce>(transport, args);
}

}  // namespace ftcomm::algorithms
