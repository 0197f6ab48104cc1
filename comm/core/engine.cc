#include "core/engine.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>

#include "core/comm_state.h"
#include "recorder/flight_recorder.h"
#include "rendezvous/client.h"

namespace ftcomm::detail {

namespace {

// What a control message says: a member's operation `seq` failed with `code`, so the
// communicator is broken there. Text: "<code> <seq> <message>".
std::string encodeNotice(const Status& why, std::uint64_t seq) {
  return std::to_string(static_cast<int>(why.code())) + " " + std::to_string(seq) + " " +
         why.message();
}

Status decodeNotice(const char* data, std::size_t bytes, int sender, std::uint64_t* seq) {
  const std::string text(data, bytes);
  int code = 0;
  unsigned long long parsedSeq = 0;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%d %llu %n", &code, &parsedSeq, &consumed) < 2 ||
      code <= static_cast<int>(StatusCode::kOk) || code > static_cast<int>(StatusCode::kInternal)) {
    *seq = 0;
    return Status(StatusCode::kRevoked,
                  "rank " + std::to_string(sender) + " sent a malformed failure notice");
  }
  *seq = parsedSeq;
  return Status(static_cast<StatusCode>(code), "rank " + std::to_string(sender) + ": " +
                                                   text.substr(static_cast<std::size_t>(consumed)));
}

const transport::OpSignature kControlSignature{transport::OpKind::kControl};

// Marks a revocation reason that carries a notice (encodeNotice) for the rendezvous.
constexpr std::string_view kRevocationNotice = "[notice] ";

// How long a failed operation waits for receives that were already landing when it failed
// (Transport::settled) before its buffers are given back anyway.
constexpr std::chrono::milliseconds kSettleTime{5000};
constexpr std::chrono::milliseconds kPollSlice{1};

}  // namespace

Result<std::shared_ptr<Engine>> Engine::instance() {
  static std::mutex mu;
  static std::weak_ptr<Engine> current;
  std::lock_guard<std::mutex> lock(mu);
  if (auto engine = current.lock()) return engine;
  auto worker = ucx::UcxWorker::create();
  if (!worker.ok()) return worker.status();
  std::shared_ptr<Engine> engine(new Engine());
  engine->worker_ = std::move(worker).value();
  engine->address_ = engine->worker_->address();
  engine->wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (engine->wakeFd_ < 0) return internalError(std::string("eventfd: ") + std::strerror(errno));
  engine->thread_ = std::thread([raw = engine.get()] { raw->run(); });
  current = engine;
  return engine;
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    ops_.clear();
  }
  wake();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }
  if (wakeFd_ >= 0) ::close(wakeFd_);
}

void Engine::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wakeFd_, &one, sizeof one);
}

void Engine::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (pollLocked()) continue;
    auto until = Clock::now() + std::chrono::seconds(1);
    for (const auto& op : ops_) until = std::min(until, op->failing ? op->settleBy : op->deadline);
    if (!worker_->arm()) continue;  // events arrived meanwhile: progress first
    sleepingUntil_ = until;
    lock.unlock();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    pollfd fds[2] = {{worker_->eventFd(), POLLIN, 0}, {wakeFd_, POLLIN, 0}};
    ::poll(fds, 2, static_cast<int>(std::max<long long>(left.count() + 1, 0)));
    std::uint64_t drained = 0;
    [[maybe_unused]] ssize_t n = ::read(wakeFd_, &drained, sizeof drained);
    lock.lock();
    sleepingUntil_ = {};
  }
}

bool Engine::tryProgress() {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  return pollLocked();
}

void Engine::startLocked(std::unique_ptr<Operation> op) {
  op->work->markStarted();
  Operation& started = *op;
  ops_.push_back(std::move(op));
  if (sleepingUntil_ != Clock::time_point{} && started.deadline < sleepingUntil_) wake();
  pollLocked();
}

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

