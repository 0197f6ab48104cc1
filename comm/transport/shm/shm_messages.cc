// ShmDomain's messages: sending, matching, delivering, withdrawing (shm_domain.h's protocol).
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "transport/copy_bytes.h"
#include "transport/shm/shm_domain.h"
#include "transport/shm/shm_op.h"

namespace ftcomm::shm {

using transport::MessageTag;
using transport::RequestPtr;
using transport::TransportRequest;

namespace {

// Copies `bytes` from `address` in process `pid` into `into`; errno's value on failure.
int readFromProcess(pid_t pid, void* into, std::uint64_t address, std::size_t bytes) {
  std::size_t done = 0;
  while (done < bytes) {
    iovec local{static_cast<char*>(into) + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(address + done), bytes - done};
    const ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EFAULT;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

bool matches(const Record& record, std::uint16_t channel, std::uint32_t slot) {
  return record.channel == channel && record.slot == slot;
}

}  // namespace

RequestPtr ShmDomain::refused(Status why) const {
  auto request = std::make_shared<TransportRequest>();
  request->complete(std::move(why), 0);
  return request;
}

Status ShmDomain::checkPeer(int peer, MessageTag tag) const {
  if (peer < 0 || peer >= size() || !local(peer)) {
    return invalidArgument("rank " + std::to_string(peer) + " is not a shared-memory peer");
  }
  if (tag.slot > MessageTag::kMaxSlot) {
    return invalidArgument("message slot " + std::to_string(tag.slot) + " exceeds " +
                           std::to_string(MessageTag::kMaxSlot));
  }
  return peers_[static_cast<std::size_t>(peer)].failure;
}

ShmDomain::Op* ShmDomain::newOp(const void* owner, int peer, bool receive) {
  auto* op = new Op();
  op->request = std::make_shared<TransportRequest>();
  op->owner = owner;
  op->peer = peer;
  op->receive = receive;
  ops_.emplace(op->request.get(), op);
  return op;
}

RequestPtr ShmDomain::send(const void* owner, int peer, std::uint16_t channel,
                           std::uint16_t loanChannel, MessageTag tag, const void* data,
                           std::size_t bytes) {
  if (Status s = checkPeer(peer, tag); !s.ok()) return refused(std::move(s));
  Peer& to = peers_[static_cast<std::size_t>(peer)];
  Record record{};
  record.kind = bytes <= geometry_.eagerBytes ? RecordKind::kEager : RecordKind::kRts;
  record.channel = channel;
  record.slot = tag.slot;
  record.signature = tag.signature;
  record.bytes = bytes;
  // An eager message that fits now is done at once: no bookkeeping at all.
  if (record.kind == RecordKind::kEager && to.outbox.empty() &&
      to.out.tryWrite(record, data, bytes)) {
    wakeOwner(to);
    auto request = std::make_shared<TransportRequest>();
    request->complete(Status::Ok(), bytes);
    return request;
  }
  Op* op = newOp(owner, peer, false);
  RequestPtr request = op->request;
  record.address = reinterpret_cast<std::uint64_t>(data);
  record.sendId = nextSendId_++;
  record.loanChannel = loanChannel;
  record.status = loanMark(loanChannel);
  op->record = record;
  op->source = data;
  to.outbox.push_back(op);
  flushOutbox(to);
  return request;
}

RequestPtr ShmDomain::recv(const void* owner, int peer, std::uint16_t channel, MessageTag tag,
                           void* data, std::size_t capacity) {
  Status s = checkPeer(peer, tag);
  if (!s.ok() && (peer < 0 || peer >= size() || !local(peer) || tag.slot > MessageTag::kMaxSlot))
    return refused(std::move(s));
  Peer& from = peers_[static_cast<std::size_t>(peer)];
  // A failed peer's messages that came before their receive (failPeer keeps an exited one's)
  // still match; anything else from it never comes.
  auto early =
      std::find_if(from.unexpected.begin(), from.unexpected.end(),
                   [&](const Unexpected& u) { return matches(u.record, channel, tag.slot); });
  if (!s.ok() && early == from.unexpected.end()) return refused(std::move(s));
  Op* op = newOp(owner, peer, true);
  RequestPtr request = op->request;
  op->record.channel = channel;
  op->record.slot = tag.slot;
  op->record.signature = tag.signature;
  op->data = data;
  op->capacity = capacity;
  if (early != from.unexpected.end()) {
    Unexpected message = std::move(*early);
    from.unexpected.erase(early);
    deliver(peer, op, message.record, message.payload.data());
    return request;
  }
  from.posted.push_back(op);
  drainInbox(peer);
  return request;
}

bool ShmDomain::flushOutbox(Peer& peer) {
  bool moved = false;
  while (!peer.outbox.empty()) {
    Op* op = peer.outbox.front();
    const bool eager = op->record.kind == RecordKind::kEager;
    if (!peer.out.tryWrite(op->record, eager ? op->source : nullptr,
                           eager ? op->record.bytes : 0)) {
      break;
    }
    moved = true;
    peer.outbox.pop_front();
    if (!op->request) {
      destroy(op);  // an answer
    } else if (eager) {
      complete(op, Status::Ok(), op->record.bytes);
      destroy(op);
    } else {
      peer.awaitingFin.emplace(op->record.sendId, op);
    }
  }
  if (moved) wakeOwner(peer);
  return moved;
}

bool ShmDomain::drainInbox(int sender) {
  Peer& from = peers_[static_cast<std::size_t>(sender)];
  bool moved = false;
  while (from.failure.ok()) {
    const Record* next = from.in.peek();
    if (next == nullptr) break;
    moved = true;
    const Record record = *next;
    const auto* payload = reinterpret_cast<const std::byte*>(next + 1);
    switch (record.kind) {
      case RecordKind::kFin:
        finished(sender, record.sendId);
        break;
      case RecordKind::kCancel: {
        auto it = std::find_if(from.unexpected.begin(), from.unexpected.end(), [&](const auto& u) {
          return u.record.kind == RecordKind::kRts && u.record.sendId == record.sendId;
        });
        if (it != from.unexpected.end()) {
          from.unexpected.erase(it);
          answer(sender, RecordKind::kFin, record.sendId, 0);
        }
        break;
      }
      default: {
        auto it = std::find_if(from.posted.begin(), from.posted.end(), [&](const Op* op) {
          return matches(op->record, record.channel, record.slot);
        });
        if (it != from.posted.end()) {
          Op* op = *it;
          from.posted.erase(it);
          deliver(sender, op, record, payload);
        } else {
          Unexpected early{record, {}};
          if (record.kind == RecordKind::kEager) {
            early.payload.resize(record.bytes);
            transport::copyBytes(early.payload.data(), payload, record.bytes);
          }
          from.unexpected.push_back(std::move(early));
        }
      }
    }
    if (!from.failure.ok()) break;  // the ring went with the peer
    from.in.pop(record);
  }
  if (from.in.corrupt() && from.failure.ok()) {
    failPeer(sender, internalError("rank " + std::to_string(sender) +
                                   " wrote a malformed record into shared memory"));
  }
  return moved;
}

void ShmDomain::deliver(int sender, Op* op, const Record& record, const std::byte* payload) {
  Status s = transport::checkMessage(rank_, sender, op->record.signature, op->capacity,
                                     record.signature, record.bytes);
  if (record.kind == RecordKind::kEager) {
    if (s.ok() && record.bytes != 0) transport::copyBytes(op->data, payload, record.bytes);
  } else {
    if (s.ok() && record.bytes != 0) {
      s = readPeer(sender, op->data, record.address, record.bytes,
                   Loan{record.loanChannel, record.status});
      if (s.code() == StatusCode::kPeerFailed) {  // the peer is gone, and so is its ring
        complete(op, std::move(s), 0);
        destroy(op);
        return;
      }
    }
    answer(sender, RecordKind::kFin, record.sendId, s.ok() ? 0 : 1);
  }
  complete(op, std::move(s), record.bytes);
  destroy(op);
}

void ShmDomain::answer(int peer, RecordKind kind, std::uint64_t sendId, std::uint32_t status) {
  Peer& to = peers_[static_cast<std::size_t>(peer)];
  Record record{};
  record.kind = kind;
  record.sendId = sendId;
  record.status = status;
  if (to.outbox.empty() && to.out.tryWrite(record, nullptr, 0)) {
    wakeOwner(to);
    return;
  }
  auto* op = new Op();
  op->peer = peer;
  op->record = record;
  to.outbox.push_back(op);
}

void ShmDomain::finished(int peer, std::uint64_t sendId) {
  Peer& to = peers_[static_cast<std::size_t>(peer)];
  auto it = to.awaitingFin.find(sendId);
  if (it == to.awaitingFin.end()) return;
  Op* op = it->second;
  to.awaitingFin.erase(it);
  complete(op, Status::Ok(), op->record.bytes);
  op->request->setLanding(false);
  destroy(op);
}

void ShmDomain::complete(Op* op, Status status, std::size_t bytes) {
  const std::size_t counted = status.ok() ? bytes : 0;
  op->request->complete(std::move(status), counted);
}

void ShmDomain::destroy(Op* op) {
  if (op->request) ops_.erase(op->request.get());
  delete op;
}

Status ShmDomain::readPeer(int peer, void* into, std::uint64_t address, std::size_t bytes,
                           Loan loan) {
  if (peer < 0 || peer >= size() || !local(peer)) {
    return invalidArgument("rank " + std::to_string(peer) + " is not a shared-memory peer");
  }
  Peer& from = peers_[static_cast<std::size_t>(peer)];
  if (!from.failure.ok()) return from.failure;
  Status read = readMember(peer, into, address, bytes, loan);
  if (read.code() == StatusCode::kPeerFailed) failPeer(peer, read);
  return read;
}

Status ShmDomain::readMember(int member, void* into, std::uint64_t address, std::size_t bytes,
                             Loan loan, Copy copy) const {
  const Peer& lender = peers_[static_cast<std::size_t>(member)];
  if (const transport::PeerView view = viewMember(member, address, bytes); view.data != nullptr) {
    copy(into, view.data, bytes);
    return checkLoan(member, loan);
  }
  const int error = readFromProcess(lender.pid, into, address, bytes);
  if (error == 0) return checkLoan(member, loan);
  if (error == ESRCH) {
    return Status(StatusCode::kPeerFailed,
                  "rank " + std::to_string(member) + " failed: its process exited during a read");
  }
  // A lender that took the buffer back may have freed it too (EFAULT): the loan failed, which is
  // no internal error.
  if (Status taken = checkLoan(member, loan); !taken.ok()) return taken;
  return internalError("reading " + std::to_string(bytes) + " bytes from rank " +
                       std::to_string(member) + ": " + std::strerror(error));
}

transport::PeerView ShmDomain::viewMember(int member, std::uint64_t address,
                                          std::size_t bytes) const {
  const Peer& lender = peers_[static_cast<std::size_t>(member)];
  return lender.memory ? lender.memory->find(address, bytes) : transport::PeerView{};
}

Status ShmDomain::checkLoan(int member, Loan loan) const {
  // Whatever the copy saw of writes made after the lender took the buffer back, the count it
  // raised before them is seen after it (reclaimLoans).
  std::atomic_thread_fence(std::memory_order_acquire);
  const Peer& lender = peers_[static_cast<std::size_t>(member)];
  const auto& reclaimed = lender.segment.header().reclaimed[loan.channel % kLoanChannels];
  if (reclaimed.load(std::memory_order_relaxed) == loan.mark) return Status::Ok();
  return Status(StatusCode::kRevoked, "rank " + std::to_string(member) +
                                          " took back the buffer being read (its side of the "
                                          "operation failed): what was read may be anything");
}

std::uint32_t ShmDomain::loanMark(std::uint16_t channel) const {
  return own_.header().reclaimed[channel % kLoanChannels].load(std::memory_order_relaxed);
}

void ShmDomain::reclaimLoans(std::uint16_t channel) {
  // A full barrier: the count is visible before anything the caller writes into the buffers
  // once it has them back (readMember looks at it after its copy).
  own_.header().reclaimed[channel % kLoanChannels].fetch_add(1, std::memory_order_seq_cst);
}

bool ShmDomain::cancel(const RequestPtr& request) {
  auto it = ops_.find(request.get());
  if (it == ops_.end()) return false;
  withdraw(it->second, cancelled("cancelled"));
  return true;
}

void ShmDomain::withdraw(Op* op, const Status& why) {
  Peer& peer = peers_[static_cast<std::size_t>(op->peer)];
  if (op->withdrawn) return;
  auto erase = [op](std::deque<Op*>& queue) {
    auto it = std::find(queue.begin(), queue.end(), op);
    if (it == queue.end()) return false;
    queue.erase(it);
    return true;
  };
  if (erase(op->receive ? peer.posted : peer.outbox)) {
    complete(op, why, 0);
    destroy(op);
    return;
  }
  // A kRts the peer has seen: it may be reading the buffer now; ask it not to, and keep the
  // buffer until it answers (or dies).
  complete(op, why, 0);
  op->request->setLanding(true);
  op->withdrawn = true;
  answer(op->peer, RecordKind::kCancel, op->record.sendId, 0);
}

void ShmDomain::cancelAll(const void* owner, const Status& why) {
  std::vector<Op*> mine;
  for (auto& [request, op] : ops_) {
    if (op->owner == owner) mine.push_back(op);
  }
  for (Op* op : mine) withdraw(op, why);
}

void ShmDomain::detach(const void* owner) {
  cancelAll(owner, cancelled("the transport was closed"));
  for (auto& [request, op] : ops_) {
    if (op->owner == owner) op->owner = nullptr;
  }
}

bool ShmDomain::settled(const void* owner) const {
  return std::none_of(ops_.begin(), ops_.end(), [owner](const auto& entry) {
    return entry.second->owner == owner && entry.second->withdrawn;
  });
}

}  // namespace ftcomm::shm
