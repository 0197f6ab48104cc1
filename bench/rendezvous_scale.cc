// ftcomm-bench-rendezvous: how long a large job takes to agree on a new epoch after one member
// fails. Many simulated members live in this one process, each with its own Watch stream, all on
// gRPC's callback API (no thread per member). A round: one member's stream is cancelled (what the
// server sees when a process dies); every survivor reacts to MEMBER_FAILED by calling
// Reconfigure; the round ends when every survivor holds epoch e+1. The server is a real
// ftcomm-rendezvous in a child process unless --rendezvous names one; --store says where that
// child keeps its state: memory (the default), journal (a state directory) or etcd://... (it
// then waits until the child leads).
//
//   ftcomm-bench-rendezvous [--members N] [--rounds R] [--channels C] [--rendezvous HOST:PORT]
//                           [--store memory|journal|etcd://HOST:PORT,...]
#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_flags.h"
#include "ftcomm/proto/rendezvous.grpc.pb.h"

namespace pb = ftcomm::rendezvous::v1;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// Counts down to zero; waits with a deadline.
class Latch {
 public:
  void reset(int n) {
    std::lock_guard lock(mu_);
    left_ = n;
  }
  void countDown() {
    std::lock_guard lock(mu_);
    if (--left_ == 0) cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return left_ <= 0; });
  }
  int left() {
    std::lock_guard lock(mu_);
    return left_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_ = 0;
};

constexpr const char* kJob = "scale-bench";

struct Shared {
  Latch joined, watching, agreed;
  std::atomic<bool> tearingDown{false};
  std::atomic<int> inFlight{0};
  std::atomic<int> errors{0};
  std::mutex errorMu;
  std::string firstError;
  void fail(const std::string& what) {
    if (errors.fetch_add(1) == 0) {
      std::lock_guard lock(errorMu);
      firstError = what;
    }
  }
};

class SimulatedMember : public grpc::ClientReadReactor<pb::Event> {
 public:
  SimulatedMember(pb::Rendezvous::Stub* stub, Shared* shared, int index)
      : stub_(stub), shared_(shared), index_(index) {}

  void join(int worldSize) {
    joinRequest_.set_job_id(kJob);
    joinRequest_.set_world_size(worldSize);
    joinRequest_.set_timeout_ms(600000);
    auto* process = joinRequest_.mutable_process();
    process->set_host("sim");
    process->set_pid(static_cast<std::uint32_t>(100000 + index_));
    process->set_instance_id("sim-" + std::to_string(index_));
    process->set_transport_address(std::string(16, 'a'));
    stub_->async()->Join(&joinContext_, &joinRequest_, &joinResponse_, [this](grpc::Status s) {
      if (!s.ok()) shared_->fail("Join: " + s.error_message());
      memberId_ = joinResponse_.member_id();
      epoch_ = joinResponse_.epoch();
      shared_->joined.countDown();
    });
  }

  void watch() {
    pb::WatchRequest request;
    request.mutable_caller()->set_job_id(kJob);
    request.mutable_caller()->set_member_id(memberId_);
    watchRequest_ = request;
    stub_->async()->Watch(&watchContext_, &watchRequest_, this);
    StartRead(&event_);
    StartCall();
  }

  // Simulates the process dying: its stream goes away.
  void die() {
    dead_ = true;
    watchContext_.TryCancel();
  }
  bool dead() const { return dead_; }

  bool finished() {
    std::lock_guard lock(mu_);
    return done_;
  }

