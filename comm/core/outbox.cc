#include "core/outbox.h"

namespace ftcomm::detail {

RendezvousOutbox::RendezvousOutbox() : thread_([this] { run(); }) {}

RendezvousOutbox::~RendezvousOutbox() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    calls_.clear();
  }
  cv_.notify_all();
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void RendezvousOutbox::post(std::function<void()> call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    calls_.push_back(std::move(call));
  }
  cv_.notify_one();
}

void RendezvousOutbox::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !calls_.empty(); });
    if (stopping_) return;
    auto call = std::move(calls_.front());
    calls_.pop_front();
    lock.unlock();
    call();
    lock.lock();
  }
}

}  // namespace ftcomm::detail
