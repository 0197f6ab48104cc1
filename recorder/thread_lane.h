// A thread's own ring of flight-recorder entries for operations that completed within the call
// that scheduled them (the inline fast path: comm/core/submit_fast.cc). Such an entry never
// changes after it is written, so it needs no OpProgress: the owning thread writes it without a
// lock or a locked instruction, which on the fast path would wait for the operation's own store
// to reach the peers' caches (docs/ARCHITECTURE.md, "The fast path").
//
// Thread-safety: append() from the owning thread only (FlightRecorder hands each thread its
// own lane); collect() from any thread at any time. Each slot is a sequence lock: a reader keeps
// an entry only if its stamp was the same, and even, before and after the copy.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "recorder/op_descriptor.h"

namespace ftcomm::recorder {

// An entry as a dump reads it back.
struct LaneEntry {
  std::uint64_t recordId = 0;
  OpDescriptor op;
  std::int64_t ticks = 0;  // scheduled, started and completed: one reading of recorderTicks()
};

class ThreadLane {
 public:
  explicit ThreadLane(std::size_t capacity);

  // The owner: appends an entry, overwriting the oldest once the lane is full. Inline, so that
  // the descriptor's fields go from the caller's registers into the slot: every store of the
  // fast path counts, since each waits in the store buffer behind the broadcast's post.
  [[gnu::always_inline]] void append(const OpDescriptor& op, std::uint64_t recordId,
                                     std::int64_t ticks) {
    const std::uint64_t g = written_.load(std::memory_order_relaxed) + 1;
    Slot& slot = slots_[next_];
    if (++next_ == capacity_) next_ = 0;
    // Odd while the words change; the fence keeps them after that store.
    slot.stamp.store(2 * g - 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    // Word by word into the slot, with no copy on the stack between.
    const auto pair = [](std::int32_t low, std::int32_t high) {
      return static_cast<std::uint32_t>(low) | std::uint64_t{static_cast<std::uint32_t>(high)}
                                                   << 32;
    };
    const auto put = [&](int i, std::uint64_t word) {
      slot.words[i].store(word, std::memory_order_relaxed);
    };
    put(0, op.commId);
    put(1, op.epoch);
    put(2, op.seq);
    put(3, pair(op.op, op.dtype));
    put(4, op.countIn);
    put(5, op.countOut);
    put(6, pair(op.root, op.peer));
    put(7, pair(op.tag, op.reduceOp));
    put(8, reinterpret_cast<std::uintptr_t>(op.algorithm));
    put(9, recordId);
    put(10, static_cast<std::uint64_t>(ticks));
    slot.stamp.store(2 * g, std::memory_order_release);
    written_.store(g, std::memory_order_release);
  }

  // Any thread: the entries held now, oldest first, appended to `out`. Returns how many the
  // lane no longer holds (overwritten, or being overwritten during the copy).
  std::uint64_t collect(std::vector<LaneEntry>& out) const;

  // Whether a live thread writes this lane; a lane whose thread ended is handed to the next new
  // one, entries and all.
  std::atomic<bool> owned{false};
  // The owner's block of record ids (FlightRecorder::recordCompletedWithinCall): ids are taken
  // from the recorder's counter kIdBlock at a time, under its ring's lock.
  std::uint64_t nextId = 0, endId = 0;

 private:
  static constexpr int kWords = 11;
  // The words of an entry back into it (append's order).
  static void unpack(const std::uint64_t (&words)[kWords], LaneEntry& entry);

  struct Slot {
    std::atomic<std::uint64_t> stamp{0};  // 2g - 1 while the g-th entry is written, then 2g
    std::atomic<std::uint64_t> words[kWords];
  };
  std::size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<std::uint64_t> written_{0};  // entries appended
  std::size_t next_ = 0;                   // the slot of the next entry: written_ % capacity_
};

}  // namespace ftcomm::recorder
