#include "recorder/op_progress.h"

#include <time.h>

namespace ftcomm::recorder {

std::int64_t monotonicNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void OpProgress::markStarted() {
  int expected = pb::SCHEDULED;
  if (state_.compare_exchange_strong(expected, pb::STARTED, std::memory_order_acq_rel)) {
    startedNs_.store(monotonicNs(), std::memory_order_release);
  }
}

void OpProgress::markStartedAtScheduling() {
  int expected = pb::SCHEDULED;
  if (state_.compare_exchange_strong(expected, pb::STARTED, std::memory_order_acq_rel)) {
    startedNs_.store(scheduledNs_, std::memory_order_release);
  }
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
  endedNs_.store(monotonicNs(), std::memory_order_relaxed);
  state_.store(pb::COMPLETED, std::memory_order_release);
}

void OpProgress::markFailed(std::string error) {
  if (!beginFinish()) return;
  error_ = std::move(error);
  endedNs_.store(monotonicNs(), std::memory_order_relaxed);
  state_.store(pb::FAILED, std::memory_order_release);
}

pb::OpState OpProgress::state() const {
  int s = state_.load(std::memory_order_acquire);
  return s == kFinishing ? pb::STARTED : static_cast<pb::OpState>(s);
}

void OpProgress::copyTo(pb::Entry& entry) const {
  const int s = state_.load(std::memory_order_acquire);
  entry.set_scheduled_ns(scheduledNs_);
  entry.set_started_ns(startedNs_.load(std::memory_order_acquire));
  if (s == pb::COMPLETED || s == pb::FAILED) {
    entry.set_state(static_cast<pb::OpState>(s));
    entry.set_ended_ns(endedNs_.load(std::memory_order_relaxed));
    if (s == pb::FAILED) entry.set_error(error_);
  } else {
    entry.set_state(s == kFinishing ? pb::STARTED : static_cast<pb::OpState>(s));
  }
}

}  // namespace ftcomm::recorder
