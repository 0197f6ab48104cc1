// The vendor implementation of NcclApi: NCCL 2.28 and the CUDA runtime, one call each.
//
// The fault-tolerance entry points arrived within 2.28 (ncclCommRevoke is missing from 2.28.3,
// seen on a GPU machine here): they are looked up when first used, so that an older libnccl
// loaded at run time answers kNotSupported instead of ending the process with a symbol lookup
// error.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>
#include <vector>

#include "backends/nccl/nccl_api.h"

namespace ftcomm::nccl {
namespace {

static_assert(NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0),
              "the NCCL backend needs NCCL 2.28 (ncclCommShrink, ncclCommRevoke, windows)");

ncclComm_t raw(CommRef comm) {
  return reinterpret_cast<ncclComm_t>(comm);
}
cudaStream_t raw(StreamRef stream) {
  return reinterpret_cast<cudaStream_t>(stream);
}
cudaEvent_t raw(EventRef event) {
  return reinterpret_cast<cudaEvent_t>(event);
}

NcclResult fromNccl(ncclResult_t rc, const char* call) {
  NcclCode code = NcclCode::kInternalError;
  switch (rc) {
    case ncclSuccess:
      return ncclOk();
    case ncclInProgress:
      return {NcclCode::kInProgress, call};
    case ncclUnhandledCudaError:
      code = NcclCode::kUnhandledCudaError;
      break;
    case ncclSystemError:
      code = NcclCode::kSystemError;
      break;
    case ncclInternalError:
      code = NcclCode::kInternalError;
      break;
    case ncclInvalidArgument:
      code = NcclCode::kInvalidArgument;
      break;
    case ncclInvalidUsage:
      code = NcclCode::kInvalidUsage;
      break;
    case ncclRemoteError:
      code = NcclCode::kRemoteError;
      break;
    default:
      break;
  }
  return {code, std::string(call) + ": " + ncclGetErrorString(rc)};
}

NcclResult fromCuda(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return ncclOk();
  return {NcclCode::kCudaError,
          std::string(call) + ": " + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) + ")"};
}

ncclDataType_t toNccl(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return ncclInt8;
    case DataType::kUint8:
      return ncclUint8;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kUint32:
      return ncclUint32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kUint64:
      return ncclUint64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
  }
  return ncclFloat32;
}

// The backend refuses the bitwise operators before it gets here (nccl_types.cc).
ncclRedOp_t toNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kProd:
      return ncclProd;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kAvg:
      return ncclAvg;
    default:
      return ncclSum;
  }
}

// An NCCL entry point of the library loaded at run time, or null where it has none.
template <typename Function>
Function optionalEntry(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

NcclResult missing(const char* name) {
  int version = 0;
  (void)ncclGetVersion(&version);
  return {NcclCode::kNotSupported, std::string(name) + " is not in the NCCL loaded (version code " +
                                       std::to_string(version) + ")"};
}

ncclConfig_t nonblockingConfig(const char* name) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = name;
  return config;
}

