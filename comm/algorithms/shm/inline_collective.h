// Small collectives through the inline areas of shared memory (transport/shm/inline_area.h),
// for communicators whose members are all on this host: each member copies its input into its
// slot, waits until every member has posted, and computes its result from the peers' slots and
// its own input (a reduction folds them in rank order, so every member gets the same bits). No
// message, no request, no allocation: one copy in, one pass over the slots out.
//
// An all-to-all (at 2 ranks an allgather too) that streams (more than one chunk), or at 2 ranks
// whose posts are large (lendable), lends where it can instead (inline_lend.cc; every collective
// under the profile's `lend all`): a member whose input is allocMem memory, which the peers map,
// posts its send buffer's address and no data, the peers read its chunks straight from there (one
// copy instead of two), and it returns once they have read the last one. Each member decides alone
// (but where members choose per call whether to lend: agrees()); a reader takes each peer's
// chunk from wherever that peer's post says it is. Where every
// member lends, they all read everything in the first round (lendsWhole).
//
// Every member waits for every post, even a broadcast's root, which reads nothing: the posts
// carry the signatures, and two members that both think they are the root (or neither) must
// fail with Mismatch rather than return without having exchanged anything. The exception is a
// broadcast of at most kHeadBytes under the profile's broadcast_queue (inline_queue.cc): its root
// returns at its post, as an MPI root may, and the checks move to where members wait.
//
// Run first by the calling thread (core/submit_inline.cc) and, if the peers are not there yet,
// handed to the engine as an InlineTask. Failures: a peer that posted another collective, or
// announced that it runs this one with messages, is a Mismatch; the engine sees dead peers
// (InlineTask asks the transport) and deadlines as for any other operation.
//
// Thread-safety: one thread at a time (the caller, then the engine under its mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/collective_task.h"
#include "algorithms/direct/staging.h"
#include "algorithms/registry.h"
#include "algorithms/shm/post_choice.h"
#include "recorder/op_progress.h"
#include "transport/op_signature.h"
#include "transport/shm/shm_domain.h"
#include "tuning/plan_table.h"

namespace ftcomm::detail {

// A communicator's inline areas: fixed at creation.
struct InlineGroup {
  std::shared_ptr<const tuning::PlanTable> tuning;  // the communicator's agreed profile
  std::shared_ptr<shm::ShmDomain> domain;           // keeps the mappings alive
  std::vector<shm::InlineArea*> areas;              // by rank
  std::vector<int> members;                         // the domain member of each rank
  std::vector<std::uint16_t> channels;              // each rank's receive channel: its loan channel
};

// The group of a communicator with these domain members and, by rank, the inline area each
// member gave it and its receive channel; null where inline collectives cannot run: a member
// elsewhere, an area missing (-1), or the profile's `inline off`.
std::shared_ptr<const InlineGroup> makeInlineGroup(
    const std::shared_ptr<const tuning::PlanTable>& tuning,
    const std::shared_ptr<shm::ShmDomain>& domain, const std::vector<int>& members,
    const std::vector<int>& areas, const std::vector<std::uint16_t>& channels);

// How a collective runs inline: `chunks` rounds, each over `step` bytes of every block (the
// input, or each member's block of it for reduce-scatter and all-to-all). None (0 chunks) when it
// does not run inline. The same on every member that called the same collective.
//
// `direct`: too large to copy through the slots, a broadcast, allgather or all-to-all runs here,
// the way the direct algorithms (algorithms/direct/) do, but with the slots instead of messages for
// their notices: a member posts its send buffer's address, reads what it needs straight out of the
// peers' buffers (cross-memory attach), publishes that it is done (`consumed`), and returns
// once every member that reads its buffers has done so. One chunk; cheaper by the two message
// rounds (about 3 us here), which mattered from 32 KiB to 1 MiB.
//
// `lends`: streamed where the direct form would run otherwise (a profile band with lend=mapped
// or lend=choose), so a member whose input the peers map lends it (mayLend), and where all that
// post data do, they read it whole, as the direct form would.
//
// `chooses`: one that `lends`, in which a member whose input the peers cannot map (a broadcast's
// root, an allgather's or all-to-all's members) may lend it too (read with cross-memory attach,
// whole where every member lends, as the direct form does) or copy it through the slots, call by
// call, whichever of those it measured fastest (PostChoice). Where the direct form's read and
// streaming each win in some runs (a band with lend=choose).
//
// `choosesCopy`: a member that copies its input into its slots chooses, call by call, between
// plain stores and stores around the cache, whichever it measured faster (PostChoice; a band with
// copy=choose). Every member chooses for itself: a post reads the same either way.
struct InlineChunking {
  std::uint64_t chunks = 0;
  std::size_t block = 0;  // bytes of the input, or of one block
  std::size_t step = 0;   // bytes of a block per chunk
  bool direct = false;
  bool lends = false;
  bool chooses = false;
  bool choosesCopy = false;
};
// `peersReadable`: this process may read the peers' memory (the direct form needs it).
InlineChunking inlineChunking(const tuning::PlanTable& tuning, algorithms::Collective collective,
                              std::size_t count, DataType dtype, int ranks, bool peersReadable);

// Writes this member's announcement for collective `seq`, which it runs with messages.
void announceCollective(const InlineGroup& group, int rank, std::uint64_t seq,
                        const transport::OpSignature& signature);

// The broadcast queue's fast path (core/fast_path.h), without an InlineCollective: what its
// post or read does when it can be done at once. A root posts `data` (`bytes`, at most
// shm::kHeadBytes) as collective `seq` into its queue when no earlier post of its waits and the
// slot is free; a reader copies the root's post of `seq` into `data` when it is there with this
// signature. False where not, having posted or read nothing: the general path then runs it.
bool tryPostQueued(const InlineGroup& group, int rank, std::uint64_t seq,
                   const std::uint64_t (&signature)[3], const void* data, std::size_t bytes);
bool tryReadQueued(const InlineGroup& group, int rank, int root, std::uint64_t seq,
                   const std::uint64_t (&signature)[3], void* data, std::size_t bytes);

class InlineCollective {
 public:
  // Its chunks are the communicator's inline rounds firstIndex, firstIndex + 1, ... (from 1);
  // `seq`: its sequence number. `progress`: its flight-recorder entry (null when recording is
  // off), which outlives it (held by the caller, then by the engine's operation): where this
  // member lends, the entry's algorithm says so, `inline (lent)`, or `inline (lent whole)`
  // where every member does (decided after the entry was made).
  InlineCollective(const InlineGroup& group, int rank, algorithms::Collective collective,
                   const algorithms::CollectiveArgs& args, const InlineChunking& plan,
                   std::uint64_t firstIndex, std::uint64_t seq,
                   const transport::OpSignature& signature, recorder::OpProgress* progress);

