// The direct form of an inline collective (inline_collective.h, InlineChunking::direct): the
// posts carry addresses, and each member reads the peers' buffers straight.
#include <cstring>

#include "algorithms/shm/inline_collective.h"
#include "transport/copy_bytes.h"

namespace ftcomm::detail {

using algorithms::Collective;

Status InlineCollective::readPeers() {
  const std::size_t block = plan_.block;
  auto address = [&](int peer) {  // of its send buffer
    return group_.areas[static_cast<std::size_t>(peer)]->slots[slot_].lent.sendAddress;
  };
  auto read = [&](int peer, std::byte* into, std::uint64_t from) {
    if (block == 0) return Status::Ok();
    const auto at = static_cast<std::size_t>(peer);
    const shm::Loan loan{group_.channels[at], group_.areas[at]->slots[slot_].lent.loanMark};
    // A broadcast's read is the whole collective; an allgather's or all-to-all's is one block of
    // several.
    const shm::ShmDomain::Copy copy = collective_ == Collective::kBroadcast
                                          ? &transport::copyBytes
                                          : &transport::copyPartOfLargeMove;
    return group_.domain->readMember(group_.members[at], into, from, block, loan, copy);
  };
  auto* out = static_cast<std::byte*>(args_.recv);
  if (collective_ == Collective::kBroadcast) {
    if (rank_ != args_.root) return read(args_.root, out, address(args_.root));
    return Status::Ok();  // one buffer: send is recv
  }
  const auto self = static_cast<std::size_t>(rank_);
  if (collective_ == Collective::kAllToAll) {
    // In place, the blocks gather apart until every peer has read its own out of this buffer
    // (InlineCollective::poll copies them over once released).
    std::byte* target = out;
    if (args_.send == args_.recv) {
      staged_ = algorithms::Staging::take(block * static_cast<std::size_t>(n_));
      target = staged_.get();
    } else if (block > 0) {
      transport::copyPartOfLargeMove(
          out + self * block, static_cast<const std::byte*>(args_.send) + self * block, block);
    }
    for (int i = 1; i < n_; ++i) {  // starting with the next rank, as the allgather does
      const int p = (rank_ + i) % n_;
      FTCOMM_RETURN_IF_ERROR(
          read(p, target + static_cast<std::size_t>(p) * block, address(p) + self * block));
    }
    return Status::Ok();
  }
  // Allgather: this member's block, then each peer's, starting with the next rank (so that the
  // peers do not all read from rank 0 first).
  std::byte* own = out + self * block;
  if (args_.send != own && block > 0) transport::copyPartOfLargeMove(own, args_.send, block);
  for (int i = 1; i < n_; ++i) {
    const int p = (rank_ + i) % n_;
    FTCOMM_RETURN_IF_ERROR(read(p, out + static_cast<std::size_t>(p) * block, address(p)));
  }
  return Status::Ok();
}

bool InlineCollective::released() const {
  // A broadcast's non-root lends nothing; every other member's send buffer is read by all.
  return (collective_ == Collective::kBroadcast && rank_ != args_.root) || consumedByPeers(index_);
}

}  // namespace ftcomm::detail
