#include "algorithms/shm/inline_collective.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "algorithms/shm/inline_posts.h"
#include "algorithms/shm/post_choice.h"
#include "algorithms/shm/signature_words.h"
#include "transport/copy_bytes.h"

namespace ftcomm::detail {

using algorithms::Collective;

void announceCollective(const InlineGroup& group, int rank, std::uint64_t seq,
                        const transport::OpSignature& signature) {
  shm::InlineArea& area = *group.areas[static_cast<std::size_t>(rank)];
  // A sequence lock: 0 while the signature is rewritten, then the sequence number.
  std::uint64_t words[3];
  packSignature(signature, words);
  area.announced.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 0; i < 3; ++i) area.announcedSignature[i].store(words[i], std::memory_order_relaxed);
  area.announced.store(seq, std::memory_order_release);
}

InlineCollective::InlineCollective(const InlineGroup& group, int rank, Collective collective,
                                   const algorithms::CollectiveArgs& args,
                                   const InlineChunking& plan, std::uint64_t firstIndex,
                                   std::uint64_t seq, const transport::OpSignature& signature,
                                   recorder::OpProgress* progress)
    : group_(group),
      rank_(rank),
      n_(static_cast<int>(group.areas.size())),
      collective_(collective),
      args_(args),
      plan_(plan),
      seq_(seq),
      progress_(progress),
      index_(firstIndex),
      slot_(static_cast<int>(firstIndex % 2)) {
  packSignature(signature, signature_);
  piecesOfBlocks_ = *postsOf(collective) == Posts::kBlocks;
  inHead_ = !plan.direct && plan.chunks == 1 && inputBytes() <= shm::kHeadBytes;
  lendable_ = lendable();
  rootReturnsAtPost_ = group.tuning->settings().rootReturnsAtPost;
  queued_ = collective == Collective::kBroadcast && n_ > 1 && inHead_ && !lendable_ &&
            group.tuning->settings().broadcastQueue;
  if (queued_) {
    // Tickets, a root's for its posts and a reader's for its reads, follow the sequence numbers:
    // collectives are made under the engine's mutex, so a load and a store take the next one (a
    // locked add would wait for the last post to reach its readers' caches).
    shm::InlineArea& mine = *group_.areas[static_cast<std::size_t>(rank_)];
    std::atomic<std::uint64_t>& tickets =
        rank_ == args.root ? mine.queueTickets : mine.queueReadTickets;
    ticket_ = tickets.load(std::memory_order_relaxed) + 1;
    tickets.store(ticket_, std::memory_order_relaxed);
    if (progress_ != nullptr) progress_->setAlgorithm("inline (queued)");
    takeWay(way_);
    return;
  }
  if (!lendable_ && !plan.choosesCopy) {
    // Neither lends nor chooses how to copy (every small collective): nothing more to decide
    // (inline_plan.cc, kSmallTotal, says what asking anyway cost).
    takeWay(way_);
    return;
  }
  const Lending lending = lendable_ ? mayLend() : Lending::kNo;
  lends_ = lending == Lending::kYes;
  if (lends_) way_ = PostChoice::Way::kLend;
  agrees_ = agrees();
  ways_ = choosableWays(lending);
  // A member other than rank 0 that may lend or copy takes rank 0's way (takeLeadersWay).
  followsLeader_ = agrees_ && rank_ != 0 && lending == Lending::kChoose;
  if (ways_ != 0 && !followsLeader_) {
    chooseWay();
  } else {
    takeWay(way_);
  }
}

void InlineCollective::copyIn(std::byte* into, const std::byte* from, std::size_t bytes) const {
  if (way_ == PostChoice::Way::kCopyAroundCache) {
    transport::copyAroundCache(into, from, bytes);
  } else {
    transport::copyBytes(into, from, bytes);
  }
}

