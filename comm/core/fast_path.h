// The fast path: a small collective that the calling thread completes without the engine's
// mutex, the general submit path or any locked instruction of its own: a queued broadcast
// (algorithms/shm/inline_queue.cc), or an allreduce of one round through the inline slots'
// first lines (InlineCollective::plain).
//
// Why: the root of a small broadcast returns once its post is stored, as an MPI root does. The
// next locked instruction then waits until that store reaches the readers' caches; on the call
// path every lock (the engine's mutex, the recorder's ring, a shared pointer's count) is one, so
// a loop of small broadcasts on the general path pays that transfer on every call
// (docs/BENCHMARKS.md, "The 8-byte broadcast's fast path"). A small allreduce waits for its
// peers anyway; there the general path's bookkeeping (the mutex, the plan's lookup, the ring
// entry and its shared count) is about a sixth of the call.
//
// Which calls: a collective of a size and type for which this communicator's general path took
// the same way before (FastPath's tables: the plan is fixed at creation, so it chooses the same
// again), made by the thread that owns the fast path, while the communicator is usable, no fault
// injection is armed, and nobody left. A broadcast takes it only where its post or read can be
// done at once; anything else takes the general path, which does the same work with every
// check. An allreduce posts on the fast path and polls briefly; one that its peers have not
// joined by then goes on like the general path's (awaitInline), with a ring entry of its own.
//
// Exclusion: only the owning thread takes the fast path, and only while `owner` names it. A
// thread that enters the general path of a communicator whose fast path another thread owns
// revokes it (revokeFastPathLocked) before it touches the shared state: it clears `owner`, makes
// every running thread of the process pass a full barrier (membarrier), and waits until the owner
// is out of the fast path (`busy`). The owner sets `busy` and then reads `owner` again with no
// fence of its own: the barrier is the revoker's. An allreduce that goes on past its quick polls
// leaves the fast path, its sequence number taken, before it takes the engine's mutex. The
// general path gives the ownership to the thread that runs a broadcast or allreduce of such a
// way there while nobody owns it (claimFastPathLocked).
//
// Thread-safety: claim and revoke with the engine's mutex held; the rest as described above.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "ftcomm/status.h"
#include "ftcomm/types.h"

namespace ftcomm::detail {

class CommState;

struct FastPath {
  std::atomic<std::uintptr_t> owner{0};  // the owning thread's token (0: none)
  std::atomic<bool> busy{false};         // the owner is inside the fast path
  // Written under the engine's mutex by the owner, or by a thread about to own the fast path;
  // read by the owner. Bit b of entry t: a broadcast of b bytes (at most shm::kHeadBytes) of
  // DataType t went through the queue on the general path; an allreduce of b bytes of DataType t
  // ran plain there. Bit o of allReduceOps[t]: ReduceOp o, valid for DataType t, did.
  std::uint32_t queuedSizes[kDataTypes.size()] = {};
  std::uint32_t allReduceSizes[kDataTypes.size()] = {};
  std::uint32_t allReduceOps[kDataTypes.size()] = {};
};

// This thread's token: the address of one of its thread-locals, distinct among live threads.
std::uintptr_t threadToken();

// Whether this process can revoke a fast path (membarrier's private expedited barrier is
// registered); without it nobody ever owns one. Registers on the first call.
bool fastPathAvailable();

// The general path ran a queued broadcast of `bytes` of `dtype`, or a plain allreduce with `op`:
// remember the size (and the operation), and give the fast path to this thread if nobody owns it.
void claimFastPathLocked(CommState& comm, DataType dtype, std::size_t bytes);
void claimFastPathLocked(CommState& comm, DataType dtype, std::size_t bytes, ReduceOp op);

// Before this thread touches the state the fast path uses: takes the fast path from another
// thread that owns it, waiting at most `timeout` for that thread to leave it (and for one that
// an earlier revocation gave up waiting for). Reads no clock unless there is one to wait for (a
// reading costs as much as a small collective's bookkeeping).
Status revokeFastPathLocked(CommState& comm, std::chrono::milliseconds timeout);

}  // namespace ftcomm::detail
