#include "transport/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "transport/copy_bytes.h"
#include "transport/shm/mappable_memory.h"
#include "transport/shm/peer_mapping.h"

namespace ftcomm::shm {
namespace {

std::string errnoText(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

std::size_t headerBytes(int members) {
  return sizeof(SegmentHeader) + static_cast<std::size_t>(members) * sizeof(RingControl);
}

std::size_t areasBytes() {
  return static_cast<std::size_t>(kInlineAreas) * sizeof(InlineArea);
}

// The rings, then the inline areas (page-aligned: they are touched only when used).
std::size_t areasOffset(int members, std::size_t ringBytes) {
  const std::size_t end = headerBytes(members) + static_cast<std::size_t>(members) * ringBytes;
  return (end + 4095) / 4096 * 4096;
}

}  // namespace

Result<Segment> Segment::create(int owner, int members, std::size_t ringBytes,
                                std::uint64_t epoch) {
  if (members < 1 || ringBytes == 0 || ringBytes % kRecordAlign != 0) {
    return invalidArgument("shared-memory segment: bad geometry");
  }
  Segment s;
  s.ringBytes_ = ringBytes;
  s.length_ = areasOffset(members, ringBytes) + areasBytes();
  const std::string name = "ftcomm-epoch-" + std::to_string(epoch);
  s.fd_ = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (s.fd_ < 0) return unavailable(errnoText("memfd_create"));
  if (::ftruncate(s.fd_, static_cast<off_t>(s.length_)) != 0) {
    return unavailable(errnoText("ftruncate of the shared-memory segment"));
  }
  void* base = ::mmap(nullptr, s.length_, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_, 0);
  if (base == MAP_FAILED) return unavailable(errnoText("mmap of the shared-memory segment"));
  s.base_ = base;
  auto* header = new (base) SegmentHeader();
  header->magic = SegmentHeader::kMagic;
  header->epoch = epoch;
  header->ringBytes = ringBytes;
  header->members = members;
  header->owner = owner;
  header->regionTable = MappableMemory::process().tableFd();
  for (int i = 0; i < members; ++i) new (&s.control(i)) RingControl();
  // Default-initialized, not value-initialized: the payloads stay untouched (the memfd is
  // zero-filled and sparse; only slots in use get pages).
  for (int i = 0; i < kInlineAreas; ++i) new (s.area(i)) InlineArea;
  return s;
}

Result<Segment> Segment::open(pid_t pid, int fd, int owner, int members, std::uint64_t epoch) {
  auto mapped = mapPeerFd(pid, fd, sizeof(SegmentHeader));
  if (!mapped.ok()) return mapped.status();
  Segment s;
  s.base_ = mapped->base;
  s.length_ = mapped->length;
  const SegmentHeader& h = s.header();
  s.ringBytes_ = h.ringBytes;
  if (h.magic == SegmentHeader::kMagic && h.owner == owner && h.epoch > epoch) {
    // The descriptor number now holds the owner's segment of a later epoch: it gave this one up.
    return Status(StatusCode::kRevoked, "rank " + std::to_string(owner) +
                                            " has moved on to epoch " + std::to_string(h.epoch));
  }
  if (h.magic != SegmentHeader::kMagic || h.epoch != epoch || h.owner != owner ||
      h.members != members || h.ringBytes == 0 || h.ringBytes % kRecordAlign != 0 ||
      s.length_ != areasOffset(members, h.ringBytes) + areasBytes()) {
    return unavailable("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd) +
                       " is not the segment of rank " + std::to_string(owner) + " for epoch " +
                       std::to_string(epoch));
  }
  return s;
}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this == &other) return *this;
  this->~Segment();
  base_ = std::exchange(other.base_, nullptr);
  length_ = std::exchange(other.length_, 0);
  ringBytes_ = std::exchange(other.ringBytes_, 0);
  fd_ = std::exchange(other.fd_, -1);
  return *this;
}

Segment::~Segment() {
  if (base_ != nullptr) ::munmap(base_, length_);
  base_ = nullptr;
  closeFd();
}

