#include "python/src/torch/tensors.h"

#include <string>

namespace ftcomm::torch_backend {

DataType dataTypeOf(const at::Tensor& tensor, const char* op) {
  TORCH_CHECK(tensor.device().is_cpu(), "ftcomm ", op, ": a ", tensor.device().str(),
              " tensor; the ftcomm backend takes CPU tensors (Debian's torch is CPU-only)");
  TORCH_CHECK(tensor.layout() == at::kStrided, "ftcomm ", op, ": sparse tensors are not supported");
  TORCH_CHECK(tensor.is_contiguous(), "ftcomm ", op, ": the tensor is not contiguous");
  switch (tensor.scalar_type()) {
    case at::kFloat:
      return DataType::kFloat32;
    case at::kDouble:
      return DataType::kFloat64;
    case at::kHalf:
      return DataType::kFloat16;
    case at::kBFloat16:
      return DataType::kBFloat16;
    case at::kChar:
      return DataType::kInt8;
    case at::kByte:
    case at::kBool:
      return DataType::kUint8;
    case at::kInt:
      return DataType::kInt32;
    case at::kLong:
      return DataType::kInt64;
    default:
      TORCH_CHECK(false, "ftcomm ", op, ": dtype ", tensor.scalar_type(), " is not supported");
  }
}

ReduceOp reduceOpOf(const c10d::ReduceOp& op, const at::Tensor& tensor, const char* what) {
  const bool isBool = tensor.scalar_type() == at::kBool;
  ReduceOp out = ReduceOp::kSum;
  switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
    case c10d::ReduceOp::SUM:
      out = isBool ? ReduceOp::kMax : ReduceOp::kSum;
      break;
    case c10d::ReduceOp::PRODUCT:
      out = isBool ? ReduceOp::kMin : ReduceOp::kProd;
      break;
    case c10d::ReduceOp::MIN:
      out = ReduceOp::kMin;
      break;
    case c10d::ReduceOp::MAX:
      out = ReduceOp::kMax;
      break;
    case c10d::ReduceOp::AVG:
      out = ReduceOp::kAvg;
      break;
    case c10d::ReduceOp::BAND:
      out = ReduceOp::kBand;
      break;
    case c10d::ReduceOp::BOR:
      out = ReduceOp::kBor;
      break;
    case c10d::ReduceOp::BXOR:
      out = ReduceOp::kBxor;
      break;
    case c10d::ReduceOp::PREMUL_SUM:
      TORCH_CHECK(false, "ftcomm ", what,
                  ": PREMUL_SUM is not supported (torch 1.13 makes it for NCCL only); scale the "
                  "tensor, then reduce with SUM");
    default:
      TORCH_CHECK(false, "ftcomm ", what, ": unknown reduce op ", static_cast<int>(op));
  }
  Status valid = checkReduction(dataTypeOf(tensor, what), out);
  TORCH_CHECK(valid.ok(), "ftcomm ", what, ": ", valid.message());
  return out;
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "ftcomm ", op, ": expects one tensor per process, got ",
              tensors.size());
  return tensors.front();
}

void checkSame(const std::vector<at::Tensor>& tensors, const at::Tensor& like, int64_t numel,
               const char* op, const char* what) {
  for (const auto& t : tensors) {
    TORCH_CHECK(t.numel() == numel && t.scalar_type() == like.scalar_type(), "ftcomm ", op, ": ",
                what, " tensors need ", numel, " elements of ", like.scalar_type(), ", got ",
                t.numel(), " of ", t.scalar_type());
    (void)dataTypeOf(t, op);
  }
}

at::Tensor flatten(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (auto& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
    offset += t.numel();
  }
}

}  // namespace ftcomm::torch_backend
