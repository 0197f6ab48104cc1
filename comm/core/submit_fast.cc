// The fast path of a queued broadcast (fast_path.h): the calling thread posts or reads it
// without the engine's mutex, records it complete in its own recorder lane, and returns.
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
  ~Inside() { busy.store(false, std::memory_order_release); }
};

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

  fast.busy.store(true, std::memory_order_relaxed);
  // The revoker's barrier orders this store before the load below (fast_path.h); the compiler
  // must not reorder them either.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  Inside inside{fast.busy};
  if (fast.owner.load(std::memory_order_relaxed) != me) return false;
  if (comm.unusable.load(std::memory_order_relaxed) || FaultInjector::process().armed()) {
    return false;
  }
  const std::uint64_t seq = comm.collectiveSeq.load(std::memory_order_relaxed) + 1;
  if (seq > comm.lastCompletable.load(std::memory_order_relaxed)) return false;

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

  recorder::OpDescriptor record;
  record.commId = comm.id;
  record.epoch = comm.epoch;
  record.seq = seq;
  record.op = recorder::pb::BROADCAST;
  record.dtype = recorder::recordedType(dtype);
  record.countIn = record.countOut = count;
  record.root = root;
  record.algorithm = "inline (queued)";
  recorder::FlightRecorder::process().recordCompletedWithinCall(record);
  comm.engine->polledToCompletion();
  return true;
}

}  // namespace ftcomm::detail
