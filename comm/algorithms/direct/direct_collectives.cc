// The direct (shared-memory) collectives of direct_task.h. Per rank, with n ranks and an input
// of B bytes:
//   allReduce:     reads (n-1)/n B to reduce its own slice, then (n-1)/n B of the others' slices
//                  (where a small slice would be read with cross-memory attach, from a staging
//                  buffer that the peers map);
//   broadcast:     a non-root reads B from the root;
//   allGather:     reads each peer's block;
//   reduceScatter: reads its block from each peer, reducing as it goes;
//   reduce:        as allreduce, but only the root reads the others' slices; below 512 KiB
//                  the root reads and reduces every input alone;
//   allToAll:      reads from each peer the block meant for it.
// Reductions go in 128 KiB pieces through a scratch buffer that stays in cache
// (DirectTask::foldPeerInputs), and an average is divided there, each rank its own part: the
// slices the others read are already averages.
#include <algorithm>
#include <cstring>

#include "algorithms/collectives.h"
#include "algorithms/direct/direct_task.h"
#include "algorithms/direct/staging.h"
#include "algorithms/reduction.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

namespace {

// Rank r's slice of `count` elements of `elementBytes` among n ranks: [start(r), start(r + 1)).
class Slices {
 public:
  Slices(std::size_t count, std::size_t elementBytes, int n)
      : count_(count), elementBytes_(elementBytes), n_(static_cast<std::size_t>(n)) {}
  std::size_t start(int rank) const {
    return blockStart(count_, n_, static_cast<std::size_t>(rank)) * elementBytes_;
  }
  std::size_t length(int rank) const { return start(rank + 1) - start(rank); }

 private:
  std::size_t count_, elementBytes_, n_;
};

class DirectAllReduce final : public DirectTask {
 public:
  DirectAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, 2), slices_(args.count, elementBytes_, n_) {
    // Where the peers would read this rank's slice with cross-memory attach (a result buffer
    // not from allocMem), and the slice is small enough to stay in cache until they have: it is
    // reduced into a staging buffer that they map, and copied into the result from there. The
    // peers read a mapping then, not pages pinned per call; the copy costs one more pass over
    // the slice: it gained up to a third at 1-2 MiB, and from slices of 4 MiB, where memory
    // bandwidth bounds the allreduce, the extra pass cost 10-20%, so larger slices stay where
    // they were.
    const std::size_t slice = slices_.length(rank_);
    std::byte* result = recvBytes() + slices_.start(rank_);
    if (slice > 0 && slice <= kStagedSliceBytes && !transport.mappedForPeers(result, slice)) {
      Staging staged = Staging::take(slice);
      if (transport.mappedForPeers(staged.get(), slice)) staged_ = std::move(staged);
    }
  }

 private:
  static constexpr std::size_t kStagedSliceBytes = std::size_t{1} << 20;

  Status work(int round) override {
    const std::size_t own = slices_.start(rank_);
    if (round == 0) {  // this rank's slice, from every input
      std::byte* into = staged_ ? staged_.get() : recvBytes() + own;
      return foldPeerInputs(into, static_cast<const std::byte*>(args_.send) + own, own,
                            slices_.length(rank_));
    }
    if (staged_) transport::copyBytes(recvBytes() + own, staged_.get(), slices_.length(rank_));
    for (int p = 0; p < n_; ++p) {  // everyone else's slice, where its notices say it is
      if (p != rank_) {
        FTCOMM_RETURN_IF_ERROR(
            read(p, recvBytes() + slices_.start(p), peerRecv(p), slices_.length(p)));
      }
    }
    return Status::Ok();
  }
  // This rank's reduced slice (not the receive buffer's start): each rank decides alone where
  // it keeps it.
  const void* published() const override {
    return staged_ ? static_cast<const void*>(staged_.get()) : recvBytes() + slices_.start(rank_);
  }

