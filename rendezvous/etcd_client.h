// A small client of etcd's v3 gRPC API: ranges, transactions and leases, each with a
// deadline. It holds one channel per endpoint and goes to the next endpoint when a call fails
// UNAVAILABLE (a member down or cut off from the cluster's leader), so one etcd member's loss is
// ridden out; every call it makes is safe to repeat (puts of fixed keys, guarded transactions).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ftcomm/proto/etcd.grpc.pb.h"
#include "ftcomm/status.h"
#include "rendezvous/tls.h"

namespace ftcomm::rendezvous {

namespace etcdpb = ::etcdserverpb;

struct EtcdOptions {
  std::vector<std::string> endpoints;  // HOST:PORT of etcd members' client URLs
  ClientTls tls;                       // empty: plaintext
  // A write that etcd has not confirmed by then ends the replica (its state is ahead of etcd):
  // generous, as an etcd election takes seconds and an overloaded member is slow.
  std::chrono::milliseconds callTimeout{15000};
};

// "etcd://HOST:PORT[,HOST:PORT...]" -> the endpoints; a clear error for anything else.
Result<std::vector<std::string>> parseEtcdUrl(const std::string& url);
// The end of the key range of every key that starts with `prefix` (etcd's range_end).
std::string prefixEnd(const std::string& prefix);

class EtcdClient {
 public:
  static Result<std::unique_ptr<EtcdClient>> connect(EtcdOptions options);

  Result<etcdpb::RangeResponse> range(const std::string& key, const std::string& rangeEnd = "");
  Result<etcdpb::TxnResponse> txn(const etcdpb::TxnRequest& request);
  // A lease of at least `ttl` (etcd may grant more: its minimum grows with its election timeout).
  Result<etcdpb::LeaseGrantResponse> grantLease(std::chrono::seconds ttl);
  // One renewal, given up after `timeout`; the TTL left afterwards (0: the lease is gone).
  Result<std::int64_t> keepAlive(std::int64_t lease, std::chrono::milliseconds timeout);
  Status revokeLease(std::int64_t lease);

  // "HOST:PORT,HOST:PORT", for messages.
  std::string endpointList() const;

 private:
  struct Endpoint {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<etcdpb::KV::Stub> kv;
    std::unique_ptr<etcdpb::Lease::Stub> lease;
  };
  explicit EtcdClient(EtcdOptions options) : options_(std::move(options)) {}
  // Runs `call` on the current endpoint, moving on to the next one on UNAVAILABLE, until
  // `timeout` (the call timeout when zero).
  template <typename Call>
  Status withFailover(const char* name, const Call& call,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // withFailover's work, on the calling thread.
  template <typename Call>
  Status attempt(const char* name, const Call& call, std::chrono::milliseconds timeout);

  EtcdOptions options_;
  std::vector<Endpoint> endpoints_;
  std::atomic<std::size_t> current_{0};
};

}  // namespace ftcomm::rendezvous
