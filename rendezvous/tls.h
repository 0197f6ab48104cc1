// TLS for the rendezvous service: the server's certificate and key (and, for mutual TLS, the CA
// that signs its clients), and a client's CA (and its own certificate and key). PEM files; a
// file that cannot be read is an error that names it. Empty settings mean plaintext, as before.
//
// Thread-safety: functions of their arguments.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "ftcomm/status.h"

namespace ftcomm::rendezvous {

struct ServerTls {
  std::string certFile;      // the server's certificate chain; empty: plaintext
  std::string keyFile;       // its private key
  std::string clientCaFile;  // set: clients must present a certificate this CA signed (mTLS)
};

struct ClientTls {
  std::string caFile;    // the CA that signed the server's certificate; empty: plaintext
  std::string certFile;  // for mutual TLS: this client's certificate ...
  std::string keyFile;   // ... and key
};

Result<std::shared_ptr<grpc::ServerCredentials>> serverCredentials(const ServerTls& tls);
Result<std::shared_ptr<grpc::ChannelCredentials>> channelCredentials(const ClientTls& tls);

}  // namespace ftcomm::rendezvous