class VendorApi final : public NcclApi {
 public:
  NcclResult deviceCount(int* count) override {
    *count = 0;
    const cudaError_t rc = cudaGetDeviceCount(count);
    // No driver or no device: report none rather than an error.
    if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver) {
      (void)cudaGetLastError();
      *count = 0;
      return ncclOk();
    }
    return fromCuda(rc, "cudaGetDeviceCount");
  }
  NcclResult setDevice(int device) override {
    return fromCuda(cudaSetDevice(device), "cudaSetDevice");
  }
  NcclResult isDeviceMemory(const void* pointer, int device, bool* yes) override {
    cudaPointerAttributes attributes{};
    const cudaError_t rc = cudaPointerGetAttributes(&attributes, pointer);
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();
      *yes = false;
      return ncclOk();
    }
    *yes = (attributes.type == cudaMemoryTypeDevice && attributes.device == device) ||
           attributes.type == cudaMemoryTypeManaged;
    return ncclOk();
  }
  NcclResult deviceAlloc(std::size_t bytes, void** pointer) override {
    return fromCuda(cudaMalloc(pointer, bytes), "cudaMalloc");
  }
  NcclResult deviceFree(void* pointer) override { return fromCuda(cudaFree(pointer), "cudaFree"); }
  NcclResult streamCreate(StreamRef* stream) override {
    cudaStream_t s = nullptr;
    NcclResult r =
        fromCuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    *stream = reinterpret_cast<StreamRef>(s);
    return r;
  }
  NcclResult streamDestroy(StreamRef stream) override {
    return fromCuda(cudaStreamDestroy(raw(stream)), "cudaStreamDestroy");
  }
  NcclResult streamWaitForDefault(StreamRef stream, EventRef marker) override {
    NcclResult r = fromCuda(cudaEventRecord(raw(marker), cudaStreamLegacy), "cudaEventRecord");
    if (!r.ok()) return r;
    return fromCuda(cudaStreamWaitEvent(raw(stream), raw(marker), 0), "cudaStreamWaitEvent");
  }
  NcclResult eventCreate(EventRef* event) override {
    cudaEvent_t e = nullptr;
    NcclResult r =
        fromCuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    *event = reinterpret_cast<EventRef>(e);
    return r;
  }
  NcclResult eventDestroy(EventRef event) override {
    return fromCuda(cudaEventDestroy(raw(event)), "cudaEventDestroy");
  }
  NcclResult eventRecord(EventRef event, StreamRef stream) override {
    return fromCuda(cudaEventRecord(raw(event), raw(stream)), "cudaEventRecord");
  }
  NcclResult eventQuery(EventRef event, bool* done) override {
    const cudaError_t rc = cudaEventQuery(raw(event));
    *done = rc == cudaSuccess;
    if (rc == cudaErrorNotReady) return ncclOk();
    return fromCuda(rc, "cudaEventQuery");
  }

  NcclResult uniqueId(std::string* id) override {
    ncclUniqueId raw{};
    NcclResult r = fromNccl(ncclGetUniqueId(&raw), "ncclGetUniqueId");
    id->assign(raw.internal, sizeof(raw.internal));
    return r;
  }
  NcclResult commInitRank(CommRef* comm, int size, const std::string& id, int rank,
                          const std::string& name) override {
    ncclUniqueId raw{};
    if (id.size() != sizeof(raw.internal)) {
      return {NcclCode::kInvalidArgument, "ncclCommInitRankConfig: the unique id has " +
                                              std::to_string(id.size()) + " bytes, not " +
                                              std::to_string(sizeof(raw.internal))};
    }
    std::memcpy(raw.internal, id.data(), id.size());
    ncclConfig_t config = nonblockingConfig(name.c_str());
    *comm = nullptr;
    return fromNccl(
        ncclCommInitRankConfig(reinterpret_cast<ncclComm_t*>(comm), size, raw, rank, &config),
        "ncclCommInitRankConfig");
  }
  NcclResult commAsyncError(CommRef comm) override {
    ncclResult_t async = ncclSuccess;
    NcclResult r = fromNccl(ncclCommGetAsyncError(raw(comm), &async), "ncclCommGetAsyncError");
    if (!r.ok()) return r;
    return fromNccl(async, "the communicator");
  }
  NcclResult commUserRank(CommRef comm, int* rank) override {
    return fromNccl(ncclCommUserRank(raw(comm), rank), "ncclCommUserRank");
  }
  NcclResult commCount(CommRef comm, int* size) override {
    return fromNccl(ncclCommCount(raw(comm), size), "ncclCommCount");
  }
  // A nonblocking split or shrink writes the child's handle when it completes, from NCCL's own
  // thread: NCCL gets the caller's variable, which outlives the wait.
  NcclResult commSplit(CommRef comm, int color, int key, CommRef* child) override {
    ncclConfig_t config = nonblockingConfig(nullptr);
    *child = nullptr;
    return fromNccl(ncclCommSplit(raw(comm), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key,
                                  reinterpret_cast<ncclComm_t*>(child), &config),
                    "ncclCommSplit");
  }
  NcclResult commShrink(CommRef comm, std::span<const int> exclude, bool abortFirst,
                        CommRef* child) override {
    ncclConfig_t config = nonblockingConfig(nullptr);
    // NCCL refuses a null list even when it is empty ("excludeRanksList argument is NULL").
    std::vector<int> list(exclude.begin(), exclude.end());
    list.reserve(1);
    static const auto shrink = optionalEntry<decltype(&ncclCommShrink)>("ncclCommShrink");
    if (shrink == nullptr) return missing("ncclCommShrink");
    *child = nullptr;
    return fromNccl(shrink(raw(comm), list.data(), static_cast<int>(list.size()),
                           reinterpret_cast<ncclComm_t*>(child), &config,
                           abortFirst ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT),
                    "ncclCommShrink");
  }
  NcclResult commRevoke(CommRef comm) override {
    static const auto revoke = optionalEntry<decltype(&ncclCommRevoke)>("ncclCommRevoke");
    if (revoke == nullptr) return missing("ncclCommRevoke");
    return fromNccl(revoke(raw(comm), NCCL_REVOKE_DEFAULT), "ncclCommRevoke");
  }
  NcclResult commAbort(CommRef comm) override {
    return fromNccl(ncclCommAbort(raw(comm)), "ncclCommAbort");
  }
  NcclResult commFinalize(CommRef comm) override {
    return fromNccl(ncclCommFinalize(raw(comm)), "ncclCommFinalize");
  }
  NcclResult commDestroy(CommRef comm) override {
    return fromNccl(ncclCommDestroy(raw(comm)), "ncclCommDestroy");
  }

  NcclResult groupStart() override { return fromNccl(ncclGroupStart(), "ncclGroupStart"); }
  NcclResult groupEnd() override { return fromNccl(ncclGroupEnd(), "ncclGroupEnd"); }

  NcclResult issue(const NcclOpCall& call, CommRef comm, StreamRef stream) override {
    const ncclDataType_t type = toNccl(call.dtype);
    const ncclRedOp_t op = toNccl(call.op);
    ncclComm_t c = raw(comm);
    cudaStream_t s = raw(stream);
    switch (call.kind) {
      case NcclOpKind::kAllReduce:
        return fromNccl(ncclAllReduce(call.send, call.recv, call.count, type, op, c, s),
                        "ncclAllReduce");
      case NcclOpKind::kReduce:
        return fromNccl(ncclReduce(call.send, call.recv, call.count, type, op, call.root, c, s),
                        "ncclReduce");
      case NcclOpKind::kBroadcast:
        return fromNccl(ncclBroadcast(call.send, call.recv, call.count, type, call.root, c, s),
                        "ncclBroadcast");
      case NcclOpKind::kAllGather:
        return fromNccl(ncclAllGather(call.send, call.recv, call.count, type, c, s),
                        "ncclAllGather");
      case NcclOpKind::kReduceScatter:
        return fromNccl(ncclReduceScatter(call.send, call.recv, call.count, type, op, c, s),
                        "ncclReduceScatter");
      case NcclOpKind::kAllToAll:
        return fromNccl(ncclAlltoAll(call.send, call.recv, call.count, type, c, s), "ncclAlltoAll");
      case NcclOpKind::kGather:
        return fromNccl(ncclGather(call.send, call.recv, call.count, type, call.root, c, s),
                        "ncclGather");
      case NcclOpKind::kScatter:
        return fromNccl(ncclScatter(call.send, call.recv, call.count, type, call.root, c, s),
                        "ncclScatter");
      case NcclOpKind::kSend:
        return fromNccl(ncclSend(call.send, call.count, type, call.root, c, s), "ncclSend");
      case NcclOpKind::kRecv:
        return fromNccl(ncclRecv(call.recv, call.count, type, call.root, c, s), "ncclRecv");
    }
    return {NcclCode::kInvalidArgument, "unknown NCCL operation"};
  }

  NcclResult memAlloc(std::size_t bytes, void** pointer) override {
    return fromNccl(ncclMemAlloc(pointer, bytes), "ncclMemAlloc");
  }
  NcclResult memFree(void* pointer) override {
    return fromNccl(ncclMemFree(pointer), "ncclMemFree");
  }
  NcclResult windowRegister(CommRef comm, void* buffer, std::size_t bytes,
                            WindowRef* window) override {
    ncclWindow_t w = nullptr;
    NcclResult r =
        fromNccl(ncclCommWindowRegister(raw(comm), buffer, bytes, &w, NCCL_WIN_COLL_SYMMETRIC),
                 "ncclCommWindowRegister");
    *window = reinterpret_cast<WindowRef>(w);
    return r;
  }
  NcclResult windowDeregister(CommRef comm, WindowRef window) override {
    return fromNccl(ncclCommWindowDeregister(raw(comm), reinterpret_cast<ncclWindow_t>(window)),
                    "ncclCommWindowDeregister");
  }
};

}  // namespace

std::unique_ptr<NcclApi> makeVendorApi(std::string* /*why*/) {
  return std::make_unique<VendorApi>();
}

}  // namespace ftcomm::nccl
