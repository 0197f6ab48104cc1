// How the facade turns a call into an operation on the engine: refuse it if the communicator is
// unusable, give a collective its sequence number and tag slot, choose its algorithm, record it
// in the flight recorder, and start it. Arguments were validated by the caller; an invalid call
// arrives here with its error, is recorded, and comes back as a failed Work without touching the
// communicator (the others then fail at their deadline or through a notice).
//
// Thread-safety: any thread; takes the engine's mutex.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "algorithms/registry.h"
#include "core/comm_state.h"
#include "ftcomm/communicator.h"
#include "ftcomm/proto/recorder.pb.h"

namespace ftcomm::detail {

struct CollectiveCall {
  const char* name = "";  // "allReduce"
  transport::OpKind kind = transport::OpKind::kNone;
  recorder::v1::OpType recordOp = recorder::v1::OP_UNSPECIFIED;
  algorithms::Collective collective = algorithms::Collective::kAllReduce;
  algorithms::CollectiveArgs args;
  std::size_t choiceBytes = 0;  // what the size-based algorithm choice looks at
  std::uint64_t countIn = 0;
  std::uint64_t countOut = 0;
  bool reduces = false;
  std::uint64_t extra = 0;  // the signature's extra (allGatherV: a hash of the counts)
  // V collectives: the counts and displacements, kept with the operation; args' spans are set
  // from these (offset, length) ranges: sendCounts, sendDispls, recvCounts, recvDispls.
  std::vector<std::size_t> counts;
  std::array<std::pair<std::size_t, std::size_t>, 4> ranges{};
};

Work submitCollective(const std::shared_ptr<CommState>& comm, CollectiveCall&& call,
                      const OpOptions& options, const Status& valid);

// A call that ends before it starts, with `why`.
Work refused(const std::shared_ptr<CommState>& comm, std::shared_ptr<recorder::OpProgress> progress,
             Status why);

// The Work of collective `seq`, numbered while the communicator was already broken: it fails
// with the error of the member that broke it if it is the collective that failed there, else
// with Revoked. `lock` holds the engine's mutex; it is released.
Work refusedAsBroken(const std::shared_ptr<CommState>& comm, const char* name, std::uint64_t seq,
                     std::shared_ptr<recorder::OpProgress> progress,
                     std::unique_lock<std::mutex>& lock);

// submitCollective's path for a collective that runs inline (inline_collective.h), numbered
// `seq` and recorded as `progress`: the calling thread posts it under `lock` (the engine's
// mutex), releases the lock and polls while the collective moves (50 us without a chunk done
// at most); what is not done by then goes to the engine like any other operation.
Work runInline(const std::shared_ptr<CommState>& comm, const CollectiveCall& call,
               const InlineChunking& chunking, std::chrono::milliseconds timeout, std::uint64_t seq,
               std::shared_ptr<recorder::OpProgress> progress,
               const transport::OpSignature& signature, std::unique_lock<std::mutex>& lock);

// runInline's polls after the first, back to back, while the engine has a core for every
// process: true when `run` is done (`done` holds the last poll's result).
bool pollQuickly(InlineCollective& run, const Engine& engine, Result<bool>& done);
// The rest of runInline for `run`, posted and polled by the caller (`done`: the last poll): it
// spins while the collective moves, then hands it to the engine. `lock` (the engine's mutex) is
// not held.
Work awaitInline(const std::shared_ptr<CommState>& comm, const CollectiveCall& call,
                 std::chrono::milliseconds timeout, std::uint64_t seq,
                 std::shared_ptr<recorder::OpProgress> progress, InlineCollective run,
                 Result<bool> done, std::unique_lock<std::mutex>& lock);
// The fast path of a broadcast (fast_path.h): true when it completed here, within the call,
// having been posted or read through the broadcast queue and recorded; false when it must take
// the general path, having changed nothing. Arguments are checked there.
bool tryQueuedBroadcast(CommState& comm, void* buffer, std::size_t count, DataType dtype, int root);
// The fast path of an allreduce (fast_path.h): its Work once posted here (done within the call,
// or going on as awaitInline's); nothing when it must take the general path, having changed
// nothing. Arguments are checked there.
std::optional<Work> tryInlineAllReduce(const std::shared_ptr<CommState>& comm, const void* send,
                                       void* recv, std::size_t count, DataType dtype, ReduceOp op,
                                       const OpOptions& options);

struct PointToPointCall {
  bool send = true;
  void* buffer = nullptr;
  std::size_t count = 0;
  DataType dtype = DataType::kUint8;
  int peer = 0;
  int tag = 0;
};

Work submitPointToPoint(const std::shared_ptr<CommState>& comm, const PointToPointCall& call,
                        const OpOptions& options, const Status& valid);

}  // namespace ftcomm::detail
