#include "rma/window_ucx.h"

#include <cstring>
#include <string>

#include "core/comm_access.h"
#include "core/work_state.h"

namespace ftcomm::rma {
namespace {

// The fixed part of what a member publishes; its packed rkeys follow in an allGatherV.
struct KeyHeader {
  std::uint64_t dataAddress;
  std::uint64_t slotAddress;
  std::uint64_t dataKeyBytes;
  std::uint64_t slotKeyBytes;
};

// A request's completion: the Work it completes once the last of its requests is done (a
// flush of every member is one request each), or at the first failure.
struct Pending {
  std::shared_ptr<detail::WorkState> work;
  std::size_t bytes = 0;
  int target = 0;
  std::shared_ptr<std::size_t> left;
  std::uint64_t operand = 0;  // an atomic's: UCX may read it after the call returns

  void done(const Status& status) {
    if (!status.ok() || --*left == 0) work->complete(status, bytes);
  }
};

Status fromUcx(ucs_status_t status, int target) {
  if (status == UCS_OK) return Status::Ok();
  const std::string what =
      "RMA with rank " + std::to_string(target) + ": " + ucs_status_string(status);
  switch (status) {
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CANCELED:
    case UCS_ERR_IO_ERROR:
      return Status(StatusCode::kPeerFailed, what);
    default:
      return internalError(what);
  }
}

void onDone(void* request, ucs_status_t status, void* userData) {
  auto* pending = static_cast<Pending*>(userData);
  pending->done(fromUcx(status, pending->target));
  delete pending;
  ucp_request_free(request);
}

Result<ucp_mem_h> mapMemory(ucp_context_h context, void* address, std::size_t bytes) {
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = address;
  params.length = bytes;
  ucp_mem_h mem = nullptr;
  if (ucs_status_t s = ucp_mem_map(context, &params, &mem); s != UCS_OK) {
    return ucx::ucxError("ucp_mem_map of a window", s);
  }
  return mem;
}

Result<std::string> packKey(ucp_context_h context, ucp_mem_h mem) {
  void* buffer = nullptr;
  std::size_t bytes = 0;
  if (ucs_status_t s = ucp_rkey_pack(context, mem, &buffer, &bytes); s != UCS_OK) {
    return ucx::ucxError("ucp_rkey_pack", s);
  }
  std::string key(static_cast<const char*>(buffer), bytes);
  ucp_rkey_buffer_release(buffer);
  return key;
}

}  // namespace

Result<std::unique_ptr<UcxWindowPath>> UcxWindowPath::establish(Communicator& comm, void* data,
                                                                std::size_t dataBytes, void* slots,
                                                                std::size_t slotBytes,
                                                                const std::vector<bool>& remote) {
  std::unique_ptr<UcxWindowPath> path(new UcxWindowPath(detail::CommAccess::state(comm)));
  detail::CommState& state = *path->state_;
  KeyHeader mine{};
  std::string keys;
  {
    std::lock_guard<std::mutex> lock(state.engine->mutex());
    path->worker_ = state.engine->workerLocked();
    ucp_context_h context = path->worker_->context();
    // UCX maps no empty region: a member with no data registers one byte of its slots instead.
    auto dataMem = mapMemory(context, dataBytes > 0 ? data : slots, dataBytes > 0 ? dataBytes : 1);
    if (!dataMem.ok()) return dataMem.status();
    path->dataMem_ = *dataMem;
    auto slotMem = mapMemory(context, slots, slotBytes);
    if (!slotMem.ok()) return slotMem.status();
    path->slotMem_ = *slotMem;
    auto dataKey = packKey(context, path->dataMem_);
    if (!dataKey.ok()) return dataKey.status();
    auto slotKey = packKey(context, path->slotMem_);
    if (!slotKey.ok()) return slotKey.status();
    mine = {reinterpret_cast<std::uint64_t>(data), reinterpret_cast<std::uint64_t>(slots),
            dataKey->size(), slotKey->size()};
    keys = *dataKey + *slotKey;
  }
  const int size = comm.size();
  std::vector<KeyHeader> headers(static_cast<std::size_t>(size));
  FTCOMM_RETURN_IF_ERROR(
      comm.allGather(&mine, headers.data(), sizeof(KeyHeader), DataType::kUint8).wait());
  std::vector<std::size_t> counts(static_cast<std::size_t>(size)), displs(counts.size());
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    counts[r] = headers[r].dataKeyBytes + headers[r].slotKeyBytes;
    displs[r] = total;
    total += counts[r];
  }
  std::string allKeys(total, '\0');
  FTCOMM_RETURN_IF_ERROR(
      comm.allGatherV(keys.data(), allKeys.data(), counts, displs, DataType::kUint8).wait());

  std::lock_guard<std::mutex> lock(state.engine->mutex());
  path->remotes_.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (!remote[i]) continue;
    Remote& peer = path->remotes_[i];
    auto endpoint = path->worker_->endpoint(state.addresses[i]);
    if (!endpoint.ok()) return endpoint.status();
    peer.endpoint = *endpoint;
    const char* key = allKeys.data() + displs[i];
    if (ucs_status_t s = ucp_ep_rkey_unpack(peer.endpoint->handle(), key, &peer.dataKey);
        s != UCS_OK) {
      return ucx::ucxError("unpacking rank " + std::to_string(r) + "'s window key", s);
    }
    if (ucs_status_t s = ucp_ep_rkey_unpack(peer.endpoint->handle(), key + headers[i].dataKeyBytes,
                                            &peer.slotKey);
        s != UCS_OK) {
      return ucx::ucxError("unpacking rank " + std::to_string(r) + "'s signal key", s);
    }
    peer.dataAddress = headers[i].dataAddress;
    peer.slotAddress = headers[i].slotAddress;
  }
  return path;
}

