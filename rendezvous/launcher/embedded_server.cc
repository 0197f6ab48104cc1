#include "rendezvous/launcher/embedded_server.h"

#include <chrono>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "rendezvous/launcher/process.h"
#include "rendezvous/launcher/sim_hosts.h"

namespace ftcomm::launcher {

namespace fs = std::filesystem;

bool makeCertificates(const fs::path& work, const std::string& advertised) {
  const std::string w = work.string();
  const std::string script =
      "cd '" + w +
      "' && exec >openssl.log 2>&1 && "
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ftcomm-run-CA "
      "-keyout ca.key -out ca.pem && "
      "openssl req -newkey rsa:2048 -nodes -subj /CN=ftcomm-rendezvous "
      "-keyout server.key -out server.csr && "
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:" +
      SimulatedHosts::dataAddress(-1) + (advertised.empty() ? "" : ",IP:" + advertised) +
      "\\nextendedKeyUsage=serverAuth\\n' "
      ">server.ext && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile server.ext -out server.pem && "
      "openssl req -newkey rsa:2048 -nodes -subj /CN=ftcomm-member -keyout member.key "
      "-out member.csr && "
      "printf 'extendedKeyUsage=clientAuth\\n' >member.ext && "
      "openssl x509 -req -in member.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile member.ext -out member.pem";
  // Under coreutils' timeout: a stuck openssl must not hold the launch forever.
  const pid_t shell = spawn({"timeout", "60", "/bin/sh", "-c", script}, true);
  return shell > 0 && waitFor(shell) == 0;
}

std::string startRendezvous(const fs::path& self, const fs::path& work, bool tls, int leaseMs,
                            const std::string& host, const std::string& netns, pid_t* server) {
  const fs::path binary = self.parent_path() / "ftcomm-rendezvous";
  const fs::path portFile = work / "port";
  std::vector<std::string> args;
  if (!netns.empty()) args = {"ip", "netns", "exec", netns};
  for (const std::string& a : {binary.string(), std::string("--listen"), host + ":0",
                               std::string("--port-file"), portFile.string()}) {
    args.push_back(a);
  }
  if (leaseMs > 0) {
    args.push_back("--lease-ms");
    args.push_back(std::to_string(leaseMs));
  }
  if (tls) {
    for (const auto& [flag, file] :
         {std::pair{"--tls-cert", "server.pem"}, std::pair{"--tls-key", "server.key"},
          std::pair{"--tls-client-ca", "ca.pem"}}) {
      args.push_back(flag);
      args.push_back((work / file).string());
    }
  }
  *server = spawn(args, true);
  if (*server < 0) return "";
  for (int i = 0; i < 1000; ++i) {
    std::ifstream in(portFile);
    std::string port;
    if (std::getline(in, port) && !port.empty()) return host + ":" + port;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

}  // namespace ftcomm::launcher
