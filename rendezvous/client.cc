#include "rendezvous/client.h"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <unordered_map>

#include "rendezvous/address_list.h"
#include "rendezvous/client_calls.h"
#include "rendezvous/grpc_status.h"

namespace ftcomm::rendezvous {

using client_calls::isVerdict;
using client_calls::kFirstBackoff;
using client_calls::kMaxBackoff;
using client_calls::systemDeadline;

namespace {

// A blocking call's server-side timeout ends this long before the client's gRPC deadline, so the
// server's explanation ("2 of 4 joined") arrives instead of a bare DEADLINE_EXCEEDED.
constexpr auto kServerAnswerSlack = std::chrono::seconds(2);

std::string newInstanceId() {
  std::random_device random;
  std::uniform_int_distribution<std::uint64_t> bits;
  char text[64];
  std::snprintf(text, sizeof text, "%d-%016llx%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(bits(random)),
                static_cast<unsigned long long>(bits(random)));
  return text;
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

Result<std::unique_ptr<RendezvousClient>> RendezvousClient::create(ClientOptions options) {
  if (options.address.empty()) return invalidArgument("rendezvous address is empty");
  std::vector<std::string> addresses = splitList(options.address);
  if (std::find(addresses.begin(), addresses.end(), "") != addresses.end()) {
    return invalidArgument("rendezvous address '" + options.address +
                           "' has an empty entry; want HOST:PORT[,HOST:PORT...]");
  }
  if (options.jobId.empty()) return invalidArgument("job id is empty");
  if (options.callTimeout <= std::chrono::milliseconds(0)) {
    return invalidArgument("callTimeout must be positive");
  }
  auto credentials = channelCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  return std::unique_ptr<RendezvousClient>(new RendezvousClient(
      std::move(options), std::move(addresses), std::move(credentials).value()));
}

RendezvousClient::RendezvousClient(ClientOptions options, std::vector<std::string> addresses,
                                   std::shared_ptr<grpc::ChannelCredentials> credentials)
    : options_(std::move(options)), instanceId_(newInstanceId()) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  args.SetMaxReceiveMessageSize(64 << 20);
  for (const auto& address : addresses) {
    Replica replica;
    replica.channel = grpc::CreateCustomChannel(address, credentials, args);
    replica.stub = pb::Rendezvous::NewStub(replica.channel);
    replicas_.push_back(std::move(replica));
  }
}

std::pair<RendezvousClient::Replica*, std::size_t> RendezvousClient::current() {
  const std::size_t at = current_.load();
  return {&replicas_[at % replicas_.size()], at};
}

void RendezvousClient::moveOn(std::size_t at) {
  if (replicas_.size() > 1) current_.compare_exchange_strong(at, at + 1);
}

void RendezvousClient::dropWatchStream() {
  std::lock_guard lock(mu_);
  if (watchContext_ != nullptr) watchContext_->TryCancel();
}

RendezvousClient::~RendezvousClient() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (watchContext_ != nullptr) watchContext_->TryCancel();
  }
  cv_.notify_all();
  if (heartbeatThread_.joinable()) heartbeatThread_.join();
  if (watchThread_.joinable()) watchThread_.join();
}

pb::Caller RendezvousClient::caller() const {
  pb::Caller c;
  c.set_job_id(options_.jobId);
  c.set_token(options_.token);
  c.set_member_id(memberId_.load());
  c.set_epoch(epoch_.load());
  return c;
}

Status RendezvousClient::standing() const {
  std::lock_guard lock(mu_);
  return standing_;
}

// The server's word that this member is out for good ("expelled": declared failed) fences every
// later call; other FailedPrecondition answers (a stale epoch) concern one call only.
Status RendezvousClient::noteVerdict(const Status& status) {
  if (isVerdict(status.code()) && memberId_.load() != 0 &&
      status.message().find("expelled") != std::string::npos) {
    expel(status);
  }
  return status;
}

void RendezvousClient::expel(const Status& why) {
  {
    std::lock_guard lock(mu_);
    if (!standing_.ok()) return;
    standing_ = why;
  }
  if (options_.onExpelled) options_.onExpelled(why);
}

