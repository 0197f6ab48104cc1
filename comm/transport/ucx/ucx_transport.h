// The Transport of one communicator epoch over UCX tag matching. The 64-bit UCX tag holds the
// channel (16 bits), the sender's rank (20 bits) and the slot (28 bits); a receive matches all
// 64, so it takes only its sender's messages. Each pending operation is tracked, so that when a
// peer fails, its pending receives (which UCX itself never completes: a receive is not tied to
// an endpoint) are completed with PeerFailed and cancelled.
//
// Thread-safety: none (see transport.h).
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "transport/transport.h"
#include "transport/ucx/ucx_worker.h"

namespace ftcomm::ucx {

class UcxTransport final : public transport::Transport {
 public:
  static constexpr int kMaxRanks = 1 << 20;

  // Connects to the workers of all members (addresses by rank; this process's own among them).
  // `channels`, when given, holds each member's receive channel for this communicator: a
  // message to rank r carries channels[r], and this rank receives on channels[rank]. Each
  // process picks its own channels, unique within the process only, so no agreement among
  // members is needed (communicators may be created concurrently in any order). Without it,
  // MessageTag::channel is used both ways.
  static Result<std::unique_ptr<UcxTransport>> connect(std::shared_ptr<UcxWorker> worker, int rank,
                                                       const std::vector<std::string>& addresses,
                                                       std::vector<std::uint16_t> channels = {});
  ~UcxTransport() override;  // completes pending requests with Cancelled

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(peers_.size()); }
  transport::RequestPtr send(int peer, transport::MessageTag tag, const void* data,
                             std::size_t bytes) override;
  transport::RequestPtr recv(int peer, transport::MessageTag tag, void* data,
                             std::size_t capacity) override;
  void progressUntil(transport::Clock::time_point deadline) override;
  void cancel(const transport::RequestPtr& request) override;
  void cancelAll(const Status& why) override;
  bool settled() const override;
  Status peerStatus(int peer) const override;
  void failPeer(int peer, const Status& why) override;

  struct PendingOp;  // one UCX request in flight (defined in the .cc)

 private:
  UcxTransport(std::shared_ptr<UcxWorker> worker, int rank)
      : worker_(std::move(worker)), rank_(rank) {}
  // A request that could not start; done at once.
  static transport::RequestPtr refused(Status why);
  Status checkPeer(int peer, transport::MessageTag tag) const;
  // Registers `op`, posts it to UCX through `post`, and finishes it if it completed at once.
  template <typename Post>
  transport::RequestPtr start(PendingOp* op, Post&& post);
  std::uint64_t ucxTag(int sender, int receiver, transport::MessageTag tag) const;
  PendingOp* newOp(int peer, bool receive, transport::MessageTag tag, void* data,
                   std::size_t bytes);
  Status checkReceived(const PendingOp& op, std::size_t bytes) const;
  void withdraw(PendingOp* op, const Status& why);
  // Completes `op` once UCX is done with every part of it.
  void finish(PendingOp* op);
  friend struct OpCallbacks;

  struct Peer {
    std::shared_ptr<UcxEndpoint> endpoint;
    std::uint64_t listenToken = 0;
    Status failure;  // the first failure seen, from UCX or from failPeer()
  };

  std::shared_ptr<UcxWorker> worker_;
  int rank_ = 0;
  std::vector<Peer> peers_;
  std::vector<std::uint16_t> channels_;  // by rank; empty: MessageTag::channel
  std::unordered_set<PendingOp*> pending_;
  std::uint64_t completions_ = 0;
};

}  // namespace ftcomm::ucx
