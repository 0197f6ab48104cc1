// Collectives that read their inputs straight out of the peers' buffers (Transport::readPeer:
// cross-memory attach between processes on one host) instead of sending them: one copy per byte
// moved, no staging, and each rank reduces its own slice from every peer's input at once.
//
// Protocol, the same for all of them: every rank tells every peer where its send and receive
// buffers are (a small message), then runs `rounds` rounds; after each round's work it tells
// every peer it is done and waits until every peer is, so a round reads only what the previous
// one finished. The last notice also means that nobody reads this rank's buffers any more: only
// then does the operation complete and the caller get its buffers back. A peer that dies fails
// the read or the wait with PeerFailed; a peer that runs another algorithm fails the notice check
// (Mismatch), so nothing is read from an address that is not one. A rank whose operation fails
// gives its buffers back before the peers are done (the engine reclaims its loans first); a
// read that ends after that fails (Revoked) instead of returning what the caller wrote since.
//
// Thread-safety: none; the progress thread owns a task.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/collective_task.h"

namespace ftcomm::algorithms {

class DirectTask : public TaskBase {
 public:
  DirectTask(transport::Transport& transport, const CollectiveArgs& args, int rounds);
  Result<bool> advance() final;

 protected:
  // Round `round`'s reads and reductions; every peer finished the rounds before it.
  virtual Status work(int round) = 0;
  // Every peer finished every round: nothing reads this rank's buffers any more.
  virtual Result<bool> finish() { return true; }
  // The address this rank's notices give as its receive buffer (peerRecv on the other side).
  virtual const void* published() const { return args_.recv; }

  Status read(int peer, void* into, std::uint64_t address, std::size_t bytes) {
    return bytes == 0 ? Status::Ok()
                      : transport_.readPeer(peer, into, address, bytes, notice(0, peer).mark);
  }
  // Writes this rank's `own` bytes reduced with every peer's input [offset, offset + bytes) of
  // its send buffer into `into`, in cache-sized pieces, read in place where the peer's buffer is
  // mapped here (Transport::viewPeer), else through a scratch buffer. The first
  // peer's piece is reduced with `own` straight into `into`, so `own` is never copied first.
  // `own` may be `into`. An average comes out divided (each piece right after its sum, while
  // it is in cache): the tasks' results need no pass of finishReduction.
  Status foldPeerInputs(std::byte* into, const std::byte* own, std::uint64_t offset,
                        std::size_t bytes);
  std::uint64_t peerSend(int peer) const { return notice(0, peer).send; }
  std::uint64_t peerRecv(int peer) const { return notice(0, peer).recv; }

  const int n_;
  const int rank_;

 private:
  struct Notice {
    std::uint64_t magic = 0;
    std::uint64_t send = 0;
    std::uint64_t recv = 0;
    std::uint32_t mark = 0;  // Transport::loanMark, which the peer's reads of these check
    std::uint32_t unused = 0;
  };
  static std::uint64_t magic(int stage) { return 0x6674646972656374ull ^ std::uint64_t(stage); }
  const Notice& notice(int stage, int peer) const {
    return inbox_[static_cast<std::size_t>(stage * n_ + peer)];
  }
  void tellPeers(int stage);
  Status checkStage(int stage) const;

  // Divides `bytes` of sums by the rank count where the operation is an average.
  Status averaged(std::byte* sums, std::size_t bytes) const;

  std::unique_ptr<std::byte[]> scratch_;    // foldPeerInputs'; uninitialized
  std::vector<transport::PeerView> views_;  // foldPeerInputs': the peers' inputs mapped here
  const int rounds_;
  int stage_ = -1;  // the notices waited for: 0 the addresses, r the end of round r-1
  std::vector<Notice> inbox_, outbox_;
  std::vector<transport::RequestPtr> recvs_, sends_;  // by stage, then peer
};

}  // namespace ftcomm::algorithms
