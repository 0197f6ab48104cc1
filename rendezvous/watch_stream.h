// The server side of one member's Watch stream: a queue of events written one at a time. The
// stream is the member's liveness signal, so its end (client gone, write failed) is reported to
// the Job, which declares the member failed unless a newer stream replaced this one.
//
// Thread-safety: push() and finish() may be called from any thread; gRPC reactions serialize on
// the stream's own mutex. Never takes the job's mutex while holding its own.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "rendezvous/effects.h"

namespace ftcomm::rendezvous {

class Job;

class WatchStream final : public grpc::ServerWriteReactor<pb::Event> {
 public:
  // A member's stream falls this far behind only when its process stopped reading.
  static constexpr std::size_t kMaxQueuedEvents = 65536;

  WatchStream(Job* job, std::uint64_t memberId, std::uint64_t token);

  void push(const pb::Event& event);
  void finish(const grpc::Status& status);

 private:
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;
  // Requires mu_.
  void writeNextOrFinish();

  Job* job_;
  std::uint64_t memberId_;
  std::uint64_t token_;
  std::mutex mu_;
  std::deque<pb::Event> queue_;
  bool writing_ = false;
  bool finished_ = false;
  std::optional<grpc::Status> finishStatus_;
};

// Answers a Watch call that was refused before any stream was opened.
class RefusedWatch final : public grpc::ServerWriteReactor<pb::Event> {
 public:
  explicit RefusedWatch(const grpc::Status& status) { Finish(status); }

 private:
  void OnDone() override { delete this; }
};

}  // namespace ftcomm::rendezvous
