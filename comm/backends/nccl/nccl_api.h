// The one place the NCCL backend meets the vendor: every NCCL and CUDA runtime call it makes,
// behind an interface with [[nodiscard]] results and opaque handles. The backend's bookkeeping
// (the state machine, the error mapping, the deadlines) is written against this interface only,
// so it is unit-tested on CPU with a scripted implementation (tests/fixtures/fake_nccl_api.h);
// nccl_api_cuda.cc is the real one, built where NCCL is found.
//
// Every call that may block on the network is issued on a nonblocking NCCL communicator
// (config.blocking = 0): it returns kInProgress, and the caller polls asyncError() until the
// communicator is ready again, under its own deadline.
//
// Thread-safety: an implementation may be called from any thread; the calls on one communicator
// are serialized by the backend (NCCL requires it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "ftcomm/types.h"

namespace ftcomm::nccl {

// ncclResult_t, plus the CUDA runtime's failures and a missing entry point.
enum class NcclCode : std::uint8_t {
  kSuccess,
  kInProgress,
  kUnhandledCudaError,
  kSystemError,
  kInternalError,
  kInvalidArgument,
  kInvalidUsage,
  kRemoteError,
  kCudaError,     // a CUDA runtime call failed (detail says which)
  kNotSupported,  // this NCCL or this build lacks the feature
};

std::string_view ncclCodeName(NcclCode code);

struct [[nodiscard]] NcclResult {
  NcclCode code = NcclCode::kSuccess;
  std::string detail;  // the vendor's message and the call that failed

  bool ok() const { return code == NcclCode::kSuccess; }
  bool inProgress() const { return code == NcclCode::kInProgress; }
};

inline NcclResult ncclOk() {
  return {};
}

// Opaque vendor handles (ncclComm_t, cudaStream_t, cudaEvent_t, ncclWindow_t).
struct NcclCommHandle;
struct CudaStreamHandle;
struct CudaEventHandle;
struct NcclWindowHandle;
using CommRef = NcclCommHandle*;
using StreamRef = CudaStreamHandle*;
using EventRef = CudaEventHandle*;
using WindowRef = NcclWindowHandle*;

// One NCCL operation, as the backend issues it.
enum class NcclOpKind : std::uint8_t {
  kAllReduce,
  kReduce,
  kBroadcast,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
};

struct NcclOpCall {
  NcclOpKind kind = NcclOpKind::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;  // NCCL's count for this kind (per block for the gathers and scatters)
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;  // root, or the peer of send/recv
};

class NcclApi {
 public:
  virtual ~NcclApi() = default;

  // CUDA runtime.
  [[nodiscard]] virtual NcclResult deviceCount(int* count) = 0;
  [[nodiscard]] virtual NcclResult setDevice(int device) = 0;
  // Whether `pointer` is device memory that `device` can use (cudaPointerGetAttributes).
  [[nodiscard]] virtual NcclResult isDeviceMemory(const void* pointer, int device, bool* yes) = 0;
  [[nodiscard]] virtual NcclResult deviceAlloc(std::size_t bytes, void** pointer) = 0;
  [[nodiscard]] virtual NcclResult deviceFree(void* pointer) = 0;
  [[nodiscard]] virtual NcclResult streamCreate(StreamRef* stream) = 0;
  [[nodiscard]] virtual NcclResult streamDestroy(StreamRef stream) = 0;
  // Orders `stream` after the work queued so far on the legacy default stream (and so on every
  // blocking stream), without the host waiting; `marker` is an event of the caller's to do it.
  [[nodiscard]] virtual NcclResult streamWaitForDefault(StreamRef stream, EventRef marker) = 0;
  [[nodiscard]] virtual NcclResult eventCreate(EventRef* event) = 0;
  [[nodiscard]] virtual NcclResult eventDestroy(EventRef event) = 0;
  [[nodiscard]] virtual NcclResult eventRecord(EventRef event, StreamRef stream) = 0;
  // kSuccess with *done set; a CUDA error when the work before it failed.
  [[nodiscard]] virtual NcclResult eventQuery(EventRef event, bool* done) = 0;

  // NCCL communicators; every one nonblocking.
  [[nodiscard]] virtual NcclResult uniqueId(std::string* id) = 0;  // NCCL_UNIQUE_ID_BYTES bytes
  [[nodiscard]] virtual NcclResult commInitRank(CommRef* comm, int size, const std::string& id,
                                                int rank, const std::string& name) = 0;
  [[nodiscard]] virtual NcclResult commAsyncError(CommRef comm) = 0;
  [[nodiscard]] virtual NcclResult commUserRank(CommRef comm, int* rank) = 0;
  [[nodiscard]] virtual NcclResult commCount(CommRef comm, int* size) = 0;
  [[nodiscard]] virtual NcclResult commSplit(CommRef comm, int color, int key, CommRef* child) = 0;
  // `abortFirst`: NCCL_SHRINK_ABORT, which ends the parent's operations in flight first (for a
  // communicator that could not be revoked).
  [[nodiscard]] virtual NcclResult commShrink(CommRef comm, std::span<const int> exclude,
                                              bool abortFirst, CommRef* child) = 0;
  [[nodiscard]] virtual NcclResult commRevoke(CommRef comm) = 0;
  [[nodiscard]] virtual NcclResult commAbort(CommRef comm) = 0;
  [[nodiscard]] virtual NcclResult commFinalize(CommRef comm) = 0;
  [[nodiscard]] virtual NcclResult commDestroy(CommRef comm) = 0;

  // Operations, on `stream`; several between groupStart() and groupEnd() run as one.
  [[nodiscard]] virtual NcclResult groupStart() = 0;
  [[nodiscard]] virtual NcclResult groupEnd() = 0;
  [[nodiscard]] virtual NcclResult issue(const NcclOpCall& call, CommRef comm,
                                         StreamRef stream) = 0;

  // Windows (collective over the communicator).
  [[nodiscard]] virtual NcclResult memAlloc(std::size_t bytes, void** pointer) = 0;
  [[nodiscard]] virtual NcclResult memFree(void* pointer) = 0;
  [[nodiscard]] virtual NcclResult windowRegister(CommRef comm, void* buffer, std::size_t bytes,
                                                  WindowRef* window) = 0;
  [[nodiscard]] virtual NcclResult windowDeregister(CommRef comm, WindowRef window) = 0;
};

// The real implementation; null (with the reason in *why) where this build has no NCCL.
std::unique_ptr<NcclApi> makeVendorApi(std::string* why);

}  // namespace ftcomm::nccl
