// Maps another process's memfd into this one through /proc/<pid>/fd/<fd>: how the members of a
// host reach each other's shared-memory segments (shm_segment.h) and window regions
// (rma/window_region.h). Needs ptrace-level access to that process (shm_access.h).
//
// Thread-safety: a function.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "ftcomm/status.h"

namespace ftcomm::shm {

struct PeerMapping {
  void* base = nullptr;
  std::size_t length = 0;  // the whole file
};

// The whole file, read-write and shared; Unavailable naming the path when it cannot be opened,
// is shorter than `minimum` bytes, or cannot be mapped. The descriptor opened is closed again.
Result<PeerMapping> mapPeerFd(pid_t pid, int fd, std::size_t minimum);

}  // namespace ftcomm::shm
