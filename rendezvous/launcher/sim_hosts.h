// Simulated hosts for `ftcomm-run --nodes K`: each host is a network namespace of its own with
// two links, as real clusters have: a control network (10.10.0.0/24) for mpirun's daemons and a
// data network (10.20.0.0/24) for UCX and the rendezvous. The bridges live in a namespace of
// their own, and mpirun and the rendezvous run in a "head" namespace, so that every address the
// job uses exists only inside namespaces made here. The ranks of one host also share UTS, IPC,
// PID and mount namespaces with a private /dev/shm (see host_agent.h), so that no same-host
// shortcut crosses between simulated hosts.
//
// Every name carries the prefix "ftc-PID-" of the ftcomm-run that made it; a start sweeps the
// leftovers of runs whose process is gone.
#pragma once

#include <string>
#include <vector>

namespace ftcomm::launcher {

class SimulatedHosts {
 public:
  // The prefix of this process's names, "ftc-PID".
  static std::string ownPrefix();

  // Deletes the namespaces (and kills the processes in them) of ftcomm-run processes that are
  // gone.
  static void sweepLeftovers();

  // Makes `hosts` hosts, with `shape` (tbf parameters, e.g. "rate 4gbit"; empty: unshaped) on
  // both ends of each data link; commands' output goes to `log`. "" when done, otherwise why
  // not (the namespaces made so far are deleted).
  std::string create(int hosts, const std::string& shape, const std::string& log);

  // After a failed create(): whether tc refused the shape (bad input rather than a machine
  // without namespaces).
  bool shapeRefused() const { return shapeRefused_; }

  // Takes host `host`'s data link down or up at the bridge; false if ip failed.
  bool setDataLink(int host, bool up);
  // Kills (SIGKILL) every rank of host `host`: the programs ftcomm-run's rank wrappers run
  // there, not mpirun's daemon. How many.
  int killRanks(int host);
  // Kills (SIGKILL) every process of host `host`, its launcher daemon or agent included: the
  // whole host is lost. How many.
  int killHost(int host);

  // Kills every process in the namespaces and deletes them; idempotent.
  void destroy();
  ~SimulatedHosts() { destroy(); }

  int hosts() const { return hosts_; }
  std::string headNamespace() const { return prefix_ + "-head"; }
  std::string bridgeNamespace() const { return prefix_ + "-net"; }
  std::string hostNamespace(int host) const;
  static std::string controlAddress(int host);  // host -1 is the head
  static std::string dataAddress(int host);
  static constexpr const char* kControlSubnet = "10.10.0.0/24";
  static constexpr const char* kDataSubnet = "10.20.0.0/24";
  static constexpr const char* kDataInterface = "data0";
  // The bridge-side end of a host's data link, in bridgeNamespace().
  static std::string bridgeDataPort(int host);

  // The host whose control address is `address`, or -1.
  static int hostOfControlAddress(const std::string& address);
  // How many hosts the run whose names start with `prefix` made (its host namespaces).
  static int hostsOf(const std::string& prefix);
  // The cores host `host` of `hosts` runs on, out of `cpus` (this machine's, in order). Real
  // hosts have cores of their own, so each simulated host gets an even share where there are at
  // least as many cores as hosts; with fewer, the hosts take the cores in turn.
  static std::vector<int> hostCpus(int host, int hosts, const std::vector<int>& cpus);
  // An mpirun hostfile with `slots` slots per host.
  std::string hostfile(int slots) const;

 private:
  std::string addHost(const std::string& ns, const std::string& tag, int host,
                      const std::string& shape);
  bool run(const std::vector<std::string>& args);

  std::string prefix_;
  std::string log_;
  std::vector<std::string> made_;
  int hosts_ = 0;
  bool shapeRefused_ = false;
};

}  // namespace ftcomm::launcher