void Segment::closeFd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

RingControl& Segment::control(int sender) const {
  auto* first =
      reinterpret_cast<RingControl*>(static_cast<std::byte*>(base_) + sizeof(SegmentHeader));
  return first[sender];
}

std::byte* Segment::ring(int sender) const {
  return static_cast<std::byte*>(base_) + headerBytes(header().members) +
         static_cast<std::size_t>(sender) * ringBytes_;
}

InlineArea* Segment::area(int index) const {
  auto* first = reinterpret_cast<InlineArea*>(static_cast<std::byte*>(base_) +
                                              areasOffset(header().members, ringBytes_));
  return first + index;
}

bool RingWriter::tryWrite(const Record& record, const void* payload, std::size_t payloadBytes) {
  RingControl& control = segment_->control(sender_);
  const std::uint64_t capacity = segment_->ringBytes();
  const std::uint64_t size = RingReader::footprint(payloadBytes);
  std::uint64_t tail = control.tail.load(std::memory_order_relaxed);
  const std::uint64_t head = control.head.load(std::memory_order_acquire);
  const std::uint64_t pos = tail % capacity;
  const std::uint64_t wrap = pos + size > capacity ? capacity - pos : 0;
  if (size > capacity || tail + wrap + size - head > capacity) return false;
  std::byte* ring = segment_->ring(sender_);
  if (wrap != 0) {
    Record skip{};
    skip.kind = RecordKind::kWrap;
    std::memcpy(ring + pos, &skip, sizeof skip);
    tail += wrap;
  }
  std::byte* at = ring + tail % capacity;
  std::memcpy(at, &record, sizeof record);
  if (payloadBytes != 0) transport::copyBytes(at + sizeof record, payload, payloadBytes);
  control.tail.store(tail + size, std::memory_order_release);
  return true;
}

bool RingWriter::ownerSleeping(bool fenced) const {
  if (fenced) std::atomic_thread_fence(std::memory_order_seq_cst);
  const SegmentHeader& header = segment_->header();
  if (header.spinners.load(std::memory_order_relaxed) != 0) return false;
  auto& sleeping = segment_->header().sleeping;
  return sleeping.load(std::memory_order_relaxed) != 0 &&
         sleeping.exchange(0, std::memory_order_acq_rel) != 0;
}

const Record* RingReader::peek() {
  if (corrupt_) return nullptr;
  RingControl& control = segment_->control(sender_);
  const std::uint64_t capacity = segment_->ringBytes();
  for (;;) {
    const std::uint64_t head = control.head.load(std::memory_order_relaxed);
    const std::uint64_t tail = control.tail.load(std::memory_order_acquire);
    if (head == tail) return nullptr;
    const std::uint64_t pos = head % capacity;
    if (tail < head || tail - head > capacity || pos % kRecordAlign != 0) {
      corrupt_ = true;
      return nullptr;
    }
    const auto* record = reinterpret_cast<const Record*>(segment_->ring(sender_) + pos);
    if (record->kind == RecordKind::kWrap) {
      control.head.store(head + (capacity - pos), std::memory_order_release);
      continue;
    }
    const bool known = record->kind >= RecordKind::kEager && record->kind <= RecordKind::kCancel;
    const std::uint64_t payload = record->kind == RecordKind::kEager ? record->bytes : 0;
    if (!known || payload > capacity || pos + footprint(payload) > capacity ||
        footprint(payload) > tail - head) {
      corrupt_ = true;
      return nullptr;
    }
    return record;
  }
}

void RingReader::pop(const Record& record) {
  RingControl& control = segment_->control(sender_);
  const std::uint64_t payload = record.kind == RecordKind::kEager ? record.bytes : 0;
  control.head.store(control.head.load(std::memory_order_relaxed) + footprint(payload),
                     std::memory_order_release);
}

bool RingReader::empty() const {
  const RingControl& control = segment_->control(sender_);
  return control.head.load(std::memory_order_relaxed) ==
         control.tail.load(std::memory_order_acquire);
}

}  // namespace ftcomm::shm
