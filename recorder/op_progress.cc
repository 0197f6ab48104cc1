#include "recorder/op_progress.h"

namespace ftcomm::recorder {

void OpProgress::reset() {
  scheduled_ = recorderTicks();
  started_.store(0, std::memory_order_relaxed);
  ended_.store(0, std::memory_order_relaxed);
  error_.clear();
  algorithm_.store(nullptr, std::memory_order_relaxed);
  state_.store(pb::SCHEDULED, std::memory_order_release);
}

void OpProgress::markStarted() {
  int expected = pb::SCHEDULED;
  if (state_.compare_exchange_strong(expected, pb::STARTED, std::memory_order_acq_rel)) {
    started_.store(recorderTicks(), std::memory_order_release);
  }
}

void OpProgress::markStartedAtScheduling() {
  int expected = pb::SCHEDULED;
  if (state_.compare_exchange_strong(expected, pb::STARTED, std::memory_order_acq_rel)) {
    started_.store(scheduled_, std::memory_order_release);
  }
}

void OpProgress::markCompletedWithinCall() {
  started_.store(scheduled_, std::memory_order_relaxed);
  ended_.store(recorderTicks(), std::memory_order_relaxed);
  state_.store(pb::COMPLETED, std::memory_order_release);
}

bool OpProgress::beginFinish() {
  int current = state_.load(std::memory_order_acquire);
  while (current == pb::SCHEDULED || current == pb::STARTED) {
    if (state_.compare_exchange_weak(current, kFinishing, std::memory_order_acq_rel)) return true;
  }
  return false;
}

void OpProgress::markCompleted() {
  if (!beginFinish()) return;
  ended_.store(recorderTicks(), std::memory_order_relaxed);
  state_.store(pb::COMPLETED, std::memory_order_release);
}

void OpProgress::markFailed(std::string error) {
  if (!beginFinish()) return;
  error_ = std::move(error);
  ended_.store(recorderTicks(), std::memory_order_relaxed);
  state_.store(pb::FAILED, std::memory_order_release);
}

pb::OpState OpProgress::state() const {
  int s = state_.load(std::memory_order_acquire);
  return s == kFinishing ? pb::STARTED : static_cast<pb::OpState>(s);
}

void OpProgress::copyTo(pb::Entry& entry, const TickConverter& clock) const {
  const int s = state_.load(std::memory_order_acquire);
  entry.set_scheduled_ns(clock.toNs(scheduled_));
  entry.set_started_ns(clock.toNs(started_.load(std::memory_order_acquire)));
  if (const char* algorithm = algorithm_.load(std::memory_order_acquire)) {
    entry.set_algorithm(algorithm);
  }
  if (s == pb::COMPLETED || s == pb::FAILED) {
    entry.set_state(static_cast<pb::OpState>(s));
    entry.set_ended_ns(clock.toNs(ended_.load(std::memory_order_relaxed)));
    if (s == pb::FAILED) entry.set_error(error_);
  } else {
    entry.set_state(s == kFinishing ? pb::STARTED : static_cast<pb::OpState>(s));
  }
}

}  // namespace ftcomm::recorder
