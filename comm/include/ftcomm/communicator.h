// A communicator: a group of processes that run collectives and point-to-point operations on
// host memory (UCX, and the shared-memory transport of the performance issue), every one
// nonblocking and returning a Work. The public API; the fault-tolerance contract
// (revoke, reconfigure) builds on the epoch and the failure paths here.
//
// Creation comes from mpirun's environment or explicit options, through the rendezvous service
// (FTCOMM_RENDEZVOUS, FTCOMM_JOB): members exchange their UCX worker addresses there, connect
// every endpoint and exchange a message with every peer before create() returns (eager). A
// member that dies during that exchange does not fail create(): the communicator comes back
// revoked (health() and every operation say why), and reconfigure() goes on without it.
//
// Collectives are matched by a per-communicator sequence number: every member must call the
// same collectives in the same order. Each message carries its operation's signature, so a
// member that called a different one (or with another count, dtype, op or root) is reported as
// Mismatch naming both. A failed collective (Mismatch, a dead peer, a timeout) leaves the
// communicator unusable: its pending and later operations fail with Revoked, and the members
// are told. A failed point-to-point operation fails alone.
//
// Fault tolerance (the contract of docs/ARCHITECTURE.md): a failure anywhere in the job (a dead
// member, a revoke(), a failed collective of the world) revokes the job's epoch: every pending and
// later operation of every communicator of that epoch fails with PeerFailed or Revoked. The world
// communicator then recovers in place with reconfigure(): the survivors agree on the next epoch
// through the rendezvous, keep their relative order, and go on with the same object. Split
// children do not follow: a reconfigure revokes them for good (Revoked, "split again"), and the
// application splits the reconfigured world again.
//
// Sizes are element counts of the operation's dtype. In place: pass the same buffer for send
// and recv (allGather / gather: send may be this rank's block of recv; scatter: recv may be
// this rank's block of send).
//
// Thread-safety: operations may be issued from any thread, but collectives on one communicator
// must be issued in one order on every member (as MPI requires).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ftcomm/export.h"
#include "ftcomm/status.h"
#include "ftcomm/store.h"
#include "ftcomm/types.h"
#include "ftcomm/work.h"

namespace ftcomm {

namespace detail {
class CommState;
struct WorldIdentity;
struct CommAccess;
}  // namespace detail

struct CommOptions {
  // -1: FTCOMM_RANK / FTCOMM_WORLD_SIZE, else mpirun's OMPI_COMM_WORLD_RANK / _SIZE.
  int rank = -1;
  int size = -1;
  std::string rendezvous;  // HOST:PORT; empty: FTCOMM_RENDEZVOUS
  std::string job;         // empty: FTCOMM_JOB, else "ftcomm"
  std::string token;       // empty: FTCOMM_TOKEN
  // TLS to the rendezvous (PEM files): the CA that signed the server's certificate, and for
  // mutual TLS this process's certificate and key. Empty: FTCOMM_RENDEZVOUS_CA,
  // FTCOMM_RENDEZVOUS_CERT, FTCOMM_RENDEZVOUS_KEY; none set: plaintext.
  std::string rendezvousCa;
  std::string rendezvousCert;
  std::string rendezvousKey;
  std::string name = "world";
  // Creation's deadline (FTCOMM_CREATE_TIMEOUT_MS overrides it): a member that never shows up
  // makes create() fail naming it.
  std::chrono::milliseconds timeout{60000};
  // Every operation's default deadline; 0: FTCOMM_TIMEOUT_MS, else 300 s.
  std::chrono::milliseconds opTimeout{0};
  // Join a running job as a replacement (or FTCOMM_REPLACEMENT=1): create() returns once a
  // reconfigure() of the survivors admitted this process; rank and size come from there.
  bool replacement = false;
  // reconfigure() refuses to continue with fewer members; 0: FTCOMM_MIN_WORLD_SIZE, else 1.
  int minSize = 0;
  // The tuning profile: `generic`, `auto`, a shipped profile's name or a rules file's path,
  // optionally followed by `,KEY=VALUE` overrides of its settings; empty: FTCOMM_TUNING, else
  // auto. Every member plans with rank 0's (a member whose own differs is told so once).
  std::string tuning;
};

struct ReconfigureOptions {
  // For the agreement and the new epoch's wire-up together; 0: FTCOMM_RECONFIGURE_TIMEOUT_MS,
  // else 60 s.
  std::chrono::milliseconds timeout{0};
};

// What reconfigure() agreed on.
struct Reconfiguration {
  std::uint64_t epoch = 0;
  int rank = -1;
  int size = 0;
  std::vector<int> oldToNew;  // by rank in the epoch left; -1: that member is gone
  std::vector<int> admitted;  // ranks of the replacements admitted into this epoch
  int rounds = 1;             // agreement rounds: more than one when a member failed meanwhile
};

struct OpOptions {
  std::chrono::milliseconds timeout{0};  // 0: the communicator's
};

class Communicator;

// A communicator being created or split without blocking (NCCL's config.blocking = 0).
class FTCOMM_API PendingCommunicator {
 public:
  class Impl;
  PendingCommunicator() = default;
  explicit PendingCommunicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  // True once wait() would not block.
  bool test();
  // The communicator (null for a NOCOLOR split), or why it could not be made. Timeout, with the
  // creation still going on, when it takes longer than `timeout`.
  Result<std::unique_ptr<Communicator>> wait(std::chrono::milliseconds timeout);