bool Engine::pollLocked() {
  bool moved = worker_->progress();
  for (auto it = comms_.begin(); it != comms_.end();) {
    auto comm = it->lock();
    if (!comm) {
      it = comms_.erase(it);
      continue;
    }
    if (comm->broken.ok()) moved |= pollControlsLocked(*comm);
    ++it;
  }
  const auto now = Clock::now();
  for (auto& op : ops_) {
    if (op->work->done()) continue;
    if (op->failing) {
      moved |= settleLocked(*op, now);
      continue;
    }
    if (op->task) {
      Result<bool> done = op->task->advance();
      if (!done.ok()) {
        breakLocked(*op->comm,
                    Status(done.status().code(), op->what + ": " + done.status().message()),
                    op->seq, true);
      } else if (*done) {
        op->work->complete(Status::Ok());
      }
    } else if (op->request->done()) {
      const Status& s = op->request->status();
      if (s.ok()) {
        op->work->complete(s, op->request->bytes());
      } else {
        failLocked(*op, Status(s.code(), op->what + ": " + s.message()), now);
      }
    }
    if (op->work->done() || op->failing) {
      moved = true;
    } else if (now >= op->deadline) {
      moved = true;
      const Status late = timeoutError(op->what + " did not complete within its " +
                                       std::to_string(op->timeout.count()) + " ms deadline");
      if (op->collective) {
        breakLocked(*op->comm, late, op->seq, true);
      } else {
        op->comm->transport->cancel(op->request);
        failLocked(*op, late, now);
        (void)recorder::FlightRecorder::process().dump(late.toString());
      }
    }
  }
  sweepLocked();
  return moved;
}

bool Engine::pollControlsLocked(CommState& comm) {
  for (int peer = 0; peer < static_cast<int>(comm.controls.size()); ++peer) {
    auto& control = comm.controls[static_cast<std::size_t>(peer)];
    if (!control.request || !control.request->done()) continue;
    const Status& s = control.request->status();
    if (s.ok()) {
      std::uint64_t seq = 0;
      Status why = decodeNotice(control.buffer.data(), control.request->bytes(), peer, &seq);
      breakLocked(comm, why, seq, false);
    } else if (s.code() != StatusCode::kCancelled) {
      breakLocked(comm, s, 0, true);
    }
    return true;
  }
  return false;
}

void Engine::breakLocked(CommState& comm, const Status& why, std::uint64_t seq, bool detectedHere) {
  if (!comm.broken.ok()) return;
  comm.broken = why;
  comm.brokenSeq = seq;
  const Status revoked(StatusCode::kRevoked, "communicator " + comm.name + " (epoch " +
                                                 std::to_string(comm.epoch) +
                                                 ") is unusable: " + why.toString());
  // The evidence first: the entries already say how they failed when the dump is written, and
  // no waiter learns of the failure before the dump exists (nor before its receives settled).
  const auto now = Clock::now();
  for (auto& op : ops_) {
    if (op->comm.get() != &comm || op->work->done() || op->failing) continue;
    // A failure of no operation in particular (a dead member, a revocation) is every pending
    // operation's own error; one operation's failure is the others' reason to be revoked.
    if (seq == 0) {
      op->failing = Status(why.code(), op->what + ": " + why.message());
    } else {
      op->failing = op->collective && op->seq == seq ? why : revoked;
    }
    op->settleBy = now + kSettleTime;
    op->work->recordFailure(*op->failing);
  }
  (void)recorder::FlightRecorder::process().dump(revoked.message());
  if (comm.transport) comm.transport->cancelAll(revoked);
  for (auto& op : ops_) {
    if (op->comm.get() == &comm && op->failing) settleLocked(*op, now);
  }
  if (!comm.transport || !detectedHere) return;
  comm.notice = encodeNotice(why, seq);
  if (comm.notice.size() > CommState::Control{}.buffer.size()) {
    comm.notice.resize(CommState::Control{}.buffer.size());
  }
  for (int peer = 0; peer < comm.size; ++peer) {
    if (peer == comm.rank) continue;
    (void)comm.transport->send(peer, {comm.channel, kControlSlot, kControlSignature},
                               comm.notice.data(), comm.notice.size());
  }
  tellRendezvousLocked(comm, why, seq);
}

