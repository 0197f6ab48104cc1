// ftcomm-run: runs an ftcomm job under OpenMPI's mpirun.
//
//   ftcomm-run -np N [--rendezvous HOST:PORT | --tls] [--job NAME] [--fault SPEC]... -- PROGRAM
//   ARGS...
//
// Without --rendezvous it starts ftcomm-rendezvous (beside this program) on loopback and stops
// it at the end; with --tls that server speaks mutual TLS, with a throwaway CA and certificates
// made by openssl for this run, and the ranks get FTCOMM_RENDEZVOUS_CA/_CERT/_KEY. mpirun gets
// --enable-recovery (OpenMPI 4.1 otherwise tears the whole job down when one rank dies),
// --oversubscribe, --allow-run-as-root when run as root, and the environment: FTCOMM_RENDEZVOUS,
// FTCOMM_JOB, FTCOMM_FAULT (the --fault specs joined by
// ';'), and every FTCOMM_* and UCX_* variable already set. Each rank runs under this program's
// --rank-wrapper, which reports how the rank ended. SIGINT and SIGTERM are forwarded to
// mpirun.
//
// Exit status: 0 when every rank exited 0, died from a signal, or was expelled (exit code 75,
// FTCOMM_EXIT_ON_EXPEL, which this sets): failures the job survived;
// otherwise the first non-zero exit code of a rank; 1 when no rank ran at all; 2 for bad usage
// (--help prints the usage and exits 0).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: ftcomm-run -np N [--rendezvous HOST:PORT | --tls] [--job NAME] [--fault SPEC]... "
    "-- PROGRAM ARGS...\n"
    "  -np N         ranks to start (1..4096)\n"
    "  --rendezvous  an ftcomm-rendezvous server to use (default: start one on loopback)\n"
    "  --tls         the server it starts speaks mutual TLS (a throwaway CA, made with openssl)\n"
    "  --job NAME    the job's name at the server (default: ftcomm-PID)\n"
    "  --fault SPEC  inject a failure: rank=R,op=OP,seq=S,action=kill|stop|hang|delay:MS|"
    "drop-conn|exit:CODE\n";

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "ftcomm-run: " << why << "\n" << kUsage;
  std::exit(2);
}

struct Options {
  int ranks = 0;
  std::string rendezvous;
  bool tls = false;
  std::string job;
  std::vector<std::string> faults;
  std::vector<std::string> program;
};

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--") {
      ++i;
      break;
    }
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "-np" || flag == "-n") {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 4096) usage("-np wants a number of ranks in 1..4096");
      o.ranks = static_cast<int>(n);
    } else if (flag == "--rendezvous") {
      o.rendezvous = value();
    } else if (flag == "--tls") {
      o.tls = true;
    } else if (flag == "--job") {
      o.job = value();
    } else if (flag == "--fault") {
      o.faults.push_back(value());
    } else {
      usage("unknown flag " + flag);
    }
  }
  for (; i < argc; ++i) o.program.push_back(argv[i]);
  if (o.ranks == 0) usage("-np is required");
  if (o.program.empty()) usage("no program: put it after --");
  if (o.tls && !o.rendezvous.empty()) {
    usage(
        "--tls applies to the server ftcomm-run starts; for a server of your own, set "
        "FTCOMM_RENDEZVOUS_CA (and _CERT, _KEY for mutual TLS)");
  }
  for (const auto& f : o.faults) {
    if (f.find(';') != std::string::npos) usage("one spec per --fault: " + f);
  }
  return o;
}

pid_t spawn(const std::vector<std::string>& args, bool searchPath) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = searchPath ? ::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ)
                            : ::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  return rc == 0 ? pid : -1;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  return "ended oddly (status " + std::to_string(status) + ")";
}

// The exit code of a rank that was expelled (FTCOMM_EXIT_ON_EXPEL): the job went on without it.
constexpr int kExpelled = 75;

volatile sig_atomic_t forwardTo = 0;
void forward(int sig) {
  if (forwardTo > 0) ::kill(static_cast<pid_t>(forwardTo), sig);
}

