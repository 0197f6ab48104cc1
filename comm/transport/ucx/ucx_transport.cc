#include "transport/ucx/ucx_transport.h"

#include "transport/ucx/ucx_pending_op.h"

namespace ftcomm::ucx {

using transport::MessageTag;
using transport::RequestPtr;
using transport::TransportRequest;

Result<std::unique_ptr<UcxTransport>> UcxTransport::connect(
    std::shared_ptr<UcxWorker> worker, int rank, const std::vector<std::string>& addresses,
    std::vector<std::uint16_t> channels) {
  if (addresses.empty() || static_cast<int>(addresses.size()) > kMaxRanks) {
    return invalidArgument("UCX transport: " + std::to_string(addresses.size()) +
                           " members; the limit is " + std::to_string(kMaxRanks));
  }
  if (rank < 0 || rank >= static_cast<int>(addresses.size())) {
    return invalidArgument("UCX transport: rank " + std::to_string(rank) + " outside 0.." +
                           std::to_string(addresses.size() - 1));
  }
  if (addresses[static_cast<std::size_t>(rank)] != worker->address()) {
    return invalidArgument("UCX transport: the address of rank " + std::to_string(rank) +
                           " is not this process's worker");
  }
  if (!channels.empty() && channels.size() != addresses.size()) {
    return invalidArgument("UCX transport: " + std::to_string(channels.size()) + " channels for " +
                           std::to_string(addresses.size()) + " members");
  }
  std::unique_ptr<UcxTransport> self(new UcxTransport(std::move(worker), rank));
  self->channels_ = std::move(channels);
  self->peers_.resize(addresses.size());
  for (std::size_t peer = 0; peer < addresses.size(); ++peer) {
    auto endpoint = self->worker_->endpoint(addresses[peer]);
    if (!endpoint.ok()) {
      return Status(endpoint.status().code(), "connecting to rank " + std::to_string(peer) + ": " +
                                                  endpoint.status().message());
    }
    Peer& p = self->peers_[peer];
    p.endpoint = std::move(endpoint).value();
    p.failure = p.endpoint->failure();
    UcxTransport* raw = self.get();
    const int rankOfPeer = static_cast<int>(peer);
    p.listenToken = p.endpoint->listen(
        [raw, rankOfPeer](const Status& why) { raw->failPeer(rankOfPeer, why); });
  }
  return self;
}

UcxTransport::~UcxTransport() {
  // Stop hearing about endpoint errors first: nothing below may call back into this object.
  for (Peer& p : peers_) {
    if (p.endpoint) p.endpoint->unlisten(p.listenToken);
  }
  // Orphan the operations in flight: their callbacks then only free them.
  for (PendingOp* op : pending_) {
    op->owner = nullptr;
    if (op->receive) {
      op->orphanedFrom = worker_.get();  // counted until UCX lets go (the worker destructor)
      worker_->orphanReceive(+1);
    }
    op->request->complete(cancelled("the transport was closed"), 0);
    op->cancelReceives(worker_->handle());
  }
  pending_.clear();
  // Let cancelled receives report back; sends end when their endpoint flushes or closes.
  const auto deadline = Clock::now() + std::chrono::milliseconds(200);
  while (Clock::now() < deadline && worker_->progress()) {
  }
}

RequestPtr UcxTransport::refused(Status why) {
  auto request = std::make_shared<TransportRequest>();
  request->complete(std::move(why), 0);
  return request;
}

Status UcxTransport::checkPeer(int peer, MessageTag tag) const {
  if (peer < 0 || peer >= size()) {
    return invalidArgument("peer rank " + std::to_string(peer) + " outside 0.." +
                           std::to_string(size() - 1));
  }
  if (tag.slot > MessageTag::kMaxSlot) {
    return invalidArgument("message slot " + std::to_string(tag.slot) + " exceeds " +
                           std::to_string(MessageTag::kMaxSlot));
  }
  return peers_[static_cast<std::size_t>(peer)].failure;
}

std::uint64_t UcxTransport::ucxTag(int sender, int receiver, MessageTag tag) const {
  const std::uint16_t channel =
      channels_.empty() ? tag.channel : channels_[static_cast<std::size_t>(receiver)];
  return (std::uint64_t{channel} << 48) |
         (std::uint64_t(static_cast<std::uint32_t>(sender)) << 28) | tag.slot;
}

// A template, not std::function: the posting lambda's captures would cost a heap allocation per
// message. post(part index, params) posts one part.
template <typename Post>
RequestPtr UcxTransport::start(PendingOp* op, Post&& post) {
  RequestPtr result = op->request;
  pending_.insert(op);
  op->inCall = true;
  for (int i = 0; i < op->partCount; ++i) {
    UcxPart& part = op->parts[i];
    part.op = op;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL | UCP_OP_ATTR_FIELD_DATATYPE;
    param.user_data = &part;
    if (op->receive) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
      param.cb.recv = &OpCallbacks::received;
      param.recv_info.tag_info = &op->info[i];
    } else {
      param.cb.send = &OpCallbacks::sent;
    }
    param.datatype = op->split() ? ucp_dt_make_contig(1) : ucp_dt_make_iov();
    void* request = post(i, param);
    if (UCS_PTR_IS_ERR(request) || request == nullptr) {
      // Failed at once (NULL does not come back under NO_IMM_CMPL): UCX calls no callback.
      if (!part.done) {
        part.done = true;
        part.status = request == nullptr ? UCS_ERR_NO_MESSAGE : UCS_PTR_STATUS(request);
        ++op->partsDone;
      }
    } else {
      part.ucxRequest = request;
    }
  }
  op->inCall = false;
  if (op->partsDone == op->partCount) {
    finish(op);
    return result;
  }
  bool failed = false;
  for (int i = 0; i < op->partCount; ++i)
    failed |= op->parts[i].done && op->parts[i].status != UCS_OK;
  // The cancelled part's callback may finish (and free) the op: nothing may touch it after.
  if (failed) op->cancelReceives(worker_->handle());
  return result;
}

