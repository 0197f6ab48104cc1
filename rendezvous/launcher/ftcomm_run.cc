// ftcomm-run: runs an ftcomm job under OpenMPI's mpirun.
//
//   ftcomm-run -np N [--nodes K [--shape SPEC] | --hostfile FILE] [--rendezvous HOST:PORT | --tls]
//              [--launch mpirun|agents [--spares S] [--rsh CMD]] [--job NAME]
//              [--fault SPEC]... -- PROGRAM ARGS...
//
// Without --rendezvous it starts ftcomm-rendezvous (beside this program) on loopback and stops
// it at the end; with --tls that server speaks mutual TLS, with a throwaway CA and certificates
// made by openssl for this run, and the ranks get FTCOMM_RENDEZVOUS_CA/_CERT/_KEY. mpirun gets
// --enable-recovery on one host (OpenMPI 4.1 otherwise tears the whole job down when one rank
// dies), --oversubscribe, --allow-run-as-root when run as root, and the environment:
// FTCOMM_RENDEZVOUS, FTCOMM_JOB, FTCOMM_FAULT (the --fault specs joined by ';'), and every
// FTCOMM_* and UCX_* variable already set. Each rank runs under this program's --rank-wrapper,
// which reports how the rank ended and gives mpirun 0 for a death or an expulsion. SIGINT and
// SIGTERM are forwarded to mpirun.
//
// --nodes K spreads the ranks over K simulated hosts (sim_hosts.h): mpirun and the rendezvous
// run in a head namespace, mpirun starts one daemon per host through this program's
// --host-agent (host_agent.h), the ranks get FTCOMM_SOCKET_IFNAME=data0, and every namespace is
// deleted at the end. Ranks may cut their host's data link (link_faults.h). A rank's error exit
// ends the job there: OpenMPI 4.1's recovery mode hangs across hosts.
//
// --hostfile FILE runs on real hosts (mpirun's hostfile): the rendezvous is --rendezvous's, or
// one this starts listening on FTCOMM_ADVERTISE_ADDR, this host's address on the data network.
// As across simulated hosts, a rank's error exit ends the job.
//
// --launch agents starts one agent per host instead of mpirun (agent_launch.h): losing a whole
// host, agent included, ends only that host's ranks, and --spares S keeps the last S hosts (of
// the hostfile, or S more simulated ones) to restart a lost host's ranks on as replacements. The
// agents are reached through --rsh (default ssh) with --hostfile, --host-agent with --nodes, and
// /bin/sh on this host otherwise.
//
// Exit status: 77 when --nodes cannot make its namespaces here (tests skip on it); 0 when every
// rank exited 0, died from a signal, or was expelled (exit code 75, FTCOMM_EXIT_ON_EXPEL, which
// this sets), or with agents was lost with its host: failures the job survived; otherwise the
// first non-zero exit code of a rank, or mpirun's own when it ended the job itself, or with
// agents 128+N when signal N stopped the job; 1 when no rank ran at all or a host's agent could
// not start; 2 for bad usage (--help prints the usage and exits 0).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "rendezvous/launcher/agent_launch.h"
#include "rendezvous/launcher/embedded_server.h"
#include "rendezvous/launcher/host_agent.h"
#include "rendezvous/launcher/link_faults.h"
#include "rendezvous/launcher/mpirun_launch.h"
#include "rendezvous/launcher/process.h"
#include "rendezvous/launcher/rank_agent.h"
#include "rendezvous/launcher/rank_wrapper.h"
#include "rendezvous/launcher/sim_hosts.h"


