// c10d Works over ftcomm Works. An operation ends in one place, finish(): on success it copies
// staging buffers into the caller's tensors and completes the Future, if one was asked for,
// with the output tensors; on failure it stores a CommError and fails the Future. Whichever
// comes first calls it: a wait() or isCompleted() on the Work, or, once getFuture() was called
// (DDP's hooks chain on it), the group's completion thread, which ftcomm's Work::onDone wakes,
// so that the Future completes without anyone waiting. An operation nobody asks a Future of
// costs no Future and no wake-up of that thread. Futures' callbacks run on that thread or a
// waiter, never inside ftcomm's engine.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ftcomm/work.h"

namespace ftcomm::torch_backend {

// A failed operation as a C++ exception; ftcomm._torch turns it into the ftcomm.errors class
// of its code (PeerFailed, Revoked, Timeout, ...).
class CommError : public std::runtime_error {
 public:
  explicit CommError(const Status& status)
      : std::runtime_error(status.toString()), code_(status.code()), message_(status.message()) {}
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_;
  std::string message_;
};

struct Operation;

// Operations that have ended, for the completion thread to finish.
struct CompletionQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Operation>> ended;
  bool stop = false;
};

// One operation's state, shared by its Work and the completion thread.
struct Operation {
  ftcomm::Work work;
  std::vector<at::Tensor> outputs;  // the Future's value and Work::result()
  std::vector<at::Tensor> keep;     // inputs and staging buffers, alive until the end
  std::function<void()> copyOut;    // staging into the outputs, after success (may be null)

  // Once; the Work must have ended.
  void finish();
  bool finished() const;
  std::exception_ptr error() const;
  // The operation's Future, made on the first call; it completes when the operation ends,
  // through `queue`'s thread unless the operation has ended already.
  c10::intrusive_ptr<c10::ivalue::Future> future(const std::shared_ptr<CompletionQueue>& queue,
                                                 const std::shared_ptr<Operation>& self);

 private:
  void complete(const c10::intrusive_ptr<c10::ivalue::Future>& future) const;

  mutable std::mutex mu_;
  bool finished_ = false;
  std::exception_ptr error_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// The thread that finishes operations as they end. It sleeps while none has.
class CompletionThread {
 public:
  CompletionThread();
  ~CompletionThread();  // finishes nothing more; operations still running end on their waiters
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  const std::shared_ptr<CompletionQueue>& queue() const { return queue_; }

 private:
  void run();

  std::shared_ptr<CompletionQueue> queue_;
  std::thread thread_;
};

class FtcommWork : public c10d::Work {
 public:
  FtcommWork(int rank, c10d::OpType type, std::shared_ptr<Operation> op,
             std::shared_ptr<CompletionQueue> queue);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override {}
  // Raises the operation's CommError. A timeout (> 0) shorter than the operation's own
  // deadline raises a Timeout CommError and leaves the operation running.
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  std::shared_ptr<Operation> op_;
  std::shared_ptr<CompletionQueue> queue_;
};

}  // namespace ftcomm::torch_backend
