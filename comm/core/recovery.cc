// The fault-tolerance half of the Communicator: revoke, abort, and reconfigure in place (the
// survivors agree on the next epoch through the rendezvous; the same object goes on with it),
// and the hand-over of state to replacements.
#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/epoch.h"
#include "core/fault_injection.h"
#include "ftcomm/communicator.h"
#include "recorder/flight_recorder.h"

namespace ftcomm {

namespace {

namespace pb = recorder::v1;

std::shared_ptr<recorder::OpProgress> recordControl(const detail::CommState& state, pb::OpType op,
                                                    std::uint64_t countIn) {
  recorder::OpDescriptor d;
  d.commId = state.id;
  d.epoch = state.epoch;
  d.op = op;
  d.countIn = countIn;
  auto progress = recorder::FlightRecorder::process().record(d);
  if (progress) progress->markStarted();
  return progress;
}

void finishControl(const std::shared_ptr<recorder::OpProgress>& progress, const Status& status) {
  if (!progress) return;
  if (status.ok()) {
    progress->markCompleted();
  } else {
    progress->markFailed(status.toString());
  }
}

// The rendezvous names the live ranks that never called Reconfigure when a round times out
// (JobState::describeMissingRoundCalls); each is reported failed. Returns how many.
int reportStragglers(rendezvous::RendezvousClient& client, const std::string& message,
                     int epochSize) {
  static constexpr std::string_view kMarker = "never called Reconfigure: ";
  const std::size_t at = message.find(kMarker);
  if (at == std::string::npos) return 0;
  std::vector<int> stragglers;
  const char* p = message.c_str() + at + kMarker.size();
  while (*p != '\0') {
    char* end = nullptr;
    const long rank = std::strtol(p, &end, 10);
    if (end == p) break;
    stragglers.push_back(static_cast<int>(rank));
    p = end;
  }
  if (stragglers.empty() || 2 * static_cast<int>(stragglers.size()) >= epochSize) return 0;
  int reported = 0;
  for (int rank : stragglers) {
    const std::string why = "did not take part in reconfigure() before the agreement deadline";
    if (client.reportFailure(rank, why).ok()) ++reported;
  }
  return reported;
}

std::string rankText(const detail::CommState& state) {
  return "rank " + std::to_string(state.rank) + " of " + state.name + " (epoch " +
         std::to_string(state.epoch) + ")";
}

}  // namespace

Status Communicator::revoke(const std::string& reason) {
  auto progress = recordControl(*state_, pb::REVOKE, 0);
  {
    std::lock_guard<std::mutex> lock(state_->engine->mutex());
    state_->engine->breakLocked(
        *state_, Status(StatusCode::kRevoked, "revoked by " + rankText(*state_) + ": " + reason), 0,
        true);
  }
  finishControl(progress, Status::Ok());
  return Status::Ok();
}

void Communicator::abort(const std::string& reason) {
  auto progress = recordControl(*state_, pb::REVOKE, 1);
  {
    std::lock_guard<std::mutex> lock(state_->engine->mutex());
    state_->engine->breakLocked(
        *state_, Status(StatusCode::kRevoked, "aborted by " + rankText(*state_) + ": " + reason), 0,
        true);
    state_->aborted = true;
    state_->engine->closeLocked(*state_);
  }
  finishControl(progress, Status::Ok());
}

std::uint32_t Communicator::replacementsWaiting() const {
  return state_->watch ? state_->watch->replacementsWaiting.load() : 0;
}

bool Communicator::joinedAsReplacement() const {
  return state_->admittedAsReplacement;
}

Work Communicator::shareState(void* buffer, std::size_t count, DataType dtype,
                              const OpOptions& options) {
  return broadcast(buffer, count, dtype, 0, options);
}

Result<Reconfiguration> Communicator::reconfigure(const ReconfigureOptions& options) {
  if (!world_) {
    return failedPrecondition("reconfigure: " + state_->name +
                              " is a split child; reconfigure its world communicator, then split "
                              "again");
  }
  const std::shared_ptr<detail::CommState> old = state_;
  detail::FaultInjector::process().at("reconfigure", old->launchRank, old->id, old->epoch,
                                      old->epoch,
                                      [&] { old->engine->dropConnections(old->rendezvous.get()); });
  {
    std::lock_guard<std::mutex> lock(old->engine->mutex());
    if (old->aborted) return failedPrecondition("reconfigure: " + old->name + " was aborted");
  }
  const auto deadline =
      detail::Clock::now() +
      (options.timeout.count() > 0 ? options.timeout : world_->reconfigureTimeout);
  auto progress = recordControl(*old, pb::RECONFIGURE, static_cast<std::uint64_t>(old->size));
  auto fail = [&](Status why) -> Status {
    finishControl(progress, why);
    (void)recorder::FlightRecorder::process().dump(why.toString());
    return why;
  };

  // Leave the epoch: every communicator of it (split children too) is revoked here. The
  // others learn of it from their own reconfigure() or from the rendezvous, so nobody is told.
  {
    std::lock_guard<std::mutex> lock(old->engine->mutex());
    old->engine->retireEpochLocked(
        old->rendezvous.get(), old->epoch,
        Status(StatusCode::kRevoked, "epoch " + std::to_string(old->epoch) +
                                         " was left by reconfigure(); split children of it are "
                                         "gone for good: split the reconfigured parent again"));
    old->engine->closeLocked(*old);
  }
  (void)recorder::FlightRecorder::process().dump("reconfigure: leaving epoch " +
                                                 std::to_string(old->epoch));

  Reconfiguration result;
  std::shared_ptr<detail::CommState> next;
  for (result.rounds = 1;; ++result.rounds) {
    auto view = world_->rendezvous->reconfigure(
        std::min(detail::timeLeft(deadline), world_->agreementTimeout));
    if (!view.ok() && view.status().code() == StatusCode::kTimeout &&
        detail::Clock::now() < deadline &&
        world_->watch->failedEpoch.load() >= world_->rendezvous->epoch()) {
      // Members that are alive (heartbeating) but never call in after a failure every member
      // was told of, a hung rank: the others declare them failed and agree without them. Only
      // in a failed epoch (a healthy one waits for everyone: growing is unanimous), and never a
      // majority (one confused member must not expel the rest).
      if (reportStragglers(*world_->rendezvous, view.status().message(), old->size) > 0) continue;
    }
    if (!view.ok()) {
      return fail(Status(view.status().code(), "reconfigure: " + view.status().message()));
    }
    if (view->view.members_size() < world_->minSize) {
      return fail(failedPrecondition(
          "reconfigure: epoch " + std::to_string(view->view.epoch()) + " has " +
          std::to_string(view->view.members_size()) + " members, below the minimum world size " +
          std::to_string(world_->minSize) + " (CommOptions::minSize, FTCOMM_MIN_WORLD_SIZE)"));
    }
    auto connected = detail::connectEpoch(*world_, *view, deadline);
    if (connected.ok()) {
      next = std::move(connected).value();
      break;
    }
    // A member failed while the new epoch was being set up: that epoch is revoked too (the
    // failure went to the rendezvous), so agree on the next one, until the deadline.
    const StatusCode code = connected.status().code();
    const bool anotherRound = code == StatusCode::kPeerFailed || code == StatusCode::kRevoked;
    if (!anotherRound || detail::Clock::now() >= deadline) {
      return fail(Status(code, "reconfigure: " + connected.status().message()));
    }
  }

  result.epoch = next->epoch;
  result.rank = next->rank;
  result.size = next->size;
  result.oldToNew.assign(old->memberIds.size(), -1);
  for (int r = 0; r < next->size; ++r) {
    const std::uint64_t id = next->memberIds[static_cast<std::size_t>(r)];
    const auto it = std::find(old->memberIds.begin(), old->memberIds.end(), id);
    if (it == old->memberIds.end()) {
      result.admitted.push_back(r);
    } else {
      result.oldToNew[static_cast<std::size_t>(it - old->memberIds.begin())] = r;
    }
  }
  state_ = next;
  finishControl(progress, Status::Ok());
  return result;
}

}  // namespace ftcomm
