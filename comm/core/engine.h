// The progress engine: one per process, shared by every communicator. It owns the UCX worker
// and the operations in flight, and advances them from a progress thread that sleeps on the
// worker's event fd, its own eventfd (which shared-memory peers write to) and the peers' pidfds
// when nothing happens (2 cores, 8 ranks: nothing may spin), and from any
// thread waiting on a Work, which drives progress itself for a few microseconds first (a small
// operation then completes without two thread switches).
//
// Failure handling lives here because it must reach every operation of a communicator at once:
// a collective that fails (Mismatch, a dead peer, a deadline) breaks its communicator — every
// pending operation of it fails, pending receives are withdrawn, the flight recorder dumps, and
// the other members are told through a control message, so that all of them fail too instead
// of waiting for messages that will never come. Beyond the communicator, a failure found here
// goes to the rendezvous (outbox.h): a dead peer is reported, any other failure of a world
// communicator revokes its epoch; and the rendezvous's events (a member failed, the epoch was
// revoked) break every communicator of that epoch, split children included.
//
// Thread-safety: every public method may be called from any thread; members marked Locked need
// mutex() held.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/operation.h"
#include "core/outbox.h"
#include "ftcomm/status.h"
#include "transport/shm/shm_domain.h"
#include "transport/ucx/ucx_worker.h"

namespace ftcomm::rendezvous {
class RendezvousClient;
namespace v1 {
class Event;
}
}  // namespace ftcomm::rendezvous

namespace ftcomm::detail {

// The exit code of a process that FTCOMM_EXIT_ON_EXPEL ended (EX_TEMPFAIL).
constexpr int kExpelledExitCode = 75;

class Engine {
 public:
  // The process's engine, created on first use and shared while anyone holds it.
  static Result<std::shared_ptr<Engine>> instance();
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  std::mutex& mutex() { return mu_; }
  const std::shared_ptr<ucx::UcxWorker>& workerLocked() { return worker_; }
  const std::string& address() const { return address_; }
  // This process's address on the data network, for the rendezvous (core/network.h; may be
  // empty).
  const std::string& advertisedAddress() const { return advertised_; }

  // Starts an operation: advances it once and keeps it until it ends.
  void startLocked(std::unique_ptr<Operation> op);
  // Listens to a communicator's control messages (engine.h's failure handling).
  void attachLocked(const std::shared_ptr<CommState>& comm);
  // Breaks `comm`: the operation `seq` fails with `why`, every other pending one with Revoked.
  // `detectedHere`: the failure was found by this process, so the other members are told
  // (control messages) and the rendezvous too; otherwise it came from them.
  void breakLocked(CommState& comm, const Status& why, std::uint64_t seq, bool detectedHere);
  // Ends a communicator: its pending operations fail with Cancelled and are dropped, and its
  // transport is closed. `leaving` (its owner destroys it): where it is usable, the other
  // members are told first that this one leaves after its last collective that completed here,
  // so that this process's exit is no failure to them (notice.h).
  void closeLocked(CommState& comm, bool leaving = false);
  // The process exits normally (leave_at_exit.h): every communicator still usable tells its
  // other members that this one leaves, as its destruction would. Gives up where the mutex
  // stays taken.
  void leaveAtExit();
  // Why a collective (`what`, as CommState::describe says it) cannot complete: a member left
  // after an earlier one (CommState's lastCompletable).
  static Status leftBeforeLocked(const CommState& comm, const std::string& what);
  // Breaks every communicator of `epoch` of the job that `client` belongs to (world and split
  // children), as told from elsewhere: nobody else is told.
  void revokeEpochLocked(const rendezvous::RendezvousClient* client, std::uint64_t epoch,
                         const Status& why);
  // The rendezvous expelled this process from the job of `client`: every communicator of it
  // breaks for good.
  void expelled(const rendezvous::RendezvousClient* client, const Status& why);
  // reconfigure() left `epoch`: its communicators are revoked for good with `why`, also those
  // that had already failed (their error then says both), so that every later call says what to
  // do (split the reconfigured parent again).
  void retireEpochLocked(const rendezvous::RendezvousClient* client, std::uint64_t epoch,
                         const Status& why);
  // Fault injection (drop-conn): every peer of every communicator of `client`'s job is
  // unreachable from here, and the rendezvous loses this member's watch stream.
  void dropConnections(rendezvous::RendezvousClient* client);
  // A membership event of the job that `client` belongs to: a member failed, or the epoch was
  // revoked. Breaks every communicator of that epoch.
  void rendezvousEvent(const rendezvous::RendezvousClient* client,
                       const rendezvous::v1::Event& event);

  // The shared-memory domain of a new epoch: progressed with the rest, its peers watched.
  void addDomainLocked(const std::shared_ptr<shm::ShmDomain>& domain);
  // The eventfd the progress thread sleeps on (shared-memory peers write to it).
  int wakeFd() const { return wakeFd_; }

