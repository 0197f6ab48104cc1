// A communicator on CUDA device memory over NCCL 2.28: the operations of Communicator
// (communicator.h), each nonblocking and returning a Work, under the same fault-tolerance
// contract, beside a host Communicator that it takes its membership from.
//
// Creation is collective over the host communicator's members: rank 0 makes NCCL's unique id and
// publishes it in the rendezvous's key-value store; every member initializes a nonblocking NCCL
// communicator (config.blocking = 0) and polls it under the creation deadline.
//
// Operations run on an internal CUDA stream of the communicator, ordered after the work queued
// before the call on the legacy default stream (and so on every blocking stream). A Work
// completes when the operation's results are in device memory (a CUDA event after it), or fails
// at its deadline. Buffers must be memory of the communicator's device (cudaMalloc, ncclMemAlloc
// or managed memory): a host pointer is refused with InvalidArgument.
//
// NCCL checks nothing across ranks: members that call different operations, counts or dtypes
// hang until the deadline, which fails the operation with Timeout. The flight recorder holds both
// sides (ftcomm-fr analyze matches them by sequence number). Point-to-point operations match in
// issue order per peer, as in NCCL; the tag is recorded but takes no part in matching.
//
// Failures: an NCCL asynchronous error, a failed kernel, a deadline, or the host epoch's end (a
// member died or revoked it, as the host Communicator sees) breaks the communicator: the NCCL
// communicator is revoked (ncclCommRevoke), pending and later operations fail with the cause,
// and a failure seen here first revokes the host epoch so that every member learns of it.
// Recovery: host.reconfigure(), then reconfigure(thatResult) here: the survivors shrink the NCCL
// communicator (ncclCommShrink) or, when replacements joined or a shrink failed anywhere, start a
// fresh one with a new unique id (an NCCL without ncclCommRevoke, like 2.28.3, is shrunk with
// NCCL_SHRINK_ABORT instead). Split children do not follow (split again), as on the host.
//
// Thread-safety: operations may be issued from any thread; collectives in one order on every
// member. The host Communicator must outlive this one.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ftcomm/communicator.h"
#include "ftcomm/export.h"
#include "ftcomm/status.h"
#include "ftcomm/types.h"
#include "ftcomm/work.h"

namespace ftcomm {

namespace nccl {
class NcclBackend;
}

struct NcclOptions {
  // -1: FTCOMM_CUDA_DEVICE, else the local rank (FTCOMM_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
  // else the host rank) modulo the number of devices.
  int device = -1;
  std::string name = "nccl";
  // Creation and reconfigure(); 0: FTCOMM_CREATE_TIMEOUT_MS, else 60 s.
  std::chrono::milliseconds timeout{0};
  // Every operation's default deadline; 0: the host communicator's.
  std::chrono::milliseconds opTimeout{0};
};

class NcclCommunicator;

// Device memory registered with every member's NCCL communicator (ncclCommWindowRegister,
// symmetric): collectives whose buffers lie in it may use NCCL's symmetric kernels. One-sided
// put and signal are refused: NCCL 2.28 offers them only from device code (nccl_device.h, GIN),
// which this backend does not build. Destroying a window deregisters it, which is collective:
// every member destroys its windows in the same order.
class FTCOMM_API NcclWindow {
 public:
  NcclWindow(std::shared_ptr<nccl::NcclBackend> backend, void* buffer, std::size_t bytes,
             void* handle, std::uint64_t epoch, bool owned);
  ~NcclWindow();
  NcclWindow(const NcclWindow&) = delete;
  NcclWindow& operator=(const NcclWindow&) = delete;

  void* data() const { return buffer_; }
  std::size_t bytes() const { return bytes_; }
  // FailedPrecondition, recorded: not supported by this NCCL backend (see above).
  Work put(const void* source, std::size_t bytes, int targetRank, std::size_t targetOffset);
  Work signal(int targetRank, std::size_t slot, std::uint64_t value);

