// What the NCCL backend makes of the vendor's answers: NcclResult to the one error model, and
// which element types and operators NCCL takes. Pure functions, unit-tested on CPU.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "backends/nccl/nccl_api.h"
#include "ftcomm/status.h"
#include "ftcomm/types.h"

namespace ftcomm::nccl {

// A failed call, by what the caller should do: a remote or system error is a lost peer
// (PeerFailed, reconfigure), a rejected argument InvalidArgument, a missing feature
// FailedPrecondition, a CUDA or internal failure Internal. `context` names the operation.
Status toStatus(const NcclResult& result, const std::string& context);

// Ok when NCCL reduces `type` with `op`: NCCL has no bitwise operators.
Status checkNcclReduction(DataType type, ReduceOp op);

}  // namespace ftcomm::nccl
