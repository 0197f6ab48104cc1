// Bringing an NCCL communicator up: rank 0's unique id through the bootstrap, a nonblocking
// ncclCommInitRankConfig, and the polling of a communicator in progress under a deadline (also
// used by split, shrink and window registration).
#include <thread>

#include "backends/nccl/nccl_backend.h"
#include "backends/nccl/nccl_status.h"
#include "backends/nccl/unique_id_text.h"

namespace ftcomm::nccl {
namespace {

void sleepBackingOff(std::chrono::microseconds* pause) {
  std::this_thread::sleep_for(*pause);
  *pause = std::min(*pause * 2, std::chrono::microseconds(1000));
}

}  // namespace

Result<std::shared_ptr<NcclBackend>> NcclBackend::create(NcclSetup setup) {
  std::shared_ptr<NcclBackend> backend(new NcclBackend(std::move(setup)));
  const auto deadline = Clock::now() + backend->setup_.setupTimeout;
  backend->epoch_ = backend->setup_.bootstrap->epoch();
  if (Status s = toStatus(backend->api().setDevice(backend->setup_.device), "NCCL setup");
      !s.ok()) {
    return s;
  }
  Result<CommRef> comm =
      backend->initFresh(backend->setup_.keyPrefix + "/" + std::to_string(backend->epoch_) + "/uid",
                         backend->setup_.rank, backend->setup_.size, deadline);
  if (!comm.ok()) return comm.status();
  if (Status s = backend->start(*comm); !s.ok()) return s;
  backend->recordConfig();
  return backend;
}

Result<CommRef> NcclBackend::initFresh(const std::string& key, int rank, int size,
                                       Clock::time_point deadline) {
  std::string id;
  if (rank == 0) {
    if (Status s = toStatus(api().uniqueId(&id), describe("ncclGetUniqueId")); !s.ok()) return s;
    FTCOMM_RETURN_IF_ERROR(setup_.bootstrap->publish(key, uniqueIdToText(id)));
  } else {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto values = setup_.bootstrap->fetch({key}, std::max(left, std::chrono::milliseconds(1)));
    if (!values.ok()) {
      return Status(values.status().code(),
                    describe("NCCL setup") +
                        ": rank 0's unique id did not arrive: " + values.status().message());
    }
    auto decoded = uniqueIdFromText(values->front());
    if (!decoded.ok()) return decoded.status();
    id = std::move(*decoded);
  }
  CommRef comm = nullptr;
  NcclResult r = api().commInitRank(&comm, size, id, rank, setup_.name);
  if (!r.ok() && !r.inProgress()) {
    if (comm != nullptr) (void)api().commAbort(comm);
    return toStatus(r, describe("ncclCommInitRankConfig"));
  }
  if (Status s = waitReady(comm, deadline, describe("NCCL communicator setup"), true); !s.ok()) {
    (void)api().commAbort(comm);
    return s;
  }
  return comm;
}

Status NcclBackend::waitReady(CommRef comm, Clock::time_point deadline, const std::string& what,
                              bool watchBootstrap) {
  auto pause = std::chrono::microseconds(20);
  while (true) {
    NcclResult r = api().commAsyncError(comm);
    if (!r.inProgress()) return toStatus(r, what);
    if (watchBootstrap) {
      if (Status h = setup_.bootstrap->health(); !h.ok()) {
        return Status(h.code(), what + " stopped: " + h.message());
      }
    }
    if (Clock::now() >= deadline) {
      return timeoutError(what +
                          " was still in progress at its deadline: a member did not "
                          "take part, or is stuck");
    }
    sleepBackingOff(&pause);
  }
}

}  // namespace ftcomm::nccl
