// The fast paths (fast_path.h) of a queued broadcast and a plain allreduce: the calling thread
// posts, reads or reduces without the engine's mutex, records the collective complete in its own
// recorder lane, and returns.
#include "algorithms/shm/signature_words.h"
#include "core/comm_state.h"
#include "core/fault_injection.h"
#include "core/submit.h"
#include "recorder/flight_recorder.h"

namespace ftcomm::detail {

namespace {

// Clears `busy` on every way out of the fast path, with release order: the revoker that sees
// it clear sees everything the fast path wrote.
struct Inside {
  std::atomic<bool>& busy;
  ~Inside() { leave(); }
  void leave() { busy.store(false, std::memory_order_release); }
};

// Enters the fast path of `comm`, which this thread owns: true when it may go on, `busy` set (and
// cleared by `inside`). False where it must take the general path.
[[gnu::always_inline]] inline bool enter(CommState& comm, std::uintptr_t me) {
  FastPath& fast = comm.fast;
  fast.busy.store(true, std::memory_order_relaxed);
  // The revoker's barrier orders this store before the load below (fast_path.h); the compiler
  // must not reorder them either.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (fast.owner.load(std::memory_order_relaxed) != me) return false;
  if (comm.unusable.load(std::memory_order_relaxed) || FaultInjector::process().armed()) {
    return false;
  }
  return comm.collectiveSeq.load(std::memory_order_relaxed) <
         comm.lastCompletable.load(std::memory_order_relaxed);
}

// The recorder's description of collective `seq` (its entry as the general path would make it),
// built in the caller's frame.
[[gnu::always_inline]] inline recorder::OpDescriptor described(const CommState& comm,
                                                               std::uint64_t seq,
                                                               recorder::pb::OpType op,
                                                               DataType dtype, std::size_t count,
                                                               int root) {
  recorder::OpDescriptor record;
  record.commId = comm.id;
  record.epoch = comm.epoch;
  record.seq = seq;
  record.op = op;
  record.dtype = recorder::recordedType(dtype);
  record.countIn = record.countOut = count;
  record.root = root;
  return record;
}

}  // namespace

bool tryQueuedBroadcast(CommState& comm, void* buffer, std::size_t count, DataType dtype,
                        int root) {
  FastPath& fast = comm.fast;
  const std::uintptr_t me = threadToken();
  if (fast.owner.load(std::memory_order_relaxed) != me) return false;
  const auto type = static_cast<std::size_t>(dtype);
  if (type >= kDataTypes.size() || count > shm::kHeadBytes) return false;
  const std::size_t bytes = count * dataTypeSize(dtype);
  if (bytes > shm::kHeadBytes || (fast.queuedSizes[type] >> bytes & 1u) == 0) return false;
  if (root < 0 || root >= comm.size || (buffer == nullptr && count > 0)) return false;

  Inside inside{fast.busy};
  if (!enter(comm, me)) return false;
  const std::uint64_t seq = comm.collectiveSeq.load(std::memory_order_relaxed) + 1;

  // The signature the general path gives it (submitCollective), which the peers compare.
  transport::OpSignature signature;
  signature.kind = transport::OpKind::kBroadcast;
  signature.dtype = static_cast<std::uint8_t>(dtype);
  signature.root = root;
  signature.count = count;
  std::uint64_t words[3];
  packSignature(signature, words);
  const InlineGroup& group = *comm.inlineGroup;
  const bool done = comm.rank == root
                        ? tryPostQueued(group, comm.rank, seq, words, buffer, bytes)
                        : tryReadQueued(group, comm.rank, root, seq, words, buffer, bytes);
  if (!done) return false;
  comm.collectiveSeq.store(seq, std::memory_order_relaxed);

  recorder::OpDescriptor record = described(comm, seq, recorder::pb::BROADCAST, dtype, count, root);
  record.algorithm = "inline (queued)";
  recorder::FlightRecorder::process().recordCompletedWithinCall(record);
  comm.engine->polledToCompletion();
  return true;
}

std::optional<Work> tryInlineAllReduce(const std::shared_ptr<CommState>& state, const void* send,
                                       void* recv, std::size_t count, DataType dtype, ReduceOp op,
                                       const OpOptions& options) {
  CommState& comm = *state;
  FastPath& fast = comm.fast;
  const std::uintptr_t me = threadToken();
  if (fast.owner.load(std::memory_order_relaxed) != me) return std::nullopt;
  const auto type = static_cast<std::size_t>(dtype);
  const auto reduceOp = static_cast<unsigned>(op);
  if (type >= kDataTypes.size() || count > shm::kHeadBytes || reduceOp >= 32) return std::nullopt;
  const std::size_t bytes = count * dataTypeSize(dtype);
  if (bytes > shm::kHeadBytes || (fast.allReduceSizes[type] >> bytes & 1u) == 0 ||
      (fast.allReduceOps[type] >> reduceOp & 1u) == 0) {
    return std::nullopt;
  }
  if (count > 0 && (send == nullptr || recv == nullptr)) return std::nullopt;
  Engine& engine = *comm.engine;
  if (engine.oversubscribed()) return std::nullopt;  // the general path yields between polls

  Inside inside{fast.busy};
  if (!enter(comm, me)) return std::nullopt;
  const std::uint64_t seq = comm.collectiveSeq.load(std::memory_order_relaxed) + 1;
  // The arguments, signature and plan the general path gives it (Communicator::allReduce,
  // submitCollective), which the peers compare.
  algorithms::CollectiveArgs args;
  args.dtype = dtype;
  args.op = op;
  args.send = send;
  args.recv = recv;
  args.count = count;
  args.root = -1;
  transport::OpSignature signature;
  signature.kind = transport::OpKind::kAllReduce;
  signature.dtype = static_cast<std::uint8_t>(dtype);
  signature.reduceOp = static_cast<std::uint8_t>(op);
  signature.root = -1;
  signature.count = count;
  const InlineGroup& group = *comm.inlineGroup;
  const InlineChunking chunking = inlineChunking(*group.tuning, algorithms::Collective::kAllReduce,
                                                 count, dtype, comm.size, comm.peersReadable);
  InlineCollective run(group, comm.rank, algorithms::Collective::kAllReduce, args, chunking,
                       comm.inlineCount + 1, seq, signature, nullptr);
  if (!run.plain()) return std::nullopt;
  comm.inlineCount += 1;
  comm.collectiveSeq.store(seq, std::memory_order_relaxed);
  Result<bool> done = run.poll(1);

  recorder::OpDescriptor record = described(comm, seq, recorder::pb::ALL_REDUCE, dtype, count, -1);
  record.reduceOp = recorder::recordedOp(op);
  record.algorithm = "inline";
  if (pollQuickly(run, engine, done)) {
    recorder::FlightRecorder::process().recordCompletedWithinCall(record);
    engine.polledToCompletion();
    return Work(succeededWorkState(nullptr));
  }

  // The peers are not all there yet (or a poll failed): the general path's way from here, with a
  // ring entry. A thread that revokes the fast path waits under the engine's mutex for this one
  // to leave it, so this one leaves before it waits for the mutex; where the mutex is free, the
  // entry is made first, before any later collective's.
  std::unique_lock<std::mutex> lock(engine.mutex(), std::try_to_lock);
  if (!lock.owns_lock()) {
    inside.leave();
    lock.lock();
  }
  auto progress = recorder::FlightRecorder::process().record(record);
  inside.leave();
  lock.unlock();
  CollectiveCall call;
  call.name = "allReduce";
  call.collective = algorithms::Collective::kAllReduce;
  call.args = args;
  call.choiceBytes = bytes;
  const auto timeout = options.timeout.count() > 0 ? options.timeout : comm.opTimeout;
  return awaitInline(state, call, timeout, seq, std::move(progress), std::move(run), done, lock);
}

}  // namespace ftcomm::detail
