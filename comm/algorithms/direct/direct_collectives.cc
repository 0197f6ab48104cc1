// The direct (shared-memory) collectives of direct_task.h. Per rank, with n ranks and an input
// of B bytes:
//   allReduce:     reads (n-1)/n B to reduce its own slice, then (n-1)/n B of the others' slices;
//   broadcast:     a non-root reads B from the root;
//   allGather:     reads each peer's block;
//   reduceScatter: reads its block from each peer, reducing as it goes;
//   reduce:        the root reads every peer's input, reducing as it goes;
//   allToAll:      reads from each peer the block meant for it.
// Reductions go in 128 KiB pieces through a scratch buffer that stays in cache
// (DirectTask::foldPeerInputs).
#include <algorithm>
#include <cstring>

#include "algorithms/collectives.h"
#include "algorithms/direct/direct_task.h"
#include "algorithms/reduction.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

class DirectAllReduce final : public DirectTask {
 public:
  DirectAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, 2) {}

 private:
  std::size_t start(int chunk) const {
    const std::size_t c = static_cast<std::size_t>(chunk), n = static_cast<std::size_t>(n_);
    return (c * (args_.count / n) + std::min(c, args_.count % n)) * elementBytes_;
  }
  std::size_t length(int chunk) const { return start(chunk + 1) - start(chunk); }

  Status work(int round) override {
    if (round == 0) {  // this rank's slice, from every input
      return foldPeerInputs(recvBytes() + start(rank_),
                            static_cast<const std::byte*>(args_.send) + start(rank_), start(rank_),
                            length(rank_));
    }
    for (int p = 0; p < n_; ++p) {  // everyone else's slice
      if (p != rank_)
        FTCOMM_RETURN_IF_ERROR(read(p, recvBytes() + start(p), peerRecv(p) + start(p), length(p)));
    }
    return Status::Ok();
  }
  Result<bool> finish() override { return finishReduction(args_.recv, args_.count); }
};

class DirectBroadcast final : public DirectTask {
 public:
  DirectBroadcast(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, 1) {}

 private:
  Status work(int) override {
    if (rank_ == args_.root) {
      copyInput();
      return Status::Ok();
    }
    return read(args_.root, args_.recv, peerSend(args_.root), args_.count * elementBytes_);
  }
};

class DirectAllGather final : public DirectTask {
 public:
  DirectAllGather(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, 1) {}

 private:
  Status work(int) override {
    const std::size_t block = args_.count * elementBytes_;
    std::byte* own = recvBytes(static_cast<std::size_t>(rank_) * args_.count);
    if (args_.send != own && block > 0) transport::copyBytes(own, args_.send, block);
    for (int p = 0; p < n_; ++p) {
      if (p != rank_) {
        FTCOMM_RETURN_IF_ERROR(
            read(p, recvBytes(static_cast<std::size_t>(p) * args_.count), peerSend(p), block));
      }
    }
    return Status::Ok();
  }
};

class DirectReduceScatter final : public DirectTask {
 public:
  DirectReduceScatter(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, 1) {}

 private:
  // The result gathers in the receive buffer, unless that overlaps the input the peers are
  // still reading: then in a buffer of its own, copied over once every peer is done.
  Status work(int) override {
    const std::size_t block = args_.count * elementBytes_;
    const std::size_t offset = static_cast<std::size_t>(rank_) * block;
    const auto* in = static_cast<const std::byte*>(args_.send);
    const auto* out = static_cast<const std::byte*>(args_.recv);
    const bool overlaps = out < in + block * static_cast<std::size_t>(n_) && in < out + block;
    std::byte* target = recvBytes();
    if (overlaps && block > 0) {
      staged_.reset(new std::byte[block]);
      target = staged_.get();
    }
    return foldPeerInputs(target, in + offset, offset, block);
  }
  Result<bool> finish() override {
    if (staged_) transport::copyBytes(args_.recv, staged_.get(), args_.count * elementBytes_);
    return finishReduction(args_.recv, args_.count);
  }

  std::unique_ptr<std::byte[]> staged_;
};

class DirectReduce final : public DirectTask {
 public:
  DirectReduce(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, 1) {}

 private:
  // The root folds every peer's input into its receive buffer; the others only wait until it
  // has read theirs.
  Status work(int) override {
    if (rank_ != args_.root) return Status::Ok();
    return foldPeerInputs(recvBytes(), static_cast<const std::byte*>(args_.send), 0,
                          args_.count * elementBytes_);
  }
  Result<bool> finish() override {
    if (rank_ != args_.root) return true;
    return finishReduction(args_.recv, args_.count);
  }
};

class DirectAllToAll final : public DirectTask {
 public:
  DirectAllToAll(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, 1) {}

 private:
  // In place, the blocks gather apart until every peer has read its own out of this buffer.
  Status work(int) override {
    const std::size_t block = args_.count * elementBytes_;
    const bool inPlace = args_.send == args_.recv;
    if (inPlace) staged_.resize(block * static_cast<std::size_t>(n_));
    std::byte* target = inPlace ? staged_.data() : recvBytes();
    const auto self = static_cast<std::size_t>(rank_);
    if (!inPlace && block > 0) {
      transport::copyBytes(target + self * block,
                           static_cast<const std::byte*>(args_.send) + self * block, block);
    }
    for (int p = 0; p < n_; ++p) {
      if (p == rank_) continue;
      FTCOMM_RETURN_IF_ERROR(
          read(p, target + static_cast<std::size_t>(p) * block, peerSend(p) + self * block, block));
    }
    return Status::Ok();
  }
  Result<bool> finish() override {
    const std::size_t block = args_.count * elementBytes_;
    for (int p = 0; p < n_ && !staged_.empty(); ++p) {
      const auto at = static_cast<std::size_t>(p) * block;
      if (p != rank_) transport::copyBytes(recvBytes() + at, staged_.data() + at, block);
    }
    return true;
  }

  std::vector<std::byte> staged_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeDirectAllReduce(transport::Transport& transport,
                                                    const CollectiveArgs& args) {
  return std::make_unique<DirectAllReduce>(transport, args);
}
std::unique_ptr<CollectiveTask> makeDirectBroadcast(transport::Transport& transport,
                                                    const CollectiveArgs& args) {
  return std::make_unique<DirectBroadcast>(transport, args);
}
std::unique_ptr<CollectiveTask> makeDirectAllGather(transport::Transport& transport,
                                                    const CollectiveArgs& args) {
  return std::make_unique<DirectAllGather>(transport, args);
}
std::unique_ptr<CollectiveTask> makeDirectReduceScatter(transport::Transport& transport,
                                                        const CollectiveArgs& args) {
  return std::make_unique<DirectReduceScatter>(transport, args);
}
std::unique_ptr<CollectiveTask> makeDirectReduce(transport::Transport& transport,
                                                 const CollectiveArgs& args) {
  return std::make_unique<DirectReduce>(transport, args);
}
std::unique_ptr<CollectiveTask> makeDirectAllToAll(transport::Transport& transport,
                                                   const CollectiveArgs& args) {
  return std::make_unique<DirectAllToAll>(transport, args);
}

}  // namespace ftcomm::algorithms
