#include "core/engine.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iostream>

#include "core/comm_state.h"
#include "core/network.h"
#include "core/notice.h"
#include "recorder/flight_recorder.h"

namespace ftcomm::detail {

namespace {

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
  auto network = dataNetwork();
  if (!network.ok()) return network.status();
  auto worker = ucx::UcxWorker::create(network->interface);
  if (!worker.ok()) return worker.status();
  std::shared_ptr<Engine> engine(new Engine());
  engine->worker_ = std::move(worker).value();
  engine->address_ = engine->worker_->address();
  engine->advertised_ = network->address;
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

std::string Operation::what() const {
  std::string text = comm->describe(name, seq);
  if (!collective) {
    text +=
        (send ? " to rank " : " from rank ") + std::to_string(peer) + " tag " + std::to_string(tag);
  }
  return text;
}

void Engine::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wakeFd_, &one, sizeof one);
}

void Engine::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (pollsOnLocked(pollLocked())) {
      // Let a thread that waits for the mutex (a caller posting its next operation) in
      // between, and where due, other threads the core (yieldsLocked).
      const bool yields = yieldsLocked();
      lock.unlock();
      if (yields) ::sched_yield();
      lock.lock();
      continue;
    }
    auto until = Clock::now() + std::chrono::seconds(1);
    for (const auto& op : ops_) {
      until = std::min(until, op->failing ? op->settleBy : op->deadline);
      if (op->task && op->task->sleepLimit() > std::chrono::microseconds::zero()) {
        until = std::min(until, Clock::now() + op->task->sleepLimit());
      }
    }
    // An inline collective handed to this thread while nobody polls: the peers' posts must wake
    // it from now on, not once the grace of the last spin is over.
    const bool watching = std::any_of(ops_.begin(), ops_.end(), [](const auto& op) {
      return op->watchesSharedMemory && !op->work->done();
    });
    if (!releaseSpinLocked(Clock::now(), until, watching && spinning_ == 0)) continue;
    // A waiting thread that polls the worker itself gets UCX's events first: were this thread
    // woken by them too, on the same core, it would take the core and then the mutex and the
    // socket from it at every message (perf on an 8-byte allreduce over UCX). It still polls
    // every kSpinGrace (engine_spin.cc) meanwhile (`until`), and is woken when that thread stops.
    const bool driven = driving_ > 0;
    if (!driven && !worker_->arm()) continue;  // events arrived meanwhile: progress first
    // Shared memory: the peers wake this thread through wakeFd_ once marked asleep; their exits
    // show on their pidfds. (poll() skips a negative fd.)
    std::vector<pollfd> fds = {{driven ? -1 : worker_->eventFd(), POLLIN, 0}, {wakeFd_, POLLIN, 0}};
    std::vector<std::shared_ptr<shm::ShmDomain>> domains;
    bool arrived = false;
    for (const auto& weak : domains_) {
      auto domain = weak.lock();
      if (!domain) continue;
      const int limit = domain->arm();
      arrived |= limit == 0;
      if (limit > 0) until = std::min(until, Clock::now() + std::chrono::milliseconds(limit));
      domain->pollFds(fds);
      domains.push_back(std::move(domain));
    }
    if (arrived) continue;
    // Inline collectives (inline_collective.h) are not announced by ring messages: with the
    // domains marked asleep, a post from now on wakes this thread; one from before is seen here.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (watching && pollsOnLocked(pollLocked())) continue;
    sleepingUntil_ = until;
    lock.unlock();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(left.count() + 1, 0)));
    std::uint64_t drained = 0;
    [[maybe_unused]] ssize_t n = ::read(wakeFd_, &drained, sizeof drained);
    lock.lock();
    sleepingUntil_ = {};
    // A pidfd that fired: its process exited. Each domain looks for its own.
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      for (const auto& domain : domains) domain->polled(fds[i]);
    }
  }
}

bool Engine::tryProgress() {
  return tryProgress(Clock::now());
}

bool Engine::tryProgress(Clock::time_point now) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  return pollLocked(now);
}

void Engine::startLocked(std::unique_ptr<Operation> op) {
  // Submitted just now: its recorder entry was made, and its deadline computed, a moment ago.
  op->work->markStartedAtScheduling();
  Operation& started = *op;
  ops_.push_back(std::move(op));
  // Asleep past the new deadline, or with an inline collective to stream and a core of its
  // own: the progress thread wakes now, while the caller still holds the core, and so takes it
  // as soon as the caller sleeps, instead of behind a peer's wake-up of an idle core (100-400 us
  // on these VMs).
  if (sleepingUntil_ != Clock::time_point{} &&
      (started.deadline < sleepingUntil_ || (started.watchesSharedMemory && !oversubscribed()))) {
    wake();
  }
  pollLocked(started.deadline - started.timeout, /*sendsFirst=*/true);
}

