#include "transport/shm/shm_access.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

namespace ftcomm::shm {
namespace {

// What a child process could not do to its parent. kNotRun: it ended before it said (killed,
// or never started).
enum Failed { kOk = 0, kOpenFd = 10, kReadMemory = 11, kPidfd = 12, kGetFd = 13, kNotRun = -1 };

// What the child is told: everything it needs is made before it starts, so that it only makes
// system calls. It answers in `outcome`, in the memory it shares with its parent, and not only
// in its exit status: where the application ignores SIGCHLD the kernel reaps the child itself,
// waitpid finds nothing (ECHILD), and a status read from it would say nothing at all.
struct ProbeTask {
  pid_t parent;
  int fd;  // the parent's descriptor that the child takes
  const char* fdPath;
  const volatile char* secret;
  volatile int outcome = kNotRun;
};

// Each access in turn on the parent; the result says which failed.
int tryAccess(const ProbeTask& task) {
  const int opened = ::open(task.fdPath, O_RDONLY | O_CLOEXEC);
  if (opened < 0) return kOpenFd;
  ::close(opened);
  char got[8] = {};
  iovec local{got, sizeof got};
  iovec remote{const_cast<char*>(task.secret), sizeof got};
  if (::process_vm_readv(task.parent, &local, 1, &remote, 1, 0) != sizeof got || got[6] != '!') {
    return kReadMemory;
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, task.parent, 0));
  if (pidfd < 0) return kPidfd;
  const int taken = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, task.fd, 0));
  ::close(pidfd);
  if (taken < 0) return kGetFd;
  ::close(taken);
  return kOk;
}

// The child's part.
int probeChild(void* arg) {
  auto& task = *static_cast<ProbeTask*>(arg);
  const int outcome = tryAccess(task);
  task.outcome = outcome;
  return outcome;
}

}  // namespace

// The child shares this process's memory (CLONE_VM) and this thread waits until it exits
// (CLONE_VFORK), as posix_spawn's child does. A fork() instead write-protected every page of
// this process for copy-on-write: each page written after the probe then faulted once, 5-15 us
// a fault on the project's VMs. Communicators probe at creation, so the first pass over the
// flight recorder's ring (about 200 pages) made the first 4096 operations of a process 1.2 us
// slower each (an 8-byte allreduce at 2 ranks: 1.5 against 0.3 us), and a training job would
// have paid it on every page of its model and optimizer state.
Status probeProcessAccess() {
  int pipe[2];
  if (::pipe2(pipe, O_CLOEXEC) != 0)
    return unavailable(std::string("pipe: ") + std::strerror(errno));
  static volatile char secret[8] = {'f', 't', 'c', 'o', 'm', 'm', '!', 0};
  const pid_t parent = ::getpid();
  const std::string path = "/proc/" + std::to_string(parent) + "/fd/" + std::to_string(pipe[0]);
  ProbeTask task{parent, pipe[0], path.c_str(), secret};
  // The child's stack; signals stay blocked until it is gone, so that no handler of this
  // process runs on it.
  constexpr std::size_t kStackBytes = 64 * 1024;
  auto stack = std::make_unique<std::byte[]>(kStackBytes);
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &previous);
  const pid_t child =
      ::clone(probeChild, stack.get() + kStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &task);
  const int cloneError = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  // CLONE_VFORK: the child has ended when clone returns here, and `outcome` holds its answer.
  // The wait only reaps it (where SIGCHLD is ignored the kernel already has).
  if (child > 0) {
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(pipe[0]);
  ::close(pipe[1]);
  if (child < 0) return unavailable(std::string("clone: ") + std::strerror(cloneError));
  const int code = task.outcome;
  if (code == kOk) return Status::Ok();
  const char* what = code == kOpenFd       ? "open another process's /proc/<pid>/fd"
                     : code == kReadMemory ? "read another process's memory (process_vm_readv)"
                     : code == kPidfd      ? "pidfd_open another process"
                     : code == kGetFd      ? "take another process's descriptor (pidfd_getfd)"
                                           : "run the access probe";
  return permissionDenied(std::string("shared memory between processes is not available here: "
                                      "a process may not ") +
                          what +
                          " (ptrace access: same user and yama ptrace_scope 0, or "
                          "CAP_SYS_PTRACE)");
}

const Status& processAccess() {
  static std::once_flag once;
  static Status result;
  std::call_once(once, [] { result = probeProcessAccess(); });
  return result;
}

}  // namespace ftcomm::shm