UcxWindowPath::~UcxWindowPath() {
  if (worker_ == nullptr) return;
  std::unique_lock<std::mutex> lock(state_->engine->mutex());
  // Outstanding operations must end before the keys and registrations go.
  ucp_request_param_t param{};
  ucs_status_ptr_t flushing = ucp_worker_flush_nbx(worker_->handle(), &param);
  if (UCS_PTR_IS_PTR(flushing)) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (ucp_request_check_status(flushing) == UCS_INPROGRESS &&
           std::chrono::steady_clock::now() < until) {
      worker_->progress();
    }
    ucp_request_free(flushing);
  }
  for (Remote& r : remotes_) {
    if (r.dataKey != nullptr) ucp_rkey_destroy(r.dataKey);
    if (r.slotKey != nullptr) ucp_rkey_destroy(r.slotKey);
  }
  ucp_context_h context = worker_->context();
  if (dataMem_ != nullptr) (void)ucp_mem_unmap(context, dataMem_);
  if (slotMem_ != nullptr) (void)ucp_mem_unmap(context, slotMem_);
}

template <typename Issue>
Work UcxWindowPath::start(int target, std::shared_ptr<recorder::OpProgress> progress,
                          std::chrono::milliseconds timeout, Issue&& issue) {
  const auto deadline = detail::Clock::now() + (timeout.count() > 0 ? timeout : state_->opTimeout);
  auto work = std::make_shared<detail::WorkState>(state_->engine, std::move(progress), deadline);
  std::lock_guard<std::mutex> lock(state_->engine->mutex());
  work->markStarted();
  std::vector<int> targets;
  if (target >= 0) {
    targets.push_back(target);
  } else {
    for (std::size_t r = 0; r < remotes_.size(); ++r) {
      if (remotes_[r].endpoint != nullptr) targets.push_back(static_cast<int>(r));
    }
  }
  auto left = std::make_shared<std::size_t>(targets.size());
  if (targets.empty()) work->complete(Status::Ok());
  for (int t : targets) {
    Remote& r = remotes_[static_cast<std::size_t>(t)];
    if (!r.endpoint->failure().ok()) {
      work->complete(Status(StatusCode::kPeerFailed, "RMA with rank " + std::to_string(t) + ": " +
                                                         r.endpoint->failure().message()));
      break;
    }
    auto* pending = new Pending{work, 0, t, left};
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &onDone;
    param.user_data = pending;
    ucs_status_ptr_t request = issue(param, r);
    if (UCS_PTR_IS_PTR(request)) continue;  // onDone completes it
    pending->done(fromUcx(UCS_PTR_STATUS(request), t));
    delete pending;
  }
  return Work(work);
}

Work UcxWindowPath::put(const void* source, std::size_t bytes, int target, std::size_t offset,
                        std::shared_ptr<recorder::OpProgress> progress,
                        std::chrono::milliseconds timeout) {
  return start(target, std::move(progress), timeout, [&](ucp_request_param_t& param, Remote& r) {
    return ucp_put_nbx(r.endpoint->handle(), source, bytes, r.dataAddress + offset, r.dataKey,
                       &param);
  });
}

Work UcxWindowPath::get(void* destination, std::size_t bytes, int target, std::size_t offset,
                        std::shared_ptr<recorder::OpProgress> progress,
                        std::chrono::milliseconds timeout) {
  return start(target, std::move(progress), timeout, [&](ucp_request_param_t& param, Remote& r) {
    static_cast<Pending*>(param.user_data)->bytes = bytes;
    return ucp_get_nbx(r.endpoint->handle(), destination, bytes, r.dataAddress + offset, r.dataKey,
                       &param);
  });
}

Work UcxWindowPath::atomicAdd(int target, std::size_t offset, std::int64_t value,
                              std::int64_t* previous,
                              std::shared_ptr<recorder::OpProgress> progress,
                              std::chrono::milliseconds timeout) {
  return start(target, std::move(progress), timeout, [&](ucp_request_param_t& param, Remote& r) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(sizeof(std::int64_t));
    if (previous != nullptr) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
      param.reply_buffer = previous;
    }
    auto* pending = static_cast<Pending*>(param.user_data);
    pending->operand = static_cast<std::uint64_t>(value);
    return ucp_atomic_op_nbx(r.endpoint->handle(), UCP_ATOMIC_OP_ADD, &pending->operand, 1,
                             r.dataAddress + offset, r.dataKey, &param);
  });
}

Work UcxWindowPath::signal(int target, std::size_t slot, std::uint64_t value,
                           std::shared_ptr<recorder::OpProgress> progress,
                           std::chrono::milliseconds timeout) {
  return start(target, std::move(progress), timeout, [&](ucp_request_param_t& param, Remote& r) {
    // After the puts issued before it, on every endpoint of the worker.
    (void)ucp_worker_fence(worker_->handle());
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(sizeof(std::uint64_t));
    auto* pending = static_cast<Pending*>(param.user_data);
    pending->operand = value;
    return ucp_atomic_op_nbx(r.endpoint->handle(), UCP_ATOMIC_OP_ADD, &pending->operand, 1,
                             r.slotAddress + slot * sizeof(std::uint64_t), r.slotKey, &param);
  });
}

Work UcxWindowPath::flush(int target, std::shared_ptr<recorder::OpProgress> progress,
                          std::chrono::milliseconds timeout) {
  return start(target, std::move(progress), timeout, [&](ucp_request_param_t& param, Remote& r) {
    return ucp_ep_flush_nbx(r.endpoint->handle(), &param);
  });
}

void UcxWindowPath::progress() {
  (void)state_->engine->tryProgress();
}

}  // namespace ftcomm::rma
