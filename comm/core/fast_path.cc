#include "core/fast_path.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/comm_state.h"
#include "transport/shm/inline_area.h"

namespace ftcomm::detail {

namespace {

long membarrier(int command) {
  return ::syscall(__NR_membarrier, command, 0, 0);
}

thread_local char tokenOfThisThread;

}  // namespace

std::uintptr_t threadToken() {
  return reinterpret_cast<std::uintptr_t>(&tokenOfThisThread);
}

bool fastPathAvailable() {
  static const bool available = [] {
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    return supported > 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
           membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return available;
}

namespace {

// This thread may own `comm`'s fast path and write its tables (fast_path.h): it does, or nobody
// does, and the process can revoke it.
bool mayOwn(const CommState& comm, DataType dtype, std::size_t bytes) {
  if (static_cast<std::size_t>(dtype) >= kDataTypes.size() || bytes > shm::kHeadBytes) return false;
  if (!fastPathAvailable()) return false;
  const std::uintptr_t owner = comm.fast.owner.load(std::memory_order_relaxed);
  return owner == 0 || owner == threadToken();  // revoked first where this thread took the mutex
}

}  // namespace

void claimFastPathLocked(CommState& comm, DataType dtype, std::size_t bytes) {
  if (!mayOwn(comm, dtype, bytes)) return;
  comm.fast.queuedSizes[static_cast<std::size_t>(dtype)] |= 1u << bytes;
  comm.fast.owner.store(threadToken(), std::memory_order_relaxed);
}

void claimFastPathLocked(CommState& comm, DataType dtype, std::size_t bytes, ReduceOp op) {
  if (!mayOwn(comm, dtype, bytes)) return;
  comm.fast.allReduceSizes[static_cast<std::size_t>(dtype)] |= 1u << bytes;
  comm.fast.allReduceOps[static_cast<std::size_t>(dtype)] |= 1u << static_cast<unsigned>(op);
  comm.fast.owner.store(threadToken(), std::memory_order_relaxed);
}

Status revokeFastPathLocked(CommState& comm, std::chrono::milliseconds timeout) {
  const std::uintptr_t owner = comm.fast.owner.load(std::memory_order_relaxed);
  if (owner == threadToken()) return Status::Ok();
  // Nobody owns it and nobody is inside: the usual case. Someone inside without an owner is a
  // thread that an earlier revocation gave up waiting for; it is waited for again.
  if (owner == 0 && !comm.fast.busy.load(std::memory_order_acquire)) return Status::Ok();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (owner != 0) {
    comm.fast.owner.store(0, std::memory_order_relaxed);
    // Every thread of the process that runs now passes a full barrier: an owner that set `busy`
    // before it is seen busy below; one that sets it after sees `owner` cleared and leaves.
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
      return internalError("membarrier failed: " + std::string(std::strerror(errno)));
    }
  }
  while (comm.fast.busy.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status(StatusCode::kTimeout,
                    "another thread of this process stayed inside a collective's fast path on this "
                    "communicator past the call's deadline");
    }
    ::sched_yield();
  }
  return Status::Ok();
}

}  // namespace ftcomm::detail
