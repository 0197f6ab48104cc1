// A subgroup of a transport's members seen as a transport of its own: rank r of the subgroup is
// member members[r] of the parent. The node-aware collectives run the registry's algorithms over
// the members of one host, and over one member per host, this way. Messages keep the parent's
// tag: a pair's messages match in order, and every member runs the phases in the same order.
#pragma once

#include <vector>

#include "transport/transport.h"

namespace ftcomm::algorithms {

class SubTransport final : public transport::Transport {
 public:
  // `members`: parent ranks, without repeats; `rank`: this process's index among them.
  SubTransport(transport::Transport& parent, std::vector<int> members, int rank)
      : parent_(parent), members_(std::move(members)), rank_(rank) {}

  int rank() const override { return rank_; }
  // The parent rank of subgroup rank `r`.
  int member(int r) const { return members_[static_cast<std::size_t>(r)]; }
  int size() const override { return static_cast<int>(members_.size()); }
  transport::RequestPtr send(int peer, transport::MessageTag tag, const void* data,
                             std::size_t bytes) override {
    return parent_.send(parentRank(peer), tag, data, bytes);
  }
  transport::RequestPtr recv(int peer, transport::MessageTag tag, void* data,
                             std::size_t capacity) override {
    return parent_.recv(parentRank(peer), tag, data, capacity);
  }
  void progressUntil(transport::Clock::time_point deadline) override {
    parent_.progressUntil(deadline);
  }
  void cancel(const transport::RequestPtr& request) override { parent_.cancel(request); }
  void cancelAll(const Status& why) override { parent_.cancelAll(why); }
  bool settled() const override { return parent_.settled(); }
  Status peerStatus(int peer) const override { return parent_.peerStatus(parentRank(peer)); }
  void failPeer(int peer, const Status& why) override { parent_.failPeer(parentRank(peer), why); }

 private:
  // An index outside the subgroup maps to -1, which the parent refuses as a bad peer.
  int parentRank(int peer) const {
    return peer >= 0 && peer < size() ? members_[static_cast<std::size_t>(peer)] : -1;
  }

  transport::Transport& parent_;
  std::vector<int> members_;
  int rank_;
};

}  // namespace ftcomm::algorithms
