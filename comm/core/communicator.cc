// The Communicator's operations: argument checks, then submit.h.
#include "ftcomm/communicator.h"

#include <limits>

#include "core/argument_checks.h"
#include "core/hash.h"
#include "core/submit.h"

namespace ftcomm {

using detail::checkBuffer;
using detail::checkOp;
using detail::checkRank;
using detail::CollectiveCall;
using detail::firstError;
using transport::OpKind;
namespace pb = recorder::v1;

namespace {

CollectiveCall call(const char* name, OpKind kind, pb::OpType recordOp,
                    algorithms::Collective collective, DataType dtype, const void* send, void* recv,
                    std::size_t count) {
  CollectiveCall c;
  c.name = name;
  c.kind = kind;
  c.recordOp = recordOp;
  c.collective = collective;
  c.args.dtype = dtype;
  c.args.send = send;
  c.args.recv = recv;
  c.args.count = count;
  c.args.root = -1;
  return c;
}

std::size_t bytesOf(std::size_t count, DataType dtype) {
  return static_cast<std::size_t>(dtype) < kDataTypes.size() ? count * dataTypeSize(dtype) : 0;
}

// The counts and displacements of a V collective: each span `size` long, every block inside
// `limit` elements when a limit is given.
Status checkVector(std::span<const std::size_t> counts, std::span<const std::size_t> displs,
                   int size, const char* what) {
  if (counts.size() != static_cast<std::size_t>(size) ||
      displs.size() != static_cast<std::size_t>(size)) {
    return invalidArgument(std::string(what) + " counts and displacements need " +
                           std::to_string(size) + " entries each, got " +
                           std::to_string(counts.size()) + " and " + std::to_string(displs.size()));
  }
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > std::numeric_limits<std::size_t>::max() / 16 - displs[r]) {
      return invalidArgument(std::string(what) + " block " + std::to_string(r) + " overflows");
    }
  }
  return Status::Ok();
}

std::uint64_t hashCounts(std::span<const std::size_t> counts) {
  std::uint64_t h = detail::kHashSeed;
  for (std::size_t c : counts) h = detail::hashMix(h, c);
  return h;
}

std::size_t maxEnd(std::span<const std::size_t> counts, std::span<const std::size_t> displs) {
  std::size_t end = 0;
  for (std::size_t r = 0; r < counts.size() && r < displs.size(); ++r) {
    end = std::max(end, counts[r] + displs[r]);
  }
  return end;
}

}  // namespace

Communicator::Communicator(std::shared_ptr<detail::CommState> state,
                           std::shared_ptr<detail::WorldIdentity> world)
    : state_(std::move(state)), world_(std::move(world)) {}

int Communicator::rank() const {
  return state_->rank;
}
int Communicator::size() const {
  return state_->size;
}
std::uint64_t Communicator::epoch() const {
  return state_->epoch;
}
std::string Communicator::tuningProfile() const {
  return state_->tuning ? state_->tuning->name() + " " + state_->tuning->hash() : "";
}
std::uint64_t Communicator::id() const {
  return state_->id;
}
const std::string& Communicator::name() const {
  return state_->name;
}
const std::vector<int>& Communicator::parentRanks() const {
  return state_->parentRanks;
}
const std::vector<int>& Communicator::worldRanks() const {
  return state_->worldRanks;
}

Status Communicator::health() const {
  std::lock_guard<std::mutex> lock(state_->engine->mutex());
  return state_->broken;
}

namespace {

// The general path of an allreduce, out of Communicator::allReduce's line (as generalBroadcast).
[[gnu::noinline]] Work generalAllReduce(const std::shared_ptr<detail::CommState>& state,
                                        const void* send, void* recv, std::size_t count,
                                        DataType dtype, ReduceOp op, const OpOptions& options) {
  auto c = call("allReduce", OpKind::kAllReduce, pb::ALL_REDUCE, algorithms::Collective::kAllReduce,
                dtype, send, recv, count);
  c.args.op = op;
  c.reduces = true;
  c.choiceBytes = bytesOf(count, dtype);
  c.countIn = c.countOut = count;
  return submitCollective(
      state, std::move(c), options,
      firstError({checkBuffer(send, count, 1, dtype, "send"),
                  checkBuffer(recv, count, 1, dtype, "recv"), checkOp(dtype, op)}));
}

}  // namespace

Work Communicator::allReduce(const void* send, void* recv, std::size_t count, DataType dtype,
                             ReduceOp op, const OpOptions& options) {
  if (auto work = detail::tryInlineAllReduce(state_, send, recv, count, dtype, op, options)) {
    return *std::move(work);
  }
  return generalAllReduce(state_, send, recv, count, dtype, op, options);
}

