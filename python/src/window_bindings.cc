// ftcomm.Window: RMA windows. Sources and destinations are numpy arrays or CPU tensors, whose
// bytes are moved; offsets are byte offsets into the target's region. A window is collective to
// make and to free (close(), or the end of a `with` block).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>

#include "ftcomm/window.h"
#include "python/src/bindings.h"
#include "python/src/buffers.h"
#include "python/src/errors.h"
#include "python/src/py_work.h"

namespace py = pybind11;

namespace ftcomm::python {

namespace {

// The Window and the Communicator it was made over (which must outlive it).
struct PyWindow {
  std::shared_ptr<Communicator> comm;
  std::unique_ptr<Window> window;

  Window& get() {
    if (!window) raise(failedPrecondition("the window was closed"));
    return *window;
  }
};

}  // namespace

void bindWindow(py::module_& m) {
  py::class_<PyWindow, std::shared_ptr<PyWindow>>(m, "Window")
      .def_static(
          "allocate",
          [](std::shared_ptr<Communicator> comm, std::size_t bytes, std::size_t signalSlots) {
            WindowOptions o;
            o.signalSlots = signalSlots;
            auto w = released([&] { return Window::allocate(*comm, bytes, o); });
            return std::make_shared<PyWindow>(PyWindow{comm, take(std::move(w))});
          },
          py::arg("comm"), py::arg("bytes"), py::kw_only(), py::arg("signal_slots") = 64,
          "Collective: a zero-filled region of `bytes` on this member.")
      .def_property_readonly(
          "memory",
          [](py::object self) {
            auto& w = self.cast<PyWindow&>().get();
            return py::array(py::dtype::of<std::uint8_t>(), {w.bytes()}, {1},
                             static_cast<std::uint8_t*>(w.data()), self);
          },
          "This member's region as a uint8 numpy array (valid until close()).")
      .def("bytes_of", [](PyWindow& self, int rank) { return self.get().bytesOf(rank); })
      .def(
          "put",
          [](PyWindow& self, py::handle source, int target, std::size_t offset,
             std::optional<double> timeout, bool asyncOp) {
            Buffer b = asBuffer(source, "source", false);
            Window& w = self.get();
            return post(
                [&] { return w.put(b.data, b.bytes(), target, offset, opOptions(timeout)); },
                {b.owner}, asyncOp);
          },
          py::arg("source"), py::arg("target"), py::arg("offset") = 0, py::kw_only(),
          py::arg("timeout") = py::none(), py::arg("async_op") = false)
      .def(
          "get",
          [](PyWindow& self, py::handle destination, int target, std::size_t offset,
             std::optional<double> timeout, bool asyncOp) {
            Buffer b = asBuffer(destination, "destination", true);
            Window& w = self.get();
            return post(
                [&] { return w.get(b.data, b.bytes(), target, offset, opOptions(timeout)); },
                {b.owner}, asyncOp);
          },
          py::arg("destination"), py::arg("target"), py::arg("offset") = 0, py::kw_only(),
          py::arg("timeout") = py::none(), py::arg("async_op") = false)
      .def(
          "atomic_add",
          [](PyWindow& self, int target, std::size_t offset, std::int64_t value,
             std::optional<double> timeout) {
            std::int64_t previous = 0;
            Window& w = self.get();
            auto s = released([&] {
              return w.atomicAdd(target, offset, value, &previous, opOptions(timeout)).wait();
            });
            check(s);
            return previous;
          },
          py::arg("target"), py::arg("offset"), py::arg("value"), py::kw_only(),
          py::arg("timeout") = py::none(), "The int64's value before the add.")
      .def(
          "signal",
          [](PyWindow& self, int target, std::size_t slot, std::uint64_t value,
             std::optional<double> timeout, bool asyncOp) {
            Window& w = self.get();
            return post([&] { return w.signal(target, slot, value, opOptions(timeout)); }, {},
                        asyncOp);
          },
          py::arg("target"), py::arg("slot"), py::arg("value") = 1, py::kw_only(),
          py::arg("timeout") = py::none(), py::arg("async_op") = false)
      .def(
          "wait_signal",
          [](PyWindow& self, std::size_t slot, std::uint64_t expected, double timeout) {
            Window& w = self.get();
            auto s = released([&] {
              return w.waitSignal(slot, expected,
                                  std::chrono::milliseconds(static_cast<long long>(timeout * 1e3)));
            });
            check(s);
          },
          py::arg("slot"), py::arg("expected"), py::arg("timeout"))
      .def("signal_value",
           [](PyWindow& self, std::size_t slot) { return self.get().signalValue(slot); })
      .def(
          "flush",
          [](PyWindow& self, int target) {
            Window& w = self.get();
            return post([&] { return w.flush(target); }, {}, false);
          },
          py::arg("target"))
      .def("flush_all",
           [](PyWindow& self) {
             Window& w = self.get();
             return post([&] { return w.flushAll(); }, {}, false);
           })
      .def(
          "fence",
          [](PyWindow& self, std::optional<double> timeout) {
            Window& w = self.get();
            return post([&] { return w.fence(opOptions(timeout)); }, {}, false);
          },
          py::kw_only(), py::arg("timeout") = py::none())
      .def("reconfigure",
           [](PyWindow& self) {
             Window& w = self.get();
             auto s = released([&] { return w.reconfigure(); });
             check(s);
           })
      .def(
          "close",
          [](PyWindow& self) {
            py::gil_scoped_release release;
            self.window.reset();
          },
          "Collective: frees the window on this member.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyWindow& self, py::args) {
        py::gil_scoped_release release;
        self.window.reset();
      });
}

}  // namespace ftcomm::python
