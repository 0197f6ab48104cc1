// The NCCL communicator's membership changes: reconfigure (ncclCommShrink, or a fresh
// communicator when members were admitted or a shrink failed anywhere), split (ncclCommSplit)
// and window registration, each collective and under its deadline.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <utility>

#include "backends/nccl/nccl_backend.h"
#include "backends/nccl/nccl_status.h"
#include "core/hash.h"

namespace ftcomm::nccl {
namespace {

std::chrono::milliseconds until(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

}  // namespace

Result<Reconfiguration> NcclBackend::reconfigure(const Reconfiguration& agreed,
                                                 std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + (timeout.count() > 0 ? timeout : setup_.setupTimeout);
  std::unique_lock<std::mutex> lock(mu_);
  const std::string what = describe("reconfigure");
  if (aborted_) return failedPrecondition(what + ": it was aborted");
  if (setup_.parentId != 0) {
    return failedPrecondition(what +
                              ": a split child does not follow a reconfigure; split the "
                              "reconfigured communicator again");
  }
  if (setup_.bootstrap->epoch() != agreed.epoch || agreed.epoch == epoch_) {
    return failedPrecondition(what + ": the host membership is at epoch " +
                              std::to_string(setup_.bootstrap->epoch()) +
                              " and the agreement names epoch " + std::to_string(agreed.epoch) +
                              "; pass what the host communicator's reconfigure() returned");
  }
  if (agreed.oldToNew.size() != static_cast<std::size_t>(setup_.size) || agreed.rank < 0 ||
      agreed.rank >= agreed.size) {
    return invalidArgument(what + ": the agreement maps " + std::to_string(agreed.oldToNew.size()) +
                           " ranks, this communicator has " + std::to_string(setup_.size));
  }
  breakLocked(Status(StatusCode::kRevoked, what + " is under way"));
  (void)api().setDevice(setup_.device);
  // After ncclCommRevoke the communicator is in progress until it is quiescent. One this NCCL
  // could not revoke is shrunk with NCCL_SHRINK_ABORT, which ends its operations first.
  const Status quiet = comm_ == nullptr ? failedPrecondition("no communicator to shrink")
                       : unrevoked_
                           ? Status::Ok()
                           : waitReady(comm_, deadline, what + " (waiting for quiescence)", false);
  std::vector<int> exclude;
  for (std::size_t r = 0; r < agreed.oldToNew.size(); ++r) {
    if (agreed.oldToNew[r] < 0) exclude.push_back(static_cast<int>(r));
  }
  CommRef next = nullptr;
  const std::string epochKey = setup_.keyPrefix + "/" + std::to_string(agreed.epoch);
  // NCCL shrinks only when it leaves someone out (ncclCommShrink refuses an empty exclude list
  // with ncclInvalidArgument): a reconfigure that keeps every member starts afresh everywhere.
  if (agreed.admitted.empty() && !exclude.empty()) {
    // Survivors only: shrink, then agree that every member's shrink worked; if one did not, all
    // start a fresh communicator (a communicator half shrunk would hang).
    bool shrunk = false;
    if (quiet.ok()) {
      NcclResult r = api().commShrink(comm_, exclude, unrevoked_, &next);
      // A nonblocking shrink writes the child's handle when the parent's part is done (the
      // parent may keep an error of its own: only its being in progress matters here).
      if (r.inProgress()) {
        const Status parent = waitReady(comm_, deadline, what + " (ncclCommShrink)", false);
        r = parent.code() == StatusCode::kTimeout ? NcclResult{NcclCode::kInProgress, "timeout"}
                                                  : ncclOk();
      }
      Status child = r.ok() && next != nullptr
                         ? waitReady(next, deadline, what + " (ncclCommShrink)", false)
                         : toStatus(r.ok() ? NcclResult{NcclCode::kInternalError, "no child"} : r,
                                    what + " (ncclCommShrink)");
      shrunk = child.ok();
      // Rare, and the fallback costs a fresh communicator: say why, once per reconfigure.
      if (!shrunk) std::fprintf(stderr, "ftcomm: %s; starting afresh\n", child.toString().c_str());
    }
    if (!shrunk && next != nullptr) {
      (void)api().commAbort(next);
      next = nullptr;
    }
    FTCOMM_RETURN_IF_ERROR(setup_.bootstrap->publish(
        epochKey + "/shrunk/" + std::to_string(agreed.rank), shrunk ? "1" : "0"));
    std::vector<std::string> keys;
    for (int r = 0; r < agreed.size; ++r) keys.push_back(epochKey + "/shrunk/" + std::to_string(r));
    auto verdicts = setup_.bootstrap->fetch(keys, until(deadline));
    if (!verdicts.ok()) {
      if (next != nullptr) (void)api().commAbort(next);
      return Status(verdicts.status().code(), what + ": " + verdicts.status().message());
    }
    if (std::count(verdicts->begin(), verdicts->end(), "1") != agreed.size && next != nullptr) {
      (void)api().commAbort(next);
      next = nullptr;
    }
  }
  if (next == nullptr) {
    // The old communicator goes first: an unrevoked one's kernels may still be waiting for
    // their peers, and the new one's setup could wait on them (cudaFree synchronizes the
    // device); its memory is also free before the new one takes its own.
    if (comm_ != nullptr) (void)api().commAbort(std::exchange(comm_, nullptr));
    Result<CommRef> fresh = initFresh(epochKey + "/uid", agreed.rank, agreed.size, deadline);
    if (!fresh.ok()) return fresh.status();
    next = *fresh;
  }
  if (comm_ != nullptr) (void)api().commAbort(comm_);
  comm_ = next;
  int rank = -1, size = 0;
  if (!api().commUserRank(comm_, &rank).ok() || !api().commCount(comm_, &size).ok() ||
      rank != agreed.rank || size != agreed.size) {
    return internalError(what + ": NCCL made rank " + std::to_string(rank) + " of " +
                         std::to_string(size) + ", the agreement rank " +
                         std::to_string(agreed.rank) + " of " + std::to_string(agreed.size));
  }
  setup_.rank = agreed.rank;
  setup_.size = agreed.size;
  setup_.worldRanks.resize(static_cast<std::size_t>(agreed.size));
  std::iota(setup_.worldRanks.begin(), setup_.worldRanks.end(), 0);
  epoch_ = agreed.epoch;
  broken_ = Status::Ok();
  unrevoked_ = false;
  collectiveSeq_ = 0;
  lock.unlock();
  recordConfig();
  return agreed;
}

Result<std::shared_ptr<NcclBackend>> NcclBackend::split(int color, int key,
                                                        std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + (timeout.count() > 0 ? timeout : setup_.setupTimeout);
  std::unique_lock<std::mutex> lock(mu_);
  const std::string what = describe("split");
  if (!broken_.ok()) return broken_;
  if (aborted_ || comm_ == nullptr) return failedPrecondition(what + ": it was aborted");
  FTCOMM_RETURN_IF_ERROR(setup_.bootstrap->health());
  // NCCL does not say who the child's members are; the bootstrap does, and the same answer
  // checks NCCL's.
  const std::string splitKey =
      setup_.keyPrefix + "/" + std::to_string(epoch_) + "/split" + std::to_string(++splits_);
  FTCOMM_RETURN_IF_ERROR(
      setup_.bootstrap->publish(splitKey + "/" + std::to_string(setup_.rank),
                                std::to_string(color) + " " + std::to_string(key)));
  std::vector<std::string> keys;
  for (int r = 0; r < setup_.size; ++r) keys.push_back(splitKey + "/" + std::to_string(r));
  auto choices = setup_.bootstrap->fetch(keys, until(deadline));
  if (!choices.ok())
    return Status(choices.status().code(), what + ": " + choices.status().message());
  std::vector<std::pair<int, int>> members;  // (key, parent rank) of this color
  for (int r = 0; r < setup_.size; ++r) {
    std::istringstream in((*choices)[static_cast<std::size_t>(r)]);
    int c = 0, k = 0;
    if (!(in >> c >> k))
      return internalError(what + ": a malformed split entry for rank " + std::to_string(r));
    if (c == color && color != Communicator::kNoColor) members.emplace_back(k, r);
  }
  std::sort(members.begin(), members.end());

  (void)api().setDevice(setup_.device);
  CommRef child = nullptr;
  NcclResult r = api().commSplit(comm_, color, key, &child);
  if (!r.ok() && !r.inProgress()) return toStatus(r, what);
  FTCOMM_RETURN_IF_ERROR(waitReady(comm_, deadline, what + " (ncclCommSplit)", true));
  if (color == Communicator::kNoColor) return std::shared_ptr<NcclBackend>();
  if (child == nullptr) return internalError(what + ": NCCL returned no communicator");
  if (Status s = waitReady(child, deadline, what + " (the child)", true); !s.ok()) {
    (void)api().commAbort(child);
    return s;
  }
  NcclSetup setup = setup_;
  setup.size = static_cast<int>(members.size());
  setup.worldRanks.clear();
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i].second == setup_.rank) setup.rank = static_cast<int>(i);
    setup.worldRanks.push_back(setup_.worldRanks[static_cast<std::size_t>(members[i].second)]);
  }
  setup.parentId = setup_.id;
  setup.id =
      detail::hashMix(detail::hashMix(setup_.id, static_cast<std::uint64_t>(color)), splits_);
  setup.name = setup_.name + "/split" + std::to_string(splits_) + "." + std::to_string(color);
  setup.keyPrefix = splitKey + "/" + std::to_string(color);
  int childRank = -1;
  if (!api().commUserRank(child, &childRank).ok() || childRank != setup.rank) {
    (void)api().commAbort(child);
    return internalError(what + ": NCCL made this member rank " + std::to_string(childRank) +
                         " of the child, the split's order rank " + std::to_string(setup.rank));
  }
  lock.unlock();
  std::shared_ptr<NcclBackend> backend(new NcclBackend(std::move(setup)));
  backend->epoch_ = epoch();
  FTCOMM_RETURN_IF_ERROR(backend->start(child));
  backend->recordConfig();
  return backend;
}

