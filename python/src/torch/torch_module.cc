// ftcomm._torch: the c10d backend's classes for Python (ftcomm.torch registers them with
// torch.distributed). It imports torch.distributed first, so that c10d's ProcessGroup and Store
// types are known, and ftcomm._core, whose Communicator it takes.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "python/src/errors.h"
#include "python/src/torch/job_store.h"
#include "python/src/torch/process_group.h"

namespace py = pybind11;

using ftcomm::Communicator;
using ftcomm::torch_backend::CommError;
using ftcomm::torch_backend::FtcommStore;
using ftcomm::torch_backend::ProcessGroupFtcomm;

PYBIND11_MODULE(_torch, m) {
  m.doc() = "ftcomm's torch.distributed backend (c10d ProcessGroup and Store)";
  py::module_::import("torch.distributed");
  py::module_::import("ftcomm._core");

  // A failed operation raises the ftcomm.errors class of its code (PeerFailed, Revoked, ...),
  // all of them RuntimeErrors, wherever torch's bindings let it through (Work.wait, the store).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CommError& e) {
      ftcomm::python::setError(e.code(), e.message());
    }
  });

  py::class_<ProcessGroupFtcomm, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupFtcomm>>(
      m, "ProcessGroupFtcomm", py::dynamic_attr())
      .def(py::init([](std::shared_ptr<Communicator> comm, std::chrono::milliseconds timeout) {
             return c10::make_intrusive<ProcessGroupFtcomm>(std::move(comm), timeout);
           }),
           py::arg("communicator"), py::arg("timeout"))
      .def_property_readonly("communicator", &ProcessGroupFtcomm::communicator)
      .def_property_readonly("epoch", &ProcessGroupFtcomm::epoch)
      .def_property_readonly("timeout", &ProcessGroupFtcomm::timeout);

  py::class_<FtcommStore, c10d::Store, c10::intrusive_ptr<FtcommStore>>(m, "FtcommStore")
      .def(py::init(
               [](const Communicator& comm, std::string prefix, std::chrono::milliseconds timeout) {
                 auto store = comm.store();
                 if (!store.ok()) throw CommError(store.status());
                 return c10::make_intrusive<FtcommStore>(std::move(store).value(),
                                                         std::move(prefix), timeout);
               }),
           py::arg("communicator"), py::arg("prefix"), py::arg("timeout"))
      .def_property_readonly("prefix", &FtcommStore::prefix);
}
