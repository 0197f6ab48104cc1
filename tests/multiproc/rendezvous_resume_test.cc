// Watch streams resume where they left off: events are numbered (Event.revision) and kept in the
// server's store with the records, so a member that reconnects (here after a restart of the
// server, as it would to another replica that loaded the same store) gets the events after the
// last one it saw, and a SNAPSHOT only when it saw none.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "raw_rendezvous.h"
#include "rendezvous_server_process.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

pb::JoinResponse rawJoin(RawRendezvous& raw, const std::string& job, int rank) {
  pb::JoinRequest request;
  request.set_job_id(job);
  request.set_world_size(2);
  request.set_desired_rank(rank);
  request.set_timeout_ms(30000);
  request.mutable_process()->set_host(hostName());
  request.mutable_process()->set_pid(static_cast<std::uint32_t>(100000 + rank));
  request.mutable_process()->set_instance_id("resume-" + std::to_string(rank));
  pb::JoinResponse response;
  grpc::Status status = raw.call(&pb::Rendezvous::Stub::Join, request, &response);
  INFO(status.error_message());
  REQUIRE(status.ok());
  return response;
}

// An open Watch stream of one member and the events read from it.
struct RawWatch {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<pb::Event>> reader;

  RawWatch(RawRendezvous& raw, const pb::Caller& caller, std::uint64_t afterRevision) {
    context.set_wait_for_ready(true);
    context.set_deadline(std::chrono::system_clock::now() + 30s);
    pb::WatchRequest request;
    *request.mutable_caller() = caller;
    request.set_after_revision(afterRevision);
    reader = raw.stub->Watch(&context, request);
  }
  pb::Event next() {
    pb::Event event;
    if (!reader->Read(&event)) {
      const grpc::Status status = reader->Finish();
      FAIL("the stream ended: " << status.error_message());
    }
    return event;
  }
};

}  // namespace

TEST_CASE("a watch stream reopened after a server restart resumes after the last event it saw") {
  RendezvousServerProcess server({"--lease-ms", "60000"});
  RawRendezvous raw(server.address());
  const std::string job = "resume";
  auto second = std::async(std::launch::async, [&] {
    RawRendezvous other(server.address());
    return rawJoin(other, job, 1);
  });
  const pb::JoinResponse first = rawJoin(raw, job, 0);
  const pb::JoinResponse victim = second.get();
  pb::Caller caller;
  caller.set_job_id(job);
  caller.set_member_id(first.member_id());
  caller.set_epoch(first.epoch());

  // Closing a member's stream declares it failed, unless a newer stream of the member replaced
  // it: each stream below stays open until the next has opened.
  std::uint64_t seen = 0;
  RawWatch watch(raw, caller, 0);
  {
    const pb::Event snapshot = watch.next();
    CHECK(snapshot.kind() == pb::Event::SNAPSHOT);
    seen = snapshot.revision();
    // Rank 0 reports rank 1: its stream carries the failure, numbered after the snapshot.
    pb::ReportFailureRequest report;
    *report.mutable_caller() = caller;
    report.set_suspect_rank(1);
    report.set_reason("resume test");
    pb::ReportFailureResponse reported;
    REQUIRE(raw.call(&pb::Rendezvous::Stub::ReportFailure, report, &reported).ok());
    const pb::Event failed = watch.next();
    CHECK(failed.kind() == pb::Event::MEMBER_FAILED);
    CHECK(failed.member_id() == victim.member_id());
    CHECK(failed.revision() > seen);
    // The member "missed" this event: it resumes from the snapshot's revision below.
  }
  server.restart();
  RawRendezvous again(server.address());
  RawWatch resumed(again, caller, seen);
  {
    const pb::Event replayed = resumed.next();
    INFO(server.log());
    CHECK(replayed.kind() == pb::Event::MEMBER_FAILED);
    CHECK(replayed.member_id() == victim.member_id());
    CHECK(replayed.revision() > seen);
  }
  {
    RawWatch fresh(again, caller, 0);
    const pb::Event snapshot = fresh.next();
    CHECK(snapshot.kind() == pb::Event::SNAPSHOT);
    CHECK(snapshot.revision() > seen);
    REQUIRE(snapshot.failed_member_ids_size() == 1);
    CHECK(snapshot.failed_member_ids(0) == victim.member_id());
  }
}
