#include "transport/shm/mappable_memory.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

namespace ftcomm::shm {

namespace {

std::size_t pageRounded(std::size_t bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

Status errnoStatus(StatusCode code, const std::string& what) {
  return Status(code, what + ": " + std::strerror(errno));
}

// Rewrites an entry under its sequence lock.
void writeEntry(RegionEntry& entry, std::uint64_t base, std::uint64_t length, std::uint64_t inode,
                int fd) {
  const std::uint64_t version = entry.version.load(std::memory_order_relaxed);
  entry.version.store(version + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  entry.base.store(base, std::memory_order_relaxed);
  entry.length.store(length, std::memory_order_relaxed);
  entry.inode.store(inode, std::memory_order_relaxed);
  entry.fd.store(fd, std::memory_order_relaxed);
  entry.version.store(version + 2, std::memory_order_release);
}

// Set in a child after fork() (pthread_atfork), where the table's pages are still its parent's:
// its allocations stay out of the table, its frees leave it alone. A flag rather than a getpid()
// comparison: listed() runs on every collective that may lend its input
// (algorithms/shm/inline_lend.cc), and that system call cost a 512 KiB allgather a third of its
// time where measured.
std::atomic<bool> inForkedChild{false};

void markForkedChild() {
  inForkedChild.store(true, std::memory_order_relaxed);
}

}  // namespace

MappableMemory& MappableMemory::process() {
  static MappableMemory* memory = new MappableMemory();  // never destroyed: peers may map it
  return *memory;
}

MappableMemory::MappableMemory() {
  const int fd = ::memfd_create("ftcomm-regions", MFD_CLOEXEC);
  if (fd < 0) return;
  const std::size_t length = pageRounded(sizeof(RegionTable));
  void* base = ::ftruncate(fd, static_cast<off_t>(length)) == 0
                   ? ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                   : MAP_FAILED;
  if (base == MAP_FAILED) {
    ::close(fd);
    return;
  }
  table_ = new (base) RegionTable();
  table_->magic = RegionTable::kMagic;
  tableFd_ = fd;
  ::pthread_atfork(nullptr, nullptr, &markForkedChild);
}

Result<void*> MappableMemory::allocate(std::size_t bytes) {
  if (bytes == 0) return invalidArgument("allocMem: 0 bytes");
  const std::size_t length = pageRounded(bytes);
  if (length < bytes) return invalidArgument("allocMem: " + std::to_string(bytes) + " bytes");
  const int fd = ::memfd_create("ftcomm-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return errnoStatus(StatusCode::kResourceExhausted, "allocMem: memfd_create");
  // Sealed against resizing: a reader's mapping can never run past the end of the file (SIGBUS).
  struct stat st {};
  if (::ftruncate(fd, static_cast<off_t>(length)) != 0 ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
      ::fstat(fd, &st) != 0) {
    Status failed = errnoStatus(StatusCode::kResourceExhausted,
                                "allocMem: sizing " + std::to_string(length) + " bytes");
    ::close(fd);
    return failed;
  }
  void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    Status failed = errnoStatus(StatusCode::kResourceExhausted,
                                "allocMem: mapping " + std::to_string(length) + " bytes");
    ::close(fd);
    return failed;
  }
  std::lock_guard<std::mutex> lock(mu_);
  Allocation allocation{base, length, fd, -1};
  allocation.entry = takeEntry();
  if (allocation.entry >= 0) {
    writeEntry(table_->entries[allocation.entry], reinterpret_cast<std::uint64_t>(base), length,
               st.st_ino, fd);
  }
  allocations_.push_back(allocation);
  return base;
}

int MappableMemory::takeEntry() {
  if (table_ == nullptr || inForkedChild.load(std::memory_order_relaxed)) return -1;
  const auto used = static_cast<int>(table_->used.load(std::memory_order_relaxed));
  for (int i = 0; i < used; ++i) {
    if (table_->entries[i].base.load(std::memory_order_relaxed) == 0) return i;
  }
  if (used == RegionTable::kEntries) return -1;
  table_->used.store(static_cast<std::uint32_t>(used + 1), std::memory_order_release);
  return used;
}

Status MappableMemory::free(void* memory) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = std::find_if(allocations_.begin(), allocations_.end(),
                               [&](const Allocation& a) { return a.base == memory; });
  if (memory == nullptr || it == allocations_.end()) {
    return invalidArgument("freeMem: the pointer was not returned by allocMem, or was freed");
  }
  // Out of the table first: a reader that takes the descriptor from now on finds another inode
  // (or none) and drops it.
  if (it->entry >= 0 && !inForkedChild.load(std::memory_order_relaxed))
    writeEntry(table_->entries[it->entry], 0, 0, 0, -1);
  ::munmap(it->base, it->length);
  ::close(it->fd);
  allocations_.erase(it);
  return Status::Ok();
}

bool MappableMemory::listed(const void* memory, std::size_t bytes) {
  const auto* at = static_cast<const std::byte*>(memory);
  std::lock_guard<std::mutex> lock(mu_);
  if (inForkedChild.load(std::memory_order_relaxed)) return false;
  return std::any_of(allocations_.begin(), allocations_.end(), [&](const Allocation& a) {
    const auto* base = static_cast<const std::byte*>(a.base);
    return a.entry >= 0 && at >= base && bytes <= a.length &&
           static_cast<std::size_t>(at - base) <= a.length - bytes;
  });
}

struct PeerMemory::Mapped {
  Mapped(const std::byte* at, std::size_t bytes, std::uint64_t entryVersion)
      : data(at), length(bytes), version(entryVersion) {}
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  ~Mapped() { ::munmap(const_cast<std::byte*>(data), length); }

