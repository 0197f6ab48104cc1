// The transport interface: nonblocking point-to-point messages among the members of one
// communicator epoch. It is all that collective algorithms see (as Gloo's pair.h and UCC's TLs):
// an algorithm posts sends and receives by peer rank and tag, then drives progress until its
// requests are done. UCX (other hosts, or every peer under FTCOMM_TRANSPORT=ucx) and shared
// memory (peers on this host, shm/) implement it.
//
// Matching: a receive names its sender and a MessageTag; messages with the same sender and tag
// match in the order they were sent. The channel separates communicator epochs (the facade gives
// each epoch its own), the slot separates operations within one (a collective's sequence number
// and step, or a point-to-point tag).
//
// Headers: every message carries the sender's OpSignature (op_signature.h) ahead of its data; a
// receive completes with Mismatch when the signature disagrees with its own, when a collective's
// message does not fill the receive exactly, or when any message is longer than the buffer.
//
// Failure: the first error seen on a peer (a transport error, or failPeer() from the rendezvous)
// completes every pending request that involves that peer with PeerFailed, and every later one
// at once. Nothing waits for a dead peer.
//
// Thread-safety: none. One thread drives a transport and reads its requests (the communicator's
// progress thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ftcomm/status.h"
#include "transport/op_signature.h"

namespace ftcomm::transport {

using Clock = std::chrono::steady_clock;

// A view of a peer's memory mapped into this process (Transport::viewPeer).
struct PeerView {
  std::shared_ptr<const void> keep;
  const std::byte* data = nullptr;
};

struct MessageTag {
  static constexpr std::uint32_t kMaxSlot = (1u << 28) - 1;
  MessageTag() = default;
  MessageTag(std::uint16_t c, std::uint32_t s, OpSignature sig = {})
      : channel(c), slot(s), signature(sig) {}

  std::uint16_t channel = 0;
  std::uint32_t slot = 0;  // at most kMaxSlot
  OpSignature signature;   // sent with the message; checked by the receiver
};

// One nonblocking send or receive. Completed exactly once; the first completion wins.
class TransportRequest {
 public:
  bool done() const { return done_; }
  // False while the transport may still write into the buffer of this (withdrawn) receive: its
  // data had begun to land when it was cancelled (Transport::settled).
  bool released() const { return done_ && !landing_; }
  void setLanding(bool landing) { landing_ = landing; }
  // Valid once done(): Ok, or why the request failed.
  const Status& status() const { return status_; }
  // Bytes sent, or received into the buffer.
  std::size_t bytes() const { return bytes_; }

  // For transports.
  void complete(Status status, std::size_t bytes) {
    if (done_) return;
    status_ = std::move(status);
    bytes_ = bytes;
    done_ = true;
  }

 private:
  bool done_ = false;
  bool landing_ = false;
  Status status_;
  std::size_t bytes_ = 0;
};

using RequestPtr = std::shared_ptr<TransportRequest>;

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Never blocks. A request that cannot start (bad peer, dead peer) comes back already done.
  virtual RequestPtr send(int peer, MessageTag tag, const void* data, std::size_t bytes) = 0;
  // A message longer than `capacity` completes the request with Mismatch (truncation).
  virtual RequestPtr recv(int peer, MessageTag tag, void* data, std::size_t capacity) = 0;

  // Makes progress until some request completed or `deadline` passed; sleeps (does not spin)
  // while nothing happens.
  virtual void progressUntil(Clock::time_point deadline) = 0;

  // Completes a pending request with Cancelled and withdraws it, so that nothing is written into
  // its buffer afterwards (a send already handed to the network may still go out). No-op when
  // the request is done.
  virtual void cancel(const RequestPtr& request) = 0;
  // cancel() for every pending request, completing each with `why`.
  virtual void cancelAll(const Status& why) = 0;
  // True when no receive can still write into the buffer it was given. A receive that the
  // network had already begun to fill (a large message) cannot be recalled: cancel() completes
  // its request at once, but the data keeps landing until the network is done with it, so the
  // owner of the buffer must not get it back before this is true.
  virtual bool settled() const = 0;

  // One-sided reads of a peer's memory, where the transport has them (shared memory on one host:
  // cross-memory attach). Collectives that read their inputs straight from the peers' buffers
  // (algorithms/direct/) use them; the buffers' owners keep them valid by protocol.
  virtual bool canReadPeer(int /*peer*/) const { return false; }
  // Copies `bytes` at `address` in the peer's address space into `into`: PeerFailed if the peer
  // is gone, Internal for an address it does not have, Revoked if the peer took the buffer back
  // before the copy was done. `mark`: the peer's loanMark() when it gave the address.
  virtual Status readPeer(int peer, void* /*into*/, std::uint64_t /*address*/,
                          std::size_t /*bytes*/, std::uint32_t /*mark*/) {
    return failedPrecondition("this transport cannot read the memory of rank " +
                              std::to_string(peer));
  }
  // The peer's `bytes` at `address` mapped into this process, to be read in place (the peer's
  // ftcomm::allocMem memory on the same host): `data` stays valid while `keep` lives. Null data
  // where the memory is reached through readPeer only. What was read through a view is what the
  // peer lent only if checkPeerLoan is Ok after the reads, as readPeer checks its copies.
  virtual PeerView viewPeer(int /*peer*/, std::uint64_t /*address*/, std::size_t /*bytes*/) {
    return {};
  }
  virtual Status checkPeerLoan(int /*peer*/, std::uint32_t /*mark*/) const { return Status::Ok(); }
  // Whether the peers read [memory, memory + bytes) of this process through viewPeer (from a
  // mapping of their own, no cross-memory attach): ftcomm::allocMem memory on shared memory.
  virtual bool mappedForPeers(const void* /*memory*/, std::size_t /*bytes*/) const { return false; }
  // What goes out beside the address of a buffer this rank lends to readPeer; and taking back
  // every buffer it lent (an operation failed and returns them to the caller before the readers
  // said they were done): reads of them that have not finished fail from then on.
  virtual std::uint32_t loanMark() const { return 0; }
  virtual void reclaimLoans() {}

  // Ok while the peer is usable; else why not.
  virtual Status peerStatus(int peer) const = 0;
  // Declares a peer failed from outside (the rendezvous saw it die).
  virtual void failPeer(int peer, const Status& why) = 0;
};

}  // namespace ftcomm::transport
