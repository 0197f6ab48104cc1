// ftcomm.Communicator: creation, properties, membership (split, groups, reconfigure, revoke) and
// the flight recorder; the collectives are in collective_bindings.cc. The post and every wait
// release the GIL.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ftcomm/communicator.h"
#include "python/src/bindings.h"
#include "python/src/buffers.h"
#include "python/src/errors.h"
#include "python/src/py_work.h"

namespace py = pybind11;

namespace ftcomm::python {

namespace {

using CommPtr = std::shared_ptr<Communicator>;

py::object childOrNone(Result<std::unique_ptr<Communicator>> child) {
  auto c = take(std::move(child));
  if (!c) return py::none();
  return py::cast(CommPtr(std::move(c)));
}

CommPtr create(int rank, int size, std::string rendezvous, std::string job, std::string token,
               std::string name, double timeout, std::optional<double> opTimeout, bool replacement,
               int minSize, std::string tuning, std::string rendezvousCa,
               std::string rendezvousCert, std::string rendezvousKey) {
  CommOptions o;
  o.rank = rank;
  o.size = size;
  o.rendezvous = std::move(rendezvous);
  o.job = std::move(job);
  o.token = std::move(token);
  o.name = std::move(name);
  o.timeout = toMs(timeout);
  o.opTimeout = toMs(opTimeout);
  o.replacement = replacement;
  o.minSize = minSize;
  o.tuning = std::move(tuning);
  o.rendezvousCa = std::move(rendezvousCa);
  o.rendezvousCert = std::move(rendezvousCert);
  o.rendezvousKey = std::move(rendezvousKey);
  auto made = released([&] { return Communicator::create(o); });
  return CommPtr(take(std::move(made)));
}

}  // namespace

void bindCommunicator(py::module_& m) {
  py::class_<Reconfiguration>(m, "Reconfiguration",
                              "What reconfigure() agreed on: the new epoch, this member's rank "
                              "and the size, each old rank's new one (-1: gone), and the ranks "
                              "of the replacements admitted.")
      .def_readonly("epoch", &Reconfiguration::epoch)
      .def_readonly("rank", &Reconfiguration::rank)
      .def_readonly("size", &Reconfiguration::size)
      .def_readonly("old_to_new", &Reconfiguration::oldToNew)
      .def_readonly("admitted", &Reconfiguration::admitted)
      .def_readonly("rounds", &Reconfiguration::rounds)
      .def_property_readonly("left",
                             [](const Reconfiguration& r) {
                               std::vector<int> gone;
                               for (std::size_t i = 0; i < r.oldToNew.size(); ++i) {
                                 if (r.oldToNew[i] < 0) gone.push_back(static_cast<int>(i));
                               }
                               return gone;
                             })
      .def("__repr__", [](const Reconfiguration& r) {
        return "Reconfiguration(epoch=" + std::to_string(r.epoch) +
               ", rank=" + std::to_string(r.rank) + ", size=" + std::to_string(r.size) + ")";
      });

  py::class_<Communicator, CommPtr> c(m, "Communicator");
  c.def_static("create", &create, py::kw_only(), py::arg("rank") = -1, py::arg("size") = -1,
               py::arg("rendezvous") = "", py::arg("job") = "", py::arg("token") = "",
               py::arg("name") = "world", py::arg("timeout") = 60.0,
               py::arg("op_timeout") = py::none(), py::arg("replacement") = false,
               py::arg("min_size") = 0, py::arg("tuning") = "", py::arg("rendezvous_ca") = "",
               py::arg("rendezvous_cert") = "", py::arg("rendezvous_key") = "",
               "Joins the job through the rendezvous (FTCOMM_* or mpirun's environment fill "
               "what is not given); timeouts in seconds.");
  c.def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("epoch", &Communicator::epoch)
      .def_property_readonly("id", &Communicator::id)
      .def_property_readonly("name", &Communicator::name)
      .def_property_readonly("tuning_profile", &Communicator::tuningProfile)
      .def_property_readonly("parent_ranks", &Communicator::parentRanks)
      .def_property_readonly("world_ranks", &Communicator::worldRanks)
      .def_property_readonly("replacements_waiting", &Communicator::replacementsWaiting)
      .def_property_readonly("joined_as_replacement", &Communicator::joinedAsReplacement);

  bindCollectives(c);
  c.def(
      "share_state",
      [](Communicator& self, py::handle buffer, std::optional<double> timeout, bool asyncOp) {
        Buffer b = asBuffer(buffer, "buffer", self.rank() != 0);
        return post([&] { return self.shareState(b.data, b.count, b.dtype, opOptions(timeout)); },
                    {b.owner}, asyncOp);
      },
      py::arg("buffer"), py::kw_only(), py::arg("timeout") = py::none(),
      py::arg("async_op") = false,
      "After a reconfigure() that admitted replacements: rank 0's buffer to everyone.");

  c.def(
      "split",
      [](Communicator& self, int color, int key, std::optional<double> timeout) {
        return childOrNone(released([&] { return self.split(color, key, opOptions(timeout)); }));
      },
      py::arg("color"), py::arg("key") = 0, py::kw_only(), py::arg("timeout") = py::none(),
      "Collective; None for color -1.");
  c.def(
      "split_ranks",
      [](Communicator& self, std::vector<int> ranks, std::optional<double> timeout) {
        return childOrNone(released([&] { return self.split(ranks, opOptions(timeout)); }));
      },
      py::arg("ranks"), py::kw_only(), py::arg("timeout") = py::none(),
      "Collective over every member; None for those not listed.");
  c.def(
      "create_group",
      [](Communicator& self, std::vector<int> ranks, const std::string& tag,
         std::optional<double> timeout) {
        return childOrNone(
            released([&] { return self.createGroup(ranks, tag, opOptions(timeout)); }));
      },
      py::arg("ranks"), py::arg("tag"), py::kw_only(), py::arg("timeout") = py::none(),
      "Only the listed members call it.");
  c.def(
      "reconfigure",
      [](Communicator& self, std::optional<double> timeout) {
        ReconfigureOptions o;
        o.timeout = toMs(timeout);
        auto r = released([&] { return self.reconfigure(o); });
        return take(std::move(r));
      },
      py::kw_only(), py::arg("timeout") = py::none());
  c.def(
      "revoke", [](Communicator& self, const std::string& reason) { check(self.revoke(reason)); },
      py::arg("reason") = "revoked by the application");
  c.def(
      "abort", [](Communicator& self, const std::string& reason) { self.abort(reason); },
      py::arg("reason") = "aborted by the application");
  c.def(
      "check_health", [](const Communicator& self) { check(self.health()); },
      "Raises why the communicator is unusable; returns while it is usable.");
  c.def_property_readonly("healthy", [](const Communicator& self) { return self.health().ok(); });
  c.def(
      "dump_flight_recorder",
      [](Communicator& self, const std::string& reason) {
        return take(self.dumpFlightRecorder(reason));
      },
      py::arg("reason") = "requested by the application", "The dump file's path.");
  c.def(
      "store", [](const Communicator& self) { return take(self.store()); },
      "The job's key-value store on the rendezvous (world communicators only).");
  c.def("__repr__", [](const Communicator& self) {
    return "<ftcomm.Communicator " + self.name() + " rank " + std::to_string(self.rank()) + " of " +
           std::to_string(self.size()) + ", epoch " + std::to_string(self.epoch()) + ">";
  });
}

}  // namespace ftcomm::python