  const std::byte* const data;
  const std::size_t length;
  const std::uint64_t version;  // of the entry it was mapped for
};

std::unique_ptr<PeerMemory> PeerMemory::open(int pidfd, int tableFd) {
  if (pidfd < 0 || tableFd < 0) return nullptr;
  const int fd = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, tableFd, 0));
  if (fd < 0) return nullptr;
  struct stat st {};
  void* base = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) >= sizeof(RegionTable)) {
    base = ::mmap(nullptr, sizeof(RegionTable), PROT_READ, MAP_SHARED, fd, 0);
  }
  ::close(fd);
  if (base == MAP_FAILED) return nullptr;
  const auto* table = static_cast<const RegionTable*>(base);
  if (table->magic != RegionTable::kMagic) {
    ::munmap(base, sizeof(RegionTable));
    return nullptr;
  }
  std::unique_ptr<PeerMemory> memory(new PeerMemory(pidfd, table));
  memory->mapped_.resize(RegionTable::kEntries);
  return memory;
}

PeerMemory::~PeerMemory() {
  ::munmap(const_cast<RegionTable*>(table_), sizeof(RegionTable));
}

transport::PeerView PeerMemory::find(std::uint64_t address, std::size_t bytes) {
  if (bytes == 0) return {};
  const auto used =
      std::min<std::uint32_t>(table_->used.load(std::memory_order_acquire), RegionTable::kEntries);
  if (used == 0) return {};  // the peer never allocated any: no lock on a heap buffer's read
  std::lock_guard<std::mutex> lock(mu_);
  transport::PeerView found;
  for (std::uint32_t i = 0; i < used; ++i) {
    const RegionEntry& entry = table_->entries[i];
    const std::uint64_t version = entry.version.load(std::memory_order_acquire);
    std::shared_ptr<const Mapped>& cached = mapped_[i];
    // A mapping of a region the peer has freed or replaced keeps its pages alive: let it go.
    if (cached && cached->version != version) cached.reset();
    if (found.data != nullptr || (version & 1) != 0) continue;
    const std::uint64_t base = entry.base.load(std::memory_order_relaxed);
    const std::uint64_t length = entry.length.load(std::memory_order_relaxed);
    const std::uint64_t inode = entry.inode.load(std::memory_order_relaxed);
    const int fd = entry.fd.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (entry.version.load(std::memory_order_relaxed) != version) continue;
    if (base == 0 || address < base || address - base > length || bytes > length - (address - base))
      continue;
    if (!cached) cached = map(static_cast<int>(i), version, length, inode, fd);
    if (!cached) return {};
    found.keep = cached;
    found.data = cached->data + (address - base);
  }
  return found;
}

std::shared_ptr<const PeerMemory::Mapped> PeerMemory::map(int index, std::uint64_t version,
                                                          std::uint64_t length, std::uint64_t inode,
                                                          int fd) const {
  const int taken = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd_, fd, 0));
  if (taken < 0) return nullptr;
  // The descriptor number may have been reused since the entry was read: only the region's own
  // file (its inode), sealed so that it cannot shrink under the mapping, will do.
  struct stat st {};
  const int seals = ::fcntl(taken, F_GET_SEALS);
  void* data = MAP_FAILED;
  if (::fstat(taken, &st) == 0 && st.st_ino == inode &&
      static_cast<std::uint64_t>(st.st_size) >= length && seals >= 0 &&
      (seals & F_SEAL_SHRINK) != 0) {
    // Not populated: a region may be far larger than what is read of it (an allocator's pool),
    // and its pages fault in on first touch, a few at a time (fault-around), once.
    data = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, taken, 0);
  }
  ::close(taken);
  if (data == MAP_FAILED) return nullptr;
  // Made in place: a temporary's destructor would unmap it.
  auto mapped =
      std::make_shared<const Mapped>(static_cast<const std::byte*>(data), length, version);
  if (table_->entries[index].version.load(std::memory_order_acquire) != version) return nullptr;
  return mapped;
}

}  // namespace ftcomm::shm
