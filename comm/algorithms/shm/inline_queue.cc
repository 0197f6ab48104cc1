// The broadcast queue (shm/inline_area.h, InlineArea::queue): a broadcast of at most kHeadBytes
// (InlineCollective::queued) whose root copies its data into the slot of the collective's
// sequence number in its own area and returns, as an MPI root may once its buffer can be reused;
// every other member reads it there when it gets to that collective. A loop of small broadcasts
// then costs the root one line written per call and a reader one line read, instead of every
// member waiting for every other's post. The root runs up to kQueueSlots collectives ahead of a
// member that has yet to read: it posts into a slot again only once every peer has read the
// slot's last post (queueRead), which it looks up for all slots at once, when the slot it needs
// is not known to be free (queueConfirmed). A member reads in sequence order too, so that its
// read marks only grow.
//
// A root's failure surfaces at the readers (a dead peer fails the wait, as in any collective), a
// reader's at the root's next use of the communicator. Mismatches are found where a member waits:
// - a reader whose root posted another signature in that slot, or posted or announced another
//   collective of this sequence number, or waits for a broadcast of it itself;
// - a member waiting for a peer's ordinary post where that peer queued a broadcast of this
//   sequence number or waits for one (checkQueued);
// - a root that sees a peer that has not read one of its posts post the same collective as a
//   root too (confirmReads): two roots return at once, and this is found when either needs
//   that slot again, at most kQueueSlots collectives later.
#include <cstring>
#include <string>

#include "algorithms/shm/inline_collective.h"
#include "algorithms/shm/signature_words.h"
#include "core/cpu_relax.h"

namespace ftcomm::detail {

namespace {

int queueSlot(std::uint64_t seq) {
  return static_cast<int>(seq % shm::kQueueSlots);
}

// How often the fast path looks again for a free slot or a root's post before it leaves the
// collective to the general path: about as long as the general path's quick polls (the peer
// that calls within a few hundred nanoseconds), without its clock and locks.
constexpr int kFastPolls = 64;

Status mismatch(const std::string& what) {
  return Status(StatusCode::kMismatch, what);
}

// Marks the slots of `rank`'s queue whose posts every peer has read, from the slot of `seq` on;
// Mismatch where a peer posted one of the same collectives as a root too.
Status confirmReads(const InlineGroup& group, int rank, std::uint64_t seq) {
  shm::InlineArea& mine = *group.areas[static_cast<std::size_t>(rank)];
  const int n = static_cast<int>(group.areas.size());
  // From the oldest post on (the slot this member needs next), up to the first one a peer has
  // yet to read: the peers read in order, so the rest wait for that one anyway.
  const int first = queueSlot(seq);
  for (int k = 0; k < shm::kQueueSlots; ++k) {
    const int j = (first + k) % shm::kQueueSlots;
    const std::uint64_t posted = mine.queuePosted[j].load(std::memory_order_relaxed);
    if (mine.queueConfirmed[j].load(std::memory_order_relaxed) == posted) continue;
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      const shm::InlineArea& peer = *group.areas[static_cast<std::size_t>(p)];
      if (peer.queueRead[j].load(std::memory_order_acquire) >= posted) continue;
      if (peer.queue[j].seq.load(std::memory_order_acquire) == posted) {
        return mismatch("rank " + std::to_string(p) + " broadcast " +
                        describeWords(peer.queue[j].signature) + " (#" + std::to_string(posted) +
                        ") as its root, where rank " + std::to_string(rank) + " did as well");
      }
      return Status::Ok();
    }
    mine.queueConfirmed[j].store(posted, std::memory_order_relaxed);
  }
  return Status::Ok();
}

// Whether the slot of `seq` in `mine` is free: every peer read its last post.
bool slotFree(const InlineGroup& group, int rank, std::uint64_t seq, Status* why) {
  const shm::InlineArea& mine = *group.areas[static_cast<std::size_t>(rank)];
  const int j = queueSlot(seq);
  const auto confirmed = [&] {
    return mine.queueConfirmed[j].load(std::memory_order_relaxed) ==
           mine.queuePosted[j].load(std::memory_order_relaxed);
  };
  if (confirmed()) return true;
  *why = confirmReads(group, rank, seq);
  return why->ok() && confirmed();
}

// Writes the post of `seq` into `rank`'s queue and wakes the peers (the slot is free and every
// earlier post of this member is out).
void writePost(const InlineGroup& group, int rank, std::uint64_t seq, std::uint64_t ticket,
               const std::uint64_t (&signature)[3], const void* data, std::size_t bytes) {
  shm::InlineArea& mine = *group.areas[static_cast<std::size_t>(rank)];
  const int j = queueSlot(seq);
  shm::QueueSlot& slot = mine.queue[j];
  std::memcpy(slot.signature, signature, sizeof signature);
  if (bytes > 0) std::memcpy(slot.head, data, bytes);
  slot.seq.store(seq, std::memory_order_release);
  mine.queuePosted[j].store(seq, std::memory_order_relaxed);
  mine.queuePostedTickets.store(ticket, std::memory_order_release);
  // Unfenced: a fence here waits for the post to reach the readers' caches, which costs more
  // than the rest of the call; a reader that sleeps looks again within kQueueLook anyway.
  for (int p = 0; p < static_cast<int>(group.areas.size()); ++p) {
    if (p != rank) group.domain->wakeMember(group.members[static_cast<std::size_t>(p)], false);
  }
}

// The fast path's look for a free slot, out of its line: a slot that needs confirming is the
// uncommon case, and its Status would cost the common one stores (fast_path.h).
[[gnu::noinline]] bool awaitSlot(const InlineGroup& group, int rank, std::uint64_t seq) {
  Status why;
  for (int polls = 0; !slotFree(group, rank, seq, &why); ++polls) {
    if (!why.ok() || polls == kFastPolls) return false;  // a mismatch is the general path's
    cpuRelax();
  }
  return true;
}

}  // namespace

