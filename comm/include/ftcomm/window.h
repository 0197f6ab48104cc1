// One-sided RMA windows over a Communicator: each member exposes a region of memory (its size
// may differ from the others'), and any member reads and writes the others' regions without
// their taking part (MPI_Win, NVSHMEM-style signals).
//
// Paths: a member on the same host reaches a window of Window::allocate() directly (the region
// lives in a memfd that the others map through /proc; a put or get is one copy, an atomic is a
// CPU atomic on the shared page) and a window of Window::registerMemory() with process_vm_writev
// / process_vm_readv (one copy; a get from registered memory that came from ftcomm::allocMem
// copies from the target's memfd mapped read-only here instead, without a system call). That
// needs what the shared-memory transport needs (ptrace-level access between the processes). Members
// on other hosts, and every member under FTCOMM_TRANSPORT=ucx or without that access, are reached
// with UCX RMA (ucp_mem_map, packed rkeys exchanged among the members, ucp_put_nbx / ucp_get_nbx /
// ucp_atomic_op_nbx).
//
// Ordering and completion: on the same host, put, get and atomicAdd are complete when their Work
// is (at once). Over UCX a put's Work completes when the source may be reused, and the data is
// at the target after flush(target), flushAll() or fence(); get and atomicAdd complete when
// their value is here (atomicAdd's *previous must stay valid until then). A signal adds to the
// target's slot after the puts issued before it (release order on the same host, a worker fence
// over UCX), so a member that sees it in waitSignal also sees those puts' data. flush(target),
// flushAll() and fence() complete everything issued before them; fence() is also a barrier of
// the communicator (MPI_Win_fence).
//
// Bounds are checked before anything is touched: an access outside the target's region, a slot
// beyond the window's, or an unaligned atomic is refused with InvalidArgument.
//
// Failures: an operation on a member that died (its pidfd, or the epoch revoked through the
// rendezvous) fails with PeerFailed; waitSignal fails with the communicator's failure instead of
// waiting on. After the communicator's reconfigure(), the survivors call reconfigure() here: the
// window is re-established in place (same addresses, contents and signals kept, ranks renumbered;
// an allocated region moves to a fresh memfd, so a process declared dead that wakes up writes
// only into memory nobody reads). Every operation is recorded in the flight recorder (RMA_*).
//
// Thread-safety: operations may be issued from any thread; creation, reconfigure() and
// destruction are collective and need the other threads to have stopped using the window.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "ftcomm/communicator.h"
#include "ftcomm/export.h"
#include "ftcomm/status.h"
#include "ftcomm/work.h"

namespace ftcomm {

namespace rma {
class WindowState;
}

struct WindowOptions {
  std::size_t signalSlots = 64;  // per member, each a uint64 counter
};

class FTCOMM_API Window {
 public:
  // Collective over `comm`: this member's region of `bytes` (zero-filled), allocated by ftcomm.
  static Result<std::unique_ptr<Window>> allocate(Communicator& comm, std::size_t bytes,
                                                  const WindowOptions& options = {});
  // Collective: the caller's memory, which must outlive the window. atomicAdd on a member of the
  // same host needs allocate() (another process's ordinary memory cannot be updated atomically).
  static Result<std::unique_ptr<Window>> registerMemory(Communicator& comm, void* base,
                                                        std::size_t bytes,
                                                        const WindowOptions& options = {});
  explicit Window(std::unique_ptr<rma::WindowState> state);
  ~Window();  // collective: every member destroys its window before any reuses the memory
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  void* data() const;
  std::size_t bytes() const;
  // The size of `rank`'s region.
  std::size_t bytesOf(int rank) const;

  Work put(const void* source, std::size_t bytes, int target, std::size_t offset,
           const OpOptions& options = {});
  Work get(void* destination, std::size_t bytes, int target, std::size_t offset,
           const OpOptions& options = {});
  // Adds `value` to the int64 at `offset` (8-byte aligned) of `target`'s region; the value before
  // goes to *previous when given.
  Work atomicAdd(int target, std::size_t offset, std::int64_t value,
                 std::int64_t* previous = nullptr, const OpOptions& options = {});
  // Adds `value` to `target`'s signal `slot`, after the puts issued before it to that target.
  Work signal(int target, std::size_t slot, std::uint64_t value, const OpOptions& options = {});
  // Waits until this member's `slot` reaches at least `expected`; Timeout after `timeout`, the
  // communicator's failure when a member dies meanwhile.
  Status waitSignal(std::size_t slot, std::uint64_t expected, std::chrono::milliseconds timeout);
  // This member's slot, now.
  std::uint64_t signalValue(std::size_t slot) const;
  Work flush(int target);
  Work flushAll();
  // flushAll(), then a barrier of the communicator.
  Work fence(const OpOptions& options = {});
  // After comm.reconfigure(), collective over the survivors (see the top of this file).
  Status reconfigure();

 private:
  std::unique_ptr<rma::WindowState> state_;
};

}  // namespace ftcomm
