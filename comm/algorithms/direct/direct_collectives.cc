// The direct (shared-memory) collectives of direct_task.h. Per rank, with n ranks and an input
// of B bytes:
//   allReduce:     reads (n-1)/n B to reduce its own slice, then (n-1)/n B of the others' slices;
//   broadcast:     a non-root reads B from the root;
//   allGather:     reads each peer's block;
//   reduceScatter: reads its block from each peer, reducing as it goes;
//   reduce:        the root reads every peer's input, reducing as it goes;
//   allToAll:      reads from each peer the block meant for it.
// Reductions go in pieces of kPiece bytes through a scratch buffer that stays in cache.
#include <algorithm>
#include <cstring>

#include "algorithms/collectives.h"
#include "algorithms/direct/direct_task.h"
#include "algorithms/reduction.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

constexpr std::size_t kPiece = 128 * 1024;

// Folds every peer's input [offset, offset + bytes) into `into`, which holds this rank's.
class Reducer {
 public:
  Reducer(const CollectiveArgs& args, std::size_t elementBytes)
      : args_(args), elementBytes_(elementBytes) {}

  template <typename Read>
  Status fold(int n, int self, std::byte* into, std::uint64_t offset, std::size_t bytes,
              Read&& readPeer) {
    const std::size_t pieceBytes = kPiece / elementBytes_ * elementBytes_;
    // Uninitialized: zeroing it would cost as much as a small collective.
    if (!scratch_ && bytes > 0) scratch_.reset(new std::byte[std::min(pieceBytes, bytes)]);
    for (std::size_t done = 0; done < bytes; done += pieceBytes) {
      const std::size_t now = std::min(pieceBytes, bytes - done);
      for (int p = 0; p < n; ++p) {
        if (p == self) continue;
        FTCOMM_RETURN_IF_ERROR(readPeer(p, scratch_.get(), offset + done, now));
        FTCOMM_RETURN_IF_ERROR(
            reduceInto(args_.dtype, args_.op, into + done, scratch_.get(), now / elementBytes_));
      }
    }
    return Status::Ok();
  }

 private:
  const CollectiveArgs& args_;
  std::size_t elementBytes_;
  std::unique_ptr<std::byte[]> scratch_;
};

class DirectAllReduce final : public DirectTask {
 public:
  DirectAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, 2), reducer_(args_, elementBytes_) {}

 private:
  std::size_t start(int chunk) const {
    const std::size_t c = static_cast<std::size_t>(chunk), n = static_cast<std::size_t>(n_);
    return (c * (args_.count / n) + std::min(c, args_.count % n)) * elementBytes_;
  }
  std::size_t length(int chunk) const { return start(chunk + 1) - start(chunk); }

  Status work(int round) override {
    if (round == 0) {  // this rank's slice, from every input
      std::byte* mine = recvBytes() + start(rank_);
      if (args_.send != args_.recv) {
        transport::copyBytes(mine, static_cast<const std::byte*>(args_.send) + start(rank_),
                             length(rank_));
      }
      return reducer_.fold(n_, rank_, mine, start(rank_), length(rank_),
                           [this](int p, void* into, std::uint64_t offset, std::size_t bytes) {
                             return read(p, into, peerSend(p) + offset, bytes);
                           });
    }
    for (int p = 0; p < n_; ++p) {  // everyone else's slice
      if (p != rank_)
        FTCOMM_RETURN_IF_ERROR(read(p, recvBytes() + start(p), peerRecv(p) + start(p), length(p)));
    }
    return Status::Ok();
  }
  Result<bool> finish() override { return finishReduction(args_.recv, args_.count); }

  Reducer reducer_;
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
      : DirectTask(transport, args, 1), reducer_(args_, elementBytes_) {}

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
    if (block > 0) transport::copyBytes(target, in + offset, block);
    return reducer_.fold(n_, rank_, target, offset, block,
                         [this](int p, void* into, std::uint64_t at, std::size_t bytes) {
                           return read(p, into, peerSend(p) + at, bytes);
                         });
  }
  Result<bool> finish() override {
    if (staged_) transport::copyBytes(args_.recv, staged_.get(), args_.count * elementBytes_);
    return finishReduction(args_.recv, args_.count);
  }

  Reducer reducer_;
  std::unique_ptr<std::byte[]> staged_;
};

class DirectReduce final : public DirectTask {
 public:
  DirectReduce(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, 1), reducer_(args_, elementBytes_) {}

 private:
  // The root folds every peer's input into its receive buffer; the others only wait until it
  // has read theirs.
  Status work(int) override {
    if (rank_ != args_.root) return Status::Ok();
    copyInput();
    return reducer_.fold(n_, rank_, recvBytes(), 0, args_.count * elementBytes_,
                         [this](int p, void* into, std::uint64_t at, std::size_t bytes) {
                           return read(p, into, peerSend(p) + at, bytes);
                         });
  }
  Result<bool> finish() override {
    if (rank_ != args_.root) return true;
    return finishReduction(args_.recv, args_.count);
  }

  Reducer reducer_;
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
