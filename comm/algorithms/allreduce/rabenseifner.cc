// Rabenseifner allreduce: a reduce-scatter by recursive halving (each step swaps half of the
// current range with a partner and reduces the half kept), then an allgather by recursive
// doubling that retraces the steps. A rank count that is not a power of two is first folded
// into one, as in recursive doubling. Cost: 2 log2(p) steps moving 2(p-1)/p of the vector:
// bandwidth like the ring with log steps, for medium messages. Each element is reduced on one
// rank only, so every rank ends with bitwise-identical values.
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/power_of_two_fold.h"
#include "algorithms/reduction.h"
#include "algorithms/scratch.h"

namespace ftcomm::algorithms {

namespace {

class RabenseifnerAllReduce final : public TaskBase {
 public:
  RabenseifnerAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args),
        n_(transport.size()),
        rank_(transport.rank()),
        fold_(transport.size()) {}

  Result<bool> advance() override {
    if (phase_ == Phase::kStart) {
      copyInput();
      if (n_ == 1) return finishReduction(args_.recv, args_.count);
      scratch_.resize(args_.count * elementBytes_);
      phase_ = Phase::kFold;
      nextStep();
      if (fold_.paired(rank_)) {
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
          if (fold_.sitsOut(rank_)) {
            phase_ = Phase::kUnfold;  // sits out; gets the result at the end
            nextStep();
            post(transport_.recv(rank_ + 1, args_.tag, args_.recv, wholeBytes()));
            break;
          }
          if (fold_.paired(rank_)) {
            FTCOMM_RETURN_IF_ERROR(
                reduceInto(args_.dtype, args_.op, args_.recv, scratch_.data(), args_.count));
          }
          phase_ = Phase::kHalving;
          mask_ = fold_.p / 2;
          lo_ = 0;
          hi_ = fold_.p;
          if (!postHalving()) FTCOMM_RETURN_IF_ERROR(startDoubling());
          break;
        case Phase::kHalving:
          FTCOMM_RETURN_IF_ERROR(reduceInto(args_.dtype, args_.op, recvBytes(elementOf(keptLo_)),
                                            scratch_.data(),
                                            elementOf(keptHi_) - elementOf(keptLo_)));
          ranges_.push_back({lo_, hi_});
          lo_ = keptLo_;
          hi_ = keptHi_;
          mask_ /= 2;
          if (!postHalving()) FTCOMM_RETURN_IF_ERROR(startDoubling());
          break;
        case Phase::kDoubling:
          if (!postDoubling()) {
            phase_ = Phase::kUnfold;
            nextStep();
            if (fold_.absorbs(rank_)) {
              post(transport_.send(rank_ - 1, args_.tag, args_.recv, wholeBytes()));
            }
          }
          break;
        case Phase::kUnfold:
          return true;  // averages were divided where the halving ended (startDoubling)
        case Phase::kStart:
          break;
      }
    }
  }

 private:
  enum class Phase { kStart, kFold, kHalving, kDoubling, kUnfold };
  struct Range {
    int lo, hi;  // in blocks of the vector cut into fold_.p
  };

  std::size_t wholeBytes() const { return args_.count * elementBytes_; }
  int virtualRank() const { return fold_.virtualRank(rank_); }
  // First element of block b when the vector is cut into fold_.p nearly equal blocks.
  std::size_t elementOf(int block) const {
    return blockStart(args_.count, static_cast<std::size_t>(fold_.p),
                      static_cast<std::size_t>(block));
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
    const int partner = fold_.realRank(virtualRank() ^ mask_);
    post(transport_.recv(partner, args_.tag, scratch_.data(), bytesOf(keptLo_, keptHi_)));
    post(
        transport_.send(partner, args_.tag, recvBytes(elementOf(sentLo)), bytesOf(sentLo, sentHi)));
    return true;
  }

  // The halving left this rank its range fully reduced: an average is divided there, so the
  // doubling passes on averages and no rank divides the whole vector.
  Status startDoubling() {
    FTCOMM_RETURN_IF_ERROR(
        finishReduction(recvBytes(elementOf(lo_)), elementOf(hi_) - elementOf(lo_)).status());
    phase_ = Phase::kDoubling;
    mask_ = 1;
    postDoubling();
    return Status::Ok();
  }

  // Retraces the halving: sends the range this rank holds, receives the partner's other half.
  bool postDoubling() {
    nextStep();
    if (ranges_.empty()) return false;
    const Range outer = ranges_.back();
    ranges_.pop_back();
    const int partner = fold_.realRank(virtualRank() ^ mask_);
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

  const int n_;
  const int rank_;
  const PowerOfTwoFold fold_;
  int mask_ = 0;
  int lo_ = 0, hi_ = 0;
  int keptLo_ = 0, keptHi_ = 0;
  std::vector<Range> ranges_;
  Phase phase_ = Phase::kStart;
  Scratch scratch_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeRabenseifnerAllReduce(transport::Transport& transport,
                                                          const CollectiveArgs& args) {
  return std::make_unique<RabenseifnerAllReduce>(transport, args);
}

}  // namespace ftcomm::algorithms