namespace {

namespace fs = std::filesystem;
using namespace ftcomm::launcher;

constexpr const char* kUsage =
    "usage: ftcomm-run -np N [--nodes K [--shape SPEC] | --hostfile FILE] "
    "[--rendezvous HOST:PORT | --tls] "
    "[--launch mpirun|agents [--spares S] [--rsh CMD]] [--job NAME] [--fault SPEC]... -- "
    "PROGRAM ARGS...\n"
    "  -np N         ranks to start (1..4096)\n"
    "  --nodes K     spread them over K simulated hosts (network namespaces; root), N/K each\n"
    "  --shape SPEC  shape each simulated host's data link with tc tbf, e.g. \"rate 4gbit\"\n"
    "  --hostfile F  run on the real hosts of mpirun's hostfile F; the rendezvous is\n"
    "                --rendezvous's, or one started on FTCOMM_ADVERTISE_ADDR\n"
    "  --rendezvous  an ftcomm-rendezvous server to use (default: start one on loopback)\n"
    "  --tls         the server it starts speaks mutual TLS (a throwaway CA, made with openssl)\n"
    "  --job NAME    the job's name at the server (default: ftcomm-PID)\n"
    "  --fault SPEC  inject a failure: rank=R,op=OP,seq=S,action=kill|stop|hang|delay:MS|"
    "drop-conn|exit:CODE|\n"
    "                cut-link[:MS]|silent|kill-host|lose-host|cut-rendezvous:MS (simulated\n"
    "                hosts, --nodes)\n"
    "  --lease-ms L  the lease of the rendezvous it starts (default: the server's, 2000)\n"
    "  --launch M    mpirun (default), or agents: one ftcomm-run agent per host, so that losing\n"
    "                a whole host ends only its ranks\n"
    "  --spares S    with agents: the last S hosts (--nodes: S more) stand by to take a lost\n"
    "                host's ranks as replacements\n"
    "  --rsh CMD     with agents and --hostfile: how to reach a host (default \"ssh -o\n"
    "                BatchMode=yes -o ServerAliveInterval=5 -o ServerAliveCountMax=3\")\n";

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "ftcomm-run: " << why << "\n" << kUsage;
  std::exit(2);
}

struct Options {
  int ranks = 0;
  int nodes = 0;
  std::string shape;
  std::string hostfile;
  std::string advertise;  // with --hostfile: FTCOMM_ADVERTISE_ADDR, where the server listens
  int leaseMs = 0;
  std::string rendezvous;
  bool tls = false;
  std::string job;
  std::vector<std::string> faults;
  std::vector<std::string> program;
  bool agents = false;  // --launch agents
  int spares = 0;
  std::string rsh = "ssh -o BatchMode=yes -o ServerAliveInterval=5 -o ServerAliveCountMax=3";
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
    // The flag's value as a whole number in lo..hi; `what` names it in the complaint.
    auto number = [&](long lo, long hi, const std::string& what) {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < lo || n > hi) {
        usage(flag + " wants " + what + " in " + std::to_string(lo) + ".." + std::to_string(hi));
      }
      return static_cast<int>(n);
    };
    if (flag == "-np" || flag == "-n") {
      o.ranks = number(1, 4096, "a number of ranks");
    } else if (flag == "--nodes") {
      o.nodes = number(1, 200, "a number of hosts");
    } else if (flag == "--lease-ms") {
      o.leaseMs = number(10, 600000, "milliseconds");
    } else if (flag == "--hostfile") {
      o.hostfile = value();
    } else if (flag == "--shape") {
      o.shape = value();
    } else if (flag == "--rendezvous") {
      o.rendezvous = value();
    } else if (flag == "--tls") {
      o.tls = true;
    } else if (flag == "--job") {
      o.job = value();
    } else if (flag == "--fault") {
      o.faults.push_back(value());
    } else if (flag == "--launch") {
      const std::string mode = value();
      if (mode != "mpirun" && mode != "agents") usage("--launch wants mpirun or agents");
      o.agents = mode == "agents";
    } else if (flag == "--spares") {
      o.spares = number(1, 100, "a number of hosts");
    } else if (flag == "--rsh") {
      o.rsh = value();
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
  if (!o.shape.empty() && o.nodes == 0) usage("--shape shapes simulated hosts' links: add --nodes");
  if (o.nodes > 0 && o.ranks % o.nodes != 0) {
    usage("--nodes " + std::to_string(o.nodes) + " does not divide -np " + std::to_string(o.ranks));
  }
  if (!o.hostfile.empty()) {
    if (o.nodes > 0) usage("--hostfile names real hosts, --nodes simulated ones: pick one");
    const char* advertise = std::getenv("FTCOMM_ADVERTISE_ADDR");
    o.advertise = advertise != nullptr ? advertise : "";
    if (o.rendezvous.empty() && o.advertise.empty()) {
      usage(
          "--hostfile: the other hosts must reach the rendezvous: give --rendezvous HOST:PORT, "
          "or set FTCOMM_ADVERTISE_ADDR to this host's address on the data network");
    }
    if (!fs::exists(o.hostfile)) usage("--hostfile " + o.hostfile + ": no such file");
    if (o.advertise.find_first_not_of("0123456789abcdefABCDEF.:") != std::string::npos) {
      usage("FTCOMM_ADVERTISE_ADDR='" + o.advertise + "' is not an IP address");
    }
  }
  if (o.spares > 0 && !o.agents) {
    usage("--spares needs --launch agents: mpirun 4.1 cannot add processes to a running job");
  }
  if (o.spares > 0 && o.nodes == 0 && o.hostfile.empty()) {
    usage("--spares are hosts: add --nodes or --hostfile");
  }
  if (o.leaseMs > 0 && !o.rendezvous.empty()) usage("--lease-ms sets the server ftcomm-run starts");
  if (o.nodes > 0 && !o.rendezvous.empty()) {
    usage("--nodes runs its own rendezvous in the simulated network; drop --rendezvous");
  }
  return o;
}

