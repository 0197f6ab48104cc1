// InlineCollective (inline_collective.h): what a member does with a chunk once every post it
// needs is in: the reduction of the members' parts, the copy of the root's, or the gather of
// every member's block, from the slots or from lent buffers.
#include "algorithms/reduction.h"
#include "algorithms/shm/inline_collective.h"
#include "transport/copy_bytes.h"

namespace ftcomm::detail {

using algorithms::Collective;

Status InlineCollective::finish() {
  if (chunkBytes() == 0) return Status::Ok();
  // Only lendable collectives lend, and every member's plan says alike which are: the others'
  // parts are in the posts.
  if (!lendable_) return combine();
  FTCOMM_RETURN_IF_ERROR(takeLent());
  FTCOMM_RETURN_IF_ERROR(combine());
  return checkLent();
}

Status InlineCollective::combine() {
  const std::size_t es = dataTypeSize(args_.dtype);
  const std::size_t offset = chunk_ * plan_.step, length = chunkBytes();
  auto* out = static_cast<std::byte*>(args_.recv);
  // Folds every member's part into `into`, in rank order.
  auto fold = [&](std::byte* into) -> Status {
    const std::size_t count = length / es;
    if (n_ == 1) transport::copyBytes(into, source(0), length);
    for (int r = 1; r < n_; ++r) {  // the first reduction also copies: into = part 0 OP part 1
      const std::byte* so_far = r == 1 ? source(0) : into;
      FTCOMM_RETURN_IF_ERROR(
          algorithms::reduceFrom(args_.dtype, args_.op, into, so_far, source(r), count));
    }
    if (args_.op == ReduceOp::kAvg) return algorithms::finishAverage(args_.dtype, into, count, n_);
    return Status::Ok();
  };
  // Member r's part into block r of the result (an allgather in place lends its own block from
  // where it already is).
  auto gather = [&] {
    for (int r = 0; r < n_; ++r) {
      std::byte* into = out + static_cast<std::size_t>(r) * plan_.block + offset;
      if (const std::byte* from = source(r); from != into) transport::copyBytes(into, from, length);
    }
  };
  switch (collective_) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter:
      return fold(out + offset);
    case Collective::kReduce:
      return rank_ == args_.root ? fold(out + offset) : Status::Ok();
    case Collective::kBroadcast:
      if (rank_ != args_.root) transport::copyBytes(out + offset, source(args_.root), length);
      return Status::Ok();
    case Collective::kAllGather:
    case Collective::kAllToAll:
      gather();
      return Status::Ok();
    case Collective::kBarrier:
      return Status::Ok();
    default:
      return internalError("inline collective: not an inline collective");
  }
}

}  // namespace ftcomm::detail
