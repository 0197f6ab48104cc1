#include "raw_ucx_peer.h"

#include <mpi.h>

#include <cstdio>
#include <string>

namespace ftcomm::bench {
namespace {

void check(ucs_status_t status, const char* what) {
  if (status == UCS_OK) return;
  std::fprintf(stderr, "ftcomm-bench: raw UCX: %s: %s\n", what, ucs_status_string(status));
  MPI_Abort(MPI_COMM_WORLD, 4);
}

// Every rank's bytes, gathered: sizes first, then the bytes.
std::vector<std::string> allGather(const void* data, std::size_t bytes, int n) {
  int mine = static_cast<int>(bytes);
  std::vector<int> sizes(static_cast<std::size_t>(n)), displs(sizes.size());
  MPI_Allgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    displs[r] = total;
    total += sizes[r];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(data, mine, MPI_BYTE, all.data(), sizes.data(), displs.data(), MPI_BYTE,
                 MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    out.push_back(
        all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(sizes[r])));
  }
  return out;
}

}  // namespace

std::unique_ptr<RawUcxPeer> RawUcxPeer::connect(void* buffer, std::size_t bytes, bool peerErrors) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::unique_ptr<RawUcxPeer> peer(new RawUcxPeer());
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA;
  check(ucp_init(&params, config, &peer->context_), "ucp_init");
  ucp_config_release(config);
  ucp_worker_params_t workerParams{};
  workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  workerParams.thread_mode = UCS_THREAD_MODE_SINGLE;
  check(ucp_worker_create(peer->context_, &workerParams, &peer->worker_), "ucp_worker_create");

  ucp_address_t* address = nullptr;
  std::size_t addressBytes = 0;
  check(ucp_worker_get_address(peer->worker_, &address, &addressBytes), "get_address");
  const auto addresses = allGather(address, addressBytes, n);
  ucp_worker_release_address(peer->worker_, address);

  ucp_mem_map_params_t map{};
  map.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  map.address = buffer;
  map.length = bytes;
  check(ucp_mem_map(peer->context_, &map, &peer->memory_), "ucp_mem_map");
  void* packed = nullptr;
  std::size_t packedBytes = 0;
  check(ucp_rkey_pack(peer->context_, peer->memory_, &packed, &packedBytes), "ucp_rkey_pack");
  const auto keys = allGather(packed, packedBytes, n);
  ucp_rkey_buffer_release(packed);
  auto base = reinterpret_cast<std::uint64_t>(buffer);
  peer->addresses_.resize(static_cast<std::size_t>(n));
  MPI_Allgather(&base, 1, MPI_UINT64_T, peer->addresses_.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);

  peer->endpoints_.assign(static_cast<std::size_t>(n), nullptr);
  peer->keys_.assign(static_cast<std::size_t>(n), nullptr);
  for (int r = 0; r < n; ++r) {
    if (r == rank) continue;
    const auto i = static_cast<std::size_t>(r);
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses[i].data());
    ep.err_mode = peerErrors ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    check(ucp_ep_create(peer->worker_, &ep, &peer->endpoints_[i]), "ucp_ep_create");
    check(ucp_ep_rkey_unpack(peer->endpoints_[i], keys[i].data(), &peer->keys_[i]),
          "ucp_ep_rkey_unpack");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return peer;
}

RawUcxPeer::~RawUcxPeer() {
  for (ucp_rkey_h key : keys_) {
    if (key != nullptr) ucp_rkey_destroy(key);
  }
  // Every rank's operations are done before anyone closes.
  MPI_Barrier(MPI_COMM_WORLD);
  for (ucp_ep_h ep : endpoints_) {
    if (ep == nullptr) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t closing = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(closing)) {
      while (ucp_request_check_status(closing) == UCS_INPROGRESS) ucp_worker_progress(worker_);
      ucp_request_free(closing);
    }
  }
  if (memory_ != nullptr) ucp_mem_unmap(context_, memory_);
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

void RawUcxPeer::wait(ucs_status_ptr_t request, const char* what) {
  if (request == nullptr) return;
  if (UCS_PTR_IS_ERR(request)) check(UCS_PTR_STATUS(request), what);
  ucs_status_t status;
  while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
    ucp_worker_progress(worker_);
  }
  ucp_request_free(request);
  check(status, what);
}

void RawUcxPeer::put(const void* source, std::size_t bytes, int target) {
  const auto t = static_cast<std::size_t>(target);
  ucp_request_param_t param{};
  wait(ucp_put_nbx(endpoints_[t], source, bytes, addresses_[t], keys_[t], &param), "put");
  wait(ucp_ep_flush_nbx(endpoints_[t], &param), "flush");
}

void RawUcxPeer::get(void* destination, std::size_t bytes, int target) {
  const auto t = static_cast<std::size_t>(target);
  ucp_request_param_t param{};
  wait(ucp_get_nbx(endpoints_[t], destination, bytes, addresses_[t], keys_[t], &param), "get");
}

void RawUcxPeer::serve() {
  ucp_worker_progress(worker_);
}

}  // namespace ftcomm::bench
