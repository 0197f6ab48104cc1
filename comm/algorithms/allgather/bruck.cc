// Bruck allgather: in step k each rank sends the blocks it has gathered so far (up to 2^k of
// them) to the rank 2^k behind and receives as many from the rank 2^k ahead; a final local
// rotation puts the blocks in rank order. Cost: ceil(log2 n) steps for any n: the latency
// choice for small blocks.
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/scratch.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

class BruckAllGather final : public TaskBase {
 public:
  BruckAllGather(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      // gathered_[i] holds the block of rank (rank + i) mod n.
      gathered_.resize(blockBytes() * static_cast<std::size_t>(n_));
      if (blockBytes() > 0) {
        const std::byte* own = args_.send == args_.recv
                                   ? recvBytes(static_cast<std::size_t>(rank_) * args_.count)
                                   : static_cast<const std::byte*>(args_.send);
        transport::copyBytes(gathered_.data(), own, blockBytes());
      }
      if (!postStep()) return finish();
    }
    while (true) {
      auto done = stepDone();
      if (!done.ok()) return done.status();
      if (!*done) return false;
      distance_ *= 2;
      if (!postStep()) return finish();
    }
  }

 private:
  std::size_t blockBytes() const { return args_.count * elementBytes_; }

  bool postStep() {
    nextStep();
    if (distance_ >= n_) return false;
    const int blocks = std::min(distance_, n_ - distance_);
    const std::size_t bytes = static_cast<std::size_t>(blocks) * blockBytes();
    post(transport_.recv((rank_ + distance_) % n_, args_.tag,
                         gathered_.data() + static_cast<std::size_t>(distance_) * blockBytes(),
                         bytes));
    post(transport_.send((rank_ - distance_ + n_) % n_, args_.tag, gathered_.data(), bytes));
    return true;
  }

  Result<bool> finish() {
    for (int i = 0; i < n_ && blockBytes() > 0; ++i) {
      transport::copyBytes(recvBytes(static_cast<std::size_t>((rank_ + i) % n_) * args_.count),
                           gathered_.data() + static_cast<std::size_t>(i) * blockBytes(),
                           blockBytes());
    }
    return true;
  }

  const int n_;
  const int rank_;
  bool started_ = false;
  int distance_ = 1;
  Scratch gathered_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeBruckAllGather(transport::Transport& transport,
                                                   const CollectiveArgs& args) {
  return std::make_unique<BruckAllGather>(transport, args);
}

}  // namespace ftcomm::algorithms
