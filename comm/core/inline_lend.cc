// Streamed inline collectives over memory that the peers map (inline_collective.h, mayLend):
// where each member's part of a chunk lies, and when a lender's buffers are its caller's again.
//
// Without it, a streamed collective copies every chunk into its slot and out again even where
// the direct algorithms read allocMem buffers with a single copy; on AMD Zen 5, where streaming
// replaced them (to 16 MiB then, 64 MiB now: inline_plan.cc), that halved what allocMem buffers
// gained. An all-to-all (and at 2 ranks an allgather) lends by default, and so does a broadcast
// streamed in place of the direct form (InlineChunking::lends); where every member lends, the
// whole collective runs in its first round (InlineCollective::lendsWhole); the others lend only
// with FTCOMM_INLINE_LEND=1 (mayLend says why). Where the plan lets a member choose how to post
// (lend, copy plain, copy around the cache: PostChoice), choosableWays says among which.
#include <algorithm>
#include <iostream>

#include "core/environment.h"
#include "core/inline_collective.h"
#include "core/inline_posts.h"
#include "transport/shm/mappable_memory.h"

namespace ftcomm::detail {

using algorithms::Collective;

namespace {

// Where `a` and `b`, `aBytes` and `bBytes` long, share a byte.
bool overlap(const void* a, std::size_t aBytes, const void* b, std::size_t bBytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return aBytes != 0 && bBytes != 0 && x < y + bBytes && y < x + aBytes;
}

}  // namespace

bool InlineCollective::lendable() const {
  // One that streams, and at 2 ranks one of one chunk from 16 KiB of input. With allocMem
  // buffers, 2 ranks, 3 alternating runs, allgather lent from 16 KiB against from 256 KiB and
  // against only where it streams:
  //   - fresh inputs: 64-256 KiB 2.5-7.0 us against 3.9-12.6 and 3.1-10.7; 1 MiB 26 us against
  //     28 and 46;
  //   - unchanged inputs: 32-256 KiB 1.0-3.1 us against 1.9-10.5 and 1.9-10.6.
  // All-to-all alike. At 4 ranks, on 2 cores, a post of one chunk lent lost (fresh all-to-all,
  // 256 KiB-2 MiB: 1.29-1.66x OpenMPI against 1.41-2.08x copied; unchanged 8-64 KiB: 12-22 us
  // against 12-16), since a lender waits for its last reader, who may be off the core.
  // A broadcast streamed in place of the direct form lends from one chunk, as the direct form
  // read the root's buffer (InlineChunking::lends).
  // FTCOMM_INLINE_LEND_FROM_KIB: lend one chunk from this many KiB, at any size (for measuring).
  static const int fromKib = envInt("FTCOMM_INLINE_LEND_FROM_KIB", -1);
  if (plan_.direct || plan_.chunks == 0) return false;
  if (plan_.chunks > 1 || plan_.lends) return true;
  if (fromKib >= 0) return inputBytes() >= static_cast<std::size_t>(fromKib) << 10;
  return n_ <= 2 && inputBytes() >= (std::size_t{16} << 10);
}

InlineCollective::Lending InlineCollective::mayLend() const {
  // FTCOMM_INLINE_LEND: 1 lends every collective's input, 0 none; unset, an all-to-all's, an
  // allgather's at 2 ranks, and a broadcast's where it streams in place of the direct form
  // (InlineChunking::lends: lent whole, it reads the root's buffer as the direct form did).
  //
  // Lending off for all (2026-12-03 to 2026-12-04) came from inputs rewritten in the timed part
  // (ftcomm-bench --rewrite-inputs): 2 ranks, allocMem buffers, 2-8 MiB, 2 alternating runs
  // each, medians of ftcomm / OpenMPI, lent against copied through the slots: allreduce
  // 0.68-0.77x against 1.85-2.15x, broadcast 1.14-1.38x against 3.06-3.36x, reduce 1.01-1.26x
  // against 2.21-4.10x, allgather 1.17-1.26x against 2.79-3.31x, all-to-all 1.15-1.37x against
  // 2.08-2.46x, reduce-scatter 37-38x against 65-78x. Those stores pay for taking each line back
  // from the peer that read it the call before, which a training step's input, written long
  // after its last collective, does not. With inputs fresh in this member's cache and the stores
  // untimed (--fresh-inputs), and with unchanged inputs, lending the allgather and all-to-all
  // wins, whole where every member lends (lendsWhole; BENCHMARKS.md, "Lending allocMem inputs
  // again"). Copied through the slots against lent, medians of ftcomm / OpenMPI:
  //   - 2 ranks, 64 KiB-64 MiB, 4 alternating runs: fresh, allgather 1.25-2.44x against
  //     1.78-3.54x, all-to-all 1.15-2.30x against 1.51-3.08x; unchanged, allgather 0.92-2.01x
  //     against 1.75-4.82x, all-to-all 0.94-1.93x against 1.82-4.75x;
  //   - 4 ranks, 256 KiB-64 MiB, 3 alternating runs: unchanged, allgather 1.75-2.46x against
  //     2.11-3.54x, all-to-all 0.91-1.42x against 1.90-2.45x; fresh, all-to-all 4-64 MiB
  //     1.06-1.41x against 1.48-1.85x, but allgather 1-64 MiB 1.79-2.23x against 1.54-1.92x,
  //     and in 8 more alternating runs the same within the noise (1.35-2.12x against
  //     1.38-1.94x), so beyond 2 ranks an allgather copies.
  // Lending the reductions lost or drew (2 ranks, fresh: allreduce 1-16 MiB 1.59-1.78x against
  // 1.64-2.08x copied, reduce 1-64 MiB 1.33-2.43x against 1.75-2.44x), and broadcast was mixed
  // (1.38-2.44x against 1.67-2.27x), so they copy through the slots.
  static const int lendSetting = [] {
    const int setting = envInt("FTCOMM_INLINE_LEND", -1);
    if (setting < -1 || setting > 1)
      std::cerr << "ftcomm: FTCOMM_INLINE_LEND is not 0 or 1; all-to-alls lend\n";
    return setting;
  }();
  const bool byDefault = plan_.lends || collective_ == Collective::kAllToAll ||
                         (collective_ == Collective::kAllGather && n_ <= 2);
  if (lendSetting == 0 || (lendSetting != 1 && !byDefault)) return Lending::kNo;
  if (plan_.block == 0 || keepsInput()) return Lending::kNo;
  const Posts posts = *postsOf(collective_);
  if (posts == Posts::kNothing || (posts == Posts::kRoot && rank_ != args_.root)) {
    return Lending::kNo;
  }
  const std::size_t n = static_cast<std::size_t>(n_);
  const std::size_t sendBytes = inputBytes();
  // Nothing this member writes may be what a peer still reads: a broadcast's root writes
  // nothing, an allgather in place only the blocks beside its own, a reduce's other members
  // nothing; the rest write their whole result.
  bool writesInput;
  switch (collective_) {
    case Collective::kBroadcast:
      writesInput = false;
      break;
    case Collective::kReduce:
      writesInput = rank_ == args_.root && overlap(args_.send, sendBytes, args_.recv, plan_.block);
      break;
    case Collective::kAllGather:
      writesInput = args_.send != static_cast<const std::byte*>(args_.recv) + rank_ * plan_.block &&
                    overlap(args_.send, sendBytes, args_.recv, n * plan_.block);
      break;
    case Collective::kAllToAll:
      writesInput = overlap(args_.send, sendBytes, args_.recv, n * plan_.block);
      break;
    default:  // allreduce, reduce-scatter
      writesInput = overlap(args_.send, sendBytes, args_.recv, plan_.block);
      break;
  }
  if (writesInput) return Lending::kNo;
  if (shm::MappableMemory::process().listed(args_.send, sendBytes)) return Lending::kYes;
  // Memory that the peers read with cross-memory attach: lent only where the plan lets members
  // choose (PostChoice; FTCOMM_INLINE_LEND=1 always).
  if (!plan_.chooses) return Lending::kNo;
  return lendSetting == 1 ? Lending::kYes : Lending::kChoose;
}

bool InlineCollective::choosesCopy() const {
  if (!plan_.choosesCopy || plan_.direct || inHead_ || plan_.block == 0 || keepsInput())
    return false;
  const Posts posts = *postsOf(collective_);
  return posts == Posts::kInput || posts == Posts::kBlocks ||
         (posts == Posts::kRoot && rank_ == args_.root);
}

unsigned InlineCollective::choosableWays(Lending lending) const {
  const bool mayLendToo = lending == Lending::kChoose;
  if (!mayLendToo && (lending == Lending::kYes || !choosesCopy())) return 0;
  // FTCOMM_INLINE_AROUND_CACHE: 1 copies around the cache, 0 with plain stores, wherever
  // members choose how to copy; unset, they choose (for measuring, and the tests).
  static const int around = envInt("FTCOMM_INLINE_AROUND_CACHE", -1);
  using Way = PostChoice::Way;
  // An allgather or all-to-all that may lend chooses among all three ways below 4 MiB of result,
  // and between lending and plain copies from there. Its members take rank 0's way (agrees());
  // before they did, with all three ways they chose apart and lost from 2 MiB (0.57-0.84x
  // OpenMPI against 0.93-0.98x). At 2 ranks, slow hand-over, 2026-12-04, forced around the
  // cache, allgather 1-4 MiB 1.08-1.09x against 0.98x lent (3 alternating runs), the same from
  // 8 MiB (0.99-1.01x). Three ways agreed against two chosen apart (the code before), 6 and 10
  // alternating runs, medians: allgather 512 KiB-2 MiB 0.99-1.10x against 0.94-0.98x,
  // all-to-all 1.00-1.04x against 0.95-0.99x; from 8 MiB 0.84-0.94x against 0.93-0.99x, where
  // a run makes few calls of a size and trying a third way cost more than it found.
  constexpr std::size_t kExchangesAroundBelow = std::size_t{4} << 20;
  const bool exchanges =
      collective_ == Collective::kAllGather || collective_ == Collective::kAllToAll;
  const bool plainOnly =
      around == 0 || (exchanges && mayLendToo &&
                      static_cast<std::size_t>(n_) * plan_.block >= kExchangesAroundBelow);
  const unsigned copies = around == 1 ? PostChoice::bit(Way::kCopyAroundCache)
                          : plainOnly ? PostChoice::bit(Way::kCopy)
                                      : PostChoice::kCopies;
  return copies | (mayLendToo ? PostChoice::bit(Way::kLend) : 0u);
}

void InlineCollective::chooseWay() {
  const PostChoice::Choice choice = PostChoice::process(collective_).choose(inputBytes(), ways_);
  measured_ = choice.measure;
  if (measured_) began_ = std::chrono::steady_clock::now();
  takeWay(choice.way);
}

void InlineCollective::takeWay(PostChoice::Way way) {
  way_ = way;
  lends_ = way == PostChoice::Way::kLend;
  readsOwnInput_ = readsOwnInput();
  if (lends_ && progress_ != nullptr) progress_->setAlgorithm("inline (lent)");
}

bool InlineCollective::agrees() const {
  return lendable_ && plan_.chooses &&
         (collective_ == Collective::kAllGather || collective_ == Collective::kAllToAll);
}

Result<bool> InlineCollective::takeLeadersWay() {
  const shm::InlineArea& leader = *group_.areas[0];
  // The post first: rank 0 writes its way before its post, so a post seen without it is one
  // that came with none.
  const bool posted = leader.slots[slot_].index.load(std::memory_order_acquire) == index_;
  const std::uint64_t said = leader.chosen[slot_].load(std::memory_order_acquire);
  using Way = PostChoice::Way;
  if (said != 0 && said >> 2 == index_) {
    auto way = static_cast<Way>(said & 3);
    if ((ways_ & PostChoice::bit(way)) == 0) {  // a copy this member does not make
      way = (ways_ & PostChoice::bit(Way::kCopy)) != 0 ? Way::kCopy : Way::kCopyAroundCache;
    }
    takeWay(way);
  } else if (posted) {
    chooseWay();
  } else {
    // Rank 0 may run this collective with messages: a Mismatch rather than a wait in vain.
    FTCOMM_RETURN_IF_ERROR(checkAnnounced(0));
    return false;
  }
  followsLeader_ = false;
  return true;
}

bool InlineCollective::lendsWhole() const {
  // What each member posted in the first round says whether it lends, and every member sees the
  // same posts: they all decide alike. A broadcast's members other than the root post no data.
  // FTCOMM_INLINE_LEND_WHOLE=0 keeps lending chunk by chunk (for measuring).
  static const bool whole = envSwitch("FTCOMM_INLINE_LEND_WHOLE", true);
  if (!whole || (collective_ != Collective::kAllGather && collective_ != Collective::kAllToAll &&
                 collective_ != Collective::kBroadcast)) {
    return false;
  }
  for (int p = 0; p < n_; ++p) {
    if (collective_ == Collective::kBroadcast && p != args_.root) continue;
    const bool lent =
        p == rank_ ? lends_
                   : group_.areas[static_cast<std::size_t>(p)]->slots[slot_].lent.streamed != 0;
    if (!lent) return false;
  }
  return true;
}

Status InlineCollective::takeLent() {
  if (lenders_) lenders_->read = false;
  const std::size_t offset = chunk_ * plan_.step, length = chunkBytes();
  const std::size_t n = static_cast<std::size_t>(n_);
  const std::size_t piece = piecesOfBlocks_ ? static_cast<std::size_t>(rank_) : 0;
  for (int p = 0; p < n_; ++p) {
    if (p == rank_) continue;
    const auto at = static_cast<std::size_t>(p);
    const shm::InlineSlot& slot = group_.areas[at]->slots[slot_];
    if (slot.lent.streamed == 0) {
      if (lenders_) lenders_->byRank[at].at = nullptr;
      continue;
    }
    if (!lenders_) {  // the first lender seen: once per collective
      lenders_ = std::make_unique<Lenders>();
      lenders_->byRank.resize(n);
    }
    Lender& lender = lenders_->byRank[at];
    const std::uint64_t address = slot.lent.sendAddress;
    if (!lender.looked) {  // once: a lender not mapped here is read with cross-memory attach
      lender.looked = true;
      lender.view = group_.domain->viewMember(group_.members[at], address, inputBytes());
    }
    lenders_->read = true;
    if (lender.view.data != nullptr) {
      lender.at = lender.view.data + piece * plan_.block + offset;
      continue;
    }
    algorithms::Staging& staged = lenders_->staged;
    if (!staged) staged = algorithms::Staging::take(n * plan_.step);
    std::byte* into = staged.get() + at * plan_.step;
    const shm::Loan loan{group_.channels[at], slot.lent.loanMark};
    FTCOMM_RETURN_IF_ERROR(group_.domain->readMember(
        group_.members[at], into, address + piece * plan_.block + offset, length, loan));
    lender.at = into;
  }
  return Status::Ok();
}

Status InlineCollective::checkLent() const {
  if (!lenders_ || !lenders_->read) return Status::Ok();
  for (int p = 0; p < n_; ++p) {
    const auto at = static_cast<std::size_t>(p);
    const Lender& lender = lenders_->byRank[at];
    if (p == rank_ || lender.at == nullptr || lender.view.data == nullptr) continue;
    // What was read through the mapping is the peer's input only if it still lent it after.
    const shm::Loan loan{group_.channels[at], group_.areas[at]->slots[slot_].lent.loanMark};
    FTCOMM_RETURN_IF_ERROR(group_.domain->checkLoan(group_.members[at], loan));
  }
  return Status::Ok();
}

bool InlineCollective::consumedByPeers(std::uint64_t index) const {
  for (int p = 0; p < n_; ++p) {
    if (p == rank_) continue;
    const shm::InlineArea& area = *group_.areas[static_cast<std::size_t>(p)];
    if (area.consumed[index % 2].load(std::memory_order_acquire) < index) return false;
  }
  return true;
}

}  // namespace ftcomm::detail
