// The engine's side of membership: telling the rendezvous of failures found here, and acting
// on what it says (a member failed, the epoch was revoked, this process was expelled), for every
// communicator of the job's epoch at once; and the control messages between members: the
// failure notices and the leaving notices of members that leave a communicator (notice.h).
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "core/comm_state.h"
#include "core/engine.h"
#include "core/notice.h"
#include "recorder/flight_recorder.h"
#include "rendezvous/client.h"

namespace ftcomm::detail {

namespace {

// How long a member that leaves waits for its leaving notice to go out: to a peer whose process
// is gone it never does.
constexpr std::chrono::milliseconds kLeaveTime{1000};
constexpr std::chrono::milliseconds kLeavePollSlice{1};

}  // namespace

void Engine::attachLocked(const std::shared_ptr<CommState>& comm) {
  comms_.push_back(comm);
  if (comm->size <= 1) return;
  comm->controls.resize(static_cast<std::size_t>(comm->size));
  for (int peer = 0; peer < comm->size; ++peer) {
    if (peer == comm->rank) continue;
    auto& control = comm->controls[static_cast<std::size_t>(peer)];
    control.request = comm->transport->recv(peer, {comm->channel, kControlSlot, kControlSignature},
                                            control.buffer.data(), control.buffer.size());
  }
}

bool Engine::pollControlsLocked(CommState& comm) {
  for (int peer = 0; peer < static_cast<int>(comm.controls.size()); ++peer) {
    auto& control = comm.controls[static_cast<std::size_t>(peer)];
    if (!control.request || !control.request->done()) continue;
    const Status& s = control.request->status();
    std::uint64_t seq = 0;
    if (s.ok() && decodeLeaving(control.buffer.data(), control.request->bytes(), &seq)) {
      control.request.reset();
      peerLeftLocked(comm, peer, seq);
    } else if (s.ok()) {
      Status why = decodeNotice(control.buffer.data(), control.request->bytes(), peer, &seq);
      breakLocked(comm, why, seq, false);
    } else if (s.code() != StatusCode::kCancelled) {
      breakLocked(comm, s, 0, true);
    }
    return true;
  }
  return false;
}

void Engine::sendLeavingLocked(CommState& comm) {
  // Once, and only while usable: a broken communicator's members were told why already.
  if (!comm.transport || !comm.broken.ok() || comm.controls.empty() || comm.saidLeaving) return;
  // The last collective this member took part in: the one before its first still pending (which
  // is cancelled as the communicator closes), else the last it called.
  std::uint64_t last = comm.collectiveSeq.load(std::memory_order_relaxed);
  for (const auto& op : ops_) {
    if (op->comm.get() == &comm && op->collective && !op->work->done())
      last = std::min(last, op->seq - 1);
  }
  comm.notice = encodeLeaving(last);
  comm.saidLeaving = true;
  std::vector<transport::RequestPtr> sends;
  for (int peer = 0; peer < comm.size; ++peer) {
    if (peer == comm.rank || comm.left(peer) || !comm.transport->peerStatus(peer).ok()) continue;
    sends.push_back(comm.transport->send(peer, {comm.channel, kControlSlot, kControlSignature},
                                         comm.notice.data(), comm.notice.size()));
  }
  const auto going = [&] {
    return std::any_of(sends.begin(), sends.end(), [](const auto& r) { return !r->done(); });
  };
  const auto until = Clock::now() + kLeaveTime;
  while (going() && Clock::now() < until) {
    bool moved = worker_->progress();
    if (comm.shm) moved |= comm.shm->progress();
    if (!moved) worker_->waitForEvents(std::min(until, Clock::now() + kLeavePollSlice));
  }
}

void Engine::leaveAtExit() {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  const auto until = Clock::now() + kLeaveTime;
  while (!lock.try_lock()) {
    if (Clock::now() >= until) return;
    std::this_thread::sleep_for(kLeavePollSlice);
  }
  // Held until the mutex is released: a communicator whose last owner lets go meanwhile closes
  // itself under the mutex.
  std::vector<std::shared_ptr<CommState>> live;
  for (const auto& weak : comms_) {
    auto comm = weak.lock();
    if (!comm) continue;
    sendLeavingLocked(*comm);
    live.push_back(std::move(comm));
  }
  lock.unlock();
}

void Engine::peerLeftLocked(CommState& comm, int peer, std::uint64_t lastSeq) {
  comm.controls[static_cast<std::size_t>(peer)].left = true;
  if (lastSeq < comm.lastCompletable.load(std::memory_order_relaxed)) {
    comm.lastCompletable.store(lastSeq, std::memory_order_relaxed);
    comm.leaver = peer;
  }
  // A pending collective that the leaver never took part in cannot complete: the earliest such
  // fails with why, the others with it (breakLocked). The earlier ones go on.
  const Operation* first = nullptr;
  for (const auto& op : ops_) {
    if (op->comm.get() != &comm || !op->collective || op->work->done() || op->failing ||
        op->seq <= lastSeq)
      continue;
    if (first == nullptr || op->seq < first->seq) first = op.get();
  }
  if (first != nullptr) breakLocked(comm, leftBeforeLocked(comm, first->what()), first->seq, false);
}

Status Engine::leftBeforeLocked(const CommState& comm, const std::string& what) {
  return Status(StatusCode::kPeerFailed,
                what + " cannot complete: rank " + std::to_string(comm.leaver) +
                    " left the communicator after collective #" +
                    std::to_string(comm.lastCompletable.load(std::memory_order_relaxed)) +
                    " (it destroyed its communicator, or its process ended)");
}

void Engine::tellRendezvousLocked(const CommState& comm, const Status& why, std::uint64_t seq) {
  if (!comm.rendezvous) return;
  // A peer the transport found dead is reported (the first report wins); any other failure of
  // a world communicator revokes its epoch for every member. A split child's other failures
  // (a mismatch, a deadline) stay within the child: its members were told above.
  std::vector<std::pair<int, std::string>> suspects;
  for (int peer = 0; peer < comm.size; ++peer) {
    // A member that left (its leaving notice came) closed its connections: that is no failure.
    if (peer == comm.rank || comm.left(peer)) continue;
    Status s = comm.transport->peerStatus(peer);
    if (!s.ok())
      suspects.emplace_back(comm.worldRanks[static_cast<std::size_t>(peer)], s.message());
  }
  if (suspects.empty() && comm.parentId != 0) return;
  // The revocation carries the failure as a notice (its code and operation), so that a member
  // that hears of it from the rendezvous first still fails that operation with its own error.
  outbox_.post([client = comm.rendezvous, epoch = comm.epoch, suspects = std::move(suspects),
                reason = (std::string(kRevocationNotice) + encodeNotice(why, seq)).substr(0, 900)] {
    if (client->epoch() != epoch) return;  // the job has moved on
    if (suspects.empty()) {
      (void)client->revoke(reason);
      return;
    }
    for (const auto& [worldRank, what] : suspects) (void)client->reportFailure(worldRank, what);
  });
}

void Engine::revokeEpochLocked(const rendezvous::RendezvousClient* client, std::uint64_t epoch,
                               const Status& why) {
  for (const auto& weak : comms_) {
    auto comm = weak.lock();
    if (!comm || comm->rendezvous.get() != client || comm->epoch != epoch) continue;
    breakLocked(*comm, why, 0, false);
  }
}

void Engine::retireEpochLocked(const rendezvous::RendezvousClient* client, std::uint64_t epoch,
                               const Status& why) {
  for (const auto& weak : comms_) {
    auto comm = weak.lock();
    if (!comm || comm->rendezvous.get() != client || comm->epoch != epoch) continue;
    if (comm->broken.ok()) {
      breakLocked(*comm, why, 0, false);
    } else if (comm->broken.message().find(why.message()) == std::string::npos) {
      comm->broken =
          Status(StatusCode::kRevoked,
                 why.message() + " (it had failed before: " + comm->broken.toString() + ")");
      comm->brokenSeq = 0;
    }
  }
}

void Engine::dropConnections(rendezvous::RendezvousClient* client) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Status lost(StatusCode::kPeerFailed, "connections dropped (fault injection)");
    for (const auto& weak : comms_) {
      auto comm = weak.lock();
      if (!comm || comm->rendezvous.get() != client || !comm->transport) continue;
      for (int peer = 0; peer < comm->size; ++peer) {
        if (peer != comm->rank) comm->transport->failPeer(peer, lost);
      }
      breakLocked(*comm, lost, 0, false);  // nobody is told: nobody can be reached
    }
  }
  if (client != nullptr) client->dropWatchStream();
  wake();
}

