// The test harness of the membership state machine: a JobState with a clock moved by hand,
// helpers to form jobs and make calls, and the effects of the last call.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <utility>

#include "rendezvous/job_state.h"

namespace ftcomm::testing {

using namespace ftcomm::rendezvous;
using namespace std::chrono_literals;

inline constexpr auto kLease = 2000ms;

// A job plus the bookkeeping a test needs: a clock it moves by hand, and the effects of the last
// call.
struct Harness {
  JobState job{"job-a", kLease};
  Clock::time_point now{};  // the clock starts at the epoch of steady_clock and moves by hand
  WaiterId nextWaiter = 1;
  Effects effects;

  Effects take() { return std::exchange(effects, Effects{}); }

  ftcomm::Status join(WaiterId waiter, int worldSize, const std::string& instance, int pid,
                      std::optional<int> desiredRank = std::nullopt,
                      std::uint32_t timeoutMs = 5000) {
    pb::JoinRequest request;
    request.set_job_id("job-a");
    request.set_world_size(worldSize);
    request.mutable_process()->set_host("host");
    request.mutable_process()->set_pid(static_cast<std::uint32_t>(pid));
    request.mutable_process()->set_instance_id(instance);
    if (desiredRank) request.set_desired_rank(*desiredRank);
    request.set_timeout_ms(timeoutMs);
    return job.join(waiter, request, now, effects);
  }

  // Joins n members and returns their member ids by rank.
  std::vector<std::uint64_t> form(int n) {
    for (int i = 0; i < n; ++i)
      REQUIRE(join(nextWaiter++, n, "inst-" + std::to_string(i), 100 + i).ok());
    Effects e = take();
    REQUIRE(e.replies.size() == static_cast<std::size_t>(n));
    std::vector<std::uint64_t> ids(n);
    for (const auto& reply : e.replies) {
      const auto& response = std::get<pb::JoinResponse>(reply.body);
      ids[response.rank()] = response.member_id();
    }
    return ids;
  }

  pb::Caller caller(std::uint64_t memberId, std::uint64_t epoch = 0) const {
    pb::Caller c;
    c.set_job_id("job-a");
    c.set_member_id(memberId);
    c.set_epoch(epoch == 0 ? job.epoch() : epoch);
    return c;
  }

  ftcomm::Status reconfigure(WaiterId waiter, std::uint64_t memberId, std::uint64_t epoch = 0) {
    pb::ReconfigureRequest request;
    *request.mutable_caller() = caller(memberId, epoch);
    request.set_timeout_ms(5000);
    return job.reconfigure(waiter, request, now, effects);
  }

  ftcomm::Status report(std::uint64_t reporter, int suspectRank, std::uint64_t epoch = 0) {
    pb::ReportFailureRequest request;
    *request.mutable_caller() = caller(reporter, epoch);
    request.set_suspect_rank(suspectRank);
    request.set_reason("peer error");
    return job.reportFailure(request, now, effects);
  }

  void heartbeatAll(const std::vector<std::uint64_t>& ids) {
    for (auto id : ids) {
      pb::HeartbeatResponse response;
      REQUIRE(job.heartbeat(caller(id), now, response).ok());
    }
  }
};

inline std::vector<std::uint64_t> idsOf(const pb::MembershipView& view) {
  std::vector<std::uint64_t> ids;
  for (const auto& m : view.members()) ids.push_back(m.member_id());
  return ids;
}

inline std::vector<std::uint64_t> idsOf(const pb::ReconfigureResponse& response) {
  return {response.member_ids().begin(), response.member_ids().end()};
}

inline bool hasEvent(const Effects& e, pb::Event::Kind kind, std::uint64_t memberId = 0) {
  return std::any_of(e.events.begin(), e.events.end(), [&](const pb::Event& ev) {
    return ev.kind() == kind && (memberId == 0 || ev.member_id() == memberId);
  });
}

}  // namespace ftcomm::testing