Work Communicator::reduce(const void* send, void* recv, std::size_t count, DataType dtype,
                          ReduceOp op, int root, const OpOptions& options) {
  auto c = call("reduce", OpKind::kReduce, pb::REDUCE, algorithms::Collective::kReduce, dtype, send,
                recv, count);
  c.args.op = op;
  c.args.root = root;
  c.reduces = true;
  c.choiceBytes = bytesOf(count, dtype);
  c.countIn = c.countOut = count;
  return submitCollective(
      state_, std::move(c), options,
      firstError({checkRank(root, size(), "root"), checkBuffer(send, count, 1, dtype, "send"),
                  checkBuffer(recv, count, 1, dtype, "recv"), checkOp(dtype, op)}));
}

namespace {

// The general path of a broadcast, out of Communicator::broadcast's line: its frame (the call it
// builds, the checks) would cost the fast path's every call the stores of its prologue.
[[gnu::noinline]] Work generalBroadcast(const std::shared_ptr<detail::CommState>& state,
                                        void* buffer, std::size_t count, DataType dtype, int root,
                                        const OpOptions& options) {
  auto c = call("broadcast", OpKind::kBroadcast, pb::BROADCAST, algorithms::Collective::kBroadcast,
                dtype, buffer, buffer, count);
  c.args.root = root;
  c.choiceBytes = bytesOf(count, dtype);
  c.countIn = c.countOut = count;
  return submitCollective(state, std::move(c), options,
                          firstError({checkRank(root, state->size, "root"),
                                      checkBuffer(buffer, count, 1, dtype, "buffer")}));
}

}  // namespace

Work Communicator::broadcast(void* buffer, std::size_t count, DataType dtype, int root,
                             const OpOptions& options) {
  if (detail::tryQueuedBroadcast(*state_, buffer, count, dtype, root)) {
    return Work(detail::succeededWorkState(nullptr));
  }
  return generalBroadcast(state_, buffer, count, dtype, root, options);
}

Work Communicator::allGather(const void* send, void* recv, std::size_t count, DataType dtype,
                             const OpOptions& options) {
  auto c = call("allGather", OpKind::kAllGather, pb::ALL_GATHER, algorithms::Collective::kAllGather,
                dtype, send, recv, count);
  c.choiceBytes = bytesOf(count, dtype) * static_cast<std::size_t>(size());
  c.countIn = count;
  c.countOut = count * static_cast<std::size_t>(size());
  return submitCollective(state_, std::move(c), options,
                          firstError({checkBuffer(send, count, 1, dtype, "send"),
                                      checkBuffer(recv, count, size(), dtype, "recv")}));
}

Work Communicator::allGatherV(const void* send, void* recv, std::span<const std::size_t> recvCounts,
                              std::span<const std::size_t> recvDispls, DataType dtype,
                              const OpOptions& options) {
  Status valid = checkVector(recvCounts, recvDispls, size(), "allGatherV receive");
  const std::size_t own = valid.ok() ? recvCounts[static_cast<std::size_t>(rank())] : 0;
  const std::size_t total = valid.ok() ? maxEnd(recvCounts, recvDispls) : 0;
  auto c = call("allGatherV", OpKind::kAllGatherV, pb::ALL_GATHER_V,
                algorithms::Collective::kAllGatherV, dtype, send, recv, own);
  if (valid.ok()) {
    c.counts.assign(recvCounts.begin(), recvCounts.end());
    c.counts.insert(c.counts.end(), recvDispls.begin(), recvDispls.end());
    const std::size_t n = recvCounts.size();
    c.ranges = {{{0, 0}, {0, 0}, {0, n}, {n, n}}};
    c.extra = hashCounts(recvCounts);
  }
  c.args.count = total;  // the signature's count: the whole result
  c.countIn = own;
  c.countOut = total;
  c.choiceBytes = bytesOf(total, dtype);
  return submitCollective(state_, std::move(c), options,
                          firstError({valid, checkBuffer(send, own, 1, dtype, "send"),
                                      checkBuffer(recv, total, 1, dtype, "recv")}));
}

Work Communicator::reduceScatter(const void* send, void* recv, std::size_t count, DataType dtype,
                                 ReduceOp op, const OpOptions& options) {
  auto c = call("reduceScatter", OpKind::kReduceScatter, pb::REDUCE_SCATTER,
                algorithms::Collective::kReduceScatter, dtype, send, recv, count);
  c.args.op = op;
  c.reduces = true;
  c.choiceBytes = bytesOf(count, dtype) * static_cast<std::size_t>(size());
  c.countIn = count * static_cast<std::size_t>(size());
  c.countOut = count;
  return submitCollective(
      state_, std::move(c), options,
      firstError({checkBuffer(send, count, size(), dtype, "send"),
                  checkBuffer(recv, count, 1, dtype, "recv"), checkOp(dtype, op)}));
}

Work Communicator::allToAll(const void* send, void* recv, std::size_t count, DataType dtype,
                            const OpOptions& options) {
  auto c = call("allToAll", OpKind::kAllToAll, pb::ALL_TO_ALL, algorithms::Collective::kAllToAll,
                dtype, send, recv, count);
  c.choiceBytes = bytesOf(count, dtype) * static_cast<std::size_t>(size());
  c.countIn = c.countOut = count * static_cast<std::size_t>(size());
  return submitCollective(state_, std::move(c), options,
                          firstError({checkBuffer(send, count, size(), dtype, "send"),
                                      checkBuffer(recv, count, size(), dtype, "recv")}));
}

