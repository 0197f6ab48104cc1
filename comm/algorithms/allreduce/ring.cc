// Ring allreduce, pipelined: a reduce-scatter around the ring, then an allgather around it. The
// vector is cut into one chunk per rank; in each of n-1 steps a rank sends one chunk to its right
// neighbour and folds the chunk from its left one into its own. Cost: 2(n-1) steps, each rank
// sends and receives 2(n-1)/n of the vector: bandwidth-optimal, for large messages.
//
// Each chunk travels in segments (CollectiveArgs::segmentBytes, default 256 KiB), and the
// schedule is one stream of units, unit u = (step, segment) in order: a segment goes on to the
// right as soon as it is reduced, while the next one is still arriving, so reductions overlap
// the transfers instead of alternating with them. Receives are posted in unit order (the left
// neighbour sends in unit order, and one tag matches in order), at most kDepth ahead of the
// last consumed one; reduce-scatter segments land in a kDepth-slot scratch ring. An average is
// divided by each rank on its own chunk, segment by segment, before the allgather.
#include <deque>
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/reduction.h"
#include "algorithms/scratch.h"

namespace ftcomm::algorithms {

namespace {

// Between two hosts over UCX's TCP transport, 256 KiB segments kept the link busier than 1 MiB
// ones at 4-64 MiB (shaped and unshaped; docs/BENCHMARKS.md), and over loopback they were even.
constexpr std::size_t kDefaultSegmentBytes = 256 << 10;
constexpr std::size_t kDepth = 4;

class RingAllReduce final : public TaskBase {
 public:
  RingAllReduce(transport::Transport& transport, const CollectiveArgs& args)
      : TaskBase(transport, args), n_(transport.size()), rank_(transport.rank()) {}

  Result<bool> advance() override {
    if (!started_) {
      started_ = true;
      copyInput();
      if (n_ == 1 || args_.count == 0) return finishReduction(args_.recv, args_.count);
      const std::size_t segmentBytes =
          args_.segmentBytes > 0 ? args_.segmentBytes : kDefaultSegmentBytes;
      segmentElems_ = std::max<std::size_t>(1, segmentBytes / elementBytes_);
      segments_ = (chunkCount(0) + segmentElems_ - 1) / segmentElems_;  // chunk 0 is the largest
      reduceScatterUnits_ = static_cast<std::size_t>(n_ - 1) * segments_;
      units_ = 2 * reduceScatterUnits_;
      scratch_.resize(kDepth * segmentElems_ * elementBytes_);
    }
    while (true) {
      bool moved = false;
      while (recvPosted_ < units_ && recvPosted_ < consumed_ + kDepth &&
             recvTargetFree(recvPosted_)) {
        postRecv(recvPosted_++);
        moved = true;
      }
      while (sendPosted_ < units_ && sendReady(sendPosted_)) {
        postSend(sendPosted_++);
        moved = true;
      }
      if (!recvs_.empty() && recvs_.front()->done()) {
        if (!recvs_.front()->status().ok()) return recvs_.front()->status();
        recvs_.pop_front();
        FTCOMM_RETURN_IF_ERROR(consume(consumed_++));
        moved = true;
      }
      while (!sends_.empty() && sends_.front()->done()) {
        if (!sends_.front()->status().ok()) return sends_.front()->status();
        sends_.pop_front();
        ++sendsDone_;
        moved = true;
      }
      if (consumed_ == units_ && sendsDone_ == units_) return true;  // averages: consume()
      if (!moved) return false;
    }
  }

 private:
  // The part of the vector a unit moves: one segment of one chunk.
  struct Piece {
    std::size_t start = 0;  // element
    std::size_t count = 0;
  };