bool tryPostQueued(const InlineGroup& group, int rank, std::uint64_t seq,
                   const std::uint64_t (&signature)[3], const void* data, std::size_t bytes) {
  shm::InlineArea& mine = *group.areas[static_cast<std::size_t>(rank)];
  // An earlier post of this member that waits for its slot goes first (the general path).
  const std::uint64_t taken = mine.queueTickets.load(std::memory_order_relaxed);
  if (mine.queuePostedTickets.load(std::memory_order_acquire) != taken) return false;
  const int j = queueSlot(seq);
  if (mine.queueConfirmed[j].load(std::memory_order_relaxed) !=
          mine.queuePosted[j].load(std::memory_order_relaxed) &&
      !awaitSlot(group, rank, seq)) {
    return false;
  }
  mine.queueTickets.store(taken + 1, std::memory_order_relaxed);
  writePost(group, rank, seq, taken + 1, signature, data, bytes);
  return true;
}

bool tryReadQueued(const InlineGroup& group, int rank, int root, std::uint64_t seq,
                   const std::uint64_t (&signature)[3], void* data, std::size_t bytes) {
  shm::InlineArea& mine = *group.areas[static_cast<std::size_t>(rank)];
  // An earlier read of this member that waits for its root goes first (the general path).
  const std::uint64_t taken = mine.queueReadTickets.load(std::memory_order_relaxed);
  if (mine.queueReadDone.load(std::memory_order_acquire) != taken) return false;
  const int j = queueSlot(seq);
  const shm::QueueSlot& slot = group.areas[static_cast<std::size_t>(root)]->queue[j];
  for (int polls = 0; slot.seq.load(std::memory_order_acquire) != seq; ++polls) {
    if (polls == kFastPolls) return false;
    cpuRelax();
  }
  if (!sameWords(slot.signature, signature)) return false;
  if (bytes > 0) std::memcpy(data, slot.head, bytes);
  mine.queueReadTickets.store(taken + 1, std::memory_order_relaxed);
  mine.queueRead[j].store(seq, std::memory_order_release);
  mine.queueReadDone.store(taken + 1, std::memory_order_release);
  // The root may wait for this read to post into the slot again.
  group.domain->wakeMember(group.members[static_cast<std::size_t>(root)], false);
  return true;
}

Result<bool> InlineCollective::pollQueued() {
  return rank_ == args_.root ? postQueued() : readQueued();
}

Result<bool> InlineCollective::postQueued() {
  shm::InlineArea& mine = *group_.areas[static_cast<std::size_t>(rank_)];
  // In sequence order: an earlier post of this member waits for its slot.
  if (mine.queuePostedTickets.load(std::memory_order_acquire) != ticket_ - 1) return false;
  Status why;
  if (!slotFree(group_, rank_, seq_, &why)) {
    if (!why.ok()) return why;
    return false;
  }
  writePost(group_, rank_, seq_, ticket_, signature_, args_.recv, plan_.block);
  return true;
}

