#include "transport/ucx/ucx_worker.h"

#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace ftcomm::ucx {

namespace {

// Over TCP, messages up to this size go eagerly (UcxWorker::create).
constexpr const char* kTcpEagerBytes = "256k";

}  // namespace

Status ucxError(const std::string& what, ucs_status_t status) {
  return internalError(what + ": " + ucs_status_string(status));
}

std::uint64_t UcxEndpoint::listen(Listener listener) {
  const std::uint64_t token = nextToken_++;
  listeners_[token] = std::move(listener);
  return token;
}

void UcxEndpoint::unlisten(std::uint64_t token) {
  listeners_.erase(token);
}

void UcxEndpoint::onError(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<UcxEndpoint*>(arg)->fail(Status(
      StatusCode::kPeerFailed, std::string("UCX endpoint error: ") + ucs_status_string(status)));
}

void UcxEndpoint::fail(const Status& why) {
  if (!failure_.ok()) return;
  failure_ = why;
  // Listeners may unlisten while being told; walk a copy.
  auto listeners = listeners_;
  for (auto& [token, listener] : listeners) listener(why);
}

Result<std::shared_ptr<UcxWorker>> UcxWorker::create(const std::string& netDevices) {
  std::shared_ptr<UcxWorker> self(new UcxWorker());
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
    return ucxError("ucp_config_read", s);
  }
  // Sets a UCX setting the user's environment (UCX_KEY) leaves unset; the config goes on an error.
  auto setDefault = [&](const char* key, const std::string& value) -> Status {
    if (std::getenv((std::string("UCX_") + key).c_str()) != nullptr) return Status::Ok();
    if (ucs_status_t s = ucp_config_modify(config, key, value.c_str()); s != UCS_OK) {
      ucp_config_release(config);
      return ucxError(std::string("UCX ") + key + "=" + value, s);
    }
    return Status::Ok();
  };
  if (!netDevices.empty() && std::getenv("UCX_NET_DEVICES") == nullptr) {
    FTCOMM_RETURN_IF_ERROR(setDefault("NET_DEVICES", netDevices));
    // A socket interface leaves UCX its TCP transport, whose rendezvous costs a handshake more
    // than sending eagerly: between two hosts a 32-64 KiB exchange took 210-218 us through it
    // against 78-156 us eagerly (docs/BENCHMARKS.md). So messages up to kTcpEagerBytes go
    // eagerly, unless the user's UCX_RNDV_THRESH says otherwise.
    FTCOMM_RETURN_IF_ERROR(setDefault("RNDV_THRESH", kTcpEagerBytes));
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  // RMA and 64-bit atomics for windows over UCX (comm/rma/window_ucx.cc).
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP | UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
  ucs_status_t s = ucp_init(&params, config, &self->context_);
  ucp_config_release(config);
  if (s != UCS_OK) return ucxError("ucp_init", s);

  ucp_worker_params_t workerParams{};
  workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  workerParams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  if (s = ucp_worker_create(self->context_, &workerParams, &self->worker_); s != UCS_OK) {
    return ucxError("ucp_worker_create", s);
  }
  if (s = ucp_worker_get_efd(self->worker_, &self->eventFd_); s != UCS_OK) {
    return ucxError("ucp_worker_get_efd", s);
  }
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  if (s = ucp_worker_get_address(self->worker_, &address, &length); s != UCS_OK) {
    return ucxError("ucp_worker_get_address", s);
  }
  self->address_.assign(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(self->worker_, address);
  return self;
}

UcxWorker::~UcxWorker() {
  if (worker_ != nullptr) {
    // Protocol replies this process still owes (a rendezvous receive's acknowledgement goes out
    // on an endpoint UCX made for the incoming connection, which the closes below do not
    // flush): without them a peer whose large send this process just received sees the send
    // fail when the connection closes, and takes this process for dead.
    const auto grace = Clock::now() + std::chrono::milliseconds(50);
    while (Clock::now() < grace) {
      if (ucp_worker_progress(worker_) == 0) std::this_thread::yield();
    }
    std::vector<void*> closing;
    for (auto& [address, endpoint] : endpoints_) {
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      // A failed endpoint cannot flush; a live one gets a short, bounded chance to.
      param.flags = endpoint->failure().ok() && !endpoint->self_ ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
      void* request = ucp_ep_close_nbx(endpoint->ep_, &param);
      if (UCS_PTR_IS_PTR(request)) closing.push_back(request);
    }
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    for (void* request : closing) {
      while (ucp_request_check_status(request) == UCS_INPROGRESS && Clock::now() < deadline) {
        ucp_worker_progress(worker_);
      }
      ucp_request_free(request);
    }
    bool sawDeadPeer = false;
    for (const auto& [address, endpoint] : endpoints_) sawDeadPeer |= !endpoint->failure().ok();
    if (sawDeadPeer || orphanedReceives_ > 0) {
      // UCX 1.13 aborts in ucp_worker_destroy (ucp_ep.c:437, "proto_reqs" not empty) when a
      // request was left in the middle of a protocol exchange (a peer died, or a revoked
      // operation's receive was cancelled too late): it sits on an endpoint UCX made for the
      // incoming connection, which no flush, cancel or forced close of ours can reach. Seen in
      // most runs of the kill and revoke tests. The endpoints to live peers were flushed and
      // closed above; the worker itself is left to the process's exit.
      return;
    }
    ucp_worker_destroy(worker_);
  }
  if (context_ != nullptr) ucp_cleanup(context_);
}

Result<std::shared_ptr<UcxEndpoint>> UcxWorker::endpoint(const std::string& address) {
  if (auto it = endpoints_.find(address); it != endpoints_.end()) return it->second;
  auto endpoint = std::make_shared<UcxEndpoint>();
  endpoint->self_ = address == address_;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  if (!endpoint->self_) {
    // This process cannot outlive itself: only endpoints to others need peer error handling.
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = &UcxEndpoint::onError;
    params.err_handler.arg = endpoint.get();
  }
  if (ucs_status_t s = ucp_ep_create(worker_, &params, &endpoint->ep_); s != UCS_OK) {
    return ucxError("ucp_ep_create", s);
  }
  endpoints_[address] = endpoint;
  return endpoint;
}

bool UcxWorker::progress() {
  // One call, not a loop until nothing is left: every caller polls again while anything moved,
  // and the call that finds nothing costs a system call (epoll_wait, over TCP).
  return ucp_worker_progress(worker_) != 0;
}

bool UcxWorker::arm() {
  return ucp_worker_arm(worker_) == UCS_OK;
}

void UcxWorker::waitForEvents(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return;
  // UCS_ERR_BUSY: events are already pending, so do not sleep.
  if (ucp_worker_arm(worker_) != UCS_OK) return;
  pollfd fd{eventFd_, POLLIN, 0};
  ::poll(&fd, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1000)));
}

}  // namespace ftcomm::ucx
