#include "loop_member.h"

#include <numeric>

namespace ftcomm::testing {

namespace {

constexpr std::size_t kCount = 4099;  // not a multiple of any world size: uneven chunks
constexpr std::int64_t kReplacementShare = 1000;

}  // namespace

LoopMember::LoopMember(Communicator& comm, std::int64_t contribution)
    : comm_(comm), mine_(contribution), sizes_(std::to_string(comm.size())) {
  for (int r = 0; r < comm.size(); ++r) contributions_.push_back(r + 1);
}

Status LoopMember::shareTable() {
  // [next step, size, contribution by rank...], from rank 0 (a survivor).
  std::vector<std::int64_t> table(2 + 65536, 0);
  table[0] = next_;
  table[1] = comm_.size();
  for (std::size_t r = 0; r < contributions_.size() && r < 65536; ++r)
    table[2 + r] = contributions_[r];
  if (Status s = comm_.shareState(table.data(), table.size(), DataType::kInt64).wait(); !s.ok())
    return s;
  next_ = static_cast<int>(table[0]);
  contributions_.assign(table.begin() + 2, table.begin() + 2 + table[1]);
  if (static_cast<int>(contributions_.size()) != comm_.size())
    return internalError("the shared table has the wrong size");
  return Status::Ok();
}

std::string LoopMember::catchUp() {
  Status s = shareTable();
  return s.ok() ? "" : s.toString();
}

std::string LoopMember::run(int steps, const LoopHooks& hooks) {
  while (next_ < steps) {
    if (hooks.atStep) hooks.atStep(next_);
    std::vector<std::int64_t> data(kCount);
    for (std::size_t i = 0; i < kCount; ++i)
      data[i] = mine_ * (next_ + 1) + static_cast<std::int64_t>(i);
    Work work = comm_.allReduce(data.data(), data.data(), kCount, DataType::kInt64, ReduceOp::kSum);
    if (hooks.afterPost) hooks.afterPost(next_);
    Status s = work.wait();
    bool admit = false;
    if (s.ok()) {
      const std::int64_t total =
          std::accumulate(contributions_.begin(), contributions_.end(), std::int64_t{0});
      for (std::size_t i = 0; i < kCount; ++i) {
        const std::int64_t want = total * (next_ + 1) + comm_.size() * static_cast<std::int64_t>(i);
        if (data[i] != want) {
          return "ERROR step " + std::to_string(next_) + " element " + std::to_string(i) + ": " +
                 std::to_string(data[i]) + " instead of " + std::to_string(want) + " at size " +
                 std::to_string(comm_.size());
        }
      }
      // Admit waiting replacements only when every member saw them (the same step for all).
      std::int32_t waiting = comm_.replacementsWaiting() > 0 ? 1 : 0;
      s = comm_.allReduce(&waiting, &waiting, 1, DataType::kInt32, ReduceOp::kMax).wait();
      if (s.ok()) {
        ++next_;
        if (waiting == 0) continue;
        admit = true;
      }
    }
    if (!admit) {
      if (s.code() != StatusCode::kPeerFailed && s.code() != StatusCode::kRevoked &&
          s.code() != StatusCode::kTimeout) {
        return "ERROR step " + std::to_string(next_) + " failed unexpectedly: " + s.toString();
      }
      ++failures_;
      if (firstError_.empty()) firstError_ = s.toString();
    }
    bool fenced = false;
    if (auto problem = recover(hooks, &fenced); !problem.empty()) {
      return (fenced ? "REFUSED " : "ERROR ") + problem;
    }
  }
  return "OK steps=" + std::to_string(next_) + " sizes=" + sizes_ +
         " failures=" + std::to_string(failures_) + " rounds=" + std::to_string(rounds_) +
         " epoch=" + std::to_string(comm_.epoch()) + " rank=" + std::to_string(comm_.rank()) +
         " first_error=" + firstError_;
}

std::string LoopMember::recover(const LoopHooks& hooks, bool* fenced) {
  if (hooks.beforeReconfigure) hooks.beforeReconfigure();
  auto r = comm_.reconfigure();
  if (!r.ok()) {
    *fenced = r.status().code() == StatusCode::kFailedPrecondition;
    return "reconfigure: " + r.status().toString();
  }
  return adopt(*r, hooks, fenced);
}

std::string LoopMember::adopt(const Reconfiguration& r, const LoopHooks& hooks, bool* fenced) {
  rounds_ += r.rounds;
  std::vector<std::int64_t> next(static_cast<std::size_t>(r.size), kReplacementShare);
  for (std::size_t old = 0; old < r.oldToNew.size(); ++old) {
    if (r.oldToNew[old] >= 0) next[static_cast<std::size_t>(r.oldToNew[old])] = contributions_[old];
  }
  contributions_ = std::move(next);
  sizes_ += ">" + std::to_string(r.size);
  // Always from rank 0: the collective that failed may have completed on some members (their
  // step advanced) and not on others, so the survivors agree on where they stand as well as
  // telling newcomers.
  if (Status s = shareTable(); !s.ok()) {
    // Another member died right after the agreement: one more round.
    if (s.code() != StatusCode::kPeerFailed && s.code() != StatusCode::kRevoked) {
      return "shareState: " + s.toString();
    }
    ++failures_;
    return recover(hooks, fenced);
  }
  if (hooks.afterReconfigure) return hooks.afterReconfigure(r);
  return "";
}

}  // namespace ftcomm::testing
