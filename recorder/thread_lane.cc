#include "recorder/thread_lane.h"

#include <cstring>

namespace ftcomm::recorder {

ThreadLane::ThreadLane(std::size_t capacity)
    : capacity_(capacity), slots_(std::make_unique<Slot[]>(capacity)) {}

std::uint64_t ThreadLane::collect(std::vector<LaneEntry>& out) const {
  const std::uint64_t written = written_.load(std::memory_order_acquire);
  const std::uint64_t first = written > capacity_ ? written - capacity_ + 1 : 1;
  std::uint64_t lost = first - 1;
  for (std::uint64_t g = first; g <= written; ++g) {
    const Slot& slot = slots_[(g - 1) % capacity_];
    if (slot.stamp.load(std::memory_order_acquire) != 2 * g) {  // overwritten since
      ++lost;
      continue;
    }
    std::uint64_t words[kWords];
    for (int i = 0; i < kWords; ++i) words[i] = slot.words[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.stamp.load(std::memory_order_relaxed) != 2 * g) {
      ++lost;
      continue;
    }
    unpack(words, out.emplace_back());
  }
  return lost;
}

void ThreadLane::unpack(const std::uint64_t (&words)[kWords], LaneEntry& entry) {
  const auto low = [](std::uint64_t word) { return static_cast<std::int32_t>(word & 0xffffffffu); };
  const auto high = [](std::uint64_t word) { return static_cast<std::int32_t>(word >> 32); };
  OpDescriptor& op = entry.op;
  op.commId = words[0];
  op.epoch = words[1];
  op.seq = words[2];
  op.op = static_cast<pb::OpType>(low(words[3]));
  op.dtype = static_cast<pb::DataType>(high(words[3]));
  op.countIn = words[4];
  op.countOut = words[5];
  op.root = low(words[6]);
  op.peer = high(words[6]);
  op.tag = low(words[7]);
  op.reduceOp = static_cast<pb::ReduceOp>(high(words[7]));
  op.algorithm = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(words[8]));
  entry.recordId = words[9];
  entry.ticks = static_cast<std::int64_t>(words[10]);
}

}  // namespace ftcomm::recorder
