// The memory of a numpy array or a CPU torch.Tensor, as ftcomm's operations take it: a pointer,
// an element count and a DataType. Anything else, a non-contiguous array, a read-only array
// that an operation would write, or a dtype ftcomm does not have is refused with
// InvalidArgument naming the argument.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>

#include "ftcomm/types.h"

namespace ftcomm::python {

struct Buffer {
  void* data = nullptr;
  std::size_t count = 0;  // elements of dtype
  DataType dtype = DataType::kUint8;
  pybind11::object owner;  // keeps the memory alive while an operation uses it

  std::size_t bytes() const { return count * dataTypeSize(dtype); }
};

// `what` names the argument in errors; `writable`: the operation writes into it. Needs the GIL.
Buffer asBuffer(pybind11::handle object, const char* what, bool writable);

}  // namespace ftcomm::python
