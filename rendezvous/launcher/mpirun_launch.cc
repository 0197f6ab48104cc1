#include "rendezvous/launcher/mpirun_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "rendezvous/launcher/link_faults.h"
#include "rendezvous/launcher/process.h"
#include "rendezvous/launcher/rank_wrapper.h"

extern char** environ;

namespace ftcomm::launcher {

namespace fs = std::filesystem;

int launchWithMpirun(const MpirunLaunch& o, SimulatedHosts& hosts) {
  const fs::path work = o.work;
  std::vector<std::string> args;
  if (o.nodes > 0) args = {"ip", "netns", "exec", hosts.headNamespace()};
  args.push_back("mpirun");
  if (::geteuid() == 0) args.push_back("--allow-run-as-root");
  // Across simulated hosts, OpenMPI 4.1's recovery mode hangs mpirun once a rank exits
  // non-zero (its notification to the job's processes fails between daemons); without it, such
  // an exit aborts the job, which is right for an error, and the rank wrappers hand mpirun 0
  // for every ending the job survives (a signal, an expulsion).
  args.push_back("--oversubscribe");
  const bool severalHosts = o.nodes > 0 || !o.hostfile.empty();
  if (!severalHosts) args.push_back("--enable-recovery");
  args.push_back("-np");
  args.push_back(std::to_string(o.ranks));
  if (!o.hostfile.empty()) {
    args.push_back("--hostfile");
    args.push_back(o.hostfile);
  }
  // Across simulated hosts every daemon sees this whole machine and would bind its first rank
  // to core 0, so that the hosts' ranks all shared one core while the others idled; each host
  // runs on its own share of the cores instead (host_agent.cc), its ranks unbound within it.
  if (o.nodes > 0) {
    const std::string agent =
        o.self + " --host-agent " + SimulatedHosts::ownPrefix() + " " + work.string();
    for (const std::string& a :
         {std::string("--hostfile"), (work / "hostfile").string(), std::string("--mca"),
          std::string("plm_rsh_agent"), agent, std::string("--mca"),
          std::string("plm_rsh_no_tree_spawn"), std::string("1"), std::string("--mca"),
          std::string("oob_tcp_if_include"), std::string(SimulatedHosts::kControlSubnet),
          std::string("--mca"), std::string("btl_tcp_if_include"),
          std::string(SimulatedHosts::kDataSubnet), std::string("--bind-to"),
          std::string("none")}) {
      args.push_back(a);
    }
  }
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("FTCOMM_", 0) == 0 || name.rfind("UCX_", 0) == 0) {
      args.push_back("-x");
      args.push_back(name);
    }
  }
  for (const std::string& a :
       {o.self, std::string("--rank-wrapper"), work.string(), std::string("--")}) {
    args.push_back(a);
  }
  args.insert(args.end(), o.program.begin(), o.program.end());
  const pid_t mpirun = spawn(args, true);
  int result = 1;
  if (mpirun < 0) {
    std::cerr << "ftcomm-run: cannot start mpirun (is openmpi-bin installed?)\n";
  } else {
    forwardSignals(mpirun);
    int status = 0;
    if (o.nodes > 0) {
      LinkFaults linkFaults(hosts, (work / "control").string(), o.ranks / o.nodes);
      for (;;) {
        const pid_t ended = ::waitpid(mpirun, &status, WNOHANG);
        if (ended == mpirun || (ended < 0 && errno != EINTR)) break;
        linkFaults.poll();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    } else {
      status = waitFor(mpirun);
    }
    stopForwardingSignals();
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
    // The rank wrappers hand mpirun 0 for every ending the job survives, so mpirun's own failure
    // means it ended the job itself: it lost a host's daemon, or was interrupted.
    if (result == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      std::cerr << "ftcomm-run: mpirun ended the job itself (losing a host's daemon does that; "
                   "--launch agents survives it)"
                << std::endl;
      result = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
  }
  return result;
}

}  // namespace ftcomm::launcher
