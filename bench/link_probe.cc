// ftcomm-link-probe: the round trip of a small TCP message, the floor under any collective's
// latency between two hosts (ftcomm-bench --link-rtt-us takes its result).
//   ftcomm-link-probe server ADDRESS PORT          answers one client, then exits
//   ftcomm-link-probe client ADDRESS PORT [ITERS]  prints "rtt_us MEDIAN" over ITERS (10000)
// 8-byte messages with TCP_NODELAY, after 1000 untimed round trips. The client retries its
// connection for 10 s while the server starts.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kBytes = 8;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "ftcomm-link-probe: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

sockaddr_in addressOf(const char* host, const char* port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(std::atoi(port)));
  if (::inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    std::fprintf(stderr, "ftcomm-link-probe: '%s' is not an IPv4 address\n", host);
    std::exit(2);
  }
  return a;
}

void exact(int fd, char* data, bool send) {
  std::size_t done = 0;
  while (done < kBytes) {
    const ssize_t n = send ? ::send(fd, data + done, kBytes - done, 0)
                           : ::recv(fd, data + done, kBytes - done, 0);
    if (n <= 0) die(send ? "send" : "recv (the peer closed)");
    done += static_cast<std::size_t>(n);
  }
}

void noDelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int serve(const sockaddr_in& address) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    die("bind");
  }
  if (::listen(listener, 1) != 0) die("listen");
  const int fd = ::accept(listener, nullptr, nullptr);
  if (fd < 0) die("accept");
  noDelay(fd);
  char data[kBytes];
  for (;;) {
    std::size_t done = 0;
    while (done < kBytes) {
      const ssize_t n = ::recv(fd, data + done, kBytes - done, 0);
      if (n == 0) return 0;  // the client is done
      if (n < 0) die("recv");
      done += static_cast<std::size_t>(n);
    }
    exact(fd, data, true);
  }
}

int probe(const sockaddr_in& address, int iters) {
  int fd = -1;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) break;
    ::close(fd);
    if (Clock::now() > deadline) die("connect");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  noDelay(fd);
  char data[kBytes] = {};
  std::vector<double> rtts;
  for (int i = -1000; i < iters; ++i) {
    const auto start = Clock::now();
    exact(fd, data, true);
    exact(fd, data, false);
    if (i >= 0)
      rtts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  ::close(fd);
  std::nth_element(rtts.begin(), rtts.begin() + rtts.size() / 2, rtts.end());
  std::printf("rtt_us %.2f\n", rtts[rtts.size() / 2]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (argc < 4 || (mode != "server" && mode != "client")) {
    std::fprintf(stderr,
                 "usage: ftcomm-link-probe server ADDRESS PORT | client ADDRESS PORT [ITERS]\n");
    return 2;
  }
  const sockaddr_in address = addressOf(argv[2], argv[3]);
  if (mode == "server") return serve(address);
  const int iters = argc > 4 ? std::atoi(argv[4]) : 10000;
  if (iters < 1) {
    std::fprintf(stderr, "ftcomm-link-probe: ITERS must be at least 1\n");
    return 2;
  }
  return probe(address, iters);
}