void forwardSignals(pid_t child) {
  forwardTo = child;
  struct sigaction action {};
  action.sa_handler = forward;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

int waitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// One rank: runs the program, tells how it ended, and ends the same way.
int rankWrapper(const std::string& statusDir, const std::vector<std::string>& program) {
  const char* rankText = std::getenv("OMPI_COMM_WORLD_RANK");
  const std::string rank = rankText != nullptr ? rankText : "?";
  const pid_t child = spawn(program, true);
  if (child < 0) {
    std::cerr << "ftcomm-run: rank " << rank << ": cannot start " << program[0] << std::endl;
    std::ofstream(statusDir + "/rank." + rank) << "exit 127\n";
    return 127;
  }
  forwardSignals(child);
  const int status = waitFor(child);
  std::ofstream(statusDir + "/rank." + rank)
      << (WIFEXITED(status)
              ? "exit " + std::to_string(WEXITSTATUS(status))
              : "signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0))
      << "\n";
  std::cerr << "ftcomm-run: rank " << rank << " " << describe(status) << std::endl;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 0;  // a death the job may have survived
}

// A throwaway CA in `work`, and certificates it signs: the server's (for 127.0.0.1 and
// localhost) and one for the ranks (mutual TLS). openssl's output goes to work/openssl.log.
bool makeCertificates(const fs::path& work) {
  const std::string w = work.string();
  const std::string script =
      "cd '" + w +
      "' && exec >openssl.log 2>&1 && "
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ftcomm-run-CA "
      "-keyout ca.key -out ca.pem && "
      "openssl req -newkey rsa:2048 -nodes -subj /CN=ftcomm-rendezvous "
      "-keyout server.key -out server.csr && "
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth\\n' "
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

// Starts ftcomm-rendezvous on loopback (with TLS: the certificates of makeCertificates); its
// address, or "" on failure.
std::string startRendezvous(const fs::path& self, const fs::path& work, bool tls, pid_t* server) {
  const fs::path binary = self.parent_path() / "ftcomm-rendezvous";
  const fs::path portFile = work / "port";
  std::vector<std::string> args = {binary.string(), "--listen", "127.0.0.1:0", "--port-file",
                                   portFile.string()};
  if (tls) {
    for (const auto& [flag, file] :
         {std::pair{"--tls-cert", "server.pem"}, std::pair{"--tls-key", "server.key"},
          std::pair{"--tls-client-ca", "ca.pem"}}) {
      args.push_back(flag);
      args.push_back((work / file).string());
    }
  }
  *server = spawn(args, false);
  if (*server < 0) return "";
  for (int i = 0; i < 1000; ++i) {
    std::ifstream in(portFile);
    std::string port;
    if (std::getline(in, port) && !port.empty()) return "127.0.0.1:" + port;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "--rank-wrapper" && std::string(argv[3]) == "--") {
    return rankWrapper(argv[2], std::vector<std::string>(argv + 4, argv + argc));
  }
  const Options o = parse(argc, argv);
  const fs::path self = fs::canonical("/proc/self/exe");
  char pattern[] = "/tmp/ftcomm-run-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    std::cerr << "ftcomm-run: cannot make a temporary directory\n";
    return 1;
  }
  const fs::path work = pattern;
  pid_t server = -1;
  std::string address = o.rendezvous;
  if (o.tls) {
    if (!makeCertificates(work)) {
      std::cerr << "ftcomm-run: --tls: openssl could not make the certificates:\n";
      std::ifstream log(work / "openssl.log");
      std::cerr << log.rdbuf();
      fs::remove_all(work);
      return 1;
    }
    ::setenv("FTCOMM_RENDEZVOUS_CA", (work / "ca.pem").c_str(), 1);
    ::setenv("FTCOMM_RENDEZVOUS_CERT", (work / "member.pem").c_str(), 1);
    ::setenv("FTCOMM_RENDEZVOUS_KEY", (work / "member.key").c_str(), 1);
  }
  if (address.empty()) {
    address = startRendezvous(self, work, o.tls, &server);
    if (address.empty()) {
      std::cerr << "ftcomm-run: the rendezvous server (ftcomm-rendezvous) did not start\n";
      return 1;
    }
  }
  const std::string job = o.job.empty() ? "ftcomm-" + std::to_string(::getpid()) : o.job;
  std::string faults;
  for (const auto& f : o.faults) faults += (faults.empty() ? "" : ";") + f;
  ::setenv("FTCOMM_RENDEZVOUS", address.c_str(), 1);
  ::setenv("FTCOMM_JOB", job.c_str(), 1);
  if (!faults.empty()) ::setenv("FTCOMM_FAULT", faults.c_str(), 1);
  // A rank the others declared failed ends itself (code 75) instead of lingering, hung or not.
  ::setenv("FTCOMM_EXIT_ON_EXPEL", "1", 0);

  std::vector<std::string> args = {"mpirun"};
  if (::geteuid() == 0) args.push_back("--allow-run-as-root");
  for (const char* a : {"--oversubscribe", "--enable-recovery", "-np"}) args.push_back(a);
  args.push_back(std::to_string(o.ranks));
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("FTCOMM_", 0) == 0 || name.rfind("UCX_", 0) == 0) {
      args.push_back("-x");
      args.push_back(name);
    }
  }
  for (const std::string& a :
       {self.string(), std::string("--rank-wrapper"), work.string(), std::string("--")}) {
    args.push_back(a);
  }
  args.insert(args.end(), o.program.begin(), o.program.end());
  std::cerr << "ftcomm-run: " << o.ranks << " ranks of job " << job << ", rendezvous " << address
            << (faults.empty() ? "" : ", faults " + faults) << std::endl;
  const pid_t mpirun = spawn(args, true);
  int result = 1;
  if (mpirun < 0) {
    std::cerr << "ftcomm-run: cannot start mpirun (is openmpi-bin installed?)\n";
  } else {
    forwardSignals(mpirun);
    const int status = waitFor(mpirun);
    forwardTo = 0;
    int ran = 0, firstBad = 0;
    std::string summary;
    for (int r = 0; r < o.ranks; ++r) {
      std::ifstream in(work / ("rank." + std::to_string(r)));
      std::string how;
      int value = 0;
      if (!(in >> how >> value)) {
        summary += " " + std::to_string(r) + ":?";
        continue;
      }
      ++ran;
      summary += " " + std::to_string(r) + ":" + (how == "exit" ? "exit " : "signal ") +
                 std::to_string(value);
      if (how == "exit" && value != 0 && value != kExpelled && firstBad == 0) firstBad = value;
    }
    std::cerr << "ftcomm-run: mpirun " << describe(status) << "; ranks" << summary << std::endl;
    result = ran == 0 ? 1 : firstBad;
  }
  if (server > 0) {
    ::kill(server, SIGTERM);
    waitFor(server);
  }
  std::error_code ec;
  fs::remove_all(work, ec);
  return result;
}
