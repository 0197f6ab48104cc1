// A collective algorithm in progress: a schedule of sends, receives and reductions over the
// Transport interface, advanced without blocking. The progress engine calls advance() after
// driving the transport; the task posts what its next step needs, consumes what completed, and
// says when it is done. Many tasks may be in flight on one transport; each uses its own tag
// slot, and messages between two ranks with one tag match in order (transport.h), so a task's
// steps need no further numbering.
//
// Thread-safety: none; the progress thread owns a task.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ftcomm/types.h"
#include "transport/transport.h"

namespace ftcomm::algorithms {

struct CollectiveArgs {
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  const void* send = nullptr;  // may equal recv (in place)
  void* recv = nullptr;
  std::size_t count = 0;  // elements per rank (allreduce: of the whole vector)
  int root = 0;
  transport::MessageTag tag;
  // allGatherV: recvCounts/recvDispls (elements) place each rank's block. allToAllV: all four,
  // by peer. Owned by the caller for the task's lifetime.
  std::span<const std::size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  // Pipelined algorithms (the ring allreduce): bytes per segment, from the tuning profile's
  // band (`segment=`); 0 for the algorithm's default.
  std::size_t segmentBytes = 0;
  // The node-aware algorithms: each rank's host, as an index (empty: unknown). Owned by the
  // communicator's state, which outlives the task.
  std::span<const int> hosts;
};

class CollectiveTask {
 public:
  virtual ~CollectiveTask() = default;
  // Ok(true): done, the result is in args.recv. Ok(false): waiting on the transport. An error:
  // the collective failed (a peer failed, a mismatch); the task must not be advanced again.
  virtual Result<bool> advance() = 0;
  // After an advance() that returned Ok(false): more work is ready now (the task stopped to let
  // others progress, not to wait), so the engine advances it again without sleeping.
  virtual bool hasMoreWork() const { return false; }
  // The longest the progress thread may sleep while this task waits, where what it waits for
  // may not wake it; zero: as long as it likes.
  virtual std::chrono::microseconds sleepLimit() const { return std::chrono::microseconds::zero(); }
};

// The first element of block `block` when `count` elements are cut into `blocks` nearly equal
// blocks (the first count % blocks of them one element longer); block == blocks gives count.
inline std::size_t blockStart(std::size_t count, std::size_t blocks, std::size_t block) {
  return block * (count / blocks) + std::min(block, count % blocks);
}

// What a schedule shares: its transport and arguments, the requests of its current step, and a
// scratch buffer.
class TaskBase : public CollectiveTask {
 protected:
  TaskBase(transport::Transport& transport, const CollectiveArgs& args)
      : transport_(transport), args_(args), elementBytes_(dataTypeSize(args.dtype)) {}

  // Ok(true) when every request of the current step is done; their first error otherwise.
  Result<bool> stepDone() const;
  void post(transport::RequestPtr request) { step_.push_back(std::move(request)); }
  void nextStep() { step_.clear(); }
  std::byte* recvBytes(std::size_t element = 0) const {
    return static_cast<std::byte*>(args_.recv) + element * elementBytes_;
  }
  // Copies send into recv unless the call is in place.
  void copyInput() const;
  // Ends a reduction: AVG (accumulated as a sum by reduceInto) divides by the number of ranks.
  Result<bool> finishReduction(void* data, std::size_t count) const;
  // r modulo the number of ranks: ring neighbours and blocks.
  int wrap(int r) const {
    return ((r % transport_.size()) + transport_.size()) % transport_.size();
  }

  transport::Transport& transport_;
  CollectiveArgs args_;
  std::size_t elementBytes_;
  std::vector<transport::RequestPtr> step_;
};

}  // namespace ftcomm::algorithms
