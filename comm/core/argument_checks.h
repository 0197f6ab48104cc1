// The argument checks every communicator facade (host and NCCL) makes before an operation:
// buffer sizes, ranks, reduction operators. Each returns InvalidArgument naming the argument.
//
// The checks are inline and their errors are written out of line (argument_checks.cc): every
// call makes them, and as calls into another file, each returning its Status through memory,
// they cost an 8-byte allreduce a few percent of its time.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <limits>

#include "ftcomm/status.h"
#include "ftcomm/types.h"

namespace ftcomm::detail {

// The errors of the checks below, where they fail.
Status bufferError(const void* buffer, std::size_t count, std::size_t blocks, DataType dtype,
                   const char* what);
Status rankError(int rank, int size, const char* what);

// Ok when `count` elements of `dtype`, `blocks` times over, fit in memory and `buffer` is given
// where there is something to hold.
inline Status checkBuffer(const void* buffer, std::size_t count, std::size_t blocks, DataType dtype,
                          const char* what) {
  if (static_cast<std::size_t>(dtype) < kDataTypes.size()) {
    if (count == 0) return Status::Ok();
    // Multiplications, not divisions: a division costs more than the rest of the check.
    std::size_t blockBytes = 0, bytes = 0;
    if (blocks != 0 && !__builtin_mul_overflow(count, dataTypeSize(dtype), &blockBytes) &&
        !__builtin_mul_overflow(blockBytes, blocks, &bytes) &&
        bytes <= std::numeric_limits<std::size_t>::max() / 2 && buffer != nullptr) {
      return Status::Ok();
    }
  }
  return bufferError(buffer, count, blocks, dtype, what);
}

inline Status checkRank(int rank, int size, const char* what) {
  if (rank >= 0 && rank < size) return Status::Ok();
  return rankError(rank, size, what);
}

// types.h's checkReduction, which is inline and names a dtype or op outside the enums.
inline Status checkOp(DataType dtype, ReduceOp op) {
  return checkReduction(dtype, op);
}

// The first error among `checks`.
inline Status firstError(std::initializer_list<Status> checks) {
  for (const Status& s : checks) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace ftcomm::detail
