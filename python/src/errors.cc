#include "python/src/errors.h"

#include <string>

namespace py = pybind11;

namespace ftcomm::python {

void setError(StatusCode code, const std::string& message) {
  py::object classes = py::module_::import("ftcomm.errors").attr("BY_CODE");
  py::str name(std::string(statusCodeName(code)));
  py::object cls = classes.contains(name) ? classes[name] : classes["Internal"];
  PyErr_SetObject(cls.ptr(), py::str(message).ptr());
}

void raise(const Status& status) {
  setError(status.code(), status.message());
  throw py::error_already_set();
}

}  // namespace ftcomm::python
