#include "core/argument_checks.h"

#include <string>

namespace ftcomm::detail {

namespace {

Status unknownDtype(DataType dtype) {
  return invalidArgument("unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace

Status bufferError(const void* buffer, std::size_t count, std::size_t blocks, DataType dtype,
                   const char* what) {
  if (static_cast<std::size_t>(dtype) >= kDataTypes.size()) return unknownDtype(dtype);
  std::size_t blockBytes = 0, bytes = 0;
  if (count > 0 &&
      (blocks == 0 || __builtin_mul_overflow(count, dataTypeSize(dtype), &blockBytes) ||
       __builtin_mul_overflow(blockBytes, blocks, &bytes) ||
       bytes > std::numeric_limits<std::size_t>::max() / 2)) {
    return invalidArgument(std::string(what) + ": " + std::to_string(count) +
                           " elements overflow the address space");
  }
  if (buffer == nullptr && count > 0) {
    return invalidArgument(std::string(what) + " buffer is null for " + std::to_string(count) +
                           " elements");
  }
  return Status::Ok();
}

Status rankError(int rank, int size, const char* what) {
  return invalidArgument(std::string(what) + " " + std::to_string(rank) + " outside 0.." +
                         std::to_string(size - 1));
}

}  // namespace ftcomm::detail
