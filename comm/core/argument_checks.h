// The argument checks every communicator facade (host and NCCL) makes before an operation:
// buffer sizes, ranks, reduction operators. Each returns InvalidArgument naming the argument.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "ftcomm/status.h"
#include "ftcomm/types.h"

namespace ftcomm::detail {

// Ok when `count` elements of `dtype`, `blocks` times over, fit in memory and `buffer` is given
// where there is something to hold.
Status checkBuffer(const void* buffer, std::size_t count, std::size_t blocks, DataType dtype,
                   const char* what);
Status checkRank(int rank, int size, const char* what);
Status checkOp(DataType dtype, ReduceOp op);
// The first error among `checks`.
Status firstError(std::initializer_list<Status> checks);

}  // namespace ftcomm::detail
