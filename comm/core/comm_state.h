// One communicator's state, shared by its Communicator object and its operations in flight
// (which keep it, and so its transport, alive until they end).
//
// Thread-safety: the fields below `mutable under the engine's mutex` are changed only with the
// engine's mutex held; the rest is fixed at creation.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/shm/inline_collective.h"
#include "core/engine.h"
#include "core/fast_path.h"
#include "ftcomm/status.h"
#include "rendezvous/client.h"
#include "transport/transport.h"

namespace ftcomm::detail {

// What the rendezvous says of the job beyond failures, shared by every epoch of a world and its
// children; written by the watch thread.
struct JobWatch {
  std::atomic<std::uint32_t> replacementsWaiting{0};
  // The newest epoch in which a member failed or that was revoked: an epoch being set up checks
  // it once attached, so that an event that came before it was attached is not missed.
  std::atomic<std::uint64_t> failedEpoch{0};
};

class CommState {
 public:
  ~CommState();  // closes the transport if nobody did (under the engine's mutex)

  std::shared_ptr<Engine> engine;
  // The world's rendezvous membership, shared by its split children.
  std::shared_ptr<rendezvous::RendezvousClient> rendezvous;
  std::uint64_t id = 0;
  std::string name;
  std::uint64_t parentId = 0;
  std::uint64_t epoch = 0;
  int rank = 0;
  int size = 1;
  std::shared_ptr<JobWatch> watch;
  int launchRank = 0;                    // this process's rank at launch (fault injection)
  std::vector<int> worldRanks;           // by rank
  std::vector<std::uint64_t> memberIds;  // the rendezvous's member ids by rank (world only)
  bool admittedAsReplacement = false;    // this process joined a running job (world only)
  std::vector<int> parentRanks;          // by rank
  std::vector<std::string> addresses;    // UCX worker addresses by rank
  std::uint16_t channel = 0;             // this process's receive channel
  std::vector<std::uint16_t> channels;   // every member's, by rank
  std::chrono::milliseconds opTimeout{300000};
  std::unique_ptr<transport::Transport> transport;
  // The epoch's shared-memory domain (null under FTCOMM_TRANSPORT=ucx, or with no member on this
  // host), shared by the world and its split children; each rank's member of it.
  std::shared_ptr<shm::ShmDomain> shm;
  std::vector<int> shmMembers;
  // The transport reads every peer's memory: the direct algorithms apply. Set at creation.
  bool peersReadable = false;
  // Each rank's host as an index (hosts as their shared-memory offers name them; a member that
  // offers none is a host of its own), and whether they are several with more than one member on
  // some (the node-aware algorithms apply). Set at creation of an epoch's world; a split child
  // keeps its members' hosts.
  std::vector<int> hosts;
  bool spansHosts = false;
  // Some member is on another host: messages to it cross the network (Work::wait then yields
  // after every empty poll of a small operation, WorkState::expectNetwork).
  bool severalHosts = false;
  // The tuning profile every member agreed on (rank 0's), resolved for this communicator's size.
  // Set at creation.
  std::shared_ptr<const tuning::PlanTable> tuning;
  // Every member is on this host with an inline area for this communicator: small collectives
  // run through shared memory (inline_collective.h). Null otherwise. Set at creation.
  std::shared_ptr<const InlineGroup> inlineGroup;
  // The collectives whose algorithm FTCOMM_ALGO_* named at creation (never inline).
  std::uint32_t forcedAlgorithms = 0;
  // Set once `broken` is: a thread spinning without the mutex looks at it.
  std::atomic<bool> unusable{false};

  // The fast path's owner and what it knows (fast_path.h).
  FastPath fast;
  // The last collective's sequence number: written under the engine's mutex, or by the fast
  // path's owner without it (which excludes the first); read by the engine's thread.
  std::atomic<std::uint64_t> collectiveSeq{0};

  // Mutable under the engine's mutex.
  std::uint64_t p2pSeq = 0;
  std::uint64_t inlineCount = 0;  // inline collectives started
  Status broken;                  // Ok while usable
  bool aborted = false;
  std::uint64_t brokenSeq = 0;  // the collective that broke it (0: none in particular)
  struct Control {
    std::array<char, 1024> buffer{};
    transport::RequestPtr request;
    // The peer's leaving notice came (notice.h): its connections closing later is no failure.
    bool left = false;
  };
  std::vector<Control> controls;  // by peer rank
  // A member left after its collective `lastCompletable` (the earliest of several leavers'):
  // no later collective can complete. `leaver` is its rank (-1 while none left). The fast path
  // reads it without the mutex.
  std::atomic<std::uint64_t> lastCompletable{~std::uint64_t{0}};
  int leaver = -1;
  bool saidLeaving = false;  // this member sent its leaving notice
  std::string notice;        // the failure notice sent to the others, while it is sent

  // Whether `peer`'s leaving notice came.
  bool left(int peer) const {
    return !controls.empty() && controls[static_cast<std::size_t>(peer)].left;
  }
  // "allReduce #7 of world (epoch 1)"
  std::string describe(const char* op, std::uint64_t seq) const;
  // Tells the flight recorder about this communicator.
  void registerWithRecorder() const;
};

// The tag slot of a collective and of a point-to-point tag; the control slot is MessageTag's
// kMaxSlot. Collectives use the low 2^27 slots (their sequence number wraps there), send/recv
// the high ones.
inline std::uint32_t collectiveSlot(std::uint64_t seq) {
  return static_cast<std::uint32_t>(seq & ((1u << 27) - 1));
}
inline std::uint32_t pointToPointSlot(int tag) {
  return (1u << 27) | static_cast<std::uint32_t>(tag);
}
constexpr std::uint32_t kControlSlot = transport::MessageTag::kMaxSlot;
// The control messages' signature: failure and leaving notices (notice.h).
inline const transport::OpSignature kControlSignature{transport::OpKind::kControl};

}  // namespace ftcomm::detail