// Where the ranks write flight-recorder dumps: FTCOMM_FR_DIR, or the recorder's default
// "ftcomm-fr" in the working directory; absolute, since each host sees its own folder there.
fs::path dumpFolder() {
  const char* set = std::getenv("FTCOMM_FR_DIR");
  return fs::absolute(set != nullptr && *set != '\0' ? fs::path(set) : fs::path("ftcomm-fr"));
}

// Copies every simulated host's dumps into `folder`, as one folder of the whole job; a folder
// that this run made and no host wrote to is removed.
void gatherDumps(const fs::path& work, int hosts, const fs::path& folder, bool made) {
  std::error_code ec;
  for (int h = 0; h < hosts; ++h) {
    fs::copy(hostDumpFolder(work.string(), h), folder,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  }
  if (made && fs::is_empty(folder, ec)) fs::remove(folder, ec);
}

// The hosts of an mpirun-style hostfile ("node1 slots=8", # comments), each with its slots
// (0 where the line gives none); "" with the hosts, else what is wrong and where.
std::string readHostfile(const std::string& path, std::vector<std::pair<std::string, int>>* hosts) {
  std::ifstream in(path);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string name, word;
    if (!(words >> name)) continue;
    int slots = 0;
    while (words >> word) {
      if (word.rfind("slots=", 0) != 0) continue;  // max_slots= and the like: mpirun's
      char* end = nullptr;
      const long n = std::strtol(word.c_str() + 6, &end, 10);
      if (*end != '\0' || n < 1 || n > 4096) {
        return path + ":" + std::to_string(number) + ": '" + word + "' is not slots=1..4096";
      }
      slots = static_cast<int>(n);
    }
    hosts->push_back({name, slots});
  }
  return "";
}

volatile sig_atomic_t stopSignal = 0;

