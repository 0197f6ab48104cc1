// One process's shared-memory segment for one communicator epoch: a memfd that holds a ring per
// sending member, written by that member and read by the owner. Peers on the same host map it
// through /proc/<pid>/fd/<fd> while the owner still holds the descriptor (the owner closes it
// once every member has mapped it, so nothing names it afterwards and the kernel frees it with
// the last mapping). A new epoch gets a new segment: a process declared dead that wakes up can
// only write into the rings of an epoch nobody reads any more.
//
// After the rings come the inline areas of inline_area.h.
//
// A ring is a single-producer, single-consumer byte queue of 64-byte records (Record), each
// followed by its payload padded to 64 bytes. Head and tail count bytes for ever; a record
// never wraps: the writer fills the rest of the ring with a kWrap record instead.
//
// Thread-safety: the writer of a ring and its reader may be different processes; each side's
// methods are called by one thread at a time.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ftcomm/status.h"
#include "transport/op_signature.h"
#include "transport/shm/inline_area.h"

namespace ftcomm::shm {

enum class RecordKind : std::uint32_t {
  kEager = 1,  // the payload follows the record
  kRts,        // a large message: the receiver reads it from `address` in the sender (CMA)
  kFin,        // the receiver is done with the kRts `sendId` (status: 0, or why not)
  kCancel,     // the sender withdrew the kRts `sendId`: do not read it if not read yet
  kWrap,       // skip to the start of the ring
};

struct Record {
  RecordKind kind;
  std::uint16_t channel;      // the receiver's
  std::uint16_t loanChannel;  // kRts: the sender's, for its loan mark (ShmDomain::Loan)
  std::uint32_t slot;
  std::uint32_t status;  // kFin: 0, or why not; kRts: the sender's loan mark
  transport::OpSignature signature;
  std::uint64_t bytes;
  std::uint64_t address;
  std::uint64_t sendId;
};
static_assert(sizeof(Record) == 64, "a record is one cache line");

constexpr std::size_t kRecordAlign = 64;

struct alignas(64) RingControl {
  std::atomic<std::uint64_t> tail{0};  // written by the sender
  char pad[56];
  std::atomic<std::uint64_t> head{0};  // written by the owner (the receiver)
  char pad2[56];
};

// How many loan channels a segment counts reclaims for (ShmDomain::Loan): communicators whose
// channels are equal modulo this share a count.
constexpr int kLoanChannels = 64;

struct alignas(64) SegmentHeader {
  static constexpr std::uint64_t kMagic = 0x66746373686d3035ull;  // "ftcshm05"
  std::uint64_t magic;
  std::uint64_t epoch;
  std::uint64_t ringBytes;
  std::int32_t members;
  std::int32_t owner;
  // The owner's table of allocMem regions (mappable_memory.h), as a descriptor of the owner's
  // process; -1 for none.
  std::int32_t regionTable;
  // Set by the owner's progress thread before it sleeps; a writer that clears it wakes the owner
  // up, unless threads of the owner are polling (spinners), which find the message themselves.
  alignas(64) std::atomic<std::uint32_t> sleeping{0};
  std::atomic<std::uint32_t> spinners{0};
  // By loan channel: how many times the owner took back buffers that peers may still have been
  // reading (ShmDomain::reclaimLoans).
  alignas(64) std::atomic<std::uint32_t> reclaimed[kLoanChannels] = {};
};

class Segment {
 public:
  // A new segment for `members` senders with rings of `ringBytes` (a multiple of 64).
  static Result<Segment> create(int owner, int members, std::size_t ringBytes, std::uint64_t epoch);
  // Maps the segment that process `pid` holds as descriptor `fd`, checking that it is the one
  // it announced; Revoked when that descriptor now holds the owner's segment of a later epoch.
  static Result<Segment> open(pid_t pid, int fd, int owner, int members, std::uint64_t epoch);

  Segment() = default;
  Segment(Segment&& other) noexcept { *this = std::move(other); }
  Segment& operator=(Segment&& other) noexcept;
  ~Segment();

  int fd() const { return fd_; }
  void closeFd();  // every member has mapped it
  SegmentHeader& header() const { return *static_cast<SegmentHeader*>(base_); }
  RingControl& control(int sender) const;
  std::byte* ring(int sender) const;
  std::size_t ringBytes() const { return ringBytes_; }
  // Inline area `index` (0 .. kInlineAreas-1), after the rings.
  InlineArea* area(int index) const;

 private:
  void* base_ = nullptr;
  std::size_t length_ = 0;
  std::size_t ringBytes_ = 0;
  int fd_ = -1;
};

// The sending side of one ring.
class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(const Segment* segment, int sender) : segment_(segment), sender_(sender) {}
  // Writes `record` and `payload` if the ring has room; false if not (try again later).
  bool tryWrite(const Record& record, const void* payload, std::size_t payloadBytes);
  // After a write: true if the owner must be woken (it sleeps and nobody there polls); the
  // caller then wakes it. `fenced`: the write is seen before the flag is read, so that an owner
  // that goes to sleep meanwhile is never missed; unfenced, it may be, and the owner must not
  // sleep for long without looking (the broadcast queue's readers and roots).
  bool ownerSleeping(bool fenced = true) const;

 private:
  const Segment* segment_ = nullptr;
  int sender_ = 0;
};

// The receiving side of one ring.
class RingReader {
 public:
  RingReader() = default;
  RingReader(const Segment* segment, int sender) : segment_(segment), sender_(sender) {}
  // The next record, or null when the ring is empty. Wrap records are skipped. The payload of
  // the record follows it; it stays valid until pop().
  const Record* peek();
  void pop(const Record& record);
  bool empty() const;
  // The writer broke the ring's rules (a record that does not fit, an unknown kind): the peer is
  // corrupt and the ring unusable.
  bool corrupt() const { return corrupt_; }
  // The total size of a record with `payload` bytes.
  static std::size_t footprint(std::size_t payload) {
    return kRecordAlign + (payload + kRecordAlign - 1) / kRecordAlign * kRecordAlign;
  }

 private:
  const Segment* segment_ = nullptr;
  int sender_ = 0;
  bool corrupt_ = false;
};

}  // namespace ftcomm::shm
