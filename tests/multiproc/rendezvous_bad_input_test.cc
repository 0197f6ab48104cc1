// Malformed and hostile input against a real ftcomm-rendezvous process: every bad request gets a
// clear gRPC status, and the server keeps serving everyone else.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "child_process.h"
#include "ftcomm/proto/rendezvous.grpc.pb.h"
#include "raw_rendezvous.h"
#include "rendezvous/client.h"
#include "rendezvous_server_process.h"
#include "temp_dir.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<ftcomm::rendezvous::RendezvousClient> soloMember(const std::string& address,
                                                                 const std::string& job) {
  ftcomm::rendezvous::ClientOptions options;
  options.address = address;
  options.jobId = job;
  auto client = ftcomm::rendezvous::RendezvousClient::create(options);
  REQUIRE(client.ok());
  ftcomm::rendezvous::JoinOptions join;
  join.worldSize = 1;
  join.timeout = 30s;
  auto joined = (*client)->join(join);
  INFO(joined.status().toString());
  REQUIRE(joined.ok());
  return std::move(client).value();
}

pb::Caller callerOf(const ftcomm::rendezvous::RendezvousClient& client, const std::string& job) {
  pb::Caller caller;
  caller.set_job_id(job);
  caller.set_member_id(client.memberId());
  caller.set_epoch(client.epoch());
  return caller;
}

void sendGarbage(int port, const std::string& bytes) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ssize_t ignored = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  (void)ignored;
  std::this_thread::sleep_for(50ms);
  ::close(fd);
}

}  // namespace