// Runs the job with one agent per host (agent_launch.h); the job's exit status.
int launchWithAgents(const Options& o, SimulatedHosts& hosts, const fs::path& work,
                     const fs::path& self) {
  std::vector<AgentHost> targets;
  if (o.nodes > 0) {
    for (int h = 0; h < o.nodes + o.spares; ++h) {
      targets.push_back({std::to_string(h),
                         {self.string(), "--host-agent", SimulatedHosts::ownPrefix(), work.string(),
                          SimulatedHosts::controlAddress(h)}});
    }
  } else if (!o.hostfile.empty()) {
    std::vector<std::string> rsh;
    std::istringstream words(o.rsh);
    for (std::string w; words >> w;) rsh.push_back(w);
    std::vector<std::pair<std::string, int>> listed;
    if (const std::string why = readHostfile(o.hostfile, &listed); !why.empty()) {
      std::cerr << "ftcomm-run: --hostfile " << why << std::endl;
      return 2;
    }
    for (const auto& [name, slots] : listed) {
      targets.push_back({name, rsh, slots});
      targets.back().shell.push_back(name);
    }
  } else {
    targets.push_back({"localhost", {"/bin/sh", "-c"}});
  }
  const int used = static_cast<int>(targets.size()) - o.spares;
  if (used < 1) {
    std::cerr << "ftcomm-run: no host to start ranks on: " << targets.size() << " in " << o.hostfile
              << ", " << o.spares << " of them spare" << std::endl;
    return 2;
  }
  // The hosts' slots, filled in order, as mpirun places by slot; without slots on every host
  // in use, an even spread.
  int slots = 0;
  bool everySlotted = true;
  for (int h = 0; h < used; ++h) {
    slots += targets[h].ranks;
    everySlotted = everySlotted && targets[h].ranks > 0;
  }
  if (everySlotted && !o.hostfile.empty()) {
    if (slots < o.ranks) {
      std::cerr << "ftcomm-run: -np " << o.ranks << " is more than the " << slots
                << " slots of the hosts in use in " << o.hostfile << std::endl;
      return 2;
    }
    int left = o.ranks;
    for (int h = 0; h < used; ++h) {
      targets[h].ranks = std::min(targets[h].ranks, left);
      left -= targets[h].ranks;
    }
  } else if (o.ranks % used != 0) {
    std::cerr << "ftcomm-run: --launch agents spreads -np " << o.ranks << " evenly over the "
              << used << " hosts in use, as they give no slots: it must be a multiple of them"
              << std::endl;
    return 2;
  } else {
    for (int h = 0; h < used; ++h) targets[h].ranks = o.ranks / used;
  }
  for (int h = used; h < static_cast<int>(targets.size()); ++h) targets[h].ranks = 0;
  AgentLaunch launch(targets, o.spares, self.string(), o.program);
  // Real hosts share no filesystem: their agents send the dumps here.
  if (!o.hostfile.empty()) {
    const fs::path folder = dumpFolder();
    std::error_code ec;
    fs::create_directories(folder, ec);
    launch.gatherDumpsInto(folder.string());
  }
  struct sigaction action {};
  action.sa_handler = [](int sig) { stopSignal = sig; };
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  std::optional<LinkFaults> linkFaults;
  if (o.nodes > 0) linkFaults.emplace(hosts, (work / "control").string(), o.ranks / o.nodes);
  (void)launch.start();  // on failure it has stopped the agents it started; they end below
  while (launch.step(5)) {
    if (linkFaults) linkFaults->poll();
    if (stopSignal != 0) launch.stop(std::string("signal ") + ::strsignal(stopSignal));
  }
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  std::cerr << "ftcomm-run: agents ended; " << launch.summary() << std::endl;
  // An interrupted job did not finish, whatever its ranks said.
  const int result = launch.result();
  return result == 0 && stopSignal != 0 ? 128 + stopSignal : result;
}

