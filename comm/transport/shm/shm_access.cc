#include "transport/shm/shm_access.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

namespace ftcomm::shm {
namespace {

// What a child process could not do to its parent, as its exit code.
enum Failed { kOk = 0, kOpenFd = 10, kReadMemory = 11, kPidfd = 12, kGetFd = 13 };

Status probe() {
  const pid_t parent = ::getpid();
  int pipe[2];
  if (::pipe2(pipe, O_CLOEXEC) != 0)
    return unavailable(std::string("pipe: ") + std::strerror(errno));
  static volatile char secret[8] = {'f', 't', 'c', 'o', 'm', 'm', '!', 0};
  // Everything the child needs is made before the fork: it may only make system calls.
  const std::string path = "/proc/" + std::to_string(parent) + "/fd/" + std::to_string(pipe[0]);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(pipe[0]);
    ::close(pipe[1]);
    return unavailable(std::string("fork: ") + std::strerror(errno));
  }
  if (child == 0) {
    // Only system calls from here on: the parent may have had other threads.
    if (::open(path.c_str(), O_RDONLY | O_CLOEXEC) < 0) ::_exit(kOpenFd);
    char got[8] = {};
    iovec local{got, sizeof got}, remote{const_cast<char*>(secret), sizeof got};
    if (::process_vm_readv(parent, &local, 1, &remote, 1, 0) != sizeof got || got[6] != '!') {
      ::_exit(kReadMemory);
    }
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, parent, 0));
    if (pidfd < 0) ::_exit(kPidfd);
    if (::syscall(SYS_pidfd_getfd, pidfd, pipe[0], 0) < 0) ::_exit(kGetFd);
    ::_exit(kOk);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(pipe[0]);
  ::close(pipe[1]);
  if (WIFEXITED(status) && WEXITSTATUS(status) == kOk) return Status::Ok();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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

}  // namespace

const Status& processAccess() {
  static std::once_flag once;
  static Status result;
  std::call_once(once, [] { result = probe(); });
  return result;
}

}  // namespace ftcomm::shm
