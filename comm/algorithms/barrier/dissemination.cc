// Dissemination barrier: in step k each rank signals the rank 2^k ahead and waits for the one
// 2^k behind; after ceil(log2 n) steps every rank has heard, directly or not, from all others.
// Cost: ceil(log2 n) steps of empty messages, for any n.
#include "algorithms/collectives.h"

namespace ftcomm::algorithms {

namespace {

class DisseminationBarrier final : public TaskBase {
 public:
  DisseminationBarrier(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {}

  Result<bool> advance() override {
    if (distance_ == 0) {
      distance_ = 1;
      if (n_ == 1) return true;
      postStep();
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      distance_ <<= 1;
      if (distance_ >= n_) return true;
      postStep();
    }
  }

 private:
  void postStep() {
    nextStep();
    post(transport_.recv((rank_ - distance_ % n_ + n_) % n_, args_.tag, nullptr, 0));
    post(transport_.send((rank_ + distance_) % n_, args_.tag, nullptr, 0));
  }

  const int n_;
  const int rank_;
  int distance_ = 0;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeDisseminationBarrier(transport::Transport& transport,
                                                         const CollectiveArgs& args) {
  return std::make_unique<DisseminationBarrier>(transport, args);
}

}  // namespace ftcomm::algorithms
