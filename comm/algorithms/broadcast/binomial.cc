// Binomial-tree broadcast: ranks are numbered relative to the root; each receives the whole
// buffer from the parent that differs in its lowest set bit, then sends it to its children at
// the lower bits. Cost: ceil(log2 n) steps, the root sends log2(n) whole buffers; for small and
// medium messages.
#include "algorithms/collectives.h"

namespace ftcomm::algorithms {

namespace {

class BinomialBroadcast final : public TaskBase {
 public:
  BinomialBroadcast(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args),
        n_(transport.size()),
        relative_((transport.rank() - args.root + n_) % n_) {}

  Result<bool> advance() override {
    if (phase_ == Phase::kStart) {
      if (relative_ == 0) copyInput();
      phase_ = Phase::kReceive;
      nextStep();
      // The parent clears this rank's lowest set bit; children sit at the bits below it.
      lowestBit_ = 1;
      while (lowestBit_ < n_ && (relative_ & lowestBit_) == 0) lowestBit_ <<= 1;
      if (relative_ != 0)
        post(transport_.recv(real(relative_ - lowestBit_), args_.tag, args_.recv, bytes()));
    }
    auto done = stepDone();
    if (!done.ok()) return done.status();
    if (!*done) return false;
    if (phase_ == Phase::kReceive) {
      phase_ = Phase::kSend;
      nextStep();
      for (int bit = lowestBit_ >> 1; bit > 0; bit >>= 1) {
        if (relative_ + bit < n_)
          post(transport_.send(real(relative_ + bit), args_.tag, args_.recv, bytes()));
      }
      return advance();
    }
    return true;
  }

 private:
  enum class Phase { kStart, kReceive, kSend };
  int real(int relative) const { return (relative + args_.root) % n_; }
  std::size_t bytes() const { return args_.count * elementBytes_; }

  const int n_;
  const int relative_;
  int lowestBit_ = 1;
  Phase phase_ = Phase::kStart;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeBinomialBroadcast(transport::Transport& transport,
                                                      const CollectiveArgs& args) {
  return std::make_unique<BinomialBroadcast>(transport, args);
}

}  // namespace ftcomm::algorithms
