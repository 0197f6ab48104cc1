// Host memory for collectives among the processes of one host (ncclMemAlloc, MPI_Alloc_mem):
// a peer on this host reads a buffer of allocMem's with a plain copy from its own mapping of
// it, where any other buffer is read with cross-memory attach (process_vm_readv), which pins
// its pages on every call. At 1 MiB that pinning costs about as much as the copy (see
// docs/BENCHMARKS.md, "Memory from allocMem"). Any buffer works with every operation; this
// one is only faster, as a send buffer or, for the algorithms that read the peers' results,
// a receive buffer. Over UCX, or where the processes may not read each other's memory, it
// is ordinary memory.
//
// The memory is page-aligned, zero-filled and shared with every process on the host that may
// trace this one (what the shared-memory transport needs anyway: shm_access.h). Peers only
// ever map it read-only. freeMem returns it; a peer's mapping of freed memory lasts until that
// peer's next read of this process, or the end of the epoch.
//
// Thread-safety: both functions may be called from any thread.
#pragma once

#include <cstddef>

#include "ftcomm/export.h"
#include "ftcomm/status.h"

namespace ftcomm {

// At least `bytes` (> 0) bytes; ResourceExhausted when the system has no more.
FTCOMM_API Result<void*> allocMem(std::size_t bytes);
// InvalidArgument for a pointer that allocMem did not return, or that was freed already.
FTCOMM_API Status freeMem(void* memory);

}  // namespace ftcomm