RequestPtr UcxTransport::send(int peer, MessageTag tag, const void* data, std::size_t bytes) {
  if (Status s = checkPeer(peer, tag); !s.ok()) return refused(std::move(s));
  auto* op = newOp(peer, false, tag, const_cast<void*>(data), bytes);
  op->header.signature = tag.signature;
  ucp_ep_h ep = peers_[static_cast<std::size_t>(peer)].endpoint->handle();
  const std::uint64_t ucx = ucxTag(rank_, peer, tag);
  return start(op, [&](int part, ucp_request_param_t& param) {
    if (!op->split()) return ucp_tag_send_nbx(ep, op->iov, bytes > 0 ? 2 : 1, ucx, &param);
    return part == 0 ? ucp_tag_send_nbx(ep, &op->header, sizeof(WireHeader), ucx, &param)
                     : ucp_tag_send_nbx(ep, op->data, bytes, ucx, &param);
  });
}

RequestPtr UcxTransport::recv(int peer, MessageTag tag, void* data, std::size_t capacity) {
  const std::uint64_t ucx = ucxTag(peer, rank_, tag);
  ucp_worker_h worker = worker_->handle();
  if (Status s = checkPeer(peer, tag); !s.ok()) {
    // A failed peer's message that came before its receive (it finished and left, ahead of
    // this member) is still received; nothing else from it ever comes.
    ucp_tag_recv_info_t arrived;
    const bool addressed = peer >= 0 && peer < size() && tag.slot <= MessageTag::kMaxSlot;
    if (!addressed || ucp_tag_probe_nb(worker, ucx, ~std::uint64_t{0}, 0, &arrived) == nullptr)
      return refused(std::move(s));
  }
  auto* op = newOp(peer, true, tag, data, capacity);
  return start(op, [&](int part, ucp_request_param_t& param) {
    if (!op->split())
      return ucp_tag_recv_nbx(worker, op->iov, capacity > 0 ? 2 : 1, ucx, ~std::uint64_t{0},
                              &param);
    return part == 0 ? ucp_tag_recv_nbx(worker, &op->header, sizeof(WireHeader), ucx,
                                        ~std::uint64_t{0}, &param)
                     : ucp_tag_recv_nbx(worker, op->data, capacity, ucx, ~std::uint64_t{0}, &param);
  });
}

UcxTransport::PendingOp* UcxTransport::newOp(int peer, bool receive, MessageTag tag, void* data,
                                             std::size_t bytes) {
  auto* op = new PendingOp();
  op->owner = this;
  op->request = std::make_shared<TransportRequest>();
  op->peer = peer;
  op->receive = receive;
  op->bytes = bytes;
  op->signature = tag.signature;
  op->iov[0] = {&op->header, sizeof(WireHeader)};
  op->iov[1] = {data, bytes};
  op->data = data;
  op->partCount = travelsSplit(tag.signature, bytes) ? 2 : 1;
  return op;
}

// Ok, or why a received message does not belong in this receive (transport.h).
Status UcxTransport::checkReceived(const PendingOp& op, std::size_t bytes) const {
  const std::string who = "rank " + std::to_string(op.peer);
  if (bytes < sizeof(WireHeader) || op.header.magic != WireHeader::kMagic) {
    return Status(StatusCode::kMismatch, "a malformed message from " + who + " (" +
                                             std::to_string(bytes) + " bytes, no ftcomm header)");
  }
  return transport::checkMessage(rank_, op.peer, op.signature, op.bytes, op.header.signature,
                                 bytes - sizeof(WireHeader));
}