  // A thread waiting on a Work starts or stops driving progress itself (Work::wait's spin).
  // While one does, and for a grace period after (the next operation of a tight loop),
  // shared-memory peers do not wake the progress thread, which sleeps in short slices instead.
  // `drivesWorker`: the thread polls everything, the UCX worker included (Work::wait does; an
  // inline collective's spin polls its slots only). While one does, UCX's events do not wake the
  // progress thread either.
  void beginSpin(bool drivesWorker = false);
  // `done`: the operation completed while the thread polled (keep the grace, from `now`); else
  // the thread goes to sleep and the progress thread takes over at once.
  void endSpin(bool done, Clock::time_point now, bool drivesWorker = false);
  // A thread finished an operation in a few polls without beginSpin (an inline collective whose
  // peers were there): the grace goes on as after endSpin(true, now), without a clock reading.
  void polledToCompletion() { polledToCompletion_.store(true, std::memory_order_relaxed); }

  // More processes of this host's communicators than cores this process may run on: waiting
  // threads then yield after every empty poll.
  bool oversubscribed() const { return oversubscribed_.load(std::memory_order_relaxed); }

  // One round of progress if no other thread is making it; true when anything moved. `now`: a
  // recent reading of the clock, for the deadlines (a spinning waiter reads it every few polls:
  // on these VMs a reading costs as much as a poll).
  bool tryProgress();
  bool tryProgress(Clock::time_point now);

  // A receive channel for a new communicator (transport.h's MessageTag::channel), unique in this
  // process; peers send to this process on it (UcxTransport::connect).
  Result<std::uint16_t> allocateChannel();

 private:
  Engine() = default;
  void run();
  // One round over everything: the UCX worker, the shared-memory domains, the communicators'
  // control messages and every operation's task; true when anything moved. `sendsFirst`: the
  // tasks before the UCX worker (startLocked), so that a new operation's first messages leave
  // before this thread spends a system call looking for arrivals.
  bool pollLocked(Clock::time_point now = Clock::now(), bool sendsFirst = false);
  bool pollControlsLocked(CommState& comm);
  // Sends the leaving notice to every member still there, once and only while the communicator
  // is usable, and waits a moment for it to go out.
  void sendLeavingLocked(CommState& comm);
  // `peer`'s leaving notice came: it took part in collectives up to `lastSeq`, and a pending
  // later one breaks the communicator.
  void peerLeftLocked(CommState& comm, int peer, std::uint64_t lastSeq);
  void sweepLocked();
  // Fails `op` alone (a point-to-point operation): its Work completes with `why` once its
  // receive settled (Transport::settled), or at the settle deadline.
  void failLocked(Operation& op, const Status& why, Clock::time_point now);
  // Completes a failing operation if nothing can land in its buffers any more; true if it did.
  bool settleLocked(Operation& op, Clock::time_point now);
  // breakLocked's message to the rendezvous, sent from the outbox.
  void tellRendezvousLocked(const CommState& comm, const Status& why, std::uint64_t seq);
  void wake();
  // Before the progress thread sleeps: ends the spin grace once it is over, or at once where
  // `handedOver` (the progress thread alone has an operation to watch) and no thread spins (false
  // if a message came meanwhile that nobody saw); else shortens the sleep to the grace.
  bool releaseSpinLocked(Clock::time_point now, Clock::time_point& until, bool handedOver = false);
  // After a poll: whether the progress thread polls again at once. It does where something
  // `moved`, and more may, but not where only a collective streams and a thread that waits for
  // it polls anyway (Work::wait): that thread streams it, and this one would take turns with it
  // on its core.
  bool pollsOnLocked(bool moved) const;
  // Before polling again: whether the progress thread yields its core first. It does where
  // processes outnumber cores (the process it waits for may need the core), and every
  // kStreamYieldEvery while a collective streams: it would keep its core for the scheduler's
  // whole slice, and an application thread that wakes meanwhile (from its sleep, or its wait for
  // a GPU) would wait for it.
  bool yieldsLocked();

  std::mutex mu_;
  std::shared_ptr<ucx::UcxWorker> worker_;
  std::string address_;
  std::string advertised_;
  std::list<std::unique_ptr<Operation>> ops_;
  std::vector<std::weak_ptr<CommState>> comms_;
  std::vector<std::weak_ptr<shm::ShmDomain>> domains_;
  std::uint32_t nextChannel_ = 1;  // channel 0 is never a communicator's
  int wakeFd_ = -1;
  bool stopping_ = false;
  Clock::time_point sleepingUntil_{};
  std::atomic<bool> oversubscribed_{false};
  // The last pollLocked left a task with more work at once (a collective streaming through
  // shared memory): the progress thread runs on without waiting for anything.
  bool streaming_ = false;
  Clock::time_point lastYield_{};  // the progress thread's last yield while streaming
  int spinning_ = 0;               // threads in Work::wait's spin
  int driving_ = 0;                // those of them that poll the UCX worker too
  bool spinHeld_ = false;          // the domains count this process as polling
  Clock::time_point spinEnded_{};
  std::atomic<bool> polledToCompletion_{false};  // since releaseSpinLocked last looked
  std::thread thread_;
  RendezvousOutbox outbox_;
};

}  // namespace ftcomm::detail
