#include "recorder/thread_lane.h"

#include <cstring>
#include <type_traits>

namespace ftcomm::recorder {

namespace {

constexpr int kDescriptorWords = 10;
static_assert(std::is_trivially_copyable_v<OpDescriptor>);
static_assert(sizeof(OpDescriptor) <= kDescriptorWords * sizeof(std::uint64_t));

}  // namespace

ThreadLane::ThreadLane(std::size_t capacity)
    : capacity_(capacity), slots_(std::make_unique<Slot[]>(capacity)) {
  static_assert(kWords == kDescriptorWords + 2);
}

void ThreadLane::append(const OpDescriptor& op, std::uint64_t recordId, std::int64_t ticks) {
  std::uint64_t words[kWords] = {};
  std::memcpy(words, &op, sizeof op);
  words[kDescriptorWords] = recordId;
  words[kDescriptorWords + 1] = static_cast<std::uint64_t>(ticks);
  const std::uint64_t g = written_.load(std::memory_order_relaxed) + 1;
  Slot& slot = slots_[(g - 1) % capacity_];
  // Odd while the words change; the fence keeps them after that store.
  slot.stamp.store(2 * g - 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 0; i < kWords; ++i) slot.words[i].store(words[i], std::memory_order_relaxed);
  slot.stamp.store(2 * g, std::memory_order_release);
  written_.store(g, std::memory_order_release);
}

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
    LaneEntry& entry = out.emplace_back();
    std::memcpy(&entry.op, words, sizeof entry.op);
    entry.recordId = words[kDescriptorWords];
    entry.ticks = static_cast<std::int64_t>(words[kDescriptorWords + 1]);
  }
  return lost;
}

}  // namespace ftcomm::recorder
