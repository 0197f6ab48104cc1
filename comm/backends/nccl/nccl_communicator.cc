// NcclCommunicator's operations: argument checks (the host facade's, plus device memory), the
// flight-recorder descriptor, and the NCCL calls each one issues.
#include "ftcomm/nccl_communicator.h"

#include <algorithm>

#include "backends/nccl/nccl_backend.h"
#include "backends/nccl/nccl_status.h"
#include "core/argument_checks.h"

namespace ftcomm {

using detail::checkBuffer;
using detail::checkRank;
using detail::firstError;
using nccl::NcclOpCall;
using nccl::NcclOpKind;
namespace pb = recorder::v1;

namespace {

// What the recorder and the error messages say of one call.
struct OpPlan {
  const char* name = "";
  pb::OpType op = pb::OP_UNSPECIFIED;
  DataType dtype = DataType::kUint8;
  std::uint64_t countIn = 0;
  std::uint64_t countOut = 0;
  int root = -1;
  int peer = -1;
  int tag = 0;
  bool reduces = false;
  ReduceOp reduceOp = ReduceOp::kSum;
  bool collective = true;
};

Work submit(nccl::NcclBackend& backend, const OpPlan& plan, std::vector<NcclOpCall> calls,
            Status checked, const OpOptions& options) {
  recorder::OpDescriptor d;
  d.commId = backend.id();
  d.epoch = backend.epoch();
  d.seq = plan.collective ? backend.nextCollectiveSeq() : backend.nextPointToPointSeq();
  d.op = plan.op;
  d.dtype = recorder::recordedType(plan.dtype);
  d.countIn = plan.countIn;
  d.countOut = plan.countOut;
  d.root = plan.root;
  d.peer = plan.peer;
  d.tag = plan.tag;
  if (plan.reduces) d.reduceOp = recorder::recordedOp(plan.reduceOp);
  d.algorithm = "nccl";
  if (!checked.ok()) {
    checked = Status(checked.code(), std::string(plan.name) + " #" + std::to_string(d.seq) +
                                         " of " + backend.name() + ": " + checked.message());
  }
  return backend.submit(plan.name, d, std::move(calls), std::move(checked), options.timeout);
}

// Ok when `pointer` is memory of the communicator's device (or there is nothing to hold).
Status checkDevice(nccl::NcclBackend& backend, const void* pointer, std::size_t count,
                   const char* what) {
  if (pointer == nullptr || count == 0) return Status::Ok();
  bool yes = false;
  FTCOMM_RETURN_IF_ERROR(
      nccl::toStatus(backend.api().isDeviceMemory(pointer, backend.device(), &yes), what));
  if (yes) return Status::Ok();
  return invalidArgument(std::string(what) + " is not memory of CUDA device " +
                         std::to_string(backend.device()) +
                         " (the NCCL communicator takes device buffers; Communicator takes host "
                         "memory)");
}

NcclOpCall opCall(NcclOpKind kind, const void* send, void* recv, std::size_t count, DataType dtype,
                  int root = 0, ReduceOp op = ReduceOp::kSum) {
  return NcclOpCall{kind, send, recv, count, dtype, op, root};
}

// Checks the counts and displacements of a vector collective: one per member, within memory.
Status checkVector(std::span<const std::size_t> counts, std::span<const std::size_t> displs,
                   int size, DataType dtype, const char* what) {
  if (counts.size() != static_cast<std::size_t>(size) || displs.size() != counts.size()) {
    return invalidArgument(std::string(what) + ": " + std::to_string(counts.size()) +
                           " counts and " + std::to_string(displs.size()) + " displacements for " +
                           std::to_string(size) + " members");
  }
  for (std::size_t r = 0; r < counts.size(); ++r) {
    FTCOMM_RETURN_IF_ERROR(checkBuffer(counts.data(), counts[r] + displs[r], 1, dtype, what));
  }
  return Status::Ok();
}

std::size_t extentOf(std::span<const std::size_t> counts, std::span<const std::size_t> displs) {
  std::size_t end = 0;
  for (std::size_t r = 0; r < counts.size() && r < displs.size(); ++r) {
    if (counts[r] > 0) end = std::max(end, displs[r] + counts[r]);
  }
  return end;
}

const char* at(const void* base, std::size_t elements, DataType dtype) {
  return static_cast<const char*>(base) + elements * dataTypeSize(dtype);
}

}  // namespace

NcclCommunicator::NcclCommunicator(std::shared_ptr<nccl::NcclBackend> backend)
    : backend_(std::move(backend)) {}
NcclCommunicator::~NcclCommunicator() = default;

int NcclCommunicator::rank() const {
  return backend_->rank();
}
int NcclCommunicator::size() const {
  return backend_->size();
}
std::uint64_t NcclCommunicator::epoch() const {
  return backend_->epoch();
}
std::uint64_t NcclCommunicator::id() const {
  return backend_->id();
}
const std::string& NcclCommunicator::name() const {
  return backend_->name();
}
int NcclCommunicator::device() const {
  return backend_->device();
}
std::vector<int> NcclCommunicator::worldRanks() const {
  return backend_->worldRanks();
}

Work NcclCommunicator::allReduce(const void* send, void* recv, std::size_t count, DataType dtype,
                                 ReduceOp op, const OpOptions& options) {
  OpPlan plan{"allReduce", pb::ALL_REDUCE, dtype, count, count};
  plan.reduces = true;
  plan.reduceOp = op;
  Status valid = firstError(
      {checkBuffer(send, count, 1, dtype, "send"), checkBuffer(recv, count, 1, dtype, "recv"),
       nccl::checkNcclReduction(dtype, op), checkDevice(*backend_, send, count, "send"),
       checkDevice(*backend_, recv, count, "recv")});
  return submit(*backend_, plan, {opCall(NcclOpKind::kAllReduce, send, recv, count, dtype, 0, op)},
                std::move(valid), options);
}

Work NcclCommunicator::reduce(const void* send, void* recv, std::size_t count, DataType dtype,
                              ReduceOp op, int root, const OpOptions& options) {
  OpPlan plan{"reduce", pb::REDUCE, dtype, count, count, root};
  plan.reduces = true;
  plan.reduceOp = op;
  const bool atRoot = root == rank();
  Status valid =
      firstError({checkRank(root, size(), "root"), checkBuffer(send, count, 1, dtype, "send"),
                  checkBuffer(atRoot ? recv : send, count, 1, dtype, "recv"),
                  nccl::checkNcclReduction(dtype, op), checkDevice(*backend_, send, count, "send"),
                  checkDevice(*backend_, atRoot ? recv : nullptr, count, "recv")});
  return submit(*backend_, plan, {opCall(NcclOpKind::kReduce, send, recv, count, dtype, root, op)},
                std::move(valid), options);
}

Work NcclCommunicator::broadcast(void* buffer, std::size_t count, DataType dtype, int root,
                                 const OpOptions& options) {
  OpPlan plan{"broadcast", pb::BROADCAST, dtype, count, count, root};
  Status valid =
      firstError({checkRank(root, size(), "root"), checkBuffer(buffer, count, 1, dtype, "buffer"),
                  checkDevice(*backend_, buffer, count, "buffer")});
  return submit(*backend_, plan,
                {opCall(NcclOpKind::kBroadcast, buffer, buffer, count, dtype, root)},
                std::move(valid), options);
}

Work NcclCommunicator::allGather(const void* send, void* recv, std::size_t count, DataType dtype,
                                 const OpOptions& options) {
  const auto blocks = static_cast<std::size_t>(size());
  OpPlan plan{"allGather", pb::ALL_GATHER, dtype, count, count * blocks};
  Status valid = firstError({checkBuffer(send, count, 1, dtype, "send"),
                             checkBuffer(recv, count, blocks, dtype, "recv"),
                             checkDevice(*backend_, send, count, "send"),
                             checkDevice(*backend_, recv, count * blocks, "recv")});
  return submit(*backend_, plan, {opCall(NcclOpKind::kAllGather, send, recv, count, dtype)},
                std::move(valid), options);
}

Work NcclCommunicator::allGatherV(const void* send, void* recv,
                                  std::span<const std::size_t> recvCounts,
                                  std::span<const std::size_t> recvDispls, DataType dtype,
                                  const OpOptions& options) {
  const int me = rank(), n = size();
  Status valid = checkVector(recvCounts, recvDispls, n, dtype, "allGatherV");
  const std::size_t own = valid.ok() ? recvCounts[static_cast<std::size_t>(me)] : 0;
  const std::size_t total = valid.ok() ? extentOf(recvCounts, recvDispls) : 0;
  OpPlan plan{"allGatherV", pb::ALL_GATHER_V, dtype, own, total};
  valid = firstError(
      {valid, checkBuffer(send, own, 1, dtype, "send"), checkBuffer(recv, total, 1, dtype, "recv"),
       checkDevice(*backend_, send, own, "send"), checkDevice(*backend_, recv, total, "recv")});
  std::vector<NcclOpCall> calls;
  if (valid.ok()) {
    const void* ownSlot = at(recv, recvDispls[static_cast<std::size_t>(me)], dtype);
    for (int p = 0; p < n; ++p) {
      const auto i = static_cast<std::size_t>(p);
      if (p == me && send == ownSlot) continue;  // in place
      if (own > 0) calls.push_back(opCall(NcclOpKind::kSend, send, nullptr, own, dtype, p));
      if (recvCounts[i] > 0) {
        calls.push_back(opCall(NcclOpKind::kRecv, nullptr,
                               const_cast<char*>(at(recv, recvDispls[i], dtype)), recvCounts[i],
                               dtype, p));
      }
    }
  }
  return submit(*backend_, plan, std::move(calls), std::move(valid), options);
}

Work NcclCommunicator::reduceScatter(const void* send, void* recv, std::size_t count,
                                     DataType dtype, ReduceOp op, const OpOptions& options) {
  const auto blocks = static_cast<std::size_t>(size());
  OpPlan plan{"reduceScatter", pb::REDUCE_SCATTER, dtype, count * blocks, count};
  plan.reduces = true;
  plan.reduceOp = op;
  Status valid = firstError(
      {checkBuffer(send, count, blocks, dtype, "send"), checkBuffer(recv, count, 1, dtype, "recv"),
       nccl::checkNcclReduction(dtype, op), checkDevice(*backend_, send, count * blocks, "send"),
       checkDevice(*backend_, recv, count, "recv")});
  return submit(*backend_, plan,
                {opCall(NcclOpKind::kReduceScatter, send, recv, count, dtype, 0, op)},
                std::move(valid), options);
}

Work NcclCommunicator::allToAll(const void* send, void* recv, std::size_t count, DataType dtype,
                                const OpOptions& options) {
  const auto blocks = static_cast<std::size_t>(size());
  OpPlan plan{"allToAll", pb::ALL_TO_ALL, dtype, count * blocks, count * blocks};
  Status valid = firstError({checkBuffer(send, count, blocks, dtype, "send"),
                             checkBuffer(recv, count, blocks, dtype, "recv"),
                             checkDevice(*backend_, send, count * blocks, "send"),
                             checkDevice(*backend_, recv, count * blocks, "recv")});
  return submit(*backend_, plan, {opCall(NcclOpKind::kAllToAll, send, recv, count, dtype)},
                std::move(valid), options);
}

Work NcclCommunicator::allToAllV(const void* send, std::span<const std::size_t> sendCounts,
                                 std::span<const std::size_t> sendDispls, void* recv,
                                 std::span<const std::size_t> recvCounts,
                                 std::span<const std::size_t> recvDispls, DataType dtype,
                                 const OpOptions& options) {
  const int n = size();
  Status valid = firstError({checkVector(sendCounts, sendDispls, n, dtype, "allToAllV send"),
                             checkVector(recvCounts, recvDispls, n, dtype, "allToAllV recv")});
  const std::size_t sendExtent = valid.ok() ? extentOf(sendCounts, sendDispls) : 0;
  const std::size_t recvExtent = valid.ok() ? extentOf(recvCounts, recvDispls) : 0;
  OpPlan plan{"allToAllV", pb::ALL_TO_ALL_V, dtype, sendExtent, recvExtent};
  valid = firstError({valid, checkBuffer(send, sendExtent, 1, dtype, "send"),
                      checkBuffer(recv, recvExtent, 1, dtype, "recv"),
                      checkDevice(*backend_, send, sendExtent, "send"),
                      checkDevice(*backend_, recv, recvExtent, "recv")});
  std::vector<NcclOpCall> calls;
  if (valid.ok()) {
    for (int p = 0; p < n; ++p) {
      const auto i = static_cast<std::size_t>(p);
      if (sendCounts[i] > 0) {
        calls.push_back(opCall(NcclOpKind::kSend, at(send, sendDispls[i], dtype), nullptr,
                               sendCounts[i], dtype, p));
      }
      if (recvCounts[i] > 0) {
        calls.push_back(opCall(NcclOpKind::kRecv, nullptr,
                               const_cast<char*>(at(recv, recvDispls[i], dtype)), recvCounts[i],
                               dtype, p));
      }
    }
  }
  return submit(*backend_, plan, std::move(calls), std::move(valid), options);
}

Work NcclCommunicator::gather(const void* send, void* recv, std::size_t count, DataType dtype,
                              int root, const OpOptions& options) {
  const auto blocks = static_cast<std::size_t>(size());
  const bool atRoot = root == rank();
  OpPlan plan{"gather", pb::GATHER, dtype, count, atRoot ? count * blocks : 0, root};
  Status valid =
      firstError({checkRank(root, size(), "root"), checkBuffer(send, count, 1, dtype, "send"),
                  checkBuffer(atRoot ? recv : send, count, atRoot ? blocks : 1, dtype, "recv"),
                  checkDevice(*backend_, send, count, "send"),
                  checkDevice(*backend_, atRoot ? recv : nullptr, count * blocks, "recv")});
  return submit(*backend_, plan, {opCall(NcclOpKind::kGather, send, recv, count, dtype, root)},
                std::move(valid), options);
}

Work NcclCommunicator::scatter(const void* send, void* recv, std::size_t count, DataType dtype,
                               int root, const OpOptions& options) {
  const auto blocks = static_cast<std::size_t>(size());
  const bool atRoot = root == rank();
  OpPlan plan{"scatter", pb::SCATTER, dtype, atRoot ? count * blocks : 0, count, root};
  Status valid =
      firstError({checkRank(root, size(), "root"),
                  checkBuffer(atRoot ? send : recv, count, atRoot ? blocks : 1, dtype, "send"),
                  checkBuffer(recv, count, 1, dtype, "recv"),
                  checkDevice(*backend_, atRoot ? send : nullptr, count * blocks, "send"),
                  checkDevice(*backend_, recv, count, "recv")});
  return submit(*backend_, plan, {opCall(NcclOpKind::kScatter, send, recv, count, dtype, root)},
                std::move(valid), options);
}

Work NcclCommunicator::barrier(const OpOptions& options) {
  void* flag = backend_->barrierBuffer();
  return submit(*backend_, OpPlan{"barrier", pb::BARRIER, DataType::kInt32},
                {opCall(NcclOpKind::kAllReduce, flag, flag, 1, DataType::kInt32)}, Status::Ok(),
                options);
}

Work NcclCommunicator::send(const void* buffer, std::size_t count, DataType dtype, int peer,
                            int tag, const OpOptions& options) {
  OpPlan plan{"send", pb::SEND, dtype, count, 0, -1, peer, tag};
  plan.collective = false;
  Status valid =
      firstError({checkRank(peer, size(), "peer"), checkRank(tag, Communicator::kMaxTag + 1, "tag"),
                  checkBuffer(buffer, count, 1, dtype, "send"),
                  checkDevice(*backend_, buffer, count, "send")});
  return submit(*backend_, plan, {opCall(NcclOpKind::kSend, buffer, nullptr, count, dtype, peer)},
                std::move(valid), options);
}

Work NcclCommunicator::recv(void* buffer, std::size_t count, DataType dtype, int peer, int tag,
                            const OpOptions& options) {
  OpPlan plan{"recv", pb::RECV, dtype, 0, count, -1, peer, tag};
  plan.collective = false;
  Status valid =
      firstError({checkRank(peer, size(), "peer"), checkRank(tag, Communicator::kMaxTag + 1, "tag"),
                  checkBuffer(buffer, count, 1, dtype, "recv"),
                  checkDevice(*backend_, buffer, count, "recv")});
  return submit(*backend_, plan, {opCall(NcclOpKind::kRecv, nullptr, buffer, count, dtype, peer)},
                std::move(valid), options);
}

Status NcclCommunicator::health() const {
  return backend_->health();
}

Status NcclCommunicator::revoke(const std::string& reason) {
  return backend_->revoke(reason);
}

void NcclCommunicator::abort(const std::string& reason) {
  backend_->abort(reason);
}

Result<Reconfiguration> NcclCommunicator::reconfigure(const Reconfiguration& agreed,
                                                      const ReconfigureOptions& options) {
  return backend_->reconfigure(agreed, options.timeout);
}

}  // namespace ftcomm
