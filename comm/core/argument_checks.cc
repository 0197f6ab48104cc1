#include "core/argument_checks.h"

#include <limits>
#include <string>

namespace ftcomm::detail {

Status checkBuffer(const void* buffer, std::size_t count, std::size_t blocks, DataType dtype,
                   const char* what) {
  if (static_cast<std::size_t>(dtype) >= kDataTypes.size()) {
    return invalidArgument("unknown dtype " + std::to_string(static_cast<int>(dtype)));
  }
  // Multiplications, not divisions: this runs on every call, and a division costs more than
  // the rest of the check.
  const std::size_t limit = std::numeric_limits<std::size_t>::max() / 2;
  std::size_t blockBytes = 0, bytes = 0;
  if (count > 0 &&
      (blocks == 0 || __builtin_mul_overflow(count, dataTypeSize(dtype), &blockBytes) ||
       __builtin_mul_overflow(blockBytes, blocks, &bytes) || bytes > limit)) {
    return invalidArgument(std::string(what) + ": " + std::to_string(count) +
                           " elements overflow the address space");
  }
  if (buffer == nullptr && count > 0) {
    return invalidArgument(std::string(what) + " buffer is null for " + std::to_string(count) +
                           " elements");
  }
  return Status::Ok();
}

Status checkRank(int rank, int size, const char* what) {
  if (rank < 0 || rank >= size) {
    return invalidArgument(std::string(what) + " " + std::to_string(rank) + " outside 0.." +
                           std::to_string(size - 1));
  }
  return Status::Ok();
}

Status checkOp(DataType dtype, ReduceOp op) {
  if (static_cast<std::size_t>(op) >= kReduceOps.size()) {
    return invalidArgument("unknown reduce op " + std::to_string(static_cast<int>(op)));
  }
  return checkReduction(dtype, op);
}

Status firstError(std::initializer_list<Status> checks) {
  for (const Status& s : checks) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace ftcomm::detail
