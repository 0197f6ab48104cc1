// One communicator's Transport over the shared-memory domain of its epoch: members on this host
// are reached through shared memory, the others (when there are any) through UCX. The choice is
// made per peer when the epoch comes up and is the same on both sides of every pair (both
// derive it from the same offers in the rendezvous).
//
// Thread-safety: none (see transport.h).
#pragma once

#include <memory>
#include <vector>

#include "transport/shm/shm_domain.h"
#include "transport/transport.h"

namespace ftcomm::shm {

class ShmTransport final : public transport::Transport {
 public:
  // `members`: the domain member of each rank of this communicator; `channels`: each rank's
  // receive channel; `remote`: the UCX transport for members that are not local (may be null
  // when every member is).
  static Result<std::unique_ptr<ShmTransport>> create(std::shared_ptr<ShmDomain> domain, int rank,
                                                      std::vector<int> members,
                                                      std::vector<std::uint16_t> channels,
                                                      std::unique_ptr<Transport> remote);
  ~ShmTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  transport::RequestPtr send(int peer, transport::MessageTag tag, const void* data,
                             std::size_t bytes) override;
  transport::RequestPtr recv(int peer, transport::MessageTag tag, void* data,
                             std::size_t capacity) override;
  void progressUntil(transport::Clock::time_point deadline) override;
  void cancel(const transport::RequestPtr& request) override;
  void cancelAll(const Status& why) override;
  bool settled() const override;
  bool canReadPeer(int peer) const override;
  Status readPeer(int peer, void* into, std::uint64_t address, std::size_t bytes,
                  std::uint32_t mark) override;
  transport::PeerView viewPeer(int peer, std::uint64_t address, std::size_t bytes) override;
  Status checkPeerLoan(int peer, std::uint32_t mark) const override;
  bool mappedForPeers(const void* memory, std::size_t bytes) const override;
  std::uint32_t loanMark() const override;
  void reclaimLoans() override;
  Status peerStatus(int peer) const override;
  void failPeer(int peer, const Status& why) override;

 private:
  ShmTransport() = default;
  bool viaShm(int peer) const;

  std::shared_ptr<ShmDomain> domain_;
  int rank_ = 0;
  std::vector<int> members_;
  std::vector<std::uint16_t> channels_;
  std::unique_ptr<Transport> remote_;
};

}  // namespace ftcomm::shm