Result<bool> InlineCollective::readQueued() {
  const int root = args_.root;
  const shm::InlineArea& from = *group_.areas[static_cast<std::size_t>(root)];
  shm::InlineArea& mine = *group_.areas[static_cast<std::size_t>(rank_)];
  // In sequence order: an earlier read of this member waits for its root.
  if (mine.queueReadDone.load(std::memory_order_acquire) != ticket_ - 1) return false;
  const int j = queueSlot(seq_);
  const shm::QueueSlot& slot = from.queue[j];
  const std::uint64_t posted = slot.seq.load(std::memory_order_acquire);
  const auto where = [&] { return " where " + describeCall(rank_, signature_, seq_); };
  if (posted == seq_) {
    if (!sameWords(slot.signature, signature_)) {
      return mismatch(describeCall(root, slot.signature, seq_) + where());
    }
    if (plan_.block > 0) std::memcpy(args_.recv, slot.head, plan_.block);
    mine.queueRead[j].store(seq_, std::memory_order_release);
    mine.queueReadDone.store(ticket_, std::memory_order_release);
    // The root may wait for this read to post into the slot again.
    group_.domain->wakeMember(group_.members[static_cast<std::size_t>(root)], false);
    return true;
  }
  // The root posts into the slot again only once this member has read it: a later collective
  // there means the root never posted this one.
  if (posted > seq_) {
    return mismatch("rank " + std::to_string(root) + " posted no broadcast for #" +
                    std::to_string(seq_) + where());
  }
  if (mine.queueWaiting.load(std::memory_order_relaxed) != seq_) {
    mine.queueWaiting.store(seq_, std::memory_order_release);
  }
  FTCOMM_RETURN_IF_ERROR(checkAnnounced(root));
  if (from.queueWaiting.load(std::memory_order_acquire) == seq_) {
    return mismatch("rank " + std::to_string(root) + " waits for a broadcast's root itself (#" +
                    std::to_string(seq_) + ")" + where());
  }
  // An ordinary post of this or a later collective, while none of the root's queued broadcasts
  // waits for its slot: the root ran this one some other way.
  for (const shm::InlineSlot& other : from.slots) {
    if (other.index.load(std::memory_order_acquire) == 0 || other.seq < seq_) continue;
    const std::uint64_t otherSeq = other.seq;
    std::uint64_t words[3];
    std::memcpy(words, other.signature, sizeof words);
    if (from.queuePostedTickets.load(std::memory_order_acquire) !=
            from.queueTickets.load(std::memory_order_acquire) ||
        slot.seq.load(std::memory_order_acquire) == seq_) {
      return false;
    }
    if (otherSeq == seq_) {
      return mismatch(describeCall(root, words, seq_) + where());
    }
    return mismatch("rank " + std::to_string(root) + " went on to #" + std::to_string(otherSeq) +
                    " without posting a broadcast for #" + std::to_string(seq_) + where());
  }
  return false;
}

Status InlineCollective::checkQueued(int peer) const {
  const shm::InlineArea& area = *group_.areas[static_cast<std::size_t>(peer)];
  const shm::QueueSlot& slot = area.queue[queueSlot(seq_)];
  const auto where = [&] { return " where " + describeCall(rank_, signature_, seq_); };
  if (slot.seq.load(std::memory_order_acquire) == seq_) {
    return mismatch(describeCall(peer, slot.signature, seq_) + " as its root" + where());
  }
  if (area.queueWaiting.load(std::memory_order_acquire) == seq_) {
    return mismatch("rank " + std::to_string(peer) + " waits for a broadcast (#" +
                    std::to_string(seq_) + ")" + where());
  }
  return Status::Ok();
}

Status InlineCollective::checkQueuedHere(int peer, const shm::InlineSlot& slot) const {
  const std::uint64_t seq = slot.seq;
  const shm::QueueSlot& mine = group_.areas[static_cast<std::size_t>(rank_)]->queue[queueSlot(seq)];
  if (seq == 0 || mine.seq.load(std::memory_order_relaxed) != seq) return Status::Ok();
  return mismatch(describeCall(peer, slot.signature, seq) + " where rank " + std::to_string(rank_) +
                  " broadcast " + describeWords(mine.signature) + " (#" + std::to_string(seq) +
                  ") as its root");
}

}  // namespace ftcomm::detail