 private:
  std::shared_ptr<nccl::NcclBackend> backend_;
  void* buffer_;
  std::size_t bytes_;
  void* handle_;
  std::uint64_t epoch_;
  bool owned_;  // allocated by allocateWindow() (ncclMemAlloc)
};

class FTCOMM_API NcclCommunicator {
 public:
  static Result<std::unique_ptr<NcclCommunicator>> create(Communicator& host,
                                                          const NcclOptions& options = {});
  explicit NcclCommunicator(std::shared_ptr<nccl::NcclBackend> backend);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const;
  int size() const;
  std::uint64_t epoch() const;
  std::uint64_t id() const;
  const std::string& name() const;
  int device() const;
  std::vector<int> worldRanks() const;

  Work allReduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                 const OpOptions& options = {});
  Work reduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
              int root, const OpOptions& options = {});
  Work broadcast(void* buffer, std::size_t count, DataType dtype, int root,
                 const OpOptions& options = {});
  Work allGather(const void* send, void* recv, std::size_t count, DataType dtype,
                 const OpOptions& options = {});
  // Grouped ncclSend/ncclRecv, as NCCL has no vector collectives.
  Work allGatherV(const void* send, void* recv, std::span<const std::size_t> recvCounts,
                  std::span<const std::size_t> recvDispls, DataType dtype,
                  const OpOptions& options = {});
  Work reduceScatter(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                     const OpOptions& options = {});
  Work allToAll(const void* send, void* recv, std::size_t count, DataType dtype,
                const OpOptions& options = {});
  Work allToAllV(const void* send, std::span<const std::size_t> sendCounts,
                 std::span<const std::size_t> sendDispls, void* recv,
                 std::span<const std::size_t> recvCounts, std::span<const std::size_t> recvDispls,
                 DataType dtype, const OpOptions& options = {});
  Work gather(const void* send, void* recv, std::size_t count, DataType dtype, int root,
              const OpOptions& options = {});
  Work scatter(const void* send, void* recv, std::size_t count, DataType dtype, int root,
               const OpOptions& options = {});
  // An allreduce of one integer on the device (NCCL has no barrier).
  Work barrier(const OpOptions& options = {});
  Work send(const void* buffer, std::size_t count, DataType dtype, int peer, int tag = 0,
            const OpOptions& options = {});
  Work recv(void* buffer, std::size_t count, DataType dtype, int peer, int tag = 0,
            const OpOptions& options = {});

  // Eager, through ncclCommSplit; null for kNoColor.
  Result<std::unique_ptr<NcclCommunicator>> split(int color, int key,
                                                  const OpOptions& options = {});
  Result<std::unique_ptr<NcclCommunicator>> split(std::span<const int> ranks,
                                                  const OpOptions& options = {});

  // Collective. registerWindow takes the caller's device memory (NCCL wants it from ncclMemAlloc
  // or cuMem for symmetric use; 4096-byte aligned); allocateWindow allocates it with ncclMemAlloc.
  Result<std::unique_ptr<NcclWindow>> registerWindow(void* buffer, std::size_t bytes,
                                                     const OpOptions& options = {});
  Result<std::unique_ptr<NcclWindow>> allocateWindow(std::size_t bytes,
                                                     const OpOptions& options = {});

  Status health() const;
  // Breaks this communicator (ncclCommRevoke) and revokes the host epoch for every member.
  Status revoke(const std::string& reason = "revoked by the application");
  // revoke(), then ncclCommAbort: nothing can be issued on it again.
  void abort(const std::string& reason = "aborted by the application");
  // After host.reconfigure() returned `agreed` (see the top of this file); collective over the
  // members of the new epoch.
  Result<Reconfiguration> reconfigure(const Reconfiguration& agreed,
                                      const ReconfigureOptions& options = {});

 private:
  std::shared_ptr<nccl::NcclBackend> backend_;
};

}  // namespace ftcomm
