// RendezvousClient's background side: the heartbeat thread (which renews the lease, and fences
// the member once the server has stopped answering for longer than it), the watch stream and
// the delivery of its events (client.h).
#include "rendezvous/client.h"
#include "rendezvous/client_calls.h"
#include "rendezvous/grpc_status.h"

namespace ftcomm::rendezvous {

using client_calls::isVerdict;
using client_calls::kFirstBackoff;
using client_calls::kMaxBackoff;
using client_calls::systemDeadline;

Result<pb::Event> RendezvousClient::nextEvent(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (options_.onEvent) return failedPrecondition("events go to the onEvent callback");
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) {
    return timeoutError("no membership event within " + std::to_string(timeout.count()) + " ms");
  }
  pb::Event event = std::move(events_.front());
  events_.pop_front();
  return event;
}

void RendezvousClient::deliver(const pb::Event& event) {
  if (event.revision() > lastRevision_.load()) lastRevision_.store(event.revision());
  if (event.kind() == pb::Event::MEMBER_FAILED && event.member_id() == memberId_.load()) {
    expel(failedPrecondition("this member was declared failed: " + event.reason()));
  }
  if (options_.onEvent) {
    options_.onEvent(event);
    return;
  }
  {
    std::lock_guard lock(mu_);
    events_.push_back(event);
  }
  cv_.notify_all();
}

bool RendezvousClient::sleepUnlessStopping(std::chrono::milliseconds duration) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, duration, [&] { return stopping_ || leaving_; });
}

void RendezvousClient::startBackgroundThreads(std::chrono::milliseconds lease) {
  heartbeatThread_ = std::thread([this, lease] { heartbeatLoop(lease); });
  watchThread_ = std::thread([this] { watchLoop(); });
}

void RendezvousClient::heartbeatLoop(std::chrono::milliseconds lease) {
  // Four beats per lease: one lost or late beat never costs the member its lease.
  const auto interval = std::max(std::chrono::milliseconds(5), lease / 4);
  // The server expires a lease it has not renewed for `lease`, and it renewed this one last
  // before it answered the last beat that got through. Once no answer has come for the lease
  // and half of it again, the server has declared this member failed (the rest of the job goes
  // on without it), or cannot be told otherwise: this member fences itself, as if expelled,
  // instead of working on where nobody waits for it (a host whose data link is cut).
  const auto fenceAfter = lease + lease / 2;
  auto lastAnswer = Clock::now();
  while (sleepUnlessStopping(interval)) {
    pb::HeartbeatRequest request;
    *request.mutable_caller() = caller();
    pb::HeartbeatResponse response;
    grpc::ClientContext context;
    context.set_deadline(systemDeadline(Clock::now() + std::max(interval, lease / 2)));
    auto [replica, at] = current();
    Status status = fromGrpc(replica->stub->Heartbeat(&context, request, &response));
    if (status.ok()) {
      lastAnswer = Clock::now();
      continue;
    }
    if (status.code() == StatusCode::kUnavailable) moveOn(at);
    if (isVerdict(status.code())) {
      // leave() ends this thread before its Leave goes out, so no beat crosses it: a verdict
      // here is the server's word that this member is out.
      expel(Status(status.code(), "Heartbeat: " + status.message()));
      return;
    }
    const auto silent =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - lastAnswer);
    if (silent >= fenceAfter) {
      expel(Status(StatusCode::kUnavailable,
                   "the rendezvous answered no heartbeat for " + std::to_string(silent.count()) +
                       " ms, longer than the lease (" + std::to_string(lease.count()) +
                       " ms): it has declared this member failed (last error: " + status.message() +
                       ")"));
      return;
    }
  }
}

void RendezvousClient::watchLoop() {
  auto backoff = kFirstBackoff;
  while (true) {
    grpc::ClientContext context;
    context.set_wait_for_ready(replicas_.size() == 1);
    {
      std::lock_guard lock(mu_);
      if (stopping_ || !standing_.ok()) return;
      watchContext_ = &context;
    }
    pb::WatchRequest request;
    *request.mutable_caller() = caller();
    request.set_after_revision(lastRevision_.load());
    auto [replica, at] = current();
    auto reader = replica->stub->Watch(&context, request);
    pb::Event event;
    while (reader->Read(&event)) {
      backoff = kFirstBackoff;
      deliver(event);
    }
    Status status = fromGrpc(reader->Finish());
    {
      std::lock_guard lock(mu_);
      watchContext_ = nullptr;
      if (stopping_) return;
    }
    if (isVerdict(status.code())) {
      expel(Status(status.code(), "Watch: " + status.message()));
      return;
    }
    if (status.code() == StatusCode::kUnavailable) moveOn(at);
    if (!sleepUnlessStopping(backoff)) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace ftcomm::rendezvous
