#include "algorithms/phased_task.h"

namespace ftcomm::algorithms {

Result<bool> PhasedTask::advance() {
  if (!started_) {
    started_ = true;
    start();
    FTCOMM_RETURN_IF_ERROR(startNext());
  }
  while (current_) {
    auto done = current_->advance();
    if (!done.ok()) return done.status();
    if (!*done) return false;
    FTCOMM_RETURN_IF_ERROR(startNext());
  }
  return finish();
}

Status PhasedTask::startNext() {
  current_.reset();
  while (!current_ && next_ < phases()) {
    auto task = makePhase(next_++);
    if (!task.ok()) return task.status();
    current_ = std::move(task).value();
  }
  return Status::Ok();
}

}  // namespace ftcomm::algorithms