  // Posts each chunk once allowed, then looks at the peers' slots, for at most `chunks` chunks.
  // Ok(true): done, the result is written.
  Result<bool> poll(std::uint64_t chunks = ~std::uint64_t{0});
  // Chunks done so far (a caller that sees it move keeps polling).
  std::uint64_t chunksDone() const { return chunk_; }
  // Bytes of a block per chunk (InlineChunking::step).
  std::size_t step() const { return plan_.step; }
  // A broadcast through the broadcast queue (inline_queue.cc), which takes no inline round.
  bool queued() const { return queued_; }
  // More than one chunk, or the direct form: its caller waits longer before handing it over.
  bool streams() const { return plan_.chunks > 1 || plan_.direct; }
  // One round through the slots' first lines, without a loan, a choice or the queue: what the
  // fast path (core/fast_path.h) runs for an allreduce, the same for every call of this size.
  bool plain() const {
    return inHead_ && !lendable_ && !plan_.choosesCopy && !agrees_ && !queued_ && ways_ == 0;
  }
  // The last poll stopped at its chunk limit, not to wait for a peer.
  bool stoppedAtLimit() const { return stoppedAtLimit_; }

 private:
  // The broadcast queue (inline_queue.cc): a broadcast of at most kHeadBytes whose root posts
  // into the slot of its sequence number and returns; the others read it there. Mismatch where
  // a member finds the root elsewhere: posting or waiting for another collective of that number.
  Result<bool> pollQueued();
  Result<bool> postQueued();
  Result<bool> readQueued();
  // Mismatch where `peer`, whose post for this collective this member waits for, queued a
  // broadcast of the same sequence number or waits for one.
  Status checkQueued(int peer) const;
  // Mismatch where `peer` posted into this round a collective that this member broadcast
  // through its queue as the root (the peer's post has the broadcast's sequence number).
  Status checkQueuedHere(int peer, const shm::InlineSlot& slot) const;
  bool mayPost() const;
  void post();
  // Wakes the peers that sleep, once per post (after post(), before waiting or finishing).
  void wakePeers();
  // Mismatch when `peer` posted or announced another collective for this slot.
  Status checkPosted(int peer, const shm::InlineSlot& slot) const;
  Status checkAnnounced(int peer) const;
  // The current chunk's result.
  Status finish();
  // finish() of the direct form: reads from the peers' buffers.
  Status readPeers();
  // The direct form: every member that reads this member's buffers is done with them.
  bool released() const;
  // Every peer finished reading the posts of round `index` and those before it.
  bool consumedByPeers(std::uint64_t index) const;
  std::size_t chunkBytes() const;  // of one block, in the current chunk
  const std::byte* payload(int rank) const;
  // What this member reads of `rank`'s part of the current chunk: its post, this member's own
  // input, or a lending member's send buffer (mapped, or read aside by takeLent()).
  const std::byte* source(int rank) const;
  // This member posts no data and reads its input from the send buffer (a reduce's root).
  bool keepsInput() const;
  // Under the profile's root_returns_at_post, a broadcast's root of one chunk that neither lends
  // nor goes direct: it reads nothing, so it returns once its data is posted, as an MPI root may;
  // the peers' posts of that round are checked before this member posts into the same slot again
  // (checkPostedOnlyRound).
  bool returnsAtPost() const;
  // Before each post: where this slot's last round (index - 2) was such a root's, the peers'
  // posts of that round carry the same collective (else Mismatch, naming it), and the round is
  // then marked read, so that the peers may post into the slot again. False while a peer has
  // yet to post it. The slot's rounds run in order, so none is missed.
  Result<bool> checkPostedOnlyRound();
  // This member reads its own part of each chunk from its input rather than from its post, a
  // copy of it: a load from the post waits for the post's stores, which wait for the lines the
  // peers poll, which cost small allreduces a quarter of their time and streamed ones a fifth
  // where measured (docs/tuning.md). Not where the input is overwritten before
  // it is read (in place, except where that cannot happen), nor in the direct form or a loan,
  // which read the input anyway.
  bool readsOwnInput() const;
  // A collective in which members may lend (mayLend), the same on every member: one that
  // streams (more than one chunk), or at 2 ranks one whose posts are large enough that a peer's
  // second copy out of them costs more than reading the lender's buffer after a post of its
  // address.
  bool lendable() const;
  // A lendable collective (the caller checks) whose input lies in memory
  // that the peers map (allocMem): this member posts no data, the peers read its chunks
  // straight out of its send buffer, and it returns once they are done. Not where the member
  // writes what its peers read meanwhile; an all-to-all, or an allgather at 2 ranks, unless
  // the profile's `lend` says otherwise (inline_lend.cc). kChoose: a member (a broadcast's root,
  // an allgather's or all-to-all's) whose input the peers cannot map, where the plan lets it
  // choose (InlineChunking::chooses): PostChoice decides per call.
  enum class Lending { kNo, kYes, kChoose };
  Lending mayLend() const;
  // This member copies its input into its slots, and the plan lets it choose how
  // (InlineChunking::choosesCopy).
  bool choosesCopy() const;
  // The ways (PostChoice bits) among which this member chooses how to post, given mayLend();
  // 0 where it does not choose.
  unsigned choosableWays(Lending lending) const;
  // An allgather or all-to-all whose members may choose to lend (InlineChunking::chooses): they
  // take one way, rank 0's. Chosen apart, a member that lends and one that copies each read the
  // other's part chunk by chunk instead of whole, and each measured its own way slow while the
  // other's looked fast, so that they could go on choosing apart. The same on every member.
  bool agrees() const;
  // How this member posts from here: `way` (lends_, readsOwnInput_).
  void takeWay(PostChoice::Way way);
  // Takes the way PostChoice chooses among ways_ for this call, which it then measures.
  void chooseWay();
  // A member that follows rank 0 (followsLeader_): takes the way rank 0 wrote before its first
  // post (InlineArea::chosen), or chooses alone where rank 0 posted without writing one (its
  // settings differ). False until either is there.
  Result<bool> takeLeadersWay();
  // Copies a piece of this member's input into its slot, the way chosen (way_).
  void copyIn(std::byte* into, const std::byte* from, std::size_t bytes) const;
  // In the first round of a lendable broadcast, allgather or all-to-all: every member whose
  // post carries data lends (mayLend). Then each reads its whole result straight from the
  // lenders' buffers at once, as the direct form does, and the other rounds are skipped (one
  // wait for the peers instead of one per chunk). A reader that lends must decide the same; one
  // that sees a member copy through its slot streams chunk by chunk, reading the lent parts.
  // The skipped rounds are marked read only once the round before the first is (poll()).
  bool lendsWhole() const;
  // This member's input: its block, or one block per member (Posts::kBlocks).
  std::size_t inputBytes() const;
  // Before a chunk's result: finds where each lending peer's part of it lies; after it, whether
  // every lender kept its buffer lent meanwhile (ShmDomain::Loan).
  Status takeLent();
  Status checkLent() const;
  // The current chunk's result from source(), once takeLent() found the lent parts.
  Status combine();