void Engine::tellRendezvousLocked(const CommState& comm, const Status& why, std::uint64_t seq) {
  if (!comm.rendezvous) return;
  // A peer the transport found dead is reported (the first report wins); any other failure of
  // a world communicator revokes its epoch for every member. A split child's other failures
  // (a mismatch, a deadline) stay within the child: its members were told above.
  std::vector<std::pair<int, std::string>> suspects;
  for (int peer = 0; peer < comm.size; ++peer) {
    if (peer == comm.rank) continue;
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

void Engine::failLocked(Operation& op, const Status& why, Clock::time_point now) {
  op.failing = why;
  op.settleBy = now + kSettleTime;
  op.work->recordFailure(why);
  settleLocked(op, now);
}

bool Engine::settleLocked(Operation& op, Clock::time_point now) {
  const auto& transport = op.comm->transport;
  const bool settled =
      !transport ||
      (op.collective ? transport->settled() : op.request == nullptr || op.request->released());
  if (!settled && now < op.settleBy) return false;
  if (!settled) {
    std::cerr << "ftcomm: " << op.what << ": a cancelled receive was still landing "
              << kSettleTime.count() << " ms after the failure; its buffer is given back anyway"
              << std::endl;
  }
  op.work->complete(*op.failing);
  return true;
}

void Engine::closeLocked(CommState& comm) {
  const Status closed = cancelled("communicator " + comm.name + " was destroyed");
  if (comm.transport) {
    // Buffers go back to their owners only once nothing can land in them any more.
    comm.transport->cancelAll(closed);
    const auto until = Clock::now() + kSettleTime;
    while (!comm.transport->settled() && Clock::now() < until) {
      if (!worker_->progress()) worker_->waitForEvents(std::min(until, Clock::now() + kPollSlice));
    }
  }
  for (auto& op : ops_) {
    if (op->comm.get() == &comm) op->work->complete(op->failing ? *op->failing : closed);
  }
  sweepLocked();
  if (comm.broken.ok()) comm.broken = closed;
  comm.transport.reset();
}

void Engine::revokeEpochLocked(const std::shared_ptr<rendezvous::RendezvousClient>& client,
                               std::uint64_t epoch, const Status& why) {
  for (const auto& weak : comms_) {
    auto comm = weak.lock();
    if (!comm || comm->rendezvous != client || comm->epoch != epoch) continue;
    breakLocked(*comm, why, 0, false);
  }
}

void Engine::retireEpochLocked(const std::shared_ptr<rendezvous::RendezvousClient>& client,
                               std::uint64_t epoch, const Status& why) {
  for (const auto& weak : comms_) {
    auto comm = weak.lock();
    if (!comm || comm->rendezvous != client || comm->epoch != epoch) continue;
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

void Engine::dropConnections(const std::shared_ptr<rendezvous::RendezvousClient>& client) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Status lost(StatusCode::kPeerFailed, "connections dropped (fault injection)");
    for (const auto& weak : comms_) {
      auto comm = weak.lock();
      if (!comm || comm->rendezvous != client || !comm->transport) continue;
      for (int peer = 0; peer < comm->size; ++peer) {
        if (peer != comm->rank) comm->transport->failPeer(peer, lost);
      }
      breakLocked(*comm, lost, 0, false);  // nobody is told: nobody can be reached
    }
  }
  if (client) client->dropWatchStream();
  wake();
}

void Engine::expelled(const std::shared_ptr<rendezvous::RendezvousClient>& client,
                      const Status& why) {
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
    if (comm && comm->rendezvous == client) breakLocked(*comm, fenced, 0, false);
  }
  wake();
}

void Engine::rendezvousEvent(const std::shared_ptr<rendezvous::RendezvousClient>& client,
                             const rendezvous::pb::Event& event) {
  using Event = rendezvous::pb::Event;
  std::lock_guard<std::mutex> lock(mu_);
  if (event.kind() == Event::MEMBER_FAILED) {
    const Status why(StatusCode::kPeerFailed, "world rank " + std::to_string(event.rank()) +
                                                  " failed (" + event.reason() + ")");
    for (const auto& weak : comms_) {
      auto comm = weak.lock();
      if (!comm || comm->rendezvous != client || comm->epoch != event.epoch()) continue;
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
        if (comm && comm->rendezvous == client && comm->epoch == event.epoch() &&
            comm->parentId == 0)
          breakLocked(*comm, why, seq, false);
      }
    }
    revokeEpochLocked(client, event.epoch(), revoked);
  }
  wake();
}

void Engine::sweepLocked() {
  ops_.remove_if([](const std::unique_ptr<Operation>& op) { return op->work->done(); });
}

Result<std::uint16_t> Engine::allocateChannel() {
  std::lock_guard<std::mutex> lock(mu_);
  // Never reused: a late message for a closed communicator must not match a newer one.
  if (nextChannel_ > 0xffff) {
    return resourceExhausted("this process has made 65535 communicators; channels are used up");
  }
  return static_cast<std::uint16_t>(nextChannel_++);
}

}  // namespace ftcomm::detail
