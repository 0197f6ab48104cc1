// ftcomm._core: the C++ library for Python. The ftcomm package re-exports it with the
// exception classes of ftcomm.errors.
#include <pybind11/pybind11.h>

#include "ftcomm/version.h"
#include "python/src/bindings.h"
#include "python/src/py_work.h"

namespace py = pybind11;

namespace ftcomm::python {

void bindWork(py::module_& m) {
  py::class_<PyWork, std::shared_ptr<PyWork>>(
      m, "Work", "A posted operation; it keeps its arrays alive until it has ended.")
      .def("wait", &PyWork::wait, py::arg("timeout") = py::none(),
           "Raises the operation's failure; timeout in seconds (None: its own deadline).")
      .def("is_completed", &PyWork::test)
      .def_property_readonly("bytes", &PyWork::bytes, "Bytes received by a completed recv.")
      .def_property_readonly("status", [](const PyWork& w) { return w.status().toString(); });
}

}  // namespace ftcomm::python

PYBIND11_MODULE(_core, m) {
  m.doc() = "ftcomm: fault-tolerant collectives (the C++ library's bindings)";
  m.attr("__version__") = FTCOMM_VERSION_STRING;
  ftcomm::python::bindWork(m);
  ftcomm::python::bindCommunicator(m);
  ftcomm::python::bindStore(m);
  ftcomm::python::bindWindow(m);
}