  const InlineGroup& group_;
  const int rank_, n_;
  const algorithms::Collective collective_;
  const algorithms::CollectiveArgs args_;
  const InlineChunking plan_;
  const std::uint64_t seq_;
  recorder::OpProgress* const progress_;
  std::uint64_t signature_[3];
  std::uint64_t chunk_ = 0;
  std::uint64_t index_;  // the current chunk's round
  int slot_;
  bool posted_ = false;
  bool finished_ = false;       // the current chunk's result is written
  algorithms::Staging staged_;  // an all-to-all in place, direct form: the blocks read
  bool woken_ = true;           // the peers were woken for the current post
  bool stoppedAtLimit_ = false;
  int next_ = 0;                    // ranks before it have posted the current chunk
  bool inHead_;                     // the posts fit in their slots' first lines (InlineSlot::head)
  bool lendable_;                   // lendable(), decided once
  bool rootReturnsAtPost_ = false;  // the profile's root_returns_at_post
  bool queued_ = false;             // a broadcast through the queue (pollQueued)
  std::uint64_t ticket_ = 0;  // a queued root's place among its posts, a reader's among its reads
  bool lends_;                // by mayLend(), or by the way taken (takeWay) before the first post
  // How this member posts (lends_ where it lends).
  PostChoice::Way way_ = PostChoice::Way::kCopy;
  unsigned ways_ = 0;           // choosableWays(): among which it chooses, none where it does not
  bool agrees_ = false;         // agrees(), decided once
  bool followsLeader_ = false;  // takes rank 0's way before its first post (agrees())
  // This member's choice came from PostChoice, which measures this call: what it took goes back.
  bool measured_ = false;
  std::chrono::steady_clock::time_point began_;
  bool whole_ = false;   // lendsWhole(), decided in the first round
  bool readsOwnInput_;   // readsOwnInput(), decided once
  bool piecesOfBlocks_;  // a post holds a piece of every block (Posts::kBlocks)
  // What this member knows of the peers that lend (takeLent): none for one that never saw a
  // lender (every collective of one chunk), which then costs no allocation.
  struct Lender {
    bool looked = false;            // its send buffer was looked for among the mappings
    transport::PeerView view;       // as mapped here; null data: read with cross-memory attach
    const std::byte* at = nullptr;  // its part of the current chunk; null: in its post
  };
  struct Lenders {
    std::vector<Lender> byRank;
    bool read = false;           // some part of the current chunk was read from a peer's buffer
    algorithms::Staging staged;  // the parts read with cross-memory attach, by rank
  };
  std::unique_ptr<Lenders> lenders_;
};

// An inline collective on the engine (the caller's spin did not finish it).
// While its chunks move (one moved within kStreamPatience), it has more work: the progress thread
// polls on instead of sleeping until a peer wakes it, which would cost a wake-up per chunk.
class InlineTask final : public algorithms::CollectiveTask {
 public:
  static constexpr auto kStreamPatience = std::chrono::microseconds(1000);
  // What the caller's polls found wrong never comes here (submit_inline.cc fails the call).
  // `eager`: a core for every process, where polling costs nobody else's turn; the task counts as
  // streaming from its hand-over and looks for the peers' posts for up to kStreamLook per
  // advance. Otherwise it streams once a chunk moved, and looks once per advance.
  InlineTask(InlineCollective run, bool eager)
      : run_(std::move(run)),
        moved_(std::chrono::steady_clock::now()),
        eager_(eager),
        streaming_(eager) {}
  // It does not look at the peers' health itself: a peer that died fails the control receive
  // that the engine keeps from it, which breaks the communicator, and so this task, before the
  // engine advances it again. A peer that left after taking part (its leaving notice came)
  // is no failure: what it wrote stays in shared memory.
  Result<bool> advance() override;
  bool hasMoreWork() const override { return run_.stoppedAtLimit() || streaming_; }
  // A queued broadcast's posts and reads wake their peers without a fence, which may miss a
  // thread that goes to sleep at that moment (inline_queue.cc): it looks again this often.
  std::chrono::microseconds sleepLimit() const override {
    return run_.queued() ? kQueueLook : std::chrono::microseconds::zero();
  }
  static constexpr auto kQueueLook = std::chrono::microseconds(1000);
  // How long one advance of a streaming collective looks for the peers' next posts while it
  // holds the engine's mutex.
  static constexpr auto kStreamLook = std::chrono::microseconds(20);

 private:
  InlineCollective run_;
  // When a chunk was last done, or the task was made (the peers' first posts are due as soon).
  std::chrono::steady_clock::time_point moved_;
  const bool eager_;
  bool streaming_;  // a chunk moved (or, eager, the task was made) within kStreamPatience
};

}  // namespace ftcomm::detail
