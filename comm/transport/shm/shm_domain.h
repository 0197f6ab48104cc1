// The shared-memory side of one communicator epoch in this process: its own segment (rings that
// the other members write into), the segments of the members on this host, and the messages in
// flight between them. The world communicator of the epoch and its split children share one
// domain; messages carry the receiver's channel (transport.h), so each communicator matches only
// its own. ShmTransport is one communicator's view of it.
//
// Protocol: a message of up to eagerBytes is copied into the receiver's ring (kEager). A larger
// one is announced (kRts) and the receiver copies it straight from the sender's buffer with
// process_vm_readv (one copy, no staging), then answers kFin, which completes the send. A
// receive matches the first message from its sender with its channel and slot: messages that
// arrive before their receive are kept (eager ones copied out of the ring, kRts as announced),
// so the rings never block on a late receive.
//
// Failure: each local member is watched through a pidfd; its exit (or failPeer) completes every
// request that involves it with PeerFailed at once. A withdrawn send whose kRts the peer may
// still be reading keeps its buffer (TransportRequest::released) until the peer answers or dies.
// What an exited member wrote before it exited still counts: its ring is read to the end first,
// and its eager messages that came before their receive still match one (a member that finished
// and left may be ahead of the others).
//
// Sleeping: the engine sleeps in poll() on its wake eventfd. Before it does, arm() marks this
// process's segment as sleeping; a writer that finds the mark clears it and writes to the
// eventfd, which the domain took from the owner with pidfd_getfd.
//
// Thread-safety: none; the engine's mutex covers every call but wakeMember and area().
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/copy_bytes.h"
#include "transport/shm/mappable_memory.h"
#include "transport/shm/shm_segment.h"
#include "transport/transport.h"

namespace ftcomm::shm {

// What a member tells the others about itself for an epoch, through the rendezvous.
struct ShmOffer {
  std::string host;  // members with equal hosts can map each other's segments
  pid_t pid = 0;
  int segmentFd = -1;
  int wakeFd = -1;