TEST_CASE("malformed requests get a clear status naming the problem") {
  RendezvousServerProcess server;
  RawRendezvous raw(server.address());
  auto member = soloMember(server.address(), "bad-input");

  pb::JoinResponse joinResponse;
  pb::JoinRequest join;
  join.set_world_size(1);
  join.set_timeout_ms(1000);
  join.mutable_process()->set_instance_id("x");
  SECTION("an empty or malformed job id") {
    auto status = raw.call(&pb::Rendezvous::Stub::Join, join, &joinResponse);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(status.error_message(), Catch::Contains("job id is empty"));
    join.set_job_id("../../etc");
    CHECK(raw.call(&pb::Rendezvous::Stub::Join, join, &joinResponse).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);
    join.set_job_id(std::string(1000, 'j'));
    CHECK(raw.call(&pb::Rendezvous::Stub::Join, join, &joinResponse).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);
  }
  SECTION("a join without a deadline") {
    join.set_job_id("no-deadline");
    join.set_timeout_ms(0);
    auto status = raw.call(&pb::Rendezvous::Stub::Join, join, &joinResponse);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(status.error_message(), Catch::Contains("timeout_ms"));
  }
  SECTION("keys and values beyond the limits") {
    pb::KvSetRequest set;
    *set.mutable_caller() = callerOf(*member, "bad-input");
    pb::KvSetResponse setResponse;
    set.set_key(std::string(300, 'k'));
    auto status = raw.call(&pb::Rendezvous::Stub::KvSet, set, &setResponse);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(status.error_message(), Catch::Contains("key is 300 bytes"));
    set.set_key("v");
    set.set_value(std::string((1 << 20) + 1, 'v'));
    status = raw.call(&pb::Rendezvous::Stub::KvSet, set, &setResponse);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(status.error_message(), Catch::Contains("limit is 1048576"));
    set.set_value(std::string(8 << 20, 'v'));  // beyond gRPC's message limit on the server
    CHECK(raw.call(&pb::Rendezvous::Stub::KvSet, set, &setResponse).error_code() ==
          grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  SECTION("unknown jobs and members, ranks out of range") {
    pb::KvGetRequest get;
    *get.mutable_caller() = callerOf(*member, "no-such-job");
    get.set_key("k");
    pb::KvGetResponse getResponse;
    auto status = raw.call(&pb::Rendezvous::Stub::KvGet, get, &getResponse);
    CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK_THAT(status.error_message(), Catch::Contains("no job no-such-job"));
    get.mutable_caller()->set_job_id("bad-input");
    get.mutable_caller()->set_member_id(999);
    CHECK(raw.call(&pb::Rendezvous::Stub::KvGet, get, &getResponse).error_code() ==
          grpc::StatusCode::NOT_FOUND);
    pb::ReportFailureRequest report;
    *report.mutable_caller() = callerOf(*member, "bad-input");
    report.set_suspect_rank(7);
    pb::ReportFailureResponse reportResponse;
    status = raw.call(&pb::Rendezvous::Stub::ReportFailure, report, &reportResponse);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(status.error_message(), Catch::Contains("rank 7 is out of range"));
  }
  SECTION("a process that is already a member joining again") {
    // The pending-join case is covered by the unit tests; here, against a committed member.
    join.set_job_id("bad-input");
    join.mutable_process()->set_host(hostName());
    join.mutable_process()->set_pid(static_cast<std::uint32_t>(::getpid()));
    join.mutable_process()->set_instance_id("another-instance");
    auto status = raw.call(&pb::Rendezvous::Stub::Join, join, &joinResponse);
    CHECK(status.error_code() == grpc::StatusCode::ALREADY_EXISTS);
    CHECK_THAT(status.error_message(), Catch::Contains("already member"));
  }
  SECTION("a watch stream for a member that does not exist") {
    pb::WatchRequest watch;
    *watch.mutable_caller() = callerOf(*member, "bad-input");
    watch.mutable_caller()->set_member_id(999);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 30s);
    auto reader = raw.stub->Watch(&context, watch);
    pb::Event event;
    CHECK_FALSE(reader->Read(&event));
    auto status = reader->Finish();
    CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK_THAT(status.error_message(), Catch::Contains("no member 999"));
  }
  // Whatever happened above, the original member is still served.
  CHECK(member->kvSet("still", "here").ok());
}

TEST_CASE("garbage bytes on the port do not stop the server from serving others") {
  RendezvousServerProcess server;
  std::mt19937 random(7);
  std::string noise(64 * 1024, '\0');
  for (auto& c : noise) c = static_cast<char>(random());
  sendGarbage(server.port(), noise);
  sendGarbage(server.port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  sendGarbage(server.port(), "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + noise);
  auto member = soloMember(server.address(), "after-garbage");
  CHECK(member->kvSet("k", "v").ok());
  auto value = member->kvGet("k");
  REQUIRE(value.ok());
  CHECK(value->value_or("") == "v");
}

TEST_CASE("ftcomm-rendezvous refuses bad flags with a usage message and exit code 2") {
  TempDir dir("ftcomm-flags");
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), binary("ftcomm-rendezvous"));
    const auto log = dir.path / "stderr";
    std::filesystem::remove(log);
    ChildProcess server(args, log.string());
    auto status = server.waitExit(30s);
    REQUIRE(status);
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    return std::make_pair(WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, text.str());
  };
  auto [code, text] = run({});
  CHECK(code == 2);
  CHECK_THAT(text, Catch::Contains("--listen is required"));
  std::tie(code, text) = run({"--listen", "127.0.0.1:0", "--lease-ms", "soon"});
  CHECK(code == 2);
  CHECK_THAT(text, Catch::Contains("--lease-ms wants a number"));
  std::tie(code, text) = run({"--listen", "127.0.0.1:0", "--bogus", "1"});
  CHECK(code == 2);
  CHECK_THAT(text, Catch::Contains("unknown flag --bogus"));
  std::tie(code, text) = run({"--listen", "127.0.0.1:0", "--token-file", "/nonexistent/tokens"});
  CHECK(code == 2);
  CHECK_THAT(text, Catch::Contains("cannot read token file"));
  std::tie(code, text) = run({"--listen", "not-an-address:xyz"});
  CHECK(code == 1);
  CHECK_THAT(text, Catch::Contains("cannot listen on not-an-address:xyz"));
}