  std::size_t chunkCount(int chunk) const {
    const std::size_t n = static_cast<std::size_t>(n_);
    return args_.count / n + (static_cast<std::size_t>(chunk) < args_.count % n ? 1 : 0);
  }
  std::size_t chunkStart(int chunk) const {
    return blockStart(args_.count, static_cast<std::size_t>(n_), static_cast<std::size_t>(chunk));
  }
  Piece piece(int chunk, std::size_t segment) const {
    const std::size_t offset = segment * segmentElems_, total = chunkCount(chunk);
    if (offset >= total) return {chunkStart(chunk), 0};
    return {chunkStart(chunk) + offset, std::min(segmentElems_, total - offset)};
  }
  bool inReduceScatter(std::size_t unit) const { return unit < reduceScatterUnits_; }
  // The step within the unit's phase.
  int stepOf(std::size_t unit) const {
    const std::size_t phaseUnit = inReduceScatter(unit) ? unit : unit - reduceScatterUnits_;
    return static_cast<int>(phaseUnit / segments_);
  }
  std::size_t segmentOf(std::size_t unit) const { return unit % segments_; }
  Piece sendPiece(std::size_t unit) const {
    const int s = stepOf(unit);
    return piece(inReduceScatter(unit) ? wrap(rank_ - s) : wrap(rank_ + 1 - s), segmentOf(unit));
  }
  Piece recvPiece(std::size_t unit) const {
    const int s = stepOf(unit);
    return piece(inReduceScatter(unit) ? wrap(rank_ - s - 1) : wrap(rank_ - s), segmentOf(unit));
  }
  std::byte* scratchSlot(std::size_t unit) {
    return scratch_.data() + (unit % kDepth) * segmentElems_ * elementBytes_;
  }

  // A unit's data is ready to go right once the unit one step earlier on the same segment was
  // consumed (reduced into, or received); the first step sends the input.
  bool sendReady(std::size_t unit) const {
    return unit < segments_ || consumed_ > unit - segments_;
  }
  // An allgather receive overwrites the piece this rank sent in the same step of the
  // reduce-scatter: that send must have completed first.
  bool recvTargetFree(std::size_t unit) const {
    if (inReduceScatter(unit)) return true;
    return sendsDone_ > unit - reduceScatterUnits_;
  }

  void postRecv(std::size_t unit) {
    const Piece p = recvPiece(unit);
    void* target = inReduceScatter(unit) ? scratchSlot(unit) : recvBytes(p.start);
    recvs_.push_back(transport_.recv(left(), args_.tag, target, p.count * elementBytes_));
  }
  void postSend(std::size_t unit) {
    const Piece p = sendPiece(unit);
    sends_.push_back(
        transport_.send(right(), args_.tag, recvBytes(p.start), p.count * elementBytes_));
  }
  // The last reduce-scatter step completes a segment of the chunk this rank owns: an average is
  // divided there, before the allgather sends it on, so no rank divides the whole vector.
  Status consume(std::size_t unit) {
    if (!inReduceScatter(unit)) return Status::Ok();  // received in place
    const Piece p = recvPiece(unit);
    FTCOMM_RETURN_IF_ERROR(
        reduceInto(args_.dtype, args_.op, recvBytes(p.start), scratchSlot(unit), p.count));
    if (stepOf(unit) != n_ - 2) return Status::Ok();
    return finishReduction(recvBytes(p.start), p.count).status();
  }

  int right() const { return wrap(rank_ + 1); }
  int left() const { return wrap(rank_ - 1); }

  const int n_;
  const int rank_;
  bool started_ = false;
  std::size_t segmentElems_ = 1;
  std::size_t segments_ = 1;  // per chunk
  std::size_t reduceScatterUnits_ = 0;
  std::size_t units_ = 0;
  std::size_t recvPosted_ = 0, consumed_ = 0;
  std::size_t sendPosted_ = 0, sendsDone_ = 0;
  std::deque<transport::RequestPtr> recvs_, sends_;
  Scratch scratch_;
};

}  // namespace

std::unique_ptr<CollectiveTask> makeRingAllReduce(transport::Transport& transport,
                                                  const CollectiveArgs& args) {
  return std::make_unique<RingAllReduce>(transport, args);
}

}  // namespace ftcomm::algorithms
