#include "python/src/errors.h"

#include <string>

namespace py = pybind11;

namespace ftcomm::python {

void raise(const Status& status) {
  py::object classes = py::module_::import("ftcomm.errors").attr("BY_CODE");
  py::str name(std::string(statusCodeName(status.code())));
  py::object cls = classes.contains(name) ? classes[name] : classes["Internal"];
  PyErr_SetObject(cls.ptr(), py::str(status.message()).ptr());
  throw py::error_already_set();
}

}  // namespace ftcomm::python
