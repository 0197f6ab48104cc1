// CPU tensors as ftcomm's operations take them, and torch's reduce ops as ftcomm's. Anything
// ftcomm cannot do (a CUDA or sparse tensor, a non-contiguous one, a list of more than one
// tensor per process, PREMUL_SUM) is refused with a c10::Error that says so, at the call.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

#include "ftcomm/types.h"

namespace ftcomm::torch_backend {

DataType dataTypeOf(const at::Tensor& tensor, const char* op);
// Also checks that `op` is defined on the tensor's type. A bool's SUM is an OR (MAX) and its
// PRODUCT an AND (MIN), as NCCL's backend does.
ReduceOp reduceOpOf(const c10d::ReduceOp& op, const at::Tensor& tensor, const char* what);
// The one tensor of a per-process list (one device per process on CPU).
const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* op);
// Checks that every tensor has `numel` elements and `like`'s dtype.
void checkSame(const std::vector<at::Tensor>& tensors, const at::Tensor& like, int64_t numel,
               const char* op, const char* what);
// One contiguous buffer of the tensors' elements, in order.
at::Tensor flatten(const std::vector<at::Tensor>& tensors);
// Copies `flat` back into `tensors` (the reverse of flatten).
void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& tensors);

}  // namespace ftcomm::torch_backend