// The exit code that says simulated hosts cannot be made here (tests skip on it).
constexpr int kNoSimulatedHosts = 77;

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "--rank-wrapper" && std::string(argv[3]) == "--") {
    return rankWrapper(argv[2], std::vector<std::string>(argv + 4, argv + argc));
  }
  if (argc >= 2 && std::string(argv[1]) == "--agent") {
    return runRankAgent(std::vector<std::string>(argv + 2, argv + argc));
  }
  if (argc >= 6 && std::string(argv[1]) == "--host-agent") {
    return runHostAgent(argv[2], argv[3], argv[4], std::vector<std::string>(argv + 5, argv + argc));
  }
  const Options o = parse(argc, argv);
  const fs::path self = fs::canonical("/proc/self/exe");
  char pattern[] = "/tmp/ftcomm-run-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    std::cerr << "ftcomm-run: cannot make a temporary directory\n";
    return 1;
  }
  const fs::path work = pattern;
  std::error_code ec;
  SimulatedHosts hosts;
  fs::path dumps;
  bool madeDumps = false;
  if (o.nodes > 0) {
    SimulatedHosts::sweepLeftovers();
    const std::string why =
        hosts.create(o.nodes + o.spares, o.shape, (work / "namespaces.log").string());
    if (!why.empty()) {
      std::cerr << "ftcomm-run: --nodes: no simulated hosts: " << why << std::endl;
      std::ifstream log(work / "namespaces.log");
      std::cerr << log.rdbuf();
      fs::remove_all(work, ec);
      return hosts.shapeRefused() ? 2 : kNoSimulatedHosts;
    }
    std::ofstream(work / "hostfile") << hosts.hostfile(o.ranks / o.nodes);
    // Each host mounts a folder of its own there (host_agent.h); gatherDumps merges them.
    dumps = dumpFolder();
    madeDumps = fs::create_directories(dumps, ec);
    ::setenv("FTCOMM_FR_DIR", dumps.c_str(), 1);
    // Where ranks ask for link faults (link_faults.h).
    fs::create_directories(work / "control", ec);
    ::setenv("FTCOMM_RUN_CONTROL", (work / "control").c_str(), 1);
    // UCX and the rendezvous use the data network; mpirun's daemons the control network.
    ::setenv("FTCOMM_SOCKET_IFNAME", SimulatedHosts::kDataInterface, 0);
  }
  pid_t server = -1;
  std::string address = o.rendezvous;
  if (o.tls) {
    if (!makeCertificates(work, o.advertise)) {
      std::cerr << "ftcomm-run: --tls: openssl could not make the certificates:\n";
      std::ifstream log(work / "openssl.log");
      std::cerr << log.rdbuf();
      fs::remove_all(work, ec);
      return 1;
    }
    ::setenv("FTCOMM_RENDEZVOUS_CA", (work / "ca.pem").c_str(), 1);
    ::setenv("FTCOMM_RENDEZVOUS_CERT", (work / "member.pem").c_str(), 1);
    ::setenv("FTCOMM_RENDEZVOUS_KEY", (work / "member.key").c_str(), 1);
  }
  if (address.empty()) {
    if (o.nodes > 0) {
      address = startRendezvous(self, work, o.tls, o.leaseMs, SimulatedHosts::dataAddress(-1),
                                hosts.headNamespace(), &server);
    } else {
      const std::string host = o.hostfile.empty() ? "127.0.0.1" : o.advertise;
      address = startRendezvous(self, work, o.tls, o.leaseMs, host, "", &server);
    }
    if (address.empty()) {
      std::cerr << "ftcomm-run: the rendezvous server (ftcomm-rendezvous) did not start\n";
      fs::remove_all(work, ec);
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

  std::cerr << "ftcomm-run: " << o.ranks << " ranks of job " << job
            << (o.nodes > 0
                    ? " on " + std::to_string(o.nodes) + " simulated hosts" +
                          (o.spares > 0 ? " and " + std::to_string(o.spares) + " spare" : "") +
                          (o.shape.empty() ? "" : " (data links: tbf " + o.shape + ")")
                    : "")
            << (o.agents ? ", one agent per host" : ", under mpirun") << ", rendezvous " << address
            << (faults.empty() ? "" : ", faults " + faults) << std::endl;
  const int result =
      o.agents
          ? launchWithAgents(o, hosts, work, self)
          : launchWithMpirun(
                {o.ranks, o.nodes, o.hostfile, o.program, work.string(), self.string()}, hosts);
  if (server > 0) {
    ::kill(server, SIGTERM);
    waitFor(server);
  }
  hosts.destroy();
  if (o.nodes > 0) gatherDumps(work, o.nodes + o.spares, dumps, madeDumps);
  fs::remove_all(work, ec);
  return result;
}
