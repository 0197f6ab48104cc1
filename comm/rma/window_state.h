// What a Window holds: this member's region, every member's as reached from here, and the
// epoch of the communicator it was established in. window.cc makes it (a collective exchange of
// descriptors over the communicator); window_ops.cc runs the operations on it.
//
// Thread-safety: fixed between creation and reconfigure(); operations only read it (the signal
// slots and data are shared memory, touched with atomics or copies).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "ftcomm/communicator.h"
#include "ftcomm/proto/recorder.pb.h"
#include "ftcomm/window.h"
#include "rma/window_region.h"
#include "rma/window_ucx.h"

namespace ftcomm::shm {
class ShmDomain;
}

namespace ftcomm::rma {

// One member's window as this process reaches it.
struct WindowMember {
  bool self = false;
  pid_t pid = 0;
  std::size_t bytes = 0;
  WindowRegion region;        // its signal slots (and data, for allocated windows); not self
  std::byte* data = nullptr;  // allocated windows: its data, mapped here
  std::uint64_t address = 0;  // registered windows: its data's address in its own process
  // Registered windows on this host: its member of `WindowState::shm`, whose mapping of its
  // allocMem memory (ShmDomain::viewMember) a get copies from where the window lies in it.
  int shmMember = -1;
  bool viaUcx = false;  // another host, or no shared-memory access: UCX RMA
};

class WindowState {
 public:
  // Collective over `comm`.
  static Result<std::unique_ptr<WindowState>> create(Communicator& comm, void* userBase,
                                                     std::size_t bytes,
                                                     const WindowOptions& options);
  Status reconfigure();

  Communicator& comm;
  const WindowOptions options;
  const bool registered;
  void* const userBase;
  const std::size_t bytes;
  WindowRegion own;
  std::vector<WindowMember> members;    // by rank
  std::unique_ptr<UcxWindowPath> ucx;   // null when every member is reached through shared memory
  std::shared_ptr<shm::ShmDomain> shm;  // the epoch's, for registered windows (null under UCX)
  std::uint64_t epoch = 0;
  std::atomic<std::uint64_t> seq{0};

  // This member's data and signal slots.
  std::byte* ownData() const { return registered ? static_cast<std::byte*>(userBase) : own.data(); }
  std::atomic<std::uint64_t>* slotsOf(int rank) const {
    const WindowMember& m = members[static_cast<std::size_t>(rank)];
    return m.self ? own.signals() : m.region.signals();
  }

  // Records an operation in the flight recorder; its progress is what finish() or the UCX path
  // completes.
  std::shared_ptr<recorder::OpProgress> record(recorder::v1::OpType op, int target,
                                               std::size_t count);
  // A Work for an operation that ended in the call.
  static Work finish(std::shared_ptr<recorder::OpProgress> progress, Status status,
                     std::size_t bytes = 0);

 private:
  WindowState(Communicator& c, const WindowOptions& o, bool r, void* base, std::size_t n)
      : comm(c), options(o), registered(r), userBase(base), bytes(n) {}
  // The descriptors of every member, then each member mapped; `own` must be set.
  Status establish();
};

}  // namespace ftcomm::rma