void UcxTransport::finish(PendingOp* op) {
  // The message's status is its first failed part's; its length, the header and the data.
  ucs_status_t status = UCS_OK;
  for (int i = 0; i < op->partCount; ++i) {
    if (op->parts[i].status != UCS_OK && status == UCS_OK) status = op->parts[i].status;
  }
  if (status == UCS_ERR_CANCELED) {
    for (int i = 0; i < op->partCount; ++i) {
      const ucs_status_t s = op->parts[i].status;
      if (s != UCS_OK && s != UCS_ERR_CANCELED) status = s;  // the cause, not its consequence
    }
  }
  std::size_t bytes = op->parts[0].bytes;
  if (op->split() && op->receive && bytes == sizeof(WireHeader)) bytes += op->parts[1].bytes;
  const std::string who = "rank " + std::to_string(op->peer);
  switch (status) {
    case UCS_OK:
      if (!op->receive) {
        op->request->complete(Status::Ok(), op->bytes);
      } else if (Status s = checkReceived(*op, bytes); !s.ok()) {
        op->request->complete(std::move(s), 0);
      } else {
        op->request->complete(Status::Ok(), bytes - sizeof(WireHeader));
      }
      break;
    case UCS_ERR_MESSAGE_TRUNCATED:
      op->request->complete(
          Status(StatusCode::kMismatch, "a message from " + who + " is longer than the " +
                                            std::to_string(op->bytes) + "-byte receive buffer of " +
                                            transport::describe(op->signature)),
          0);
      break;
    case UCS_ERR_CANCELED:
      op->request->complete(cancelled("cancelled"), 0);
      break;
    default:
      // Every other UCX error on a request means its peer is unreachable.
      failPeer(op->peer, Status(StatusCode::kPeerFailed, who + ": " + ucs_status_string(status)));
      op->request->complete(peers_[static_cast<std::size_t>(op->peer)].failure, 0);
      break;
  }
  pending_.erase(op);
  op->freeRequests();
  delete op;
  ++completions_;
}

void UcxTransport::progressUntil(transport::Clock::time_point deadline) {
  const std::uint64_t before = completions_;
  while (true) {
    worker_->progress();
    if (completions_ != before || Clock::now() >= deadline) return;
    worker_->waitForEvents(deadline);
  }
}

void UcxTransport::cancel(const RequestPtr& request) {
  for (PendingOp* op : pending_) {
    if (op->request == request) {
      withdraw(op, cancelled("cancelled"));
      return;
    }
  }
}

void UcxTransport::cancelAll(const Status& why) {
  std::vector<PendingOp*> all(pending_.begin(), pending_.end());
  for (PendingOp* op : all) withdraw(op, why);
}

// Completes `op` now. A receive is cancelled in UCX (the callback that follows finds it done and
// frees it); a send cannot be recalled, and ends when the network is done with it.
void UcxTransport::withdraw(PendingOp* op, const Status& why) {
  if (op->request->done()) return;
  op->request->complete(why, 0);
  ++completions_;
  if (op->receive) {
    op->request->setLanding(true);  // until UCX calls back: the cancel may come too late
    op->cancelReceives(worker_->handle());
  }
}

bool UcxTransport::settled() const {
  // A receive stays pending here until UCX called it back, withdrawn or not.
  for (const PendingOp* op : pending_) {
    if (op->receive) return false;
  }
  return true;
}

Status UcxTransport::peerStatus(int peer) const {
  if (peer < 0 || peer >= size())
    return invalidArgument("peer rank " + std::to_string(peer) + " out of range");
  return peers_[static_cast<std::size_t>(peer)].failure;
}

void UcxTransport::failPeer(int peer, const Status& why) {
  if (peer < 0 || peer >= size()) return;
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  if (!p.failure.ok()) return;
  p.failure =
      Status(StatusCode::kPeerFailed, "rank " + std::to_string(peer) + " failed: " + why.message());
  // The process behind the endpoint is gone for every transport that shares it (its listener
  // here returns at once, the failure being set), and the worker then closes it forcibly
  // instead of trying to flush to a dead peer.
  if (p.endpoint) p.endpoint->fail(p.failure);
  // UCX never completes a receive because its sender died: complete ours and cancel theirs. The
  // cancellation comes back through the callback, which finds the request already done.
  std::vector<PendingOp*> affected;
  for (PendingOp* op : pending_) {
    if (op->peer == peer) affected.push_back(op);
  }
  for (PendingOp* op : affected) withdraw(op, p.failure);
}

}  // namespace ftcomm::ucx
