// Streamed inline collectives over memory that the peers map (inline_collective.h, mayLend):
// where each member's part of a chunk lies, and when a lender's buffers are its caller's again.
//
// Without it, a streamed collective copies every chunk into its slot and out again even where
// the direct algorithms read allocMem buffers with a single copy; on AMD Zen 5, where streaming
// replaced them (to 16 MiB then, 64 MiB now: inline_plan.cc), that halved what allocMem buffers
// gained.
#include <algorithm>

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

bool InlineCollective::mayLend() const {
  if (plan_.block == 0 || keepsInput()) return false;
  const Posts posts = *postsOf(collective_);
  if (posts == Posts::kNothing || (posts == Posts::kRoot && rank_ != args_.root)) return false;
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
  return !writesInput && shm::MappableMemory::process().listed(args_.send, sendBytes);
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
