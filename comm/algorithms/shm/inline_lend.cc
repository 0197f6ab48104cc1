// Streamed inline collectives over memory that the peers map (inline_collective.h, mayLend):
// where each member's part of a chunk lies, and when a lender's buffers are its caller's again.
//
// Without it, a streamed collective copies every chunk into its slot and out again even where
// the direct algorithms read allocMem buffers with a single copy. An all-to-all (and at 2 ranks
// an allgather) lends by default, and so does a broadcast streamed in place of the direct form
// (InlineChunking::lends); where every member lends, the whole collective runs in its first round
// (InlineCollective::lendsWhole); the others lend only under the profile's `lend all`. Where the
// plan lets a member choose how to post (lend, copy plain, copy around the cache: PostChoice),
// choosableWays says among which.
#include <algorithm>

#include "algorithms/shm/inline_collective.h"
#include "algorithms/shm/inline_posts.h"
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
  // One that streams, one streamed in place of the direct form (InlineChunking::lends), and at 2
  // ranks one of one chunk from the profile's lend_one_chunk_from bytes of input: beyond 2 ranks
  // on few cores a lender waits for its last reader, who may be off the core.
  if (plan_.direct || plan_.chunks == 0) return false;
  if (plan_.chunks > 1 || plan_.lends) return true;
  return n_ <= 2 && inputBytes() >= group_.tuning->settings().lendOneChunkFrom;
}

InlineCollective::Lending InlineCollective::mayLend() const {
  // The profile's `lend`: all lends every collective's input, none none; auto, an all-to-all's,
  // an allgather's at 2 ranks, and a broadcast's where it streams in place of the direct form
  // (InlineChunking::lends: lent whole, it reads the root's buffer as the direct form did).
  // Reductions copy: lending them measured no better (docs/tuning.md).
  using LendAll = tuning::Settings::LendAll;
  const LendAll lendAll = group_.tuning->settings().lendAll;
  const bool byDefault = plan_.lends || collective_ == Collective::kAllToAll ||
                         (collective_ == Collective::kAllGather && n_ <= 2);
  if (lendAll == LendAll::kNone || (lendAll != LendAll::kAll && !byDefault)) return Lending::kNo;
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
  // choose (PostChoice; `lend all` always).
  if (!plan_.chooses) return Lending::kNo;
  return lendAll == LendAll::kAll ? Lending::kYes : Lending::kChoose;
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
  // The profile's around_cache: always or never settles how members copy where they choose.
  using AroundCache = tuning::Settings::AroundCache;
  const AroundCache around = group_.tuning->settings().aroundCache;
  using Way = PostChoice::Way;
  // An allgather or all-to-all that may lend chooses among all three ways below 4 MiB of result,
  // and between lending and plain copies from there, where a run makes few calls of a size and
  // trying a third way costs more than it finds. Its members take rank 0's way (agrees()).
  constexpr std::size_t kExchangesAroundBelow = std::size_t{4} << 20;
  const bool exchanges =
      collective_ == Collective::kAllGather || collective_ == Collective::kAllToAll;
  const bool plainOnly = around == AroundCache::kNever ||
                         (exchanges && mayLendToo &&
                          static_cast<std::size_t>(n_) * plan_.block >= kExchangesAroundBelow);
  const unsigned copies = around == AroundCache::kAlways ? PostChoice::bit(Way::kCopyAroundCache)
                          : plainOnly                    ? PostChoice::bit(Way::kCopy)
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
  // The profile's `lend_whole off` keeps lending chunk by chunk (for measuring).
  if (!group_.tuning->settings().lendWhole ||
      (collective_ != Collective::kAllGather && collective_ != Collective::kAllToAll &&
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
