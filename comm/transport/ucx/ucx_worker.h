// One UCX context and worker per process, shared by every communicator and epoch, and the
// table of its endpoints. An endpoint is connected once per peer worker address and shared:
// after a reconfigure the new epoch's transport reuses the live endpoints and only dead ones are
// replaced. Endpoints to other processes use UCP_ERR_HANDLING_MODE_PEER, so that a peer's death
// completes requests with an error instead of leaving them hanging,
// and the endpoint's error reaches every transport that listens on it.
//
// Thread-safety: none; callers serialize every call (UCS_THREAD_MODE_SERIALIZED): the engine's
// mutex lets its progress thread and a waiting application thread take turns.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ftcomm/status.h"

namespace ftcomm::ucx {

using Clock = std::chrono::steady_clock;

class UcxEndpoint {
 public:
  using Listener = std::function<void(const Status&)>;

  ucp_ep_h handle() const { return ep_; }
  // Ok while usable; the first error seen on it otherwise.
  const Status& failure() const { return failure_; }
  std::uint64_t listen(Listener listener);
  void unlisten(std::uint64_t token);
  // Declares the peer failed from outside UCX (the rendezvous saw it die): listeners are told,
  // and the worker closes the endpoint forcibly. The first failure wins.
  void fail(const Status& why);

 private:
  friend class UcxWorker;
  static void onError(void* arg, ucp_ep_h ep, ucs_status_t status);

  ucp_ep_h ep_ = nullptr;
  bool self_ = false;
  Status failure_;
  std::map<std::uint64_t, Listener> listeners_;
  std::uint64_t nextToken_ = 1;
};

class UcxWorker {
 public:
  // `netDevices`, when not empty, restricts UCX to those devices (its NET_DEVICES) unless the
  // environment sets UCX_NET_DEVICES.
  static Result<std::shared_ptr<UcxWorker>> create(const std::string& netDevices = "");
  ~UcxWorker();  // closes every endpoint (bounded wait), then the worker and context
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_worker_h handle() const { return worker_; }
  // For memory registration (RMA windows).
  ucp_context_h context() const { return context_; }
  // This worker's address: the opaque bytes peers connect to (published through the rendezvous).
  const std::string& address() const { return address_; }

  // The endpoint to the worker at `address`, connected on first use.
  Result<std::shared_ptr<UcxEndpoint>> endpoint(const std::string& address);
  // Receives of closed transports that UCX still holds (+1 when orphaned, -1 when UCX lets go):
  // while any remain, the worker is left to process exit (see the destructor).
  void orphanReceive(int delta) { orphanedReceives_ += delta; }

  // One round of progress (one ucp_worker_progress); true when anything happened, and then
  // more may be ready.
  bool progress();
  // For a thread that sleeps on the worker with other fds: arm() says whether it may (false:
  // events are pending, progress first), then it polls eventFd().
  bool arm();
  int eventFd() const { return eventFd_; }
  // Sleeps on the worker's event fd until an event arrives or `deadline` passes.
  void waitForEvents(Clock::time_point deadline);

 private:
  UcxWorker() = default;

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int eventFd_ = -1;
  std::string address_;
  int orphanedReceives_ = 0;
  std::map<std::string, std::shared_ptr<UcxEndpoint>> endpoints_;  // UcxEndpointTable
};

// "rank 3: Endpoint timeout"
Status ucxError(const std::string& what, ucs_status_t status);

}  // namespace ftcomm::ucx
