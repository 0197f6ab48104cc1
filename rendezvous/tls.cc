#include "rendezvous/tls.h"

#include <fstream>
#include <sstream>

namespace ftcomm::rendezvous {

namespace {

Result<std::string> readPem(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) return invalidArgument(std::string("cannot read the ") + what + " " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    return invalidArgument(std::string("the ") + what + " " + path + " is not PEM");
  }
  return text.str();
}

}  // namespace

Result<std::shared_ptr<grpc::ServerCredentials>> serverCredentials(const ServerTls& tls) {
  if (tls.certFile.empty() && tls.keyFile.empty() && tls.clientCaFile.empty()) {
    return grpc::InsecureServerCredentials();
  }
  if (tls.certFile.empty() || tls.keyFile.empty()) {
    return invalidArgument("TLS needs both a certificate and its key (--tls-cert, --tls-key)");
  }
  auto cert = readPem(tls.certFile, "TLS certificate");
  if (!cert.ok()) return cert.status();
  auto key = readPem(tls.keyFile, "TLS key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!tls.clientCaFile.empty()) {
    auto ca = readPem(tls.clientCaFile, "client CA");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

Result<std::shared_ptr<grpc::ChannelCredentials>> channelCredentials(const ClientTls& tls) {
  if (tls.caFile.empty() && tls.certFile.empty() && tls.keyFile.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  if (tls.caFile.empty()) {
    return invalidArgument("a client certificate needs the server's CA (FTCOMM_RENDEZVOUS_CA)");
  }
  if (tls.certFile.empty() != tls.keyFile.empty()) {
    return invalidArgument(
        "a client certificate needs its key and the key its certificate "
        "(FTCOMM_RENDEZVOUS_CERT, FTCOMM_RENDEZVOUS_KEY)");
  }
  grpc::SslCredentialsOptions options;
  auto ca = readPem(tls.caFile, "rendezvous CA");
  if (!ca.ok()) return ca.status();
  options.pem_root_certs = *ca;
  if (!tls.certFile.empty()) {
    auto cert = readPem(tls.certFile, "client certificate");
    if (!cert.ok()) return cert.status();
    auto key = readPem(tls.keyFile, "client key");
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *cert;
    options.pem_private_key = *key;
  }
  return grpc::SslCredentials(options);
}

}  // namespace ftcomm::rendezvous
