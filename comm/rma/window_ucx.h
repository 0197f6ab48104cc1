// The UCX half of a window: the members this process does not reach through shared memory
// (another host, or FTCOMM_TRANSPORT=ucx) are reached with UCX RMA. Each member registers its
// data and its signal slots with ucp_mem_map and publishes the packed rkeys (allGathers over the
// communicator); the others unpack them on their endpoints to it.
//
// Completion: a put's Work completes when its source may be reused (UCX's local completion);
// the data is at the target after flush(target), flushAll() or fence(). get and atomicAdd
// complete when their value is here. signal() puts a worker fence before its atomic add (UCX
// starts it only once the operations issued before are complete), so the target sees it only
// after those puts. A peer's death completes its requests
// with PeerFailed (the endpoints use UCX's PEER error mode).
//
// Thread-safety: every UCX call is made under the engine's mutex.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <vector>

#include "core/comm_state.h"
#include "ftcomm/communicator.h"
#include "ftcomm/work.h"
#include "recorder/op_progress.h"

namespace ftcomm::rma {

class UcxWindowPath {
 public:
  // Collective over `comm`: registers [data, data + dataBytes) and [slots, slots + slotBytes),
  // exchanges rkeys, and unpacks those of the members marked in `remote`.
  static Result<std::unique_ptr<UcxWindowPath>> establish(Communicator& comm, void* data,
                                                          std::size_t dataBytes, void* slots,
                                                          std::size_t slotBytes,
                                                          const std::vector<bool>& remote);
  ~UcxWindowPath();  // flushes (bounded), then destroys the rkeys and unregisters
  UcxWindowPath(const UcxWindowPath&) = delete;
  UcxWindowPath& operator=(const UcxWindowPath&) = delete;

  // `progress` is the operation's flight-recorder entry; the Work completes through it.
  Work put(const void* source, std::size_t bytes, int target, std::size_t offset,
           std::shared_ptr<recorder::OpProgress> progress, std::chrono::milliseconds timeout);
  Work get(void* destination, std::size_t bytes, int target, std::size_t offset,
           std::shared_ptr<recorder::OpProgress> progress, std::chrono::milliseconds timeout);
  Work atomicAdd(int target, std::size_t offset, std::int64_t value, std::int64_t* previous,
                 std::shared_ptr<recorder::OpProgress> progress, std::chrono::milliseconds timeout);
  Work signal(int target, std::size_t slot, std::uint64_t value,
              std::shared_ptr<recorder::OpProgress> progress, std::chrono::milliseconds timeout);
  // target -1: every remote member.
  Work flush(int target, std::shared_ptr<recorder::OpProgress> progress,
             std::chrono::milliseconds timeout);
  // Drives the engine once (a thread waiting for a signal that arrives by UCX).
  void progress();

 private:
  struct Remote {
    std::shared_ptr<ucx::UcxEndpoint> endpoint;
    ucp_rkey_h dataKey = nullptr;
    ucp_rkey_h slotKey = nullptr;
    std::uint64_t dataAddress = 0;
    std::uint64_t slotAddress = 0;
  };
  // Runs `issue` (a UCX call returning a status pointer) with a callback that completes the Work.
  template <typename Issue>
  Work start(int target, std::shared_ptr<recorder::OpProgress> progress,
             std::chrono::milliseconds timeout, Issue&& issue);

  explicit UcxWindowPath(std::shared_ptr<detail::CommState> state) : state_(std::move(state)) {}

  std::shared_ptr<detail::CommState> state_;
  std::shared_ptr<ucx::UcxWorker> worker_;
  ucp_mem_h dataMem_ = nullptr;
  ucp_mem_h slotMem_ = nullptr;
  std::vector<Remote> remotes_;  // by rank; empty endpoint: reached otherwise
};

}  // namespace ftcomm::rma