  std::string encode() const;  // "shm1 <host> <pid> <segment fd> <wake fd>"
  // Empty for "none" (the member does not offer shared memory).
  static Result<std::optional<ShmOffer>> decode(const std::string& text);
};

// This host as ftcomm sees it: the boot id and the PID, IPC and network namespaces.
std::string localHostKey();

// Buffers that peers read straight out of this process (readMember: large sends, the direct
// algorithms) are lent: the lender keeps them valid until the readers say they are done. When an
// operation fails it gives its buffers back to the caller without that word, and a reader that
// was stopped (SIGSTOP, a descheduled VM) could still copy whatever the caller then writes into
// them, and call it the result. So a lender counts, per loan channel (its receive channel of the
// communicator), how often it took buffers back (reclaimLoans), and gives the count (the mark)
// beside every address it lends; a reader compares the lender's count with the mark after its
// copy: if it changed, the copy may hold anything, and the read fails (Revoked).
struct Loan {
  std::uint16_t channel = 0;  // the lender's
  std::uint32_t mark = 0;
};

struct ShmGeometry {
  std::size_t ringBytes = 256 * 1024;
  std::size_t eagerBytes = 64 * 1024;
};

class ShmDomain {
 public:
  // A domain for member `rank` of `size`, with its own segment; `wakeFd` is the eventfd its
  // owner sleeps on.
  static Result<std::shared_ptr<ShmDomain>> create(int rank, int size, std::uint64_t epoch,
                                                   int wakeFd, ShmGeometry geometry = {});
  ~ShmDomain();
  ShmDomain(const ShmDomain&) = delete;
  ShmDomain& operator=(const ShmDomain&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  ShmOffer offer() const;
  // Maps the segments of the members on this host (offers by rank; empty: no shared memory).
  // With `requireAll`, a member elsewhere is an error.
  Status connect(const std::vector<std::optional<ShmOffer>>& offers, bool requireAll);
  // Every member has mapped this process's segment: its descriptor is closed.
  void sealed() { own_.closeFd(); }
  bool local(int member) const { return peers_[static_cast<std::size_t>(member)].local; }
  pid_t pid(int member) const { return peers_[static_cast<std::size_t>(member)].pid; }

  // Transport operations by member; `owner` groups requests for cancelAll/settled.
  // `channel`: the receiver's; `loanChannel`: the sender's (a large send is lent: Loan).
  transport::RequestPtr send(const void* owner, int peer, std::uint16_t channel,
                             std::uint16_t loanChannel, transport::MessageTag tag, const void* data,
                             std::size_t bytes);
  transport::RequestPtr recv(const void* owner, int peer, std::uint16_t channel,
                             transport::MessageTag tag, void* data, std::size_t capacity);
  // Copies `bytes` at `address` in member `peer`'s process into `into`, lent under `loan`
  // (Revoked if the lender took it back meanwhile): from this process's mapping where the
  // address is in memory the peer got from allocMem (mappable_memory.h), else with
  // process_vm_readv.
  Status readPeer(int peer, void* into, std::uint64_t address, std::size_t bytes, Loan loan);
  // The same for a local `member`, from any thread without the mutex: it looks only at the
  // member's pid and segment (fixed once connected) and leaves a failure to the pidfd watch
  // (PeerFailed when the process is gone). `copy` copies out of a mapping: a part of a larger
  // move (transport::copyPartOfLargeMove) where the caller reads this beside others.
  using Copy = void (*)(void*, const void*, std::size_t);
  Status readMember(int member, void* into, std::uint64_t address, std::size_t bytes, Loan loan,
                    Copy copy = &transport::copyBytes) const;
  // `bytes` at `address` of local `member`'s memory, mapped here (Transport::viewPeer); null
  // data unless the member got it from allocMem. Any thread, like readMember; a read through it
  // is checked with checkLoan afterwards.
  transport::PeerView viewMember(int member, std::uint64_t address, std::size_t bytes) const;
  // After reading `member`'s buffer: Ok, or Revoked if the member took it back meanwhile.
  Status checkLoan(int member, Loan loan) const;
  // The mark of what this process lends on `channel` now (Loan); and taking back everything it
  // lent there: reads of it that have not finished fail. Any thread, without the mutex.
  std::uint32_t loanMark(std::uint16_t channel) const;
  void reclaimLoans(std::uint16_t channel);
  // False if `request` is not one of this domain's.
  bool cancel(const transport::RequestPtr& request);
  void cancelAll(const void* owner, const Status& why);
  // cancelAll, and `owner` is gone: what it left (withdrawn sends) belongs to nobody.
  void detach(const void* owner);
  bool settled(const void* owner) const;
  Status peerStatus(int peer) const { return peers_[static_cast<std::size_t>(peer)].failure; }

  // Inline areas (inline_area.h). A free area of this process's segment for a new communicator
  // of the epoch, or -1 when all are taken; areas are not reused within an epoch.
  int allocateArea();
  // Area `index` of `member`'s segment; null for a member elsewhere. Fixed once connected.
  InlineArea* area(int member, int index) const;
  // Wakes `member`'s progress thread if it sleeps and none of its threads polls (after a post
  // into an inline area, which no ring message announces). Any thread, without the mutex.
  // Unfenced (RingWriter::ownerSleeping), a member that goes to sleep at that moment may be
  // missed: only for posts whose readers sleep briefly.
  void wakeMember(int member, bool fenced = true);
  // `keepArrived`: the peer's eager messages that came before their receive stay matchable
  // (the peer exited; what it sent before is complete).
  void failPeer(int peer, const Status& why, bool keepArrived = false);

  // Moves every ring once; true when anything happened.
  bool progress();
  // Before sleeping: marks this process as sleeping. Returns how long it may sleep in ms: 0 when
  // something arrived meanwhile, 1 while sends wait for room, -1 for as long as it likes.
  int arm();
  // A thread of this process starts (+1) or stops (-1) polling: while one does, writers do not
  // wake the progress thread. Stopping returns true if something arrived that it did not see.
  bool spin(int delta);
  // The pidfds of the live local members, to sleep on; and what poll() said of them.
  void pollFds(std::vector<pollfd>& fds) const;
  void polled(const pollfd& fd);

 private:
  struct Op;
  struct Unexpected {
    Record record;
    std::vector<std::byte> payload;
  };
  struct Peer {
    bool local = false;
    pid_t pid = 0;
    int pidfd = -1;
    int wakeFd = -1;
    Segment segment;                     // the peer's, where our ring to it lives
    std::unique_ptr<PeerMemory> memory;  // its allocMem regions; null: cross-memory attach only
    RingWriter out;
    RingReader in;  // its ring in our segment
    Status failure;
    std::deque<Op*> outbox;  // sends, kFin and kCancel not yet written, in order
    std::deque<Op*> posted;  // receives waiting for a message, in order
    std::deque<Unexpected> unexpected;
    std::unordered_map<std::uint64_t, Op*> awaitingFin;
  };

  ShmDomain(int rank, int size, std::uint64_t epoch, int wakeFd, ShmGeometry geometry);
  Op* newOp(const void* owner, int peer, bool receive);
  transport::RequestPtr refused(Status why) const;
  Status checkPeer(int peer, transport::MessageTag tag) const;
  bool flushOutbox(Peer& peer);
  bool drainInbox(int sender);
  // A message from `sender` for receive `op` (payload: an eager message's data).
  void deliver(int sender, Op* op, const Record& record, const std::byte* payload);
  void answer(int peer, RecordKind kind, std::uint64_t sendId, std::uint32_t status);
  void finished(int peer, std::uint64_t sendId);
  void complete(Op* op, Status status, std::size_t bytes);
  void withdraw(Op* op, const Status& why);
  void destroy(Op* op);
  void checkPidfds();
  void wakeOwner(Peer& peer, bool fenced = true);

  int rank_;
  std::uint64_t epoch_;
  int ownWakeFd_;
  ShmGeometry geometry_;
  Segment own_;
  std::vector<Peer> peers_;
  std::unordered_map<const transport::TransportRequest*, Op*> ops_;
  std::uint64_t nextSendId_ = 1;
  transport::Clock::time_point nextPidCheck_{};
  std::uint32_t rounds_ = 0;  // progress() calls
  int nextArea_ = 0;
};

}  // namespace ftcomm::shm
