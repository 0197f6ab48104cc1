#include "rendezvous/server.h"

#include <iostream>
#include <thread>

#include "rendezvous/limits.h"

namespace ftcomm::rendezvous {

RendezvousServer::RendezvousServer(ServerOptions options) : options_(std::move(options)) {}

RendezvousServer::~RendezvousServer() {
  shutdown();
}

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::start(ServerOptions options) {
  std::unique_ptr<RendezvousServer> self(new RendezvousServer(std::move(options)));
  self->service_ = std::make_unique<RendezvousService>(self->options_.service);
  StateStore* store = self->service_->store();
  const bool replicated = store != nullptr && store->replicated();
  if (replicated) {
    self->service_->standBy("not known yet (this replica has not read etcd yet)");
  } else {
    auto restored = self->service_->restoreState();
    if (!restored.ok()) return restored.status();
  }

  auto credentials = serverCredentials(self->options_.tls);
  if (!credentials.ok()) return credentials.status();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(self->options_.listen, *credentials, &self->port_);
  builder.RegisterService(self->service_.get());
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(64 << 20);
  self->server_ = builder.BuildAndStart();
  if (!self->server_ || self->port_ == 0) {
    return unavailable("cannot listen on " + self->options_.listen);
  }
  self->ticker_ = std::thread([raw = self.get()] { raw->runTicker(); });
  if (replicated) self->leader_ = std::thread([raw = self.get()] { raw->lead(); });
  return self;
}

void RendezvousServer::lead() {
  StateStore* store = service_->store();
  StateStore::HoldCallbacks hold;
  hold.suspend = [this](const std::string& why) {
    std::cerr << "ftcomm-rendezvous: suspended: " << why << std::endl;
    service_->standBy("not known (this replica is suspended: " + why + ")");
  };
  hold.resume = [this](const std::string& why) {
    std::cerr << "ftcomm-rendezvous: serving again: " << why << std::endl;
    service_->resumeServing();
  };
  hold.lost = [](const std::string& why) {
    // Another replica may serve already: answering anything more could contradict it.
    std::cerr << "ftcomm-rendezvous: fatal: this replica lost its leadership: " << why << std::endl;
    std::_Exit(70);
  };
  store->watchHold(std::move(hold));
  Status status = store->acquire(stopLeading_, [this](const std::string& holder) {
    std::cerr << "ftcomm-rendezvous: standing by; the replica serving is " << holder << std::endl;
    service_->standBy(holder);
  });
  if (stopLeading_.load()) return;
  if (status.ok()) {
    auto restored = service_->restoreState();
    status = restored.status();
    if (restored.ok()) {
      std::cerr << "ftcomm-rendezvous: leading (" << store->describe() << "); restored "
                << *restored << " jobs" << std::endl;
      service_->serve();
      return;
    }
  }
  std::cerr << "ftcomm-rendezvous: fatal: cannot take over: " << status.toString() << std::endl;
  std::_Exit(70);
}

void RendezvousServer::runTicker() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    stopCv_.wait_for(lock, options_.tickInterval);
    if (stopping_) break;
    lock.unlock();
    service_->tick();
    lock.lock();
  }
}

void RendezvousServer::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  stopCv_.notify_all();
  stopLeading_.store(true);
  if (ticker_.joinable()) ticker_.join();
  if (leader_.joinable()) leader_.join();
  if (server_) {
    service_->beginShutdown();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
}

}  // namespace ftcomm::rendezvous
