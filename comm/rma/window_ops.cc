// The window's operations on members of this host: copies into and out of the mapped regions
// (allocated windows) or the peer's memory through process_vm_writev / process_vm_readv
// (registered windows; a get from registered allocMem memory copies from its mapping), CPU atomics
// on the shared pages, and waits on this member's signal slots. Each checks its arguments and the
// communicator's health first, runs to completion, and is recorded.
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "rma/window_state.h"
#include "transport/copy_bytes.h"
#include "transport/shm/shm_domain.h"

namespace ftcomm {

namespace pb = recorder::v1;
using rma::WindowMember;

namespace {

// Ok when `bytes` at `offset` lie within `target`'s region of `state`.
Status checkAccess(const rma::WindowState& state, const char* what, int target, std::size_t offset,
                   std::size_t bytes, const void* local) {
  const int size = static_cast<int>(state.members.size());
  if (target < 0 || target >= size) {
    return invalidArgument(std::string(what) + ": target " + std::to_string(target) +
                           " outside 0.." + std::to_string(size - 1));
  }
  const std::size_t limit = state.members[static_cast<std::size_t>(target)].bytes;
  if (offset > limit || bytes > limit - offset) {
    return invalidArgument(std::string(what) + " of " + std::to_string(bytes) +
                           " bytes at offset " + std::to_string(offset) + " is outside rank " +
                           std::to_string(target) + "'s window of " + std::to_string(limit) +
                           " bytes");
  }
  if (local == nullptr && bytes > 0) return invalidArgument(std::string(what) + ": a null buffer");
  return Status::Ok();
}

// The communicator's failure, or a reconfigure the window has not followed.
Status usable(const rma::WindowState& state) {
  FTCOMM_RETURN_IF_ERROR(state.comm.health());
  if (state.comm.epoch() != state.epoch) {
    return failedPrecondition("the window belongs to epoch " + std::to_string(state.epoch) +
                              ", the communicator is in " + std::to_string(state.comm.epoch()) +
                              ": call the window's reconfigure()");
  }
  return Status::Ok();
}

// Moves `bytes` between this process and `pid` (write: into it), all of them or an error.
Status crossProcess(pid_t pid, bool write, void* local, std::uint64_t remote, std::size_t bytes) {
  std::size_t done = 0;
  while (done < bytes) {
    iovec here{static_cast<char*>(local) + done, bytes - done};
    iovec there{reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t n = write ? ::process_vm_writev(pid, &here, 1, &there, 1, 0)
                            : ::process_vm_readv(pid, &here, 1, &there, 1, 0);
    if (n <= 0) {
      if (errno == ESRCH) {
        return Status(StatusCode::kPeerFailed,
                      "its process (pid " + std::to_string(pid) + ") exited");
      }
      return internalError(std::string(write ? "process_vm_writev" : "process_vm_readv") + ": " +
                           std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

// Copies between `local` and `target`'s region at `offset`.
Status copyWith(const rma::WindowState& state, int target, std::size_t offset, void* local,
                std::size_t bytes, bool put) {
  const WindowMember& m = state.members[static_cast<std::size_t>(target)];
  std::byte* mapped = m.self ? state.ownData() : m.data;
  if (mapped != nullptr) {
    if (put) {
      transport::copyBytes(mapped + offset, local, bytes);
    } else {
      transport::copyBytes(local, mapped + offset, bytes);
    }
    return Status::Ok();
  }
  if (!put && state.shm && m.shmMember >= 0) {
    if (const transport::PeerView view =
            state.shm->viewMember(m.shmMember, m.address + offset, bytes);
        view.data != nullptr) {
      transport::copyBytes(local, view.data, bytes);
      return Status::Ok();
    }
  }
  return crossProcess(m.pid, put, local, m.address + offset, bytes);
}

Status named(const char* what, int target, Status status) {
  if (status.ok()) return status;
  return Status(status.code(),
                std::string(what) + " to rank " + std::to_string(target) + ": " + status.message());
}

}  // namespace

Work Window::put(const void* source, std::size_t bytes, int target, std::size_t offset,
                 const OpOptions& options) {
  auto progress = state_->record(pb::RMA_PUT, target, bytes);
  Status s = checkAccess(*state_, "put", target, offset, bytes, source);
  if (s.ok()) s = usable(*state_);
  if (!s.ok() || bytes == 0) return rma::WindowState::finish(std::move(progress), s);
  if (state_->members[static_cast<std::size_t>(target)].viaUcx) {
    return state_->ucx->put(source, bytes, target, offset, std::move(progress), options.timeout);
  }
  s = named("put", target,
            copyWith(*state_, target, offset, const_cast<void*>(source), bytes, true));
  return rma::WindowState::finish(std::move(progress), std::move(s));
}

Work Window::get(void* destination, std::size_t bytes, int target, std::size_t offset,
                 const OpOptions& options) {
  auto progress = state_->record(pb::RMA_GET, target, bytes);
  Status s = checkAccess(*state_, "get", target, offset, bytes, destination);
  if (s.ok()) s = usable(*state_);
  if (!s.ok() || bytes == 0) return rma::WindowState::finish(std::move(progress), s);
  if (state_->members[static_cast<std::size_t>(target)].viaUcx) {
    return state_->ucx->get(destination, bytes, target, offset, std::move(progress),
                            options.timeout);
  }
  s = named("get", target, copyWith(*state_, target, offset, destination, bytes, false));
  const std::size_t got = s.ok() ? bytes : 0;
  return rma::WindowState::finish(std::move(progress), std::move(s), got);
}

Work Window::atomicAdd(int target, std::size_t offset, std::int64_t value, std::int64_t* previous,
                       const OpOptions& options) {
  auto progress = state_->record(pb::RMA_ATOMIC_ADD, target, sizeof(std::int64_t));
  Status s = checkAccess(*state_, "atomicAdd", target, offset, sizeof(std::int64_t), &value);
  if (s.ok() && offset % sizeof(std::int64_t) != 0) {
    s = invalidArgument("atomicAdd: offset " + std::to_string(offset) + " is not 8-byte aligned");
  }
  const bool remote = s.ok() && state_->members[static_cast<std::size_t>(target)].viaUcx;
  if (s.ok() && state_->registered && !remote) {
    s = invalidArgument(
        "atomicAdd needs a window from Window::allocate(): registered memory of "
        "another process on this host cannot be updated atomically");
  }
  if (s.ok()) s = usable(*state_);
  if (!s.ok()) return rma::WindowState::finish(std::move(progress), s);
  if (remote) {
    return state_->ucx->atomicAdd(target, offset, value, previous, std::move(progress),
                                  options.timeout);
  }
  const WindowMember& m = state_->members[static_cast<std::size_t>(target)];
  std::byte* base = m.self ? state_->ownData() : m.data;
  auto* word = reinterpret_cast<std::int64_t*>(base + offset);
  const std::int64_t before =
      std::atomic_ref<std::int64_t>(*word).fetch_add(value, std::memory_order_acq_rel);
  if (previous != nullptr) *previous = before;
  return rma::WindowState::finish(std::move(progress), Status::Ok());
}

Work Window::signal(int target, std::size_t slot, std::uint64_t value, const OpOptions& options) {
  auto progress = state_->record(pb::RMA_SIGNAL, target, 0);
  Status s = checkAccess(*state_, "signal", target, 0, 0, &value);
  if (s.ok() && slot >= state_->options.signalSlots) {
    s = invalidArgument("signal: slot " + std::to_string(slot) + " of " +
                        std::to_string(state_->options.signalSlots));
  }
  if (s.ok()) s = usable(*state_);
  if (!s.ok()) return rma::WindowState::finish(std::move(progress), s);
  if (state_->members[static_cast<std::size_t>(target)].viaUcx) {
    return state_->ucx->signal(target, slot, value, std::move(progress), options.timeout);
  }
  // Release: the puts this thread issued to the target before are visible with the signal.
  state_->slotsOf(target)[slot].fetch_add(value, std::memory_order_release);
  return rma::WindowState::finish(std::move(progress), Status::Ok());
}

std::uint64_t Window::signalValue(std::size_t slot) const {
  if (slot >= state_->options.signalSlots) return 0;
  return state_->own.signals()[slot].load(std::memory_order_acquire);
}

Status Window::waitSignal(std::size_t slot, std::uint64_t expected,
                          std::chrono::milliseconds timeout) {
  if (slot >= state_->options.signalSlots) {
    return invalidArgument("waitSignal: slot " + std::to_string(slot) + " of " +
                           std::to_string(state_->options.signalSlots));
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  const auto spinUntil = start + std::chrono::microseconds(20);
  auto nextCheck = start;
  auto pause = std::chrono::microseconds(10);
  const std::atomic<std::uint64_t>& word = state_->own.signals()[slot];
  Status outcome;
  while (word.load(std::memory_order_acquire) < expected) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= nextCheck) {
      // A member that died will not signal: fail with the communicator's failure.
      if (Status h = usable(*state_); !h.ok()) {
        outcome =
            Status(h.code(), "waitSignal on slot " + std::to_string(slot) + ": " + h.message());
        break;
      }
      nextCheck = now + std::chrono::milliseconds(1);
    }
    if (now >= deadline) {
      outcome = timeoutError("waitSignal: slot " + std::to_string(slot) + " is at " +
                             std::to_string(word.load()) + ", not " + std::to_string(expected) +
                             ", after " + std::to_string(timeout.count()) + " ms");
      break;
    }
    // A signal over UCX lands when the engine progresses (its thread does too, when woken).
    if (state_->ucx != nullptr) state_->ucx->progress();
    if (now < spinUntil) continue;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(500));
  }
  (void)rma::WindowState::finish(state_->record(pb::RMA_WAIT_SIGNAL, state_->comm.rank(), 0),
                                 outcome);
  return outcome;
}

// Same-host operations are complete when their Work is: only members reached through UCX have
// anything to flush.
Work Window::flush(int target) {
  auto progress = state_->record(pb::RMA_FLUSH, target, 0);
  Status s = checkAccess(*state_, "flush", target, 0, 0, this);
  if (s.ok()) s = usable(*state_);
  if (s.ok() && state_->members[static_cast<std::size_t>(target)].viaUcx) {
    return state_->ucx->flush(target, std::move(progress), {});
  }
  return rma::WindowState::finish(std::move(progress), std::move(s));
}

Work Window::flushAll() {
  auto progress = state_->record(pb::RMA_FLUSH, -1, 0);
  Status s = usable(*state_);
  if (s.ok() && state_->ucx != nullptr) return state_->ucx->flush(-1, std::move(progress), {});
  return rma::WindowState::finish(std::move(progress), std::move(s));
}

Work Window::fence(const OpOptions& options) {
  auto progress = state_->record(pb::RMA_FENCE, -1, 0);
  Status s = usable(*state_);
  if (s.ok()) s = flushAll().wait();
  if (!s.ok()) return rma::WindowState::finish(std::move(progress), s);
  (void)rma::WindowState::finish(std::move(progress), Status::Ok());
  return state_->comm.barrier(options);
}

}  // namespace ftcomm
