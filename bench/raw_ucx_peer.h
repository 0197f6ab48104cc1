// Raw UCX one-sided operations, the ceiling ftcomm's windows are measured against in
// `ftcomm-bench --op put|get --compare ucx` (or ucx-peer): a UCX context and worker of the
// bench's own, every rank's buffer registered (ucp_mem_map) and its rkey given to the others
// through MPI. Error handling none by default (UCX then uses its shared-memory transports on one
// host); `peerErrors` asks for UCP_ERR_HANDLING_MODE_PEER, as ftcomm's UCX path does.
//
// Thread-safety: one thread.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace ftcomm::bench {

class RawUcxPeer {
 public:
  // Collective over MPI_COMM_WORLD: `bytes` of this rank's memory at `buffer` are the target.
  static std::unique_ptr<RawUcxPeer> connect(void* buffer, std::size_t bytes, bool peerErrors);
  ~RawUcxPeer();

  // Put / get `bytes` at offset 0 of `target`'s buffer, then wait: a put until it is flushed
  // (remotely complete), a get until the data is here.
  void put(const void* source, std::size_t bytes, int target);
  void get(void* destination, std::size_t bytes, int target);
  // A target's turn: progress for the others' operations.
  void serve();

 private:
  RawUcxPeer() = default;
  void wait(ucs_status_ptr_t request, const char* what);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_mem_h memory_ = nullptr;
  std::vector<ucp_ep_h> endpoints_;  // by rank; null for self
  std::vector<ucp_rkey_h> keys_;
  std::vector<std::uint64_t> addresses_;
};

}  // namespace ftcomm::bench