void Engine::expelled(const rendezvous::RendezvousClient* client, const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  // FTCOMM_EXIT_ON_EXPEL=1 (ftcomm-run sets it): a process the others went on without ends
  // itself, dump first, even when its application is stuck where no error can reach it.
  const char* exitOnExpel = std::getenv("FTCOMM_EXIT_ON_EXPEL");
  if (exitOnExpel != nullptr && std::string(exitOnExpel) == "1") {
    (void)recorder::FlightRecorder::process().dump("expelled: " + why.message());
    std::cerr << "ftcomm: this process was expelled from the job (" << why.message()
              << "); exiting with code " << kExpelledExitCode << std::endl;
    std::_Exit(kExpelledExitCode);
  }
  const Status fenced(StatusCode::kRevoked,
                      "this process was expelled from the job (" + why.message() +
                          "): the others went on without it, so it must stop");
  for (const auto& weak : comms_) {
    auto comm = weak.lock();
    if (comm && comm->rendezvous.get() == client) breakLocked(*comm, fenced, 0, false);
  }
  wake();
}

void Engine::rendezvousEvent(const rendezvous::RendezvousClient* client,
                             const rendezvous::pb::Event& event) {
  using Event = rendezvous::pb::Event;
  std::lock_guard<std::mutex> lock(mu_);
  if (event.kind() == Event::MEMBER_FAILED) {
    const Status why(StatusCode::kPeerFailed, "world rank " + std::to_string(event.rank()) +
                                                  " failed (" + event.reason() + ")");
    for (const auto& weak : comms_) {
      auto comm = weak.lock();
      if (!comm || comm->rendezvous.get() != client || comm->epoch != event.epoch()) continue;
      const auto it = std::find(comm->worldRanks.begin(), comm->worldRanks.end(), event.rank());
      if (comm->transport && it != comm->worldRanks.end()) {
        comm->transport->failPeer(static_cast<int>(it - comm->worldRanks.begin()), why);
      }
    }
    revokeEpochLocked(client, event.epoch(), why);
  } else if (event.kind() == Event::EPOCH_REVOKED ||
             (event.kind() == Event::SNAPSHOT && event.revoked())) {
    const Status revoked(StatusCode::kRevoked, "epoch " + std::to_string(event.epoch()) +
                                                   " of the job was revoked (" + event.reason() +
                                                   ")");
    // A world communicator's failure (tellRendezvousLocked): that operation gets its error.
    const std::string& reason = event.reason();
    if (const std::size_t at = reason.find(kRevocationNotice); at != std::string::npos) {
      const std::string notice = reason.substr(at + kRevocationNotice.size());
      std::uint64_t seq = 0;
      const std::size_t by = reason.find("revoked by rank ");
      const int sender = by == std::string::npos ? -1 : std::atoi(reason.c_str() + by + 16);
      const Status why = decodeNotice(notice.data(), notice.size(), sender, &seq);
      for (const auto& weak : comms_) {
        auto comm = weak.lock();
        if (comm && comm->rendezvous.get() == client && comm->epoch == event.epoch() &&
            comm->parentId == 0)
          breakLocked(*comm, why, seq, false);
      }
    }
    revokeEpochLocked(client, event.epoch(), revoked);
  }
  wake();
}

}  // namespace ftcomm::detail
