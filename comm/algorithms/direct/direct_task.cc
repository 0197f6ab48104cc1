#include "algorithms/direct/direct_task.h"

#include <algorithm>

#include "algorithms/reduction.h"
#include "transport/copy_bytes.h"

namespace ftcomm::algorithms {

DirectTask::DirectTask(transport::Transport& transport, const CollectiveArgs& args, int rounds)
    : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()), rounds_(rounds) {}

namespace {

constexpr std::size_t kPiece = 128 * 1024;

}  // namespace

Status DirectTask::foldPeerInputs(std::byte* into, const std::byte* own, std::uint64_t offset,
                                  std::size_t bytes) {
  if (n_ == 1) {
    if (own != into && bytes > 0) transport::copyBytes(into, own, bytes);
    return averaged(into, bytes);
  }
  const std::size_t pieceBytes = kPiece / elementBytes_ * elementBytes_;
  // A peer's input mapped here (its allocMem memory) is reduced in place; the others' are
  // copied in piece by piece.
  views_.assign(static_cast<std::size_t>(n_), {});
  bool copies = false;
  for (int p = 0; p < n_; ++p) {
    if (p == rank_ || bytes == 0) continue;
    views_[static_cast<std::size_t>(p)] = transport_.viewPeer(p, peerSend(p) + offset, bytes);
    copies |= views_[static_cast<std::size_t>(p)].data == nullptr;
  }
  // Uninitialized: zeroing it would cost as much as a small collective.
  if (!scratch_ && copies) scratch_.reset(new std::byte[std::min(pieceBytes, bytes)]);
  // A large result is written around the cache by the last reduction of each piece (the ones
  // before read it back), from the copy policy's resultAroundCacheFrom. Not for an average, whose
  // division reads the piece again at once.
  const int last = rank_ == n_ - 1 ? n_ - 2 : n_ - 1;
  const bool aroundCache =
      bytes >= transport::copyPolicy().resultAroundCacheFrom && args_.op != ReduceOp::kAvg;
  for (std::size_t done = 0; done < bytes; done += pieceBytes) {
    const std::size_t now = std::min(pieceBytes, bytes - done);
    const std::byte* first = own + done;  // what the next peer's piece is reduced with
    for (int p = 0; p < n_; ++p) {
      if (p == rank_) continue;
      const std::byte* piece = views_[static_cast<std::size_t>(p)].data;
      if (piece != nullptr) {
        piece += done;
      } else {
        FTCOMM_RETURN_IF_ERROR(read(p, scratch_.get(), peerSend(p) + offset + done, now));
        piece = scratch_.get();
      }
      const std::size_t count = now / elementBytes_;
      FTCOMM_RETURN_IF_ERROR(
          aroundCache && p == last
              ? reduceFromAroundCache(args_.dtype, args_.op, into + done, first, piece, count)
              : reduceFrom(args_.dtype, args_.op, into + done, first, piece, count));
      first = into + done;
    }
    FTCOMM_RETURN_IF_ERROR(averaged(into + done, now));  // while the piece is in cache
  }
  // What was reduced in place was the peers' input only if they had not taken it back.
  for (int p = 0; p < n_; ++p) {
    if (views_[static_cast<std::size_t>(p)].data == nullptr) continue;
    FTCOMM_RETURN_IF_ERROR(transport_.checkPeerLoan(p, notice(0, p).mark));
  }
  views_.clear();  // the mappings may go
  return Status::Ok();
}

Status DirectTask::averaged(std::byte* sums, std::size_t bytes) const {
  if (args_.op != ReduceOp::kAvg || bytes == 0) return Status::Ok();
  return finishAverage(args_.dtype, sums, bytes / elementBytes_, n_);
}

void DirectTask::tellPeers(int stage) {
  Notice& mine = outbox_[static_cast<std::size_t>(stage)];
  mine.magic = magic(stage);
  mine.send = reinterpret_cast<std::uint64_t>(args_.send);
  mine.recv = reinterpret_cast<std::uint64_t>(published());
  mine.mark = transport_.loanMark();
  for (int p = 0; p < n_; ++p) {
    if (p != rank_) sends_.push_back(transport_.send(p, args_.tag, &mine, sizeof mine));
  }
}

Status DirectTask::checkStage(int stage) const {
  for (int p = 0; p < n_; ++p) {
    if (p == rank_) continue;
    const auto& request = recvs_[static_cast<std::size_t>(stage * n_ + p)];
    if (!request->status().ok()) return request->status();
    if (notice(stage, p).magic != magic(stage)) {
      return Status(StatusCode::kMismatch, "rank " + std::to_string(p) +
                                               " does not run the direct (shared-memory) "
                                               "algorithm where rank " +
                                               std::to_string(rank_) + " does");
    }
  }
  for (const auto& request : sends_) {
    if (request->done() && !request->status().ok()) return request->status();
  }
  return Status::Ok();
}

Result<bool> DirectTask::advance() {
  if (stage_ < 0) {
    if (n_ == 1) {
      for (int r = 0; r < rounds_; ++r) FTCOMM_RETURN_IF_ERROR(work(r));
      return finish();
    }
    const auto stages = static_cast<std::size_t>(rounds_ + 1);
    inbox_.resize(stages * static_cast<std::size_t>(n_));
    outbox_.resize(stages);
    recvs_.resize(inbox_.size());
    // Every notice from a peer travels on one tag, so they match in the order posted.
    for (int stage = 0; stage <= rounds_; ++stage) {
      for (int p = 0; p < n_; ++p) {
        if (p == rank_) continue;
        const auto index = static_cast<std::size_t>(stage * n_ + p);
        recvs_[index] = transport_.recv(p, args_.tag, &inbox_[index], sizeof(Notice));
      }
    }
    tellPeers(0);
    stage_ = 0;
  }
  while (true) {
    for (int p = 0; p < n_; ++p) {
      if (p == rank_) continue;
      const auto& request = recvs_[static_cast<std::size_t>(stage_ * n_ + p)];
      if (!request->done()) return false;
    }
    FTCOMM_RETURN_IF_ERROR(checkStage(stage_));
    if (stage_ == rounds_) {
      for (const auto& request : sends_) {
        if (!request->done()) return false;
      }
      FTCOMM_RETURN_IF_ERROR(checkStage(stage_));
      return finish();
    }
    FTCOMM_RETURN_IF_ERROR(work(stage_));
    ++stage_;
    tellPeers(stage_);
  }
}

}  // namespace ftcomm::algorithms