 private:
  std::shared_ptr<Impl> impl_;
};

class FTCOMM_API Communicator {
 public:
  static constexpr int kNoColor = -1;
  // The largest tag of send/recv.
  static constexpr int kMaxTag = (1 << 27) - 2;

  static Result<std::unique_ptr<Communicator>> create(const CommOptions& options = {});
  static PendingCommunicator createAsync(const CommOptions& options = {});

  explicit Communicator(std::shared_ptr<detail::CommState> state,
                        std::shared_ptr<detail::WorldIdentity> world = nullptr);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  std::uint64_t epoch() const;
  std::uint64_t id() const;
  const std::string& name() const;
  // The tuning profile the members agreed on: its name and hash ("zen5 3f0c...").
  std::string tuningProfile() const;
  // Members by rank as ranks of the parent (a root communicator: of the world, i.e. itself).
  const std::vector<int>& parentRanks() const;
  const std::vector<int>& worldRanks() const;

  Work allReduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                 const OpOptions& options = {});
  Work reduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
              int root, const OpOptions& options = {});
  Work broadcast(void* buffer, std::size_t count, DataType dtype, int root,
                 const OpOptions& options = {});
  // recv holds size() blocks of `count`.
  Work allGather(const void* send, void* recv, std::size_t count, DataType dtype,
                 const OpOptions& options = {});
  // Rank r's block has recvCounts[r] elements at recvDispls[r] (the same arrays on every rank).
  Work allGatherV(const void* send, void* recv, std::span<const std::size_t> recvCounts,
                  std::span<const std::size_t> recvDispls, DataType dtype,
                  const OpOptions& options = {});
  // send holds size() blocks of `count`; recv gets this rank's reduced block.
  Work reduceScatter(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                     const OpOptions& options = {});
  // size() blocks of `count` each way.
  Work allToAll(const void* send, void* recv, std::size_t count, DataType dtype,
                const OpOptions& options = {});
  Work allToAllV(const void* send, std::span<const std::size_t> sendCounts,
                 std::span<const std::size_t> sendDispls, void* recv,
                 std::span<const std::size_t> recvCounts, std::span<const std::size_t> recvDispls,
                 DataType dtype, const OpOptions& options = {});
  // recv (at the root) holds size() blocks of `count`.
  Work gather(const void* send, void* recv, std::size_t count, DataType dtype, int root,
              const OpOptions& options = {});
  // send (at the root) holds size() blocks of `count`.
  Work scatter(const void* send, void* recv, std::size_t count, DataType dtype, int root,
               const OpOptions& options = {});
  Work barrier(const OpOptions& options = {});
  // Messages between two ranks with one tag match in order. A message longer than the receive
  // fails the receive with Mismatch (truncation); a shorter one is fine (Work::bytes()).
  Work send(const void* buffer, std::size_t count, DataType dtype, int peer, int tag,
            const OpOptions& options = {});
  Work recv(void* buffer, std::size_t count, DataType dtype, int peer, int tag,
            const OpOptions& options = {});

  // Eager split, collective over this communicator: members with one color form a child,
  // ordered by key then rank; kNoColor gives none (null). The child is connected on return.
  Result<std::unique_ptr<Communicator>> split(int color, int key, const OpOptions& options = {});
  PendingCommunicator splitAsync(int color, int key, const OpOptions& options = {});
  // A child of the listed ranks, in that order; every member passes the same list, and those not
  // in it get null.
  Result<std::unique_ptr<Communicator>> split(std::span<const int> ranks,
                                              const OpOptions& options = {});

  // The job's key-value store on the rendezvous (world communicators only; a split child gets
  // InvalidArgument). It outlives every member and is shared with replacements.
  Result<JobStore> store() const;

  // A child of the listed ranks, in that order, made by those members alone (MPI_Comm_create_group,
  // torch's new_group): the others need not call. The members exchange their channels through
  // the job's store under `tag`, which they all pass the same and which no other group of this
  // communicator in this epoch uses. Fails with Timeout naming the missing ranks when a member
  // does not call within the operation's deadline.
  Result<std::unique_ptr<Communicator>> createGroup(std::span<const int> ranks,
                                                    const std::string& tag,
                                                    const OpOptions& options = {});

  // Writes this process's flight-recorder dump (recorder/) now.
  Result<std::string> dumpFlightRecorder(const std::string& reason);

  // Ok while usable; why not once an operation failed it.
  Status health() const;

  // Revokes this communicator's epoch: every pending and later operation fails with Revoked on
  // every member (a world communicator: through the rendezvous, so every communicator of the
  // epoch; a split child: its members). Local; returns at once.
  Status revoke(const std::string& reason = "revoked by the application");
  // revoke(), then ends this communicator here: nothing can be issued on it again, and it cannot
  // be reconfigured.
  void abort(const std::string& reason = "aborted by the application");
  // In place, world communicators only: leaves the current epoch (revoking it if it was not),
  // agrees on the next one with every live member, and connects it. Survivors keep their
  // relative order; waiting replacements get the next ranks. Collective over the live members,
  // and no other operation of this communicator may be issued meanwhile. Fails (and leaves the
  // communicator revoked) below the minimum size, when this member was expelled, or at the
  // deadline. References returned by parentRanks() / worldRanks() / name() before it dangle.
  Result<Reconfiguration> reconfigure(const ReconfigureOptions& options = {});
  // Replacements that joined and wait for the next reconfigure() (REPLACEMENT_WAITING).
  std::uint32_t replacementsWaiting() const;
  // True in a process that create() admitted into a running job as a replacement.
  bool joinedAsReplacement() const;
  // The state hand-over after a reconfigure() that admitted replacements: a broadcast from rank
  // 0, which is always a survivor (they keep the first ranks). Survivors and newcomers all call it.
  Work shareState(void* buffer, std::size_t count, DataType dtype, const OpOptions& options = {});

 private:
  friend struct detail::CommAccess;  // the NCCL backend and RMA windows reach its state
  std::shared_ptr<detail::CommState> state_;
  std::shared_ptr<detail::WorldIdentity> world_;  // null for split children
};

}  // namespace ftcomm