Result<WindowRef> NcclBackend::registerWindow(void* buffer, std::size_t bytes,
                                              std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + (timeout.count() > 0 ? timeout : setup_.setupTimeout);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string what = describe("window registration");
  if (!broken_.ok()) return broken_;
  if (aborted_ || comm_ == nullptr) return failedPrecondition(what + ": it was aborted");
  (void)api().setDevice(setup_.device);
  WindowRef window = nullptr;
  NcclResult r = api().windowRegister(comm_, buffer, bytes, &window);
  if (!r.ok() && !r.inProgress()) return toStatus(r, what + " (ncclCommWindowRegister)");
  FTCOMM_RETURN_IF_ERROR(waitReady(comm_, deadline, what, true));
  return window;
}

Status NcclBackend::deregisterWindow(WindowRef window, std::uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  // A window of an earlier epoch went with that epoch's communicator.
  if (comm_ == nullptr || epoch != epoch_ || !broken_.ok()) return Status::Ok();
  (void)api().setDevice(setup_.device);
  NcclResult r = api().windowDeregister(comm_, window);
  if (!r.ok() && !r.inProgress()) return toStatus(r, describe("ncclCommWindowDeregister"));
  return waitReady(comm_, Clock::now() + setup_.setupTimeout, describe("window deregistration"),
                   true);
}

}  // namespace ftcomm::nccl
