// Streamed inline collectives over memory that the peers map (inline_collective.h, mayLend):
// where each member's part of a chunk lies, and when a lender's buffers are its caller's again.
//
// Without it, a streamed collective copies every chunk into its slot and out again even where
// the direct algorithms read allocMem buffers with a single copy; on AMD Zen 5, where streaming
// replaced them (to 16 MiB then, 64 MiB now: inline_plan.cc), that halved what allocMem buffers
// gained, on inputs that never change. On inputs that change at every call it cost 2-3x, so it
// is off unless FTCOMM_INLINE_LEND=1 (mayLend).
#include <algorithm>

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

bool InlineCollective::mayLend() const {
  // Off unless FTCOMM_INLINE_LEND=1 (since 2026-12-03). Lending won only where the input never
  // changes between calls, as in a benchmark: the peers then read lines that stay clean in
  // their caches. A training step's input is new at every call; the peers then read lines
  // modified in this member's cache, and this member's next writes of its input wait for their
  // copies to be invalidated. 2 ranks, allocMem buffers, 2-8 MiB, 2 alternating runs each,
  // medians of ftcomm / OpenMPI, lent against copied through the slots: with the input
  // rewritten before every call (ftcomm-bench --rewrite-inputs) allreduce 0.68-0.77x against
  // 1.85-2.15x, broadcast 1.14-1.38x against 3.06-3.36x, reduce 1.01-1.26x against 2.21-4.10x,
  // allgather 1.17-1.26x against 2.79-3.31x, all-to-all 1.15-1.37x against 2.08-2.46x,
  // reduce-scatter 37-38x against 65-78x; with unchanged inputs lending had won (allreduce
  // 3.26-3.79x against 1.99-2.28x, all-to-all 1.70-1.79x against 1.01-1.07x; BENCHMARKS.md,
  // "Fresh inputs").
  static const bool lendInputs = envSwitch("FTCOMM_INLINE_LEND", false);
  if (!lendInputs) return false;
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
