// Memory that the members on this host read with a plain copy instead of cross-memory attach:
// ftcomm::allocMem() (ftcomm/memory.h) gives each allocation its own sealed memfd and lists it
// in this process's region table, itself a small memfd whose descriptor number every segment
// header carries (shm_segment.h). A peer that reads an address of this process
// (ShmDomain::readMember) looks it up in the table, maps the region once (pidfd_getfd, then
// mmap read-only) and copies from the mapping: no page pinning per call, which costs as much as
// the copy itself at 1 MiB (docs/BENCHMARKS.md, "Memory from allocMem").
//
// The table is a sequence lock per entry: the owner makes the version odd, rewrites the entry,
// and makes it even again. A reader takes an entry only from a stable, unchanged version, checks
// that the descriptor it took is the region's (same inode, sealed against shrinking, large
// enough) and that the version still has not moved, and keeps the mapping by entry and version.
// A mapping outlives a free() on the owner's side (the pages stay while mapped), so what a
// reader copies from a region freed meanwhile is stale, never a fault: the loan check after
// every copy (ShmDomain::Loan) is what says whether the copy is the result. An address in no
// region, or a table that cannot be mapped, is read with process_vm_readv as before.
//
// Thread-safety: MappableMemory::process() and PeerMemory may be used from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ftcomm/status.h"
#include "transport/transport.h"

namespace ftcomm::shm {

// One region of the table. Atomics only so that a reader racing the owner's rewrite reads
// well-defined (if inconsistent) words, which the version then tells it to drop.
struct alignas(64) RegionEntry {
  std::atomic<std::uint64_t> version{0};  // odd while rewritten
  std::atomic<std::uint64_t> base{0};     // 0: free
  std::atomic<std::uint64_t> length{0};
  std::atomic<std::uint64_t> inode{0};
  std::atomic<std::int32_t> fd{-1};  // the region's memfd in the owner's process
};

struct RegionTable {
  static constexpr std::uint64_t kMagic = 0x667472656731ull;  // "ftreg1"
  static constexpr int kEntries = 255;
  std::uint64_t magic;
  std::atomic<std::uint32_t> used{0};  // entries [0, used) have ever been taken
  alignas(64) RegionEntry entries[kEntries];
};

// This process's allocations.
class MappableMemory {
 public:
  static MappableMemory& process();

  // Page-aligned, zero-filled memory of at least `bytes` (> 0). When the table is full (255
  // regions) or cannot be made, or in a child forked from the process that made it, the memory
  // is still shared and usable, but peers read it with cross-memory attach.
  Result<void*> allocate(std::size_t bytes);
  // InvalidArgument for a pointer that allocate() did not return (or returned and was freed).
  Status free(void* memory);
  // [memory, memory + bytes) lies in one allocation that the table lists, so that peers map it.
  bool listed(const void* memory, std::size_t bytes);

  // The table's descriptor, for segment headers; -1 when it could not be made.
  int tableFd() const { return tableFd_; }

 private:
  struct Allocation {
    void* base;
    std::size_t length;
    int fd;
    int entry;  // -1: not in the table
  };

  MappableMemory();
  int takeEntry();  // a free entry of the table, with mu_ held; -1 when full

  int tableFd_ = -1;
  RegionTable* table_ = nullptr;
  std::mutex mu_;
  std::vector<Allocation> allocations_;
};

// A peer's table, and the regions of it mapped here so far.
class PeerMemory {
 public:
  // Null when the peer offers no table (fd -1) or it cannot be taken and mapped: its memory is
  // then read with cross-memory attach only. `pidfd` must outlive the result.
  static std::unique_ptr<PeerMemory> open(int pidfd, int tableFd);
  ~PeerMemory();
  PeerMemory(const PeerMemory&) = delete;
  PeerMemory& operator=(const PeerMemory&) = delete;

  // [address, address + bytes) of the peer's memory, mapped here; `keep` holds the mapping
  // while it is read. Null when the range is not inside one region of the table.
  transport::PeerView find(std::uint64_t address, std::size_t bytes);

 private:
  struct Mapped;
  PeerMemory(int pidfd, const RegionTable* table) : pidfd_(pidfd), table_(table) {}
  std::shared_ptr<const Mapped> map(int index, std::uint64_t version, std::uint64_t length,
                                    std::uint64_t inode, int fd) const;

  const int pidfd_;
  const RegionTable* const table_;  // read-only mapping
  std::mutex mu_;
  std::vector<std::shared_ptr<const Mapped>> mapped_;  // by entry
};

}  // namespace ftcomm::shm
