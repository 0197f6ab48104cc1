#include "backends/nccl/nccl_status.h"

namespace ftcomm::nccl {

std::string_view ncclCodeName(NcclCode code) {
  switch (code) {
    case NcclCode::kSuccess:
      return "ncclSuccess";
    case NcclCode::kInProgress:
      return "ncclInProgress";
    case NcclCode::kUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case NcclCode::kSystemError:
      return "ncclSystemError";
    case NcclCode::kInternalError:
      return "ncclInternalError";
    case NcclCode::kInvalidArgument:
      return "ncclInvalidArgument";
    case NcclCode::kInvalidUsage:
      return "ncclInvalidUsage";
    case NcclCode::kRemoteError:
      return "ncclRemoteError";
    case NcclCode::kCudaError:
      return "CUDA error";
    case NcclCode::kNotSupported:
      return "not supported";
  }
  return "unknown NCCL result";
}

Status toStatus(const NcclResult& result, const std::string& context) {
  if (result.ok()) return Status::Ok();
  const std::string what = context + ": " + std::string(ncclCodeName(result.code)) +
                           (result.detail.empty() ? "" : " (" + result.detail + ")");
  switch (result.code) {
    case NcclCode::kSuccess:
      return Status::Ok();
    case NcclCode::kInProgress:
      return unavailable(what + "; still in progress");
    case NcclCode::kRemoteError:
    case NcclCode::kSystemError:
      return Status(StatusCode::kPeerFailed, what + ": a peer or the network failed");
    case NcclCode::kInvalidArgument:
    case NcclCode::kInvalidUsage:
      return invalidArgument(what);
    case NcclCode::kNotSupported:
      return failedPrecondition(what);
    case NcclCode::kUnhandledCudaError:
    case NcclCode::kInternalError:
    case NcclCode::kCudaError:
      return internalError(what);
  }
  return internalError(what);
}

Status checkNcclReduction(DataType type, ReduceOp op) {
  if (Status s = checkReduction(type, op); !s.ok()) return s;
  switch (op) {
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return invalidArgument("reduce op " + std::string(reduceOpName(op)) +
                             " is not offered by NCCL (sum, prod, min, max and avg are)");
    default:
      return Status::Ok();
  }
}

}  // namespace ftcomm::nccl