  const Slices slices_;
  Staging staged_;
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
    // Each rank starts with the next one, so that the peers do not all read from rank 0 first
    // (a read pins the source's pages under its page-table locks).
    for (int i = 1; i < n_; ++i) {
      const int p = (rank_ + i) % n_;
      FTCOMM_RETURN_IF_ERROR(
          read(p, recvBytes(static_cast<std::size_t>(p) * args_.count), peerSend(p), block));
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
      staged_ = Staging::take(block);
      target = staged_.get();
    }
    return foldPeerInputs(target, in + offset, offset, block);
  }
  Result<bool> finish() override {
    if (staged_) transport::copyBytes(args_.recv, staged_.get(), args_.count * elementBytes_);
    return true;
  }

  Staging staged_;
};

class DirectReduce final : public DirectTask {
 public:
  DirectReduce(transport::Transport& transport, const CollectiveArgs& args)
      : DirectTask(transport, args, splits(args) ? 2 : 1),
        split_(splits(args)),
        slices_(args.count, elementBytes_, n_) {
    if (split_ && rank_ != args_.root) staged_ = Staging::take(slices_.length(rank_));
  }

 private:
  // Below this the root reduces every input alone, in one round: the second round's notices
  // cost more than the work they share (2 ranks on the Intel VMs, 3 alternating runs: 32 KiB
  // 10.4 against 13.6 us, 128 KiB 21 against 30 us, 256 KiB 39 against 45 us; 512 KiB 91
  // against 80 us). The reduce runs inline below 2 MiB by default, so this form serves
  // FTCOMM_INLINE=0 and communicators without an inline area.
  static constexpr std::size_t kSplitBytes = 512 * 1024;
  static bool splits(const CollectiveArgs& args) {
    return args.count * dataTypeSize(args.dtype) >= kSplitBytes;
  }

  // Split: like the allreduce, every rank reduces its own slice from every input (a non-root
  // into a buffer of its own, which its notices publish), then the root reads the others'
  // slices. The root's part shrinks from every peer's whole input to two slices' worth per peer.
  Status work(int round) override {
    if (!split_) {
      if (rank_ != args_.root) return Status::Ok();
      return foldPeerInputs(recvBytes(), static_cast<const std::byte*>(args_.send), 0,
                            args_.count * elementBytes_);
    }
    const std::size_t at = slices_.start(rank_);
    if (round == 0) {
      std::byte* into = rank_ == args_.root ? recvBytes() + at : staged_.get();
      return foldPeerInputs(into, static_cast<const std::byte*>(args_.send) + at, at,
                            slices_.length(rank_));
    }
    if (rank_ != args_.root) return Status::Ok();
    for (int p = 0; p < n_; ++p) {
      if (p != rank_) {
        FTCOMM_RETURN_IF_ERROR(
            read(p, recvBytes() + slices_.start(p), peerRecv(p), slices_.length(p)));
      }
    }
    return Status::Ok();
  }
  const void* published() const override {
    return rank_ == args_.root || !split_ ? args_.recv : staged_.get();
  }

  const bool split_;
  const Slices slices_;
  Staging staged_;  // a non-root's slice, reduced
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
    if (inPlace) staged_ = Staging::take(block * static_cast<std::size_t>(n_));
    std::byte* target = inPlace ? staged_.get() : recvBytes();
    const auto self = static_cast<std::size_t>(rank_);
    if (!inPlace && block > 0) {
      transport::copyBytes(target + self * block,
                           static_cast<const std::byte*>(args_.send) + self * block, block);
    }
    for (int i = 1; i < n_; ++i) {  // starting with the next rank, as the allgather does
      const int p = (rank_ + i) % n_;
      FTCOMM_RETURN_IF_ERROR(
          read(p, target + static_cast<std::size_t>(p) * block, peerSend(p) + self * block, block));
    }
    return Status::Ok();
  }
  Result<bool> finish() override {
    if (staged_)
      copyStagedBlocks(recvBytes(), staged_.get(), args_.count * elementBytes_, n_, rank_);
    return true;
  }

  Staging staged_;
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