 private:
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended; OnDone follows
    if (event_.kind() == pb::Event::SNAPSHOT) shared_->watching.countDown();
    if (event_.kind() == pb::Event::MEMBER_FAILED && !dead_ && event_.epoch() == epoch_ &&
        !shared_->tearingDown) {
      reconfigure();
    }
    StartRead(&event_);
  }

  void OnDone(const grpc::Status&) override {
    std::lock_guard lock(mu_);
    done_ = true;
  }

  void reconfigure() {
    shared_->inFlight.fetch_add(1);
    reconfigureContext_ = std::make_unique<grpc::ClientContext>();
    reconfigureRequest_.mutable_caller()->set_job_id(kJob);
    reconfigureRequest_.mutable_caller()->set_member_id(memberId_);
    reconfigureRequest_.mutable_caller()->set_epoch(epoch_);
    reconfigureRequest_.set_timeout_ms(60000);
    stub_->async()->Reconfigure(reconfigureContext_.get(), &reconfigureRequest_,
                                &reconfigureResponse_, [this](grpc::Status s) {
                                  if (!s.ok()) {
                                    shared_->fail("Reconfigure: " + s.error_message());
                                  } else {
                                    epoch_ = reconfigureResponse_.epoch();
                                    shared_->agreed.countDown();
                                  }
                                  shared_->inFlight.fetch_sub(1);
                                });
  }

  pb::Rendezvous::Stub* stub_;
  Shared* shared_;
  int index_;
  std::uint64_t memberId_ = 0;
  std::atomic<std::uint64_t> epoch_{0};
  std::atomic<bool> dead_{false};
  grpc::ClientContext joinContext_;
  pb::JoinRequest joinRequest_;
  pb::JoinResponse joinResponse_;
  grpc::ClientContext watchContext_;
  pb::WatchRequest watchRequest_;
  pb::Event event_;
  std::unique_ptr<grpc::ClientContext> reconfigureContext_;
  pb::ReconfigureRequest reconfigureRequest_;
  pb::ReconfigureResponse reconfigureResponse_;
  std::mutex mu_;
  bool done_ = false;
};

// A loopback port nobody listens on now (a replica over etcd needs a fixed one).
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("cannot find a free port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// A real ftcomm-rendezvous next to this program, on a free loopback port.
class ServerChild {
 public:
  explicit ServerChild(const std::string& store) {
    char pattern[] = "/tmp/ftcomm-bench-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").parent_path();
    const bool etcd = store.rfind("etcd://", 0) == 0;
    std::vector<std::string> argv{self + "/ftcomm-rendezvous",
                                  "--listen",
                                  etcd ? "127.0.0.1:" + std::to_string(freePort()) : "127.0.0.1:0",
                                  "--lease-ms",
                                  "600000",
                                  "--port-file",
                                  dir_ + "/port"};
    if (store == "journal") {
      argv.insert(argv.end(), {"--state-dir", dir_ + "/state"});
    } else if (etcd) {
      // A prefix of its own, so that no earlier run's leader or jobs are in the way.
      // A leader lease long enough that 2 loaded cores never let it lapse: this measures the
      // agreement round, not a takeover.
      argv.insert(argv.end(),
                  {"--store", store, "--store-prefix",
                   "/ftcomm-bench-" + std::to_string(::getpid()) + "/", "--leader-ttl-s", "10"});
    }
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = dir_ + "/server.log";
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT, 0644);
    int rc = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
    for (int i = 0; i < 3000 && !std::filesystem::exists(dir_ + "/port"); ++i) {
      std::this_thread::sleep_for(10ms);
    }
    std::ifstream in(dir_ + "/port");
    int port = 0;
    if (!(in >> port)) throw std::runtime_error("ftcomm-rendezvous did not start");
    address_ = "127.0.0.1:" + std::to_string(port);
    for (int i = 0; etcd && i < 3000; ++i) {
      std::ifstream logIn(log);
      const std::string text((std::istreambuf_iterator<char>(logIn)),
                             std::istreambuf_iterator<char>());
      if (text.find("leading") != std::string::npos) return;
      std::this_thread::sleep_for(10ms);
    }
    if (etcd) throw std::runtime_error("ftcomm-rendezvous did not take the lead in etcd");
  }
  ~ServerChild() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    std::filesystem::remove_all(dir_);
  }
  const std::string& address() const { return address_; }
  std::string log() const {
    std::ifstream in(dir_ + "/server.log");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

 private:
  std::string dir_;
  std::string address_;
  pid_t pid_ = -1;
};

constexpr const char* kUsage =
    "usage: ftcomm-bench-rendezvous [--members N] [--rounds R] [--channels C] "
    "[--rendezvous HOST:PORT]\n"
    "                               [--store memory|journal|etcd://HOST:PORT,...]\n";

