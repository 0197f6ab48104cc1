// Linear scatter: the root sends each rank its block at once. Cost: one step; the root sends
// (n-1) blocks, the others receive one. In place at the root: its receive buffer may be its own
// block of the input.
#include "algorithms/collectives.h"

namespace ftcomm::algorithms {

namespace {

class LinearScatter final : public TaskBase {
 public:
  LinearScatter(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      const int n = transport_.size(), rank = transport_.rank();
      const std::size_t bytes = args_.count * elementBytes_;
      if (rank != args_.root) {
        post(transport_.recv(args_.root, args_.tag, args_.recv, bytes));
      } else {
        const auto* input = static_cast<const std::byte*>(args_.send);
        for (int peer = 0; peer < n; ++peer) {
          const std::byte* block = input + static_cast<std::size_t>(peer) * bytes;
          if (peer != rank) {
            post(transport_.send(peer, args_.tag, block, bytes));
          } else if (block != args_.recv && bytes > 0) {
            std::memmove(args_.recv, block, bytes);
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

std::unique_ptr<CollectiveTask> makeLinearScatter(transport::Transport& transport,
                                                  const CollectiveArgs& args) {
  return std::make_unique<LinearScatter>(transport, args);
}

}  // namespace ftcomm::algorithms
