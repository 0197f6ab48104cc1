// ftcomm-rendezvous: the membership and key-value server of ftcomm jobs.
//
//   ftcomm-rendezvous --listen HOST:PORT [--state-dir DIR | --store etcd://HOST:PORT,...]
//                     [--token-file FILE] [--lease-ms N] [--port-file FILE]
//                     [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "rendezvous/etcd_store.h"
#include "rendezvous/server.h"

namespace {

constexpr const char* kUsage =
    "usage: ftcomm-rendezvous --listen HOST:PORT [--state-dir DIR | --store etcd://HOST:PORT,...]\n"
    "                         [--token-file FILE] [--lease-ms N] [--port-file FILE]\n"
    "                         [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
    "  --listen      address to serve on (port 0: pick a free port)\n"
    "  --state-dir   keep jobs, epochs and keys here; a restart with the same dir resumes them\n"
    "  --store etcd://HOST:PORT[,HOST:PORT...]\n"
    "                keep them in etcd instead: every replica started with the same store and\n"
    "                prefix serves the same jobs, one at a time (the others stand by)\n"
    "  --store-prefix    etcd key prefix (/ftcomm/)\n"
    "  --advertise       HOST:PORT clients use for this replica, named by standbys (--listen)\n"
    "  --leader-ttl-s    the leader's etcd lease, whole seconds (2; etcd may grant more)\n"
    "  --store-ca, --store-cert, --store-key   TLS to etcd: its CA, and a client certificate\n"
    "  --token-file  lines 'JOB TOKEN' or 'TOKEN' (any job): requests must carry their job's "
    "token\n"
    "  --lease-ms    a member that does not heartbeat for this long is declared failed (2000)\n"
    "  --port-file   write the port actually bound to this file once serving\n"
    "  --tls-cert, --tls-key   serve TLS with this certificate (chain) and key, PEM\n"
    "  --tls-client-ca         mutual TLS: clients must present a certificate this CA signed\n";

int usageError(const std::string& message) {
  std::cerr << "ftcomm-rendezvous: " << message << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ftcomm::rendezvous;
  ServerOptions options;
  options.listen.clear();
  std::string tokenFile, portFile, storeUrl;
  EtcdStoreOptions etcd;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (i + 1 >= argc) return usageError("missing value after " + std::string(flag));
    std::string value = argv[++i];
    if (flag == "--listen") {
      options.listen = value;
    } else if (flag == "--state-dir") {
      options.service.stateDir = value;
    } else if (flag == "--store") {
      storeUrl = value;
    } else if (flag == "--store-prefix") {
      etcd.prefix = value;
    } else if (flag == "--advertise") {
      etcd.advertise = value;
    } else if (flag == "--store-ca") {
      etcd.etcd.tls.caFile = value;
    } else if (flag == "--store-cert") {
      etcd.etcd.tls.certFile = value;
    } else if (flag == "--store-key") {
      etcd.etcd.tls.keyFile = value;
    } else if (flag == "--leader-ttl-s") {
      unsigned seconds = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
      if (ec != std::errc() || end != value.data() + value.size() || seconds < 1 || seconds > 60) {
        return usageError("--leader-ttl-s wants a number of seconds in 1..60");
      }
      etcd.leaderTtl = std::chrono::seconds(seconds);
    } else if (flag == "--token-file") {
      tokenFile = value;
    } else if (flag == "--port-file") {
      portFile = value;
    } else if (flag == "--tls-cert") {
      options.tls.certFile = value;
    } else if (flag == "--tls-key") {
      options.tls.keyFile = value;
    } else if (flag == "--tls-client-ca") {
      options.tls.clientCaFile = value;
    } else if (flag == "--lease-ms") {
      unsigned ms = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (ec != std::errc() || end != value.data() + value.size() || ms < 10 || ms > 3600000) {
        return usageError("--lease-ms wants a number of milliseconds in 10..3600000");
      }
      options.service.lease = std::chrono::milliseconds(ms);
    } else {
      return usageError("unknown flag " + std::string(flag));
    }
  }
  if (options.listen.empty()) return usageError("--listen is required");
  if (!storeUrl.empty()) {
    if (options.service.stateDir) return usageError("--state-dir and --store exclude each other");
    if (options.listen.size() >= 2 &&
        options.listen.compare(options.listen.size() - 2, 2, ":0") == 0) {
      return usageError(
          "--store wants a fixed --listen port: clients list the replicas' addresses");
    }
    auto endpoints = parseEtcdUrl(storeUrl);
    if (!endpoints.ok()) return usageError(endpoints.status().message());
    etcd.etcd.endpoints = std::move(endpoints).value();
    if (etcd.advertise.empty()) etcd.advertise = options.listen;
    etcd.memberLease = options.service.lease;
    auto store = makeEtcdStore(etcd);
    if (!store.ok()) {
      std::cerr << "ftcomm-rendezvous: " << store.status().toString() << "\n";
      return 1;
    }
    options.service.store = std::shared_ptr<StateStore>(std::move(store).value());
  }
  if (!tokenFile.empty()) {
    auto tokens = TokenStore::load(tokenFile);
    if (!tokens.ok()) return usageError(tokens.status().message());
    options.service.tokens = std::move(tokens).value();
  }

  // Signals are taken by sigwait below, never by a handler in some gRPC thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = RendezvousServer::start(options);
  if (!server.ok()) {
    std::cerr << "ftcomm-rendezvous: " << server.status().toString() << "\n";
    return 1;
  }
  const bool replica = options.service.store && options.service.store->replicated();
  std::cerr << "ftcomm-rendezvous: " << (replica ? "listening" : "serving") << " on port "
            << (*server)->port()
            << (options.tls.certFile.empty()       ? ""
                : options.tls.clientCaFile.empty() ? " with TLS"
                                                   : " with mutual TLS")
            << " (lease " << options.service.lease.count() << " ms"
            << (options.service.store      ? ", " + options.service.store->describe()
                : options.service.stateDir ? ", state in " + options.service.stateDir->string()
                                           : "")
            << ")" << std::endl;
  if (!portFile.empty()) {
    const std::string tmp = portFile + ".tmp";
    std::ofstream(tmp) << (*server)->port() << "\n";
    if (std::rename(tmp.c_str(), portFile.c_str()) != 0) {
      std::cerr << "ftcomm-rendezvous: cannot write " << portFile << "\n";
      return 1;
    }
  }
  int received = 0;
  sigwait(&signals, &received);
  std::cerr << "ftcomm-rendezvous: signal " << received << ", shutting down" << std::endl;
  (*server)->shutdown();
  return 0;
}
