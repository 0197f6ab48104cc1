// A running rendezvous server: the gRPC server, the service, and the ticker thread that expires
// leases and pending-call deadlines. Used by ftcomm-rendezvous and by the in-process benchmark.
//
// Thread-safety: start() once; shutdown() from any thread, once.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rendezvous/service.h"
#include "rendezvous/tls.h"

namespace ftcomm::rendezvous {

struct ServerOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0 picks a free one
  ServiceOptions service;
  ServerTls tls;  // empty: plaintext
  std::chrono::milliseconds tickInterval{10};
};

class RendezvousServer {
 public:
  ~RendezvousServer();
  static Result<std::unique_ptr<RendezvousServer>> start(ServerOptions options);

  int port() const { return port_; }
  // Stops accepting calls, cancels open ones without declaring anybody failed, and joins threads.
  void shutdown();

 private:
  explicit RendezvousServer(ServerOptions options);
  void runTicker();
  // A replica of a shared store: stands by until it leads, then loads the jobs and serves.
  void lead();

  ServerOptions options_;
  std::unique_ptr<RendezvousService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable stopCv_;
  bool stopping_ = false;
  std::thread ticker_;
  std::atomic<bool> stopLeading_{false};
  std::thread leader_;
};

}  // namespace ftcomm::rendezvous
