#include "rendezvous/launcher/host_agent.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

#include "rendezvous/launcher/process.h"
#include "rendezvous/launcher/sim_hosts.h"

namespace ftcomm::launcher {
namespace {

int fail(const std::string& what) {
  std::cerr << "ftcomm-run --host-agent: " << what << ": " << std::strerror(errno) << std::endl;
  return 1;
}

// This host's own view of the system: proc for its PID namespace, sysfs for its network
// namespace (UCX reads interfaces there), and an empty /dev/shm.
int mountHostFilesystems(const std::string& dumps) {
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return fail("mount /proc");
  }
  ::umount2("/sys", MNT_DETACH);
  if (::mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return fail("mount /sys");
  }
  if (::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) {
    return fail("mount /dev/shm");
  }
  // ftcomm-run sets FTCOMM_FR_DIR to an absolute folder, which it has made.
  const char* frDir = std::getenv("FTCOMM_FR_DIR");
  if (frDir != nullptr && *frDir != '\0') {
    std::error_code ec;
    std::filesystem::create_directories(dumps, ec);
    if (::mount(dumps.c_str(), frDir, nullptr, MS_BIND, nullptr) != 0) {
      return fail(std::string("bind ") + dumps + " to FTCOMM_FR_DIR " + frDir);
    }
  }
  return 0;
}

// PID 1 of the host: starts the command, then reaps every process until none is left.
int hostInit(const std::string& hostname, const std::string& dumps, const std::string& command) {
  if (::sethostname(hostname.c_str(), hostname.size()) != 0) return fail("sethostname");
  if (int rc = mountHostFilesystems(dumps); rc != 0) return rc;
  const pid_t shell = spawn({"/bin/sh", "-c", command}, false);
  if (shell < 0) return fail("cannot start /bin/sh");
  int code = 0;
  for (;;) {
    int status = 0;
    const pid_t ended = ::wait(&status);
    if (ended < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: the host is empty
    }
    if (ended == shell) code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return code;
}

// Confines this host to its share of the machine's cores (SimulatedHosts::hostCpus); what it
// starts inherits the share. A host that cannot be confined runs on every core, and says so.
void takeHostCores(const std::string& prefix, int host) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (::sched_getaffinity(0, sizeof mine, &mine) != 0) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mine)) cpus.push_back(c);
  }
  cpu_set_t share;
  CPU_ZERO(&share);
  for (int c : SimulatedHosts::hostCpus(host, SimulatedHosts::hostsOf(prefix), cpus)) {
    CPU_SET(c, &share);
  }
  if (::sched_setaffinity(0, sizeof share, &share) != 0) {
    std::cerr << "ftcomm-run --host-agent: host " << host
              << " runs on every core: sched_setaffinity: " << std::strerror(errno) << std::endl;
  }
}

}  // namespace

std::string hostDumpFolder(const std::string& work, int host) {
  return work + "/fr/h" + std::to_string(host);
}

int runHostAgent(const std::string& prefix, const std::string& work, const std::string& address,
                 const std::vector<std::string>& command) {
  const int host = SimulatedHosts::hostOfControlAddress(address);
  if (host < 0) {
    std::cerr << "ftcomm-run --host-agent: " << address << " is no simulated host's address\n";
    return 1;
  }
  const std::string name = prefix + "-h" + std::to_string(host);
  const int netns = ::open(("/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (netns < 0) return fail("open the network namespace " + name);
  if (::setns(netns, CLONE_NEWNET) != 0) return fail("enter the network namespace " + name);
  ::close(netns);
  if (::unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID) != 0) {
    return fail("unshare the host's namespaces");
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return fail("make the mounts private");
  }
  takeHostCores(prefix, host);
  // mpirun hands over the daemon's command line as a remote shell would get it.
  std::string line;
  for (const auto& word : command) line += (line.empty() ? "" : " ") + word;
  const pid_t init = ::fork();
  if (init < 0) return fail("fork");
  if (init == 0) {
    // A host whose agent is killed dies with it, as a host does.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::_exit(hostInit(name, hostDumpFolder(work, host), line));
  }
  const int status = waitFor(init);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ftcomm::launcher
