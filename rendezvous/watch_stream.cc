#include "rendezvous/watch_stream.h"

#include "rendezvous/job.h"

namespace ftcomm::rendezvous {

WatchStream::WatchStream(Job* job, std::uint64_t memberId, std::uint64_t token)
    : job_(job), memberId_(memberId), token_(token) {}

void WatchStream::push(const pb::Event& event) {
  std::lock_guard lock(mu_);
  if (finished_ || finishStatus_) return;
  if (queue_.size() >= kMaxQueuedEvents) {
    finishStatus_ = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "watch stream stopped reading: event queue full");
  } else {
    queue_.push_back(event);
  }
  if (!writing_) writeNextOrFinish();
}

void WatchStream::finish(const grpc::Status& status) {
  std::lock_guard lock(mu_);
  if (finished_ || finishStatus_) return;
  finishStatus_ = status;
  if (!writing_) writeNextOrFinish();
}

void WatchStream::writeNextOrFinish() {
  // Queued events go out before the final status, so an expelled member reads why.
  if (!queue_.empty()) {
    writing_ = true;
    StartWrite(&queue_.front());
  } else if (finishStatus_ && !finished_) {
    finished_ = true;
    Finish(*finishStatus_);
  }
}

void WatchStream::OnWriteDone(bool ok) {
  std::lock_guard lock(mu_);
  writing_ = false;
  queue_.pop_front();
  if (!ok) {
    queue_.clear();
    if (!finishStatus_) finishStatus_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
  }
  writeNextOrFinish();
}

void WatchStream::OnCancel() {
  std::lock_guard lock(mu_);
  // The event being written must outlive its write.
  queue_.erase(writing_ ? queue_.begin() + 1 : queue_.begin(), queue_.end());
  if (!finishStatus_) finishStatus_ = grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
  if (!writing_) writeNextOrFinish();
}

void WatchStream::OnDone() {
  job_->watchDone(memberId_, token_, this);
  delete this;
}

}  // namespace ftcomm::rendezvous
