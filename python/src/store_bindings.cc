// ftcomm.JobStore: the job's key-value store; values are bytes (a str is stored as UTF-8).
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "ftcomm/store.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/py_work.h"

namespace py = pybind11;

namespace ftcomm::python {

namespace {

std::string bytesOf(py::handle value) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::bytes>(value))
    return std::string(py::reinterpret_borrow<py::bytes>(value));
  raise(invalidArgument("store values are bytes or str, not " +
                        std::string(py::str(py::type::handle_of(value).attr("__name__")))));
}

}  // namespace

void bindStore(py::module_& m) {
  py::class_<JobStore>(m, "JobStore",
                       "The job's key-value store on the rendezvous: it outlives every member.")
      .def(
          "set",
          [](JobStore& self, const std::string& key, py::handle value) {
            std::string v = bytesOf(value);
            auto s = released([&] { return self.set(key, v); });
            check(s);
          },
          py::arg("key"), py::arg("value"))
      .def(
          "get",
          [](JobStore& self, const std::string& key) -> py::object {
            auto r = released([&] { return self.get(key); });
            auto v = take(std::move(r));
            if (!v) return py::none();
            return py::bytes(*v);
          },
          py::arg("key"), "The value, or None; does not wait.")
      .def(
          "wait",
          [](JobStore& self, std::vector<std::string> keys, double timeout) {
            auto r = released([&] {
              return self.wait(keys,
                               std::chrono::milliseconds(static_cast<long long>(timeout * 1e3)));
            });
            py::list out;
            for (auto& v : take(std::move(r))) out.append(py::bytes(v));
            return out;
          },
          py::arg("keys"), py::arg("timeout"), "The values once every key exists; seconds.")
      .def(
          "add",
          [](JobStore& self, const std::string& key, std::int64_t delta) {
            auto r = released([&] { return self.add(key, delta); });
            return take(std::move(r));
          },
          py::arg("key"), py::arg("delta"))
      .def(
          "compare_set",
          [](JobStore& self, const std::string& key, py::handle expected, py::handle desired) {
            std::string e = bytesOf(expected), d = bytesOf(desired);
            auto r = released([&] { return self.compareSet(key, e, d); });
            return py::bytes(take(std::move(r)));
          },
          py::arg("key"), py::arg("expected"), py::arg("desired"))
      .def(
          "remove",
          [](JobStore& self, const std::string& key) {
            auto r = released([&] { return self.remove(key); });
            return take(std::move(r));
          },
          py::arg("key"))
      .def(
          "count",
          [](JobStore& self, const std::string& prefix) {
            auto r = released([&] { return self.count(prefix); });
            return take(std::move(r));
          },
          py::arg("prefix") = "");
}

}  // namespace ftcomm::python
