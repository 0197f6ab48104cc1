// ftcomm.Work: a posted operation and the Python objects whose memory it uses. Waiting
// releases the GIL. Dropping the last reference to an unfinished Work waits for it first, so
// that no operation writes into memory Python has freed. Also the helpers every binding posts
// and waits with: released() runs a call without the GIL, post() posts an operation so.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <utility>
#include <vector>

#include "ftcomm/communicator.h"
#include "ftcomm/work.h"
#include "python/src/errors.h"

namespace ftcomm::python {

// Python's timeouts are seconds; none is 0, "the communicator's".
inline std::chrono::milliseconds toMs(std::optional<double> seconds) {
  return seconds ? std::chrono::milliseconds(static_cast<long long>(*seconds * 1e3))
                 : std::chrono::milliseconds(0);
}

inline OpOptions opOptions(std::optional<double> timeout) {
  OpOptions o;
  o.timeout = toMs(timeout);
  return o;
}

// `call()`'s result, computed with the GIL released (the arguments must not be Python objects).
template <typename Call>
auto released(Call&& call) {
  pybind11::gil_scoped_release release;
  return call();
}

class PyWork {
 public:
  PyWork(Work work, std::vector<pybind11::object> keep)
      : work_(std::move(work)), keep_(std::move(keep)) {}
  PyWork(const PyWork&) = delete;
  PyWork& operator=(const PyWork&) = delete;
  ~PyWork() {
    if (!work_.valid()) return;
    pybind11::gil_scoped_release release;
    (void)work_.wait();
  }

  // Raises the operation's failure; `timeout` in seconds, none: the operation's own deadline.
  void wait(std::optional<double> timeout) {
    Status s;
    {
      pybind11::gil_scoped_release release;
      s = timeout ? work_.wait(std::chrono::milliseconds(static_cast<long long>(*timeout * 1e3)))
                  : work_.wait();
    }
    check(s);
  }
  bool test() {
    pybind11::gil_scoped_release release;
    return work_.test();
  }
  Status status() const { return work_.status(); }
  std::size_t bytes() const { return work_.bytes(); }

 private:
  Work work_;
  std::vector<pybind11::object> keep_;
};

// An operation's result in Python: the Work when async_op, else None once it succeeded.
inline pybind11::object finish(Work work, std::vector<pybind11::object> keep, bool asyncOp) {
  if (asyncOp) return pybind11::cast(std::make_shared<PyWork>(std::move(work), std::move(keep)));
  check(released([&] { return work.wait(); }));
  return pybind11::none();
}

// Posts `post()` (which returns a Work) without the GIL, then finish()es it.
template <typename Post>
pybind11::object post(Post&& post, std::vector<pybind11::object> keep, bool asyncOp) {
  return finish(released(std::forward<Post>(post)), std::move(keep), asyncOp);
}

}  // namespace ftcomm::python
