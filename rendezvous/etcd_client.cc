#include "rendezvous/etcd_client.h"

#include <thread>

#include "rendezvous/address_list.h"
#include "rendezvous/grpc_status.h"

namespace ftcomm::rendezvous {

namespace {

std::chrono::system_clock::time_point deadlineIn(std::chrono::milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

}  // namespace

Result<std::vector<std::string>> parseEtcdUrl(const std::string& url) {
  constexpr std::string_view kScheme = "etcd://";
  if (url.rfind(kScheme, 0) != 0) {
    return invalidArgument("store '" + url + "': want etcd://HOST:PORT[,HOST:PORT...]");
  }
  std::vector<std::string> endpoints = splitList(std::string_view(url).substr(kScheme.size()));
  for (const std::string& endpoint : endpoints) {
    const std::size_t colon = endpoint.rfind(':');
    if (endpoint.empty() || colon == std::string::npos || colon == 0 ||
        colon + 1 == endpoint.size() ||
        endpoint.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      return invalidArgument("store '" + url + "': '" + endpoint + "' is not HOST:PORT");
    }
  }
  return endpoints;
}

std::string prefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Result<std::unique_ptr<EtcdClient>> EtcdClient::connect(EtcdOptions options) {
  if (options.endpoints.empty()) return invalidArgument("etcd: no endpoints");
  auto credentials = channelCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  std::unique_ptr<EtcdClient> client(new EtcdClient(std::move(options)));
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  args.SetMaxReceiveMessageSize(256 << 20);
  for (const auto& address : client->options_.endpoints) {
    Endpoint endpoint;
    endpoint.channel = grpc::CreateCustomChannel(address, *credentials, args);
    endpoint.kv = etcdpb::KV::NewStub(endpoint.channel);
    endpoint.lease = etcdpb::Lease::NewStub(endpoint.channel);
    client->endpoints_.push_back(std::move(endpoint));
  }
  return client;
}

template <typename Call>
Status EtcdClient::withFailover(const char* name, const Call& call,
                                std::chrono::milliseconds timeout) {
  // The store is written from the rendezvous's gRPC callbacks (the state must reach etcd before
  // the reply it backs). A blocking gRPC call made inside a callback of gRPC's own stalls until
  // its deadline (its completion waits behind the callback), so the call runs on a thread of
  // its own and the callback only waits for it.
  Status result;
  std::thread worker([&] { result = attempt(name, call, timeout); });
  worker.join();
  return result;
}

template <typename Call>
Status EtcdClient::attempt(const char* name, const Call& call, std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) timeout = options_.callTimeout;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto backoff = std::chrono::milliseconds(10);
  Status last = unavailable("never tried");
  while (std::chrono::steady_clock::now() < deadline) {
    const std::size_t index = current_.load();
    Endpoint& endpoint = endpoints_[index % endpoints_.size()];
    grpc::ClientContext context;
    // One attempt may not use the whole budget: a member that is cut off answers nothing, and
    // the next one should get its turn.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    context.set_deadline(
        deadlineIn(std::min(left, std::max(timeout / 2, std::chrono::milliseconds(100)))));
    grpc::Status status = call(endpoint, context);
    if (status.ok()) return Status::Ok();
    last = fromGrpc(status);
    const bool retry = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    if (!retry) break;
    std::size_t expected = index;
    current_.compare_exchange_strong(expected, index + 1);
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
  return Status(last.code(), std::string("etcd ") + name + " (endpoints " + endpointList() +
                                 "): " + last.message());
}

std::string EtcdClient::endpointList() const {
  std::string all;
  for (const auto& endpoint : options_.endpoints) all += (all.empty() ? "" : ",") + endpoint;
  return all;
}

Result<etcdpb::RangeResponse> EtcdClient::range(const std::string& key,
                                                const std::string& rangeEnd) {
  etcdpb::RangeRequest request;
  request.set_key(key);
  request.set_range_end(rangeEnd);
  etcdpb::RangeResponse response;
  FTCOMM_RETURN_IF_ERROR(withFailover("range", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.kv->Range(&c, request, &response);
  }));
  return response;
}

Result<etcdpb::TxnResponse> EtcdClient::txn(const etcdpb::TxnRequest& request) {
  etcdpb::TxnResponse response;
  FTCOMM_RETURN_IF_ERROR(withFailover("txn", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.kv->Txn(&c, request, &response);
  }));
  return response;
}

Result<etcdpb::LeaseGrantResponse> EtcdClient::grantLease(std::chrono::seconds ttl) {
  etcdpb::LeaseGrantRequest request;
  request.set_ttl(ttl.count());
  etcdpb::LeaseGrantResponse response;
  FTCOMM_RETURN_IF_ERROR(withFailover("lease grant", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.lease->LeaseGrant(&c, request, &response);
  }));
  if (!response.error().empty()) return unavailable("etcd lease grant: " + response.error());
  return response;
}

Result<std::int64_t> EtcdClient::keepAlive(std::int64_t lease, std::chrono::milliseconds timeout) {
  etcdpb::LeaseKeepAliveResponse response;
  bool answered = false;
  FTCOMM_RETURN_IF_ERROR(withFailover(
      "lease keep-alive",
      [&](Endpoint& e, grpc::ClientContext& c) {
        auto stream = e.lease->LeaseKeepAlive(&c);
        etcdpb::LeaseKeepAliveRequest request;
        request.set_id(lease);
        if (stream->Write(request)) answered = stream->Read(&response);
        stream->WritesDone();
        grpc::Status status = stream->Finish();
        if (answered) return grpc::Status::OK;
        return status.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "no keep-alive answer")
                           : status;
      },
      timeout));
  return response.ttl();
}

Status EtcdClient::revokeLease(std::int64_t lease) {
  etcdpb::LeaseRevokeRequest request;
  request.set_id(lease);
  etcdpb::LeaseRevokeResponse response;
  return withFailover("lease revoke", [&](Endpoint& e, grpc::ClientContext& c) {
    return e.lease->LeaseRevoke(&c, request, &response);
  });
}

}  // namespace ftcomm::rendezvous
