// The bookkeeping of one message in flight over UCX (UcxTransport's internals): its header on
// the wire, its UCX requests (one part, or two when the header travels apart from large data),
// and the callbacks UCX calls from ucp_worker_progress.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>

#include "transport/ucx/ucx_transport.h"

namespace ftcomm::ucx {

// Ahead of every message's data (transport.h).
struct WireHeader {
  static constexpr std::uint32_t kMagic = 0x46544d31;  // "FTM1"
  std::uint32_t magic = kMagic;
  std::uint32_t reserved = 0;
  transport::OpSignature signature;
};
static_assert(sizeof(WireHeader) == 32);

// Collective messages from this size travel as two UCX messages, the header alone and then the
// data contiguous, instead of one IOV message: with error handling on, UCX 1.13 moves IOV data
// over TCP at a third of the contiguous rate (ucx_perftest -e: 0.56 vs 1.52 GB/s at 4 MiB). Both
// sides decide from the size they expect, which a collective's sender and receiver share; a
// point-to-point receive may be longer than its message, so those always travel as one.
inline constexpr std::size_t kSplitBytes = 64 * 1024;

inline bool travelsSplit(const transport::OpSignature& signature, std::size_t bytes) {
  return bytes >= kSplitBytes && signature.kind != transport::OpKind::kPointToPoint &&
         signature.kind != transport::OpKind::kControl;
}

// One UCX request of an operation.
struct UcxPart {
  UcxTransport::PendingOp* op = nullptr;
  void* ucxRequest = nullptr;
  bool done = false;
  ucs_status_t status = UCS_OK;
  std::size_t bytes = 0;
};

struct UcxTransport::PendingOp {
  UcxTransport* owner = nullptr;      // null once the transport is gone: the op then only cleans up
  UcxWorker* orphanedFrom = nullptr;  // set for an orphaned receive, which the worker counts
  transport::RequestPtr request;
  int peer = 0;
  bool receive = false;
  std::size_t bytes = 0;  // sent, or the receive's capacity
  transport::OpSignature signature;
  // The message is the header, then the data: one UCX message of two pieces (iov), or two
  // messages (travelsSplit): parts[0] the header, parts[1] the data.
  WireHeader header;
  ucp_dt_iov_t iov[2]{};
  void* data = nullptr;
  UcxPart parts[2];
  int partCount = 1;
  int partsDone = 0;
  ucp_tag_recv_info_t info[2]{};
  // Seen with UCX 1.13: a receive of a message already waiting in the unexpected queue may
  // complete inside ucp_tag_recv_nbx, and an immediate completion (NULL) may leave
  // recv_info.tag_info's length at 0. So parts are posted with NO_IMM_CMPL (completion only
  // through the callback, length included), and a callback that still runs during the calls only
  // records its result; start() finishes the op once the calls returned.
  bool inCall = false;

  bool split() const { return partCount == 2; }
  void freeRequests() {
    for (UcxPart& part : parts) {
      if (part.ucxRequest != nullptr) ucp_request_free(part.ucxRequest);
      part.ucxRequest = nullptr;
    }
  }
  // Cancels the receive parts UCX still holds.
  void cancelReceives(ucp_worker_h worker) {
    if (!receive) return;
    for (int i = 0; i < partCount; ++i) {
      if (!parts[i].done && parts[i].ucxRequest != nullptr)
        ucp_request_cancel(worker, parts[i].ucxRequest);
    }
  }
};

// UCX calls these from ucp_worker_progress.
struct OpCallbacks {
  static void sent(void* request, ucs_status_t status, void* user) {
    auto* part = static_cast<UcxPart*>(user);
    part->ucxRequest = request;
    done(part, status, 0);
  }
  static void received(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                       void* user) {
    auto* part = static_cast<UcxPart*>(user);
    part->ucxRequest = request;
    done(part, status, info != nullptr ? info->length : 0);
  }
  static void done(UcxPart* part, ucs_status_t status, std::size_t bytes) {
    UcxTransport::PendingOp* op = part->op;
    part->done = true;
    part->status = status;
    part->bytes = bytes;
    ++op->partsDone;
    if (op->inCall) return;
    if (op->partsDone < op->partCount) {
      // A failed part dooms the message: the other one must not wait for data that will not
      // come (a receive is cancelled; a send ends on its own).
      if (status != UCS_OK && op->owner != nullptr)
        op->cancelReceives(op->owner->worker_->handle());
      return;
    }
    op->request->setLanding(false);  // UCX is done with the buffer
    if (op->owner != nullptr) {
      op->owner->finish(op);
      return;
    }
    if (op->orphanedFrom != nullptr) op->orphanedFrom->orphanReceive(-1);
    op->freeRequests();
    delete op;
  }
};

}  // namespace ftcomm::ucx