int usage(const std::string& why) {
  std::cerr << "ftcomm-bench-rendezvous: " << why << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int members = 1024, rounds = 5, channels = 8;
  std::string address, store = "memory";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (ftcomm::bench::isHelpFlag(flag)) {
      std::cout << kUsage;
      return 0;
    }
    const char* value = i + 1 < argc ? argv[++i] : nullptr;
    if (flag == "--rendezvous") {
      if (value == nullptr) return usage("--rendezvous needs HOST:PORT");
      address = value;
      continue;
    }
    if (flag == "--store") {
      if (value == nullptr) return usage("--store needs memory, journal or etcd://HOST:PORT,...");
      store = value;
      if (store != "memory" && store != "journal" && store.rfind("etcd://", 0) != 0) {
        return usage("--store takes memory, journal or etcd://HOST:PORT,...");
      }
      continue;
    }
    int* into = flag == "--members"    ? &members
                : flag == "--rounds"   ? &rounds
                : flag == "--channels" ? &channels
                                       : nullptr;
    if (into == nullptr) return usage("unknown flag " + flag);
    const std::optional<long> number = ftcomm::bench::wholeNumber(value, 1, 1 << 20);
    if (!number) return usage(flag + " takes a whole number in 1..1048576");
    *into = static_cast<int>(*number);
  }
  if (members < 2 || rounds >= members)
    return usage("need at least 2 members, and fewer rounds than members");

  std::unique_ptr<ServerChild> server;
  if (address.empty()) {
    server = std::make_unique<ServerChild>(store);
    address = server->address();
  }
  std::vector<std::unique_ptr<pb::Rendezvous::Stub>> stubs;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // one TCP connection per channel
    args.SetMaxReceiveMessageSize(64 << 20);
    stubs.push_back(pb::Rendezvous::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args)));
  }

  Shared shared;
  std::vector<std::unique_ptr<SimulatedMember>> sims;
  for (int i = 0; i < members; ++i) {
    sims.push_back(std::make_unique<SimulatedMember>(stubs[i % channels].get(), &shared, i));
  }
  const auto joinStart = Clock::now();
  shared.joined.reset(members);
  for (auto& sim : sims) sim->join(members);
  if (!shared.joined.wait(120s) || shared.errors) {
    std::cerr << "join failed: " << shared.firstError << "\n";
    return 1;
  }
  const auto joinMs = std::chrono::duration<double, std::milli>(Clock::now() - joinStart).count();
  shared.watching.reset(members);
  for (auto& sim : sims) sim->watch();
  if (!shared.watching.wait(120s)) {
    std::cerr << "watch streams did not open\n";
    return 1;
  }

  std::vector<double> agreeMs;
  int alive = members;
  for (int round = 0; round < rounds; ++round) {
    // A different victim each round, spread over the ranks (rank 0 included).
    SimulatedMember& victim = *sims[(round * 7919) % members];
    if (victim.dead()) continue;
    shared.agreed.reset(alive - 1);
    const auto start = Clock::now();
    victim.die();
    if (!shared.agreed.wait(120s) || shared.errors) {
      std::cerr << "round " << round << " did not agree (" << shared.agreed.left()
                << " survivors missing): " << shared.firstError << "\n";
      if (server) std::cerr << "the server's log:\n" << server->log();
      return 1;
    }
    agreeMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    --alive;
  }
  std::vector<double> sorted = agreeMs;
  std::sort(sorted.begin(), sorted.end());
  std::cout << "members=" << members << " channels=" << channels
            << " store=" << (server ? store : "external") << " join_all_ms=" << joinMs << "\n";
  for (std::size_t r = 0; r < agreeMs.size(); ++r) {
    std::cout << "round " << r << ": " << members - static_cast<int>(r) - 1
              << " survivors hold the next epoch after " << agreeMs[r] << " ms\n";
  }
  std::cout << "failure-to-epoch median_ms=" << sorted[sorted.size() / 2]
            << " max_ms=" << sorted.back() << "\n";
  shared.tearingDown = true;
  for (auto& sim : sims) {
    if (!sim->dead()) sim->die();
  }
  for (int i = 0; i < 1000; ++i) {
    if (shared.inFlight == 0 &&
        std::all_of(sims.begin(), sims.end(), [](auto& s) { return s->finished(); })) {
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}