template <typename Request, typename Response, typename Rpc>
Status RendezvousClient::invoke(const char* name, Rpc rpc, Request& request, Response* response,
                                Clock::time_point deadline, bool waitsByDesign, bool repeatable) {
  FTCOMM_RETURN_IF_ERROR(standing());
  auto backoff = kFirstBackoff;
  Status last = unavailable("never reached");
  while (true) {
    const auto now = Clock::now();
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (remaining.count() <= 0) break;
    grpc::ClientContext context;
    // With one server, a call waits for it to come back; with replicas, a call to one that is
    // down fails at once and goes to the next.
    context.set_wait_for_ready(replicas_.size() == 1);
    if constexpr (requires { request.set_timeout_ms(1u); }) {
      if (waitsByDesign) request.set_timeout_ms(static_cast<std::uint32_t>(remaining.count()));
    }
    context.set_deadline(systemDeadline(waitsByDesign ? deadline + kServerAnswerSlack : deadline));
    auto [replica, at] = current();
    grpc::Status status = (replica->stub.get()->*rpc)(&context, request, response);
    if (status.ok()) return Status::Ok();
    last = fromGrpc(status);
    if (last.code() != StatusCode::kUnavailable) break;
    moveOn(at);
    // A standby replica refuses before doing anything, so even a call that must not be repeated
    // goes on to the next one.
    if (!repeatable && last.message().find(kStandbyRefusal) == std::string::npos) break;
    // The server went away mid-call (e.g. a restart): the call is safe to repeat.
    if (!sleepUnlessStopping(std::min(backoff, remaining))) break;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
  // gRPC's own deadline (rather than the server's explanation of a wait that ran out) means the
  // server never answered.
  if (last.code() == StatusCode::kTimeout &&
      (!waitsByDesign || last.message() == "Deadline Exceeded")) {
    // A channel whose connections keep failing: down, or a TLS handshake that fails (a
    // plaintext client of a TLS server, another CA, no client certificate under mutual TLS).
    const bool failing =
        current().first->channel->GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE;
    const bool tls = !options_.tls.caFile.empty();
    last = timeoutError(
        "rendezvous server " + options_.address + " did not answer " + name + " in time " +
        (failing ? std::string("(connections to it fail: it is down, or its TLS does not match "
                               "this client's, which ") +
                       (tls ? "trusts the CA in " + options_.tls.caFile +
                                  (options_.tls.certFile.empty() ? " and has no certificate" : "")
                            : "speaks plaintext: FTCOMM_RENDEZVOUS_CA is unset") +
                       ")"
                 : std::string("(unreachable or overloaded)")));
  }
  return noteVerdict(Status(last.code(), std::string(name) + ": " + last.message()));
}

Result<pb::JoinResponse> RendezvousClient::join(const JoinOptions& options) {
  if (memberId_.load() != 0) return failedPrecondition("this client has already joined");
  pb::JoinRequest request;
  request.set_job_id(options_.jobId);
  request.set_token(options_.token);
  request.set_world_size(options.worldSize);
  if (options.desiredRank) request.set_desired_rank(*options.desiredRank);
  pb::ProcessInfo* process = request.mutable_process();
  process->set_host(options.host.empty() ? hostName() : options.host);
  process->set_pid(static_cast<std::uint32_t>(::getpid()));
  process->set_transport_address(options.transportAddress);
  process->set_instance_id(instanceId_);
  process->set_address(options.address);
  pb::JoinResponse response;
  FTCOMM_RETURN_IF_ERROR(invoke("Join", &pb::Rendezvous::Stub::Join, request, &response,
                                Clock::now() + options.timeout, true));
  memberId_ = response.member_id();
  epoch_ = response.epoch();
  rank_ = response.rank();
  {
    std::lock_guard lock(mu_);
    view_ = response.view();
  }
  startBackgroundThreads(std::chrono::milliseconds(response.lease_ms()));
  return response;
}

Status RendezvousClient::kvSet(const std::string& key, const std::string& value) {
  pb::KvSetRequest request;
  *request.mutable_caller() = caller();
  request.set_key(key);
  request.set_value(value);
  pb::KvSetResponse response;
  return invoke("KvSet", &pb::Rendezvous::Stub::KvSet, request, &response,
                Clock::now() + options_.callTimeout, false);
}

Result<std::optional<std::string>> RendezvousClient::kvGet(const std::string& key) {
  pb::KvGetRequest request;
  *request.mutable_caller() = caller();
  request.set_key(key);
  pb::KvGetResponse response;
  FTCOMM_RETURN_IF_ERROR(invoke("KvGet", &pb::Rendezvous::Stub::KvGet, request, &response,
                                Clock::now() + options_.callTimeout, false));
  if (!response.found()) return std::optional<std::string>();
  return std::optional<std::string>(response.value());
}

Result<pb::KvUpdateResponse> RendezvousClient::kvUpdate(pb::KvUpdateRequest request) {
  *request.mutable_caller() = caller();
  pb::KvUpdateResponse response;
  FTCOMM_RETURN_IF_ERROR(invoke("KvUpdate", &pb::Rendezvous::Stub::KvUpdate, request, &response,
                                Clock::now() + options_.callTimeout, false,
                                request.update_case() != pb::KvUpdateRequest::kAdd));
  return response;
}

Result<std::uint64_t> RendezvousClient::kvCount(const std::string& prefix) {
  pb::KvCountRequest request;
  *request.mutable_caller() = caller();
  request.set_prefix(prefix);
  pb::KvCountResponse response;
  FTCOMM_RETURN_IF_ERROR(invoke("KvCount", &pb::Rendezvous::Stub::KvCount, request, &response,
                                Clock::now() + options_.callTimeout, false));
  return response.count();
}

Result<std::vector<std::string>> RendezvousClient::kvWait(const std::vector<std::string>& keys,
                                                          std::chrono::milliseconds timeout) {
  pb::KvWaitRequest request;
  *request.mutable_caller() = caller();
  for (const auto& key : keys) request.add_keys(key);
  pb::KvWaitResponse response;
  FTCOMM_RETURN_IF_ERROR(invoke("KvWait", &pb::Rendezvous::Stub::KvWait, request, &response,
                                Clock::now() + timeout, true));
  std::vector<std::string> values;
  for (const auto& entry : response.entries()) values.push_back(entry.value());
  return values;
}

Status RendezvousClient::reportFailure(int suspectRank, const std::string& reason) {
  pb::ReportFailureRequest request;
  *request.mutable_caller() = caller();
  request.set_suspect_rank(suspectRank);
  request.set_reason(reason);
  pb::ReportFailureResponse response;
  return invoke("ReportFailure", &pb::Rendezvous::Stub::ReportFailure, request, &response,
                Clock::now() + options_.callTimeout, false);
}

Status RendezvousClient::revoke(const std::string& reason) {
  pb::RevokeRequest request;
  *request.mutable_caller() = caller();
  request.set_reason(reason);
  pb::RevokeResponse response;
  return invoke("Revoke", &pb::Rendezvous::Stub::Revoke, request, &response,
                Clock::now() + options_.callTimeout, false);
}

Result<EpochView> RendezvousClient::reconfigure(std::chrono::milliseconds timeout) {
  pb::ReconfigureRequest request;
  *request.mutable_caller() = caller();
  pb::ReconfigureResponse response;
  FTCOMM_RETURN_IF_ERROR(invoke("Reconfigure", &pb::Rendezvous::Stub::Reconfigure, request,
                                &response, Clock::now() + timeout, true));
  EpochView next;
  next.rank = response.rank();
  next.view.set_epoch(response.epoch());
  {
    // The answer names the members by id; their ProcessInfo comes from the admitted list or,
    // for members carried over, from the view this client holds.
    std::lock_guard lock(mu_);
    std::unordered_map<std::uint64_t, const pb::ProcessInfo*> known;
    for (const auto& member : view_.members()) known[member.member_id()] = &member.process();
    for (const auto& member : response.admitted()) known[member.member_id()] = &member.process();
    for (int rank = 0; rank < response.member_ids_size(); ++rank) {
      const std::uint64_t id = response.member_ids(rank);
      auto it = known.find(id);
      if (it == known.end()) {
        return internalError("Reconfigure: epoch " + std::to_string(response.epoch()) +
                             " names member " + std::to_string(id) +
                             ", whose process this client never learned");
      }
      pb::Member* member = next.view.add_members();
      member->set_member_id(id);
      member->set_rank(rank);
      *member->mutable_process() = *it->second;
    }
    view_ = next.view;
  }
  epoch_ = next.view.epoch();
  rank_ = next.rank;
  return next;
}

pb::MembershipView RendezvousClient::view() const {
  std::lock_guard lock(mu_);
  return view_;
}

Status RendezvousClient::leave() {
  std::lock_guard serial(leaveMu_);
  {
    std::lock_guard lock(mu_);
    if (left_) return Status::Ok();
    leaving_ = true;
  }
  cv_.notify_all();
  if (heartbeatThread_.joinable() && heartbeatThread_.get_id() != std::this_thread::get_id()) {
    heartbeatThread_.join();
  }
  pb::LeaveRequest request;
  *request.mutable_caller() = caller();
  pb::LeaveResponse response;
  FTCOMM_RETURN_IF_ERROR(invoke("Leave", &pb::Rendezvous::Stub::Leave, request, &response,
                                Clock::now() + options_.callTimeout, false));
  std::lock_guard lock(mu_);
  left_ = true;
  standing_ = failedPrecondition("member " + std::to_string(memberId_.load()) + " has left");
  return Status::Ok();
}

}  // namespace ftcomm::rendezvous