void Engine::addDomainLocked(const std::shared_ptr<shm::ShmDomain>& domain) {
  domains_.push_back(domain);
  if (spinHeld_) domain->spin(+1);
  // The cores the local members may run on, all of them together: mpirun binds each rank to a
  // core of its own when there are enough, and then none of them crowds another.
  int local = 0;
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int m = 0; m < domain->size(); ++m) {
    if (!domain->local(m)) continue;
    ++local;
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    const pid_t pid = m == domain->rank() ? 0 : domain->pid(m);
    if (::sched_getaffinity(pid, sizeof cpus, &cpus) != 0) {
      CPU_ZERO(&cpus);
      CPU_SET(0, &cpus);  // unknown: count it as sharing a core
    }
    CPU_OR(&all, &all, &cpus);
  }
  if (local > CPU_COUNT(&all)) oversubscribed_.store(true, std::memory_order_relaxed);
}

bool Engine::pollLocked(Clock::time_point now, bool sendsFirst) {
  bool moved = !sendsFirst && worker_->progress();
  bool streaming = false;
  for (auto it = domains_.begin(); it != domains_.end();) {
    auto domain = it->lock();
    if (!domain) {
      it = domains_.erase(it);
      continue;
    }
    moved |= domain->progress();
    ++it;
  }
  for (auto it = comms_.begin(); it != comms_.end();) {
    auto comm = it->lock();
    if (!comm) {
      it = comms_.erase(it);
      continue;
    }
    if (comm->broken.ok()) moved |= pollControlsLocked(*comm);
    ++it;
  }
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
                    Status(done.status().code(), op->what() + ": " + done.status().message()),
                    op->seq, true);
      } else if (*done) {
        op->work->complete(Status::Ok());
      } else if (op->task->hasMoreWork()) {
        moved = true;
        streaming = true;
      }
    } else if (op->request->done()) {
      const Status& s = op->request->status();
      if (s.ok()) {
        op->work->complete(s, op->request->bytes());
      } else {
        failLocked(*op, Status(s.code(), op->what() + ": " + s.message()), now);
      }
    }
    if (op->work->done() || op->failing) {
      moved = true;
    } else if (now >= op->deadline) {
      moved = true;
      const Status late = timeoutError(op->what() + " did not complete within its " +
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
  if (sendsFirst) moved |= worker_->progress();
  sweepLocked();
  streaming_ = streaming;
  return moved;
}

void Engine::breakLocked(CommState& comm, const Status& why, std::uint64_t seq, bool detectedHere) {
  if (!comm.broken.ok()) return;
  comm.broken = why;
  comm.unusable.store(true, std::memory_order_relaxed);
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
      op->failing = Status(why.code(), op->what() + ": " + why.message());
    } else {
      op->failing = op->collective && op->seq == seq ? why : revoked;
    }
    op->settleBy = now + kSettleTime;
    op->work->recordFailure(*op->failing);
  }
  (void)recorder::FlightRecorder::process().dump(revoked.message());
  if (comm.transport) {
    comm.transport->cancelAll(revoked);
    // The failing collectives give their buffers back (settleLocked) while peers may still be
    // reading them: such reads must fail, not return what the caller writes there next.
    comm.transport->reclaimLoans();
  }
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
    std::cerr << "ftcomm: " << op.what() << ": a cancelled receive was still landing "
              << kSettleTime.count() << " ms after the failure; its buffer is given back anyway"
              << std::endl;
    transport->reclaimLoans();  // a send's peer may still read it too
  }
  op.work->complete(*op.failing);
  return true;
}

void Engine::closeLocked(CommState& comm, bool leaving) {
  const Status closed = cancelled("communicator " + comm.name + " was destroyed");
  if (leaving) sendLeavingLocked(comm);
  if (comm.transport) {
    // Buffers go back to their owners only once nothing can land in them any more.
    comm.transport->cancelAll(closed);
    const auto until = Clock::now() + kSettleTime;
    while (!comm.transport->settled() && Clock::now() < until) {
      if (!worker_->progress()) worker_->waitForEvents(std::min(until, Clock::now() + kPollSlice));
    }
    // Operations cut short give their buffers back (Transport::reclaimLoans).
    const bool pending = std::any_of(ops_.begin(), ops_.end(), [&](const auto& op) {
      return op->comm.get() == &comm && !op->work->done();
    });
    if (pending) comm.transport->reclaimLoans();
  }
  for (auto& op : ops_) {
    if (op->comm.get() == &comm) op->work->complete(op->failing ? *op->failing : closed);
  }
  sweepLocked();
  if (comm.broken.ok()) comm.broken = closed;
  comm.unusable.store(true, std::memory_order_relaxed);
  comm.transport.reset();
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
