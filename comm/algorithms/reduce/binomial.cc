// Binomial-tree reduce: ranks numbered relative to the root; each folds in the partial results
// of its children (the ranks above it that differ in one lower bit), then sends its own partial
// result to its parent. Cost: ceil(log2 n) steps of the whole buffer; only the root's recv
// buffer is written.
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/reduction.h"
#include "algorithms/scratch.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

class BinomialReduce final : public TaskBase {
 public:
  BinomialReduce(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args),
        n_(transport.size()),
        relative_((transport.rank() - args.root + n_) % n_) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      // The root accumulates in its result buffer; the others in a copy of their input.
      if (relative_ == 0) {
        copyInput();
        accumulator_ = args_.recv;
      } else {
        own_.resize(bytes());
        if (bytes() > 0) transport::copyBytes(own_.data(), args_.send, bytes());
        accumulator_ = own_.data();
      }
      scratch_.resize(bytes());
      if (!postNext()) return finish();
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      if (receiving_) {
        FTCOMM_RETURN_IF_ERROR(
            reduceInto(args_.dtype, args_.op, accumulator_, scratch_.data(), args_.count));
      } else if (sent_) {
        return true;
      }
      mask_ <<= 1;
      if (!postNext()) return finish();
    }
  }

 private:
  std::size_t bytes() const { return args_.count * elementBytes_; }
  int real(int relative) const { return (relative + args_.root) % n_; }

  // Posts the step of the current mask: receive from a child, or send to the parent (the last
  // step). False when there is nothing left to do.
  bool postNext() {
    nextStep();
    for (; mask_ < n_; mask_ <<= 1) {
      if (relative_ & mask_) {
        receiving_ = false;
        sent_ = true;
        post(transport_.send(real(relative_ - mask_), args_.tag, accumulator_, bytes()));
        return true;
      }
      if (relative_ + mask_ < n_) {
        receiving_ = true;
        post(transport_.recv(real(relative_ + mask_), args_.tag, scratch_.data(), bytes()));
        return true;
      }
    }
    return false;
  }

  // Only the root holds the result.
  Result<bool> finish() { return relative_ == 0 ? finishReduction(args_.recv, args_.count) : true; }

  const int n_;
  const int relative_;
  bool started_ = false;
  bool receiving_ = false;
  bool sent_ = false;
  int mask_ = 1;
  void* accumulator_ = nullptr;
  Scratch own_;
  Scratch scratch_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeBinomialReduce(transport::Transport& transport,
                                                   const CollectiveArgs& args) {
  return std::make_unique<BinomialReduce>(transport, args);
}

}  // namespace ftcomm::algorithms