bool InlineCollective::readsOwnInput() const {
  if (plan_.direct || lends_) return false;
  const Posts posts = *postsOf(collective_);
  if (posts != Posts::kInput && posts != Posts::kBlocks) return false;
  const bool gathers =
      collective_ == Collective::kAllGather || collective_ == Collective::kAllToAll;
  const auto* in = static_cast<const std::byte*>(args_.send) +
                   (piecesOfBlocks_ ? static_cast<std::size_t>(rank_) * plan_.block : 0);
  const auto* out = static_cast<const std::byte*>(args_.recv);
  const std::size_t outBytes = gathers ? static_cast<std::size_t>(n_) * plan_.block : plan_.block;
  if (in + plan_.block <= out || out + outBytes <= in) return true;  // apart
  // In place, where nothing is written over this member's part before it is read: a gather's own
  // block is where its result goes, and a fold reads parts 0 and 1 before it first writes.
  if (gathers) return in == out + static_cast<std::size_t>(rank_) * plan_.block;
  return collective_ != Collective::kReduceScatter && in == out && rank_ <= 1;
}

std::size_t InlineCollective::inputBytes() const {
  return piecesOfBlocks_ ? static_cast<std::size_t>(n_) * plan_.block : plan_.block;
}

std::size_t InlineCollective::chunkBytes() const {
  const std::size_t offset = chunk_ * plan_.step;
  return offset >= plan_.block ? 0 : std::min(plan_.step, plan_.block - offset);
}

bool InlineCollective::keepsInput() const {
  // Not in place: folding into the result would overwrite the input before its turn.
  return collective_ == Collective::kReduce && rank_ == args_.root && args_.send != args_.recv;
}

const std::byte* InlineCollective::payload(int rank) const {
  const shm::InlineSlot& slot = group_.areas[static_cast<std::size_t>(rank)]->slots[slot_];
  return inHead_ ? slot.head : slot.payload;
}

const std::byte* InlineCollective::source(int rank) const {
  const auto at = static_cast<std::size_t>(rank);
  if (lenders_ && lenders_->byRank[at].at != nullptr) return lenders_->byRank[at].at;
  // Of a chunk, this member reads the piece for it (reduce-scatter, all-to-all) or all of it.
  const std::size_t piece = piecesOfBlocks_ ? static_cast<std::size_t>(rank_) : 0;
  if (rank == rank_ && (lends_ || keepsInput() || readsOwnInput_)) {
    return static_cast<const std::byte*>(args_.send) + piece * plan_.block + chunk_ * plan_.step;
  }
  return payload(rank) + piece * chunkBytes();
}

bool InlineCollective::returnsAtPost() const {
  return rootReturnsAtPost_ && collective_ == algorithms::Collective::kBroadcast &&
         rank_ == args_.root && n_ > 1 && plan_.chunks == 1 && !plan_.direct && !lendable_;
}

Result<bool> InlineCollective::checkPostedOnlyRound() {
  if (index_ <= 2) return true;
  shm::InlineArea& mine = *group_.areas[static_cast<std::size_t>(rank_)];
  const int previous = slot_;
  const std::uint64_t round = index_ - 2;
  if (mine.postedOnly[previous].load(std::memory_order_relaxed) != round ||
      mine.consumed[previous].load(std::memory_order_relaxed) >= round) {
    return true;
  }
  const shm::InlineSlot& own = mine.slots[previous];
  for (int p = 0; p < n_; ++p) {
    if (p == rank_) continue;
    const shm::InlineSlot& slot = group_.areas[static_cast<std::size_t>(p)]->slots[previous];
    if (slot.index.load(std::memory_order_acquire) != round) {
      wakePeers();
      return false;
    }
    if (slot.seq != own.seq || !sameWords(slot.signature, own.signature)) {
      return Status(StatusCode::kMismatch, describeCall(p, slot.signature, slot.seq) + " where " +
                                               describeCall(rank_, own.signature, own.seq));
    }
  }
  mine.consumed[previous].store(round, std::memory_order_release);
  woken_ = false;
  return true;
}

bool InlineCollective::mayPost() const {
  if (index_ <= 2) return true;
  // Every member must have read this member's previous post in this slot (index - 2): the
  // peers, and this member itself (in place, its own part may come from its post). A peer's last
  // post, in the other slot, usually says so already.
  const std::uint64_t needed = index_ - 2;
  for (int p = 0; p < n_; ++p) {
    const shm::InlineArea& area = *group_.areas[static_cast<std::size_t>(p)];
    const shm::InlineSlot& last = area.slots[1 - slot_];
    if (p != rank_ && last.index.load(std::memory_order_acquire) == index_ - 1 &&
        last.consumedOther.load(std::memory_order_relaxed) >= needed) {
      continue;
    }
    if (area.consumed[slot_].load(std::memory_order_acquire) < needed) return false;
  }
  return true;
}