Work Communicator::allToAllV(const void* send, std::span<const std::size_t> sendCounts,
                             std::span<const std::size_t> sendDispls, void* recv,
                             std::span<const std::size_t> recvCounts,
                             std::span<const std::size_t> recvDispls, DataType dtype,
                             const OpOptions& options) {
  Status valid = firstError({checkVector(sendCounts, sendDispls, size(), "allToAllV send"),
                             checkVector(recvCounts, recvDispls, size(), "allToAllV receive")});
  const std::size_t in = valid.ok() ? maxEnd(sendCounts, sendDispls) : 0;
  const std::size_t out = valid.ok() ? maxEnd(recvCounts, recvDispls) : 0;
  if (valid.ok() && send == recv && in + out > 0) {
    valid = invalidArgument("allToAllV is not in place: give distinct send and recv buffers");
  }
  auto c = call("allToAllV", OpKind::kAllToAllV, pb::ALL_TO_ALL_V,
                algorithms::Collective::kAllToAllV, dtype, send, recv, 0);
  if (valid.ok()) {
    for (auto part : {sendCounts, sendDispls, recvCounts, recvDispls}) {
      c.counts.insert(c.counts.end(), part.begin(), part.end());
    }
    const std::size_t n = sendCounts.size();
    c.ranges = {{{0, n}, {n, n}, {2 * n, n}, {3 * n, n}}};
  }
  c.countIn = in;
  c.countOut = out;
  c.choiceBytes = bytesOf(in, dtype);
  return submitCollective(state_, std::move(c), options,
                          firstError({valid, checkBuffer(send, in, 1, dtype, "send"),
                                      checkBuffer(recv, out, 1, dtype, "recv")}));
}

Work Communicator::gather(const void* send, void* recv, std::size_t count, DataType dtype, int root,
                          const OpOptions& options) {
  auto c = call("gather", OpKind::kGather, pb::GATHER, algorithms::Collective::kGather, dtype, send,
                recv, count);
  c.args.root = root;
  c.choiceBytes = bytesOf(count, dtype);
  c.countIn = count;
  c.countOut = rank() == root ? count * static_cast<std::size_t>(size()) : 0;
  return submitCollective(
      state_, std::move(c), options,
      firstError({checkRank(root, size(), "root"), checkBuffer(send, count, 1, dtype, "send"),
                  checkBuffer(rank() == root ? recv : send, count, size(), dtype, "recv")}));
}

Work Communicator::scatter(const void* send, void* recv, std::size_t count, DataType dtype,
                           int root, const OpOptions& options) {
  auto c = call("scatter", OpKind::kScatter, pb::SCATTER, algorithms::Collective::kScatter, dtype,
                send, recv, count);
  c.args.root = root;
  c.choiceBytes = bytesOf(count, dtype);
  c.countIn = rank() == root ? count * static_cast<std::size_t>(size()) : 0;
  c.countOut = count;
  return submitCollective(
      state_, std::move(c), options,
      firstError({checkRank(root, size(), "root"),
                  checkBuffer(rank() == root ? send : recv, count, size(), dtype, "send"),
                  checkBuffer(recv, count, 1, dtype, "recv")}));
}

Work Communicator::barrier(const OpOptions& options) {
  auto c = call("barrier", OpKind::kBarrier, pb::BARRIER, algorithms::Collective::kBarrier,
                DataType::kUint8, nullptr, nullptr, 0);
  return submitCollective(state_, std::move(c), options, Status::Ok());
}

namespace {

Status checkPointToPoint(const void* buffer, std::size_t count, DataType dtype, int peer, int tag,
                         int size) {
  if (tag < 0 || tag > Communicator::kMaxTag) {
    return invalidArgument("tag " + std::to_string(tag) + " outside 0.." +
                           std::to_string(Communicator::kMaxTag));
  }
  return firstError(
      {checkRank(peer, size, "peer"), checkBuffer(buffer, count, 1, dtype, "buffer")});
}

}  // namespace

Work Communicator::send(const void* buffer, std::size_t count, DataType dtype, int peer, int tag,
                        const OpOptions& options) {
  detail::PointToPointCall c{true, const_cast<void*>(buffer), count, dtype, peer, tag};
  return submitPointToPoint(state_, c, options,
                            checkPointToPoint(buffer, count, dtype, peer, tag, size()));
}

Work Communicator::recv(void* buffer, std::size_t count, DataType dtype, int peer, int tag,
                        const OpOptions& options) {
  detail::PointToPointCall c{false, buffer, count, dtype, peer, tag};
  return submitPointToPoint(state_, c, options,
                            checkPointToPoint(buffer, count, dtype, peer, tag, size()));
}

}  // namespace ftcomm
