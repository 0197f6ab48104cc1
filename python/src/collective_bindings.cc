// ftcomm.Communicator's collectives and point-to-point operations on numpy arrays and CPU
// tensors. Buffer sizes are checked against each other here (the C++ API takes counts and
// cannot); the post and every wait release the GIL.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
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

}  // namespace

void bindCollectives(py::class_<Communicator, std::shared_ptr<Communicator>>& c) {
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
}

}  // namespace ftcomm::python
