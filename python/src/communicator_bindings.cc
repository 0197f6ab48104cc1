// ftcomm.Communicator: every operation of the C++ Communicator on numpy arrays and CPU tensors.
// Buffer sizes are checked against each other here (the C++ API takes counts and cannot);
// the post and every wait release the GIL.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ftcomm/communicator.h"
#include "python/src/bindings.h"
#include "python/src/buffers.h"
#include "python/src/counts.h"
#include "python/src/errors.h"
#include "python/src/py_work.h"

namespace py = pybind11;

namespace ftcomm::python {

namespace {

using CommPtr = std::shared_ptr<Communicator>;

void sameType(const Buffer& a, const Buffer& b, const char* op) {
  if (a.dtype != b.dtype) {
    raise(invalidArgument(std::string(op) + ": send is " + std::string(dataTypeName(a.dtype)) +
                          " but recv is " + std::string(dataTypeName(b.dtype))));
  }
}

void counts(bool ok, const char* op, const std::string& rule, const Buffer& send,
            const Buffer& recv) {
  if (ok) return;
  raise(invalidArgument(std::string(op) + ": " + rule + " (send has " + std::to_string(send.count) +
                        " elements, recv " + std::to_string(recv.count) + ")"));
}

// recv defaults to send (in place).
std::pair<Buffer, Buffer> sendRecv(py::handle send, py::handle recv, const char* op) {
  Buffer s = asBuffer(send, "send", recv.is_none());
  Buffer r = recv.is_none() ? s : asBuffer(recv, "recv", true);
  sameType(s, r, op);
  return {std::move(s), std::move(r)};
}

std::vector<py::object> keep(const Buffer& a, const Buffer& b) {
  return {a.owner, b.owner};
}

std::size_t total(const std::vector<std::size_t>& counts) {
  std::size_t n = 0;
  for (auto c : counts) n += c;
  return n;
}

ReduceOp reduceOp(const std::string& name) {
  if (name == "product") return ReduceOp::kProd;
  for (const auto& t : kReduceOps) {
    if (t.name == name) return t.op;
  }
  raise(invalidArgument("unknown reduce op '" + name +
                        "'; one of sum, prod, min, max, avg, band, bor, bxor"));
}

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

