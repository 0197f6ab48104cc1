#include "python/src/buffers.h"

#include <pybind11/numpy.h>

#include <string>
#include <utility>

#include "python/src/errors.h"

namespace py = pybind11;

namespace ftcomm::python {

namespace {

struct DtypeName {
  const char* name;
  DataType type;
};

// torch's dtype names; a bool is a byte of 0 or 1.
constexpr DtypeName kTorchDtypes[] = {
    {"torch.float32", DataType::kFloat32}, {"torch.float64", DataType::kFloat64},
    {"torch.float16", DataType::kFloat16}, {"torch.bfloat16", DataType::kBFloat16},
    {"torch.int8", DataType::kInt8},       {"torch.uint8", DataType::kUint8},
    {"torch.int32", DataType::kInt32},     {"torch.int64", DataType::kInt64},
    {"torch.bool", DataType::kUint8},
};

[[noreturn]] void refuse(const char* what, const std::string& why) {
  raise(invalidArgument(std::string(what) + ": " + why));
}

Buffer fromTensor(py::handle tensor, const char* what) {
  const std::string device = py::str(tensor.attr("device").attr("type"));
  if (device != "cpu") {
    refuse(what, "a " + device +
                     " tensor; ftcomm's host communicator takes CPU tensors (Debian's torch is "
                     "CPU-only; device tensors go through the NCCL backend in C++)");
  }
  if (!tensor.attr("is_contiguous")().cast<bool>()) {
    refuse(what, "the tensor is not contiguous; pass tensor.contiguous() and copy back");
  }
  if (tensor.attr("is_sparse").cast<bool>()) refuse(what, "sparse tensors are not supported");
  const std::string dtype = py::str(tensor.attr("dtype"));
  for (const auto& entry : kTorchDtypes) {
    if (dtype == entry.name) {
      Buffer b;
      b.data = reinterpret_cast<void*>(tensor.attr("data_ptr")().cast<std::uintptr_t>());
      b.count = tensor.attr("numel")().cast<std::size_t>();
      b.dtype = entry.type;
      b.owner = py::reinterpret_borrow<py::object>(tensor);
      return b;
    }
  }
  refuse(what, "dtype " + dtype + " is not one of ftcomm's");
}

Result<DataType> numpyType(char kind, std::size_t itemsize) {
  struct Entry {
    char kind;
    std::size_t size;
    DataType type;
  };
  static constexpr Entry kEntries[] = {
      {'f', 2, DataType::kFloat16}, {'f', 4, DataType::kFloat32}, {'f', 8, DataType::kFloat64},
      {'i', 1, DataType::kInt8},    {'i', 4, DataType::kInt32},   {'i', 8, DataType::kInt64},
      {'u', 1, DataType::kUint8},   {'u', 4, DataType::kUint32},  {'u', 8, DataType::kUint64},
      {'b', 1, DataType::kUint8},
  };
  for (const auto& e : kEntries) {
    if (e.kind == kind && e.size == itemsize) return e.type;
  }
  return invalidArgument("numpy dtype kind '" + std::string(1, kind) + "' of " +
                         std::to_string(itemsize) + " bytes is not one of ftcomm's");
}

}  // namespace

Buffer asBuffer(py::handle object, const char* what, bool writable) {
  if (py::hasattr(object, "data_ptr") && py::hasattr(object, "is_contiguous")) {
    return fromTensor(object, what);
  }
  if (!py::isinstance<py::array>(object)) {
    refuse(what, std::string("expected a numpy array or a CPU torch.Tensor, got ") +
                     std::string(py::str(py::type::handle_of(object).attr("__name__"))));
  }
  auto array = py::reinterpret_borrow<py::array>(object);
  if (!(array.flags() & py::array::c_style)) {
    refuse(what, "the array is not C-contiguous; pass numpy.ascontiguousarray(...) and copy back");
  }
  if (writable && !array.writeable()) refuse(what, "the array is read-only, and it is written");
  auto type = numpyType(array.dtype().kind(), static_cast<std::size_t>(array.itemsize()));
  if (!type.ok()) refuse(what, type.status().message());
  Buffer b;
  b.data = const_cast<void*>(array.data());
  b.count = static_cast<std::size_t>(array.size());
  b.dtype = *type;
  b.owner = std::move(array);
  return b;
}

}  // namespace ftcomm::python
