// Recursive-doubling allreduce: in log2(p) steps each rank swaps its whole vector with the
// partner whose rank differs in one bit and reduces. For a rank count n that is not a power of
// two, the first 2(n-p) ranks pair up first (even ones hand their vector to the odd ones and sit
// out), and get the result back at the end. Cost: log2(p) (+2) steps of the whole vector: the
// latency-optimal choice for small messages. Every rank combines the same two partial results
// at each step, so all ranks end with bitwise-identical values.
#include "algorithms/collectives.h"
#include "algorithms/power_of_two_fold.h"
#include "algorithms/reduction.h"
#include "algorithms/scratch.h"

namespace ftcomm::algorithms {

namespace {

class RecursiveDoublingAllReduce final : public TaskBase {
 public:
  RecursiveDoublingAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args),
        n_(transport.size()),
        rank_(transport.rank()),
        fold_(transport.size()) {}

  Result<bool> advance() override {
    if (phase_ == Phase::kStart) {
      copyInput();
      if (n_ == 1) return finishReduction(args_.recv, args_.count);
      scratch_.resize(bytes());  // uninitialized: zeroing costs a copy's time
      startPairing();
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      switch (phase_) {
        case Phase::kPairing:
          if (fold_.absorbs(rank_)) FTCOMM_RETURN_IF_ERROR(foldScratch());
          if (fold_.sitsOut(rank_)) {
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
          return finishReduction(args_.recv, args_.count);
        case Phase::kStart:
          break;
      }
    }
  }

 private:
  enum class Phase { kStart, kPairing, kDoubling, kHandBack, kCollect };

  std::size_t bytes() const { return args_.count * elementBytes_; }
  void startPairing() {
    phase_ = Phase::kPairing;
    nextStep();
    if (fold_.paired(rank_)) {
      if (rank_ % 2 == 0)
        post(transport_.send(rank_ + 1, args_.tag, args_.recv, bytes()));
      else
        post(transport_.recv(rank_ - 1, args_.tag, scratch_.data(), bytes()));
    }
  }

  // Posts the exchange of the current mask; false when the doubling is over.
  bool postExchange() {
    nextStep();
    if (mask_ >= fold_.p) return false;
    const int partner = fold_.realRank(fold_.virtualRank(rank_) ^ mask_);
    post(transport_.recv(partner, args_.tag, scratch_.data(), bytes()));
    post(transport_.send(partner, args_.tag, args_.recv, bytes()));
    return true;
  }

  void startHandBack() {
    phase_ = Phase::kHandBack;
    nextStep();
    if (fold_.absorbs(rank_)) {
      post(transport_.send(rank_ - 1, args_.tag, args_.recv, bytes()));
    }
  }

  Status foldScratch() {
    return reduceInto(args_.dtype, args_.op, args_.recv, scratch_.data(), args_.count);
  }

  const int n_;
  const int rank_;
  const PowerOfTwoFold fold_;
  int mask_ = 1;
  Phase phase_ = Phase::kStart;
  Scratch scratch_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeRecursiveDoublingAllReduce(transport::Transport& transport,
                                                               const CollectiveArgs& args) {
  return std::make_unique<RecursiveDoublingAllReduce>(transport, args);
}

}  // namespace ftcomm::algorithms
