// Linear gather: every rank sends its block straight to the root, which receives them all at
// once into their places. Cost: one step; the root receives (n-1) blocks, the others send one.
// In place at the root: its send buffer may be its own block of the result.
#include "algorithms/collectives.h"

namespace ftcomm::algorithms {

namespace {

class LinearGather final : public TaskBase {
 public:
  LinearGather(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      const int n = transport_.size(), rank = transport_.rank();
      const std::size_t bytes = args_.count * elementBytes_;
      if (rank != args_.root) {
        post(transport_.send(args_.root, args_.tag, args_.send, bytes));
      } else {
        for (int peer = 0; peer < n; ++peer) {
          std::byte* block = recvBytes(static_cast<std::size_t>(peer) * args_.count);
          if (peer != rank) {
            post(transport_.recv(peer, args_.tag, block, bytes));
          } else if (block != args_.send && bytes > 0) {
            std::memmove(block, args_.send, bytes);
          }
        }
      }
    }
    return stepDone();
  }

 private:
  bool started_ = false;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeLinearGather(transport::Transport& transport,
                                                 const CollectiveArgs& args) {
  return std::make_unique<LinearGather>(transport, args);
}

}  // namespace ftcomm::algorithms
