#include "rendezvous/server.h"

#include <iostream>

#include "rendezvous/limits.h"

namespace ftcomm::rendezvous {

RendezvousServer::RendezvousServer(ServerOptions options) : options_(std::move(options)) {}

RendezvousServer::~RendezvousServer() {
  shutdown();
}

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::start(ServerOptions options) {
  std::unique_ptr<RendezvousServer> self(new RendezvousServer(std::move(options)));
  self->service_ = std::make_unique<RendezvousService>(self->options_.service);
  auto restored = self->service_->restoreState();
  if (!restored.ok()) return restored.status();

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
  return self;
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
  if (ticker_.joinable()) ticker_.join();
  if (server_) {
    service_->beginShutdown();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
}

}  // namespace ftcomm::rendezvous
