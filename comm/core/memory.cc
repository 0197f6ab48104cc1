#include "ftcomm/memory.h"

#include "transport/shm/mappable_memory.h"

namespace ftcomm {

Result<void*> allocMem(std::size_t bytes) {
  return shm::MappableMemory::process().allocate(bytes);
}

Status freeMem(void* memory) {
  return shm::MappableMemory::process().free(memory);
}

}  // namespace ftcomm
