#include "python/src/torch/torch_work.h"

#include <Python.h>

namespace ftcomm::torch_backend {

void Operation::finish() {
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    Status s = work.status();
    if (s.ok() && copyOut) {
      try {
        copyOut();
      } catch (const std::exception& e) {
        s = internalError(std::string("copying the result into the output tensors: ") + e.what());
      }
    }
    finished_ = true;
    keep.clear();
    if (!s.ok()) error_ = error = std::make_exception_ptr(CommError(s));
  }
  // The Future's callbacks run here, outside the lock: one may wait on this operation again.
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(mu_);
    future = future_;
  }
  if (future) complete(future);
}

void Operation::complete(const c10::intrusive_ptr<c10::ivalue::Future>& future) const {
  if (auto failure = error()) {
    future->setError(failure);
  } else {
    future->markCompleted(c10::IValue(outputs));
  }
}

c10::intrusive_ptr<c10::ivalue::Future> Operation::future(
    const std::shared_ptr<CompletionQueue>& queue, const std::shared_ptr<Operation>& self) {
  c10::intrusive_ptr<c10::ivalue::Future> made;
  bool ended = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (future_) return future_;
    future_ = made = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors());
    ended = finished_;
  }
  // finish() completes the Future when it runs after the lock above; when it ran before, it
  // found none, so it is completed here.
  if (ended) {
    complete(made);
    return made;
  }
  // The callback may run on ftcomm's engine thread: it only queues the operation. It holds the
  // queue, not the completion thread, which may be gone by then, and the operation itself:
  // callers such as DDP keep only the Future and drop the Work at once.
  work.onDone([queue, self] {
    {
      std::lock_guard<std::mutex> lock(queue->mu);
      if (queue->stop) return;
      queue->ended.push_back(self);
    }
    queue->cv.notify_one();
  });
  return made;
}

bool Operation::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

std::exception_ptr Operation::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

CompletionThread::CompletionThread() : queue_(std::make_shared<CompletionQueue>()) {
  thread_ = std::thread([this] { run(); });
}

CompletionThread::~CompletionThread() {
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    queue_->stop = true;
  }
  queue_->cv.notify_all();
  // The thread may be dropping tensors whose Python objects need the GIL (torch hands a
  // tensor's PyObject to it once Python let go first): joining while holding the GIL would
  // deadlock, as torch 1.13's ProcessGroupGloo does when DDP's Reducer destroys it.
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* saved = PyEval_SaveThread();
    thread_.join();
    PyEval_RestoreThread(saved);
  } else {
    thread_.join();
  }
}

void CompletionThread::run() {
  std::unique_lock<std::mutex> lock(queue_->mu);
  while (true) {
    queue_->cv.wait(lock, [&] { return queue_->stop || !queue_->ended.empty(); });
    if (queue_->stop) return;
    auto op = std::move(queue_->ended.front());
    queue_->ended.pop_front();
    lock.unlock();
    op->finish();  // runs the Future's callbacks, outside every lock
    op.reset();
    lock.lock();
  }
}

FtcommWork::FtcommWork(int rank, c10d::OpType type, std::shared_ptr<Operation> op,
                       std::shared_ptr<CompletionQueue> queue)
    : c10d::Work(rank, type), op_(std::move(op)), queue_(std::move(queue)) {}

bool FtcommWork::isCompleted() {
  if (!op_->work.test()) return false;
  op_->finish();
  return true;
}

bool FtcommWork::isSuccess() const {
  return op_->finished() && op_->error() == nullptr;
}

std::exception_ptr FtcommWork::exception() const {
  return op_->error();
}

std::vector<at::Tensor> FtcommWork::result() {
  return op_->outputs;
}

bool FtcommWork::wait(std::chrono::milliseconds timeout) {
  Status s = timeout.count() > 0 ? op_->work.wait(timeout) : op_->work.wait();
  if (s.code() == StatusCode::kTimeout && !op_->work.test()) throw CommError(s);
  op_->finish();
  if (auto error = op_->error()) std::rethrow_exception(error);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> FtcommWork::getFuture() {
  return op_->future(queue_, op_);
}

}  // namespace ftcomm::torch_backend
