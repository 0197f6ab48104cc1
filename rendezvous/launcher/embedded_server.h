// The rendezvous server ftcomm-run starts when it is given none, and its throwaway TLS
// certificates (--tls).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace ftcomm::launcher {

// A throwaway CA in `work`, and certificates it signs: the server's (for 127.0.0.1, localhost,
// the simulated hosts' head and `advertised`, if any) and one for the ranks (mutual TLS).
// openssl's output goes to work/openssl.log. False when openssl failed or took over 60 s.
bool makeCertificates(const std::filesystem::path& work, const std::string& advertised);

// Starts ftcomm-rendezvous (beside `self`) on `host` with lease `leaseMs` (0: the server's
// default), in the network namespace `netns` unless that is empty, with TLS from the
// certificates of makeCertificates when `tls`. Its address, or "" when it did not start within
// 10 s; `server` gets its pid.
std::string startRendezvous(const std::filesystem::path& self, const std::filesystem::path& work,
                            bool tls, int leaseMs, const std::string& host,
                            const std::string& netns, pid_t* server);

}  // namespace ftcomm::launcher
