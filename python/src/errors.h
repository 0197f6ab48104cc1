// ftcomm's Status as a Python exception of the class named after its code (ftcomm.errors).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "ftcomm/status.h"

namespace ftcomm::python {

// Sets the Python error of the class named after `code` (ftcomm.errors.BY_CODE); needs the GIL.
void setError(StatusCode code, const std::string& message);

// Raises the exception (throws pybind11::error_already_set); needs the GIL.
[[noreturn]] void raise(const Status& status);

inline void check(const Status& status) {
  if (!status.ok()) raise(status);
}

template <typename T>
T take(Result<T> result) {
  if (!result.ok()) raise(result.status());
  return std::move(result).value();
}

}  // namespace ftcomm::python
