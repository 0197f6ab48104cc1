// Eager split. Every member contributes (color, key, its receive channel, a hash of the rank
// list, the inline area it offers the child or -1) through an allgather on the parent, recorded as
// SPLIT; the child's members, order and channel follow from the gathered table alone, so every
// member computes the same child. The child's transport reuses the parent's endpoints, which were
// wired up when the world was created, so the child is fully connected when split returns.
#include <algorithm>
#include <array>
#include <numeric>

#include "core/hash.h"
#include "core/pending.h"
#include "core/split_child.h"
#include "core/submit.h"
#include "core/transport_choice.h"

namespace ftcomm {

namespace {

using detail::CommState;

// color, key, receive channel, hash of the rank list, inline area
constexpr std::size_t kFields = 5;

class PendingSplit final : public PendingCommunicator::Impl {
 public:
  PendingSplit(std::shared_ptr<CommState> parent, int color, std::uint64_t listHash,
               std::uint16_t proposed, int area)
      : parent_(std::move(parent)),
        color_(color),
        proposed_(proposed),
        table_(kFields * static_cast<std::size_t>(parent_->size)) {
    mine_ = {color, 0, proposed, static_cast<std::int64_t>(listHash), area};
  }
  void setKey(int key) { mine_[1] = key; }

  void start(const OpOptions& options) {
    detail::CollectiveCall c;
    c.name = "split";
    c.kind = transport::OpKind::kSplit;
    c.recordOp = recorder::v1::SPLIT;
    c.collective = algorithms::Collective::kAllGather;
    c.args.dtype = DataType::kInt64;
    c.args.send = mine_.data();
    c.args.recv = table_.data();
    c.args.count = kFields;
    c.args.root = -1;
    c.choiceBytes = table_.size() * sizeof(std::int64_t);
    c.countIn = kFields;
    c.countOut = table_.size();
    work_ = detail::submitCollective(parent_, std::move(c), options, Status::Ok());
  }

  bool ready() override { return work_.test(); }

  Result<std::unique_ptr<Communicator>> take(std::chrono::milliseconds timeout) override {
    if (taken_) return failedPrecondition("this communicator was already taken");
    Status s = work_.wait(timeout);
    if (s.code() == StatusCode::kTimeout && !work_.test()) return s;
    taken_ = true;
    if (!s.ok()) return s;
    return finish();
  }

 private:
  std::int64_t field(int rank, std::size_t f) const {
    return table_[static_cast<std::size_t>(rank) * kFields + f];
  }

  Result<std::unique_ptr<Communicator>> finish() {
    const int n = parent_->size;
    for (int r = 0; r < n; ++r) {
      if (field(r, 3) != mine_[3]) {
        return Status(StatusCode::kMismatch, "split: rank " + std::to_string(r) + " of " +
                                                 parent_->name +
                                                 " passed a different rank list than rank " +
                                                 std::to_string(parent_->rank));
      }
      if (field(r, 0) != Communicator::kNoColor && (field(r, 2) <= 0 || field(r, 2) > 0xffff)) {
        return internalError("split: rank " + std::to_string(r) + " sent a malformed channel");
      }
    }
    if (color_ == Communicator::kNoColor) return std::unique_ptr<Communicator>();

    std::vector<int> members;  // parent ranks, in child rank order
    std::vector<int> areas;    // inline areas, in child rank order
    for (int r = 0; r < n; ++r) {
      if (field(r, 0) == color_) members.push_back(r);
    }
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return field(a, 1) < field(b, 1); });
    std::vector<std::uint16_t> channels;
    for (int p : members) {
      channels.push_back(static_cast<std::uint16_t>(field(p, 2)));
      areas.push_back(static_cast<int>(field(p, 4)));
    }
    // The same on every member: the parent, the color, and the first member's channel.
    const std::uint64_t id =
        detail::hashMix(detail::hashMix(parent_->id, static_cast<std::uint64_t>(color_)),
                        static_cast<std::uint64_t>(channels.front())) |
        1;
    return detail::makeChild(parent_, "/" + std::to_string(color_), id, members, channels, areas,
                             proposed_);
  }

  std::shared_ptr<CommState> parent_;
  int color_;
  std::uint16_t proposed_;
  std::array<std::int64_t, kFields> mine_{};
  std::vector<std::int64_t> table_;
  Work work_;
  bool taken_ = false;
};

PendingCommunicator startSplit(const std::shared_ptr<CommState>& parent, int color, int key,
                               std::uint64_t listHash, const OpOptions& options) {
  // A member without a channel still takes part in the parent's collective (the others would
  // wait for it otherwise), with none: 0, which fails the split on every member of its color.
  std::uint16_t channel = 0;
  int area = -1;
  if (color != Communicator::kNoColor) {
    auto allocated = parent->engine->allocateChannel();
    if (allocated.ok()) channel = *allocated;
    if (parent->inlineGroup) {
      std::lock_guard<std::mutex> lock(parent->engine->mutex());
      area = parent->shm->allocateArea();
    }
  }
  auto split = std::make_shared<PendingSplit>(parent, color, listHash, channel, area);
  split->setKey(key);
  split->start(options);
  return PendingCommunicator(split);
}

}  // namespace

PendingCommunicator Communicator::splitAsync(int color, int key, const OpOptions& options) {
  if (color < kNoColor) color = kNoColor;
  return startSplit(state_, color, key, 0, options);
}

Result<std::unique_ptr<Communicator>> Communicator::split(int color, int key,
                                                          const OpOptions& options) {
  if (color < kNoColor) {
    return invalidArgument("split: color " + std::to_string(color) +
                           " is negative (kNoColor is -1)");
  }
  return startSplit(state_, color, key, 0, options).wait(std::chrono::hours(24));
}

Result<std::unique_ptr<Communicator>> Communicator::split(std::span<const int> ranks,
                                                          const OpOptions& options) {
  std::uint64_t hash = detail::kHashSeed;
  std::vector<bool> seen(static_cast<std::size_t>(size()), false);
  int myIndex = -1;
  Status valid;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    hash = detail::hashMix(hash, static_cast<std::uint64_t>(r));
    if (r < 0 || r >= size() || seen[static_cast<std::size_t>(r)]) {
      if (valid.ok()) {
        valid = invalidArgument("split: rank list entry " + std::to_string(r) +
                                " is out of range or repeated");
      }
      continue;
    }
    seen[static_cast<std::size_t>(r)] = true;
    if (r == rank()) myIndex = static_cast<int>(i);
  }
  // Every member takes part in the parent's collective even with a bad list: the others would
  // wait for it otherwise. A bad list breaks agreement through the hash.
  auto pending = startSplit(state_, myIndex >= 0 && valid.ok() ? 0 : kNoColor, std::max(myIndex, 0),
                            valid.ok() ? hash : hash ^ 1, options);
  auto result = pending.wait(std::chrono::hours(24));
  if (!valid.ok()) return valid;
  return result;
}

}  // namespace ftcomm