  c.def(
      "all_reduce",
      [](Communicator& self, py::handle send, py::handle recv, const std::string& op,
         std::optional<double> timeout, bool asyncOp) {
        auto [s, r] = sendRecv(send, recv, "all_reduce");
        counts(s.count == r.count, "all_reduce", "send and recv need the same size", s, r);
        const ReduceOp rop = reduceOp(op);
        return post(
            [&] {
              return self.allReduce(s.data, r.data, s.count, s.dtype, rop, opOptions(timeout));
            },
            keep(s, r), asyncOp);
      },
      py::arg("send"), py::arg("recv") = py::none(), py::kw_only(), py::arg("op") = "sum",
      py::arg("timeout") = py::none(), py::arg("async_op") = false);
  c.def(
      "reduce",
      [](Communicator& self, py::handle send, py::handle recv, int root, const std::string& op,
         std::optional<double> timeout, bool asyncOp) {
        // Every member needs a receive buffer (the tree's partial results pass through it); a
        // member that gives none gets scratch, and the root's default is in place.
        const bool isRoot = self.rank() == root;
        Buffer s = asBuffer(send, "send", recv.is_none() && isRoot);
        py::object scratch =
            recv.is_none() && !isRoot
                ? (py::hasattr(s.owner, "data_ptr")
                       ? s.owner.attr("clone")()
                       : py::module_::import("numpy").attr("empty_like")(s.owner))
                : py::reinterpret_borrow<py::object>(recv.is_none() ? py::handle(s.owner) : recv);
        Buffer r = asBuffer(scratch, "recv", true);
        sameType(s, r, "reduce");
        counts(s.count == r.count, "reduce", "send and recv need the same size", s, r);
        const ReduceOp rop = reduceOp(op);
        return post(
            [&] {
              return self.reduce(s.data, r.data, s.count, s.dtype, rop, root, opOptions(timeout));
            },
            keep(s, r), asyncOp);
      },
      py::arg("send"), py::arg("recv") = py::none(), py::kw_only(), py::arg("root") = 0,
      py::arg("op") = "sum", py::arg("timeout") = py::none(), py::arg("async_op") = false);
  c.def(
      "broadcast",
      [](Communicator& self, py::handle buffer, int root, std::optional<double> timeout,
         bool asyncOp) {
        Buffer b = asBuffer(buffer, "buffer", self.rank() != root);
        return post(
            [&] { return self.broadcast(b.data, b.count, b.dtype, root, opOptions(timeout)); },
            {b.owner}, asyncOp);
      },
      py::arg("buffer"), py::kw_only(), py::arg("root") = 0, py::arg("timeout") = py::none(),
      py::arg("async_op") = false);
  c.def(
      "all_gather",
      [](Communicator& self, py::handle send, py::handle recv, std::optional<double> timeout,
         bool asyncOp) {
        Buffer s = asBuffer(send, "send", false);
        Buffer r = asBuffer(recv, "recv", true);
        sameType(s, r, "all_gather");
        counts(r.count == s.count * static_cast<std::size_t>(self.size()), "all_gather",
               "recv needs size() times send's elements", s, r);
        return post(
            [&] { return self.allGather(s.data, r.data, s.count, s.dtype, opOptions(timeout)); },
            keep(s, r), asyncOp);
      },
      py::arg("send"), py::arg("recv"), py::kw_only(), py::arg("timeout") = py::none(),
      py::arg("async_op") = false);
  c.def(
      "reduce_scatter",
      [](Communicator& self, py::handle send, py::handle recv, const std::string& op,
         std::optional<double> timeout, bool asyncOp) {
        Buffer s = asBuffer(send, "send", false);
        Buffer r = asBuffer(recv, "recv", true);
        sameType(s, r, "reduce_scatter");
        counts(s.count == r.count * static_cast<std::size_t>(self.size()), "reduce_scatter",
               "send needs size() times recv's elements", s, r);
        const ReduceOp rop = reduceOp(op);
        return post(
            [&] {
              return self.reduceScatter(s.data, r.data, r.count, s.dtype, rop, opOptions(timeout));
            },
            keep(s, r), asyncOp);
      },
      py::arg("send"), py::arg("recv"), py::kw_only(), py::arg("op") = "sum",
      py::arg("timeout") = py::none(), py::arg("async_op") = false);
  c.def(
      "all_to_all",
      [](Communicator& self, py::handle send, py::handle recv, std::optional<double> timeout,
         bool asyncOp) {
        Buffer s = asBuffer(send, "send", false);
        Buffer r = asBuffer(recv, "recv", true);
        sameType(s, r, "all_to_all");
        const auto n = static_cast<std::size_t>(self.size());
        counts(s.count == r.count && s.count % n == 0, "all_to_all",
               "send and recv need the same size, a multiple of size()", s, r);
        return post(
            [&] { return self.allToAll(s.data, r.data, s.count / n, s.dtype, opOptions(timeout)); },
            keep(s, r), asyncOp);
      },
      py::arg("send"), py::arg("recv"), py::kw_only(), py::arg("timeout") = py::none(),
      py::arg("async_op") = false);
  c.def(
      "all_to_all_v",
      [](Communicator& self, py::handle send, std::vector<std::size_t> sendCounts, py::handle recv,
         std::vector<std::size_t> recvCounts, std::optional<double> timeout, bool asyncOp) {
        Buffer s = asBuffer(send, "send", false);
        Buffer r = asBuffer(recv, "recv", true);
        sameType(s, r, "all_to_all_v");
        const auto n = static_cast<std::size_t>(self.size());
        counts(sendCounts.size() == n && recvCounts.size() == n && total(sendCounts) <= s.count &&
                   total(recvCounts) <= r.count,
               "all_to_all_v", "send_counts and recv_counts need size() entries within the buffers",
               s, r);
        auto sendDispls = displacements(sendCounts);
        auto recvDispls = displacements(recvCounts);
        return post(
            [&] {
              return self.allToAllV(s.data, sendCounts, sendDispls, r.data, recvCounts, recvDispls,
                                    s.dtype, opOptions(timeout));
            },
            keep(s, r), asyncOp);
      },
      py::arg("send"), py::arg("send_counts"), py::arg("recv"), py::arg("recv_counts"),
      py::kw_only(), py::arg("timeout") = py::none(), py::arg("async_op") = false);
  c.def(
      "gather",
      [](Communicator& self, py::handle send, py::handle recv, int root,
         std::optional<double> timeout, bool asyncOp) {
        Buffer s = asBuffer(send, "send", false);
        const bool isRoot = self.rank() == root;
        if (isRoot && recv.is_none()) raise(invalidArgument("gather: the root needs recv"));
        Buffer r = isRoot ? asBuffer(recv, "recv", true) : s;
        sameType(s, r, "gather");
        if (isRoot) {
          counts(r.count == s.count * static_cast<std::size_t>(self.size()), "gather",
                 "the root's recv needs size() times send's elements", s, r);
        }
        return post(
            [&] {
              return self.gather(s.data, isRoot ? r.data : nullptr, s.count, s.dtype, root,
                                 opOptions(timeout));
            },
            keep(s, r), asyncOp);
      },
      py::arg("send"), py::arg("recv") = py::none(), py::kw_only(), py::arg("root") = 0,
      py::arg("timeout") = py::none(), py::arg("async_op") = false);
  c.def(
      "scatter",
      [](Communicator& self, py::handle send, py::handle recv, int root,
         std::optional<double> timeout, bool asyncOp) {
        Buffer r = asBuffer(recv, "recv", true);
        const bool isRoot = self.rank() == root;
        if (isRoot && send.is_none()) raise(invalidArgument("scatter: the root needs send"));
        Buffer s = isRoot ? asBuffer(send, "send", false) : r;
        sameType(s, r, "scatter");
        if (isRoot) {
          counts(s.count == r.count * static_cast<std::size_t>(self.size()), "scatter",
                 "the root's send needs size() times recv's elements", s, r);
        }
        return post(
            [&] {
              return self.scatter(isRoot ? s.data : nullptr, r.data, r.count, r.dtype, root,
                                  opOptions(timeout));
            },
            keep(s, r), asyncOp);
      },
      py::arg("send"), py::arg("recv"), py::kw_only(), py::arg("root") = 0,
      py::arg("timeout") = py::none(), py::arg("async_op") = false);
  c.def(
      "barrier",
      [](Communicator& self, std::optional<double> timeout, bool asyncOp) {
        return post([&] { return self.barrier(opOptions(timeout)); }, {}, asyncOp);
      },
      py::kw_only(), py::arg("timeout") = py::none(), py::arg("async_op") = false);
  c.def(
      "send",
      [](Communicator& self, py::handle buffer, int peer, int tag, std::optional<double> timeout,
         bool asyncOp) {
        Buffer b = asBuffer(buffer, "buffer", false);
        return post(
            [&] { return self.send(b.data, b.count, b.dtype, peer, tag, opOptions(timeout)); },
            {b.owner}, asyncOp);
      },
      py::arg("buffer"), py::arg("peer"), py::kw_only(), py::arg("tag") = 0,
      py::arg("timeout") = py::none(), py::arg("async_op") = false);
  c.def(
      "recv",
      [](Communicator& self, py::handle buffer, int peer, int tag, std::optional<double> timeout,
         bool asyncOp) {
        Buffer b = asBuffer(buffer, "buffer", true);
        return post(
            [&] { return self.recv(b.data, b.count, b.dtype, peer, tag, opOptions(timeout)); },
            {b.owner}, asyncOp);
      },
      py::arg("buffer"), py::arg("peer"), py::kw_only(), py::arg("tag") = 0,
      py::arg("timeout") = py::none(), py::arg("async_op") = false,
      "With async_op, Work.bytes says how many bytes came.");
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
