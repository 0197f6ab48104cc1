// Whether this process may do to its same-host peers what the shared-memory transport needs:
// open their memfd through /proc/<pid>/fd, read their memory (process_vm_readv) and take a
// descriptor from them (pidfd_getfd). All of these need ptrace access, which Yama
// (ptrace_scope 1, Ubuntu's default), a container's seccomp profile or a missing
// CAP_SYS_PTRACE can deny. Probed once per process by a child (sharing its memory, as
// posix_spawn's does) that tries each on its parent: a child is no more privileged over its
// parent than a sibling rank is.
//
// Thread-safety: any thread; the probe runs once.
#pragma once

#include "ftcomm/status.h"

namespace ftcomm::shm {

// Ok, or PermissionDenied naming what is not allowed.
const Status& processAccess();

// The probe itself, run again at every call (tests: processAccess keeps its first answer).
Status probeProcessAccess();

}  // namespace ftcomm::shm
