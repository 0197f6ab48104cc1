#include "transport/shm/shm_transport.h"

#include <sched.h>

#include "transport/shm/mappable_memory.h"

namespace ftcomm::shm {

using transport::MessageTag;
using transport::RequestPtr;

Result<std::unique_ptr<ShmTransport>> ShmTransport::create(std::shared_ptr<ShmDomain> domain,
                                                           int rank, std::vector<int> members,
                                                           std::vector<std::uint16_t> channels,
                                                           std::unique_ptr<Transport> remote) {
  const int size = static_cast<int>(members.size());
  if (rank < 0 || rank >= size || channels.size() != members.size()) {
    return invalidArgument("shared-memory transport: rank " + std::to_string(rank) + " of " +
                           std::to_string(size) + " with " + std::to_string(channels.size()) +
                           " channels");
  }
  for (int r = 0; r < size; ++r) {
    const int m = members[static_cast<std::size_t>(r)];
    if (m < 0 || m >= domain->size()) return invalidArgument("shared-memory transport: bad member");
    if (!domain->local(m) && remote == nullptr) {
      return invalidArgument("shared-memory transport: rank " + std::to_string(r) +
                             " is on another host and there is no UCX transport for it");
    }
  }
  if (members[static_cast<std::size_t>(rank)] != domain->rank()) {
    return invalidArgument("shared-memory transport: rank " + std::to_string(rank) +
                           " is not this process");
  }
  std::unique_ptr<ShmTransport> self(new ShmTransport());
  self->domain_ = std::move(domain);
  self->rank_ = rank;
  self->members_ = std::move(members);
  self->channels_ = std::move(channels);
  self->remote_ = std::move(remote);
  return self;
}

ShmTransport::~ShmTransport() {
  domain_->detach(this);
}

bool ShmTransport::viaShm(int peer) const {
  return peer < 0 || peer >= size() || domain_->local(members_[static_cast<std::size_t>(peer)]);
}

RequestPtr ShmTransport::send(int peer, MessageTag tag, const void* data, std::size_t bytes) {
  if (!viaShm(peer)) return remote_->send(peer, tag, data, bytes);
  const int member = peer >= 0 && peer < size() ? members_[static_cast<std::size_t>(peer)] : -1;
  const std::uint16_t channel = member < 0 ? 0 : channels_[static_cast<std::size_t>(peer)];
  return domain_->send(this, member, channel, channels_[static_cast<std::size_t>(rank_)], tag, data,
                       bytes);
}

RequestPtr ShmTransport::recv(int peer, MessageTag tag, void* data, std::size_t capacity) {
  if (!viaShm(peer)) return remote_->recv(peer, tag, data, capacity);
  const int member = peer >= 0 && peer < size() ? members_[static_cast<std::size_t>(peer)] : -1;
  return domain_->recv(this, member, channels_[static_cast<std::size_t>(rank_)], tag, data,
                       capacity);
}

void ShmTransport::progressUntil(transport::Clock::time_point deadline) {
  while (transport::Clock::now() < deadline) {
    if (domain_->progress()) return;
    if (remote_) {
      remote_->progressUntil(
          std::min(deadline, transport::Clock::now() + std::chrono::microseconds(100)));
    } else {
      ::sched_yield();
    }
  }
}

void ShmTransport::cancel(const RequestPtr& request) {
  if (!domain_->cancel(request) && remote_) remote_->cancel(request);
}

void ShmTransport::cancelAll(const Status& why) {
  domain_->cancelAll(this, why);
  if (remote_) remote_->cancelAll(why);
}

bool ShmTransport::settled() const {
  return domain_->settled(this) && (!remote_ || remote_->settled());
}

bool ShmTransport::canReadPeer(int peer) const {
  return peer >= 0 && peer < size() && viaShm(peer);
}

Status ShmTransport::readPeer(int peer, void* into, std::uint64_t address, std::size_t bytes,
                              std::uint32_t mark) {
  if (!canReadPeer(peer)) return Transport::readPeer(peer, into, address, bytes, mark);
  const auto at = static_cast<std::size_t>(peer);
  return domain_->readPeer(members_[at], into, address, bytes, shm::Loan{channels_[at], mark});
}

transport::PeerView ShmTransport::viewPeer(int peer, std::uint64_t address, std::size_t bytes) {
  if (!canReadPeer(peer) || !peerStatus(peer).ok()) return {};
  return domain_->viewMember(members_[static_cast<std::size_t>(peer)], address, bytes);
}

Status ShmTransport::checkPeerLoan(int peer, std::uint32_t mark) const {
  if (!canReadPeer(peer)) return Transport::checkPeerLoan(peer, mark);
  const auto at = static_cast<std::size_t>(peer);
  return domain_->checkLoan(members_[at], shm::Loan{channels_[at], mark});
}

bool ShmTransport::mappedForPeers(const void* memory, std::size_t bytes) const {
  return MappableMemory::process().listed(memory, bytes);
}

std::uint32_t ShmTransport::loanMark() const {
  return domain_->loanMark(channels_[static_cast<std::size_t>(rank_)]);
}

void ShmTransport::reclaimLoans() {
  domain_->reclaimLoans(channels_[static_cast<std::size_t>(rank_)]);
}

Status ShmTransport::peerStatus(int peer) const {
  if (peer < 0 || peer >= size()) {
    return invalidArgument("peer rank " + std::to_string(peer) + " outside 0.." +
                           std::to_string(size() - 1));
  }
  if (!viaShm(peer)) return remote_->peerStatus(peer);
  return domain_->peerStatus(members_[static_cast<std::size_t>(peer)]);
}

void ShmTransport::failPeer(int peer, const Status& why) {
  if (peer < 0 || peer >= size()) return;
  if (!viaShm(peer)) {
    remote_->failPeer(peer, why);
    return;
  }
  domain_->failPeer(members_[static_cast<std::size_t>(peer)], why);
}

}  // namespace ftcomm::shm