void InlineCollective::post() {
  shm::InlineArea& mine = *group_.areas[static_cast<std::size_t>(rank_)];
  shm::InlineSlot& slot = mine.slots[slot_];
  const auto posts = *postsOf(collective_);
  const std::size_t offset = chunk_ * plan_.step, length = chunkBytes();
  const auto* in = static_cast<const std::byte*>(args_.send);
  std::byte* into = inHead_ ? slot.head : slot.payload;
  if (agrees_ && rank_ == 0 && chunk_ == 0) {
    // Before the copy: the peers wait for this, not for the post.
    mine.chosen[slot_].store(index_ << 2 | static_cast<std::uint64_t>(way_),
                             std::memory_order_release);
  }
  if (lendable_) slot.lent.streamed = lends_ ? 1 : 0;  // read by takeLent() only
  if (plan_.direct || lends_) {
    slot.lent.sendAddress = reinterpret_cast<std::uint64_t>(args_.send);
    slot.lent.loanMark = group_.domain->loanMark(group_.channels[static_cast<std::size_t>(rank_)]);
  } else if (keepsInput()) {
    // A reduce's root reads its own input where it is; its post only says it arrived.
  } else if (length > 0 &&
             (posts == Posts::kInput || (posts == Posts::kRoot && rank_ == args_.root))) {
    // A broadcast's data is in its one buffer (send and recv are the same).
    copyIn(into, in + offset, length);
  } else if (length > 0 && posts == Posts::kBlocks) {
    // This chunk of every block, packed; this member's own block only where it reads the post.
    for (int p = 0; p < n_; ++p) {
      if (p == rank_ && readsOwnInput_) continue;
      const auto at = static_cast<std::size_t>(p);
      copyIn(into + at * length, in + at * plan_.block + offset, length);
    }
  }
  slot.seq = seq_;
  std::memcpy(slot.signature, signature_, sizeof signature_);
  slot.consumedOther.store(mine.consumed[1 - slot_].load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  slot.index.store(index_, std::memory_order_release);
  posted_ = true;
  woken_ = false;
}

void InlineCollective::wakePeers() {
  if (woken_) return;
  woken_ = true;
  // Nothing else announces a post: wake the peers that sleep. Done once this member has looked
  // at the peers' posts (and, when they are all there, computed its result) rather than right
  // after its own: the check's fence waits for the post to reach the peers' caches, which by
  // then has mostly happened (an 8-byte allreduce spent 12% of its time in that fence).
  for (int p = 0; p < n_; ++p) {
    if (p != rank_) group_.domain->wakeMember(group_.members[static_cast<std::size_t>(p)]);
  }
}

Status InlineCollective::checkPosted(int peer, const shm::InlineSlot& slot) const {
  if (slot.seq == seq_ && sameWords(slot.signature, signature_)) return Status::Ok();
  return Status(StatusCode::kMismatch, describeCall(peer, slot.signature, slot.seq) + " where " +
                                           describeCall(rank_, signature_, seq_));
}

Status InlineCollective::checkAnnounced(int peer) const {
  const shm::InlineArea& area = *group_.areas[static_cast<std::size_t>(peer)];
  if (area.announced.load(std::memory_order_acquire) != seq_) return Status::Ok();
  std::uint64_t words[3];
  for (int i = 0; i < 3; ++i) words[i] = area.announcedSignature[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (area.announced.load(std::memory_order_relaxed) != seq_) return Status::Ok();  // rewritten
  return Status(StatusCode::kMismatch, "rank " + std::to_string(peer) + " runs " +
                                           describeWords(words) + " (#" + std::to_string(seq_) +
                                           ") with messages where rank " + std::to_string(rank_) +
                                           " runs " + describeWords(signature_) +
                                           " in shared memory (inline): their sizes differ");
}

Result<bool> InlineCollective::poll(std::uint64_t chunks) {
  if (queued_) return pollQueued();
  stoppedAtLimit_ = false;
  for (std::uint64_t done = 0; chunk_ < plan_.chunks; ++done) {
    if (done == chunks) {
      stoppedAtLimit_ = true;
      return false;
    }
    if (!posted_) {
      Result<bool> checked = checkPostedOnlyRound();
      if (!checked.ok() || !*checked) return checked;
      if (followsLeader_) {
        Result<bool> taken = takeLeadersWay();
        if (!taken.ok() || !*taken) return taken;
      }
      if (!mayPost()) return false;
      post();
      if (returnsAtPost()) {
        group_.areas[static_cast<std::size_t>(rank_)]->postedOnly[slot_].store(
            index_, std::memory_order_relaxed);
        wakePeers();
        ++chunk_;
        ++index_;
        slot_ = 1 - slot_;
        posted_ = false;
        return true;
      }
    }
    for (; next_ < n_; ++next_) {
      if (next_ == rank_) continue;
      const shm::InlineSlot& slot = group_.areas[static_cast<std::size_t>(next_)]->slots[slot_];
      if (slot.index.load(std::memory_order_acquire) != index_) {
        wakePeers();
        FTCOMM_RETURN_IF_ERROR(checkAnnounced(next_));
        FTCOMM_RETURN_IF_ERROR(checkQueued(next_));
        return false;
      }
      if (Status posted = checkPosted(next_, slot); !posted.ok()) {
        // A peer that queued a broadcast here posts its next collective into this round: that
        // broadcast is the disagreement to name.
        FTCOMM_RETURN_IF_ERROR(checkQueued(next_));
        FTCOMM_RETURN_IF_ERROR(checkQueuedHere(next_, slot));
        return posted;
      }
    }
    if (!finished_) {
      if (chunk_ == 0 && lendable_) {
        whole_ = lendsWhole();
        // Whole, this member marks every round to the last as read below, in both slots. Not
        // before it has read the round before this one: the collective before may still be
        // waiting for that round's posts (on the engine, while the calling thread runs this
        // one), and would then mark that round over this mark, which the next collective waits
        // for in vain; and a peer must not post over a post this member has yet to read.
        const std::uint64_t before =
            group_.areas[static_cast<std::size_t>(rank_)]->consumed[1 - slot_].load(
                std::memory_order_acquire);
        if (whole_ && before < index_ - 1) {
          wakePeers();
          return false;
        }
        if (whole_ && progress_ != nullptr) progress_->setAlgorithm("inline (lent whole)");
      }
      Status finished = plan_.direct || whole_ ? readPeers() : finish();
      wakePeers();
      FTCOMM_RETURN_IF_ERROR(finished);
      // Nothing of the peers' posts (or, in the direct form, of their buffers) is read any
      // more: they may post into this slot again.
      std::atomic<std::uint64_t>* consumed =
          group_.areas[static_cast<std::size_t>(rank_)]->consumed;
      if (whole_) {
        // Every member skips the other rounds alike: this one's are consumed, so that the next
        // collective's posts (mayPost) and the lenders' release (consumedByPeers) find them.
        const std::uint64_t last = index_ + plan_.chunks - 1;
        if (plan_.chunks > 1) consumed[(last - 1) % 2].store(last - 1, std::memory_order_release);
        consumed[last % 2].store(last, std::memory_order_release);
        chunk_ = plan_.chunks - 1;
        index_ = last;
        slot_ = static_cast<int>(last % 2);
      } else {
        consumed[slot_].store(index_, std::memory_order_release);
      }
      finished_ = true;
      if (plan_.direct || whole_ || (lenders_ && lenders_->read && chunk_ + 1 == plan_.chunks)) {
        // The peers wait for this (released(), or a lender for its last chunk), and nothing
        // else may come to wake them: a large one hands the wait to a progress thread that
        // sleeps.
        woken_ = false;
        wakePeers();
      }
    }
    if (plan_.direct) {
      if (!released()) return false;
      if (staged_) {  // an all-to-all in place: its blocks, now that nobody reads the input
        algorithms::copyStagedBlocks(static_cast<std::byte*>(args_.recv), staged_.get(),
                                     plan_.block, n_, rank_);
        staged_ = algorithms::Staging();
      }
    }
    ++chunk_;
    ++index_;
    slot_ = 1 - slot_;
    posted_ = false;
    finished_ = false;
    next_ = 0;
  }
  // A lender's buffers are the caller's again once every peer read its last chunk (and so the
  // ones before: each reads them in order).
  const bool done = !lends_ || consumedByPeers(index_ - 1);
  if (done && measured_) {
    measured_ = false;
    PostChoice::process(collective_)
        .record(inputBytes(), way_, std::chrono::steady_clock::now() - began_);
  }
  return done;
}

}  // namespace ftcomm::detail
